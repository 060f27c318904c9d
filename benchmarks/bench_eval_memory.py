"""Benchmark: peak memory of an evaluation of ~14.5k units with a constant judge (issue 23: <= 0.5 GB RSS).

Generates a synthetic release (``bench_data_build``'s generator: ``--papers`` survey texts of ``--text-kb`` kB,
``--reviews`` reviews x 4 dimensions, every label in ``testset/`` so every unit is a test unit), builds it into a
dataset folder, then runs ``run_evaluation`` with the ``constant`` backend over the test split in a fresh process
(which neither generated nor built the data), ``--repeats`` times with a fresh run folder: medians of its peak RSS
(``VmHWM`` in ``/proc/self/status``; ``ru_maxrss`` would keep the forking parent's peak across ``exec``), CPU and
wall seconds, beside the peak RSS of a process that only imports what an evaluation imports. A last run in the
same folder measures the resume of the finished run the same way (its CPU against the fresh runs' median), and
``--repeats`` runs of ``--plan`` over the same split in a fresh folder measure the plan's peak RSS (the cost known
first must fit where the run fits: it goes a chunk of units at a time, ``surveyalign.evaluation.stream``).

    .venv/bin/python benchmarks/bench_eval_memory.py [--papers 1500] [--reviews 4030] [--text-kb 100] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("HF_EVALUATE_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).parent))

from _figures import emit, figure, load_average, median

GOAL_MB = 500.0

_CHILD = """
import json, os, resource, sys, time
dataset, out, mode, samples = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
def peak_mb():
    # VmHWM: the peak of this process's own memory since exec; ru_maxrss would also hold the forking parent's
    try:
        with open("/proc/self/status") as fh:
            return next(int(line.split()[1]) for line in fh if line.startswith("VmHWM:")) / 1024
    except (OSError, StopIteration):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
from rich.console import Console
from surveyalign.evaluation import EvalConfig, run_evaluation
if mode == "empty":
    import datasets, pyarrow, surveyalign.evaluation.runner, surveyalign.data  # what an evaluation imports
    print(json.dumps({"peak_rss_mb": peak_mb()}))
    raise SystemExit(0)
config = EvalConfig.from_dict({"name": "memory", "dataset": dataset, "split": "test", "output_dir": out,
                               "run_name": "run", "progress": False, "bootstrap": 0, "samples_per_unit": samples,
                               "backend": {"kind": "constant", "options": {"score": -1}}})
c0, t0 = time.process_time(), time.perf_counter()
result = run_evaluation(config, console=Console(file=open(os.devnull, "w")), plan_only=mode == "plan")
if mode == "plan":
    print(json.dumps({"cpu_s": time.process_time() - c0, "wall_s": time.perf_counter() - t0,
                      "peak_rss_mb": peak_mb(), "plan": result.calls["plan"]}))
    raise SystemExit(0)
print(json.dumps({"cpu_s": time.process_time() - c0, "wall_s": time.perf_counter() - t0,
                  "peak_rss_mb": peak_mb(),
                  "units": result.counts["total"], "calls": result.calls}))
"""


def in_child(dataset: Path, out: Path, mode: str, samples: int) -> dict:
    """Run one evaluation (``mode="run"``) or only its imports (``"empty"``) in a fresh process; its own figures."""
    done = subprocess.run([sys.executable, "-c", _CHILD, str(dataset), str(out), mode, str(samples)],
                          check=False, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"evaluation child failed ({done.returncode}): {done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--papers", type=int, default=1500, help="survey texts (default 1500)")
    parser.add_argument("--reviews", type=int, default=4030,
                        help="reviews; x 4 dimensions, less the 0 / -3 labels (a tenth) = units (default 4030: ~14.5k)")
    parser.add_argument("--text-kb", type=int, default=100, help="kB per survey text (default 100, the paper's)")
    parser.add_argument("--samples", type=int, default=1, help="K samples per unit (default 1)")
    parser.add_argument("--repeats", type=int, default=3, help="fresh runs; medians are reported (default 3)")
    args = parser.parse_args(argv)

    from bench_data_build import generate_release

    work = Path(tempfile.mkdtemp(prefix="bench-eval-memory-"))
    os.environ["HF_DATASETS_CACHE"] = str(work / "hf-cache")  # the converted dataset goes away with the run
    try:
        release = work / "release"
        generate_release(release, papers=args.papers, reviews=args.reviews, text_kb=args.text_kb)
        (release / "annotations").rename(release / "testset")  # every label a test label: one split to evaluate
        text_mb = (release / "articles" / "articles4test.json").stat().st_size / 1e6
        from surveyalign.data import build_dataset

        build_dataset(release, work / "surveyreview")
        shutil.rmtree(release)
        empty = in_child(work / "surveyreview", work / "runs", "empty", args.samples)["peak_rss_mb"]
        runs = []
        for rep in range(args.repeats):
            shutil.rmtree(work / "runs", ignore_errors=True)
            runs.append(in_child(work / "surveyreview", work / "runs", "run", args.samples))
            print(f"run {rep + 1}: {runs[-1]['units']} units, {runs[-1]['calls']['made']} calls: peak RSS "
                  f"{runs[-1]['peak_rss_mb']:.0f} MB, {runs[-1]['cpu_s']:.2f} s CPU, {runs[-1]['wall_s']:.2f} s wall; "
                  f"load {load_average()}", flush=True)
        plans = []
        for rep in range(args.repeats):
            shutil.rmtree(work / "plans", ignore_errors=True)
            plans.append(in_child(work / "surveyreview", work / "plans", "plan", args.samples))
            print(f"--plan {rep + 1}: {plans[-1]['plan']['calls']} calls planned: peak RSS "
                  f"{plans[-1]['peak_rss_mb']:.0f} MB, {plans[-1]['cpu_s']:.2f} s CPU; load {load_average()}", flush=True)
        plan_peak = median(p["peak_rss_mb"] for p in plans)
        again = in_child(work / "surveyreview", work / "runs", "run", args.samples)
        assert again["calls"]["made"] == 0, again["calls"]
        peak = median(r["peak_rss_mb"] for r in runs)
        print(f"{runs[0]['units']} units from {text_mb:.0f} MB of survey text, constant judge, K={args.samples}: "
              f"median peak RSS {peak:.0f} MB (a process with only the imports: {empty:.0f} MB), median "
              f"{median(r['cpu_s'] for r in runs):.2f} s CPU; resume of the finished run: peak RSS "
              f"{again['peak_rss_mb']:.0f} MB, {again['cpu_s']:.2f} s CPU; load {load_average()}")
        share = again["cpu_s"] / median(r["cpu_s"] for r in runs)
        emit([figure(f"evaluation peak RSS, {runs[0]['units']} units, constant judge (imports alone: {empty:.0f} MB)",
                     peak, f"<= {GOAL_MB:.0f} MB", peak <= GOAL_MB, unit=" MB"),
              figure(f"resume CPU / fresh run CPU, {runs[0]['units']} units, constant judge", share, "<= 0.15",
                     share <= 0.15),
              figure(f"--plan peak RSS, {runs[0]['units']} units (the run's: {peak:.0f} MB)", plan_peak,
                     f"<= {GOAL_MB:.0f} MB", plan_peak <= GOAL_MB, unit=" MB")])
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

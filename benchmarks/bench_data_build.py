"""Benchmark: build time of the SurveyReview dataset folder at the paper's scale (SurveyReview §4.4).

Generates a synthetic per-dimension release in a temporary folder (random prose over a 3,000-word vocabulary
with Zipf-like word frequencies): 675 survey texts of ~100 kB each and
1,630 reviews x 4 dimensions (1,058 F1000Research, 375 MOPRD, 197 OpenReview reviews; scores drawn from the
paper's distribution plus 0/-3 records; one in ten F1000 texts carries a status line and a referee-report
section quoting its reviews), then runs ``surveyalign.data.build_dataset`` on it in a fresh process (which did not
generate the data), ``--repeats`` times: medians of its CPU seconds and peak RSS (the child's own ``VmHWM``: its
``ru_maxrss`` starts at this generating process's size, which Linux carries into a child; issue 23 found the
earlier figures floored there), the RSS also against an empty
run (a process that builds the shipped sample release, a few kB of text: every import and code path of a build,
and no data). Goals (issue 23): 1x <= 5 s CPU and peak RSS above the
empty run <= 3x the text bytes; ``--scale-10x`` adds a release ten times the size, whose CPU and memory should be
at most 10.5x the 1x build's.

    .venv/bin/python benchmarks/bench_data_build.py [--papers 675] [--reviews 1630] [--text-kb 100] [--scale-10x]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

sys.path.insert(0, str(Path(__file__).parent))
from _figures import emit, figure, load_average, median

from surveyalign.constants import DIMENSIONS


def _vocabulary(rng: random.Random, size: int = 3000) -> tuple[list[str], list[float]]:
    """Pseudo-words with Zipf-like weights, so word sequences repeat about as often as in English prose."""
    letters = "etaoinshrdlucmfwypvbgkqjxz"
    words = sorted({"".join(rng.choice(letters[: 8 + i % 18]) for _ in range(rng.randint(2, 10)))
                    for i in range(size * 2)})[:size]
    rng.shuffle(words)
    return words, [1.0 / (rank + 1) for rank in range(len(words))]


_RNG = random.Random(12345)
_WORDS, _WEIGHTS = _vocabulary(_RNG)


def _sentence(rng: random.Random, n: int) -> str:
    return " ".join(rng.choices(_WORDS, weights=_WEIGHTS, k=n)).capitalize() + "."


def generate_release(root: Path, *, papers: int, reviews: int, text_kb: int, seed: int = 0) -> None:
    """Write annotations/<dimension>.json, articles/articles4test.json and sources.json under ``root``.

    The label folder names no split (the layout of ``surveyalign/resources/sample_release``), so the build
    splits the papers itself into train / validation / test; a ``testset/`` folder would declare every label
    a test label and the build would put everything into test.
    """
    rng = random.Random(seed)
    sources = ["f1000"] * 1058 + ["moprd"] * 375 + ["openreview"] * 197
    rng.shuffle(sources)
    sources = (sources * (reviews // len(sources) + 1))[:reviews]
    # every paper gets one review, the rest are spread at random
    owners = list(range(papers)) + [rng.randrange(papers) for _ in range(reviews - papers)]
    paper_source: dict[int, str] = {}
    for r, p in enumerate(owners):
        paper_source.setdefault(p, sources[r])
    scores = [-1] * 60 + [1] * 22 + [-2] * 4 + [2] * 4 + [0] * 8 + [-3] * 2
    pool = [_sentence(rng, rng.randint(8, 18)) for _ in range(4000)]
    labels = {d: [] for d in DIMENSIONS}
    review_snippets: dict[int, list[str]] = {}
    for r, p in enumerate(owners):
        for d in DIMENSIONS:
            s = rng.choice(scores)
            reasons = [] if s == 0 else [f"{rng.choice(pool)} ({p}-{r}-{d}-{k})" for k in range(rng.randint(1, 4))]
            review_snippets.setdefault(p, []).extend(reasons)
            labels[d].append({"uid": f"paper{p:04d}", "score": float(s), "reasons": reasons})
    paragraphs = [" ".join(_sentence(rng, rng.randint(10, 25)) for _ in range(6)) for _ in range(3000)]
    articles = {}
    target = text_kb * 1000
    for p in range(papers):
        parts = [f"# Survey number {p}: {' '.join(rng.sample(_WORDS[:200], 5))}", "", "## Abstract", "", paragraphs[p % 3000]]
        size = sum(len(x) for x in parts)
        section = 1
        while size < target:
            block = f"\n## {section} {rng.choice(_WORDS[:200]).title()}\n\n" + "\n\n".join(rng.sample(paragraphs, 4))
            parts.append(block)
            size += len(block)
            section += 1
        parts.append("\n## References\n\n" + "\n".join(f"{i}. Author {i}. Title {i}. {2000 + i % 24}." for i in range(1, 80)))
        text = "\n".join(parts)
        if paper_source[p] == "f1000" and p % 10 == 0:
            text = text.replace("\n", " [version 1; peer review: 2 approved]\n", 1)
            text += "\n\n## Open Peer Review\n\n### Reviewer Report 1\n\n" + " ".join(review_snippets.get(p, []))
        articles[f"paper{p:04d}"] = text
    (root / "annotations").mkdir(parents=True)
    (root / "articles").mkdir()
    for d, records in labels.items():
        (root / "annotations" / f"{d}.json").write_text(json.dumps(records))
    (root / "articles" / "articles4test.json").write_text(json.dumps(articles))
    (root / "sources.json").write_text(json.dumps({f"paper{p:04d}": s for p, s in paper_source.items()}))


_CHILD = """
import json, resource, sys, time
from pathlib import Path
empty = sys.argv[3] == "empty"
from surveyalign.data import build_dataset
if not empty:
    c0, t0 = time.process_time(), time.perf_counter()
    result = build_dataset(Path(sys.argv[1]), Path(sys.argv[2]))
    cpu, wall = time.process_time() - c0, time.perf_counter() - t0
else:  # the same imports and code paths on the shipped sample release (a few kB of text): the memory baseline
    from surveyalign.data import sample_release_dir
    build_dataset(sample_release_dir(), Path(sys.argv[2]))
    cpu = wall = 0.0
try:  # this process's own peak (VmHWM): ru_maxrss is carried over from the parent that started it (Linux)
    peak = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM")) / 1024
except OSError:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"cpu_s": cpu, "wall_s": wall, "peak_rss_mb": peak,
                  "report": None if empty else {"kept": result.report["units"]["kept"],
                                                "timings_s": result.report["timings_s"]}}))
"""


def build_in_child(release: Path, out: Path, *, empty: bool = False) -> dict:
    """Build ``release`` into ``out`` in a fresh process (it did not generate the data); its CPU seconds, wall
    seconds and peak RSS (MB: its own ``VmHWM``; ``ru_maxrss`` would report this generating process's size when
    that is larger, since Linux carries it into the child) as it measured them. ``empty``: build the sample release instead (the memory
    baseline: a build's imports and code, no data)."""
    done = subprocess.run([sys.executable, "-c", _CHILD, str(release), str(out), "empty" if empty else "build"],
                          capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def measure(root: Path, scale: int, args: argparse.Namespace) -> dict:
    """Generate a release of ``scale`` x the default size under ``root`` and build it ``--repeats`` times."""
    release = root / f"release-{scale}x"
    generate_release(release, papers=args.papers * scale, reviews=args.reviews * scale, text_kb=args.text_kb)
    text_mb = (release / "articles" / "articles4test.json").stat().st_size / 1e6
    empty = median([build_in_child(release, root / "empty", empty=True)["peak_rss_mb"] for _ in range(2)])
    runs = []
    for rep in range(args.repeats):
        out = root / f"built-{scale}x-{rep}"
        runs.append(build_in_child(release, out))
        shutil.rmtree(out, ignore_errors=True)
        print(f"{scale}x build {rep + 1}: {runs[-1]['wall_s']:.2f} s wall, {runs[-1]['cpu_s']:.2f} s CPU, peak RSS "
              f"{runs[-1]['peak_rss_mb']:.0f} MB; phases (s): "
              + ", ".join(f"{k} {v:.2f}" for k, v in runs[-1]["report"]["timings_s"].items())
              + f"; load {load_average()}", flush=True)
    shutil.rmtree(release, ignore_errors=True)
    row = {"scale": scale, "text_mb": text_mb, "empty_rss_mb": empty,
           "cpu_s": median(r["cpu_s"] for r in runs), "wall_s": median(r["wall_s"] for r in runs),
           "peak_rss_mb": median(r["peak_rss_mb"] for r in runs), "units": runs[0]["report"]["kept"]}
    row["rss_over_text"] = (row["peak_rss_mb"] - empty) / text_mb
    print(f"{scale}x: {row['units']} units from {text_mb:.0f} MB of text: median {row['wall_s']:.2f} s wall, "
          f"{row['cpu_s']:.2f} s CPU, peak RSS {row['peak_rss_mb']:.0f} MB (the empty run: {empty:.0f} MB) = "
          f"{row['rss_over_text']:.2f}x the text bytes above the empty run")
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--papers", type=int, default=675)
    parser.add_argument("--reviews", type=int, default=1630)
    parser.add_argument("--text-kb", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3, help="builds per size; medians reported (default 3)")
    parser.add_argument("--scale-10x", action="store_true",
                        help="also build a release 10x the size (6,750 texts, ~700 MB of text; minutes and GBs) "
                        "and report its CPU and memory against the 1x build of the same run (goal <= 10.5x)")
    args = parser.parse_args(argv)
    print(f"load average {load_average()} on {os.cpu_count()} CPUs")
    with tempfile.TemporaryDirectory() as tmp:
        one = measure(Path(tmp), 1, args)
        figures = [figure("data build 1x, CPU", one["cpu_s"], "<= 5 s", one["cpu_s"] <= 5, unit=" s"),
                   figure("data build 1x, peak RSS above the empty run / text bytes", one["rss_over_text"], "<= 3",
                          one["rss_over_text"] <= 3)]
        if args.scale_10x:
            ten = measure(Path(tmp), 10, args)
            cpu, mem = ten["cpu_s"] / one["cpu_s"], (ten["peak_rss_mb"] - ten["empty_rss_mb"]) / max(
                1.0, one["peak_rss_mb"] - one["empty_rss_mb"])
            print(f"10x / 1x: CPU {cpu:.2f}x, memory above the empty run {mem:.2f}x")
            figures += [figure("data build 10x / 1x, CPU", cpu, "<= 10.5", cpu <= 10.5),
                        figure("data build 10x / 1x, memory", mem, "<= 10.5", mem <= 10.5)]
    emit(figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())

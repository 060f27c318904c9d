"""Throughput, CPU per call and resume cost of the evaluation harness against a 200 ms OpenAI-compatible server.

With every answer taking D seconds and C calls in flight, no client beats C / D calls per second. On a shared
machine no client reaches it either, so the ceiling is measured in the same run: a minimal aiohttp client (a
semaphore of C, ``session.post(json=body)``, ``json.loads`` of the reply; nothing else) sends the same number of
requests with the same prompts to the same server, interleaved with the harness runs. Figures are medians of
``--repeats`` runs (not bests), and the machine's load average is printed with them.

Set-up: a 200 ms server in its own process (``--server lean``, the default: benchmarks/_lean_chat_server.py,
aiohttp.web with a canned answer; ``--server stand-in``: the tests' ``surveyalign.testing.chat_server``, which
records every request and is itself the bottleneck at C=256 on 2 cores); a synthetic release (``bench_data_build``'s
generator, ``--papers`` papers of ``--text-kb`` kB) built into a dataset; ``run_evaluation`` with the openai
backend, ``--samples`` samples per unit, fresh run folder per repeat. Figures:

* harness calls/s at C=32 and C=256 divided by the minimal client's (goal >= 0.95), and by the latency bound C / D
  (goal >= 0.9 at C=256 on a quiet machine; the minimal client's share is printed beside it);
* CPU per call of the harness's call stage (process CPU seconds while the calls run / calls; goal <= 0.5 ms),
  with the minimal client's for comparison;
* CPU of a resume of the fully cached run / CPU of the fresh run (whole ``run_evaluation``; goal <= 0.15); a
  warm-up run first, so neither pays the first imports.

    .venv/bin/python benchmarks/bench_eval_throughput.py                      # C=32 and C=256, 3 repeats
    .venv/bin/python benchmarks/bench_eval_throughput.py --concurrency 64 --repeats 5 --papers 240
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("HF_EVALUATE_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).parent))

from _figures import cpu_seconds, emit, figure, load_average, median

REPLY = "The survey reads well, with a few long sentences.$$$-1$$$"


def _start_server(delay: float, kind: str = "lean") -> tuple[subprocess.Popen, str]:
    """The answering server in a child process; returns it and its base_url.

    ``lean``: benchmarks/_lean_chat_server.py (aiohttp.web, canned answer: the ceiling is the client's);
    ``stand-in``: ``python -m surveyalign.testing.chat_server`` (the tests' server: records and counts every request).
    """
    command = ([sys.executable, str(Path(__file__).parent / "_lean_chat_server.py")] if kind == "lean"
               else [sys.executable, "-m", "surveyalign.testing.chat_server"])
    proc = subprocess.Popen(
        [*command, "--delay", str(delay), "--reply", REPLY],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )
    line = proc.stdout.readline().strip()
    if not line.startswith("base_url="):
        proc.kill()
        raise RuntimeError(f"fake server did not start: {line!r}")
    return proc, line.split("=", 1)[1]


def minimal_client(base_url: str, bodies: list[dict], concurrency: int) -> tuple[float, float]:
    """The ceiling: ``bodies`` posted with at most ``concurrency`` in flight by a bare aiohttp client.

    Returns:
        ``(calls per second, CPU seconds per call)``.
    """
    import aiohttp

    async def go() -> None:
        limit = asyncio.Semaphore(concurrency)
        connector = aiohttp.TCPConnector(limit=concurrency)
        async with aiohttp.ClientSession(connector=connector) as session:
            async def one(body: dict) -> None:
                async with limit, session.post(f"{base_url}/chat/completions", json=body) as response:
                    assert json.loads(await response.text())["choices"][0]["message"]["content"] == REPLY

            await asyncio.gather(*(one(body) for body in bodies))

    c0, t0 = cpu_seconds(), time.perf_counter()
    asyncio.run(go())
    seconds, cpu = time.perf_counter() - t0, cpu_seconds() - c0
    return len(bodies) / seconds, cpu / len(bodies)


class _StageTimer:
    """Wraps ``execute`` where the runner and the chunked path (evaluation/stream.py, runs over CHUNK_UNITS units)
    call it, to read the CPU seconds of the judge call stage alone."""

    def __init__(self) -> None:
        from surveyalign.evaluation import runner, stream

        self.runner, self.inner, self.cpu = runner, runner.execute, 0.0
        assert stream.execute is self.inner, "stream.py calls another execute: the timer would miss its calls"
        runner.execute = stream.execute = self

    def __call__(self, calls, config, cache, stage, **kwargs):
        c0 = cpu_seconds()
        try:
            return self.inner(calls, config, cache, stage, **kwargs)
        finally:
            if stage == "judge":
                self.cpu += cpu_seconds() - c0  # summed over the chunks of one run; reset per run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--concurrency", type=int, nargs="+", default=[32, 256], help="calls in flight (32 256)")
    parser.add_argument("--delay", type=float, default=0.2, help="server answer delay in seconds (default 0.2)")
    parser.add_argument("--papers", type=int, default=120, help="papers of the synthetic release (default 120)")
    parser.add_argument("--text-kb", type=int, default=20, help="kB of text per paper (default 20)")
    parser.add_argument("--samples", type=int, default=4, help="K samples per unit (default 4)")
    parser.add_argument("--repeats", type=int, default=3, help="runs per figure; medians are reported (default 3)")
    parser.add_argument("--server", choices=("lean", "stand-in"), default="lean",
                        help="answering server: lean (benchmarks/_lean_chat_server.py, aiohttp.web, canned answer; "
                        "default) or stand-in (surveyalign.testing.chat_server, which records every request and is "
                        "the bottleneck at C=256 on 2 cores)")
    args = parser.parse_args(argv)

    from bench_data_build import generate_release
    from rich.console import Console

    from surveyalign.data import build_dataset, load_surveyreview
    from surveyalign.evaluation import EvalConfig, run_evaluation
    from surveyalign.prompts import build_judge_prompt

    work = Path(tempfile.mkdtemp(prefix="bench-eval-"))
    generate_release(work / "release", papers=args.papers, reviews=2 * args.papers, text_kb=args.text_kb)
    build_dataset(work / "release", work / "surveyreview")
    server, base_url = _start_server(args.delay, args.server)
    timer = _StageTimer()
    sink = Console(file=open(os.devnull, "w"))  # noqa: SIM115

    def config(run_name: str, concurrency: int, limit: int | None = None) -> EvalConfig:
        return EvalConfig.from_dict({
            "name": "bench", "dataset": str(work / "surveyreview"), "split": "train", "limit": limit,
            "samples_per_unit": args.samples, "output_dir": str(work / "runs"), "run_name": run_name,
            "progress": False, "bootstrap": 0, "concurrency": concurrency,
            "backend": {"kind": "openai", "options": {"base_url": base_url, "model": "fake", "api_key_env": None,
                                                      "max_retries": 0, "concurrency": concurrency}},
            "generation": {"temperature": 0.7, "max_new_tokens": 64}})

    figures = []
    try:
        run_evaluation(config("warm-up", 8, limit=2), console=sink)  # first imports, paid by neither figure
        rows = list(load_surveyreview(work / "surveyreview", split="train"))
        bodies = [{"model": "fake", "messages": build_judge_prompt(r["dimension"], r["text"]).messages(),
                   "temperature": 0.7, "top_p": 1.0, "max_tokens": 64, "seed": k, "n": 1}
                  for r in rows for k in range(args.samples)]
        print(f"{len(bodies)} calls per run ({len(rows)} units x K={args.samples}), {args.server} server, delay "
              f"{args.delay:g} s; "
              f"load average {load_average()}")
        fresh_cpu, resume_cpu = [], []
        for concurrency in args.concurrency:
            client, harness, client_cpu, harness_cpu = [], [], [], []
            for rep in range(args.repeats):
                rate, cpu = minimal_client(base_url, bodies, concurrency)
                client.append(rate)
                client_cpu.append(cpu)
                timer.cpu = 0.0
                c0 = cpu_seconds()
                result = run_evaluation(config(f"c{concurrency}-{rep}", concurrency), console=sink)
                whole = cpu_seconds() - c0
                made, seconds = result.calls["made"], result.calls["seconds"]
                assert result.calls["errors"] == 0 and made == len(bodies), result.calls
                harness.append(made / seconds)
                harness_cpu.append(timer.cpu / made)
                line = (f"C={concurrency} run {rep + 1}: minimal client {rate:.1f} calls/s ({1000 * cpu:.2f} ms CPU/call)"
                        f", harness {made / seconds:.1f} calls/s ({1000 * timer.cpu / made:.2f} ms CPU/call)")
                if concurrency == args.concurrency[0]:
                    c0 = cpu_seconds()
                    again = run_evaluation(config(f"c{concurrency}-{rep}", concurrency), console=sink)
                    assert again.calls["made"] == 0 and again.calls["cached"] == len(bodies), again.calls
                    fresh_cpu.append(whole)
                    resume_cpu.append(cpu_seconds() - c0)
                    line += f"; whole run {whole:.2f} s CPU, its resume {resume_cpu[-1]:.2f} s CPU"
                print(line + f"; load {load_average()}", flush=True)
            ratio = median(harness) / median(client)
            print(f"C={concurrency}: median harness {median(harness):.1f} calls/s / median minimal client "
                  f"{median(client):.1f} calls/s = {ratio:.3f} (bound {concurrency / args.delay:.0f} calls/s: "
                  f"harness {median(harness) * args.delay / concurrency:.3f}, client "
                  f"{median(client) * args.delay / concurrency:.3f}); CPU per call: harness "
                  f"{1000 * median(harness_cpu):.2f} ms, client {1000 * median(client_cpu):.2f} ms")
            figures.append(figure(f"harness / minimal aiohttp client, C={concurrency}", ratio, ">= 0.95",
                                  ratio >= 0.95))
            bound = concurrency / args.delay
            figures.append(figure(f"harness / latency bound {bound:.0f} calls/s, C={concurrency} (client: "
                                  f"{median(client) / bound:.3f})", median(harness) / bound,
                                  ">= 0.9 (quiet machine)", median(harness) / bound >= 0.9))
            figures.append(figure(f"harness CPU per call, C={concurrency} (client: "
                                  f"{1000 * median(client_cpu):.2f} ms)", 1000 * median(harness_cpu), "<= 0.5 ms",
                                  median(harness_cpu) <= 0.0005, unit=" ms"))
        if fresh_cpu:
            share = median(resume_cpu) / median(fresh_cpu)
            print(f"resume of the fully cached run: {median(resume_cpu):.2f} s CPU / fresh {median(fresh_cpu):.2f} s "
                  f"CPU = {share:.3f} (medians of {len(fresh_cpu)})")
            figures.append(figure(f"resume CPU / fresh run CPU ({len(bodies)} calls)", share, "<= 0.15",
                                  share <= 0.15))
    finally:
        server.terminate()
        server.wait(timeout=10)
        shutil.rmtree(work, ignore_errors=True)
    emit(figures)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

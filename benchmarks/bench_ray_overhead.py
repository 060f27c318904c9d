"""Benchmark: per-unit overhead of the Ray engine against the same engine in-process (CPU, tiny model).

The same units (a judge prompt each, K samples, seeded sampling at T=0.7) go through

* ``in-process``: ``TransformersBackend.generate([prompt], n=K)`` in this process, one torch thread (the ceiling:
  no scheduling, no serialisation);
* ``ray, 1 worker``: ``RayBackend(workers=1)``: the same engine in one Ray actor (one CPU, Ray sets one torch
  thread), one unit at a time, interleaved unit by unit with in-process (the machine's load hits both alike); the difference to in-process is Ray's per-unit cost (task submission, pickling
  prompts and answers, the actor's queue);
* ``ray, 2 workers``: two actors, two units in flight (throughput on two CPUs).

Prints the median seconds per unit of each, the overhead ``ray 1 worker - in-process`` in ms and the ratio, the
2-worker throughput beside in-process, and Ray's start-up time (paid once per run). Answers are checked equal
between in-process and Ray (same seeds). Skipped (exit 0) when ``ray`` is not installed (``.[ray]``).

    .venv/bin/python benchmarks/bench_ray_overhead.py [--units 12] [--samples 2] [--new-tokens 16]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--units", type=int, default=12)
    parser.add_argument("--samples", type=int, default=2)
    parser.add_argument("--new-tokens", type=int, default=16)
    args = parser.parse_args()
    try:
        import ray  # noqa: F401
    except ImportError:
        print("skipped: ray is not installed (pip install 'surveyalign[ray]')")
        return 0
    import torch

    from surveyalign.backends import GenerationSettings
    from surveyalign.backends.hf import TransformersBackend
    from surveyalign.backends.ray_backend import RayBackend
    from surveyalign.prompts import build_judge_prompt
    from surveyalign.testing import build_tiny_model

    torch.set_num_threads(1)
    model = build_tiny_model(tempfile.mkdtemp(prefix="bench-ray-"))
    prompts = [build_judge_prompt("readability", f"# Survey {i}\n\n" + "Graph neural networks are reviewed. " * 40)
               .messages() for i in range(args.units)]
    settings = GenerationSettings(temperature=0.7, max_new_tokens=args.new_tokens, seed=0)

    local = TransformersBackend(model=str(model), device="cpu")
    t0 = time.perf_counter()
    ray1 = RayBackend(model=str(model), workers=1, engine_options={"device": "cpu"})
    startup = time.perf_counter() - t0
    local.generate(prompts[:1], settings, n=args.samples)  # warm-up
    ray1.generate(prompts[:1], settings, n=args.samples)
    # interleaved, unit by unit: a load change on the machine hits both alike
    local_times, local_answers, ray_times, ray_answers = [], [], [], []
    for p in prompts:
        for backend, times, answers in ((local, local_times, local_answers), (ray1, ray_times, ray_answers)):
            t0 = time.perf_counter()
            answers.append([g.text for g in backend.generate([p], settings, n=args.samples)[0]])
            times.append(time.perf_counter() - t0)
    local.close()
    ray1.close()

    ray2 = RayBackend(model=str(model), workers=2, engine_options={"device": "cpu"})
    ray2.generate(prompts[:2], settings, n=args.samples)

    async def both() -> float:
        t0 = time.perf_counter()
        await asyncio.gather(*(ray2.agenerate([p], settings, n=args.samples) for p in prompts))
        return time.perf_counter() - t0

    wall2 = asyncio.run(both())
    ray2.close()

    med_local, med_ray = statistics.median(local_times), statistics.median(ray_times)
    print(f"units: {args.units} x K={args.samples}, {args.new_tokens} new tokens, tiny Qwen3 on CPU")
    print(f"in-process      median {med_local * 1000:8.1f} ms/unit  ({1 / med_local:6.2f} units/s)")
    print(f"ray, 1 worker   median {med_ray * 1000:8.1f} ms/unit  ({1 / med_ray:6.2f} units/s)")
    print(f"ray, 2 workers  {wall2 / args.units * 1000:8.1f} ms/unit wall ({args.units / wall2:6.2f} units/s)")
    print(f"per-unit overhead of Ray: {(med_ray - med_local) * 1000:+.1f} ms; ratio ray/in-process "
          f"{med_ray / med_local:.2f}x; Ray start-up (local instance + 1 worker loading the model): {startup:.1f} s")
    print(f"answers equal (same seeds): {ray_answers == local_answers}")
    return 0 if ray_answers == local_answers else 1


if __name__ == "__main__":
    raise SystemExit(main())

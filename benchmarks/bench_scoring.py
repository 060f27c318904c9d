"""Benchmark: metrics at the paper's scale, and loading the `evaluate` modules offline (SurveyReview §3).

1. ``summarize_predictions`` on a synthetic test split the size of SurveyReview's full release
   (1,630 reviews x 4 dimensions = 6,520 units over 675 papers; scores drawn from the paper's
   distribution, 3% failures, consistency ratings on every scored unit) with 1,000 paper-level
   bootstrap resamples. Target: under 5 s.
2. ``evaluate.load("metrics/has")`` by path with ``HF_EVALUATE_OFFLINE=1`` (no network call, no lock
   wait), first and second call. Target: under 1 s each.
3. ``evaluate.load("has")`` by bare name after ``surveyalign metrics register`` into a fresh module cache,
   in a fresh process. Target: under 1 s for the load itself.

    .venv/bin/python benchmarks/bench_scoring.py [--reviews 1630] [--bootstrap 1000]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("HF_EVALUATE_OFFLINE", "1")

from surveyalign.constants import DIMENSIONS
from surveyalign.scoring import summarize_predictions

REPO = Path(__file__).resolve().parents[1]


def _records(reviews: int, papers: int, seed: int = 0) -> list[dict]:
    rng = random.Random(seed)
    out = []
    for r in range(reviews):
        paper = f"p{r % papers}"
        source = rng.choices(["f1000", "moprd", "openreview"], [1058, 375, 197])[0]
        for dim in DIMENSIONS:
            ref = rng.choices([-2, -1, 1, 2], [4.46, 66.25, 24.73, 4.56])[0]
            status = rng.choices(["scored", "parse_failed", "api_error", "missing_text"], [97, 1.5, 1, 0.5])[0]
            pred = (ref if rng.random() < 0.6 else rng.choice([-2, -1, 1, 2])) if status == "scored" else None
            out.append({"unit_id": f"r{r}::{dim}", "paper_id": paper, "review_id": f"r{r}", "source": source,
                        "dimension": dim, "reference": ref, "prediction": pred, "status": status,
                        "consistency": rng.choice([0.0, 0.2, 0.4, 0.6, 0.8, 1.0]) if pred is not None else None})
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reviews", type=int, default=1630)
    parser.add_argument("--papers", type=int, default=675)
    parser.add_argument("--bootstrap", type=int, default=1000)
    args = parser.parse_args()

    records = _records(args.reviews, args.papers)
    train = {d: [random.Random(i).choice([-1, -1, -1, 1, -2, 2]) for i in range(300)] for d in DIMENSIONS}
    t = time.perf_counter()
    summary = summarize_predictions(records, train_scores=train, bootstrap=args.bootstrap)
    took = time.perf_counter() - t
    json.dumps(summary, allow_nan=False)
    print(f"summarize_predictions: {len(records)} units, {args.papers} papers, {args.bootstrap} resamples: "
          f"{took:.2f} s (target < 5 s); HAS {summary['has']:.3f} CI {summary['ci']['has']}")

    os.chdir(REPO)
    t = time.perf_counter()
    import evaluate

    import_s = time.perf_counter() - t
    times = []
    for _ in range(2):
        t = time.perf_counter()
        evaluate.load("metrics/has")
        times.append(time.perf_counter() - t)
    print(f"import evaluate: {import_s:.2f} s; evaluate.load('metrics/has') offline: "
          f"{times[0]:.3f} s first, {times[1]:.3f} s second (target < 1 s)")

    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "HF_MODULES_CACHE": tmp}
        code = ("import time, evaluate\nfrom surveyalign.scoring import register_metrics\nregister_metrics()\n"
                "t = time.perf_counter(); evaluate.load('has'); print(f'{time.perf_counter() - t:.3f}')")
        proc = subprocess.run([sys.executable, "-c", code], cwd=tmp, env=env, capture_output=True, text=True,
                              check=True)
        print(f"evaluate.load('has') by bare name after register, fresh cache: {proc.stdout.strip()} s "
              f"(target < 1 s)")


if __name__ == "__main__":
    main()

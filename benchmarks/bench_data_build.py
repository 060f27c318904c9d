"""Benchmark: build time of the SurveyReview dataset folder at the paper's scale (SurveyReview §4.4).

Generates a synthetic per-dimension release in a temporary folder (random prose over a 3,000-word vocabulary
with Zipf-like word frequencies): 675 survey texts of ~100 kB each and
1,630 reviews x 4 dimensions (1,058 F1000Research, 375 MOPRD, 197 OpenReview reviews; scores drawn from the
paper's distribution plus 0/-3 records; one in ten F1000 texts carries a status line and a referee-report
section quoting its reviews), then times ``surveyalign.data.build_dataset`` on it. Target: under 10 s.

    .venv/bin/python benchmarks/bench_data_build.py [--papers 675] [--reviews 1630] [--text-kb 100]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

from surveyalign.constants import DIMENSIONS
from surveyalign.data import build_dataset


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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--papers", type=int, default=675)
    parser.add_argument("--reviews", type=int, default=1630)
    parser.add_argument("--text-kb", type=int, default=100)
    parser.add_argument("--target-s", type=float, default=10.0)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        release = Path(tmp) / "release"
        t0 = time.perf_counter()
        generate_release(release, papers=args.papers, reviews=args.reviews, text_kb=args.text_kb)
        gen_s = time.perf_counter() - t0
        size_mb = sum(f.stat().st_size for f in release.rglob("*") if f.is_file()) / 1e6
        t0, c0 = time.perf_counter(), time.process_time()
        result = build_dataset(release, Path(tmp) / "surveyreview")
        build_s, cpu_s = time.perf_counter() - t0, time.process_time() - c0
        out_mb = sum(f.stat().st_size for f in result.path.rglob("*") if f.is_file()) / 1e6
        rep = result.report
        print(f"release: {args.papers} texts x ~{args.text_kb} kB, {args.reviews} reviews x 4 dimensions "
              f"({size_mb:.0f} MB, generated in {gen_s:.1f} s)")
        print(f"built {rep['units']['kept']} units ({rep['papers']} papers) into {out_mb:.0f} MB; leakage guard cleaned "
              f"{rep['leakage_guard']['texts_cleaned']} texts, {rep['leakage_guard']['snippets_verbatim_before_guard']} "
              f"-> {rep['leakage_guard']['snippets_verbatim_in_inputs']} verbatim snippets")
        print(f"split ({rep['split']['policy']}): " + ", ".join(
            f"{name} {c['papers']} papers / {c['units']} units" for name, c in rep["counts"].items()))
        print("phases (s): " + ", ".join(f"{k} {v:.2f}" for k, v in rep["timings_s"].items()))
        verdict = "OK" if build_s < args.target_s else "SLOWER THAN TARGET"
        print(f"build_dataset: {build_s:.2f} s wall, {cpu_s:.2f} s CPU, load average {os.getloadavg()[0]:.1f} "
              f"on {os.cpu_count()} CPUs (target < {args.target_s:.0f} s wall) {verdict}")
    return 0 if build_s < args.target_s else 1


if __name__ == "__main__":
    sys.exit(main())

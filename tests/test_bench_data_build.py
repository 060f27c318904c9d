"""The data-build benchmark's synthetic release builds into train / validation / test like an unsplit release."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from surveyalign.data import build_dataset, read_release

BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_data_build.py"


def _bench():
    spec = importlib.util.spec_from_file_location("bench_data_build", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_synthetic_release_is_split_by_papers(tmp_path):
    release = tmp_path / "release"
    _bench().generate_release(release, papers=40, reviews=60, text_kb=1)
    # no label file names a split, so nothing is declared test
    assert read_release(release).declared_files == {}
    report = build_dataset(release, tmp_path / "out").report
    assert report["split"]["policy"] == "paper-level"
    papers = {split: c["papers"] for split, c in report["counts"].items()}
    assert sum(papers.values()) == 40
    # 75/25 by source, validation 10 percent of the training papers: every split holds papers
    assert papers["train"] > papers["test"] > 0 and papers["validation"] > 0

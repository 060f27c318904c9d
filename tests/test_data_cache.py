"""A rebuilt dataset folder loads its new content (content hash in the cache key), the test session's HF caches
live in a temporary folder, and a release or a missing folder is never loaded as a dataset."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import datasets
import pytest

from surveyalign.cli import main
from surveyalign.data import build_dataset, load_surveyreview
from surveyalign.data.files import content_hash

FIXTURES = Path(__file__).parent / "fixtures" / "data"


def test_session_caches_are_temporary():
    home = Path(os.environ["HF_HOME"])
    assert home.name.startswith("surveyalign-tests-hf-") and home.parent == Path(os.environ.get("TMPDIR", "/tmp"))
    assert Path(datasets.config.HF_DATASETS_CACHE) == home / "datasets"


def test_rebuild_into_the_same_folder_loads_the_new_scores(tmp_path):
    release = tmp_path / "release"
    shutil.copytree(FIXTURES / "per_dimension", release)
    out = tmp_path / "surveyreview"
    first = build_dataset(release, out).report
    assert first["content_sha256"] == content_hash(out) and len(first["content_sha256"]) == 64
    assert f"content sha256 {first['content_sha256']}" in (out / "README.md").read_text()
    before = sorted(load_surveyreview(out, "readability", "train")["score"])
    direct = sorted(datasets.load_dataset(str(out), "readability")["train"]["score"])
    assert before == direct == [-1, -1, 1]
    path = release / "annotations" / "readability.json"
    path.write_text(json.dumps([{**r, "score": -2.0 if r["score"] == -1.0 else r["score"]}
                                for r in json.loads(path.read_text())]))
    second = build_dataset(release, out).report
    assert second["content_sha256"] != first["content_sha256"]
    assert sorted(load_surveyreview(out, "readability", "train")["score"]) == [-2, -2, 1]
    assert sorted(datasets.load_dataset(str(out), "readability")["train"]["score"]) == [-2, -2, 1]


def test_bare_name_without_the_folder_is_not_served_from_the_cache(tmp_path, monkeypatch):
    out = tmp_path / "a" / "surveyreview"
    build_dataset(FIXTURES / "per_dimension", out)
    assert len(load_surveyreview(out, "readability")["train"]) == 3  # now cached under the name "surveyreview"
    elsewhere = tmp_path / "b"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    with pytest.raises(FileNotFoundError, match="dataset folder surveyreview does not exist"):
        load_surveyreview("surveyreview", "readability")


def test_release_given_as_a_dataset_names_the_build_command(tmp_path, capsys):
    release = FIXTURES / "v1_layout"
    with pytest.raises(FileNotFoundError, match=r"is a SurveyReview release .* not a built dataset: build it first "
                                                r"with `surveyalign data build --official .*v1_layout --out"):
        load_surveyreview(release)
    assert main(["data", "stats", str(release)]) == 2
    assert "is a SurveyReview release" in capsys.readouterr().err


def test_evaluate_pointed_at_a_release_shows_the_build_command(repo_root, tmp_path, capsys):
    release = FIXTURES / "v1_layout"
    code = main(["evaluate", "--config", str(repo_root / "configs/eval/constant-minus1.yaml"), "--dataset",
                 str(release), "--output-dir", str(tmp_path / "runs")])
    err = capsys.readouterr().err
    assert code == 2 and "is a SurveyReview release" in err and "surveyalign data build --official" in err

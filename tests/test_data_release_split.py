"""The release's own split (as-released / paper-level policies), one annotation set (--records), and clear
errors on bad release input; on a miniature of the authors' v1.0-paper layout (tests/fixtures/data/v1_layout)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from surveyalign.cli import main
from surveyalign.data import ReleaseFormatError, build_dataset, read_release
from surveyalign.data.layout import declared_split

FIXTURES = Path(__file__).parent / "fixtures" / "data"
V1 = FIXTURES / "v1_layout"
#: Papers by the title part of their reviews' uids (MOPRD: two reviews of paper 7001).
TEST_PAPERS = {"f1000-4001", "f1000-4002", "moprd-8001", "openreview-301", "openreview-302"}
TRAIN_PAPERS = {"f1000-3001", "f1000-3002", "f1000-3003", "moprd-7001", "openreview-201", "openreview-202"}


def _papers_by_split(out: Path) -> dict[str, set[str]]:
    """{split: papers}, a paper named by its review uid without the "-1-rN" review part."""
    found: dict[str, set[str]] = {"train": set(), "validation": set(), "test": set()}
    for file in (out / "data").glob("*/*.parquet"):
        reviews = pq.read_table(file, columns=["review_id"]).column("review_id").to_pylist()
        found[file.stem] |= {r.split("-1-r")[0] for r in reviews}
    return found


def _scores(out: Path, dimension: str) -> dict[str, int]:
    scores = {}
    for file in (out / "data" / dimension).glob("*.parquet"):
        table = pq.read_table(file, columns=["review_id", "score"]).to_pydict()
        scores.update(zip(table["review_id"], table["score"]))
    return scores


@pytest.mark.parametrize(("path", "split"), [
    ("raw/train_samples.json", "train"), ("raw/test_samples.json", "test"),
    ("train/grouped_trainset.json", "train"), ("test/grouped_testset.json", "test"),
    ("testset/readability.json", "test"), ("annotations/readability.json", None),
    ("articles/articles4test.json", "test"), ("raw_samples.json", None),
])
def test_declared_split_from_file_names(tmp_path, path, split):
    assert declared_split(tmp_path / path, tmp_path) == split


def test_as_released_keeps_the_release_split(tmp_path):
    report = build_dataset(V1, tmp_path / "out").report
    got = _papers_by_split(tmp_path / "out")
    assert got["test"] == TEST_PAPERS  # every official test paper in test, none in train
    assert got["train"] | got["validation"] == TRAIN_PAPERS and len(got["validation"]) == 1
    assert report["split"]["policy"] == "as-released"
    assert report["split"]["reason"] == "the release names its splits in its file names"
    assert report["split"]["declared_files"] == {"test/grouped_testset.json": "test",
                                                 "train/grouped_trainset.json": "train"}
    assert report["records"] == {"set": "grouped", "reason": "the default; the raw files are not read",
                                 "ignored_files": ["raw/test_samples.json", "raw/train_samples.json"]}
    assert {k: v["units"] for k, v in report["counts"].items()} == {"train": 8, "validation": 2, "test": 7}
    card = (tmp_path / "out" / "README.md").read_text()
    assert "Split policy **as-released** (the release names its splits in its file names)" in card
    assert "`train/grouped_trainset.json` -> train" in card and "annotation set: **grouped**" in card


def test_paper_level_policy_resplits_and_mixes_official_test_papers_into_train(tmp_path):
    """Today's behaviour, now only by choice: official test papers land in train."""
    report = build_dataset(V1, tmp_path / "out", split_policy="paper-level").report
    got = _papers_by_split(tmp_path / "out")
    assert report["split"]["policy"] == "paper-level" and report["split"]["reason"] == "chosen with --split-policy"
    assert len(TEST_PAPERS & (got["train"] | got["validation"])) == 3
    assert "Split policy **paper-level** (chosen with --split-policy)" in (tmp_path / "out" / "README.md").read_text()


def test_records_choose_one_annotation_set(tmp_path):
    # moprd-7001-1-r1 differs: grouped has structure -1 and comprehensiveness -1, raw has structure +1 only
    build_dataset(V1, tmp_path / "grouped")
    build_dataset(V1, tmp_path / "raw", records="raw")
    assert _scores(tmp_path / "grouped", "structure")["moprd-7001-1-r1"] == -1
    assert _scores(tmp_path / "raw", "structure")["moprd-7001-1-r1"] == 1
    assert "moprd-7001-1-r1" in _scores(tmp_path / "grouped", "comprehensiveness")
    assert "moprd-7001-1-r1" not in _scores(tmp_path / "raw", "comprehensiveness")
    release = tmp_path / "only-raw"
    shutil.copytree(V1 / "raw", release / "raw")
    assert read_release(release).record_set == "raw"
    with pytest.raises(ValueError, match="--records grouped: the release has no grouped sample files"):
        read_release(release, records="grouped")


def test_paper_in_train_and_test_files_is_an_error(tmp_path):
    release = tmp_path / "release"
    shutil.copytree(V1, release)
    test = json.loads((release / "test" / "grouped_testset.json").read_text())
    test.append({**test[0], "uid": "moprd-7001-1-r3", "paper_title": "Seed Dispersal by Bats: A Review"})
    (release / "test" / "grouped_testset.json").write_text(json.dumps(test))
    with pytest.raises(ValueError, match=r"paper moprd-7001 is in the release's train files \(grouped_trainset.json\) "
                                         r"and in its test files \(grouped_testset.json\)"):
        build_dataset(release, tmp_path / "out")


def test_test_only_release_builds_whole_into_test(tmp_path, capsys):
    release = tmp_path / "release"
    shutil.copytree(FIXTURES / "per_dimension", release)
    (release / "annotations").rename(release / "testset")
    report = build_dataset(release, tmp_path / "out").report
    assert {k: v["units"] for k, v in report["counts"].items()} == {"train": 0, "validation": 0, "test": 19}
    assert report["split"]["policy"] == "as-released"
    # paper-level with --test-fraction 1.0 is allowed too
    assert main(["data", "build", "--official", str(release), "--out", str(tmp_path / "all"),
                 "--split-policy", "paper-level", "--test-fraction", "1.0"]) == 0
    assert "train 0, validation 0, test 19" in capsys.readouterr().out


def test_bad_release_input_messages(tmp_path):
    release = tmp_path / "release"
    (release / "testset").mkdir(parents=True)
    (release / "testset" / "readability.json").write_text("")
    with pytest.raises(ReleaseFormatError, match=r"readability.json: the file is empty"):
        read_release(release)
    (release / "testset" / "readability.json").write_text(json.dumps([{"uid": "a", "score": -1.0, "reasons": []}]))
    (release / "testset" / "structure.json").write_text("[]")
    assert read_release(release).warnings == ["testset/structure.json: dimension file holds no record ([])"]
    (release / "testset" / "novelty.json").write_text(json.dumps([{"uid": "a", "score": 1.0, "reasons": []}]))
    with pytest.raises(ReleaseFormatError, match=r"unknown dimension file 'novelty.json'.*readability.json, "
                                                 r"structure.json, comprehensiveness.json, criticalness.json"):
        read_release(release)
    (release / "testset" / "novelty.json").unlink()
    samples = json.loads((V1 / "test" / "grouped_testset.json").read_text())
    del samples[1]["result"]
    (release / "test_samples.json").write_text(json.dumps(samples[:2]))
    with pytest.raises(ReleaseFormatError, match=r"record 1 \(0-based, uid f1000-4002\), field 'result': missing"):
        read_release(release)
    samples[1]["result"] = [{"score": 1.0, "reasons": []}]
    (release / "test_samples.json").write_text(json.dumps(samples[:2]))
    with pytest.raises(ReleaseFormatError, match=r"field 'result\[0\].dimension': missing dimension"):
        read_release(release)


def test_build_prints_policy_and_warnings(tmp_path, capsys):
    release = tmp_path / "release"
    shutil.copytree(V1, release)
    (release / "testset").mkdir()
    (release / "testset" / "criticalness.json").write_text("[]")
    assert main(["data", "build", "--official", str(release), "--out", str(tmp_path / "out"), "--records", "raw"]) == 0
    out = capsys.readouterr().out
    assert ("split policy as-released (the release names its splits in its file names); review samples: raw "
            "(chosen with --records; the grouped files are not read)") in out
    assert "warning: testset/criticalness.json: dimension file holds no record ([])" in out

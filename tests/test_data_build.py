"""SurveyReview dataset folder built from small hand-written fixtures (tests/fixtures/data): exact counts,
paper identity, sources, split invariants, missing texts, errors, offline loading.

Expected numbers are counted by hand from the fixture files (see the comments next to each figure).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from surveyalign.constants import DIMENSIONS
from surveyalign.data import (
    COLUMNS,
    ReleaseFormatError,
    build_dataset,
    load_surveyreview,
    read_release,
    surveyreview_features,
)
from surveyalign.data.schema import arrow_schema, features_yaml

FIXTURES = Path(__file__).parent / "fixtures" / "data"


@pytest.fixture(scope="module")
def per_dim(tmp_path_factory):
    """Dataset folder built from the per-dimension fixture (seed 42)."""
    return build_dataset(FIXTURES / "per_dimension", tmp_path_factory.mktemp("pd") / "surveyreview")


@pytest.fixture(scope="module")
def raw(tmp_path_factory):
    """Dataset folder built from the raw-layout fixture (seed 42)."""
    return build_dataset(FIXTURES / "raw", tmp_path_factory.mktemp("raw") / "out")


def _rows(folder) -> list[dict]:
    dd = load_surveyreview(folder, "all")
    return [dict(r, split=s) for s in ("train", "validation", "test") for r in dd[s]]


# ---------------------------------------------------------------- per-dimension layout


def test_per_dimension_counts(per_dim):
    rep = per_dim.report
    assert rep["input"]["layouts"] == ["per_dimension"]
    assert rep["input"]["records_read_total"] == 28 + 5  # 7 records x 4 dimension files + 5 articles
    assert rep["units"]["read"] == 28
    # kept: readability a1r1 b2 c3 e5 f6; structure a1r1 b2 d4 e5 f6; comprehensiveness a1r2 b2 c3 f6;
    # criticalness a1r1 a1r2 c3 d4 e5
    assert rep["units"]["kept"] == 19
    assert rep["units"]["excluded_score_0"] == {
        "readability": 2, "structure": 1, "comprehensiveness": 2, "criticalness": 2}
    assert rep["units"]["excluded_score_minus3"] == {
        "readability": 0, "structure": 1, "comprehensiveness": 1, "criticalness": 0}
    assert rep["reviews"] == 7  # a1 has two reviews; b2 c3 d4 e5 f6 one each
    assert rep["papers"] == 5  # f6 is b2 under another uid (same title)


def test_per_dimension_rows(per_dim):
    rows = _rows(per_dim)
    assert len(rows) == 19
    assert len({r["unit_id"] for r in rows}) == 19
    by_unit = {r["unit_id"]: r for r in rows}
    # the k-th record of a uid in each dimension file is review k of that uid
    assert by_unit["a1-r2::comprehensiveness"]["rationales"] == [
        "Many recent restoration monitoring studies are not cited."]
    assert by_unit["a1-r1::criticalness"]["score"] == 2
    assert by_unit["b2-r1::comprehensiveness"]["rationales"] == [
        "Key benchmark datasets are not cited at all.", "The survey ignores work on linear attention."]
    # duplicate paper under two uids: same paper_id (the smaller uid), same split
    assert by_unit["f6-r1::structure"]["paper_id"] == "b2"
    assert by_unit["f6-r1::structure"]["split"] == by_unit["b2-r1::readability"]["split"]
    # text, title, abstract and references parsed from the markdown
    b2 = by_unit["b2-r1::readability"]
    assert b2["title"] == "Sparse Attention Mechanisms: A Survey"
    assert b2["abstract"] == "A map of sparse attention patterns."
    assert b2["references"] == ["Child, R. Sparse transformers. 2019.", "Beltagy, I. Longformer. 2020.",
                                "Zaheer, M. Big Bird. 2020."]
    assert set(COLUMNS) <= set(b2)
    assert {r["dimension"] for r in rows} == set(DIMENSIONS)
    assert {r["score"] for r in rows} <= {-2, -1, 1, 2}


def test_per_dimension_sources(per_dim):
    rows = _rows(per_dim)
    source_of = {r["paper_id"]: r["source"] for r in rows}
    # a1: F1000Research DOI in the text; b2/f6 moprd and c3 "OpenReview" from sources.json; e5 from the
    # mapping although its text is missing; d4 in no mapping and without DOI
    assert source_of == {"a1": "f1000", "b2": "moprd", "c3": "openreview", "d4": "unknown", "e5": "f1000"}
    assert per_dim.report["source_resolution"] == {"f1000_doi": 5, "mapping": 12, "unknown": 2}


def test_per_dimension_missing_text_kept_and_reported(per_dim):
    missing = per_dim.report["missing_text"]
    assert missing["articles"] == 1 and missing["article_ids"] == ["e5"]
    assert missing["unit_ids"] == ["e5-r1::criticalness", "e5-r1::readability", "e5-r1::structure"]
    e5 = [r for r in _rows(per_dim) if r["paper_id"] == "e5"]
    assert len(e5) == 3 and all(r["text"] == "" and r["title"] == "" for r in e5)


def test_drop_missing_text_leaves_rows_out_but_reports_them(tmp_path):
    result = build_dataset(FIXTURES / "per_dimension", tmp_path / "out", drop_missing_text=True)
    assert result.report["units"]["kept"] == 16
    assert result.report["missing_text"]["units"] == 3
    assert "e5" not in {r["paper_id"] for r in _rows(result)}


def test_per_dimension_split(per_dim):
    rows = _rows(per_dim)
    split_of: dict[str, set[str]] = {}
    for r in rows:
        split_of.setdefault(r["paper_id"], set()).add(r["split"])
    assert all(len(s) == 1 for s in split_of.values())  # no paper crosses splits
    split = {p: next(iter(s)) for p, s in split_of.items()}
    # strata f1000 {a1, e5}, moprd {b2}, openreview {c3}, unknown {d4}: round-half-up(25% of 2) = 1 f1000 paper
    # in test, none elsewhere; validation rounds to 0 everywhere, so one training paper of the largest stratum
    # (f1000, first by name among the ties) moves there
    assert sorted([split["a1"], split["e5"]]) == ["test", "validation"]
    assert split["b2"] == split["c3"] == split["d4"] == "train"
    counts = per_dim.report["counts"]
    assert counts["train"]["papers"] == 3 and counts["validation"]["papers"] == 1 and counts["test"]["papers"] == 1
    assert per_dim.report["split"]["papers_crossing_splits"] == 0


def test_build_is_deterministic_and_seeded(per_dim, tmp_path):
    again = build_dataset(FIXTURES / "per_dimension", tmp_path / "again")
    assert again.report["counts"] == per_dim.report["counts"]
    assert again.report["input"]["sha256"] == per_dim.report["input"]["sha256"]
    for dim in DIMENSIONS:
        for split in ("train", "validation", "test"):
            a = (Path(per_dim.path) / "data" / dim / f"{split}.parquet")
            b = (tmp_path / "again" / "data" / dim / f"{split}.parquet")
            assert a.exists() == b.exists()
            if a.exists():
                assert a.read_bytes() == b.read_bytes()


# ---------------------------------------------------------------- raw layout


def test_raw_layout(raw):
    rep = raw.report
    assert rep["input"]["layouts"] == ["raw"]
    assert rep["units"]["read"] == 12  # 3 + 2 + 2 + 1 + 2 + 2 result entries
    assert rep["units"]["kept"] == 9
    assert rep["units"]["excluded_score_0"] == {
        "readability": 0, "structure": 1, "comprehensiveness": 0, "criticalness": 1}
    assert rep["units"]["excluded_score_minus3"] == {
        "readability": 1, "structure": 0, "comprehensiveness": 0, "criticalness": 0}
    assert rep["source_resolution"] == {"record": 5, "uid_prefix": 4}
    assert rep["papers"] == 4 and rep["reviews"] == 6
    rows = {r["unit_id"]: r for r in _rows(raw)}
    # MOPRD uid "moprd-100-<version>-r<reviewer>": both versions' reviews belong to paper moprd-100
    assert rows["moprd-100-1-r1::readability"]["paper_id"] == "moprd-100"
    assert rows["moprd-100-2-r1::comprehensiveness"]["paper_id"] == "moprd-100"
    assert rows["moprd-100-2-r1::comprehensiveness"]["abstract"] == "We review node, edge and walk sampling."
    assert rows["moprd-100-2-r1::comprehensiveness"]["references"] == [
        "Leskovec, J. Sampling from large graphs. 2006.", "Ribeiro, B. Random walks. 2010."]
    # f1000-7 and f1000-8 share a normalised title: one paper, one title, and f1000-8 gets the paper's text
    p7, p8 = rows["f1000-7::criticalness"], rows["f1000-8::readability"]
    assert p7["paper_id"] == p8["paper_id"] and p7["paper_id"].startswith("paper-")
    assert p8["title"] == "Urban Beekeeping and Pollinator Health: A Review"
    assert p8["text"] == p7["text"] and "City hives" in p8["text"]
    assert rep["missing_text"]["reviews_given_text_of_same_paper"] == ["f1000-8"]
    # text carried by the record itself
    assert rows["openreview-3::criticalness"]["references"] == ["Kudo, T. SentencePiece. 2018."]
    assert rows["openreview-3::criticalness"]["source"] == "openreview"
    assert rep["missing_text"]["unit_ids"] == ["moprd-200-1-r2::readability"]


def test_both_layouts_in_one_folder(tmp_path):
    release = tmp_path / "release"
    shutil.copytree(FIXTURES / "per_dimension", release)
    shutil.copy(FIXTURES / "raw" / "raw_samples.json", release / "raw_samples.json")
    result = build_dataset(release, tmp_path / "out")
    assert result.report["input"]["layouts"] == ["per_dimension", "raw"]
    assert result.report["units"]["kept"] == 19 + 9


# ---------------------------------------------------------------- errors


def _release_with(tmp_path: Path, dimension: str, records: list) -> Path:
    release = tmp_path / "bad"
    shutil.copytree(FIXTURES / "per_dimension", release)
    (release / "annotations" / f"{dimension}.json").write_text(json.dumps(records))
    return release


@pytest.mark.parametrize(
    "record, field, fragment",
    [
        ({"uid": "b2", "score": 3.0, "reasons": []}, "score", "outside the annotation space"),
        ({"uid": "b2", "score": -1.5, "reasons": ["x"]}, "score", "outside the annotation space"),
        ({"uid": "b2", "score": "bad", "reasons": ["x"]}, "score", "must be a number"),
        ({"uid": "b2", "score": None, "reasons": ["x"]}, "score", "missing score"),
        ({"uid": "b2", "reasons": ["x"]}, "score", "missing score"),
        ({"uid": "b2", "score": -1.0, "reasons": [1, 2]}, "reasons", "list of strings"),
        ({"score": -1.0, "reasons": ["x"]}, "uid", "missing or empty uid"),
    ],
)
def test_bad_record_names_file_record_and_field(tmp_path, record, field, fragment):
    good = {"uid": "c3", "score": -1.0, "reasons": ["Fine."]}
    release = _release_with(tmp_path, "structure", [good, record])
    with pytest.raises(ReleaseFormatError) as err:
        build_dataset(release, tmp_path / "out")
    msg = str(err.value)
    assert "structure.json" in msg and "record 1 (0-based" in msg and f"field '{field}'" in msg and fragment in msg
    assert err.value.field == field
    assert not (tmp_path / "out").exists()


def test_raw_errors(tmp_path):
    base = json.loads((FIXTURES / "raw" / "raw_samples.json").read_text())
    cases = [
        (lambda s: s[2]["result"][0].update(dimension="Novelty"), "2 (0-based, uid f1000-7)", "result[0].dimension"),
        (lambda s: s[4]["result"][1].update(score=5.0), "4 (0-based, uid openreview-3)", "result[1].score"),
        (lambda s: s.append(dict(s[3])), "6 (0-based, uid f1000-8)", "uid"),  # one review twice
        (lambda s: s[0]["result"].append(dict(s[0]["result"][0])), "0 (0-based, uid moprd-100-1-r1)", "result[3]"),
        (lambda s: s[1].update(source="arxiv"), "1 (0-based, uid moprd-100-2-r1)", "source"),
    ]
    for i, (mutate, record, field) in enumerate(cases):
        samples = json.loads(json.dumps(base))
        mutate(samples)
        path = tmp_path / f"case{i}.json"
        path.write_text(json.dumps(samples))
        with pytest.raises(ReleaseFormatError) as err:
            read_release(path)
        assert f"case{i}.json" in str(err.value) and f"record {record}," in str(err.value)
        assert err.value.field == field


def test_duplicate_unit_across_files_is_an_error(tmp_path):
    release = tmp_path / "release"
    (release / "a").mkdir(parents=True)
    (release / "b").mkdir()
    (release / "a" / "raw.json").write_text((FIXTURES / "raw" / "raw_samples.json").read_text())
    (release / "b" / "raw.json").write_text((FIXTURES / "raw" / "raw_samples.json").read_text())
    with pytest.raises(ReleaseFormatError, match="appears twice"):
        build_dataset(release, tmp_path / "out")


def test_unrecognised_file_and_empty_folder(tmp_path):
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "notes.json").write_text(json.dumps([1, 2, 3]))
    with pytest.raises(ReleaseFormatError, match="unrecognised release file"):
        build_dataset(tmp_path / "r", tmp_path / "out")
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError):
        build_dataset(tmp_path / "empty", tmp_path / "out")


def test_sources_file_overrides_release_mapping(tmp_path):
    mapping = tmp_path / "map.json"
    mapping.write_text(json.dumps({"d4": "openreview"}))
    result = build_dataset(FIXTURES / "per_dimension", tmp_path / "out", sources=mapping)
    src = {r["paper_id"]: r["source"] for r in _rows(result)}
    # the folder's sources.json is ignored: b2/c3 fall back to "unknown", a1 keeps its DOI
    assert src == {"a1": "f1000", "b2": "unknown", "c3": "unknown", "d4": "openreview", "e5": "unknown"}
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"d4": "nature"}))
    with pytest.raises(ReleaseFormatError, match="unknown source 'nature'"):
        build_dataset(FIXTURES / "per_dimension", tmp_path / "out2", sources=bad)


def _strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield k
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def test_card_and_report_hold_no_build_machine_path(tmp_path):
    """`data push` publishes README.md and build_report.json: no absolute local path may appear in them."""
    release = tmp_path / "private" / "release_copy"
    shutil.copytree(FIXTURES / "per_dimension", release)
    mapping = tmp_path / "elsewhere" / "map.json"  # a --sources file outside the release folder
    mapping.parent.mkdir()
    mapping.write_text(json.dumps({"d4": "openreview"}))
    result = build_dataset(release, tmp_path / "out" / "surveyreview", sources=mapping)
    readme = (result.path / "README.md").read_text()
    report_text = (result.path / "build_report.json").read_text()
    for text in (readme, report_text):
        assert str(tmp_path) not in text and str(FIXTURES) not in text and "private" not in text
    inp = json.loads(report_text)["input"]
    assert inp["path"] == "release_copy" and inp["sources_file"] == "map.json"
    assert "annotations/readability.json" in inp["files"] and inp["records_read"]["annotations/readability.json"] == 7
    assert not [s for s in _strings(json.loads(report_text)) if s.startswith("/")]
    assert "release folder `release_copy`" in readme and inp["sha256"] in readme
    # a release without ANNOTATION.md (not made by `data release`): no annotation section, none recorded
    assert "## Annotation" not in readme and json.loads(report_text)["annotation_section"] is None
    assert "\n\n## Filtering of scores 0 and -3" in readme and "$annotation" not in readme
    # same files elsewhere -> same release hash (only names and contents are hashed)
    again = build_dataset(FIXTURES / "per_dimension", tmp_path / "out2", sources=mapping)
    assert again.report["input"]["sha256"] == inp["sha256"]


# ---------------------------------------------------------------- folder format and loading


def test_folder_layout_and_card(per_dim):
    folder = Path(per_dim.path)
    readme = (folder / "README.md").read_text()
    assert readme.startswith("---\n")
    import yaml

    meta = yaml.safe_load(readme.split("---\n")[1])
    configs = {c["config_name"]: c for c in meta["configs"]}
    assert set(configs) == {*DIMENSIONS, "all"} and configs["all"]["default"] is True
    assert configs["readability"]["data_files"][0] == {"split": "train", "path": "data/readability/train.parquet"}
    infos = {i["config_name"]: i for i in meta["dataset_info"]}
    assert {s["name"]: s["num_examples"] for s in infos["all"]["splits"]} == {
        s: per_dim.report["counts"][s]["units"] for s in ("train", "validation", "test")}
    assert "$" not in readme.split("---\n", 2)[2].replace("$$$", "")  # every placeholder filled
    assert "belong to their authors" in readme and "seed 42" in readme
    assert "| readability | 2 | 0 |" in readme  # 0/-3 filtering counts
    report = json.loads((folder / "build_report.json").read_text())
    assert report["units"] == per_dim.report["units"]


def test_schema_matches_datasets_features():
    features = surveyreview_features()
    assert features._to_yaml_list() == features_yaml()
    assert features.arrow_schema == arrow_schema()
    assert list(features) == list(COLUMNS)


def test_load_offline_with_datasets(per_dim, monkeypatch):
    from datasets import load_dataset

    dd = load_dataset(str(per_dim.path), "readability")
    assert dd["train"].features == surveyreview_features()
    n = {s: len(dd[s]) for s in dd}
    assert n == {s: per_dim.report["counts"][s]["units_per_dimension"]["readability"] for s in n}
    # a folder named "surveyreview" loads by that bare name from its parent folder
    monkeypatch.chdir(Path(per_dim.path).parent)
    by_name = load_dataset("surveyreview", "criticalness")
    assert sum(len(by_name[s]) for s in by_name) == 5


def test_load_surveyreview_fills_empty_splits(per_dim):
    # criticalness has units of a1 (test or validation), c3 and d4 (train) and e5: all splits exist;
    # comprehensiveness of the validation/test f1000 papers: only a1-r2 -> one of the two splits is empty
    dd = load_surveyreview(per_dim.path, "comprehensiveness")
    assert set(dd) == {"train", "validation", "test"}
    assert sorted(len(dd[s]) for s in ("validation", "test")) == [0, 1]
    assert dd["validation"].features == surveyreview_features()
    assert len(load_surveyreview(per_dim.path, "all", split="train")) == per_dim.report["counts"]["train"]["units"]
    with pytest.raises(ValueError):
        load_surveyreview(per_dim.path, "novelty")
    with pytest.raises(FileNotFoundError):
        load_surveyreview(FIXTURES / "per_dimension")


def test_sample_release(tmp_path):
    from surveyalign.data import sample_release_dir

    result = build_dataset(sample_release_dir(), tmp_path / "sample")
    rep = result.report
    assert rep["papers"] == 32 and rep["reviews"] == 48 and rep["missing_text"]["units"] == 0
    for split in ("train", "validation", "test"):
        per_dim = rep["counts"][split]["units_per_dimension"]
        assert all(n >= (8 if split == "test" else 1) for n in per_dim.values()), (split, per_dim)
    leak = rep["leakage_guard"]
    assert leak["texts_cleaned"] == 3 and leak["snippets_verbatim_before_guard"] > 0
    assert leak["snippets_verbatim_in_inputs"] == 0
    assert set(rep["counts"]["test"]["per_source"]) >= {"f1000", "moprd", "openreview"}


def test_output_folder_safety(tmp_path):
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "notes.txt").write_text("keep me")
    with pytest.raises(FileExistsError, match="not replacing"):
        build_dataset(FIXTURES / "per_dimension", precious)
    assert (precious / "notes.txt").read_text() == "keep me"
    with pytest.raises(ValueError, match="outside the release"):
        build_dataset(FIXTURES / "per_dimension", FIXTURES / "per_dimension" / "out")
    out = tmp_path / "out"
    build_dataset(FIXTURES / "per_dimension", out)
    with pytest.raises(FileExistsError, match="overwrite=True"):
        build_dataset(FIXTURES / "per_dimension", out, overwrite=False)
    (out / "data" / "stale.parquet").write_text("old")
    build_dataset(FIXTURES / "per_dimension", out)  # an earlier build is replaced as a whole
    assert not (out / "data" / "stale.parquet").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "precious"]  # no leftover temporary folder


def test_release_with_one_dimension_builds_loads_and_has_stats(tmp_path):
    """A release covering only readability: no config is declared for the other dimensions, they load empty
    through load_surveyreview, and `data stats` reports n = 0 for them instead of failing."""
    from datasets import load_dataset

    from surveyalign.data.stats import dataset_stats

    release = tmp_path / "release"
    shutil.copytree(FIXTURES / "per_dimension" / "articles", release / "articles")
    (release / "annotations").mkdir()
    shutil.copy(FIXTURES / "per_dimension" / "annotations" / "readability.json", release / "annotations")
    out = build_dataset(release, tmp_path / "surveyreview").path
    readme = (out / "README.md").read_text()
    assert "config_name: readability" in readme and "config_name: structure" not in readme
    n_read = sum(len(split) for split in load_dataset(str(out), "readability").values())
    assert n_read == 5  # the 5 readability units of the fixture (see test_stats_numbers in test_data_cli.py)
    empty = load_surveyreview(out, "structure")
    assert {name: len(ds) for name, ds in empty.items()} == {"train": 0, "validation": 0, "test": 0}
    stats = dataset_stats(out)
    assert stats["dimensions"]["readability"]["n"] == 5
    assert stats["dimensions"]["structure"]["n"] == 0 and stats["dimensions"]["structure"]["mean"] is None
    assert stats["overall"]["n"] == 5

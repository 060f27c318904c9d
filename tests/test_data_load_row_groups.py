"""Built files in small row groups read back a group at a time (issue 23: the evaluation's memory): the same rows
in the same order as the whole-file load, the survey texts read later for a chunk of units, the same run."""

from __future__ import annotations

from pathlib import Path

import pytest

from surveyalign.evaluation import EvalConfig, run_evaluation


@pytest.fixture(scope="module")
def grouped_dir(tmp_path_factory) -> Path:
    """The sample release built with row groups of 2 rows (every file has several)."""
    from surveyalign.data import build_dataset, files, sample_release_dir

    out = tmp_path_factory.mktemp("grouped") / "surveyreview"
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(files, "ROW_GROUP_ROWS", 2)
        build_dataset(sample_release_dir(), out)
    return out


def _config(dataset: Path, out: Path, **fields) -> EvalConfig:
    data = {"name": "t", "dataset": str(dataset), "output_dir": str(out), "progress": False, "bootstrap": 0,
            "limit": None, "backend": {"kind": "constant", "options": {"score": -1}}}
    data.update(fields)
    return EvalConfig.from_dict(data)


def test_small_row_groups_hold_the_whole_file_rows_each_text_once_per_group(grouped_dir, dataset_dir):
    import pyarrow.parquet as pq

    from surveyalign.data import load_surveyreview
    from surveyalign.data.load import iter_split_rows, split_files

    for split in ("train", "validation", "test"):
        grouped, whole = split_files(grouped_dir, split), split_files(dataset_dir, split)
        assert [p.relative_to(grouped_dir) for p in grouped] == [p.relative_to(dataset_dir) for p in whole]
        for g, w in zip(grouped, whole):
            n = pq.ParquetFile(w).metadata.num_rows
            assert pq.ParquetFile(w).num_row_groups == 1  # the sample's files are under 128 rows
            assert pq.ParquetFile(g).num_row_groups == (n + 1) // 2
            # each group's dictionary holds only its own rows' distinct texts (a whole-file dictionary written
            # into every group would store every text once per group)
            handle = pq.ParquetFile(g)
            meta = handle.metadata
            text = meta.schema.names.index("text")
            for i in range(meta.num_row_groups):
                own = {r["text"] for r in handle.read_row_group(i, columns=["text"]).to_pylist()}
                own_bytes = sum(len(t.encode()) for t in own)
                assert own_bytes <= meta.row_group(i).column(text).total_uncompressed_size <= own_bytes + 300
        rows = list(iter_split_rows(grouped, batch_size=3))
        assert rows == list(iter_split_rows(whole)) == list(load_surveyreview(dataset_dir, "all", split))


def test_rows_read_at_their_positions_are_the_rows_read_in_order(grouped_dir):
    from surveyalign.data.load import iter_split_rows, read_column_at, split_files

    files = split_files(grouped_dir, "test")
    placed = list(iter_split_rows(files, where=True))
    assert [(f, r) for f, r, _ in placed[:3]] == [(0, 0), (0, 1), (0, 2)]
    assert [r for f, r, _ in placed if f == 1][:2] == [0, 1]  # row indices restart in each file
    wanted = [(f, r) for f, r, _ in reversed(placed)]  # any order, several groups and files
    got = read_column_at(files, wanted + wanted[:2], "unit_id")
    assert got == {(f, r): row["unit_id"] for f, r, row in placed}
    with pytest.raises(IndexError):
        read_column_at(files, [(0, 10_000)], "unit_id")
    with pytest.raises(IndexError):
        read_column_at(files, [(len(files), 0)], "unit_id")


def test_units_read_by_chunks_are_the_whole_load_units_in_order(grouped_dir, dataset_dir, tmp_path):
    from surveyalign.data import load_surveyreview
    from surveyalign.evaluation.units import UNREAD_COLUMNS, load_units, read_texts

    config = _config(grouped_dir, tmp_path)
    units, info = load_units(config)
    assert all(u.row["text"] is None and u.text_at is not None for u in units)  # no text held after the load
    expected = [{k: v for k, v in row.items() if k not in UNREAD_COLUMNS} for dim in config.dimensions
                for row in load_surveyreview(dataset_dir, "all", "test") if row["dimension"] == dim]
    assert set(expected[0]) == {"unit_id", "paper_id", "review_id", "source", "dimension", "score", "rationales",
                                "title", "text"}
    assert [u.unit_id for u in units] == [r["unit_id"] for r in expected]
    assert [u.has_text for u in units] == [bool((r["text"] or "").strip()) for r in expected]
    assert info["units"] == len(expected)
    for start in range(0, len(units), 3):  # a chunk of 3 units at a time, as the judge stage reads them
        read_texts(units[start:start + 3])
    assert [u.row for u in units] == expected
    again, _ = load_units(config)
    read_texts(again)  # all at once: one text object per paper
    assert [u.row for u in again] == expected
    first: dict = {}
    for unit in again:
        if unit.row["text"]:
            assert unit.row["text"] is first.setdefault(unit.row["paper_id"], unit.row["text"])


def test_a_chunked_run_over_small_row_groups_is_the_whole_file_run(grouped_dir, dataset_dir, tmp_path, monkeypatch):
    from surveyalign.backends.simple import ScriptedBackend
    from surveyalign.evaluation import stream

    def reply(messages, settings, sample_index):  # depends on the prompt only
        return f"Noted.$$${(-1, 1, 2)[len(messages[-1]['content']) % 3]}$$$"

    whole = run_evaluation(_config(dataset_dir, tmp_path / "whole"), backend=ScriptedBackend(reply))
    monkeypatch.setattr(stream, "CHUNK_UNITS", 3)
    chunked = run_evaluation(_config(grouped_dir, tmp_path / "chunked"), backend=ScriptedBackend(reply))
    assert len(whole.predictions) > 7 and chunked.predictions == whole.predictions
    assert {p["prediction"] for p in whole.predictions} == {-1, 1, 2}
    assert chunked.counts == whole.counts
    assert {k: v for k, v in chunked.metrics.items() if k != "harness"} == \
        {k: v for k, v in whole.metrics.items() if k != "harness"}

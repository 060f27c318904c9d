"""A finished run asked again is read back from the run folder (finished.json), never from stale results (issue 23)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from surveyalign.backends import load_backend
from surveyalign.evaluation import EvalConfig, run_evaluation
from surveyalign.evaluation.finished import FINISHED_FILE

READ_BACK = "predictions read back, nothing re-parsed"


def _config(dataset: Path, out: Path, **fields) -> EvalConfig:
    data = {"name": "t", "dataset": str(dataset), "output_dir": str(out), "progress": False, "bootstrap": 0,
            "limit": 2, "samples_per_unit": 2, "generation": {"temperature": 0.7},
            "backend": {"kind": "constant", "options": {"score": -1}}}
    data.update(fields)
    return EvalConfig.from_dict(data)


def _out(capsys) -> str:
    return " ".join(capsys.readouterr().out.split())  # the console wraps long lines


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_finished_run_is_read_back_with_the_replays_results(dataset_dir, tmp_path, capsys):
    dataset = tmp_path / "data"
    shutil.copytree(dataset_dir, dataset)
    first = run_evaluation(_config(dataset, tmp_path / "runs"))
    run_dir = first.run_dir
    n = first.calls["made"]
    assert n == 2 * len(first.predictions) and n > 0  # K=2 calls per unit, every unit has a text
    assert (run_dir / FINISHED_FILE).is_file()
    capsys.readouterr()

    # asked again (another concurrency: operational, not part of the fingerprint): read back, not replayed
    again = run_evaluation(_config(dataset, tmp_path / "runs", concurrency=3))
    assert READ_BACK in _out(capsys)
    resumed = {"torn_lines": 0, "cached": n, "made": 0, "errors": 0, "seconds": 0.0, "calls_per_s": None,
               "answers": {"reused": n, "retried": 0, "made": 0}}
    assert again.calls == resumed
    assert again.predictions == first.predictions
    assert again.counts == first.counts
    on_disk = json.loads((run_dir / "metrics.json").read_text())
    assert on_disk["harness"]["calls"] == resumed
    assert {k: v for k, v in on_disk.items() if k != "harness"} == \
        {k: v for k, v in first.metrics.items() if k != "harness"}
    assert json.loads((run_dir / "run_config.json").read_text())["calls"] == resumed

    # the replay (no record) gives the same result, and vouches for the folder again
    (run_dir / FINISHED_FILE).unlink()
    replayed = run_evaluation(_config(dataset, tmp_path / "runs"))
    assert READ_BACK not in _out(capsys)
    assert replayed.calls == resumed and replayed.predictions == again.predictions
    assert (run_dir / FINISHED_FILE).is_file()

    # another generation setting: new call keys, every call made again
    hotter = run_evaluation(_config(dataset, tmp_path / "runs", generation={"temperature": 0.9}))
    assert READ_BACK not in _out(capsys)
    assert hotter.calls["made"] == n

    # a touched dataset file: replayed (the answers are still in the cache under unchanged keys)
    run_evaluation(_config(dataset, tmp_path / "runs", generation={"temperature": 0.9}))
    assert READ_BACK in _out(capsys)
    data_file = next(p for p in sorted((dataset / "data").rglob("*")) if p.is_file())
    st = data_file.stat()
    os.utime(data_file, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    touched = run_evaluation(_config(dataset, tmp_path / "runs", generation={"temperature": 0.9}))
    assert READ_BACK not in _out(capsys)
    assert touched.calls["made"] == 0 and touched.calls["cached"] == n


def test_an_edited_cache_is_never_answered_from_the_old_predictions(dataset_dir, tmp_path, capsys):
    first = run_evaluation(_config(dataset_dir, tmp_path / "runs"))
    assert {p["prediction"] for p in first.predictions} == {-1}
    calls_path = first.run_dir / "calls.jsonl"
    records = _lines(calls_path)
    # a later line for the first unit's two calls says 2: the last record per key counts
    later = [{**r, "text": "Clear and complete.$$$2$$$"} for r in records if r["unit_id"] == records[0]["unit_id"]]
    assert len(later) == 2
    with calls_path.open("a") as fh:
        fh.writelines(json.dumps(r) + "\n" for r in later)
    capsys.readouterr()
    again = run_evaluation(_config(dataset_dir, tmp_path / "runs"))
    assert READ_BACK not in _out(capsys)
    by_unit = {p["unit_id"]: p["prediction"] for p in again.predictions}
    assert by_unit[records[0]["unit_id"]] == 2
    assert sorted(by_unit.values()).count(2) == 1 and again.calls["made"] == 0


def test_a_run_with_an_unreadable_answer_writes_no_record_and_asks_it_again(dataset_dir, tmp_path, capsys):
    seen: list[int] = []

    def reply(messages, settings, sample_index):
        seen.append(sample_index)
        return "no score here" if len(seen) == 1 else "Fine.$$$1$$$"

    scripted = load_backend("scripted", replies=reply)
    first = run_evaluation(_config(dataset_dir, tmp_path / "runs"), backend=scripted)
    assert first.calls["made"] == len(seen) and sum(p["status"] == "parse_failed" for p in first.predictions) <= 1
    assert not (first.run_dir / FINISHED_FILE).exists()  # retry_errors: the unreadable answer is asked again
    made = len(seen)
    capsys.readouterr()
    again = run_evaluation(_config(dataset_dir, tmp_path / "runs"), backend=scripted)
    assert READ_BACK not in _out(capsys)
    assert again.calls["made"] == 1 and len(seen) == made + 1
    assert (first.run_dir / FINISHED_FILE).is_file()  # now every answer gives a score
    third = run_evaluation(_config(dataset_dir, tmp_path / "runs"), backend=scripted)
    assert READ_BACK in _out(capsys)
    assert third.calls["made"] == 0 and len(seen) == made + 1
    assert {p["prediction"] for p in third.predictions} == {1}


def test_units_of_one_paper_share_its_text_and_one_prompt_per_dimension(dataset_dir, tmp_path):
    from surveyalign.evaluation.judges import build_judge
    from surveyalign.evaluation.lengths import prepare_units
    from surveyalign.evaluation.units import load_units
    from surveyalign.judge import Judge

    config = _config(dataset_dir, tmp_path / "runs", limit=None)
    units, _ = load_units(config)
    judge, _, _, sources = build_judge(config, None)
    prepare_units(config, units, judge, sources, console=None)
    by_paper: dict = {}
    for unit in units:
        by_paper.setdefault((unit.row["paper_id"], unit.dimension), []).append(unit)
    shared = [group for group in by_paper.values() if len(group) > 1]
    assert shared  # the sample release has papers with several reviews
    for group in shared:
        assert all(u.row["text"] is group[0].row["text"] for u in group)
        assert all(u.prompt is group[0].prompt for u in group)
    # the shared prompt is the one each unit would get on its own
    fresh = Judge(judge.backend, protocol=config.protocol, settings=config.generation)
    unit = shared[0][-1]
    alone = fresh.prepare(unit.row["text"], unit.dimension, knowledge=unit.knowledge, title=unit.row.get("title"))
    assert alone.messages == unit.prompt.messages and alone.messages_hash == unit.prompt.messages_hash


def test_split_rows_read_a_batch_at_a_time_are_the_datasets_rows(dataset_dir):
    from surveyalign.data import load_surveyreview
    from surveyalign.data.load import iter_split_rows, split_columns, split_files

    for split in ("train", "validation", "test"):
        files = split_files(dataset_dir, split)
        assert files is not None
        ds = load_surveyreview(dataset_dir, dimension="all", split=split)
        rows = list(iter_split_rows(files, batch_size=3))  # several batches per file
        assert len(rows) == len(ds) > 0
        assert rows == list(ds)
        assert split_columns(files) == ds.column_names


def test_chunked_judge_stage_gives_the_whole_split_results(dataset_dir, tiny_model_dir, tmp_path, monkeypatch):
    from surveyalign.evaluation import stream

    def reply(messages, settings, sample_index):  # depends on the prompt only (not on how calls are batched)
        return f"Noted.$$${(-1, 1, 2)[len(messages[-1]['content']) % 3]}$$$"

    from surveyalign.backends.simple import ScriptedBackend

    fields = {"limit": None, "tokenizer": str(tiny_model_dir), "max_length": 950}

    def run(name: str):
        backend = ScriptedBackend(reply)
        return run_evaluation(_config(dataset_dir, tmp_path / name, **fields), backend=backend), backend

    whole, whole_backend = run("whole")
    assert len(whole.predictions) > 7
    monkeypatch.setattr(stream, "CHUNK_UNITS", 3)
    chunked, chunked_backend = run("chunked")
    assert len(chunked_backend.calls) == len(whole_backend.calls) == whole.calls["made"]
    assert chunked.predictions == whole.predictions
    drop = ("seconds", "calls_per_s")
    assert {k: v for k, v in chunked.calls.items() if k not in drop} == \
        {k: v for k, v in whole.calls.items() if k not in drop}
    pl = whole.metrics["harness"]["prompt_length"]
    assert pl["n_shortened"] > 0  # the merge of the chunks' length summaries is exercised
    assert chunked.metrics["harness"]["prompt_length"] == pl
    assert {k: v for k, v in chunked.metrics.items() if k != "harness"} == \
        {k: v for k, v in whole.metrics.items() if k != "harness"}
    assert chunked.metrics["harness"]["cost"] == whole.metrics["harness"]["cost"]
    # and the chunked run resumes like any other: nothing made again
    again, again_backend = run("chunked")
    assert again.calls["made"] == 0 and not again_backend.calls and again.predictions == whole.predictions

"""The chunked judge stage and the chunked ``--plan`` (``surveyalign.evaluation.stream``, issue 23) at their edges.

* when each applies (more units than one chunk; no RQS, plan, cap, drift check or batch API for the judge stage);
* a run over an answering HTTP server (errors included) counts, times and resumes like the whole-split run;
* what a chunk lets go of: the survey texts, the prompts' messages (one bare prompt per shared prompt, of the
  unit's own dimension), the light calls' messages; the length warning goes out once per dimension;
* the plan counts failed answers as the whole-split plan does, with and without ``retry_errors``;
* prompts too long for the judge are counted over every chunk;
* ``_give_back`` hands freed memory back through glibc's ``malloc_trim(0)``.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from surveyalign.backends.simple import ScriptedBackend
from surveyalign.data import load_surveyreview
from surveyalign.evaluation import EvalConfig, run_evaluation, stream
from surveyalign.testing import FakeChatServer


def _config(dataset: Path, out: Path, **fields) -> EvalConfig:
    data = {"name": "t", "dataset": str(dataset), "output_dir": str(out), "run_name": "run", "progress": False,
            "bootstrap": 0, "samples_per_unit": 2, "generation": {"temperature": 0.7},
            "backend": {"kind": "constant", "options": {"score": -1}}}
    data.update(fields)
    return EvalConfig.from_dict(data)


def _n_units(dataset: Path) -> int:
    return len(list(load_surveyreview(dataset, split="test")))


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


# ------------------------------------------------------------------------------------------- when it applies


def test_applies_only_to_a_plain_judge_stage_over_more_than_one_chunk(dataset_dir, tmp_path, monkeypatch):
    monkeypatch.setattr(stream, "CHUNK_UNITS", 4)
    plain, capped = _config(dataset_dir, tmp_path), _config(dataset_dir, tmp_path, max_cost=1.0)
    five, four = [object()] * 5, [object()] * 4
    api = {"shared": SimpleNamespace()}  # a backend without a ``batch`` attribute
    off, on = {"shared": SimpleNamespace(batch=False)}, {"shared": SimpleNamespace(batch=True)}

    def ok(config=plain, units=five, groups=api, rqs=False, plan_only=False, check_drift=None):
        return stream.applies(config, units, groups, rqs=rqs, plan_only=plan_only, check_drift=check_drift)

    assert ok() and ok(groups=off)
    assert not ok(units=four)  # one chunk: the whole-split path
    assert not ok(rqs=True) and not ok(plan_only=True) and not ok(check_drift=3) and not ok(config=capped)
    assert not ok(groups=on) and not ok(groups={"a": SimpleNamespace(batch=False), "b": SimpleNamespace(batch=True)})
    assert stream.plan_applies(five, rqs=False, check_drift=None)
    assert not stream.plan_applies(four, rqs=False, check_drift=None)
    assert not stream.plan_applies(five, rqs=True, check_drift=None)
    assert not stream.plan_applies(five, rqs=False, check_drift=2)
    assert not stream.plan_applies(four, rqs=True, check_drift=2)


# ------------------------------------------------------------------------------ a served judge, with errors


def _reply(body: dict) -> str:  # depends on the prompt only
    return f"Fine.$$${(-1, 1, 2)[len(body['messages'][-1]['content']) % 3]}$$$"


def test_chunked_served_run_counts_times_and_resumes_like_the_whole_split(dataset_dir, tmp_path, monkeypatch):
    seen: list[dict] = []
    inner = stream.judge_in_chunks

    def spy(config, units, *args):
        out = inner(config, units, *args)
        seen.append({"out": out, "units": list(units)})
        return out

    monkeypatch.setattr(stream, "judge_in_chunks", spy)
    timings: list[tuple[int, float, float | None]] = []
    execute = stream.execute

    def timed(todo, *args, **kwargs):
        got = execute(todo, *args, **kwargs)
        timings.append((len(todo), got[1], got[2]))
        return got

    monkeypatch.setattr(stream, "execute", timed)

    def run(name: str, chunk: int):
        monkeypatch.setattr(stream, "CHUNK_UNITS", chunk)
        with FakeChatServer(replies=_reply, model="m", fail_first=3, fail_status=400) as server:
            backend = {"kind": "openai", "options": {"model": "m", "base_url": server.base_url, "api_key_env": None,
                                                     "concurrency": 1, "max_retries": 0}}
            config = _config(dataset_dir, tmp_path / name, backend=backend, limit=None)
            first, again = run_evaluation(config), run_evaluation(config)
            (tmp_path / name / "run" / "finished.json").unlink()  # not read back: every answer replayed
            replayed = run_evaluation(config)
        return first, again, replayed

    whole, whole_again, whole_replayed = run("whole", 100_000)
    assert not seen and not timings
    chunked, chunked_again, chunked_replayed = run("chunked", 3)
    n_units = _n_units(dataset_dir)
    assert len(seen) == 3 and n_units > 6
    assert whole.calls["errors"] == chunked.calls["errors"] == 3  # the server's first three answers
    assert chunked.calls["made"] == whole.calls["made"] == 2 * n_units
    drop = ("seconds", "calls_per_s")
    assert {k: v for k, v in chunked.calls.items() if k not in drop} == \
        {k: v for k, v in whole.calls.items() if k not in drop}
    # the resume asks again only the three failed calls and reuses the rest
    assert chunked_again.calls["made"] == whole_again.calls["made"] == 3
    assert chunked_again.calls["cached"] == whole_again.calls["cached"] == 2 * n_units - 3
    assert chunked_again.predictions == whole_again.predictions
    # timed like the whole split: the chunks' seconds summed, to the millisecond; the rate over the calls made
    n_chunks = -(-n_units // 3)
    first_run = timings[:n_chunks]
    assert sum(n for n, _, _ in first_run) == 2 * n_units and all(r is not None for _, _, r in first_run)
    total = sum(t for _, t, _ in first_run)
    assert seen[0]["out"]["seconds"] == round(total, 3)
    assert seen[0]["out"]["calls_per_s"] == round(2 * n_units / total, 2)
    # the resume: chunks with nothing to ask are not untimed, so the three retried calls still give a rate
    resumed = timings[n_chunks:2 * n_chunks]
    assert sum(n for n, _, _ in resumed) == 3 and any(n == 0 for n, _, _ in resumed)
    assert seen[1]["out"]["calls_per_s"] is not None and whole_again.calls["calls_per_s"] is not None
    # all answers replayed from the cache: nothing made, no rate
    assert chunked_replayed.calls["made"] == whole_replayed.calls["made"] == 0
    assert seen[2]["out"]["calls_per_s"] is None and whole_replayed.calls["calls_per_s"] is None
    assert chunked_replayed.predictions == whole_replayed.predictions
    assert all(r["stage"] == "judge" for r in _lines(tmp_path / "chunked" / "run" / "calls.jsonl"))
    # what the chunks let go of
    out, units = seen[0]["out"], seen[0]["units"]
    assert out["keys"] == 2 * n_units and len(out["calls"]) == 2 * n_units
    assert all(call.messages == [] for call in out["calls"])
    assert all(unit.row["text"] is None for unit in units)
    assert all(unit.prompt.messages == [] and unit.prompt.dimension == unit.dimension for unit in units)
    by_paper: dict[tuple, set[int]] = {}
    for i, unit in enumerate(units):  # in a chunk of 3, the reviews of one paper keep one (bare) prompt per dimension
        by_paper.setdefault((i // 3, unit.row["paper_id"], unit.dimension), set()).add(id(unit.prompt))
    assert all(len(ids) == 1 for ids in by_paper.values())
    assert len({id(unit.prompt) for unit in units}) == len(by_paper) < len(units)


def test_length_warning_once_per_dimension_in_chunks(dataset_dir, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(stream, "CHUNK_UNITS", 3)
    warning = "max_length=950 is not applied: no tokenizer"
    backend = ScriptedBackend(lambda messages, settings, k: "Fine.$$$1$$$")
    result = run_evaluation(_config(dataset_dir, tmp_path, limit=None, max_length=950), backend=backend)
    assert result.calls["made"] > 0 and result.calls["calls_per_s"] is None  # a scripted judge does no work to time
    judged = " ".join(capsys.readouterr().out.split())
    capsys.readouterr()
    run_evaluation(_config(dataset_dir, tmp_path / "plan", limit=None, max_length=950), backend=backend,
                   plan_only=True)
    planned = " ".join(capsys.readouterr().out.split())
    for out in (judged, planned):
        assert out.count(warning) == 4, out  # readability, criticalness, comprehensiveness, structure: once each


# ------------------------------------------------------------------------------------ the plan's failed answers


def _bad_for_some(messages, settings, k):  # an unreadable answer for some prompts, the same on every run
    return "no score here" if len(messages[-1]["content"]) % 2 else "Fine.$$$1$$$"


@pytest.mark.parametrize("retry_errors", [True, False])
def test_plan_counts_failed_answers_like_the_whole_split(dataset_dir, tmp_path, monkeypatch, retry_errors):
    first = run_evaluation(_config(dataset_dir, tmp_path, limit=3, retry_errors=retry_errors),
                           backend=ScriptedBackend(_bad_for_some))
    records = _lines(tmp_path / "run" / "calls.jsonl")
    unreadable = sum("$$$" not in (r.get("text") or "") for r in records)
    assert 0 < unreadable < len(records) == first.calls["made"]
    config = _config(dataset_dir, tmp_path, limit=None, retry_errors=retry_errors)
    whole = run_evaluation(config, backend=ScriptedBackend(_bad_for_some), plan_only=True).calls["plan"]
    monkeypatch.setattr(stream, "CHUNK_UNITS", 3)
    units: list = []
    prepare = stream.prepare_units

    def spy(config, chunk, *args):
        units.extend(chunk)
        return prepare(config, chunk, *args)

    monkeypatch.setattr(stream, "prepare_units", spy)
    chunked = run_evaluation(config, backend=ScriptedBackend(_bad_for_some), plan_only=True).calls["plan"]
    assert chunked == whole
    # what the plan's chunks let go of: texts, and messages (one bare prompt per shared prompt, its own dimension)
    assert len(units) == _n_units(dataset_dir) and all(unit.row["text"] is None for unit in units)
    assert all(unit.prompt.messages == [] and unit.prompt.dimension == unit.dimension for unit in units)
    shared: dict[tuple, set[int]] = {}
    for i, unit in enumerate(units):
        shared.setdefault((i // 3, unit.row["paper_id"], unit.dimension), set()).add(id(unit.prompt))
    assert all(len(ids) == 1 for ids in shared.values()) and len({id(u.prompt) for u in units}) == len(shared)
    asked_again = unreadable if retry_errors else 0
    assert whole["calls"] == 2 * _n_units(dataset_dir) - len(records) + asked_again


# --------------------------------------------------------------------------------------- too long, everywhere


def test_prompts_too_long_are_counted_over_every_chunk(dataset_dir, tiny_model_dir, tmp_path, monkeypatch):
    fields = {"limit": None, "tokenizer": str(tiny_model_dir), "max_length": 60,
              "generation": {"temperature": 0.7, "max_new_tokens": 40}}
    backend = ScriptedBackend(lambda messages, settings, k: "Fine.$$$1$$$")
    whole = run_evaluation(_config(dataset_dir, tmp_path / "whole", **fields), backend=backend)
    monkeypatch.setattr(stream, "CHUNK_UNITS", 3)
    chunked = run_evaluation(_config(dataset_dir, tmp_path / "chunked", **fields), backend=backend)
    n_units = _n_units(dataset_dir)
    length = chunked.metrics["harness"]["prompt_length"]
    assert length == whole.metrics["harness"]["prompt_length"]
    assert length["n_too_long"] == n_units == sum(e["n_too_long"] for e in length["per_dimension"].values())
    assert chunked.calls["made"] == 0 and not backend.calls
    planned = run_evaluation(_config(dataset_dir, tmp_path / "plan", **fields), backend=backend, plan_only=True)
    assert json.loads((planned.run_dir / "run_config.json").read_text())["prompt_length"] == length


# ------------------------------------------------------------------------------------------------ _give_back


def test_give_back_trims_the_heap_through_glibc(monkeypatch):
    import platform

    if platform.libc_ver()[0] != "glibc":
        pytest.skip("this Python does not run on glibc, the C library with malloc_trim: nothing to hand back")
    monkeypatch.setattr(stream, "_TRIM", None)
    stream._give_back()
    assert callable(stream._TRIM) and stream._TRIM.__name__ == "malloc_trim"
    pads: list[int] = []
    monkeypatch.setattr(stream, "_TRIM", lambda pad: pads.append(pad) or 1)
    stream._give_back()
    assert pads == [0]  # no padding kept at the top of the heap
    monkeypatch.setattr(stream, "_TRIM", False)  # a C library without it: a no-op, tried once
    stream._give_back()
    assert stream._TRIM is False
    import ctypes

    def no_library(*args, **kwargs):
        raise OSError("no C library here")

    monkeypatch.setattr(stream, "_TRIM", None)
    monkeypatch.setattr(ctypes, "CDLL", no_library)
    stream._give_back()  # the library cannot be opened: remembered as missing, nothing called
    assert stream._TRIM is False

"""The evaluation harness end to end: real dataset build, real HTTP servers on 127.0.0.1, kill -9 and resume."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from surveyalign.calls import CallCache
from surveyalign.evaluation import EvalConfig, run_evaluation
from surveyalign.evaluation.config import run_slug

REPO = Path(__file__).resolve().parents[1]


# ------------------------------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def split_test_rows(dataset_dir) -> list[dict]:
    from surveyalign.data import load_surveyreview

    return list(load_surveyreview(dataset_dir, split="test"))


@pytest.fixture(scope="module")
def missing_text_dataset(tmp_path_factory) -> tuple[Path, str]:
    """A dataset built from a copy of the sample release with one article's text removed.

    Returns the folder and the removed article's key; its units keep their rows with ``text == ""``.
    """
    from surveyalign.data import build_dataset, sample_release_dir

    release = tmp_path_factory.mktemp("release") / "rel"
    shutil.copytree(sample_release_dir(), release)
    articles_path = release / "articles" / "articles4test.json"
    articles = json.loads(articles_path.read_text())
    build = tmp_path_factory.mktemp("full")
    build_dataset(sample_release_dir(), build)
    from surveyalign.data import load_surveyreview

    test_papers = sorted(set(load_surveyreview(build, split="test")["paper_id"]))
    victim = next(k for k in sorted(articles) if k in test_papers)
    del articles[victim]
    articles_path.write_text(json.dumps(articles))
    out = tmp_path_factory.mktemp("surveyreview-missing")
    build_dataset(release, out)
    return out, victim


def _config(dataset: Path, out: Path, **fields) -> EvalConfig:
    data = {"name": "t", "dataset": str(dataset), "output_dir": str(out), "progress": False, "bootstrap": 0,
            "backend": {"kind": "constant", "options": {"score": -1}}}
    data.update(fields)
    return EvalConfig.from_dict(data)


def _read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _first_units(rows: list[dict], limit: int) -> list[str]:
    """unit_ids the harness evaluates with ``limit`` per dimension (dataset order, dimension-major)."""
    from surveyalign.constants import DIMENSIONS

    return [r["unit_id"] for d in DIMENSIONS for r in [x for x in rows if x["dimension"] == d][:limit]]


# ------------------------------------------------------------------------------------------------- full runs


def test_full_evaluation_against_served_tiny_model(tiny_model_dir, dataset_dir, split_test_rows, tmp_path, capsys):
    """`surveyalign evaluate` with the shipped tiny-smoke.yaml, through the openai backend, against
    `surveyalign serve`'s app over the tiny model on 127.0.0.1; then an identical re-run makes no call."""
    from surveyalign.backends.server import serve_in_thread
    from surveyalign.cli import main
    from surveyalign.prompts import build_judge_prompt, parse_judgement

    out = tmp_path / "runs"
    with serve_in_thread(model=str(tiny_model_dir), device="cpu") as server:
        argv = ["evaluate", "--config", str(REPO / "configs/eval/tiny-smoke.yaml"), "--dataset", str(dataset_dir),
                "--output-dir", str(out), "--base-url", server.base_url, "--model", server.model, "--limit", "2"]
        code = main(argv)
        captured = capsys.readouterr()
        printed = captured.out
        label = Path(server.model).name if Path(server.model).exists() else server.model
        run_dir = out / run_slug(f"tiny-smoke [model={label}]")  # --model without --name: name and folder say so
        preds = _read_jsonl(run_dir / "predictions.jsonl")
        expected_units = _first_units(split_test_rows, 2)
        assert [p["unit_id"] for p in preds] == expected_units  # every unit exactly once, in order
        # the random tiny model rarely writes a parseable verdict: exit 3 iff some dimension scored no unit
        unscored = {p["dimension"] for p in preds} - {p["dimension"] for p in preds if p["status"] == "scored"}
        assert code == (3 if unscored else 0)
        assert ("FAILED: no unit was scored in" in captured.err) == bool(unscored)
        assert "calls: 8 made (0 with errors), 0 reused" in printed

        by_id = {r["unit_id"]: r for r in split_test_rows}
        for p in preds:
            row = by_id[p["unit_id"]]
            assert (p["reference"], p["reference_rationales"], p["source"]) == (row["score"], row["rationales"],
                                                                                 row["source"])
            (sample,) = p["samples"]
            assert sample["error"] is None and sample["finish_reason"] in ("stop", "length")
            assert sample["mean_logprob"] is None or sample["mean_logprob"] <= 0
            parsed = parse_judgement(sample["text"], protocol="v1.0")
            assert p["prediction"] == parsed.score
            assert p["status"] == ("scored" if parsed.score is not None else "parse_failed")

        metrics = json.loads((run_dir / "metrics.json").read_text())
        counts = Counter(p["status"] for p in preds)
        assert metrics["status_counts"]["scored"] == counts["scored"]
        assert metrics["status_counts"]["parse_failed"] == counts["parse_failed"]
        assert metrics["n"] == 8

        cfg = json.loads((run_dir / "run_config.json").read_text())
        assert len(cfg["data"]["sha256"]) == 64 and cfg["data"]["units"] == 8
        assert cfg["prompts"]["template_hashes"]["criticalness"]["plain"] == \
            build_judge_prompt("criticalness", "x", protocol="v1.0").template_hash
        described = cfg["backend"]["per_dimension"]["readability"]
        assert described["model"] == server.model and described["base_url"] == server.base_url
        assert cfg["generation"]["max_new_tokens"] == 16 and cfg["generation"]["seed"] == 0
        assert cfg["surveyalign_version"] and cfg["counts"]["total"] == 8
        assert cfg["command"][:3] == ["surveyalign", "evaluate", "--config"]
        assert "limit=2" in cfg["command"] and f"backend.options.base_url={server.base_url}" in cfg["command"]
        assert cfg["git"] is None or len(cfg["git"]["commit"]) == 40

        # the same command again, keeping failed answers (retry_errors: false): everything comes from calls.jsonl
        # (by default the unreadable answers of the tiny model would be asked again: issue 21 C)
        result = run_evaluation(EvalConfig.from_yaml(REPO / "configs/eval/tiny-smoke.yaml", {
            "dataset": str(dataset_dir), "output_dir": str(out), "backend.options.base_url": server.base_url,
            "backend.options.model": server.model, "limit": 2, "run_name": run_dir.name, "retry_errors": False}))
    assert cfg["name"] == f"tiny-smoke [model={label}]"
    assert result.calls["made"] == 0 and result.calls["cached"] == 8
    assert result.predictions == preds


def _slow_server_config(tmp_path: Path, dataset: Path, base_url: str, **extra) -> Path:
    cfg = {
        "name": "kill-test", "dataset": str(dataset), "output_dir": str(tmp_path / "runs"), "progress": False,
        "bootstrap": 0, "limit": 5, "samples_per_unit": 2,
        "backend": {"kind": "openai", "options": {"base_url": base_url, "model": "fake", "api_key_env": None,
                                                  "concurrency": 4, "max_retries": 0}},
        "generation": {"temperature": 0.7, "max_new_tokens": 32, "seed": 7},
        **extra,
    }
    path = tmp_path / "kill.yaml"
    path.write_text(json.dumps(cfg))  # JSON is YAML
    return path


def test_kill_9_mid_run_then_resume_makes_exactly_the_missing_calls(dataset_dir, split_test_rows, tmp_path, capsys):
    """kill -9 the CLI while calls are in flight, re-run it: the server sees exactly the missing calls."""
    from surveyalign.cli import main
    from surveyalign.testing import FakeChatServer

    replies = ["Clear enough overall.$$$-1$$$", "The organisation is excellent.$$$+2$$$",
               "<think>\n\n</think>\n\nSome typos remain. $$$1$$$"]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    with FakeChatServer(delay=0.25, replies=replies) as server:
        config_path = _slow_server_config(tmp_path, dataset_dir, server.base_url)
        calls_path = tmp_path / "runs" / "kill-test" / "calls.jsonl"
        cmd = [sys.executable, "-m", "surveyalign", "evaluate", "--config", str(config_path)]
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if calls_path.exists() and calls_path.read_text().count("\n") >= 10:
                break
            assert proc.poll() is None, proc.stdout.read().decode()
            time.sleep(0.02)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        assert proc.returncode == -signal.SIGKILL
        assert server.max_in_flight == 4  # the harness kept `concurrency` calls in flight

        first = CallCache.load(calls_path)
        done = len(first.records)
        assert first.n_torn == 0 and 10 <= done < 40
        requests_first = len(server.requests)
        assert requests_first >= done  # the rest were in flight when the process died
        # a torn line as a kill mid-write would leave it: skipped and counted on resume
        with calls_path.open("a") as fh:
            fh.write('{"key": "0123", "stage": "judge", "te')

        capsys.readouterr()
        # the same command again (in this process, to save an interpreter start-up)
        assert main(cmd[3:]) == 0
        rerun_out = capsys.readouterr().out
        requests_second = len(server.requests) - requests_first
        print(f"kill-9: {done} calls cached, {requests_first} requests before the kill, {requests_second} after")

    total = 20 * 2  # 5 units per dimension x 4 dimensions, K = 2
    assert requests_second == total - done
    assert f"calls: {total - done} made (0 with errors), {done} reused" in rerun_out
    assert "1 torn line(s) skipped" in rerun_out

    second = CallCache.load(calls_path)
    assert second.n_torn == 1 and len(second.records) == total
    new_keys = set(second.records) - set(first.records)
    assert len(new_keys) == total - done  # no cached call was made again
    # sample k of a unit is sent with seed base + k
    seeds = Counter(body["seed"] for body in server.requests)
    assert set(seeds) == {7, 8}

    preds = _read_jsonl(tmp_path / "runs" / "kill-test" / "predictions.jsonl")
    assert [p["unit_id"] for p in preds] == _first_units(split_test_rows, 5)
    assert all(p["status"] == "scored" and len(p["samples"]) == 2 for p in preds)
    for p in preds:  # the harness's vote over the two parsed samples
        s0, s1 = (s["score"] for s in p["samples"])
        if s0 == s1:
            assert p["prediction"] == s0 and p["vote"]["tie_break"] is None
        else:
            assert p["vote"]["tie_break"] in ("logprob", "first_seen") and p["prediction"] in (s0, s1)


# ------------------------------------------------------------------------------------------------- statuses


def test_statuses_parse_failed_api_error_missing_text_and_retry(missing_text_dataset, tmp_path):
    """A scripted judge answering well, badly or with an error per paper; one paper without text."""
    from surveyalign.backends.simple import ScriptedBackend
    from surveyalign.data import load_surveyreview

    dataset, victim = missing_text_dataset
    rows = list(load_surveyreview(dataset, split="test"))
    titles = sorted({r["title"] for r in rows if r["text"]})
    kind_of_title = {t: ("good", "bad", "error")[i % 3] for i, t in enumerate(titles)}

    def reply(messages, settings, index):
        content = messages[0]["content"]
        kind = next(k for t, k in kind_of_title.items() if t in content)
        if kind == "good":
            return "Readable and well argued overall. $$$+1$$$"
        if kind == "bad":
            return "I would give it a zero. $$$0$$$"  # 0 is not a benchmark score: parse failure
        return ConnectionError("upstream reset")

    backend = ScriptedBackend(reply)
    result = run_evaluation(_config(dataset, tmp_path), backend=backend)
    preds = {p["unit_id"]: p for p in result.predictions}
    assert len(preds) == len(rows) == len(result.predictions)

    expected = Counter()
    for row in rows:
        p = preds[row["unit_id"]]
        if not row["text"]:
            assert row["paper_id"] == victim
            want = "missing_text"
            assert p["samples"] == [] and "no call" in p["error"]
        else:
            want = {"good": "scored", "bad": "parse_failed", "error": "api_error"}[kind_of_title[row["title"]]]
        assert p["status"] == want, row["unit_id"]
        expected[want] += 1
        if want == "scored":
            assert p["prediction"] == 1 and p["rationale"] == "Readable and well argued overall." and p["error"] is None
        elif want == "parse_failed":
            assert p["prediction"] is None and p["error"]
        elif want == "api_error":
            assert p["prediction"] is None and "upstream reset" in p["error"]
    assert all(expected[s] > 0 for s in ("scored", "parse_failed", "api_error", "missing_text"))
    n_calls = len(rows) - expected["missing_text"]
    assert len(backend.calls) == n_calls  # missing_text makes no call

    metrics = json.loads((result.run_dir / "metrics.json").read_text())
    for status in ("scored", "parse_failed", "api_error", "missing_text"):
        assert metrics["status_counts"][status] == expected[status] == result.counts[status]
    assert metrics["n"] == len(rows)

    # re-run with a healthy judge: only the calls that ended in an API error or an unreadable answer are made
    # again (issue 21 C: a cached answer that failed to parse is not replayed)
    healthy = ScriptedBackend(lambda m, s, i: "Fine. $$$-1$$$")
    again = run_evaluation(_config(dataset, tmp_path), backend=healthy)
    assert len(healthy.calls) == expected["api_error"] + expected["parse_failed"] == again.calls["made"]
    assert again.counts["api_error"] == 0 and again.counts["parse_failed"] == 0
    assert again.counts["scored"] == expected["scored"] + expected["api_error"] + expected["parse_failed"]


def test_k_samples_vote_with_logprob_tie_break(dataset_dir, tmp_path):
    """K=4 through the harness: 2 x -1 (log-prob -0.9) vs 2 x +2 (log-prob -0.2) -> +2 by the tie-break."""
    from surveyalign.backends import Generation
    from surveyalign.backends.simple import ScriptedBackend

    table = {0: ("Hard to read. $$$-1$$$", -0.9), 1: ("Very clear. $$$2$$$", -0.3),
             2: ("Hard to read. $$$-1$$$", -0.9), 3: ("Crystal clear. $$$2$$$", -0.1)}
    seen_seeds = []

    def reply(messages, settings, index):
        k = settings.seed + index - 100  # sample k of a unit is drawn with seed base + k (one n=K request)
        seen_seeds.append(settings.seed + index)
        text, lp = table[k]
        return Generation(text, "stop", lp)

    # synthesis off: the vote alone (the merge of "Very clear." and "Crystal clear." is tests/test_evaluation_synthesis.py)
    cfg = _config(dataset_dir, tmp_path, samples_per_unit=4, limit=1, dimensions=["readability", "structure"],
                  generation={"temperature": 0.7, "seed": 100}, synthesis=False)
    result = run_evaluation(cfg, backend=ScriptedBackend(reply))
    assert sorted(seen_seeds) == [100, 100, 101, 101, 102, 102, 103, 103]
    for p in result.predictions:
        assert p["prediction"] == 2 and p["vote"] == {"counts": {"-1": 2, "2": 2}, "tie_break": "logprob",
                                                     "chosen_sample": 3}
        assert p["rationale"] == "Crystal clear."  # the best winning sample (log-prob -0.1 > -0.3)
        assert (p["synthesis"]["source"], p["synthesis"]["n_merged"]) == ("best_sample", 2)


def test_rqs_stage_counts_zero_as_a_score(dataset_dir, tmp_path):
    """The consistency judge's 0.0 is a score; an untagged answer is a failure, cached but asked again on a re-run
    (unless retry_errors is off)."""
    from surveyalign.backends.simple import ScriptedBackend

    answers = ["Nothing in common. <consistency>0.0</consistency>", "Same points. <consistency>1.0</consistency>",
               "They agree, I think."]
    judge = ScriptedBackend(answers, cycle=True)
    cfg = _config(dataset_dir, tmp_path, limit=2,
                  rqs={"backend": {"kind": "scripted", "options": {"replies": []}}})
    result = run_evaluation(cfg, rqs_backend=judge)
    values = [p["consistency"] for p in result.predictions]
    # units in order (2 per dimension) get answers 0, 1, 2, 0, 1, 2, 0, 1
    assert values == [0.0, 1.0, None, 0.0, 1.0, None, 0.0, 1.0]
    assert [p.get("consistency_error") is not None for p in result.predictions] == [v is None for v in values]
    assert result.calls["rqs_made"] == 8
    assert result.calls["answers"] == {"reused": 0, "retried": 0, "made": 16}  # 8 judge answers + 8 ratings
    # RQ per dimension: read (0+1)/2, struct 0/1 (one failed), comp 1/1, crit (0+1)/2 -> RQS 0.5
    assert result.metrics["rqs"] == pytest.approx(0.5)
    first_msg = judge.calls[0][0][0]["content"]
    assert result.predictions[0]["reference_rationales"][0] in first_msg

    # a re-run asks the 2 untagged ratings again (issue 21 C: a failed answer is not replayed), in unit order
    again = run_evaluation(cfg, rqs_backend=(fixed := ScriptedBackend(answers, cycle=True)))
    assert again.calls["rqs_made"] == 2 and again.calls["rqs_cached"] == 6 and len(fixed.calls) == 2
    assert [p["consistency"] for p in again.predictions] == [0.0, 1.0, 0.0, 0.0, 1.0, 1.0, 0.0, 1.0]
    assert again.calls["answers"] == {"reused": 8 + 6, "retried": 2, "made": 0}  # 8 judge answers + 6 ratings
    kept = run_evaluation(cfg.model_copy(update={"retry_errors": False}),
                          rqs_backend=(unused := ScriptedBackend(answers, cycle=True)))
    assert kept.calls["rqs_made"] == 0 and kept.calls["rqs_cached"] == 8 and not unused.calls


def test_evaluate_exits_3_when_the_rqs_stage_rates_no_unit(dataset_dir, tmp_path, capsys):
    """Issue 21 B: a stage with no usable result exits 3, the RQS stage included: every rating is untagged here;
    the judge's scores and the metrics are kept, RQS / HAS left out. One usable rating: exit 0."""
    import yaml

    from surveyalign.cli import main

    def run(replies: list[str], name: str) -> int:
        config = tmp_path / f"{name}.yaml"
        config.write_text(yaml.safe_dump({
            "name": name, "dataset": str(dataset_dir), "output_dir": str(tmp_path), "run_name": name,
            "progress": False, "bootstrap": 0, "limit": 2, "backend": {"kind": "constant", "options": {"score": -1}},
            "rqs": {"backend": {"kind": "scripted", "options": {"replies": replies, "cycle": True}}}}))
        return main(["evaluate", "--config", str(config)])

    assert run(["They agree, I think."], "norqs") == 3
    err = capsys.readouterr().err
    assert "FAILED: the RQS stage rated none of its 8 unit(s) (8 parse_failed, 0 api_error)" in err
    metrics = json.loads((tmp_path / "norqs" / "metrics.json").read_text())
    assert metrics["harness"]["status_counts"]["scored"] == 8 and metrics.get("rqs") is None
    assert run(["They agree, I think.", "Same points. <consistency>1.0</consistency>"], "onerqs") == 0


def test_run_config_never_holds_the_api_key(dataset_dir, tmp_path, monkeypatch):
    from surveyalign.testing import FakeChatServer

    secret = "sk-test-DO-NOT-LEAK-0123456789abcdef"
    monkeypatch.setenv("SURVEYALIGN_TEST_KEY", secret)
    with FakeChatServer(replies=["Fine. $$$-1$$$"]) as server:
        cfg = _config(dataset_dir, tmp_path, limit=1, backend={
            "kind": "openai", "options": {"base_url": server.base_url, "model": "fake",
                                          "api_key_env": "SURVEYALIGN_TEST_KEY"}})
        result = run_evaluation(cfg, argv=["surveyalign", "evaluate", "--set", f"backend.options.api_key={secret}"])
    assert result.counts["scored"] == 4
    for path in result.run_dir.iterdir():
        assert secret not in path.read_text(), path.name
    cfg_json = json.loads((result.run_dir / "run_config.json").read_text())
    assert cfg_json["backend"]["per_dimension"]["readability"]["api_key_env"] == "SURVEYALIGN_TEST_KEY"
    assert cfg_json["command"][-1] == "backend.options.api_key=<redacted>"


def test_second_process_on_the_same_run_folder_is_refused(dataset_dir, tmp_path):
    from surveyalign.evaluation.rundir import RunLock

    cfg = _config(dataset_dir, tmp_path, limit=1)
    cfg.run_dir.mkdir(parents=True)
    with RunLock(cfg.run_dir / ".lock"), pytest.raises(RuntimeError, match="in use by another evaluation process"):
        run_evaluation(cfg)
    assert run_evaluation(cfg).counts["scored"] == 4


@pytest.mark.parametrize("knowledge_dimensions", [["comprehensiveness", "criticalness"], []])
def test_knowledge_column_goes_into_the_configured_dimensions(dataset_dir, tmp_path, monkeypatch,
                                                              knowledge_dimensions):
    """A dataset with a `knowledge` column: its text reaches the prompt only for the configured dimensions."""
    from datasets import Dataset

    from surveyalign.backends.simple import ScriptedBackend
    from surveyalign.data import load_surveyreview
    from surveyalign.evaluation import units

    base = load_surveyreview(dataset_dir)
    splits = {name: base[name].add_column("knowledge", [f"KA-NOTE-{i:03d} on related work" if i % 2 == 0 else ""
                                                        for i in range(len(base[name]))])
              for name in ("train", "test")}
    monkeypatch.setattr(units, "load_surveyreview", lambda path, dimension, split: splits[split])
    monkeypatch.setattr(units, "split_files", lambda path, split: None)  # through datasets
    assert isinstance(splits["test"], Dataset)

    backend = ScriptedBackend(lambda m, s, i: "Fine. $$$-1$$$")
    result = run_evaluation(_config(dataset_dir, tmp_path, knowledge_dimensions=knowledge_dimensions), backend=backend)
    knowledge_of = {r["unit_id"]: r["knowledge"] for r in splits["test"]}
    prompts = [messages[0]["content"] for messages, _, _ in backend.calls]
    assert len(prompts) == len(result.predictions) == len(knowledge_of)
    for pred, content in zip(result.predictions, prompts):
        note = knowledge_of[pred["unit_id"]]
        expected = bool(note) and pred["dimension"] in knowledge_dimensions
        assert ("KA-NOTE-" in content) == expected, pred["unit_id"]
        if expected:
            assert note in content
    cfg = json.loads((result.run_dir / "run_config.json").read_text())
    assert cfg["data"]["knowledge_column"] is True
    assert ("knowledge" in cfg["prompts"]["template_hashes"]["criticalness"]) == bool(knowledge_dimensions)


def test_resume_ignores_operational_options_and_no_resume_moves_the_cache_aside(dataset_dir, tmp_path):
    """Concurrency/timeout/retries do not change answers, so a resumed run with other values reuses the cache;
    another temperature does change them; resume=false keeps the old cache under a new name."""
    from surveyalign.testing import FakeChatServer

    with FakeChatServer(replies=["Fine. $$$-1$$$"]) as server:
        def cfg(fields=None, **options):
            options = {"base_url": server.base_url, "model": "fake", "api_key_env": None, **options}
            return _config(dataset_dir, tmp_path, limit=1, backend={"kind": "openai", "options": options},
                           **(fields or {}))

        assert run_evaluation(cfg(concurrency=2)).calls["made"] == 4
        again = run_evaluation(cfg(concurrency=8, timeout=5, max_retries=1))
        assert again.calls == {**again.calls, "made": 0, "cached": 4}
        assert len(server.requests) == 4
        hotter = run_evaluation(cfg({"generation": {"temperature": 0.5}}))
        assert hotter.calls["made"] == 4 and len(server.requests) == 8
        fresh = run_evaluation(cfg({"resume": False}))
        assert fresh.calls["made"] == 4 and len(server.requests) == 12
    aside = sorted(p.name for p in fresh.run_dir.glob("calls.*.jsonl"))
    assert len(aside) == 1 and len(_read_jsonl(fresh.run_dir / aside[0])) == 8
    assert len(_read_jsonl(fresh.run_dir / "calls.jsonl")) == 4


# ------------------------------------------------------------------------------------------------- user findings


@pytest.fixture(scope="module")
def long_survey_dataset(tmp_path_factory, split_test_rows) -> tuple[Path, str]:
    """A dataset whose first readability test unit has a ~170k-character survey (longer than the tiny model's
    32768-token context); returns the folder and that unit's id."""
    from surveyalign.data import build_dataset, sample_release_dir

    first = next(r for r in split_test_rows if r["dimension"] == "readability")
    release = tmp_path_factory.mktemp("release-long") / "rel"
    shutil.copytree(sample_release_dir(), release)
    articles_path = release / "articles" / "articles4test.json"
    articles = json.loads(articles_path.read_text())
    paragraph = " ".join(f"Finding {i}: method M{i % 97} improves recall by {i % 13}.{i % 7} points." for i in range(40))
    articles[first["paper_id"]] = "# A very long survey\n\n" + "\n\n".join(f"## Section {s}\n\n{paragraph}"
                                                                          for s in range(80))
    assert len(articles[first["paper_id"]]) > 160_000
    articles_path.write_text(json.dumps(articles))
    out = tmp_path_factory.mktemp("surveyreview-long")
    build_dataset(release, out)
    return out, first["unit_id"]


def _prompt_tokens(tokenizer, messages) -> int:
    from surveyalign.prompts import render_chat

    return len(tokenizer(render_chat(tokenizer, messages, enable_thinking=False), add_special_tokens=False)["input_ids"])


def test_long_survey_is_shortened_to_max_length_or_reported_too_long(tiny_model_dir, long_survey_dataset, tmp_path,
                                                                     capsys):
    """Finding: a real survey overflowed the context on every call. Without max_length the over-long unit gets a
    distinct status, prompt_too_long, and no call; with max_length its survey body is cut (instruction kept)
    so prompt + max_new_tokens fit, counted per unit and per dimension in predictions, metrics and run_config."""
    from rich.console import Console
    from transformers import AutoTokenizer

    from surveyalign.backends import load_backend
    from surveyalign.prompts import build_judge_prompt

    dataset, unit_id = long_survey_dataset
    tok = AutoTokenizer.from_pretrained(tiny_model_dir)
    backend = load_backend("transformers", model=str(tiny_model_dir), device="cpu", batch_size=4)
    row = next(r for r in _load_rows(dataset) if r["unit_id"] == unit_id)
    full = build_judge_prompt("readability", row["text"], protocol="v1.0", title=row["title"]).messages()
    n_full = _prompt_tokens(tok, full)
    assert n_full + 4 > 32768  # the unshortened prompt does not fit the tiny model's context

    common = {"dimensions": ["readability"], "limit": 1, "generation": {"max_new_tokens": 4},
              "backend": {"kind": "transformers", "options": {"model": str(tiny_model_dir), "device": "cpu"}}}
    console = Console(width=250, record=True)
    overflow = run_evaluation(_config(dataset, tmp_path, run_name="overflow", **common), backend=backend,
                              console=console)
    (pred,) = overflow.predictions
    assert pred["status"] == "prompt_too_long" and pred["samples"] == [] and overflow.calls["made"] == 0
    assert overflow.counts["prompt_too_long"] == 1 and overflow.counts["api_error"] == 0
    assert pred["error"].startswith("prompt too long for the model context: ")
    assert f"{n_full} prompt tokens + max_new_tokens=4 exceed the context of 32768" in pred["error"]
    assert pred["prompt_tokens"] == n_full and pred["shortened_tokens"] == 0
    printed = console.export_text()
    assert "1 unit(s) with a prompt too long to fit (model context or max_length)" in printed
    assert "1 x prompt_too_long: prompt too long for the model context" in printed  # finding 2: top errors listed

    fitted = run_evaluation(_config(dataset, tmp_path, run_name="fitted", max_length=600, **common), backend=backend,
                            console=console)
    (pred,) = fitted.predictions
    assert pred["status"] in ("scored", "parse_failed") and fitted.calls["made"] == 1
    assert 400 < pred["prompt_tokens"] <= 600 - 4
    survey_ids = tok(row["text"], add_special_tokens=False)["input_ids"]
    kept = tok.decode(survey_ids[:len(survey_ids) - pred["shortened_tokens"]])
    cut = build_judge_prompt("readability", kept, protocol="v1.0", title=row["title"]).messages()
    assert _prompt_tokens(tok, cut) == pred["prompt_tokens"]
    assert cut[0]["content"].startswith(full[0]["content"][:200])  # the instruction is never cut
    call = _read_jsonl(fitted.run_dir / "calls.jsonl")[0]
    from surveyalign.calls import stable_hash

    assert call["messages_hash"] == stable_hash(cut)
    expected = {"max_length": 600, "max_length_source": "config", "model_context": 32768, "n_counted": 1,
                "n_shortened": 1, "removed_tokens": pred["shortened_tokens"], "n_too_long": 0,
                "longest_prompt": pred["prompt_tokens"]}
    metrics = json.loads((fitted.run_dir / "metrics.json").read_text())
    per_dim = metrics["harness"]["prompt_length"]["per_dimension"]["readability"]
    assert {k: per_dim[k] for k in expected} == expected
    run_cfg = json.loads((fitted.run_dir / "run_config.json").read_text())
    assert run_cfg["prompt_length"]["per_dimension"]["readability"] == per_dim
    assert run_cfg["config"]["max_length"] == 600
    printed = console.export_text()
    assert "shortened survey body" in printed and "readability 1/1 (max_length=600" in printed


def test_served_model_overflow_is_explained_and_a_tokenizer_lets_api_judges_shorten(tiny_model_dir,
                                                                                   long_survey_dataset, tmp_path):
    """The user's case: a local model behind `surveyalign serve`; the over-long survey is refused before it is sent
    (the server publishes its context) with a hint to name a tokenizer, and with max_length + tokenizer the API
    judge's prompt is cut to fit."""
    from rich.console import Console

    from surveyalign.backends.server import serve_in_thread

    dataset, _ = long_survey_dataset
    console = Console(width=250, record=True)
    with serve_in_thread(model=str(tiny_model_dir), device="cpu") as server:
        def cfg(name, **fields):
            return _config(dataset, tmp_path, run_name=name, dimensions=["readability"], limit=1,
                           generation={"max_new_tokens": 4}, backend={"kind": "openai", "options": {
                               "base_url": server.base_url, "model": server.model, "api_key_env": None,
                               "max_retries": 0}}, **fields)

        failed = run_evaluation(cfg("whole"), console=console)
        (pred,) = failed.predictions
        # issue 21 D: the server publishes max_model_len in /v1/models; the survey is refused before it is sent,
        # with the numbers (a characters / 4 estimate: no tokenizer), never sent whole
        assert pred["status"] == "prompt_too_long" and pred["samples"] == []
        assert "exceed the server's context (max_model_len) of 32768 tokens" in pred["error"]
        assert "name the judge's tokenizer" in pred["error"]
        assert pred["prompt_tokens"] is None  # no tokenizer: nothing counted
        assert failed.calls["made"] == 0
        printed = console.export_text()
        assert "most common errors of the 1 failed unit(s):" in printed

        fitted = run_evaluation(cfg("fitted", max_length=600, tokenizer=str(tiny_model_dir)), console=console)
    (pred,) = fitted.predictions
    assert pred["status"] != "api_error" and 400 < pred["prompt_tokens"] <= 596 and pred["shortened_tokens"] > 0
    entry = fitted.metrics["harness"]["prompt_length"]["per_dimension"]["readability"]
    assert entry["tokenizer"] == str(tiny_model_dir) and entry["n_shortened"] == 1
    assert entry["model_context"] == 32768  # read from the server's /v1/models


def test_max_length_defaults_to_the_adapters_training_record(tiny_model_dir, long_survey_dataset, tmp_path):
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    from surveyalign.models import write_training_record

    dataset, _ = long_survey_dataset
    torch.manual_seed(0)
    adapter = tmp_path / "adapter"
    get_peft_model(AutoModelForCausalLM.from_pretrained(tiny_model_dir),
                   LoraConfig(r=2, target_modules=["q_proj"], task_type="CAUSAL_LM")).save_pretrained(adapter)
    write_training_record(adapter, {"stage": "sft", "dimension": "readability", "protocol": "v1.0",
                                    "enable_thinking": False, "use_knowledge": False, "max_length": 512})
    result = run_evaluation(_config(dataset, tmp_path, dimensions=["readability"], limit=1,
                                    generation={"max_new_tokens": 4},
                                    backend={"kind": "transformers", "options": {
                                        "model": str(tiny_model_dir), "adapter": str(adapter), "device": "cpu"}}))
    (pred,) = result.predictions
    assert pred["status"] != "api_error" and 400 < pred["prompt_tokens"] <= 508 and pred["shortened_tokens"] > 0
    entry = result.metrics["harness"]["prompt_length"]["per_dimension"]["readability"]
    assert entry["max_length"] == 512 and entry["max_length_source"] == f"training record of {adapter}"


def _load_rows(dataset: Path) -> list[dict]:
    from surveyalign.data import load_surveyreview

    return list(load_surveyreview(dataset, split="test"))


def _write_yaml(path: Path, data: dict) -> Path:
    import yaml

    path.write_text(yaml.safe_dump(data))
    return path


def test_all_calls_failing_lists_the_errors_and_exits_3(dataset_dir, tmp_path, capsys):
    """Finding: every call failed (server down / wrong model name) yet evaluate printed no reason and exited 0."""
    import socket

    import yaml

    from surveyalign.cli import main
    from surveyalign.testing import FakeChatServer

    with socket.socket() as sock:  # a port nothing listens on: connection refused
        sock.bind(("127.0.0.1", 0))
        closed = sock.getsockname()[1]
    cfg = _write_yaml(tmp_path / "api.yaml", {
        "name": "api judge", "dataset": str(dataset_dir), "output_dir": str(tmp_path / "runs"), "limit": 2,
        "dimensions": ["readability", "structure"], "progress": False, "bootstrap": 0,
        "backend": {"kind": "openai", "options": {"model": "m", "api_key_env": None, "max_retries": 0,
                                                  "base_url": f"http://127.0.0.1:{closed}/v1"}}})
    # nothing listens: the pre-flight GET /models stops the run at once (exit 2, the URL named), no call is made
    assert main(["evaluate", "--config", str(cfg)]) == 2
    captured = capsys.readouterr()
    assert f"no server answers at http://127.0.0.1:{closed}/v1/models" in captured.err
    assert not (tmp_path / "runs" / "api-judge" / "calls.jsonl").exists() or not (
        tmp_path / "runs" / "api-judge" / "calls.jsonl").read_text().strip()

    with FakeChatServer(always_status=404) as server:  # the server answers, but every call fails (wrong model)
        assert main(["evaluate", "--config", str(cfg), "--base-url", server.base_url, "--run-name", "r404"]) == 3
    captured = capsys.readouterr()
    assert "most common errors of the 4 failed unit(s):" in captured.out
    assert "  4 x api_error: " in captured.out and "404" in captured.out
    last = captured.err.strip().splitlines()[-1]
    assert last.startswith("surveyalign evaluate: FAILED: no unit was scored in readability (2 unit(s) with calls, "
                           "all failed), structure (2 unit(s)")

    # every unit scored: exit 0 and no error list
    ok = _write_yaml(tmp_path / "ok.yaml", {**yaml.safe_load(cfg.read_text()),
                                             "backend": {"kind": "constant", "options": {"score": 1}}})
    assert main(["evaluate", "--config", str(ok), "--run-name", "ok"]) == 0
    captured = capsys.readouterr()
    assert "most common errors" not in captured.out and "FAILED" not in captured.err


def test_unscored_dimensions_ignore_missing_text_and_need_one_scored_unit():
    from surveyalign.evaluation.cli import unscored_dimensions

    preds = [{"dimension": "readability", "status": "api_error"}, {"dimension": "readability", "status": "scored"},
             {"dimension": "structure", "status": "parse_failed"}, {"dimension": "structure", "status": "api_error"},
             {"dimension": "structure", "status": "missing_text"}, {"dimension": "criticalness", "status": "missing_text"}]
    assert unscored_dimensions(preds) == {"structure": 2}


def test_missing_dimension_error_lists_the_dimensions_that_have_units(dataset_dir, tmp_path):
    import yaml

    copy = tmp_path / "ds"
    shutil.copytree(dataset_dir, copy)
    # the test split of config "all" without the structure file (the dataset card's YAML header lists the files)
    _, header, body = (copy / "README.md").read_text().split("---\n", 2)
    card = yaml.safe_load(header)
    (entry,) = [c for c in card["configs"] if c["config_name"] == "all"]
    (test,) = [f for f in entry["data_files"] if f["split"] == "test"]
    test["path"] = [x for x in test["path"] if "/structure/" not in x]
    card.pop("dataset_info", None)  # its recorded split sizes would no longer match
    (copy / "README.md").write_text("---\n" + yaml.safe_dump(card, sort_keys=False) + "---\n" + body)
    with pytest.raises(ValueError, match=r"no units for dimension\(s\) structure; .*--dimensions "
                                         r"readability,comprehensiveness,criticalness"):
        run_evaluation(_config(copy, tmp_path / "runs"))

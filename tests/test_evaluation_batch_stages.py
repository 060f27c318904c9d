"""One batch switch covers every stage of ``surveyalign evaluate``: ``--batch`` (config ``batch: true``) sends the
judge's samples, the synthesis merge calls (App. E) and the RQS ratings through the provider batch API, against the
local batch stand-in (the official openai SDK over HTTP); the judge's own ``backend.options.batch`` carries the RQS
stage with it; a switch no backend can honour is refused in one line."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from surveyalign.cli import main
from surveyalign.evaluation import EvalConfig
from surveyalign.testing import FakeBatchServer


def _reply(body: dict) -> str:
    content = body["messages"][-1]["content"]
    if "<consistency>" in content:  # the RQS prompt asks for the tag
        return "Same points. <consistency>0.8</consistency>"
    if "## Reviewer notes" in content:  # the merge call
        return "Clear, readable and tidy prose. $$$1$$$"
    return "Clear prose. $$$1$$$" if int(body["seed"]) == 0 else "Readable and tidy. $$$1$$$"  # sample 0, sample 1


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _config(dataset: Path, out: Path, url: str, judge_options: dict | None = None) -> Path:
    def backend(model: str, extra: dict | None = None) -> dict:
        return {"kind": "openai", "options": {"model": model, "base_url": url, "api_key_env": None,
                                              "batch_poll_s": 0.01, **(extra or {})}}
    path = out / "batch.yaml"
    path.write_text(yaml.safe_dump({
        "name": "b", "dataset": str(dataset), "output_dir": str(out), "run_name": "b", "progress": False,
        "bootstrap": 0, "limit": 1, "dimensions": ["readability"], "samples_per_unit": 2,
        "backend": backend("gpt-5.2", judge_options), "generation": {"temperature": 0.7, "seed": 0, "max_new_tokens": 16},
        "rqs": {"backend": backend("gpt-5.2-mini")}}))
    return path


def test_batch_flag_sends_judge_synthesis_and_rqs_calls_through_the_batch_api(dataset_dir, tmp_path):
    with FakeBatchServer(reply=_reply) as server:
        assert main(["evaluate", "--config", str(_config(dataset_dir, tmp_path, server.openai_url)), "--batch"]) == 0
        created = list(server.created)
        n_requests = len(server.requests_seen)
    records = _lines(tmp_path / "b" / "calls.jsonl")
    # one unit, K=2: 2 judge calls, 1 merge call, 1 rating; each stage one batch, every answer from a batch
    assert sorted(r["stage"] for r in records) == ["judge", "judge", "rqs", "synthesis"]
    assert len(created) == 3 and n_requests == 4
    by_stage = {r["stage"]: r["batch_id"] for r in records}
    assert set(by_stage.values()) == set(created) and all(r["batch_id"] for r in records)
    [pred] = _lines(tmp_path / "b" / "predictions.jsonl")
    assert pred["rationale"] == "Clear, readable and tidy prose." and pred["synthesis"]["source"] == "synthesized"
    assert pred["consistency"] == 0.8
    run_config = json.loads((tmp_path / "b" / "run_config.json").read_text())
    assert run_config["batch"] == {"switch": True, "judge": True, "synthesis": True, "rqs": True}
    assert run_config["config"]["rqs"]["backend"]["options"]["batch"] is True
    metrics = json.loads((tmp_path / "b" / "metrics.json").read_text())
    assert metrics["harness"]["cost"]["total"]["batch_calls"] == 4


def test_the_judges_batch_option_carries_the_rqs_stage(dataset_dir, tmp_path):
    with FakeBatchServer(reply=_reply) as server:
        config = _config(dataset_dir, tmp_path, server.openai_url, {"batch": True})
        assert main(["evaluate", "--config", str(config)]) == 0
        assert len(server.created) == 3
    assert all(r["batch_id"] for r in _lines(tmp_path / "b" / "calls.jsonl"))
    assert json.loads((tmp_path / "b" / "run_config.json").read_text())["batch"] == {
        "switch": None, "judge": True, "synthesis": True, "rqs": True}


def test_a_batch_switch_no_backend_can_honour_is_refused(dataset_dir, tmp_path, capsys):
    path = tmp_path / "const.yaml"
    path.write_text(yaml.safe_dump({"name": "c", "dataset": str(dataset_dir), "output_dir": str(tmp_path),
                                    "backend": {"kind": "constant", "options": {"score": 1}}}))
    assert main(["evaluate", "--config", str(path), "--batch"]) == 2
    assert (f"{path}: <top level>: batch: true, but no stage's backend has a provider batch API (judge: constant; "
            "the openai kind has one)") in capsys.readouterr().err
    # batch: false turns a stage's own option off too
    cfg = EvalConfig.from_dict({"name": "c", "dataset": "d", "batch": False,
                                "backend": {"kind": "openai", "options": {"model": "m", "batch": True}}})
    assert cfg.backend.options["batch"] is False

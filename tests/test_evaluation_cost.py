"""Tokens and cost of an evaluation run, before and after: every call records its tokens (the tokenizer for the
local engine, the API's usage) and latency; --plan's token estimate on the sample is within 10% of the tokens
counted afterwards; --max-cost stops, keeps what is done and a re-run with a higher cap finishes the rest without
repeating a call; backend.options.batch sends the run through the provider batch API (local stand-in server) and
a run that left its batches running is collected by the next run without resubmission."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from surveyalign.cli import main
from surveyalign.evaluation import EvalConfig, run_evaluation
from surveyalign.testing import FakeBatchServer, FakeChatServer


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _data(dataset: Path, out: Path, backend: dict, name: str, **extra) -> dict:
    return {"name": name, "dataset": str(dataset), "output_dir": str(out), "run_name": name, "progress": False,
            "bootstrap": 0, "limit": 2, "backend": backend, **extra}


def test_greedy_samples_read_the_prompt_once_in_the_plan_and_the_count(tiny_model_dir, dataset_dir, tmp_path):
    # K=2 at temperature 0 on the transformers engine: one row per prompt, so one prompt count per unit in
    # calls.jsonl and in the plan (both counted 2 prompts per unit before)
    data = _data(dataset_dir, tmp_path, {"kind": "transformers", "options": {"model": str(tiny_model_dir),
                                                                             "device": "cpu"}}, "greedy",
                 samples_per_unit=2, generation={"temperature": 0.0, "max_new_tokens": 6, "seed": 1})
    planned = run_evaluation(EvalConfig.from_dict(data), plan_only=True).calls["plan"]
    result = run_evaluation(EvalConfig.from_dict(data))
    records = _lines(result.run_dir / "calls.jsonl")
    assert result.counts["total"] == 8 and len(records) == 16
    # readability and criticalness: 2 units x one run of seeds (1, 2) = 4 prompt counts; structure and
    # comprehensiveness: the 2 units of one survey share one prompt, seeds (1, 1, 2, 2) fuse into runs (1), (1, 2),
    # (2) = 3 prompt counts each; 10 in all (16 before: every greedy copy counted the prompt)
    assert sum(r["prompt_tokens"] > 0 for r in records) == 10
    total = result.metrics["harness"]["cost"]["total"]
    assert total["prompt_tokens"] == sum(r["prompt_tokens"] for r in records)
    assert planned["prompt_tokens"] == total["prompt_tokens"]  # the same prompts, counted by the same tokenizer


def test_plan_estimate_within_10_percent_of_the_counted_tokens(tiny_model_dir, dataset_dir, tmp_path):
    # the whole sample test split (no limit), K=2
    data = _data(dataset_dir, tmp_path, {"kind": "transformers", "options": {"model": str(tiny_model_dir),
                                                                             "device": "cpu"}}, "local",
                 samples_per_unit=2, generation={"temperature": 0.7, "max_new_tokens": 12, "seed": 1}, limit=None)
    planned = run_evaluation(EvalConfig.from_dict(data), plan_only=True).calls["plan"]
    assert not (tmp_path / "local" / "calls.jsonl").exists() or not _lines(tmp_path / "local" / "calls.jsonl")
    assert planned["token_source"] == "tokenizer" and planned["cost_usd"] is None
    result = run_evaluation(EvalConfig.from_dict(data))
    units = result.counts["total"]
    assert units > 8 and planned["calls"] == 2 * units  # more than the 2 units per dimension of the other tests
    records = _lines(result.run_dir / "calls.jsonl")
    assert len(records) == 2 * units
    assert all(r["completion_tokens"] is not None and r["seconds"] > 0 for r in records)
    # the K=2 samples of a prompt share one prefill: its tokens are counted once, the other sample gets 0
    assert units <= sum(r["prompt_tokens"] > 0 for r in records) < 2 * units
    total = result.metrics["harness"]["cost"]["total"]
    counted = total["prompt_tokens"] + total["completion_tokens"]
    assert counted == sum(r["prompt_tokens"] + r["completion_tokens"] for r in records)
    assert abs(planned["total_tokens"] - counted) <= 0.10 * counted, (planned["total_tokens"], counted)
    assert total["cost_usd"] is None and result.metrics["harness"]["cost"]["unpriced_models"] == [str(tiny_model_dir)]
    print(f"plan {planned['total_tokens']} tokens vs counted {counted} over {units} units "
          f"({100 * (planned['total_tokens'] - counted) / counted:+.1f}%)")


def _server_reply(body: dict) -> str:
    return "The survey reads well. $$$1$$$"


def test_max_cost_stops_and_a_higher_cap_finishes(dataset_dir, tmp_path, capsys):
    prices = tmp_path / "prices.yaml"
    prices.write_text("as_of: '2026-12-01'\nmodels:\n  gpt-5.2: {input: 1000.0, output: 1000.0}\n")
    with FakeChatServer(replies=_server_reply, model="gpt-5.2") as server:
        backend = {"kind": "openai", "options": {"model": "gpt-5.2", "base_url": server.base_url,
                                                 "api_key_env": None, "concurrency": 2, "max_retries": 0}}
        config = tmp_path / "cap.yaml"
        config.write_text(yaml.safe_dump(_data(dataset_dir, tmp_path, backend, "cap", prices=str(prices),
                                               generation={"max_new_tokens": 16})))
        assert main(["evaluate", "--config", str(config), "--plan"]) == 0
        out = capsys.readouterr().out
        assert "plan: 8 call(s) to make" in out and "4 characters per token" in out
        per_call = json.loads(json.dumps(
            run_evaluation(EvalConfig.from_yaml(config), plan_only=True).calls["plan"]))["cost_usd"] / 8
        assert not server.requests  # planning sends nothing

        cap = 3.5 * per_call  # room for three of the eight units (K=1)
        assert main(["evaluate", "--config", str(config), "--max-cost", f"{cap:.6f}"]) == 4
        err = capsys.readouterr().err
        assert "stopped at the cost cap" in err and "run again with --max-cost" in err
        first = _lines(tmp_path / "cap" / "calls.jsonl")
        assert 1 <= len(first) < 8 and len(server.requests) == len(first)
        assert not (tmp_path / "cap" / "predictions.jsonl").exists()
        rec = first[0]
        words = sum(len(m["content"].split()) for m in server.requests[0]["messages"])
        assert (rec["prompt_tokens"], rec["completion_tokens"]) == (words, 5)  # the API's usage, recorded

        assert main(["evaluate", "--config", str(config), "--max-cost", "1000000"]) == 0
        out = capsys.readouterr().out
        records = _lines(tmp_path / "cap" / "calls.jsonl")
        assert len(records) == 8 and len(server.requests) == 8  # the rest, and nothing twice
        assert "tokens:" in out and "cost $" in out and "per 1,000 units" in out
    metrics = json.loads((tmp_path / "cap" / "metrics.json").read_text())
    total = metrics["harness"]["cost"]["total"]
    expected = sum(r["prompt_tokens"] + r["completion_tokens"] for r in records) * 1000.0 / 1e6
    assert total["cost_usd"] == pytest.approx(expected, rel=1e-6)
    assert metrics["harness"]["cost"]["by_judge"]["gpt-5.2"]["priced_as"] == "gpt-5.2"
    # report (text and HTML) shows them
    html = tmp_path / "report.html"
    assert main(["report", str(tmp_path / "cap"), "--html", str(html)]) == 0
    out = capsys.readouterr().out
    assert "Tokens and cost" in out and f"{total['cost_usd']:,.4f}" in out
    # a row per dimension (tokens, USD, USD per 1,000 of its units) and per model, each from the counted records
    table = [" ".join(line.replace("│", " ").split()) for line in out.splitlines()]
    by_dim = metrics["harness"]["cost"]["by_dimension"]
    assert len(by_dim) == 4
    for dim, row in by_dim.items():
        mine = [r for r in records if r["namespace"] == dim]
        p_tok, c_tok = sum(r["prompt_tokens"] for r in mine), sum(r["completion_tokens"] for r in mine)
        usd = (p_tok + c_tok) * 1000.0 / 1e6
        assert row["units"] == 2 and row["cost_per_1000_units"] == pytest.approx(usd * 500, rel=1e-6)
        assert (f"{dim} {len(mine)} 0 {p_tok:,} {c_tok:,} {usd:,.4f} {usd * 500:,.2f} – 2026-12-01"
                in table), (dim, [line for line in table if "2026-12-01" in line])
    assert (f"model gpt-5.2 8 0 {total['prompt_tokens']:,} {total['completion_tokens']:,} {total['cost_usd']:,.4f} "
            f"{total['cost_usd'] * 125:,.2f} – 2026-12-01") in table
    page = html.read_text()
    assert "tokens and cost" in page and f"${total['cost_usd']:,.4f}" in page


def test_batch_switch_submits_collects_and_resumes_without_resubmitting(dataset_dir, tmp_path, capsys):
    with FakeBatchServer(reply=_server_reply, complete_after=1e9) as server:
        backend = {"kind": "openai", "options": {"model": "gpt-5.2", "base_url": server.openai_url,
                                                 "api_key_env": None, "batch": True, "batch_wait": False,
                                                 "batch_poll_s": 0.01}}
        config = tmp_path / "batch.yaml"
        config.write_text(yaml.safe_dump(_data(dataset_dir, tmp_path, backend, "batch",
                                               generation={"max_new_tokens": 16})))
        assert main(["evaluate", "--config", str(config)]) == 4  # submitted; the batch is still running
        assert "still running" in capsys.readouterr().err and len(server.created) == 1
        log = _lines(tmp_path / "batch" / "batches.jsonl")
        assert [r["event"] for r in log] == ["intent", "submitted"] and len(log[1]["keys"]) == 8
        server.complete_after = 0.0  # the provider finishes it
        assert main(["evaluate", "--config", str(config)]) == 0
        assert len(server.created) == 1  # collected, not sent again
    records = _lines(tmp_path / "batch" / "calls.jsonl")
    assert len(records) == 8 and {r["batch_id"] for r in records} == set(server.created)
    metrics = json.loads((tmp_path / "batch" / "metrics.json").read_text())
    total = metrics["harness"]["cost"]["total"]
    assert total["batch_calls"] == 8 and metrics["harness"]["status_counts"]["scored"] == 8
    tokens_in, tokens_out = total["prompt_tokens"], total["completion_tokens"]
    assert total["cost_usd"] == pytest.approx((tokens_in * 0.875 + tokens_out * 7.0) / 1e6, abs=1e-6)  # batch


def test_a_running_batch_is_collected_whatever_the_cap(dataset_dir, tmp_path, capsys):
    """Calls already in a submitted batch are paid for: a re-run with a --max-cost below their estimate still
    collects them (they were held back by the cap, so their batch's answers were dropped when it was collected,
    and a later run sent them again)."""
    with FakeBatchServer(reply=_server_reply, complete_after=1e9) as server:
        backend = {"kind": "openai", "options": {"model": "gpt-5.2", "base_url": server.openai_url,
                                                 "api_key_env": None, "batch": True, "batch_wait": False,
                                                 "batch_poll_s": 0.01}}
        config = tmp_path / "batch.yaml"
        config.write_text(yaml.safe_dump(_data(dataset_dir, tmp_path, backend, "capped",
                                               generation={"max_new_tokens": 16})))
        assert main(["evaluate", "--config", str(config)]) == 4  # submitted; the batch is still running
        capsys.readouterr()
        server.complete_after = 0.0
        assert main(["evaluate", "--config", str(config), "--max-cost", "0.000001"]) == 0
        assert len(server.created) == 1  # collected, not held back
        records = _lines(tmp_path / "capped" / "calls.jsonl")
        assert len(records) == 8 and {r["batch_id"] for r in records} == set(server.created)
        assert main(["evaluate", "--config", str(config)]) == 0
        assert len(server.created) == 1 and len(_lines(tmp_path / "capped" / "calls.jsonl")) == 8  # nothing again


def test_plan_counts_the_rqs_stage_within_10_percent(tiny_model_dir, dataset_dir, tmp_path):
    """--plan includes the RQS stage: one rating per unit that will be scored, its prompt holding a rationale not
    written yet (counted as long as a judge answer); planned and counted tokens agree within 10% per stage."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_model_dir)
    reply = "The survey reads well and its sections follow each other in order. $$$1$$$"
    answer_tokens = len(tok(reply, add_special_tokens=False)["input_ids"])
    with FakeChatServer(replies=[reply], model="gpt-5.2", tokenizer=tok) as server:
        backend = {"kind": "openai", "options": {"model": "gpt-5.2", "base_url": server.base_url,
                                                 "api_key_env": None, "max_retries": 0}}
        rqs = {"backend": {"kind": "transformers", "options": {"model": str(tiny_model_dir), "device": "cpu"}},
               "generation": {"max_new_tokens": 8, "temperature": 0.0}}
        data = _data(dataset_dir, tmp_path, backend, "rqsplan", tokenizer=str(tiny_model_dir), rqs=rqs,
                     generation={"max_new_tokens": answer_tokens, "temperature": 0.0})
        planned = run_evaluation(EvalConfig.from_dict(data), plan_only=True).calls["plan"]
        assert not server.requests  # planning sends nothing
        assert planned["calls"] == 16 and planned["by_dimension"]["rqs"]["calls"] == 8
        result = run_evaluation(EvalConfig.from_dict(data))
    assert result.counts["scored"] == 8
    records = _lines(result.run_dir / "calls.jsonl")
    counted = {stage: sum(r["prompt_tokens"] + r["completion_tokens"] for r in records if r["stage"] == stage)
               for stage in ("judge", "rqs")}
    assert sum(r["stage"] == "rqs" for r in records) == 8
    row = planned["by_dimension"]["rqs"]
    rqs_planned = row["prompt_tokens"] + row["completion_tokens"]
    assert abs(rqs_planned - counted["rqs"]) <= 0.10 * counted["rqs"], (rqs_planned, counted["rqs"])
    total = sum(counted.values())
    assert abs(planned["total_tokens"] - total) <= 0.10 * total, (planned["total_tokens"], total)
    print(f"plan rqs {rqs_planned} tokens vs counted {counted['rqs']}; all {planned['total_tokens']} vs {total}")


def test_batch_failed_and_expired_requests_are_counted_and_go_out_again_as_a_new_batch(dataset_dir, tmp_path,
                                                                                        capsys):
    """Through `evaluate` with backend.options.batch: the provider fails one request and lets another expire; the
    run counts both as API errors (never scored, never dropped) and the same command sends just those two again
    as a new batch, which the provider answers."""
    roles: dict[str, str] = {}

    def outcome(body: dict, attempt: int) -> str:
        prompt = json.dumps(body.get("messages"), sort_keys=True)
        role = roles.setdefault(prompt, ["error", "expire"][len(roles)] if len(roles) < 2 else "ok")
        return role if attempt == 0 else "ok"

    with FakeBatchServer(reply=_server_reply, outcome=outcome) as server:
        backend = {"kind": "openai", "options": {"model": "gpt-5.2", "base_url": server.openai_url,
                                                 "api_key_env": None, "batch": True, "batch_poll_s": 0.01}}
        config = tmp_path / "batch.yaml"
        config.write_text(yaml.safe_dump(_data(dataset_dir, tmp_path, backend, "retry",
                                               generation={"max_new_tokens": 16})))
        # the two failures are readability's two units: that dimension has no scored unit, so exit 3 (kept, counted)
        assert main(["evaluate", "--config", str(config)]) == 3
        assert "no unit was scored in readability (2 unit(s) with calls, all failed)" in capsys.readouterr().err
        first = _lines(tmp_path / "retry" / "calls.jsonl")
        assert len(server.created) == 1 and len(first) == 8
        failed = [r for r in first if r["error"]]
        assert len(failed) == 2 and {r["batch_id"] for r in first} == {server.created[0]}
        assert sorted("expired" in r["error"] for r in failed) == [False, True]
        metrics = json.loads((tmp_path / "retry" / "metrics.json").read_text())
        assert metrics["harness"]["status_counts"]["api_error"] == 2
        assert metrics["harness"]["status_counts"]["scored"] == 6

        assert main(["evaluate", "--config", str(config)]) == 0
        assert len(server.created) == 2  # the two failed requests, in a batch of their own
        log = _lines(tmp_path / "retry" / "batches.jsonl")
        submitted = [r for r in log if r["event"] == "submitted"]
        assert [len(r["keys"]) for r in submitted] == [8, 2]
        assert sorted(submitted[1]["keys"]) == sorted(r["key"] for r in failed)
        capsys.readouterr()
        assert main(["evaluate", "--config", str(config), "--plan"]) == 0  # issue 22: every sent attempt counted
        assert ("  spent so far counts every sent attempt: 10 record(s) in calls.jsonl, 2 of them retries of a "
                "failed answer") in capsys.readouterr().out
    records = _lines(tmp_path / "retry" / "calls.jsonl")
    latest = {r["key"]: r for r in records}
    assert len(latest) == 8 and not [r for r in latest.values() if r["error"]]
    assert {latest[r["key"]]["batch_id"] for r in failed} == {server.created[1]}
    metrics = json.loads((tmp_path / "retry" / "metrics.json").read_text())
    # every sent attempt is counted (issue 22): 8 + the 2 failed requests sent again, both failures without usage
    total = metrics["harness"]["cost"]["total"]
    assert metrics["harness"]["status_counts"]["scored"] == 8 and total["batch_calls"] == 10
    assert total["calls"] == 10 and total["retries"] == 2 and total["calls_without_usage"] == 2

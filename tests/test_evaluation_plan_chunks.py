"""``--plan`` a chunk of units at a time gives the whole-split plan (issue 23: at 14.5k units of 100 kB texts the
whole-split plan peaked at 934 MB RSS, the run itself at 367 MB; ``benchmarks/bench_eval_memory.py --plan``).

The plan is made twice over the same run folder (part of it already answered, with prices): once in one piece, once
with ``stream.CHUNK_UNITS = 3``; the plan, its printed lines and the prompt-length summary must be the same, and
the counts must be those of the split (units x K - answered calls).
"""

from __future__ import annotations

import json
from pathlib import Path

from surveyalign.calls import CallPlan
from surveyalign.data import load_surveyreview
from surveyalign.evaluation import EvalConfig, run_evaluation
from surveyalign.testing import FakeChatServer


def _config(dataset: Path, out: Path, base_url: str, prices: Path, **fields) -> EvalConfig:
    data = {"name": "plan", "dataset": str(dataset), "output_dir": str(out), "run_name": "run", "progress": False,
            "bootstrap": 0, "samples_per_unit": 2, "prices": str(prices),
            "generation": {"temperature": 0.7, "max_new_tokens": 40},
            "backend": {"kind": "openai", "options": {"model": "gpt-5.2", "base_url": base_url, "api_key_env": None,
                                                      "concurrency": 2, "max_retries": 0}}}
    data.update(fields)
    return EvalConfig.from_dict(data)


def _plan(config: EvalConfig, capsys) -> tuple[dict, list[str], dict]:
    capsys.readouterr()
    result = run_evaluation(config, plan_only=True)
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith(("plan:", "  "))]
    run_config = json.loads((result.run_dir / "run_config.json").read_text())
    return result.calls["plan"], lines, run_config["prompt_length"]


def test_plan_in_chunks_is_the_whole_split_plan(dataset_dir, tmp_path, monkeypatch, capsys):
    from surveyalign.evaluation import stream

    prices = tmp_path / "prices.yaml"
    prices.write_text("as_of: '2026-12-01'\nmodels:\n  gpt-5.2: {input: 2.0, output: 10.0}\n")
    with FakeChatServer(replies=lambda body: "Clear enough. $$$1$$$", model="gpt-5.2") as server:
        first = run_evaluation(_config(dataset_dir, tmp_path, server.base_url, prices, limit=2))  # answered part
        assert first.calls["made"] > 0
        n_requests = len(server.requests)
        whole, whole_lines, whole_length = _plan(_config(dataset_dir, tmp_path, server.base_url, prices), capsys)
        monkeypatch.setattr(stream, "CHUNK_UNITS", 3)
        sizes: list[int] = []
        prepare = stream.prepare_units

        def counted(config, units, *args):
            sizes.append(len(units))
            return prepare(config, units, *args)

        monkeypatch.setattr(stream, "prepare_units", counted)
        chunked, chunked_lines, chunked_length = _plan(_config(dataset_dir, tmp_path, server.base_url, prices),
                                                       capsys)
        assert len(server.requests) == n_requests  # planning sends nothing
    assert chunked == whole and chunked_lines == whole_lines and chunked_length == whole_length
    n_units = len(list(load_surveyreview(dataset_dir, split="test")))
    assert n_units > 3 * 4
    assert sizes == [3] * (n_units // 3) + ([n_units % 3] if n_units % 3 else [])  # the plan went chunk by chunk
    assert whole["calls"] == 2 * n_units - first.calls["made"]
    assert f"({first.calls['made']} already answered in the run folder)" in whole_lines[0]
    assert "already spent in this run: $" in " ".join(whole_lines)
    assert whole["completion_source"].startswith("mean of the") and whole["cost_usd"] > 0
    assert sum(row["calls"] for row in whole["by_dimension"].values()) == whole["calls"]


def test_merged_plans_add_up_and_keep_none_only_when_both_are_none():
    a = CallPlan(calls=2, prompt_tokens=100, completion_tokens=10, cost_usd=None, unpriced_models=["local"],
                 seconds=None, by_dimension={"readability": {"calls": 2, "prompt_tokens": 100,
                                                             "completion_tokens": 10, "cost_usd": None}},
                 completion_source="mean of the 3 answers so far", prices_as_of="2026-12-01")
    b = CallPlan(calls=3, prompt_tokens=30, completion_tokens=6, cost_usd=0.25, unverified_prices=["gpt-5-mini"],
                 seconds=1.5, token_source="4 characters per token",
                 by_dimension={"structure": {"calls": 1, "prompt_tokens": 10, "completion_tokens": 2, "cost_usd": 0.05},
                               "readability": {"calls": 2, "prompt_tokens": 20, "completion_tokens": 4,
                                               "cost_usd": 0.2}},
                 completion_source="max_new_tokens (upper bound)")
    m = a.merged(b)
    assert (m.calls, m.prompt_tokens, m.completion_tokens, m.cost_usd, m.seconds) == (5, 130, 16, 0.25, 1.5)
    assert m.by_dimension == {"readability": {"calls": 4, "prompt_tokens": 120, "completion_tokens": 14,
                                              "cost_usd": 0.2},
                              "structure": {"calls": 1, "prompt_tokens": 10, "completion_tokens": 2, "cost_usd": 0.05}}
    assert list(m.by_dimension) == ["readability", "structure"]  # first-seen order
    assert m.unpriced_models == ["local"] and m.unverified_prices == ["gpt-5-mini"]
    assert m.token_source == "4 characters per token" and m.prices_as_of == "2026-12-01"
    assert m.completion_source == "mean of the 3 answers so far"  # the side with calls, the first when both
    assert a.by_dimension["readability"]["calls"] == 2 and a.calls == 2  # inputs unchanged
    empty = CallPlan(completion_source="max_new_tokens (upper bound)")
    assert empty.merged(a).completion_source == "mean of the 3 answers so far"
    assert empty.merged(CallPlan()).cost_usd is None and empty.merged(CallPlan()).seconds is None

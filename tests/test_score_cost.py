"""`surveyalign score --plan / --max-cost` and the tokens and cost of every dimension in its reports (issue 22):
the plan sends nothing and its token estimate is within 10% of the tokens counted afterwards (tiny model + four
tiny adapters, the local engine's tokenizer); the cap stops between dimensions, keeps the finished surveys'
reports, exits 4 with what is left, and a re-run with a higher cap makes only the rest (OpenAI stand-in)."""

from __future__ import annotations

import json
import re

import pytest
from survey_fixtures import MARKDOWN, write_markdown_survey

from surveyalign.cli import main
from surveyalign.testing import FakeChatServer


def _records(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _planned_total(printed: str) -> int:
    line = next(line for line in printed.splitlines() if line.strip().startswith("tokens:"))
    return int(re.search(r"= ([\d,]+)$", line.strip()).group(1).replace(",", ""))


def test_score_plan_within_10_percent_of_counted_tokens(tiny_adapters, tmp_path, capsys):
    survey = write_markdown_survey(tmp_path / "md")
    out = tmp_path / "reviews"
    args = ["score", str(survey), "--judge", str(tiny_adapters["readability"].parent), "--out", str(out),
            "--samples", "3", "--seed", "7", "--max-new-tokens", "24", "--allow-no-knowledge", "--no-progress"]
    assert main([*args, "--plan"]) == 0
    printed = capsys.readouterr().out
    assert "plan: 12 call(s) to make (0 already answered" in printed and "(tokenizer)" in printed
    assert "no price (local engine" in printed
    assert not (out / "calls.jsonl").exists() or not _records(out / "calls.jsonl")  # nothing sent
    planned = _planned_total(printed)

    assert main(args) == 0
    records = _records(out / "calls.jsonl")
    assert len(records) == 12 and all(r["completion_tokens"] is not None for r in records)
    counted = sum(r["prompt_tokens"] + r["completion_tokens"] for r in records)
    assert abs(planned - counted) <= 0.10 * counted, (planned, counted)
    with capsys.disabled():
        print(f"score plan {planned} tokens vs counted {counted} ({100 * (planned - counted) / counted:+.1f}%)")

    review = json.loads((out / "oracles.json").read_text(encoding="utf-8"))
    md = (out / "oracles.md").read_text(encoding="utf-8")
    html = (out / "oracles.html").read_text(encoding="utf-8")
    assert "| Tokens and cost |" in md
    for dim, record in review["dimensions"].items():
        mine = [r for r in records if r["namespace"] == dim]
        cost = record["cost"]
        assert cost["calls"] == 3 and cost["cost_usd"] is None and cost["priced_as"] is None
        assert cost["prompt_tokens"] == sum(r["prompt_tokens"] for r in mine) > 0
        assert cost["completion_tokens"] == sum(r["completion_tokens"] for r in mine)
        text = (f"{cost['prompt_tokens'] + cost['completion_tokens']:,} tokens ({cost['prompt_tokens']:,} prompt + "
                f"{cost['completion_tokens']:,} completion, 3 calls), no price (local engine: GPU time)")
        assert text in md and text in html
    assert main([*args, "--plan"]) == 0  # everything answered: nothing left to plan
    assert "plan: 0 call(s) to make (12 already answered" in capsys.readouterr().out


def _surveys(tmp_path):
    a = tmp_path / "a.md"
    a.write_text(MARKDOWN, encoding="utf-8")
    b = tmp_path / "b.md"
    b.write_text(MARKDOWN.replace("oracle", "checker"), encoding="utf-8")
    return [a, b]


def test_score_max_cost_stops_between_dimensions_and_a_higher_cap_finishes(tmp_path, capsys):
    prices = tmp_path / "prices.yaml"
    prices.write_text("as_of: '2026-12-03'\nmodels:\n  gpt-5.2: {input: 1000.0, output: 1000.0}\n")
    surveys = _surveys(tmp_path)
    out = tmp_path / "reviews"
    with FakeChatServer(replies=["The survey reads well. $$$1$$$"], model="gpt-5.2") as server:
        judge = tmp_path / "judge.yaml"
        judge.write_text(f"name: api\nbackend:\n  kind: openai\n  options: {{model: gpt-5.2, base_url: "
                         f"'{server.base_url}', api_key_env: null, max_retries: 0}}\n", encoding="utf-8")
        args = ["score", *map(str, surveys), "--judge", str(judge), "--out", str(out), "--samples", "2",
                "--max-new-tokens", "16", "--allow-no-knowledge", "--no-progress", "--prices", str(prices)]
        assert main([*args, "--plan"]) == 0
        printed = capsys.readouterr().out
        assert "plan: 16 call(s) to make" in printed and "4 characters per token" in printed
        planned_usd = float(re.search(r"estimated cost: \$([\d.,]+)", printed).group(1))
        assert not server.requests  # planning sends nothing

        assert main([*args, "--max-cost", f"{0.6 * planned_usd:.6f}"]) == 4
        err = capsys.readouterr().err
        assert "stopped at the cost cap" in err and "run again with --max-cost" in err
        assert "(1 of 2 survey(s) reported)" in err
        first = _records(out / "calls.jsonl")
        assert 8 <= len(first) < 16 and len(server.requests) == len(first)  # survey a whole, b partly
        assert (out / "a.json").exists() and not (out / "b.json").exists()
        spent = sum(r["prompt_tokens"] + r["completion_tokens"] for r in first) * 1000.0 / 1e6
        assert spent <= 0.6 * planned_usd

        assert main([*args, "--max-cost", "1000"]) == 0
        err = capsys.readouterr().err
        records = _records(out / "calls.jsonl")
        assert len(records) == 16 and len(server.requests) == 16  # the rest, nothing twice
    total = sum(r["prompt_tokens"] + r["completion_tokens"] for r in records) * 1000.0 / 1e6
    assert f"cost ${total:,.4f}" in err and "per 1,000 units" in err
    for stem in ("a", "b"):
        review = json.loads((out / f"{stem}.json").read_text(encoding="utf-8"))
        md = (out / f"{stem}.md").read_text(encoding="utf-8")
        for dim, record in review["dimensions"].items():
            mine = [r for r in records if r["namespace"] == dim and r["unit_id"] == record["prompt"]["messages_hash"]]
            tokens = sum(r["prompt_tokens"] + r["completion_tokens"] for r in mine)
            assert len(mine) == 2 and record["cost"]["calls"] == 2 and record["cost"]["priced_as"] == "gpt-5.2"
            assert record["cost"]["cost_usd"] == pytest.approx(tokens * 1000.0 / 1e6)
            assert f"${tokens * 1000.0 / 1e6:,.4f}" in md


def test_score_max_cost_refuses_an_unpriced_judge(tiny_model_dir, tmp_path, capsys):
    survey = write_markdown_survey(tmp_path / "md")
    judge = tmp_path / "judge.yaml"
    judge.write_text(f"name: tiny\nbackend:\n  kind: transformers\n  options: {{model: '{tiny_model_dir}', "
                     "device: cpu}\n", encoding="utf-8")
    code = main(["score", str(survey), "--judge", str(judge), "--out", str(tmp_path / "o"), "--samples", "1",
                 "--max-new-tokens", "4", "--allow-no-knowledge", "--no-progress", "--max-cost", "1"])
    assert code == 2
    assert "--max-cost: no price for" in capsys.readouterr().err

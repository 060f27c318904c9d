"""`surveyalign score --plan / --max-cost` and the tokens and cost of every dimension in its reports (issue 22):
the plan sends nothing and its token estimate is within 10% of the tokens counted afterwards (tiny model + four
tiny adapters, the local engine's tokenizer); the cap stops between dimensions, keeps the finished surveys'
reports, exits 4 with what is left, and a re-run with a higher cap makes only the rest (OpenAI stand-in)."""

from __future__ import annotations

import json
import re

import pytest
from survey_fixtures import MARKDOWN, write_markdown_survey

from surveyalign.calls.cost import load_prices
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


def _ka_graph(tmp_path):
    """The markdown survey's two references and four more papers (R+), each with an abstract: Crit-KA keeps the
    four that reach tau_c (75th percentile of R's citations) or tau_y (of R's years)."""
    from surveyalign.documents import Paper
    from surveyalign.knowledge import CitationGraph

    def abstract(topic):
        return f"We study {topic} for programs whose expected outputs are hard to state, and report what we found."

    papers = [Paper(id="W1", title="Oracles in practice", year=2001, authors=["A. Writer"], citation_count=50,
                    abstract=abstract("test oracles")),
              Paper(id="W2", title="Metamorphic testing revisited", year=2010, authors=["B. Author"],
                    citation_count=9, abstract=abstract("metamorphic relations")),
              Paper(id="W3", title="Property-based oracles", year=2004, citation_count=30, reference_ids=["W1", "W2"],
                    abstract=abstract("property checks")),
              Paper(id="W4", title="Mutation analysis of oracles", year=2006, citation_count=12,
                    reference_ids=["W1"], abstract=abstract("mutants")),
              Paper(id="W5", title="Oracles for machine learning", year=2012, citation_count=60,
                    reference_ids=["W2"], abstract=abstract("learned models")),
              Paper(id="W6", title="Differential testing at scale", year=2015, citation_count=5,
                    reference_ids=["W1"], abstract=abstract("differential runs"))]
    return CitationGraph(papers).save(tmp_path / "graph.jsonl")


def _ka_records(records):
    return [r for r in records if r["namespace"] == "ka.summary"]


def test_score_plans_and_caps_the_crit_ka_summariser(tiny_model_dir, tmp_path, capsys):
    """The Crit-KA summariser's calls are in `--plan` (real prompts, completions bounded by each stage's
    max_new_tokens, priced by its model) within 10% of the tokens counted afterwards (a scripted summariser that
    writes up to its cap, tokens counted with the tiny tokenizer as a vLLM server does); `--max-cost` stops before
    the summaries when they would pass it, counts them once made, and a higher cap finishes."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_model_dir)

    def summarise(body):  # answers with as many tokens as the request allows
        n = body["max_tokens"]
        return tok.decode(tok(" ".join(["trend"] * n), add_special_tokens=False)["input_ids"][:n]).strip()

    prices = tmp_path / "prices.yaml"
    prices.write_text("as_of: '2026-12-03'\nmodels:\n  gpt-5.2: {input: 1000.0, output: 1000.0}\n"
                      "  gpt-5-mini: {input: 1000.0, output: 1000.0}\n")
    survey = write_markdown_survey(tmp_path / "md")
    out = tmp_path / "reviews"
    with FakeChatServer(replies=["Critical enough. $$$1$$$"], model="gpt-5.2") as judge_server, \
            FakeChatServer(replies=summarise, model="gpt-5-mini", tokenizer=tok) as ka_server:
        judge = tmp_path / "judge.yaml"
        judge.write_text(f"name: api\nbackend:\n  kind: openai\n  options: {{model: gpt-5.2, base_url: "
                         f"'{judge_server.base_url}', api_key_env: null, max_retries: 0}}\n"
                         "  per_dimension: {criticalness: {model: gpt-5.2}}\n", encoding="utf-8")
        ka = tmp_path / "ka.yaml"
        ka.write_text(f"dimensions: [criticalness]\nexclude_future: false\nblock_tokens: 48\nsummary_tokens: 24\n"
                      f"length: 40\ntokenizer: '{tiny_model_dir}'\nsummariser:\n  backend:\n    kind: openai\n"
                      f"    options: {{model: gpt-5-mini, base_url: '{ka_server.base_url}', api_key_env: null, "
                      "max_retries: 0}\n", encoding="utf-8")
        args = ["score", str(survey), "--judge", str(judge), "--out", str(out), "--dimensions", "criticalness",
                "--samples", "2", "--max-new-tokens", "16", "--graph", str(_ka_graph(tmp_path)), "--ka-config",
                str(ka), "--no-progress", "--prices", str(prices)]
        assert main([*args, "--plan"]) == 0
        printed = capsys.readouterr().out
        assert "not in this plan" not in printed and "plan: 2 call(s) to make" in printed
        line = next(x for x in printed.splitlines() if "Crit-KA summariser:" in x)
        found = re.search(r"(\d+) call\(s\) to make \(0 already answered\), tokens: ([\d,]+) prompt \(tokenizer\) "
                          r"\+ ([\d,]+) completion \(max_new_tokens \(upper bound\)\) = ([\d,]+), \$([\d.,]+)", line)
        assert found, line
        n_ka, p_ka, c_ka, planned, ka_usd = (float(g.replace(",", "")) for g in found.groups())
        judge_usd = float(re.search(r"estimated cost: \$([\d.,]+)", printed).group(1))
        assert n_ka >= 3 and c_ka == (n_ka - 1) * 24 + 40  # block summaries at summary_tokens, one compression at L
        assert ka_usd == pytest.approx(planned * 1000.0 / 1e6, abs=1e-4)
        assert "stand-in Crit-KA text of 40 tokens" in printed and "in all (judge" in printed
        assert not judge_server.requests and not ka_server.requests  # planning sends nothing

        # a cap below the summaries' projection: nothing is sent, not even a summary
        assert main([*args, "--max-cost", f"{0.5 * ka_usd:.6f}"]) == 4
        err = capsys.readouterr().err
        assert "stopped at the cost cap" in err and "(0 of 1 survey(s) reported)" in err
        assert not ka_server.requests and not judge_server.requests

        # room for the summaries, not for the judge: the summaries are made and counted, the judge is held back
        assert main([*args, "--max-cost", f"{ka_usd + 0.5 * judge_usd:.6f}"]) == 4
        err = " ".join(capsys.readouterr().err.split())
        made = _ka_records(_records(out / "calls.jsonl"))
        assert len(made) == n_ka == len(ka_server.requests) and not judge_server.requests
        spent = sum(r["prompt_tokens"] + r["completion_tokens"] for r in made) * 1000.0 / 1e6
        assert f"${spent:,.4f} spent" in err

        assert main([*args, "--max-cost", "1000"]) == 0
        records = _records(out / "calls.jsonl")
        assert len(ka_server.requests) == n_ka and len(judge_server.requests) == 2  # nothing twice
    # the batch's total counts the summariser's calls (made by the run before, read from the cache): a row of
    # their own and their model among the judges
    err = " ".join(capsys.readouterr().err.split())
    made = _ka_records(records)
    judged = [r for r in records if r["namespace"] == "criticalness"]
    ka_tokens = sum(r["prompt_tokens"] + r["completion_tokens"] for r in made)
    judge_tokens = sum(r["prompt_tokens"] + r["completion_tokens"] for r in judged)
    assert (f"per dimension: criticalness {judge_tokens:,} tokens ${judge_tokens * 1e-3:,.4f}; Crit-KA summariser "
            f"{ka_tokens:,} tokens ${ka_tokens * 1e-3:,.4f}") in err
    assert f"per judge: gpt-5.2 2 call(s) ${judge_tokens * 1e-3:,.4f}; gpt-5-mini {len(made)} call(s)" in err
    assert f"over {2 + len(made)} call(s)" in err and f"cost ${(ka_tokens + judge_tokens) * 1e-3:,.4f}" in err
    counted = sum(r["prompt_tokens"] + r["completion_tokens"] for r in made)
    assert abs(planned - counted) <= 0.10 * counted, (planned, counted)
    assert abs(p_ka - sum(r["prompt_tokens"] for r in made)) <= 0.10 * p_ka
    review = json.loads((out / "oracles.json").read_text(encoding="utf-8"))
    crit = review["dimensions"]["criticalness"]
    assert crit["status"] == "scored" and crit["knowledge"]["used"] and crit["prompt"]["has_knowledge"]
    with capsys.disabled():
        print(f"Crit-KA summariser plan {planned:.0f} tokens vs counted {counted} "
              f"({100 * (planned - counted) / counted:+.1f}%), {len(made)} calls")
    assert main([*args, "--plan"]) == 0  # everything answered: nothing left to plan
    assert f"Crit-KA summariser: 0 call(s) to make ({len(made)} already answered)" in capsys.readouterr().out

    # a summariser without a price (a local server): tokens and GPU time only; a cap is refused as for an unpriced
    # judge (its calls would count 0 USD and could pass the cap unseen), naming the model and the price files
    ka.write_text(ka.read_text(encoding="utf-8").replace("model: gpt-5-mini", "model: tiny-local"), encoding="utf-8")
    local = [*args[:5], str(tmp_path / "local"), *args[6:]]
    assert main([*local, "--plan"]) == 0
    printed = " ".join(capsys.readouterr().out.split())
    assert f"Crit-KA summariser: {n_ka:.0f} call(s) to make (0 already answered)" in printed
    assert f"= {planned:,.0f}, no price (tiny-local: GPU time only)" in printed
    files = ", ".join(load_prices(override=prices).files)
    assert (f"the Crit-KA summariser (tiny-local) has no price (GPU time only): --max-cost refuses to run until it "
            f"has one in {files} (add it with --prices FILE)") in printed
    with FakeChatServer(replies=summarise, model="tiny-local", tokenizer=tok) as ka_server, \
            FakeChatServer(replies=["Critical enough. $$$1$$$"], model="gpt-5.2") as judge_server:
        ka.write_text(re.sub(r"base_url: '[^']+'", f"base_url: '{ka_server.base_url}'", ka.read_text("utf-8")),
                      encoding="utf-8")
        judge.write_text(re.sub(r"base_url: '[^']+'", f"base_url: '{judge_server.base_url}'",
                                judge.read_text("utf-8")), encoding="utf-8")
        assert main([*local, "--max-cost", "1000"]) == 2
        err = " ".join(capsys.readouterr().err.split())
        assert f"--max-cost: no price for tiny-local in {files}; add it with --prices FILE" in err
        assert not ka_server.requests and not judge_server.requests  # refused before anything is sent

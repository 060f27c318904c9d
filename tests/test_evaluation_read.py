"""Issue 21 B and D in evaluation outputs: every predictions.jsonl row says how much of its survey the judge read
(the read block ``score`` reports carry, from the same :meth:`PreparedPrompt.reading`), metrics.json / the console
report / the leaderboard / the HTML page summarise it (units cut, median and least fraction read), and every report
header names the judge that actually ran (served model, base model + adapter paths), not a generic label."""

from __future__ import annotations

import json
from pathlib import Path

from surveyalign.cli import main
from surveyalign.documents.reading import reading_summary_text, summarize_reading
from surveyalign.evaluation import EvalConfig, run_evaluation
from surveyalign.scoring.judge_info import judge_ran
from surveyalign.testing import FakeChatServer


def test_summarize_reading_counts_cuts_and_the_median_fraction_read():
    blocks = [
        {"chars_read": 100, "chars_total": 400, "tokens_read": 30, "tokens_total": 120, "cut": True,
         "cut_at_char": 100, "counted": "tokens"},
        {"chars_read": 200, "chars_total": 200, "tokens_read": 60, "tokens_total": 60, "cut": False,
         "cut_at_char": None, "counted": "tokens"},
        {"chars_read": 300, "chars_total": 600, "tokens_read": None, "tokens_total": None, "cut": True,
         "cut_at_char": 300, "counted": "characters"},
        None,  # a unit never sent (missing_text)
    ]
    s = summarize_reading(blocks)
    # fractions read: 0.25, 1.0, 0.5 -> median 0.5, least 0.25; tokens not summed (one unit was not counted)
    assert s == {"n_units": 4, "n_sent": 3, "n_cut": 2, "n_unchecked": 0, "median_fraction_read": 0.5,
                 "min_fraction_read": 0.25, "chars_read": 600, "chars_total": 1200, "tokens_read": None,
                 "tokens_total": None}
    assert reading_summary_text(s) == "2/3 cut; median 50% read (least 25%)"
    assert summarize_reading(blocks[:2])["tokens_read"] == 90 and summarize_reading(blocks[:2])["tokens_total"] == 180
    assert reading_summary_text(summarize_reading([blocks[1]])) == "0/1 cut; whole surveys read"
    assert reading_summary_text(summarize_reading([None])) == "nothing sent"
    assert reading_summary_text(None) == "not recorded"


def test_judge_line_names_served_models_and_adapter_paths():
    served = {"name": "j", "backend": {"kind": "openai", "per_dimension": {
        "comprehensiveness": {"backend": "openai", "model": "comp-lora", "base_url": "http://h:8000/v1"},
        "readability": {"backend": "openai", "model": "read-lora", "base_url": "http://h:8000/v1"}}}}
    assert judge_ran(served)["line"] == ("Judge j (openai at http://h:8000/v1; served models: "
                                         "comprehensiveness=comp-lora, readability=read-lora)")
    local = {"name": "k", "backend": {"kind": "transformers", "per_dimension": {
        "comprehensiveness": {"backend": "transformers", "model": "/m/qwen", "adapter": "/a/comp",
                              "adapter_name": None},
        "readability": {"backend": "transformers", "model": "/m/qwen", "adapter": "/a/read"}}}}
    ran = judge_ran(local)
    assert ran["line"] == "Judge k (transformers; base /m/qwen; adapters: comprehensiveness=/a/comp, readability=/a/read)"
    assert ran["per_dimension"]["readability"]["answered_by"] == "/m/qwen + adapter /a/read"
    bare = {"name": "b", "backend": {"kind": "transformers", "per_dimension": {
        "readability": {"backend": "transformers", "model": "/m/qwen", "adapter": None}}}}
    assert judge_ran(bare)["line"] == ("Judge b (transformers; base /m/qwen; no adapter: the base model answered "
                                       "every dimension)")


def _rows(dataset: Path, dimension: str) -> list[dict]:
    from surveyalign.data import load_surveyreview

    return [r for r in load_surveyreview(dataset, split="test") if r["dimension"] == dimension]


def test_evaluation_rows_metrics_leaderboard_and_html_say_what_was_read_and_who_judged(
        tiny_model_dir, dataset_dir, tmp_path, capsys):
    from rich.console import Console
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_model_dir)
    with FakeChatServer(replies=["Clear enough. $$$1$$$"], model="read-lora") as server:
        config = EvalConfig.from_dict({
            "name": "served", "dataset": str(dataset_dir), "output_dir": str(tmp_path), "progress": False,
            "bootstrap": 0, "dimensions": ["readability"], "limit": 2, "max_length": 700,
            "tokenizer": str(tiny_model_dir), "generation": {"max_new_tokens": 8},
            "backend": {"kind": "openai", "options": {"model": "read-lora", "base_url": server.base_url,
                                                      "api_key_env": None}}})
        console = Console(width=250, record=True)
        result = run_evaluation(config, console=console)
    rows = {r["unit_id"]: r for r in _rows(dataset_dir, "readability")}
    preds = [json.loads(line) for line in (result.run_dir / "predictions.jsonl").read_text().splitlines()]
    assert len(preds) == 2
    fractions = []
    for p in preds:
        text = rows[p["unit_id"]]["text"]
        read = p["read"]
        total_tokens = len(tok(text, add_special_tokens=False)["input_ids"])
        assert read["chars_total"] == len(text) and read["counted"] == "tokens" and read["max_length"] == 700
        assert read["tokens_total"] == total_tokens and read["tokens_read"] == total_tokens - p["shortened_tokens"]
        assert read["cut"] is True and read["cut_at_char"] == read["chars_read"] < len(text)
        assert text[:read["chars_read"]] and p["shortened_tokens"] > 0
        fractions.append(read["chars_read"] / len(text))
    metrics = json.loads((result.run_dir / "metrics.json").read_text())
    reading = metrics["reading"]["per_dimension"]["readability"]
    assert reading["n_units"] == 2 and reading["n_sent"] == 2 and reading["n_cut"] == 2
    assert abs(reading["median_fraction_read"] - sum(fractions) / 2) < 1e-12
    assert reading["min_fraction_read"] == min(fractions)
    assert reading["chars_read"] == sum(p["read"]["chars_read"] for p in preds)
    line = f"Judge served (openai at {server.base_url}; served model read-lora)"
    assert metrics["judge"]["line"] == line
    printed = console.export_text()
    cell = f"2/2 cut; median {sum(fractions) / 2:.0%} read (least {min(fractions):.0%})"
    assert line in printed and f"survey read: readability {cell}" in printed

    html = tmp_path / "report.html"
    assert main(["report", str(result.run_dir), "--bootstrap", "0", "--html", str(html), "--width", "250"]) == 0
    out = capsys.readouterr().out
    assert f"served: {line}" in out and cell in out and "How much of each survey the judge read" in out
    page = html.read_text()
    assert f'<p class="note judge-line" data-judge="served">served: {line}</p>' in page
    assert f'<td data-key="read">{cell}</td>' in page and 'id="reading"' in page
    first = preds[0]["read"]
    assert (f"{first['chars_read']:,} of {first['chars_total']:,} characters ({first['tokens_read']:,} of "
            f"{first['tokens_total']:,} tokens); cut at character {first['chars_read']:,}") in page

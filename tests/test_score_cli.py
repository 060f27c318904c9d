"""`surveyalign score` end to end: markdown, LaTeX and PDF fixtures, tiny model + four tiny adapters, through the
transformers backend and through `surveyalign serve` with four adapters; real inputs when the ``shared_real``
fixture has them."""

from __future__ import annotations

import json
import re

import pytest
from survey_fixtures import (
    EXPECTED,
    write_latex_survey,
    write_markdown_survey,
    write_pdf_survey,
)
from tiny_adapters import ANSWERS

from surveyalign.cli import main
from surveyalign.constants import STATUSES
from surveyalign.inference.judge import KNOWLEDGE_REFUSED


@pytest.fixture
def surveys(tmp_path):
    return [write_markdown_survey(tmp_path / "md"), write_latex_survey(tmp_path / "tex"),
            write_pdf_survey(tmp_path / "pdf")]


def _check_reviews(out, surveys):
    for path, kind in zip(surveys, ("markdown", "latex", "pdf")):
        review = json.loads((out / f"{path.stem}.json").read_text(encoding="utf-8"))
        assert review["survey"]["format"] == kind and review["survey"]["title"] == EXPECTED[kind]["title"]
        assert list(review["dimensions"]) == list(ANSWERS)
        for dim, (rationale, score) in ANSWERS.items():
            record = review["dimensions"][dim]
            assert (record["status"], record["score"]) == ("scored", score), (path, dim, record["reason"])
            assert record["n_samples"] == 3 and [s["seed"] for s in record["samples"]] == [7, 8, 9]
            assert record["votes"][str(score)] == record["n_voted"] >= 2
            assert rationale.split()[0] in record["rationale"]
        html = (out / f"{path.stem}.html").read_text(encoding="utf-8")
        assert html.count("<svg") == 4 and "http" not in re.sub(r'xmlns="http://www.w3.org/2000/svg"', "", html)
        assert (out / f"{path.stem}.md").read_text(encoding="utf-8").startswith(f"# Review of {EXPECTED[kind]['title']}")
    comparison = (out / "comparison.md").read_text(encoding="utf-8")
    assert comparison.count("| +1 (") == 3 and comparison.count("| -2 (") == 3
    assert (out / "comparison.html").exists()


def test_score_three_formats_with_four_adapters_and_resume(tiny_adapters, surveys, tmp_path, capsys):
    out = tmp_path / "reviews"
    args = ["score", *map(str, surveys), "--judge", str(tiny_adapters["readability"].parent), "--out", str(out),
            "--samples", "3", "--seed", "7", "--max-new-tokens", "24", "--allow-no-knowledge", "--no-progress"]
    assert main(args) == 0
    _check_reviews(out, surveys)
    printed = capsys.readouterr().out
    assert "Tiny Survey of Test Oracles" in printed and "+1" in printed
    calls = (out / "calls.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(calls) >= 3 * 4 * 3
    assert main(args) == 0  # resumed: every answer comes from calls.jsonl
    assert (out / "calls.jsonl").read_text(encoding="utf-8").splitlines() == calls


def test_score_refuses_ka_dimensions_without_knowledge(tiny_adapters, surveys, tmp_path):
    out = tmp_path / "reviews"
    code = main(["score", str(surveys[0]), "--judge", str(tiny_adapters["readability"].parent), "--out", str(out),
                 "--samples", "1", "--max-new-tokens", "24", "--no-progress"])
    assert code == 3
    review = json.loads((out / "oracles.json").read_text(encoding="utf-8"))
    assert [review["dimensions"][d]["status"] for d in ANSWERS] == ["scored", "scored", KNOWLEDGE_REFUSED,
                                                                    KNOWLEDGE_REFUSED]
    assert "--allow-no-knowledge" in review["dimensions"]["criticalness"]["reason"]
    assert "not judged" in (out / "oracles.md").read_text(encoding="utf-8")


def test_score_through_serve_with_four_adapters(tiny_model_dir, tiny_adapters, surveys, tmp_path):
    from surveyalign.backends.server import serve_in_thread

    adapters = {dim: str(path) for dim, path in tiny_adapters.items()}
    with serve_in_thread(str(tiny_model_dir), device="cpu", adapters=adapters) as handle:
        config = tmp_path / "served.yaml"
        config.write_text("\n".join([
            "name: served-surveyalign", "backend:", "  kind: openai",
            (f"  options: {{model: {handle.model}, base_url: '{handle.base_url}', n_per_request: true, "
             "request_logprobs: true}"), "  per_dimension:",
            *[f"    {dim}: {{model: {dim}}}" for dim in ANSWERS]]) + "\n", encoding="utf-8")
        out = tmp_path / "served"
        assert main(["score", *map(str, surveys), "--judge", str(config), "--out", str(out), "--samples", "3",
                     "--seed", "7", "--max-new-tokens", "24", "--allow-no-knowledge", "--no-progress"]) == 0
    _check_reviews(out, surveys)
    review = json.loads((out / "flaky.json").read_text(encoding="utf-8"))
    assert review["judge"]["backend"] == "openai"
    assert {review["dimensions"][d]["fingerprint"]["model"] for d in ANSWERS} == set(ANSWERS)


def test_score_help_and_bad_input(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["score", "--help"])
    assert exit_info.value.code == 0 and "--allow-no-knowledge" in capsys.readouterr().out
    assert main(["score", str(tmp_path / "nope.md"), "--judge", str(tmp_path / "judge.yaml"),
                 "--out", str(tmp_path / "o")]) == 2
    assert "no such file or folder" in capsys.readouterr().err


@pytest.mark.real
def test_score_real_pdf_and_latex_with_the_tiny_judge(shared_real, tiny_adapters, tmp_path):
    out = tmp_path / "real"
    code = main(["score", str(shared_real / "surveys" / "alignment-of-llms.pdf"),
                 str(shared_real / "latex-survey" / "survey.tex"), "--judge", str(tiny_adapters["readability"].parent),
                 "--out", str(out), "--samples", "2", "--max-new-tokens", "16", "--max-length", "1024",
                 "--no-progress"])
    assert code in (0, 3)  # a tiny judge may fail dimensions: counted and reported, never a crash
    for stem in ("alignment-of-llms", "survey"):
        review = json.loads((out / f"{stem}.json").read_text(encoding="utf-8"))
        assert list(review["dimensions"]) == list(ANSWERS)
        for record in review["dimensions"].values():
            assert record["status"] in (*STATUSES, KNOWLEDGE_REFUSED)
            assert record["status"] == "scored" or record["reason"]
        shortened = [r["prompt"]["shortened_tokens"] for r in review["dimensions"].values() if r["prompt"]]
        assert shortened and all(s > 0 for s in shortened)  # the training length rule cut these long surveys


def test_score_with_a_citation_graph_builds_comp_ka(surveys, tmp_path):
    from surveyalign.documents import Paper
    from surveyalign.knowledge import CitationGraph
    from surveyalign.testing import FakeChatServer

    papers = [Paper(id="W1", title="Oracles in practice", year=2001, authors=["A. Writer"], citation_count=50),
              Paper(id="W2", title="Metamorphic testing revisited", year=2010, authors=["B. Author"], citation_count=9),
              Paper(id="W3", title="Property-based oracles", year=2004, citation_count=30, reference_ids=["W1", "W2"]),
              Paper(id="W4", title="Mutation analysis of oracles", year=2006, citation_count=12, reference_ids=["W1"])]
    graph = CitationGraph(papers).save(tmp_path / "graph.jsonl")
    ka_config = tmp_path / "ka.yaml"
    ka_config.write_text("tokenizer: whitespace\n", encoding="utf-8")
    with FakeChatServer(replies=["Grounded. $$$1$$$"]) as server:
        config = tmp_path / "api.yaml"
        config.write_text(f"backend:\n  kind: openai\n  options: {{model: fake, base_url: '{server.base_url}'}}\n"
                          "  per_dimension: {comprehensiveness: {model: fake}, criticalness: {model: fake}}\n",
                          encoding="utf-8")
        out = tmp_path / "ka-run"
        code = main(["score", str(surveys[0]), "--judge", str(config), "--out", str(out), "--samples", "2",
                     "--graph", str(graph), "--ka-config", str(ka_config), "--no-progress"])
        sent = [body["messages"][0]["content"] for body in server.requests]
    assert code == 3  # Crit-KA needs a summariser: criticalness is refused, the rest is scored
    review = json.loads((out / "oracles.json").read_text(encoding="utf-8"))
    comp = review["dimensions"]["comprehensiveness"]
    assert comp["status"] == "scored" and comp["knowledge"]["used"] is True
    assert comp["knowledge"]["details"]["n_resolved"] == 2 and comp["prompt"]["has_knowledge"] is True
    assert sum("Property-based oracles" in c for c in sent) == 2  # the KA block reached both comp samples
    crit = review["dimensions"]["criticalness"]
    assert crit["status"] == KNOWLEDGE_REFUSED and "summariser" in crit["reason"]
    assert review["dimensions"]["readability"]["knowledge"]["required"] is False

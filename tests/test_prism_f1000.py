"""PRISM on a real F1000Research article and its two referee reports (JATS sub-articles); skipped without the
real inputs (``shared_real`` fixture, tests/conftest.py). The reports come from the sub-article elements, never
from the article body."""

from __future__ import annotations

import json

import pytest

from surveyalign.backends.simple import ScriptedBackend
from surveyalign.prism import PrismConfig, read_paper, read_reviews, run_prism, stage_of


@pytest.fixture
def f1000(shared_real):
    path = shared_real / "f1000" / "207_6-229_v1.xml"
    if not path.is_file():
        pytest.skip("the real F1000 article (../shared/real, kept for development beside the repository) is not here")
    return path


def _judge(messages, settings, index):
    stage, user = stage_of(messages), messages[-1]["content"]
    review = user.split('"""\n', 1)[1].split('\n"""', 1)[0] if '"""' in user else ""
    first = review.split(". ")[0][:80]
    if stage == "adu":
        return json.dumps({"units": [{"text": first, "role": "claim", "aspect": "contribution", "grounding": None},
                                     {"text": "the abstract omits the respondent count", "role": "premise",
                                      "aspect": "clarity", "grounding": 1}]})
    if stage == "novelty_claims":
        return json.dumps({"claims": []})
    if stage == "flaws":
        return json.dumps({"flaws": [{"text": f"issue raised: {first}", "quote": first, "section": "weaknesses"}]})
    if stage == "flaw_merge":
        return json.dumps({"groups": [[0], [1]]})
    if stage == "flaw_validation":
        return json.dumps({"valid": True, "severity": "minor", "reason": "scripted"})
    if stage == "comments":
        return json.dumps({"comments": [{"text": first, "type": "suggestion", "actionability": 2, "specificity": 1,
                                         "justification": 1, "solution": 2, "tone": 2}]})
    raise AssertionError(stage)


def test_f1000_article_and_referee_reports(f1000, tmp_path):
    paper = read_paper(f1000)
    got = read_reviews(f1000)
    assert paper.title.startswith("A survey of working conditions within biomedical research")
    assert paper.submission_year == 2017 and paper.abstract.startswith("Background")
    assert "Reviewer response" not in paper.text and "Competing interests" not in paper.text
    assert [r.review_id for r in got.reviews] == ["report20903", "report20768"] and got.skipped == []
    assert got.reviews[0].text.startswith("This paper addresses an important gap")
    assert all(r.source == "human" for r in got.reviews)

    config = PrismConfig.model_validate({"backend": {"kind": "scripted", "options": {"replies": []}},
                                         "novelty": {"enabled": False}})
    run = run_prism(paper, got.reviews, config, tmp_path, backend=ScriptedBackend(_judge))
    assert run.units.log.n_failed == 0
    for rid in ("report20903", "report20768"):
        s = run.scores[rid]
        assert s["doa"] == pytest.approx(2 * 0.5 * 0.5 / (0.5 + 0.5))  # R 1/2, S 1 -> 0.5
        assert s["critical_recall"] is None and s["minor_recall"] == 0.5  # own flaw of the two valid minor ones
        assert s["ncps"] == 1.0 and s["prioritisation"]["positions"]["exact"] == 1
        assert s["mcs"] == pytest.approx(0.8) and s["sd"] == 1.0
    rows = {r["metric"]: r for r in json.loads((tmp_path / "comparison.json").read_text())}
    assert rows["doa"]["n_human"] == 2 and rows["doa"]["systems"] == {}

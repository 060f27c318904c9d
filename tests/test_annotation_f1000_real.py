"""The real F1000Research article of the ``shared_real`` fixture (tests/conftest.py; skipped when absent): its two
referee reports are collected from the JATS sub-articles and pre-annotated with a scripted judge (SurveyReview
§4.1, §4.3, App. A); every stored verbatim snippet is the report's own span at its offsets, an altered snippet is
flagged, and nothing from the article is taken as review text."""

from __future__ import annotations

import json
import re

from surveyalign.annotation import annotate_reviews, collect_reviews
from surveyalign.backends import GenerationSettings, load_backend


def _judge(messages, settings, index):
    review = messages[-1]["content"].split("=== Review report ===\n", 1)[1].split("\n=== End of review report", 1)[0]
    sentences = [s for s in re.split(r"(?<=[.!?])\s+", review) if len(s) > 40]
    return json.dumps({
        "readability": {"label": -1, "snippets": [sentences[1], sentences[2].replace(" the ", " a ", 1)]},
        "structure": {"label": 0, "snippets": []},
        "comprehensiveness": {"label": -3, "snippets": [sentences[-1]]},
        "criticalness": {"label": 1, "snippets": [sentences[0], "This sentence is in no referee report at all."]},
    })


def test_f1000_referee_reports_annotated_with_verbatim_offsets(shared_real, tmp_path):
    collected = collect_reviews([shared_real / "f1000" / "207_6-229_v1.xml"], out=tmp_path / "c")
    assert [(r.review_id, r.reviewer, r.date, r.recommendation) for r in collected.reviews] == [
        ("f1000-11029-1-r1", "Jessica K. Polka", "2017-03-20", "approve-with-reservations"),
        ("f1000-11029-1-r2", "Kearney T. W. Gunsalus", "2017-03-28", "approve-with-reservations")]
    survey = collected.surveys[0]
    assert survey.title == "A survey of working conditions within biomedical research in the United Kingdom"
    assert collected.report["reviews_found_in_survey_text"] == []
    for review in collected.reviews:  # no report sentence in the article text, no article section in a report
        assert review.text[:200] not in survey.text
        assert "## References" not in review.text and survey.abstract[:80] not in review.text
    result = annotate_reviews(collected.reviews, load_backend("scripted", replies=_judge), GenerationSettings(),
                              out=tmp_path / "a")
    assert result.report["review_status"]["ok"] == 2
    counts = result.report["snippets"]
    assert counts["missing"] == 2 and counts["exact"] + counts["layout"] == 6 and counts["near"] == 2
    for record, review in zip(result.records, collected.reviews):
        for dim in record["dimensions"].values():
            for s in dim["snippets"]:
                if s["verbatim"]:
                    assert review.text[s["start"]:s["end"]] == s["span"]
                    assert s["span"] == s["text"].strip() or s["status"] == "layout"
                else:
                    assert s["span"] is None and s["status"] in ("near", "missing")

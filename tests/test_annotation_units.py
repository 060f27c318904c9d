"""SurveyReview construction, the parts (SurveyReview §4.1-4.3, App. A): labels, the pre-annotation answer reader
(a table of real-looking answers, nasty ones included), snippets checked verbatim with offsets, the K-sample vote,
the survey screen, the review readers."""

from __future__ import annotations

import json

import pytest

from surveyalign.annotation import (
    keyword_hits,
    locate_snippet,
    parse_label,
    read_annotation,
    read_screen,
    vote_label,
)

REVIEW = ("The survey is **well-\nwritten** and easy to follow. However, the section on methods misses key works "
          "such as the 2019 cohort studies. Tables 2 and 3 are “hard to parse”.")


@pytest.mark.parametrize(("value", "label"), [
    (1, 1), ("+1", 1), ("1", 1), (" -2 ", -2), (1.0, 1), ("-3", -3), (0, 0), ("2.0", 2),
    (3, None), (0.5, None), ("positive", None), ("", None), (None, None), (True, None), (-4, None), ("+ 1", None)])
def test_parse_label(value, label):
    assert parse_label(value) == label


@pytest.mark.parametrize(("snippet", "status", "span"), [
    ("easy to follow", "exact", "easy to follow"),
    ("well-written and easy to follow", "layout", "well-\nwritten** and easy to follow"),
    ('Tables 2 and 3 are "hard to parse"', "layout", "Tables 2 and 3 are “hard to parse"),
    ("the section on method misses key works such as the 2019 cohort studies", "near", None),
    ("Nothing like this was ever written by the reviewer.", "missing", None),
    ("   ", "missing", None),
])
def test_locate_snippet(snippet, status, span):
    m = locate_snippet(snippet, REVIEW)
    assert m.status == status
    assert m.verbatim == (status in ("exact", "layout"))
    if span is not None:
        assert REVIEW[m.start:m.end] == span
    if status == "near":  # offsets point at the closest window for a person to check; never verbatim
        assert "misses key works such as the 2019 cohort studies" in REVIEW[m.start:m.end]
        assert 90 <= m.score < 100
    if status == "missing":
        assert m.start is None and m.end is None


GOOD = {"readability": {"label": -1, "snippets": ["a"]}, "structure": {"label": "+1", "snippets": ["b", "c"]},
        "comprehensiveness": {"label": 0, "snippets": []}, "criticalness": {"label": -3, "snippets": ["d"]}}


@pytest.mark.parametrize(("text", "labels", "problem"), [
    (json.dumps(GOOD), {"readability": -1, "structure": 1, "comprehensiveness": 0, "criticalness": -3}, ""),
    ("<think>hmm</think>\n```json\n" + json.dumps(GOOD) + "\n```", {"readability": -1, "structure": 1}, ""),
    (json.dumps({k.capitalize(): v for k, v in GOOD.items()}), {"readability": -1, "criticalness": -3}, ""),
    (json.dumps({**GOOD, "structure": {"label": 3, "snippets": ["b"]}}), {"structure": None, "readability": -1},
     "structure: label 3 is not one of"),
    (json.dumps({**GOOD, "structure": {"label": 0.5}}), {"structure": None}, "structure: label 0.5"),
    (json.dumps({k: v for k, v in GOOD.items() if k != "criticalness"}), {"criticalness": None, "structure": 1},
     "criticalness: missing"),
    (json.dumps({**GOOD, "comprehensiveness": {"label": 0, "snippets": ["x"]}}), {"comprehensiveness": 0},
     "snippets given with label 0 were left out"),
    ('{"readability": {"label": -1, "snippets": ["a"]', {d: None for d in GOOD}, "invalid JSON"),
    ("I cannot tell.", {d: None for d in GOOD}, "no JSON object"),
    ("", {d: None for d in GOOD}, "empty answer"),
    ("<think>still thinking", {d: None for d in GOOD}, ""),
])
def test_read_annotation_table(text, labels, problem):
    answer = read_annotation(text)
    for dim, label in labels.items():
        assert answer.dimensions[dim].label == label, dim
    if problem:
        assert any(problem in a.problem for a in answer.dimensions.values())
    if labels.get("comprehensiveness") == 0:
        assert answer.dimensions["comprehensiveness"].snippets == ()


def test_vote_label_majority_tie_and_failures():
    assert vote_label([-1, 1, -1]) == (-1, {"-1": 2, "1": 1}, False)
    assert vote_label([1, -1, None]) == (1, {"-1": 1, "1": 1}, True)  # tie: the label seen first
    assert vote_label([None, None]) == (None, {}, False)
    assert vote_label([None, 0, 0, 2]) == (0, {"0": 2, "2": 1}, False)


def test_keyword_hits_whole_words_and_screen_reader():
    assert keyword_hits("Deep Learning: A Survey") == ["survey"]
    assert keyword_hits("A state-of-the-art review of X") == ["review", "state-of-the-art"]
    assert keyword_hits("Surveying land with drones") == []  # whole words only
    assert keyword_hits("Previewing the reviewer") == []
    assert read_screen('{"survey": "Yes", "reason": "a review"}') == ("yes", "a review")
    assert read_screen('{"survey": false}') == ("no", "")
    assert read_screen('{"survey": "maybe"}')[0] == "failed"
    assert read_screen("yes")[0] == "failed"


def test_annotation_prompts_are_in_our_own_words():
    """No run of 6 words of the pre-annotation prompt, the survey screen, the Label Studio config or the card section
    appears in the SurveyReview paper (hashes shipped in tests/fixtures/own_words/, as for the judge prompts)."""
    import gzip
    import hashlib
    import re
    from pathlib import Path

    from surveyalign.annotation import (
        build_annotation_messages,
        card_section,
        labeling_config,
    )
    from surveyalign.annotation.identify import build_screen_messages

    def grams(text: str, n: int = 6) -> set[str]:
        words = re.findall(r"[a-z0-9]+", text.lower())
        return {hashlib.sha256(" ".join(words[i:i + n]).encode()).hexdigest()[:12] for i in range(len(words) - n + 1)}

    fixture = Path(__file__).parent / "fixtures" / "own_words" / "surveyreview_6grams.txt.gz"
    paper = set(gzip.decompress(fixture.read_bytes()).decode().split())
    prov = {"guideline_version": "g", "papers": 1, "papers_per_source": {"f1000": 1}, "reviews": 2,
            "reviews_written": 2, "final_label_rules": {"agreed": 3},
            "identification": {"total": {"candidates": 3, "proposed": 1}},
            "collection": {"verification": {"total": {"confirmed": 1}}}}
    assert "- Identification: 3 candidate papers" in card_section(prov, {})
    for text in (build_annotation_messages("review text", title="t")[0]["content"],
                 build_screen_messages("t", "a")[0]["content"], labeling_config(), card_section(prov, {})):
        assert not grams(text) & paper

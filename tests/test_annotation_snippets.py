"""Snippet offsets in their review (SurveyReview App. A; issue 27's mutation check of annotation/snippets.py):
every status with its exact span, score and the annotator's own text kept, the first occurrence, the short and the
one-character snippets, the case-insensitive fallback for characters NFKC folds (Kelvin sign), the near window
trimmed of spaces and widened to whole words on both sides up to the review's ends, the threshold boundary, and the
JSON round trip. Offsets and scores are counted by hand (partial ratio = 2 * matched / (len a + len b))."""

from __future__ import annotations

import pytest

from surveyalign.annotation import locate_snippet
from surveyalign.annotation.snippets import SnippetMatch, span_text

REVIEW = ("The survey is **well-\nwritten** and easy to follow. However, the section on methods misses key works "
          "such as the 2019 cohort studies. Tables 2 and 3 are “hard to parse”.")
LONGER = REVIEW + " It is a good read, a must (sic) a b c."
# offsets in REVIEW: "The survey is " 0-13, "**well-" 14-20, "\n" 21, "written**" 22-30, " and " 31-35,
# "easy to follow" 36-49; "However, " 52-60, "the section on methods misses key works" starts at 61
# ("section" 65-71, "on" 73-74, "methods" 76-82, "misses" 84-89)


@pytest.mark.parametrize(("snippet", "review", "expected"), [
    # exact: first occurrence, at position 0 too; score 100
    ("easy to follow", REVIEW, SnippetMatch("easy to follow", "exact", 36, 50, 100.0)),
    ("The survey", REVIEW, SnippetMatch("The survey", "exact", 0, 10, 100.0)),
    ("ab", "ab xx ab", SnippetMatch("ab", "exact", 0, 2, 100.0)),
    ("xx ab", "ab xx ab, xx ab", SnippetMatch("xx ab", "exact", 3, 8, 100.0)),
    # surrounding spaces: found stripped, the annotator's text kept as given
    (" the section on method", REVIEW, SnippetMatch(" the section on method", "exact", 61, 82, 100.0)),
    # layout, shorter than the leakage check's 20 characters: "**well-\nwritten" minus the leading "**"
    ("well-written", REVIEW, SnippetMatch("well-written", "layout", 16, 29, 100.0)),
    # layout, case-sensitive span first: "EASY to follow" comes earlier but differs in case
    ("easy to  follow", "EASY to follow; easy\nto follow", SnippetMatch("easy to  follow", "layout", 16, 30, 100.0)),
    # layout through NFKC: the Kelvin sign U+212A folds to "K"; only the case-insensitive search finds it
    ("5 K", "at 5 \u212a it", SnippetMatch("5 K", "layout", 3, 6, 100.0)),
    ("K", "\u212a", SnippetMatch("K", "layout", 0, 1, 100.0)),
])
def test_verbatim_spans(snippet, review, expected):
    m = locate_snippet(snippet, review)
    assert m == expected
    assert m.verbatim
    assert span_text(review, m) == review[expected.start:expected.end]


@pytest.mark.parametrize(("snippet", "review", "expected", "span"), [
    # 23 of 24 characters match "section on methods misse": 2 * 23 / 48 = 95.83; end widened to "misses"
    ("section on method misses", REVIEW, SnippetMatch("section on method misses", "near", 65, 90, 95.83),
     "section on methods misses"),
    # 16 characters (< 20): 2 * 15 / 32 = 93.75
    ("on method misses", REVIEW, SnippetMatch("on method misses", "near", 73, 90, 93.75), "on methods misses"),
    # window starts mid-word ("ection") and ends mid-word ("wor"): widened by 1 and 2 characters; 2 * 30 / 62
    ("ection on method misses key wor", REVIEW,
     SnippetMatch("ection on method misses key wor", "near", 65, 100, 96.77), "section on methods misses key works"),
    # window "he survey i" (1-12) widened to offset 0 and by one character to "is"; 2 * 10 / 22 = 90.91
    ("e survey iz", "The survey is good", SnippetMatch("e survey iz", "near", 0, 13, 90.91), "The survey is"),
    # window ends one character before the review's end: widened to its last character; 2 * 12 / 26 = 92.31
    ("survey is god", "The survey is good", SnippetMatch("survey is god", "near", 4, 18, 92.31), "survey is good"),
    # window "The survey " (0-11) ends on a space: trimmed; 2 * 10 / 22 = 90.91
    ("Te survey i", REVIEW, SnippetMatch("Te survey i", "near", 0, 10, 90.91), "The survey"),
    # window "\nwritten** a" (21-34) starts on a line break: trimmed, then widened to "and"
    ("-written** an", REVIEW, SnippetMatch("-written** an", "near", 22, 35, 90.91), "written** and"),
    # window "y is **well-\n" (9-22) ends on a line break: trimmed to the "-" (one character), widened to "survey"
    ("vy is **well-", REVIEW, SnippetMatch("vy is **well-", "near", 4, 21, 90.91), "survey is **well-"),
    # window " 2 and 3 ar" (140-151) starts on a space: trimmed by one character to the "2", widened to "are"
    ("e 2 and 3 a", LONGER, SnippetMatch("e 2 and 3 a", "near", 141, 152, 90.91), "2 and 3 are"),
    # one character, differing in case only: never verbatim, flagged at the word that holds it
    ("W", "a well", SnippetMatch("W", "near", 2, 6, 100.0), "well"),
])
def test_near_windows(snippet, review, expected, span):
    m = locate_snippet(snippet, review)
    assert m == expected
    assert review[m.start:m.end] == span
    assert not m.verbatim and span_text(review, m) is None


def test_missing_and_threshold_boundary():
    # 13 characters, 11 match "cohort studie": 2 * 11 / 26 = 84.62 < 90
    assert locate_snippet("cohort studys", "the cohort studies") == SnippetMatch("cohort studys", "missing", None,
                                                                            None, 84.62)
    # same snippet, threshold lowered to 84: near, window widened to "cohort studies" (4-18)
    assert locate_snippet("cohort studys", "the cohort studies", threshold=84) == SnippetMatch(
        "cohort studys", "near", 4, 18, 84.62)
    # a score equal to the threshold is near
    assert locate_snippet("W", "a well", threshold=100.0).status == "near"
    # nothing left after normalising (a soft hyphen): missing with score 0, not the matcher's None
    assert locate_snippet("\u00ad", "abc") == SnippetMatch("\u00ad", "missing", None, None, 0.0)
    assert locate_snippet("  ", REVIEW) == SnippetMatch("  ", "missing", None, None, 0.0)
    # only punctuation and not there as typed: no letters to anchor a span, missing (not "near" at score 100)
    m = locate_snippet('"', "say “hi”")
    assert m.status == "missing" and not m.verbatim and m.start is None


def test_json_round_trip_and_span_text():
    m = SnippetMatch("well-written", "layout", 16, 29, 100.0)
    assert m.to_json() == {"text": "well-written", "status": "layout", "start": 16, "end": 29, "score": 100.0,
                           "verbatim": True}
    assert SnippetMatch.from_json(m.to_json()) == m
    near = SnippetMatch("on method misses", "near", 73, 90, 93.75)
    assert near.to_json()["verbatim"] is False
    assert SnippetMatch.from_json(near.to_json()) == near
    assert SnippetMatch.from_json({}) == SnippetMatch("", "missing", None, None, 0.0)
    assert SnippetMatch.from_json({"text": 7, "status": "exact", "start": 0, "end": 1, "score": None}) == \
        SnippetMatch("7", "exact", 0, 1, 0.0)
    assert SnippetMatch.from_json({"score": "12.5"}).score == 12.5
    assert span_text(REVIEW, m) == "well-\nwritten"
    assert span_text(REVIEW, SnippetMatch("x", "exact", None, 1)) is None
    assert span_text(REVIEW, SnippetMatch("x", "exact", 0, None)) is None
    assert span_text(REVIEW, SnippetMatch("x", "missing", 0, 3)) is None
    assert [s for s in ("exact", "layout", "near", "missing") if SnippetMatch("x", s).verbatim] == ["exact", "layout"]


def test_a_snippet_without_letters_or_digits_is_missing_unless_exact():
    # the review has curly quotes only: a straight quote is nowhere in it, and its normalised form is empty
    assert locate_snippet('"', "say “hi”") == SnippetMatch('"', "missing", None, None, 0.0)
    assert locate_snippet("--", "a - b").status == "missing"
    # found as typed, it is a verbatim span like any other
    assert locate_snippet("“", "say “hi”") == SnippetMatch("“", "exact", 4, 5, 100.0)

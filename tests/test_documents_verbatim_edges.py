"""Edges of the verbatim / near-verbatim matchers (surveyalign/documents/verbatim.py): the options each public
matcher passes on (min_chars, threshold, score_cutoff, normalised, spaced) and the boundaries of its checks
(issue 27)."""

from __future__ import annotations

from surveyalign.documents import (
    find_verbatim,
    layout_verbatim_hits,
    near_hits_in_text,
    near_verbatim_hits,
    near_verbatim_scores,
    normalise_for_match,
)

TWENTY = "abcdefghij klmnopqrs"  # exactly MIN_SNIPPET_CHARS (20) characters, two words


def test_min_chars_is_passed_on_by_the_layout_matchers():
    texts = ["It was *well done*, she said."]
    assert find_verbatim(["well done"], texts) == [None]
    assert find_verbatim(["well done"], texts, min_chars=5) == [0]
    assert layout_verbatim_hits(["well done", "badly done"], texts, min_chars=5) == [{0}, set()]


def test_a_snippet_of_exactly_min_chars_is_checked():
    text = "before " + TWENTY + " after"
    assert near_hits_in_text([TWENTY, TWENTY[:-1]], text) == [True, None]
    assert near_verbatim_scores([(TWENTY, text), (TWENTY[:-1], text)]) == [100.0, None]


def test_near_hits_in_text_respaces_the_text_unless_told_it_is_spaced():
    snippet = "the tables are easy to read"
    text = "x the tables  are easy  to read y"  # a double space in every run of four words
    # partial ratio 25/27 = 92.6 over the two extra spaces: a near hit once the shared runs are found
    assert near_hits_in_text([snippet], text) == [True]
    assert near_hits_in_text([snippet], text, spaced=True) == [False]  # the caller vouched: no shared run


def test_a_threshold_is_reached_at_equality():
    text = "x the tables are easy to read y"
    assert near_hits_in_text(["the tables are easy to read"], text, threshold=100) == [True]
    assert near_verbatim_hits([("the tables are easy to read", text)], threshold=100) == [True]


def test_near_verbatim_hits_passes_threshold_and_min_chars_on():
    text = "x the tables  are easy  to read y"
    snippet = "the tables are easy to read"  # scores 92.6 (see above)
    assert near_verbatim_hits([(snippet, text)], normalised=True) == [True]
    assert near_verbatim_hits([(snippet, text)], normalised=True, threshold=95) == [False]
    assert near_verbatim_hits([("easy to read", text)]) == [None]
    assert near_verbatim_hits([("easy to read", text)], min_chars=5) == [True]


def test_normalised_true_compares_the_forms_as_given():
    raw_snippet = ("The *tables* are easy to read", "the tables are easy to read")
    raw_text = ("the tables are easy to read", "The *tables* are easy to read")
    # normalised: emphasis seen through, case folded -> an exact match
    assert near_verbatim_scores([raw_snippet, raw_text]) == [100.0, 100.0]
    assert near_verbatim_hits([raw_snippet, raw_text]) == [True, True]
    # normalised=True: the two asterisks stay (25 of 27 characters match) on whichever side holds them
    assert near_verbatim_scores([raw_snippet, raw_text], normalised=True) == [2500 / 27, 2500 / 27]
    assert near_verbatim_hits([raw_snippet, raw_text], normalised=True) == [True, True]  # 92.6 >= 90
    assert near_verbatim_hits([raw_snippet, raw_text], normalised=True, threshold=95) == [False, False]
    assert near_verbatim_hits([raw_snippet, raw_text], threshold=95) == [True, True]


def test_score_cutoff_and_empty_texts():
    unrelated = ("The statistics section does not explain the models.",
                 "Intro text. The English is clear, and the tables are easy to read.")
    low = near_verbatim_scores([unrelated])[0]
    assert 0 < low < 60
    assert near_verbatim_scores([unrelated], score_cutoff=90) == [0.0]
    # one shared character in 300: a score well under 1 that the default cutoff (0) keeps
    tiny = near_verbatim_scores([("a" * 300, "b" * 299 + "a")])[0]
    assert 0 < tiny < 1
    # an empty text (or one that normalises to nothing) scores 0
    assert near_verbatim_scores([("the tables are easy to read", ""), ("the tables are easy to read", "** | **")]) \
        == [0.0, 0.0]


def test_a_short_snippet_does_not_stop_the_scoring_of_the_next():
    text = "x the tables are easy to read y"
    assert near_verbatim_scores([("Yes.", text), ("the tables are easy to read", text)]) == [None, 100.0]


def test_normalise_for_match_keeps_leading_and_trailing_letters():
    assert normalise_for_match("XML and XSLT, see Fig. X") == "XML and XSLT, see Fig. X"
    assert normalise_for_match("  **XML**  ") == "XML"

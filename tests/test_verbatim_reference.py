"""The fast leak matchers (surveyalign/documents/verbatim.py) find exactly what a brute-force loop finds."""

from __future__ import annotations

from rapidfuzz import fuzz

from surveyalign.documents import (
    MIN_SNIPPET_CHARS,
    NEAR_VERBATIM_THRESHOLD,
    layout_verbatim_hits,
    near_verbatim_hits,
    normalise_for_match,
    strip_running_headers,
)

_BODY = ("Retrieval augmented generation has become a common way to ground model outputs in external evidence. "
         "This survey groups the methods by where retrieval happens and by what is retrieved.")
_TEXTS = [
    # 0: the first gold sentence broken across lines and hyphenated, inside emphasis, with typographic quotes
    "# Intro\n\n" + _BODY + "\nThe authors *should compare the re-\ntrieval* baselines on \u201cthe same\u201d corpora.\n",
    # 1: the second gold sentence with one word changed, and a running page header inside a quote
    _BODY + " Overall the taxonomy is clear but the section on dense retrievers is far too\nPAGE 3 OF 12\nthin.\n",
    # 2: an unrelated text
    "Graph neural networks pass messages along edges; this review lists twelve families of them and their uses.\n",
]
_GOLD = [
    'The authors should compare the retrieval baselines on "the same" corpora.',  # verbatim in 0 (layout broken)
    "Overall the taxonomy is clear but the section on dense retrievers is much too thin.",  # near-verbatim in 1
    "Graph neural networks pass out of fashion once attention arrived in every field.",  # shares a run, scores low
    "Yes.",  # too short to check
]


def _reference_near(snippet: str, text: str, normalised: bool = False) -> bool | None:
    s, t = (snippet, text) if normalised else (normalise_for_match(snippet), normalise_for_match(text))
    s, t = s.casefold(), t.casefold()
    if len(s) < MIN_SNIPPET_CHARS:
        return None
    sw, tw = s.split(), t.split()
    grams = {tuple(tw[i : i + 4]) for i in range(len(tw) - 3)}
    if len(sw) >= 4 and not any(tuple(sw[i : i + 4]) in grams for i in range(len(sw) - 3)):
        return False
    return fuzz.partial_ratio(s, t) >= NEAR_VERBATIM_THRESHOLD


def test_header_prefilter_keeps_every_case_of_the_header_words():
    for header in ("PAGE 3 OF 12", "Page 3 of 12", "F1000Research 2021, 10:412 LAST UPDATED: 01 JAN 2022",
                   "Under Review as a Conference Paper at ICLR 2024"):
        assert strip_running_headers(f"one line\n{header}\ntwo line") == "one line\ntwo line"
    assert strip_running_headers("a page of text\nno header here") == "a page of text\nno header here"


def test_fast_matchers_agree_with_brute_force():
    pairs = [(g, t) for g in _GOLD for t in _TEXTS]
    expected_near = [_reference_near(g, t) for g, t in pairs]
    assert expected_near == [True, False, False, False, True, False, False, False, False, None, None, None]
    assert near_verbatim_hits(pairs) == expected_near
    normalised = [(normalise_for_match(g), normalise_for_match(t)) for g, t in pairs]
    assert near_verbatim_hits(normalised, normalised=True) == expected_near
    expected_verbatim = [
        None if len(normalise_for_match(g)) < MIN_SNIPPET_CHARS
        else {j for j, t in enumerate(_TEXTS) if normalise_for_match(g) in normalise_for_match(t)}
        for g in _GOLD
    ]
    assert expected_verbatim == [{0}, set(), set(), None]
    assert layout_verbatim_hits(_GOLD, _TEXTS) == expected_verbatim


def test_prefilter_splits_words_like_str_split_on_unnormalised_input():
    # normalised=True trusts the caller; tabs, runs of spaces and non-ASCII spaces still split words as str.split does
    text = "Caf\u00e9 reviews:\tthe  taxonomy\u00a0is clear but the dense retrievers section is thin  "
    snippet = "the taxonomy is clear but the dense retrievers section is thin"
    pairs = [(snippet, text), (snippet, text.replace("\t", " ")), ("the taxonomy was never clear at all here", text)]
    expected = [_reference_near(s, t, normalised=True) for s, t in pairs]
    assert expected == [True, True, False]
    assert near_verbatim_hits(pairs, normalised=True) == expected

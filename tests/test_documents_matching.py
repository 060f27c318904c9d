"""The safe matching rule's every verdict in full (issue 27): identifiers on one side only, the title-ratio and
first-author boundaries (hand-computed rapidfuzz ratios: 2 * LCS / (len_a + len_b)), the number / negation
reasons, the confirming fields' order in the reason, and each rejection's reason."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from surveyalign.documents import (
    MatchDecision,
    Paper,
    Reference,
    normalise_surname,
    same_paper,
)

ATTN = Paper(id="W1", title="Attention Is All You Need", year=2017, authors=["Ashish Vaswani"])
LSTM = Paper(id="W4", title="Long short-term memory", year=1997, authors=["Sepp Hochreiter"])


def _ref(title="Attention is all you need", year=2017, authors=("A. Vaswani",), doi=None, arxiv=None):
    return Reference(key="r", title=title, year=year, authors=list(authors), doi=doi, arxiv_id=arxiv)


def test_identifier_verdicts_in_full():
    doi_paper = Paper(id="W1", title="Something else entirely", year=1990, doi="10.1000/abc")
    assert same_paper(_ref(doi="10.1000/abc"), doi_paper) == MatchDecision(True, "doi", 100.0, "same DOI 10.1000/abc")
    assert same_paper(_ref(doi="10.1000/xyz"), doi_paper) == MatchDecision(
        False, "rejected", 0.0, "different DOIs (10.1000/xyz vs 10.1000/abc)")
    arxiv_paper = Paper(id="W9", title="x", arxiv_id="arXiv:1706.03762")
    assert same_paper(_ref(arxiv="1706.03762v5"), arxiv_paper) == MatchDecision(
        True, "arxiv", 100.0, "same arXiv id 1706.03762")
    assert same_paper(_ref(arxiv="1810.04805"), arxiv_paper) == MatchDecision(
        False, "rejected", 0.0, "different arXiv ids (1810.04805 vs 1706.03762)")
    # an identifier on one side only decides nothing: the title rule runs
    assert same_paper(_ref(doi="10.1000/abc"), ATTN).method == "title+year+author"
    assert same_paper(_ref(arxiv="1706.03762"), ATTN).method == "title+year+author"


def test_missing_titles_are_named():
    assert same_paper(_ref(title=""), ATTN) == MatchDecision(False, "rejected", 0.0, "no title to compare")
    assert same_paper(_ref(), Paper(id="E", title="")) == MatchDecision(False, "rejected", 0.0,
                                                                         "candidate has no title")
    assert same_paper(_ref(title="{}"), Paper(id="E", title="")).reason == "no title to compare"


def test_title_ratio_threshold_is_inclusive():
    # 25 characters each, one substituted ("need" / "feed"): ratio 2 * 24 / 50 = 96.0
    typo = _ref(title="Attention is all you feed")
    assert same_paper(typo, ATTN, min_title_score=96) == MatchDecision(
        True, "title+year+author", 96.0, "title 96.0 confirmed by year+author")
    assert same_paper(typo, ATTN, min_title_score=96.5) == MatchDecision(
        False, "rejected", 96.0, "title similarity 96.0 < 96.5")


def test_number_and_negation_reasons_in_full():
    semeval = same_paper(_ref(title="SemEval 2020 Task 12", year=2020, authors=("Zampieri",)),
                         Paper(id="S", title="SemEval-2021 Task 12", year=2020, authors=["Marcos Zampieri"]))
    # 20 characters each, one substituted: 2 * 19 / 40 = 95.0
    assert semeval == MatchDecision(False, "rejected", 95.0, "titles carry different numbers (12 2020 vs 12 2021)")
    plain = same_paper(_ref(title="GPT technical report", year=2023, authors=("OpenAI",)),
                       Paper(id="G", title="GPT-4 Technical Report", year=2023, authors=["OpenAI"]))
    assert plain == MatchDecision(False, "rejected", pytest.approx(100 * 40 / 42),
                                  "titles carry different numbers (- vs 4)")
    numbered = same_paper(_ref(title="GPT-4 technical report", year=2023, authors=("OpenAI",)),
                          Paper(id="G", title="GPT technical report", year=2023, authors=["OpenAI"]))
    assert numbered.reason == "titles carry different numbers (4 vs -)"
    negated = same_paper(_ref(title="Attention is not all you need"), ATTN)
    assert negated == MatchDecision(False, "rejected", pytest.approx(100 * 50 / 54),  # 25 of 29 + 25 chars
                                    "one title is negated (not / no / without)")


def test_first_author_ratio_90_confirms_80_does_not():
    # "hochreitar" vs "hochreiter": 10 + 10 characters, 9 in common -> 90.0 (the threshold); one more typo -> 80.0
    close = same_paper(_ref(title="Long short-term memory", year=None, authors=("S. Hochreitar",)), LSTM)
    assert close == MatchDecision(True, "title+author", 100.0, "title 100.0 confirmed by author")
    far = same_paper(_ref(title="Long short-term memory", year=None, authors=("S. Hochroitar",)), LSTM)
    assert far == MatchDecision(False, "rejected", 100.0,
                                "similar title (100.0) but first authors hochroitar vs hochreiter differ")
    assert same_paper(_ref(title="Long short-term memory", year=None, authors=()), LSTM) == MatchDecision(
        False, "rejected", 100.0, "similar title but no year or first author (nor an abstract) to confirm it")
    assert (normalise_surname("O'Neil"), normalise_surname("Günnemann"), normalise_surname(None)) == (
        "oneil", "gunnemann", "")


@dataclass
class Record:
    title: str
    abstract: str
    year: int | None = None
    doi: str | None = None
    arxiv_id: str | None = None
    first_author_surname: str | None = None


def test_abstract_of_exactly_twelve_words_confirms():
    twelve = "We pooled forty field trials of winter cover crops measuring topsoil carbon"
    assert len(twelve.split()) == 12
    hit = Paper(id="PMC1", title="Soil carbon under cover crops: a review.", year=2021, abstract=twelve + ".")
    ok = same_paper(Record("Soil carbon under cover crops: a review", twelve), hit)
    assert ok == MatchDecision(True, "title+abstract", 100.0, "title 100.0 confirmed by abstract")
    eleven = " ".join(twelve.split()[:11])
    short = same_paper(Record("Soil carbon under cover crops: a review", eleven), hit)
    assert short == MatchDecision(False, "rejected", 100.0,
                                  "similar title but no year or first author (nor an abstract) to confirm it")

"""Is this candidate the cited paper? The safe matching rule for bibliographic records (SurveyReview §5.2.1).

:func:`same_paper` is the one decision every package uses (knowledge augmentation, the autoraters' citation
checks, PRISM, text fetching):

1. identifiers first: equal DOIs (or equal arXiv ids) -> same paper; two *different* DOIs (or arXiv ids)
   -> not the same paper, whatever the titles say;
2. otherwise the normalised titles (:func:`normalise_title`) must agree with a ``rapidfuzz`` ratio of at
   least ``min_title_score`` (default 92 out of 100), carry the same numbers (``GPT-3`` is not ``GPT-4``)
   and the same negations (``not``, ``no``, ``without``: "X is not all you need" is not "X is all you
   need"), **and** either the years agree within ``year_tolerance`` (default 1), or the first authors'
   surnames agree, or both sides carry an abstract and the abstracts agree (``token_set_ratio`` >=
   :data:`MIN_ABSTRACT_SCORE`; release records of SurveyReview have a title and an abstract only). A title
   match with nothing to confirm it is rejected.

A search's first hit is never taken as the answer: every candidate goes through the rule
(:class:`surveyalign.knowledge.Resolver` applies it against a graph's papers).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Protocol

from rapidfuzz import fuzz

__all__ = [
    "DEFAULT_MIN_TITLE_SCORE",
    "DEFAULT_YEAR_TOLERANCE",
    "MIN_ABSTRACT_SCORE",
    "MIN_ABSTRACT_WORDS",
    "Citable",
    "MatchDecision",
    "normalise_surname",
    "normalise_title",
    "same_paper",
]

#: Smallest rapidfuzz ratio (0-100) between normalised titles for a title match.
DEFAULT_MIN_TITLE_SCORE: float = 92.0
#: Smallest rapidfuzz ``token_set_ratio`` (0-100) between normalised abstracts that confirms a title match, and
#: the fewest words both abstracts need for it (a one-line abstract shares words with anything). Measured: the
#: same abstract reformatted or cut in half scores >= 99.8, unrelated abstracts about 50, a one-sentence
#: paraphrase of the topic 74.
MIN_ABSTRACT_SCORE: float = 90.0
MIN_ABSTRACT_WORDS: int = 12
#: Largest year difference that still confirms a title match.
DEFAULT_YEAR_TOLERANCE: int = 1

_LATEX_CMD = re.compile(r"\\[a-zA-Z]+\s*")
_NON_WORD = re.compile(r"[^0-9a-z]+")
_NEGATIONS = frozenset({"not", "no", "without", "non", "beyond"})


class Citable(Protocol):
    """What the rule reads of a reference or a paper (both :class:`Reference` and :class:`Paper` have it)."""

    title: str
    year: int | None
    doi: str | None
    arxiv_id: str | None

    @property
    def first_author_surname(self) -> str | None: ...


def normalise_title(title: str | None) -> str:
    """Lower-case ASCII words of a title, LaTeX commands, braces, accents and punctuation removed.

    Args:
        title: e.g. ``"{BERT}: Pre-training of Deep Bidirectional Transformers"``.

    Returns:
        ``"bert pre training of deep bidirectional transformers"``; ``""`` for empty input.
    """
    if not title:
        return ""
    text = _LATEX_CMD.sub(" ", str(title))
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii").lower()
    return _NON_WORD.sub(" ", text).strip()


def normalise_surname(name: str | None) -> str:
    """A surname reduced for comparison (``"Gunnemann"`` == ``"Günnemann"``, ``"O'Neil"`` == ``"ONeil"``).

    Args:
        name: a family name.

    Returns:
        Lower-case ASCII letters only; ``""`` for empty input.
    """
    return normalise_title(name).replace(" ", "")  # normalise_title leaves only [0-9a-z ]


@dataclass(frozen=True)
class MatchDecision:
    """The verdict of :func:`same_paper`.

    Attributes:
        same: whether the candidate is taken to be the referenced paper.
        method: what decided: ``"doi"``, ``"arxiv"``, or ``"title+"`` and the confirming fields joined by
            ``"+"`` in the order year, author, abstract (``"title+year"``, ``"title+author+abstract"``, ...) when
            ``same``; ``"rejected"`` otherwise.
        score: rapidfuzz ratio of the normalised titles (0-100; 100 for an identifier match).
        reason: one line saying why (for reports of unresolved references).
    """

    same: bool
    method: str
    score: float
    reason: str


def same_paper(reference: Citable, candidate: Citable, *, min_title_score: float = DEFAULT_MIN_TITLE_SCORE,
               year_tolerance: int = DEFAULT_YEAR_TOLERANCE) -> MatchDecision:
    """Decide whether ``candidate`` is the paper ``reference`` points to (the safe rule of this module).

    Args:
        reference: a :class:`~surveyalign.documents.references.Reference` (or any object with ``title``,
            ``year``, ``doi``, ``arxiv_id`` and ``first_author_surname``; an ``abstract`` attribute, when
            present, can confirm a title match).
        candidate: a :class:`~surveyalign.documents.papers.Paper` (or the same shape), e.g. a search hit.
        min_title_score: smallest title ratio (0-100) for a title match.
        year_tolerance: largest year difference (years) that confirms a title match.

    Returns:
        A :class:`MatchDecision`.
    """
    if reference.doi and candidate.doi:
        if reference.doi == candidate.doi:
            return MatchDecision(True, "doi", 100.0, f"same DOI {reference.doi}")
        return MatchDecision(False, "rejected", 0.0, f"different DOIs ({reference.doi} vs {candidate.doi})")
    if reference.arxiv_id and candidate.arxiv_id:
        if reference.arxiv_id == candidate.arxiv_id:
            return MatchDecision(True, "arxiv", 100.0, f"same arXiv id {reference.arxiv_id}")
        return MatchDecision(False, "rejected", 0.0,
                             f"different arXiv ids ({reference.arxiv_id} vs {candidate.arxiv_id})")
    a, b = normalise_title(reference.title), normalise_title(candidate.title)
    if not a or not b:
        return MatchDecision(False, "rejected", 0.0, "no title to compare" if not a else "candidate has no title")
    score = float(fuzz.ratio(a, b))
    if score < min_title_score:
        return MatchDecision(False, "rejected", score, f"title similarity {score:.1f} < {min_title_score:g}")
    words_a, words_b = set(a.split()), set(b.split())
    numbers_a, numbers_b = {w for w in words_a if w.isdigit()}, {w for w in words_b if w.isdigit()}
    if numbers_a != numbers_b:
        return MatchDecision(False, "rejected", score, f"titles carry different numbers "
                             f"({' '.join(sorted(numbers_a)) or '-'} vs {' '.join(sorted(numbers_b)) or '-'})")
    if words_a & _NEGATIONS != words_b & _NEGATIONS:
        return MatchDecision(False, "rejected", score, "one title is negated (not / no / without)")
    return _corroborate(reference, candidate, score, year_tolerance)


def _corroborate(reference: Citable, candidate: Citable, score: float, year_tolerance: int) -> MatchDecision:
    year_known = reference.year is not None and candidate.year is not None
    year_ok = year_known and abs(int(reference.year) - int(candidate.year)) <= year_tolerance
    ref_author = normalise_surname(reference.first_author_surname)
    cand_author = normalise_surname(candidate.first_author_surname)
    author_known = bool(ref_author and cand_author)
    author_ok = author_known and (ref_author == cand_author or fuzz.ratio(ref_author, cand_author) >= 90)
    # an abstract confirms too, when both sides have one (release records carry a title and an abstract only)
    ref_abs, cand_abs = (normalise_title(getattr(x, "abstract", "")) for x in (reference, candidate))
    abstract_known = min(len(ref_abs.split()), len(cand_abs.split())) >= MIN_ABSTRACT_WORDS
    abstract_score = float(fuzz.token_set_ratio(ref_abs, cand_abs)) if abstract_known else 0.0
    abstract_ok = abstract_known and abstract_score >= MIN_ABSTRACT_SCORE
    if year_ok or author_ok or abstract_ok:
        method = "+".join(["title", *(name for name, ok in (("year", year_ok), ("author", author_ok),
                                                            ("abstract", abstract_ok)) if ok)])
        return MatchDecision(True, method, score, f"title {score:.1f} confirmed by {method.split('+', 1)[1]}")
    if not year_known and not author_known and not abstract_known:
        return MatchDecision(False, "rejected", score,
                             "similar title but no year or first author (nor an abstract) to confirm it")
    parts = []
    if year_known:
        parts.append(f"years {reference.year} vs {candidate.year}")
    if author_known:
        parts.append(f"first authors {ref_author} vs {cand_author}")
    if abstract_known:
        parts.append(f"abstracts (similarity {abstract_score:.1f} < {MIN_ABSTRACT_SCORE:g})")
    return MatchDecision(False, "rejected", score, f"similar title ({score:.1f}) but {' and '.join(parts)} differ")

"""Reference resolution against a citation graph (SurveyReview §5.2.1, building R on a graph).

Whether a candidate is the cited paper is decided by one rule, :func:`surveyalign.documents.same_paper`
(identifiers first, then agreeing titles confirmed by year, first author or abstract; see
``surveyalign/documents/matching.py``). A search's first hit is never taken as the answer: every candidate
goes through the rule. :class:`Resolver` applies it against an in-memory index of graph papers (DOI, arXiv
id, exact title, then a fuzzy look-up restricted to titles sharing a rare word) and keeps every reference,
resolved or not, with the reason.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from rapidfuzz import fuzz, process

from surveyalign.documents import (
    DEFAULT_MIN_TITLE_SCORE,
    DEFAULT_YEAR_TOLERANCE,
    Citable,
    MatchDecision,
    Paper,
    normalise_title,
    same_paper,
)

__all__ = [
    "Resolution",
    "Resolver",
    "reason_class",
    "resolution_counts",
    "resolve_by_search",
]


@dataclass
class Resolution:
    """What became of one reference.

    Attributes:
        key: the reference's key.
        paper_id: the graph id it resolved to, or ``None`` (unresolved).
        method: :attr:`MatchDecision.method` of the accepted match, or ``"unresolved"``.
        score: title ratio of the accepted (or best rejected) candidate, 0-100.
        reason: why it resolved or why not (e.g. ``"no candidate with a similar title"``).
        n_candidates: candidates examined.
    """

    key: str
    paper_id: str | None
    method: str
    score: float
    reason: str
    n_candidates: int = 0

    @property
    def resolved(self) -> bool:
        """True when a paper id was found."""
        return self.paper_id is not None

    def to_dict(self) -> dict[str, Any]:
        """Return the record as a dict."""
        return asdict(self)


def _decide(reference: Any, candidates: Sequence[Paper], *, min_title_score: float, year_tolerance: int,
            ) -> Resolution:
    """Check every candidate with :func:`same_paper`; keep the best accepted one (ties: lowest id)."""
    key = getattr(reference, "key", "")
    accepted: list[tuple[float, int, str, MatchDecision]] = []
    best_rejected: MatchDecision | None = None
    for cand in candidates:
        decision = same_paper(reference, cand, min_title_score=min_title_score, year_tolerance=year_tolerance)
        if decision.same:
            strength = 2 if decision.method in ("doi", "arxiv", "title+year+author") else 1
            accepted.append((-decision.score, -strength, cand.id, decision))
        elif best_rejected is None or decision.score > best_rejected.score:
            best_rejected = decision
    if accepted:
        _, _, paper_id, decision = min(accepted)
        return Resolution(key, paper_id, decision.method, decision.score, decision.reason, len(candidates))
    if best_rejected is None:
        return Resolution(key, None, "unresolved", 0.0, "no candidate with a similar title", 0)
    return Resolution(key, None, "unresolved", best_rejected.score, f"best candidate rejected: {best_rejected.reason}",
                      len(candidates))


class Resolver:
    """Resolve references against an in-memory index of graph papers with :func:`same_paper`.

    Look-ups, in order: DOI, arXiv id, exact normalised title, then a fuzzy look-up (rapidfuzz ratio) among
    titles that share one of the reference title's ``block_words`` rarest words. Every candidate found is
    checked with the safe rule.

    Args:
        papers: the graph's papers (any iterable of :class:`Paper`).
        min_title_score: see :func:`same_paper`.
        year_tolerance: see :func:`same_paper`.
        block_words: how many of a title's rarest words select fuzzy candidates (more: slower, fewer misses).
        max_fuzzy: most fuzzy candidates checked per reference.
    """

    def __init__(self, papers: Iterable[Paper], *, min_title_score: float = DEFAULT_MIN_TITLE_SCORE,
                 year_tolerance: int = DEFAULT_YEAR_TOLERANCE, block_words: int = 3, max_fuzzy: int = 5) -> None:
        self.papers: list[Paper] = list(papers)
        self.min_title_score = min_title_score
        self.year_tolerance = year_tolerance
        self.block_words = block_words
        self.max_fuzzy = max_fuzzy
        self._by_doi: dict[str, list[int]] = defaultdict(list)
        self._by_arxiv: dict[str, list[int]] = defaultdict(list)
        self._by_title: dict[str, list[int]] = defaultdict(list)
        self._titles: list[str] = []
        self._postings: dict[str, list[int]] = defaultdict(list)
        for i, paper in enumerate(self.papers):
            if paper.doi:
                self._by_doi[paper.doi].append(i)
            if paper.arxiv_id:
                self._by_arxiv[paper.arxiv_id].append(i)
            title = normalise_title(paper.title)
            self._titles.append(title)
            if title:
                self._by_title[title].append(i)
                for word in set(title.split()):
                    self._postings[word].append(i)
        self._df = Counter({word: len(ids) for word, ids in self._postings.items()})

    def candidates(self, reference: Citable) -> list[Paper]:
        """The papers the index proposes for ``reference`` (identifier hits, else exact title, else fuzzy).

        Args:
            reference: the reference to look up.

        Returns:
            Candidates to check with :func:`same_paper` (possibly empty); never a decision by itself.
        """
        hits: list[int] = []
        if reference.doi:
            hits += self._by_doi.get(reference.doi, [])
        if reference.arxiv_id:
            hits += self._by_arxiv.get(reference.arxiv_id, [])
        title = normalise_title(reference.title)
        if title:
            hits += self._by_title.get(title, [])
        if not hits and title:
            words = sorted({w for w in title.split() if w in self._df}, key=lambda w: (self._df[w], w))
            pool = sorted({i for w in words[:self.block_words] for i in self._postings[w]})
            if pool:
                found = process.extract(title, [self._titles[i] for i in pool], scorer=fuzz.ratio,
                                        score_cutoff=self.min_title_score, limit=self.max_fuzzy)
                hits += [pool[index] for _, _, index in found]
        return [self.papers[i] for i in dict.fromkeys(hits)]

    def similar_titles(self, title: str) -> list[Paper]:
        """Papers whose normalised title equals ``title``'s or reaches ``min_title_score`` against it.

        No year or author is asked for: this finds what *might* be a given paper, e.g. a survey's own node(s)
        to leave out of its neighbourhood, where leaving out one paper too many is the safe error.

        Args:
            title: any title.

        Returns:
            The papers, exact matches first (empty for an empty title).
        """
        wanted = normalise_title(title)
        if not wanted:
            return []
        hits = list(self._by_title.get(wanted, []))
        words = sorted({w for w in wanted.split() if w in self._df}, key=lambda w: (self._df[w], w))
        pool = sorted({i for w in words[:self.block_words] for i in self._postings[w]})
        if pool:
            found = process.extract(wanted, [self._titles[i] for i in pool], scorer=fuzz.ratio,
                                    score_cutoff=self.min_title_score, limit=None)
            hits += [pool[index] for _, _, index in found]
        return [self.papers[i] for i in dict.fromkeys(hits)]

    def resolve(self, reference: Any) -> Resolution:
        """Resolve one reference.

        Args:
            reference: a :class:`~surveyalign.documents.references.Reference`.

        Returns:
            Its :class:`Resolution` (``paper_id=None`` with the reason when nothing passes the rule).
        """
        if not normalise_title(reference.title) and not reference.doi and not reference.arxiv_id:
            return Resolution(getattr(reference, "key", ""), None, "unresolved", 0.0,
                              "reference has no title, DOI or arXiv id")
        return _decide(reference, self.candidates(reference), min_title_score=self.min_title_score,
                       year_tolerance=self.year_tolerance)

    def resolve_all(self, references: Iterable[Any]) -> list[Resolution]:
        """Resolve every reference, in order (unresolved ones kept, with their reason).

        Args:
            references: the survey's references.

        Returns:
            One :class:`Resolution` per reference.
        """
        return [self.resolve(ref) for ref in references]


def resolve_by_search(reference: Any, search: Callable[[str], Sequence[Paper]], *,
                      min_title_score: float = DEFAULT_MIN_TITLE_SCORE,
                      year_tolerance: int = DEFAULT_YEAR_TOLERANCE) -> Resolution:
    """Resolve a reference through an API search, checking *every* hit with :func:`same_paper`.

    Args:
        reference: the reference (its title is the query).
        search: e.g. ``SemanticScholarClient(...).search`` or ``lambda q: client.search(q, limit=5)``.
        min_title_score: see :func:`same_paper`.
        year_tolerance: see :func:`same_paper`.

    Returns:
        The :class:`Resolution`; an unresolved one names the best rejected hit's reason.
    """
    if not reference.title:
        return Resolution(getattr(reference, "key", ""), None, "unresolved", 0.0, "reference has no title to search")
    return _decide(reference, list(search(reference.title)), min_title_score=min_title_score,
                   year_tolerance=year_tolerance)


def reason_class(reason: str) -> str:
    """The class of an unresolved reference's reason, so that similar reasons are counted together.

    Args:
        reason: a :attr:`Resolution.reason`, e.g. ``"search failed: GET http://127.0.0.1:9/paper/search ..."``.

    Returns:
        The text before the first colon, digit or parenthesis, e.g. ``"search failed"``.
    """
    return re.split(r"[\d(:]", reason, maxsplit=1)[0].strip()


def resolution_counts(resolutions: Iterable[Resolution]) -> dict[str, Any]:
    """Summarise resolutions: totals, resolved per method, unresolved per reason class.

    Args:
        resolutions: the :class:`Resolution` records of one survey.

    Returns:
        ``{"n": int, "resolved": int, "unresolved": int, "by_method": {method: n},
        "unresolved_reasons": {reason class: n}}`` (see :func:`reason_class`).
    """
    items = list(resolutions)
    by_method = Counter(r.method for r in items if r.resolved)
    reasons = Counter(reason_class(r.reason) for r in items if not r.resolved)
    return {"n": len(items), "resolved": sum(by_method.values()), "unresolved": len(items) - sum(by_method.values()),
            "by_method": dict(sorted(by_method.items())), "unresolved_reasons": dict(sorted(reasons.items()))}

"""Reference resolution: is this candidate the cited paper? (SurveyReview §5.2.1, building R on a graph).

The safe rule, :func:`same_paper`, is the one decision every package uses (knowledge augmentation, the
autoraters' citation checks, PRISM, text fetching):

1. identifiers first: equal DOIs (or equal arXiv ids) -> same paper; two *different* DOIs (or arXiv ids)
   -> not the same paper, whatever the titles say;
2. otherwise the normalised titles (:func:`normalise_title`) must agree with a ``rapidfuzz`` ratio of at
   least ``min_title_score`` (default 92 out of 100), carry the same numbers (``GPT-3`` is not ``GPT-4``)
   and the same negations (``not``, ``no``, ``without``: "X is not all you need" is not "X is all you
   need"), **and** either the years agree within ``year_tolerance`` (default 1), or the first authors'
   surnames agree, or both sides carry an abstract and the abstracts agree (``token_set_ratio`` >=
   :data:`MIN_ABSTRACT_SCORE`; release records of SurveyReview have a title and an abstract only). A title
   match with nothing to confirm it is rejected.

A search's first hit is never taken as the answer: every candidate goes through the rule. :class:`Resolver`
applies it against an in-memory index of graph papers (DOI, arXiv id, exact title, then a fuzzy look-up
restricted to titles sharing a rare word) and keeps every reference, resolved or not, with the reason.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Protocol

from rapidfuzz import fuzz, process

from surveyalign.knowledge.papers import Paper

__all__ = [
    "DEFAULT_MIN_TITLE_SCORE",
    "DEFAULT_YEAR_TOLERANCE",
    "MIN_ABSTRACT_SCORE",
    "MIN_ABSTRACT_WORDS",
    "MatchDecision",
    "Resolution",
    "Resolver",
    "normalise_surname",
    "normalise_title",
    "reason_class",
    "resolution_counts",
    "resolve_by_search",
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
    return _NON_WORD.sub("", normalise_title(name).replace(" ", ""))


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
        reference: a :class:`~surveyalign.knowledge.references.Reference` (or any object with ``title``,
            ``year``, ``doi``, ``arxiv_id`` and ``first_author_surname``; an ``abstract`` attribute, when
            present, can confirm a title match).
        candidate: a :class:`~surveyalign.knowledge.papers.Paper` (or the same shape), e.g. a search hit.
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
            reference: a :class:`~surveyalign.knowledge.references.Reference`.

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

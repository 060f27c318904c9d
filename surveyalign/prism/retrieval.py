"""Prior-work retrieval for PRISM novelty assessment: search, prior-only filter, de-duplication, MMR.

For each query (the paper's title and the reviews' novelty claims) the scholarly client's relevance search
returns candidates; only papers older than the submission are kept (a publication date before the submission
date; with years only, a year before the submission year; undated candidates are dropped and counted); the
paper itself (normalised titles as similar as the knowledge resolver's same-title rule) and duplicates
(same id, DOI or normalised title) are removed; then maximal marginal relevance
(MMR) picks a diverse set of about 30 against the paper's title + abstract on TF-IDF vectors. Results are
cached in a JSON file, so a re-run makes no search call.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rapidfuzz import fuzz
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.metrics.pairwise import cosine_similarity

from surveyalign.calls import stable_hash
from surveyalign.documents import DEFAULT_MIN_TITLE_SCORE, normalise_title
from surveyalign.prism.inputs import Submission
from surveyalign.prism.pipeline import PriorPaper

__all__ = ["PriorWorkSearch", "is_prior", "mmr_select"]


def _tfidf(texts: Sequence[str]):
    """TF-IDF rows of ``texts``; None when they hold no word at all (empty vocabulary)."""
    try:
        return TfidfVectorizer().fit_transform(texts)
    except ValueError:
        return None


def is_prior(candidate: PriorPaper, paper: Submission) -> bool | None:
    """Whether ``candidate`` is older than ``paper``'s submission.

    Returns:
        True / False; None when it cannot be told (no candidate date or year, or no submission date or year).
        Without full dates the rule is by year: strictly earlier years only (same-year papers are not prior).
    """
    if paper.submission_date is not None and candidate.publication_date:
        try:
            return dt.date.fromisoformat(candidate.publication_date[:10]) < paper.submission_date
        except ValueError:
            pass
    if paper.submission_year is None or candidate.year is None:
        return None
    return candidate.year < paper.submission_year


def mmr_select(query: str, texts: Sequence[str], k: int, lambda_: float = 0.7) -> list[int]:
    """Maximal marginal relevance over TF-IDF vectors: indices of ``k`` relevant but mutually diverse texts.

    Args:
        query: what the selection should be relevant to.
        texts: the candidates.
        k: how many to pick (all when fewer).
        lambda_: relevance weight in [0, 1] (1 = plain relevance ranking, 0 = diversity only).

    Returns:
        Indices into ``texts``, in pick order.
    """
    if not texts:
        return []
    vectors = _tfidf([query, *texts])
    if vectors is None:  # no word in any text: keep the search order
        return list(range(min(k, len(texts))))
    rel = cosine_similarity(vectors[0], vectors[1:])[0]
    sim = cosine_similarity(vectors[1:])
    chosen: list[int] = []
    left = list(range(len(texts)))
    while left and len(chosen) < k:
        def gain(i: int) -> float:
            return lambda_ * rel[i] - (1 - lambda_) * max((sim[i][j] for j in chosen), default=0.0)
        best = max(left, key=lambda i: (gain(i), -i))
        chosen.append(best)
        left.remove(best)
    return chosen


class PriorWorkSearch:
    """Novelty retrieval through a scholarly search client (``surveyalign.knowledge`` Semantic Scholar client).

    Args:
        client: anything with ``search(query, limit=...) -> list`` of records carrying ``id``, ``title``,
            ``year``, ``abstract``, ``doi`` (and ``publication_date`` when the client keeps it).
        candidates: how many prior papers to keep after MMR (PRISM: about 30).
        per_query: search results asked for per query (1-100).
        mmr_lambda: MMR relevance weight.
        cache_path: JSON file caching the selection per (paper, queries); None: no cache.

    Attributes:
        stats: counts of the last :meth:`retrieve`: ``searched``, ``not_prior``, ``undated``, ``duplicates``,
            ``self_matches``, ``kept``, ``cached`` (bool).
    """

    def __init__(self, client: Any, *, candidates: int = 30, per_query: int = 20, mmr_lambda: float = 0.7,
                 cache_path: str | Path | None = None) -> None:
        self.client = client
        self.candidates = candidates
        self.per_query = per_query
        self.mmr_lambda = mmr_lambda
        self.cache_path = Path(cache_path) if cache_path else None
        self.stats: dict[str, Any] = {}

    def _load_cache(self) -> dict[str, Any]:
        if self.cache_path is None or not self.cache_path.exists():
            return {}
        try:
            return json.loads(self.cache_path.read_text())
        except json.JSONDecodeError as err:
            raise ValueError(f"{self.cache_path}: retrieval cache is not valid JSON ({err.msg})") from None

    def retrieve(self, paper: Submission, queries: Sequence[str]) -> list[PriorPaper]:
        """Prior papers for ``paper``: searched, filtered to older work, de-duplicated, MMR-diversified.

        Args:
            paper: the reviewed paper (its submission date / year bounds what counts as prior).
            queries: search queries (title first, then claims); blank and repeated ones are skipped.

        Returns:
            Up to ``candidates`` :class:`~surveyalign.prism.pipeline.PriorPaper` in MMR order.

        Raises:
            Whatever the client raises for a request that failed for good (an HTTP error after retries;
            :class:`~surveyalign.knowledge.UnreachableError` when the API cannot be reached).
        """
        queries = list(dict.fromkeys(q.strip()[:300] for q in queries if q and q.strip()))
        key = stable_hash({"paper": paper.paper_id, "title": paper.title, "date": str(paper.submission_date),
                           "year": paper.submission_year, "queries": queries, "k": self.candidates,
                           "per_query": self.per_query, "lambda": self.mmr_lambda})
        cache = self._load_cache()
        if key in cache:
            self.stats = {**cache[key]["stats"], "cached": True}
            return [PriorPaper(**p) for p in cache[key]["priors"]]
        stats = dict.fromkeys(("searched", "not_prior", "undated", "duplicates", "self_matches", "kept"), 0)
        seen: set[str] = set()
        pool: list[PriorPaper] = []
        own = normalise_title(paper.title)
        for query in queries:
            for rec in self.client.search(query, limit=self.per_query):
                stats["searched"] += 1
                prior = PriorPaper(str(rec.id), rec.title or "", rec.abstract or "", rec.year,
                                   getattr(rec, "publication_date", None))
                title = normalise_title(prior.title)
                if own and title and fuzz.ratio(own, title) >= DEFAULT_MIN_TITLE_SCORE:
                    stats["self_matches"] += 1
                    continue
                ids = {f"id:{prior.paper_id}", f"title:{title}"} | ({f"doi:{rec.doi}"} if rec.doi else set())
                if ids & seen:
                    stats["duplicates"] += 1
                    continue
                seen |= ids
                verdict = is_prior(prior, paper)
                if verdict is None:
                    stats["undated"] += 1
                elif not verdict:
                    stats["not_prior"] += 1
                else:
                    pool.append(prior)
        picked = mmr_select(f"{paper.title} {paper.abstract}", [f"{p.title} {p.abstract}" for p in pool],
                            self.candidates, self.mmr_lambda)
        priors = [pool[i] for i in picked]
        stats["kept"] = len(priors)
        stats["without_abstract"] = sum(not p.abstract.strip() for p in priors)  # judged on their title
        self.stats = {**stats, "cached": False}
        if self.cache_path is not None:
            cache[key] = {"stats": stats, "priors": [p.__dict__ for p in priors]}
            self.cache_path.parent.mkdir(parents=True, exist_ok=True)
            self.cache_path.write_text(json.dumps(cache, indent=1, ensure_ascii=False))
        return priors

    def relevance(self, claim: str, priors: Sequence[PriorPaper]) -> list[float]:
        """TF-IDF cosine similarity (in [0, 1]) of ``claim`` to each prior paper's title + abstract."""
        if not priors:
            return []
        vectors = _tfidf([claim, *(f"{p.title} {p.abstract}" for p in priors)])
        if vectors is None:
            return [0.0] * len(priors)
        return [float(x) for x in cosine_similarity(vectors[0], vectors[1:])[0]]

"""Semantic Scholar and OpenAlex clients returning :class:`~surveyalign.documents.papers.Paper` records.

Both sit on :class:`~surveyalign.calls.PoliteClient` (disk cache, rate limit, Retry-After-aware
retries) and share one small interface (:class:`ScholarlyClient`): ``paper(id)``, ``papers(ids)`` (the
documented batch endpoints; dangling ids come back as ``None``), ``search(query, limit)`` (candidates only:
deciding which one, if any, is the cited paper is :func:`surveyalign.documents.same_paper`'s job),
``references(id)`` and ``citations(id)``. Keys come from the environment only: ``S2_API_KEY`` (sent as the
``x-api-key`` header) and ``OPENALEX_API_KEY`` (the ``api_key`` parameter); ``OPENALEX_MAILTO`` joins
OpenAlex's polite pool.

A record whose reference list came back empty although the API reports a reference count keeps that count
(``Paper.reference_count``), so :attr:`Paper.references_status` says ``"incomplete"``, never "0 references".
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any, Protocol

from surveyalign.calls import PoliteClient
from surveyalign.documents import Paper, normalise_doi

__all__ = [
    "OPENALEX_URL",
    "S2_FIELDS",
    "S2_URL",
    "OpenAlexClient",
    "ScholarlyClient",
    "SemanticScholarClient",
    "openalex_work_to_paper",
    "s2_paper_to_paper",
]

#: Default API roots (override ``base_url`` for mirrors and tests).
S2_URL = "https://api.semanticscholar.org/graph/v1"
OPENALEX_URL = "https://api.openalex.org"

#: Fields asked of Semantic Scholar for every paper.
S2_FIELDS = ("paperId,externalIds,title,year,citationCount,referenceCount,abstract,authors,publicationDate")
_S2_BATCH = 500  # documented maximum ids per POST /paper/batch
_OPENALEX_BATCH = 50  # ids OR-ed in one filter (the API allows up to 100)


class ScholarlyClient(Protocol):
    """What the graph fetcher and the resolver need of a scholarly API client (both clients below have it)."""

    def paper(self, paper_id: str, *, with_references: bool = False) -> Paper:
        """One paper by id; raises ``NotFoundError`` for an unknown id."""
        ...

    def papers(self, paper_ids: list[str]) -> list[Paper | None]:
        """Many papers by id, aligned with ``paper_ids`` (``None`` for an unknown id)."""
        ...

    def search(self, query: str, *, limit: int = 10) -> list[Paper]:
        """Up to ``limit`` candidates for a free-text query (to be checked with ``same_paper``)."""
        ...

    def references(self, paper_id: str, *, limit: int = 1000) -> list[Paper]:
        """Up to ``limit`` papers cited by ``paper_id``."""
        ...

    def citations(self, paper_id: str, *, limit: int = 1000) -> list[Paper]:
        """Up to ``limit`` papers citing ``paper_id``."""
        ...


def s2_paper_to_paper(data: dict[str, Any]) -> Paper:
    """Convert one Semantic Scholar paper object (Graph API shape) to a :class:`Paper`.

    Args:
        data: ``{"paperId", "externalIds": {"DOI", "ArXiv", ...}, "title", "year", "citationCount",
            "referenceCount", "abstract", "authors": [{"name"}], "references": [{"paperId"}], ...}``.

    Returns:
        The record (``id`` = ``paperId``; reference / citing ids only when the object lists them).

    Raises:
        ValueError: the object has no ``paperId``.
    """
    if not data.get("paperId"):
        raise ValueError(f"Semantic Scholar paper without paperId: {str(data)[:120]}")
    external = data.get("externalIds") or {}
    return Paper(
        id=data["paperId"], title=data.get("title") or "", year=data.get("year"),
        citation_count=data.get("citationCount"), reference_count=data.get("referenceCount"),
        abstract=data.get("abstract") or "", authors=[a.get("name") or "" for a in data.get("authors") or []],
        doi=external.get("DOI"), s2_id=data["paperId"], arxiv_id=external.get("ArXiv"),
        reference_ids=[(ref or {}).get("paperId") or "" for ref in data.get("references") or []],
        citing_ids=[(cit or {}).get("paperId") or "" for cit in data.get("citations") or []],
        source="semanticscholar",
    )


def _s2_id_key(paper_id: str) -> str:
    """A requested Semantic Scholar id in the form :func:`_s2_keys` indexes ("doi:10.1/x", "<40 hex>")."""
    value = paper_id.strip()
    head, _, rest = value.partition(":")
    if rest and head.lower() in ("doi", "arxiv", "corpusid", "pmid", "pmcid", "mag", "acl", "url"):
        return f"{head.lower()}:{rest.strip().lower()}"
    return value.lower()


def _s2_keys(item: dict[str, Any]) -> list[str]:
    """Every id under which a batch answer's entry may have been asked for."""
    keys = [str(item["paperId"]).lower()]
    for name, value in (item.get("externalIds") or {}).items():
        if value is not None:
            keys.append(f"{name.lower()}:{str(value).strip().lower()}")
    return keys


def _short_openalex(value: str | None) -> str:
    return (value or "").rsplit("/", 1)[-1]


def _abstract(inverted: dict[str, list[int]] | None) -> str:
    """Rebuild an abstract from OpenAlex's ``abstract_inverted_index`` (word -> positions)."""
    if not inverted:
        return ""
    slots = sorted((pos, word) for word, positions in inverted.items() for pos in positions)
    return " ".join(word for _, word in slots)


def openalex_work_to_paper(work: dict[str, Any]) -> Paper:
    """Convert one OpenAlex work object to a :class:`Paper`.

    Args:
        work: ``{"id": "https://openalex.org/W..", "doi", "title" / "display_name", "publication_year",
            "cited_by_count", "referenced_works": [...], "referenced_works_count", "abstract_inverted_index",
            "authorships": [{"author": {"display_name"}}], "ids": {...}}``.

    Returns:
        The record (``id`` = the short ``W...`` id; ``reference_ids`` = short ids of ``referenced_works``).

    Raises:
        ValueError: the work has no ``id``.
    """
    short = _short_openalex(work.get("id"))
    if not short:
        raise ValueError(f"OpenAlex work without id: {str(work)[:120]}")
    ids = work.get("ids") or {}
    arxiv = next((loc.get("landing_page_url") for loc in work.get("locations") or []
                  if "arxiv.org" in (loc.get("landing_page_url") or "")), None)
    return Paper(
        id=short, title=work.get("title") or work.get("display_name") or "", year=work.get("publication_year"),
        citation_count=work.get("cited_by_count"), reference_count=work.get("referenced_works_count"),
        abstract=_abstract(work.get("abstract_inverted_index")),
        authors=[(a.get("author") or {}).get("display_name") or "" for a in work.get("authorships") or []],
        doi=work.get("doi") or ids.get("doi"), openalex_id=short, arxiv_id=arxiv,
        reference_ids=[_short_openalex(ref) for ref in work.get("referenced_works") or []],
        source="openalex",
    )


def _chunks(items: list[str], size: int) -> Iterable[list[str]]:
    for start in range(0, len(items), size):
        yield items[start:start + size]


class SemanticScholarClient:
    """Semantic Scholar Graph API client (paper, batch, search, references, citations).

    Args:
        base_url: the Graph API root (default :data:`S2_URL`).
        cache_dir: on-disk HTTP cache folder (``None``: no cache).
        requests_per_second: network rate (1/s is the documented rate with a key; keep it low without one).
        **http: other :class:`PoliteClient` options (``max_attempts``, ``backoff_initial``, ``timeout``...).
    """

    def __init__(self, base_url: str = S2_URL, *, cache_dir: str | os.PathLike | None = None,
                 requests_per_second: float = 1.0, **http: Any) -> None:
        self.http = PoliteClient(base_url, cache_dir=cache_dir, requests_per_second=requests_per_second,
                                 key_headers={"x-api-key": "S2_API_KEY"}, **http)
        #: ids a batch answer left out (its length differed from the ids asked), counted as unresolved.
        self.n_batch_missing = 0
        #: one line per batch answer whose length differed from the ids asked.
        self.batch_problems: list[str] = []

    def paper(self, paper_id: str, *, with_references: bool = False) -> Paper:
        """One paper by id (``"<40 hex>"``, ``"DOI:10..."``, ``"ARXIV:2106.01234"``, ``"CorpusId:123"``).

        Args:
            paper_id: any id form the API accepts.
            with_references: also ask for the ids of its references (``references.paperId``).

        Returns:
            The :class:`Paper`.

        Raises:
            NotFoundError: the API does not know the id (404).
            HTTPStatusError: the request failed for good.
        """
        fields = S2_FIELDS + (",references.paperId" if with_references else "")
        return s2_paper_to_paper(self.http.get_json(f"/paper/{paper_id}", {"fields": fields}))

    def papers(self, paper_ids: list[str]) -> list[Paper | None]:
        """Many papers through ``POST /paper/batch`` (500 ids a call), aligned with ``paper_ids``.

        Args:
            paper_ids: ids in any accepted form.

        Returns:
            One entry per id: the :class:`Paper`, or ``None`` for an id the API does not know (dangling). An
            answer whose length differs from the ids asked is mapped back by identifier (``paperId``,
            ``externalIds``); the ids it left out are ``None``, counted in :attr:`n_batch_missing` and described
            in :attr:`batch_problems`.
        """
        out: list[Paper | None] = []
        for chunk in _chunks(list(paper_ids), _S2_BATCH):
            answer = self.http.post_json("/paper/batch", {"ids": chunk}, {"fields": S2_FIELDS})
            items = answer if isinstance(answer, list) else []
            if len(items) == len(chunk):  # the documented contract: one entry (or null) per id, in order
                out.extend(s2_paper_to_paper(item) if item else None for item in items)
                continue
            # a short (or long) answer: map entries back to the ids asked by their identifiers, never by position
            found: dict[str, Paper] = {}
            for item in items:
                if isinstance(item, dict) and item.get("paperId"):
                    paper = s2_paper_to_paper(item)
                    for key in _s2_keys(item):
                        found.setdefault(key, paper)
            aligned = [found.get(_s2_id_key(pid)) for pid in chunk]
            self.n_batch_missing += sum(paper is None for paper in aligned)
            self.batch_problems.append(f"POST /paper/batch answered {len(items)} entries for {len(chunk)} ids; "
                                       f"{sum(p is None for p in aligned)} id(s) left unresolved")
            out.extend(aligned)
        return out

    def search(self, query: str, *, limit: int = 10) -> list[Paper]:
        """Relevance search (``GET /paper/search``): candidates to check, never an answer by themselves.

        Args:
            query: free text, usually a reference's title.
            limit: most candidates to return (1-100).

        Returns:
            The candidates in the API's order.
        """
        answer = self.http.get_json("/paper/search", {"query": query, "limit": limit, "fields": S2_FIELDS})
        return [s2_paper_to_paper(item) for item in answer.get("data") or [] if item.get("paperId")]

    def _edges(self, paper_id: str, kind: str, inner: str, limit: int) -> list[Paper]:
        papers: list[Paper] = []
        offset: int | None = 0
        while offset is not None and len(papers) < limit:
            page = self.http.get_json(f"/paper/{paper_id}/{kind}",
                                      {"fields": S2_FIELDS, "offset": offset, "limit": min(1000, limit)})
            for item in page.get("data") or []:
                node = item.get(inner) or {}
                if node.get("paperId"):
                    papers.append(s2_paper_to_paper(node))
            offset = page.get("next")
        return papers[:limit]

    def references(self, paper_id: str, *, limit: int = 1000) -> list[Paper]:
        """Papers ``paper_id`` cites (``GET /paper/{id}/references``, paged); unresolved entries are skipped.

        Args:
            paper_id: the citing paper.
            limit: most references to return.

        Returns:
            The cited papers (compare their number with ``paper(id).reference_count``).
        """
        return self._edges(paper_id, "references", "citedPaper", limit)

    def citations(self, paper_id: str, *, limit: int = 1000) -> list[Paper]:
        """Papers citing ``paper_id`` (``GET /paper/{id}/citations``, paged).

        Args:
            paper_id: the cited paper.
            limit: most citing papers to return.

        Returns:
            The citing papers.
        """
        return self._edges(paper_id, "citations", "citingPaper", limit)


class OpenAlexClient:
    """OpenAlex works client (work, OR-filter batch, search, referenced works, citing works).

    Args:
        base_url: the API root (default :data:`OPENALEX_URL`).
        cache_dir: on-disk HTTP cache folder (``None``: no cache).
        requests_per_second: network rate (OpenAlex allows 10/s; the default stays well below).
        **http: other :class:`PoliteClient` options.
    """

    def __init__(self, base_url: str = OPENALEX_URL, *, cache_dir: str | os.PathLike | None = None,
                 requests_per_second: float = 5.0, **http: Any) -> None:
        self.http = PoliteClient(base_url, cache_dir=cache_dir, requests_per_second=requests_per_second,
                                 key_params={"api_key": "OPENALEX_API_KEY"}, **http)
        self._mailto = os.environ.get("OPENALEX_MAILTO") or None

    def _get(self, path: str, params: dict[str, Any] | None = None) -> Any:
        return self.http.get_json(path, {**(params or {}), "mailto": self._mailto})

    def paper(self, paper_id: str, *, with_references: bool = False) -> Paper:
        """One work by id (``"W2741809807"``, ``"doi:10..."``, ``"https://doi.org/10..."``).

        Args:
            paper_id: an id OpenAlex accepts.
            with_references: ignored (a work always lists its ``referenced_works``).

        Returns:
            The :class:`Paper`.

        Raises:
            NotFoundError: unknown id (404).
            HTTPStatusError: the request failed for good.
        """
        return openalex_work_to_paper(self._get(f"/works/{paper_id}"))

    def papers(self, paper_ids: list[str]) -> list[Paper | None]:
        """Many works through OR-ed ``openalex`` / ``doi`` filters (50 a call), aligned with ``paper_ids``.

        Args:
            paper_ids: short ``W...`` ids or DOIs (``"10.1038/..."``, ``"doi:10..."``).

        Returns:
            One entry per id: the :class:`Paper`, or ``None`` when OpenAlex has no such work.
        """
        found: dict[str, Paper] = {}
        wids = [pid for pid in paper_ids if _short_openalex(pid).upper().startswith("W")]
        dois = [pid for pid in paper_ids if pid not in wids]
        for name, ids in (("openalex", [_short_openalex(w) for w in wids]), ("doi", dois)):
            for chunk in _chunks(ids, _OPENALEX_BATCH):
                page = self._get("/works", {"filter": f"{name}:" + "|".join(chunk), "per-page": _OPENALEX_BATCH})
                for work in page.get("results") or []:
                    paper = openalex_work_to_paper(work)
                    found[paper.id.upper()] = paper
                    if paper.doi:
                        found[paper.doi] = paper
        out: list[Paper | None] = []
        for pid in paper_ids:
            short = _short_openalex(pid)
            key = short.upper() if pid in wids else (normalise_doi(pid) or pid.lower())
            out.append(found.get(key))
        return out

    def search(self, query: str, *, limit: int = 10) -> list[Paper]:
        """Relevance search over works (``GET /works?search=``): candidates only.

        Args:
            query: free text, usually a reference's title.
            limit: most candidates (1-200).

        Returns:
            The candidates in the API's order.
        """
        page = self._get("/works", {"search": query, "per-page": limit})
        return [openalex_work_to_paper(work) for work in page.get("results") or []]

    def references(self, paper_id: str, *, limit: int = 1000) -> list[Paper]:
        """The works ``paper_id`` cites (its ``referenced_works``, fetched in batches; dangling ids skipped).

        Args:
            paper_id: the citing work.
            limit: most references to return.

        Returns:
            The cited works found.
        """
        work = self.paper(paper_id)
        return [p for p in self.papers(work.reference_ids[:limit]) if p is not None]

    def citations(self, paper_id: str, *, limit: int = 1000) -> list[Paper]:
        """Works citing ``paper_id`` (``filter=cites:W...``, cursor paging).

        Args:
            paper_id: the cited work (short ``W...`` id).
            limit: most citing works to return.

        Returns:
            The citing works.
        """
        papers: list[Paper] = []
        cursor: str | None = "*"
        while cursor and len(papers) < limit:
            page = self._get("/works", {"filter": f"cites:{_short_openalex(paper_id)}", "per-page": 200,
                                        "cursor": cursor})
            results = page.get("results") or []
            papers.extend(openalex_work_to_paper(work) for work in results)
            cursor = (page.get("meta") or {}).get("next_cursor") if results else None
        return papers[:limit]


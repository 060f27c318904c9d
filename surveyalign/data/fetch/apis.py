"""Clients of the two services survey texts come from (SurveyReview §4, App. A: F1000Research, PeerJ, OpenReview).

* Europe PMC REST (``/search`` with ``format=json&resultType=core``, ``/{PMCID}/fullTextXML``): metadata of
  F1000Research and PeerJ articles (DOI, PMCID, title, abstract, authors, year) and their JATS XML.
* OpenReview API 2 and API 1 (``/notes/search?term=...``, ``/pdf?id=FORUM``): submissions (forum id, title,
  abstract, authors, dates; both note shapes) and their PDFs. Older venues are served by API 1 only.

Both go through :class:`surveyalign.calls.PoliteClient` (disk cache, rate limit, Retry-After and
jittered backoff); the base URLs are arguments so tests point them at a server on 127.0.0.1.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from typing import Any

import lxml.html

from surveyalign.calls import PoliteClient
from surveyalign.documents import Paper, normalise_doi

#: DOI prefixes of the journals each release source comes from.
SOURCE_DOI_PREFIXES = {"f1000": ("10.12688/f1000research.",), "moprd": ("10.7717/peerj.", "10.7717/peerj-cs.")}

_F1000_VERSION_RE = re.compile(r"^10\.12688/f1000research\.\d+\.(\d+)$")
_QUERY_UNSAFE_RE = re.compile(r'["()\[\]{}:^~*?\\/]+')


@dataclass
class Candidate:
    """One search hit, with what fetching it needs.

    Attributes:
        paper: the hit as a :class:`~surveyalign.documents.papers.Paper` (what the matching rule reads).
        service: "europepmc" or "openreview".
        pmcid: PubMed Central id ("PMC123"), None when absent (then Europe PMC has no full text to give).
        forum: OpenReview forum id, None for Europe PMC hits.
        version: article version the DOI names (F1000Research "10.12688/f1000research.N.V" -> V), else None.
        journal: journal title as the service gives it ("" when absent).
        base_url: root of the service that returned the hit (where its text is fetched from).
    """

    paper: Paper
    service: str
    pmcid: str | None = None
    forum: str | None = None
    version: int | None = None
    journal: str = ""
    base_url: str = ""

    def to_dict(self) -> dict[str, Any]:
        """Identifiers of the hit for the fetch report (no abstract)."""
        return {"service": self.service, "id": self.paper.id, "doi": self.paper.doi, "pmcid": self.pmcid,
                "forum": self.forum, "version": self.version, "title": self.paper.title,
                "year": self.paper.year, "journal": self.journal, "base_url": self.base_url}


def doi_version(doi: str | None) -> int | None:
    """Version number an F1000Research DOI ends with ("10.12688/f1000research.11029.2" -> 2), else None."""
    m = _F1000_VERSION_RE.match(doi or "")
    return int(m.group(1)) if m else None


def _plain(html: str | None) -> str:
    """Text of an HTML fragment (Europe PMC abstracts carry <h4>, <b>, <i> tags), whitespace collapsed."""
    if not html or not html.strip():
        return ""
    return " ".join(lxml.html.fragment_fromstring(html, create_parent="div").text_content().split())


def _year(value: Any) -> int | None:
    try:
        return int(str(value)[:4])
    except (TypeError, ValueError):
        return None


class EuropePMC:
    """Europe PMC REST search and JATS full text (F1000Research and PeerJ articles are in PMC).

    Args:
        http: the polite client, its ``base_url`` the REST root
            (:data:`~surveyalign.data.fetch.urls.EUROPEPMC_URL`).
        page_size: hits asked for per search (1-1000).
    """

    def __init__(self, http: PoliteClient, *, page_size: int = 10) -> None:
        self.http = http
        self.page_size = page_size

    @staticmethod
    def title_query(title: str, *, phrase: bool = True) -> str:
        """A title query with the characters of the query syntax removed.

        Args:
            title: the paper title.
            phrase: ``TITLE:"w1 w2 ..."`` (the words in order) when True, else ``TITLE:(w1 w2 ...)`` (every word,
                any order: finds a title whose punctuation or small words changed between versions).

        Returns:
            The Europe PMC query.
        """
        words = " ".join(_QUERY_UNSAFE_RE.sub(" ", title).split())
        return f'TITLE:"{words}"' if phrase else f"TITLE:({words})"

    def search(self, query: str) -> list[Candidate]:
        """Run one Europe PMC query (e.g. :meth:`title_query` or ``DOI:"10.7717/peerj.8120"``).

        Args:
            query: Europe PMC query syntax.

        Returns:
            The hits in the service's order (may be empty); never a decision.

        Raises:
            surveyalign.calls.HTTPStatusError: the service failed after its retries.
            ValueError: the answer is not JSON or not shaped like a Europe PMC result list.
        """
        data = self.http.get_json("/search", params={"query": query, "format": "json", "resultType": "core",
                                                     "pageSize": self.page_size})
        results = (data.get("resultList") or {}).get("result") if isinstance(data, dict) else None
        if not isinstance(results, list):
            raise ValueError(f"Europe PMC search {query!r}: the answer has no resultList.result list")  # noqa: TRY004
        return [self._candidate(r) for r in results if isinstance(r, dict) and (r.get("title") or r.get("doi"))]

    def _candidate(self, r: dict[str, Any]) -> Candidate:
        authors = [a.get("fullName") or " ".join(x for x in (a.get("firstName"), a.get("lastName")) if x)
                   for a in ((r.get("authorList") or {}).get("author") or []) if isinstance(a, dict)]
        if not authors and r.get("authorString"):
            authors = [a.strip() for a in str(r["authorString"]).rstrip(".").split(",") if a.strip()]
        doi = normalise_doi(r.get("doi"))
        pmcid = r.get("pmcid") or None
        journal = ((r.get("journalInfo") or {}).get("journal") or {}).get("title") or r.get("journalTitle") or ""
        paper = Paper(id=pmcid or doi or f"{r.get('source', 'EPMC')}:{r.get('id')}", title=_plain(r.get("title")),
                      year=_year(r.get("pubYear")), abstract=_plain(r.get("abstractText")),
                      authors=[a for a in authors if a], doi=doi, source="europepmc")
        return Candidate(paper=paper, service="europepmc", pmcid=pmcid, version=doi_version(doi), journal=journal,
                         base_url=self.http.base_url)

    def full_text_xml(self, pmcid: str) -> bytes:
        """The article's JATS XML (``/{PMCID}/fullTextXML``).

        Args:
            pmcid: "PMC" followed by digits.

        Returns:
            The XML bytes.

        Raises:
            surveyalign.calls.NotFoundError: Europe PMC holds no full text for it (404).
            surveyalign.calls.HTTPStatusError: the service failed after its retries.
        """
        return self.http.request("GET", f"/{pmcid}/fullTextXML").content


def _field(content: dict[str, Any], name: str) -> Any:
    """A note content field in either API shape: API 2 wraps values as ``{"value": ...}``."""
    value = content.get(name)
    return value.get("value") if isinstance(value, dict) else value


class OpenReview:
    """OpenReview note search and submission PDFs (API 2 and API 1 note shapes).

    Args:
        http: the polite client, its ``base_url`` the API root
            (:data:`~surveyalign.data.fetch.urls.OPENREVIEW_URL` or :data:`~surveyalign.data.fetch.urls.OPENREVIEW_V1_URL`).
        limit: hits asked for per search.
    """

    def __init__(self, http: PoliteClient, *, limit: int = 10) -> None:
        self.http = http
        self.limit = limit

    def search(self, title: str) -> list[Candidate]:
        """Full-text search of submissions (``/notes/search``, ``source=forum``) for a title.

        Args:
            title: the paper title.

        Returns:
            The hits that are forum (submission) notes, in the service's order; never a decision.

        Raises:
            surveyalign.calls.HTTPStatusError: the service failed after its retries.
            ValueError: the answer is not JSON or has no ``notes`` list.
        """
        data = self.http.get_json("/notes/search", params={"term": title, "type": "terms", "content": "all",
                                                           "group": "all", "source": "forum", "limit": self.limit})
        notes = data.get("notes") if isinstance(data, dict) else None
        if not isinstance(notes, list):
            raise ValueError(f"OpenReview search {title!r}: the answer has no notes list")  # noqa: TRY004
        out = []
        for note in notes:
            if not isinstance(note, dict) or not isinstance(note.get("content"), dict) or not note.get("id"):
                continue
            if note.get("forum") and note["forum"] != note["id"]:
                continue  # a review or comment, not the submission
            content = note["content"]
            millis = note.get("pdate") or note.get("odate") or note.get("cdate") or note.get("tcdate")
            year = dt.datetime.fromtimestamp(millis / 1000, dt.UTC).year if isinstance(millis, int) else None
            authors = _field(content, "authors") or []
            paper = Paper(id=note["id"], title=str(_field(content, "title") or ""), year=year,
                          abstract=" ".join(str(_field(content, "abstract") or "").split()),
                          authors=[str(a) for a in authors if a] if isinstance(authors, list) else [],
                          source="openreview")
            out.append(Candidate(paper=paper, service="openreview", forum=note["id"],
                                 journal=str(_field(content, "venue") or ""), base_url=self.http.base_url))
        return out

    def pdf(self, forum: str) -> bytes:
        """The submission's PDF (``/pdf?id=FORUM``: the latest revision).

        Args:
            forum: the forum id.

        Returns:
            The PDF bytes.

        Raises:
            ValueError: the answer is not a PDF.
            surveyalign.calls.NotFoundError: no PDF for it (404).
            surveyalign.calls.HTTPStatusError: the service failed after its retries.
        """
        body = self.http.request("GET", "/pdf", params={"id": forum}).content
        if not body.startswith(b"%PDF"):
            raise ValueError(f"OpenReview /pdf?id={forum}: the answer is not a PDF ({body[:40]!r})")
        return body

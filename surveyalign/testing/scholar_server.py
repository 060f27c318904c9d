"""A fake Semantic Scholar + OpenAlex server on 127.0.0.1, answering in the real APIs' shapes (for tests).

:class:`FakeScholarServer` serves a fixed set of :class:`~surveyalign.documents.papers.Paper` records through
the endpoints the clients use, shaped after the public API documentation:

- Semantic Scholar Graph API under ``/graph/v1``: ``GET /paper/{id}`` (ids: paperId, ``DOI:``,
  ``ARXIV:``), ``POST /paper/batch`` (``null`` for unknown ids), ``GET /paper/search``,
  ``GET /paper/{id}/references`` and ``/citations`` (``{"offset", "next", "data": [{"citedPaper"}]}``);
- OpenAlex under ``/``: ``GET /works/{id}``, ``GET /works?filter=openalex:W1|W2`` / ``doi:...`` /
  ``cites:W1`` and ``GET /works?search=...`` (``{"meta": {...}, "results": [...]}``).

Unknown ids answer 404 with an error body, like the real services. It can be told to fail: the first
``fail_first`` requests with ``fail_status`` (and a ``Retry-After`` header), or every request with
``always_status``. Every request is logged (method, path, query, headers, arrival time).

Example::

    with FakeScholarServer(papers, fail_first=1, retry_after=1) as server:
        client = SemanticScholarClient(server.s2_url, requests_per_second=0)
        client.paper(papers[0].id)
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self
from urllib.parse import parse_qs, unquote, urlsplit

from surveyalign.documents import Paper

__all__ = ["FakeScholarServer", "RequestLog"]


@dataclass
class RequestLog:
    """One request the fake server received.

    Attributes:
        method: ``"GET"`` / ``"POST"``.
        path: URL path (percent-decoded).
        query: query parameters (first value of each).
        headers: request headers with lower-case names.
        body: the decoded JSON body, the raw bytes of another body (multipart), or ``None``.
        at: ``time.monotonic()`` on arrival.
    """

    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: Any
    at: float


def _decode_body(raw: bytes, content_type: str) -> Any:
    if not raw:
        return None
    if "json" in content_type:
        return json.loads(raw)
    return raw


def _s2_shape(paper: Paper, *, with_lists: bool) -> dict[str, Any]:
    out: dict[str, Any] = {
        "paperId": paper.s2_id or paper.id,
        "externalIds": {k: v for k, v in (("DOI", paper.doi), ("ArXiv", paper.arxiv_id)) if v},
        "title": paper.title or None, "year": paper.year, "citationCount": paper.citation_count,
        "referenceCount": paper.reference_count, "abstract": paper.abstract or None,
        "authors": [{"authorId": str(i), "name": name} for i, name in enumerate(paper.authors)],
    }
    if with_lists:
        out["references"] = [{"paperId": ref or None} for ref in paper.reference_ids]
    return out


def _openalex_shape(paper: Paper) -> dict[str, Any]:
    words: dict[str, list[int]] = {}
    for pos, word in enumerate(paper.abstract.split()):
        words.setdefault(word, []).append(pos)
    return {
        "id": f"https://openalex.org/{paper.openalex_id or paper.id}",
        "doi": f"https://doi.org/{paper.doi}" if paper.doi else None,
        "title": paper.title or None, "display_name": paper.title or None,
        "publication_year": paper.year, "cited_by_count": paper.citation_count,
        "referenced_works": [f"https://openalex.org/{ref}" for ref in paper.reference_ids if ref],
        "referenced_works_count": paper.reference_count,
        "abstract_inverted_index": words or None,
        "authorships": [{"author": {"display_name": name}} for name in paper.authors],
        "ids": {"openalex": f"https://openalex.org/{paper.id}"},
    }


class FakeScholarServer:
    """Serve ``papers`` through fake Semantic Scholar and OpenAlex endpoints in a background thread.

    Args:
        papers: the records to serve (``Paper.id`` is both the S2 ``paperId`` and the OpenAlex id unless
            ``s2_id`` / ``openalex_id`` are set).
        fail_first: number of initial requests answered with ``fail_status``.
        fail_status: status of those failures (default 429).
        retry_after: ``Retry-After`` header value sent with them (``None``: no header).
        always_status: when set, every request gets this status (e.g. 503).
        grobid_tei: when set, ``POST /api/processReferences`` (GROBID) answers this TEI document.
        batch_drop: ids that ``POST /paper/batch`` leaves out of its answer altogether (no ``null`` in their
            place: a short answer, as the service has been seen to give).
        port: port on 127.0.0.1; 0 picks a free one.

    Attributes:
        requests: every :class:`RequestLog`, in arrival order.
        base_url: ``http://127.0.0.1:PORT`` (the OpenAlex root) once started.
        s2_url: ``base_url + "/graph/v1"`` (the Semantic Scholar Graph API root).
    """

    def __init__(self, papers: list[Paper], *, fail_first: int = 0, fail_status: int = 429,
                 retry_after: str | float | None = None, always_status: int | None = None,
                 grobid_tei: str | None = None, batch_drop: set[str] | None = None, port: int = 0) -> None:
        self.papers = list(papers)
        self.batch_drop = {i.lower() for i in batch_drop or ()}
        self.fail_first = fail_first
        self.fail_status = fail_status
        self.retry_after = retry_after
        self.always_status = always_status
        self.grobid_tei = grobid_tei
        self.requests: list[RequestLog] = []
        self._lock = threading.Lock()
        self._index: dict[str, Paper] = {}
        for paper in self.papers:
            for key in (paper.id, paper.s2_id, paper.openalex_id, paper.doi and f"doi:{paper.doi}",
                        paper.arxiv_id and f"arxiv:{paper.arxiv_id}"):
                if key:
                    self._index[key.lower()] = paper
        self._citing: dict[str, list[Paper]] = {}
        for paper in self.papers:
            for ref in paper.reference_ids:
                if ref:
                    self._citing.setdefault(ref.lower(), []).append(paper)
        self._httpd = ThreadingHTTPServer(("127.0.0.1", port), self._handler_class())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="fake-scholar", daemon=True)

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT``: the OpenAlex root (``/works``) and the GROBID root (``/api``)."""
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    @property
    def s2_url(self) -> str:
        """The Semantic Scholar Graph API root (``base_url + "/graph/v1"``)."""
        return self.base_url + "/graph/v1"

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def lookup(self, paper_id: str) -> Paper | None:
        """The served paper with this id (any id form), or ``None``."""
        key = unquote(paper_id).strip().lower()
        key = key.replace("https://openalex.org/", "").replace("https://doi.org/", "doi:")
        return self._index.get(key)

    def _route(self, log: RequestLog) -> tuple[int, Any]:
        path = log.path
        if path.startswith("/graph/v1/paper"):
            return self._route_s2(path[len("/graph/v1/paper"):], log)
        if path.startswith("/works"):
            return self._route_openalex(path[len("/works"):], log)
        return 404, {"error": f"no route {path}"}

    def _route_s2(self, rest: str, log: RequestLog) -> tuple[int, Any]:
        with_lists = "references" in log.query.get("fields", "")
        if rest == "/batch" and log.method == "POST":
            ids = (log.body or {}).get("ids") or []
            return 200, [(_s2_shape(p, with_lists=with_lists) if (p := self.lookup(i)) else None) for i in ids
                         if i.lower() not in self.batch_drop]
        if rest == "/search":
            words = set(log.query.get("query", "").lower().split())
            hits = [p for p in self.papers if words & set(p.title.lower().split())]
            hits.sort(key=lambda p: -len(words & set(p.title.lower().split())))
            limit = int(log.query.get("limit", 10))
            return 200, {"total": len(hits), "offset": 0,
                         "data": [_s2_shape(p, with_lists=False) for p in hits[:limit]]}
        paper_id, edge = rest.strip("/"), ""
        for suffix in ("/references", "/citations"):
            if paper_id.endswith(suffix):  # ids may hold slashes (DOI:10.1/x), so cut the edge name off the end
                paper_id, edge = paper_id[: -len(suffix)], suffix[1:]
        paper = self.lookup(paper_id) if paper_id else None
        if paper is None:
            return 404, {"error": "Paper not found"}
        if not edge:
            return 200, _s2_shape(paper, with_lists=with_lists)
        if edge == "references":
            items = [{"citedPaper": _s2_shape(ref, with_lists=False) if (ref := self.lookup(rid)) else
                      {"paperId": None, "title": None}} for rid in paper.reference_ids if rid]
            return 200, {"offset": 0, "data": items}
        items = [{"citingPaper": _s2_shape(cit, with_lists=False)} for cit in self._citing.get(paper.id.lower(), [])]
        return 200, {"offset": 0, "data": items}

    def _route_openalex(self, rest: str, log: RequestLog) -> tuple[int, Any]:
        if rest.strip("/"):
            paper = self.lookup(rest.strip("/"))
            return (200, _openalex_shape(paper)) if paper else (404, {"error": "NotFoundError"})
        if "search" in log.query:
            words = set(log.query["search"].lower().split())
            results = [p for p in self.papers if words & set(p.title.lower().split())]
        else:
            name, _, values = log.query.get("filter", "").partition(":")
            wanted = values.split("|")
            if name == "openalex":
                results = [p for v in wanted if (p := self.lookup(v))]
            elif name == "doi":
                results = [p for v in wanted if (p := self.lookup(f"doi:{v}"))]
            elif name == "cites":
                results = self._citing.get(values.lower(), [])
            else:
                return 400, {"error": f"unsupported filter {name!r}"}
            if log.query.get("cursor", "*") != "*":
                results = []
        per_page = int(log.query.get("per-page", 25))
        return 200, {"meta": {"count": len(results), "per_page": per_page, "next_cursor": None},
                     "results": [_openalex_shape(p) for p in results[:per_page]]}

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep test output quiet
                pass

            def _answer(self) -> None:
                url = urlsplit(self.path)
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                log = RequestLog(self.command, unquote(url.path),
                                 {k: v[0] for k, v in parse_qs(url.query).items()},
                                 {k.lower(): v for k, v in self.headers.items()},
                                 _decode_body(raw, self.headers.get("content-type") or ""), time.monotonic())
                with server._lock:
                    server.requests.append(log)
                    n = len(server.requests)
                headers: dict[str, str] = {}
                if server.always_status is not None:
                    status, body = server.always_status, {"error": "forced failure"}
                elif n <= server.fail_first:
                    status, body = server.fail_status, {"error": "Too Many Requests"}
                    if server.retry_after is not None:
                        headers["Retry-After"] = str(server.retry_after)
                elif log.path == "/api/processReferences" and server.grobid_tei is not None:
                    status, body = 200, server.grobid_tei
                else:
                    status, body = server._route(log)
                is_xml = isinstance(body, str)
                data = body.encode() if is_xml else json.dumps(body).encode()
                self.send_response(status)
                self.send_header("content-type", "application/xml" if is_xml else "application/json")
                self.send_header("content-length", str(len(data)))
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

            do_GET = _answer
            do_POST = _answer

        return Handler

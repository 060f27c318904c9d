"""A GROBID server as a reference reader for PDFs (``POST /api/processReferences``).

GROBID turns a PDF's bibliography into TEI, read by :func:`surveyalign.documents.parse_tei_references`. The
request goes through the polite HTTP client (retries with Retry-After: GROBID answers 503 when its pool is busy).
Pass ``GrobidClient().references`` as ``pdf_reader`` to :func:`surveyalign.documents.read_references` to read a
PDF's reference list.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from surveyalign.calls import PoliteClient
from surveyalign.documents import (
    GROBID_URL_ENV,
    ReferenceList,
    check_reference_count,
    parse_tei_references,
    read_document,
)

__all__ = ["GrobidClient"]


class GrobidClient:
    """Reference extraction from PDFs by a GROBID server.

    Args:
        base_url: the server root (``http://localhost:8070``); ``None`` reads :data:`GROBID_URL_ENV`.
        consolidate: ask GROBID to consolidate citations against Crossref (``consolidateCitations=1``; slower).
        timeout: seconds per request (a long PDF takes a while).
        **http: other :class:`~surveyalign.calls.PoliteClient` options.

    Raises:
        ValueError: no server given and ``GROBID_URL`` unset.
    """

    def __init__(self, base_url: str | None = None, *, consolidate: bool = False, timeout: float = 120.0,
                 **http: Any) -> None:
        url = base_url or os.environ.get(GROBID_URL_ENV)
        if not url:
            raise ValueError(f"no GROBID server configured: pass base_url or set {GROBID_URL_ENV}")
        http.setdefault("requests_per_second", 0)
        self.consolidate = consolidate
        self.http = PoliteClient(url, timeout=timeout, **http)

    def references(self, pdf: str | os.PathLike, *, check_count: bool = True) -> ReferenceList:
        """The reference list of one PDF (``POST /api/processReferences``), read with :func:`parse_tei_references`.

        GROBID can answer with fewer entries than the document numbers (two entries merged into one, one lost)
        and no error; with ``check_count`` the PDF's own text is read (pypdf) and the list compared with the
        highest citation number in it (:func:`~surveyalign.documents.check_reference_count`): a shortfall sets
        ``shortfall`` and adds a problem line; a PDF whose text cannot be read adds a problem line saying the
        count was not checked.

        Args:
            pdf: the PDF file.
            check_count: compare the number of entries with the highest ``[n]`` cited in the text.

        Returns:
            The :class:`ReferenceList` (``path`` = the PDF; ``cited_up_to`` / ``shortfall`` when checked).

        Raises:
            OSError: the PDF cannot be read.
            HTTPStatusError: the server failed for good.
            ValueError: the answer is not well-formed TEI.
        """
        path = Path(pdf)
        response = self.http.request("POST", "/api/processReferences",
                                     files={"input": (path.name, path.read_bytes(), "application/pdf")},
                                     data={"consolidateCitations": "1" if self.consolidate else "0"})
        refs = parse_tei_references(response.content, path=str(path))
        refs.path = str(path)
        if check_count:
            try:
                text = read_document(path, guard=False).text
            except ValueError as exc:
                refs.problems.append(f"{path}: the number of references was not checked against the text "
                                     f"({' '.join(str(exc).split())})")
            else:
                check_reference_count(refs, text)
        return refs

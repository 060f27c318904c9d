"""GROBID TEI XML: the ``<biblStruct>`` entries of a paper's reference list (SurveyReview §4 paper processing).

GROBID (``processFulltextDocument`` / ``processReferences``) turns a PDF's bibliography into TEI; this module
reads it into :class:`~surveyalign.knowledge.papers.Reference` records with ``lxml`` (entities not resolved),
and :class:`GrobidClient` asks a configured GROBID server for it (``POST /api/processReferences``) through the
polite HTTP client (retries with Retry-After: GROBID answers 503 when its pool is busy).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from lxml import etree

from surveyalign.knowledge.http import PoliteClient
from surveyalign.knowledge.papers import (
    Reference,
    ReferenceList,
    normalise_arxiv,
    normalise_doi,
    year_in_text,
)

__all__ = ["GROBID_URL_ENV", "GrobidClient", "parse_tei_references"]

#: Environment variable naming the GROBID server (e.g. ``http://localhost:8070``) when none is passed.
GROBID_URL_ENV = "GROBID_URL"

_TEI = "{http://www.tei-c.org/ns/1.0}"


def _tei_text(node: Any, xpath: str) -> str:
    found = node.find(xpath)
    return re.sub(r"\s+", " ", "".join(found.itertext())).strip() if found is not None else ""


def parse_tei_references(xml: str | bytes, *, path: str | None = None) -> ReferenceList:
    """Read the ``<biblStruct>`` entries of GROBID TEI XML (``processFulltextDocument`` or ``processReferences``).

    Args:
        xml: the TEI document.
        path: the file name, recorded in the result and in problem lines.

    Returns:
        A :class:`ReferenceList` (``source="tei"``, key = the entry's ``xml:id`` or ``"ref-N"``); the title
        is the analytic (article) title, else the monograph title.

    Raises:
        ValueError: the text is not well-formed XML (the message names ``path``).
    """
    data = xml.encode("utf-8") if isinstance(xml, str) else xml
    try:
        root = etree.fromstring(data, parser=etree.XMLParser(recover=False, resolve_entities=False))
    except etree.XMLSyntaxError as err:
        raise ValueError(f"{path or 'TEI'}: not well-formed XML ({err})") from None
    refs = []
    for i, bibl in enumerate(root.iter(f"{_TEI}biblStruct"), start=1):
        key = bibl.get("{http://www.w3.org/XML/1998/namespace}id") or f"ref-{i}"
        title = _tei_text(bibl, f"{_TEI}analytic/{_TEI}title") or _tei_text(bibl, f"{_TEI}monogr/{_TEI}title")
        authors = []
        for pers in bibl.iter(f"{_TEI}persName"):
            given = " ".join(" ".join(n.itertext()).strip() for n in pers.findall(f"{_TEI}forename"))
            family = _tei_text(pers, f"{_TEI}surname")
            if family:
                authors.append(f"{given} {family}".strip())
        date = bibl.find(f".//{_TEI}date")
        year = year_in_text((date.get("when") or "" if date is not None else "") or
                           ("".join(date.itertext()) if date is not None else ""))
        ids = {idno.get("type", "").lower(): (idno.text or "").strip() for idno in bibl.iter(f"{_TEI}idno")}
        refs.append(Reference(
            key=key, title=title, authors=authors, year=year, doi=normalise_doi(ids.get("doi")),
            arxiv_id=normalise_arxiv(ids.get("arxiv")), venue=_tei_text(bibl, f"{_TEI}monogr/{_TEI}title"),
            raw=re.sub(r"\s+", " ", " ".join(bibl.itertext())).strip(), source="tei",
        ))
    return ReferenceList(refs, [], "tei", path)


class GrobidClient:
    """Reference extraction from PDFs by a GROBID server.

    Args:
        base_url: the server root (``http://localhost:8070``); ``None`` reads :data:`GROBID_URL_ENV`.
        consolidate: ask GROBID to consolidate citations against Crossref (``consolidateCitations=1``; slower).
        timeout: seconds per request (a long PDF takes a while).
        **http: other :class:`~surveyalign.knowledge.http.PoliteClient` options.

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

    def references(self, pdf: str | os.PathLike) -> ReferenceList:
        """The reference list of one PDF (``POST /api/processReferences``), read with :func:`parse_tei_references`.

        Args:
            pdf: the PDF file.

        Returns:
            The :class:`ReferenceList` (``path`` = the PDF).

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
        return refs

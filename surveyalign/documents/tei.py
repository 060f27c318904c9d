"""GROBID TEI XML: the ``<biblStruct>`` entries of a paper's reference list (SurveyReview §4 paper processing).

GROBID (``processFulltextDocument`` / ``processReferences``) turns a PDF's bibliography into TEI; this module
reads it into :class:`~surveyalign.documents.Reference` records with ``lxml`` (entities not resolved).
Asking a GROBID server for it is :class:`surveyalign.knowledge.GrobidClient` (an HTTP client, one floor up).
"""

from __future__ import annotations

import re
from typing import Any

from lxml import etree

from surveyalign.documents.papers import (
    Reference,
    ReferenceList,
    normalise_arxiv,
    normalise_doi,
    year_in_text,
)

__all__ = ["GROBID_URL_ENV", "parse_tei_references"]

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

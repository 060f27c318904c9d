"""TEMPORARY stand-in for ``surveyalign.data.jats.parse_jats`` (issue 17) until it lands; deleted then.

Only the fields PRISM reads: title, abstract, sections (heading, level, text), year, and the sub-articles
(article_type, id, title, contributors, text), kept apart from the article by element.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field


@dataclass
class _Section:
    heading: str
    level: int
    text: str


@dataclass
class _Sub:
    article_type: str
    id: str
    title: str
    contributors: list[str]
    text: str


@dataclass
class _Article:
    title: str
    abstract: str = ""
    sections: list[_Section] = field(default_factory=list)
    sub_articles: list[_Sub] = field(default_factory=list)
    year: str = ""


def _local(el) -> str:
    return el.tag.rsplit("}", 1)[-1] if isinstance(el.tag, str) else ""


def _text(el) -> str:
    return re.sub(r"\s+", " ", "".join(el.itertext())).strip() if el is not None else ""


def _find(el, name):
    return next((c for c in el.iter() if _local(c) == name), None)


def _paras(el) -> str:
    return "\n\n".join(t for t in (_text(p) for p in el if _local(p) == "p") if t)


def _walk(sec, level, out):
    title = next((c for c in sec if _local(c) == "title"), None)
    out.append(_Section(_text(title), level, _paras(sec)))
    for child in sec:
        if _local(child) == "sec":
            _walk(child, level + 1, out)


def parse_jats(xml_text: str | bytes, *, source: str = "<jats>") -> _Article:
    root = ET.fromstring(xml_text if isinstance(xml_text, bytes) else xml_text.encode("utf-8"))
    subs = [c for c in root.iter() if _local(c) == "sub-article"]
    for sub in subs:  # detach, so the article never sees them
        for parent in root.iter():
            if sub in list(parent):
                parent.remove(sub)
    meta = _find(root, "article-meta")
    art = _Article(title=_text(_find(meta, "article-title")), abstract=_text(_find(meta, "abstract")))
    year = _find(_find(meta, "pub-date") or meta, "year")
    art.year = _text(year)
    body = _find(root, "body")
    if body is not None:
        for sec in body:
            if _local(sec) == "sec":
                _walk(sec, 1, art.sections)
    for sub in subs:
        front = _find(sub, "front-stub")
        names = [" ".join(t for t in (_text(_find(n, "given-names")), _text(_find(n, "surname"))) if t)
                 for n in sub.iter() if _local(n) == "name"]
        sub_body = _find(sub, "body")
        text = "\n\n".join(t for t in (_text(p) for p in sub_body.iter() if _local(p) == "p") if t) if sub_body else ""
        art.sub_articles.append(_Sub(sub.get("article-type", ""), sub.get("id", ""),
                                     _text(_find(front, "article-title")) if front is not None else "", names, text))
    return art

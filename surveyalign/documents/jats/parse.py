"""JATS XML articles to markdown, with the published peer-review record kept apart (SurveyReview §4.1, App. A).

F1000Research, PeerJ and Europe PMC publish their articles as JATS XML. F1000Research also puts each referee
report, author response and decision letter into the same file as a ``<sub-article>`` (or ``<response>``)
element. :func:`parse_jats` reads the article's own front matter, body and back matter into a
:class:`JatsArticle` and every sub-article into a separate :class:`SubArticle`; the split is made on the
element tree, so no sentence of a report can reach :meth:`JatsArticle.to_markdown`.

Parsing uses lxml with entity resolution, DTD loading and network access switched off.
"""

from __future__ import annotations

import re

from lxml import etree

from .model import (
    JatsArticle,
    JatsCaption,
    JatsError,
    JatsReference,
    JatsSection,
    SubArticle,
)

#: Elements that hold a document of their own (reports, responses, decision letters) inside an article.
SUB_ARTICLE_TAGS = ("sub-article", "response")
#: Citation elements inside ``<ref>``.
_CITATION_TAGS = ("mixed-citation", "element-citation", "citation", "nlm-citation")
#: Block-level elements rendered as paragraphs of their own.
_BLOCK_TAGS = frozenset({
    "p", "list", "fig", "fig-group", "table-wrap", "table-wrap-group", "boxed-text", "disp-quote",
    "disp-formula", "disp-formula-group", "supplementary-material", "def-list", "preformat", "code",
    "statement", "verse-group", "speech", "array", "graphic", "media", "chem-struct-wrap", "alternatives",
})
#: Elements never rendered (metadata, or handled elsewhere).
_SKIPPED_TAGS = frozenset({"label", "caption", "title", "object-id", "permissions", "attrib", "sec-meta"})
_WS_RE = re.compile(r"\s+")
_SPACE_PUNCT_RE = re.compile(r"\s+(?=[,.;:)\]])")
_OPEN_SPACE_RE = re.compile(r"([(\[])\s+")
_PUB_ID_NAMES = {"doi": "doi:", "pmid": "PMID:", "pmcid": "PMCID:"}

def _local(el) -> str:
    """Tag without namespace ("math" for mml:math); "" for comments and processing instructions."""
    return etree.QName(el).localname if isinstance(el.tag, str) else ""


def _norm(text: str) -> str:
    """Whitespace runs to one space; no space inside brackets or before punctuation (layout whitespace of XML)."""
    text = _WS_RE.sub(" ", text).strip()
    return _SPACE_PUNCT_RE.sub("", _OPEN_SPACE_RE.sub(r"\1", text))


def _cited_name(el) -> str:
    """A name as printed in a citation: its parts in document order, one space apart ("Smith J")."""
    parts = [_norm(_inline(c)) for c in el if _local(c)]
    return " ".join(p for p in parts if p) if parts else _norm(_inline(el))


def _person_group(el) -> str:
    """Names of a citation's ``<person-group>``: "Alberts B, Kirschner MW, et al." (name parts in document order)."""
    names = [n for n in (_cited_name(n) for n in el if _local(n) in ("name", "string-name", "collab")) if n]
    if any(_local(n) == "etal" for n in el):
        names.append("et al.")
    return ", ".join(names) if names else _inline(el)


def _math(el) -> str:
    alt = el.get("alttext")
    if alt:
        return alt
    tex = next((c for c in el.iter() if _local(c) == "tex-math"), None)
    return "".join(tex.itertext()) if tex is not None else "".join(el.itertext())


def _inline(el, *, skip: frozenset[str] = frozenset()) -> str:
    """Text of ``el`` and its inline descendants; block children and ``skip`` tags are left out (tails kept)."""
    out = [el.text or ""]
    for child in el:
        name = _local(child)
        if name and name not in _BLOCK_TAGS and name not in skip and name not in SUB_ARTICLE_TAGS:
            if name in ("math", "tex-math"):
                out.append(_math(child))
            elif name == "pub-id" and child.get("pub-id-type") in _PUB_ID_NAMES:
                out.append(f" {_PUB_ID_NAMES[child.get('pub-id-type')]}{_norm(''.join(child.itertext()))} ")
            elif name == "break":
                out.append(" ")
            elif name == "person-group":
                out.append(_person_group(child))
            else:
                out.append(_inline(child, skip=skip))
        out.append(child.tail or "")
    return "".join(out)


def _child(el, name: str):
    return next((c for c in el if _local(c) == name), None)


def _children(el, name: str) -> list:
    return [c for c in el if _local(c) == name]


def _text(el) -> str:
    return _norm(_inline(el)) if el is not None else ""


class _Walker:
    """Renders one document (the article or a sub-article) and collects its captions."""

    def __init__(self) -> None:
        self.captions: list[JatsCaption] = []

    def blocks(self, el) -> list[str]:
        """Markdown paragraphs for the block content of ``el`` (its ``sec`` children are not entered)."""
        out: list[str] = []
        loose = _norm(_inline(el, skip=_SKIPPED_TAGS | {"sec", "ref-list", "fn-group", "app-group"}))
        if loose and _local(el) not in ("body", "back", "sec", "abstract", "ack", "app", "boxed-text"):
            out.append(loose)
        for child in el:
            name = _local(child)
            if name in _BLOCK_TAGS:
                out.extend(self.block(child))
            elif name in ("fn-group", "fn", "notes", "glossary"):
                out.extend(self.blocks(child))
        return out

    def block(self, el) -> list[str]:
        name = _local(el)
        if name == "p":
            return self.blocks(el)
        if name == "list":
            items = []
            for k, item in enumerate(_children(el, "list-item"), 1):
                mark = f"{k}." if el.get("list-type") in ("order", "arabic", "alpha-lower", "roman-lower") else "-"
                body = " ".join(self.blocks(item)) or _text(item)
                items.append(f"{mark} {body}".rstrip())
            return ["\n".join(items)] if items else []
        if name in ("fig", "table-wrap", "boxed-text"):
            return self.floating(el, {"fig": "figure", "table-wrap": "table", "boxed-text": "box"}[name])
        if name == "disp-quote":
            return ["\n".join(f"> {b}" for b in self.blocks(el))]
        if name in ("preformat", "code"):
            return [f"```\n{''.join(el.itertext()).strip()}\n```"]
        if name in ("disp-formula",):
            return [_norm(_inline(el, skip=frozenset({"label"})))]
        if name == "supplementary-material":
            text = " ".join(x for x in (_text(_child(el, "label")), *self.caption_parts(el)) if x)
            return [text] if text else []
        if name == "def-list":
            return ["\n".join(f"- {_text(_child(i, 'term'))}: {_text(_child(i, 'def'))}" for i in _children(el, "def-item"))]
        return self.blocks(el)

    def caption_parts(self, el) -> list[str]:
        cap = _child(el, "caption")
        if cap is None:
            return []
        return [t for t in (_text(c) for c in cap if _local(c) in ("title", "p")) if t]

    def floating(self, el, kind: str) -> list[str]:
        label = _text(_child(el, "label"))
        caption = " ".join(self.caption_parts(el))
        self.captions.append(JatsCaption(kind=kind, label=label, caption=caption, id=el.get("id", "")))
        head = " ".join(x for x in (f"**{label}**" if label else "", caption) if x)
        out = [head] if head else []
        if kind == "table":
            for table in el.iter("table"):
                out.append(_pipe_table(table))
            foot = _child(el, "table-wrap-foot")
            if foot is not None:
                out.extend(self.blocks(foot))
        elif kind == "box":
            out.extend(self.blocks(el))
            for sec in _children(el, "sec"):
                out.extend(self.blocks(sec))
        return out

    def sections(self, el, level: int) -> list[JatsSection]:
        out: list[JatsSection] = []
        for sec in (c for c in el if _local(c) in ("sec", "ack", "app")):
            title = _child(sec, "title")
            label = _text(_child(sec, "label"))
            heading = " ".join(x for x in (label, _text(title)) if x)
            if not heading and _local(sec) == "ack":
                heading = "Acknowledgements"
            out.append(JatsSection(heading=heading, level=level, text="\n\n".join(self.blocks(sec))))
            out.extend(self.sections(sec, level + 1))
        for group in (c for c in el if _local(c) == "app-group"):
            out.extend(self.sections(group, level))
        return out


def _pipe_table(table) -> str:
    rows = [[_text(cell).replace("|", "\\|") for cell in tr if _local(cell) in ("th", "td")] for tr in table.iter("tr")]
    rows = [r for r in rows if r]
    if not rows:
        return ""
    width = max(len(r) for r in rows)
    rows = [r + [""] * (width - len(r)) for r in rows]
    lines = ["| " + " | ".join(rows[0]) + " |", "|" + " --- |" * width]
    lines += ["| " + " | ".join(r) + " |" for r in rows[1:]]
    return "\n".join(lines)


def _name(el) -> str:
    name = _local(el)
    if name == "name":
        return _norm(" ".join(x for x in (_text(_child(el, "given-names")), _text(_child(el, "surname"))) if x))
    return _text(el)


def _contributors(front, contrib_type: str | None = None) -> list[str]:
    names = []
    for group in (c for c in front.iter() if _local(c) == "contrib-group"):
        for contrib in _children(group, "contrib"):
            if contrib_type and contrib.get("contrib-type", contrib_type) != contrib_type:
                continue
            node = next((c for c in contrib if _local(c) in ("name", "string-name", "collab")), None)
            if node is not None and _name(node):
                names.append(_name(node))
    return names


def _cited_authors(cit) -> list[str]:
    """Author names of a citation: ``<person-group>`` members, else ``<name>`` / ``<collab>`` children (older NLM)."""
    groups = [g for g in cit.iter() if _local(g) == "person-group"]
    holders = groups or [cit]
    return [n for h in holders for n in (_cited_name(c) for c in h if _local(c) in ("name", "string-name", "collab"))
            if n]


def _glued(cit) -> bool:
    """True when a citation holds elements with no text between them (the older NLM ``<citation>`` style, whose
    element texts would run together: "Lee AGraph networks for moleculesNature2019")."""
    children = [c for c in cit if _local(c)]
    if not children:
        return False
    between = (cit.text or "") + "".join(c.tail or "" for c in children)
    return not between.strip()


def _element_citation(cit) -> str:
    """A structured citation printed with separators: "Lee A, Kim B. Title. Source. 2019. 12:1-9. doi:..."."""
    groups = [g for g in cit.iter() if _local(g) == "person-group"]
    parts = [_person_group(g) for g in groups] if groups else [", ".join(_cited_authors(cit))]
    for tag in ("article-title", "chapter-title", "source", "year"):
        node = _child(cit, tag)
        if node is not None:
            parts.append(_text(node))
    pages = "-".join(_text(_child(cit, t)) for t in ("fpage", "lpage") if _child(cit, t) is not None)
    vol = _text(_child(cit, "volume"))
    if vol or pages:
        parts.append(":".join(x for x in (vol, pages) if x))
    ids = [f"{_PUB_ID_NAMES[p.get('pub-id-type')]}{_text(p)}" for p in _children(cit, "pub-id")
           if p.get("pub-id-type") in _PUB_ID_NAMES]
    parts = [p.rstrip(".") for p in parts if p.rstrip(".")]
    return ". ".join(parts) + ("." if parts else "") + "".join(f" {i}" for i in ids)


def _references(back) -> list[JatsReference]:
    refs: list[JatsReference] = []
    if back is None:
        return refs
    for ref_list in (c for c in back if _local(c) == "ref-list"):
        for ref in (r for r in ref_list.iter() if _local(r) == "ref"):
            cit = next((c for c in ref if _local(c) in _CITATION_TAGS), None)
            if cit is None:
                text = _text(ref)
            elif _local(cit) == "element-citation" or _glued(cit):
                text = _element_citation(cit)
            else:
                text = _norm(_inline(cit))
            doi = next((_text(p) for p in ref.iter("pub-id") if p.get("pub-id-type") == "doi"), "")
            title = next((_text(t) for t in ref.iter("article-title", "chapter-title", "source")), "")
            refs.append(JatsReference(
                number=len(refs) + 1, text=text, label=_text(_child(ref, "label")), id=ref.get("id", ""),
                doi=doi, title=title, year=next((_text(y) for y in ref.iter("year")), ""),
                authors=_cited_authors(cit) if cit is not None else [],
            ))
    return refs


def _sub_articles(el, parent_id: str, out: list[SubArticle]) -> None:
    for sub in (c for c in el if _local(c) in SUB_ARTICLE_TAGS):
        front = next((c for c in sub if _local(c) in ("front-stub", "front")), None)
        title = ""
        contributors: list[str] = []
        recommendation = ""
        if front is not None:
            title = next((_text(t) for t in front.iter("article-title")), "")
            contributors = _contributors(front)
            recommendation = next((_text(m.getnext()) for m in front.iter("meta-name")
                                   if _text(m) == "recommendation" and m.getnext() is not None), "")
        walker = _Walker()
        body = _child(sub, "body")
        text = ""
        if body is not None:
            paras = walker.blocks(body)
            paras.extend(sec.to_markdown() for sec in walker.sections(body, 1))
            text = "\n\n".join(paras)
        kind = sub.get("article-type") or sub.get("response-type") or ""
        out.append(SubArticle(article_type=kind, id=sub.get("id", ""), title=title, contributors=contributors,
                              text=text, recommendation=recommendation, references=_references(_child(sub, "back")),
                              parent_id=parent_id))
        _sub_articles(sub, sub.get("id", ""), out)


def _parse_xml(xml_text: str | bytes, source: str):
    parser = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False, dtd_validation=False,
                             remove_comments=True, remove_pis=True, encoding="utf-8" if isinstance(xml_text, str) else None)
    data = xml_text.encode("utf-8") if isinstance(xml_text, str) else xml_text
    try:
        root = etree.fromstring(data, parser)
    except etree.XMLSyntaxError as exc:
        raise JatsError(f"{source}: not well-formed XML ({exc})") from exc
    if root is None or _local(root) != "article":
        found = _local(root) if root is not None else "nothing"
        raise JatsError(f"{source}: expected a JATS <article> root element, found <{found}>")
    return root


def parse_jats(xml_text: str | bytes, *, source: str = "<jats>") -> JatsArticle:
    """Parse a JATS XML article; its sub-articles (reports, responses, decision letters) are kept apart.

    The article is read from the root's own ``<front>``, ``<body>``, ``<back>`` and ``<floats-group>``
    children; every ``<sub-article>`` / ``<response>`` element becomes a :class:`SubArticle` and is never
    rendered into the article (SurveyReview §4.1: the reviews must not reach the judge's input).

    Args:
        xml_text: the XML document (str or bytes).
        source: name of the document for error messages (file name or URL).

    Returns:
        A :class:`JatsArticle`.

    Raises:
        JatsError: when the text is not well-formed XML or its root element is not ``<article>``.
    """
    root = _parse_xml(xml_text, source)
    front, body, back = (_child(root, t) for t in ("front", "body", "back"))
    meta = _child(front, "article-meta") if front is not None else None
    walker = _Walker()
    article = JatsArticle(title="")
    if meta is not None:
        group = _child(meta, "title-group")
        article.title = _text(_child(group, "article-title")) if group is not None else ""
        abstracts = _children(meta, "abstract")
        main = next((a for a in abstracts if not a.get("abstract-type")), abstracts[0] if abstracts else None)
        if main is not None:
            paras = walker.blocks(main)
            for sec in walker.sections(main, 1):
                head = sec.heading if not sec.heading or sec.heading[-1] in ".:?!" else f"{sec.heading}:"
                paras.append(f"**{head}** {sec.text}".strip() if head else sec.text)
            article.abstract = "\n\n".join(p for p in paras if p)
        ids = {a.get("pub-id-type"): _text(a) for a in _children(meta, "article-id")}
        article.doi = ids.get("doi", "")
        pmcid = ids.get("pmcid") or ids.get("pmc") or ""
        article.pmcid = pmcid if not pmcid or pmcid.upper().startswith("PMC") else f"PMC{pmcid}"
        article.year = next((_text(y) for d in _children(meta, "pub-date") for y in _children(d, "year")), "")
        article.authors = _contributors(meta, "author")
        article.keywords = [_text(k) for g in _children(meta, "kwd-group") for k in _children(g, "kwd")]
    for part in (body, back):
        if part is None:
            continue
        loose = walker.blocks(part)
        if loose:
            article.sections.append(JatsSection(heading="", level=1, text="\n\n".join(loose)))
        article.sections.extend(walker.sections(part, 1))
    floats = _child(root, "floats-group")
    if floats is not None:
        paras = [p for child in floats if _local(child) in _BLOCK_TAGS for p in walker.block(child)]
        if paras:
            article.sections.append(JatsSection(heading="Figures and tables", level=1, text="\n\n".join(paras)))
    article.captions = walker.captions
    article.references = _references(back)
    _sub_articles(root, "", article.sub_articles)
    return article

"""A survey's reference list R (SurveyReview §5.2.1) from BibTeX, LaTeX, markdown or GROBID TEI.

Every reader returns a :class:`ReferenceList`: the typed :class:`Reference` entries in source order, plus the
entries it could not read (``problems``, one line each with the entry's position), so nothing is dropped
silently. :func:`cited_keys` lists the keys a LaTeX text cites with the ``\\cite`` family of commands, so a
BibTeX file can be cut down to what the survey really cites.

Readers: :func:`parse_bibtex` (``bibtexparser`` 2), :func:`parse_latex_bibliography` (``\\bibitem``),
:func:`parse_markdown_references` (numbered ``[n]`` or author-year), :func:`parse_tei_references` (GROBID),
and :func:`read_references`, which picks one from a file's suffix; :func:`read_reference_value` reads a
reference list given as a value (a dataset cell: BibTeX, a markdown list, titles).
"""

from __future__ import annotations

import os
import re
import unicodedata
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import bibtexparser
from bibtexparser.middlewares import LatexDecodingMiddleware
from bibtexparser.model import DuplicateBlockKeyBlock

from surveyalign.documents.papers import (
    Reference,
    ReferenceList,
    normalise_arxiv,
    normalise_doi,
    year_in_text,
)
from surveyalign.documents.ref_text import (
    _clean,
    _ids_in,
    _split_authors,
    parse_markdown_references,
    parse_reference_text,
)
from surveyalign.documents.tei import GROBID_URL_ENV, parse_tei_references

__all__ = [
    "check_reference_count",
    "cited_keys",
    "decode_latex_accents",
    "highest_citation_number",
    "parse_bibtex",
    "parse_jats_references",
    "parse_latex_bibliography",
    "parse_markdown_references",
    "parse_reference_text",
    "parse_tei_references",
    "read_reference_value",
    "read_references",
]


_CITE = re.compile(
    r"\\(?:[a-zA-Z]*cite[a-zA-Z]*|citealp|citeauthor)\*?\s*(?:\[[^\]]*\]\s*){0,2}\{([^}]*)\}"
)
_COMMENT = re.compile(r"(?<!\\)%.*")


_ACCENTS = {"`": "\u0300", "'": "\u0301", "^": "\u0302", '"': "\u0308", "~": "\u0303", "=": "\u0304",
            ".": "\u0307", "u": "\u0306", "v": "\u030c", "H": "\u030b", "c": "\u0327", "k": "\u0328",
            "r": "\u030a", "d": "\u0323", "b": "\u0331"}
_SPECIAL_LETTERS = {"ss": "ß", "oe": "œ", "OE": "Œ", "ae": "æ", "AE": "Æ", "aa": "å", "AA": "Å", "o": "ø",
                    "O": "Ø", "l": "ł", "L": "Ł", "i": "ı", "j": "ȷ"}
# \"u \"{u} \'\i \c{c} \v s (letter accents take a braced or space-separated argument, so \url is no \u)
_ACCENT_RE = re.compile(r"\\(?:(?P<sym>[`'^\"~=.])\s*|(?P<let>[uvHckrdb])(?=[\s{]))\s*"
                        r"(?:\{\s*(?P<braced>\\[ij](?![A-Za-z])|[A-Za-z])\s*\}|(?P<bare>\\[ij](?![A-Za-z])|[A-Za-z]))")
_SPECIAL_RE = re.compile(r"\\(ss|oe|OE|ae|AE|aa|AA|o|O|l|L|i|j)(?![A-Za-z])(?:\s*\{\})?")


def decode_latex_accents(text: str) -> str:
    """Replace LaTeX accent macros and special letters by Unicode (``M{\\"u}ller`` -> ``M{ü}ller``,
    ``Garc{\\'\\i}a`` -> ``Garc{í}a``, ``\\ss`` -> ``ß``), leaving every other macro and brace as written.

    Args:
        text: LaTeX text (a ``\\bibitem`` list, a title).

    Returns:
        The text with accents decoded (NFC-composed); the braces around them are kept for :func:`_clean`.
    """
    def accent(match: re.Match) -> str:
        base = match.group("braced") or match.group("bare")
        base = base[1] if base.startswith("\\") else base
        return unicodedata.normalize("NFC", base + _ACCENTS[match.group("sym") or match.group("let")])

    text = _ACCENT_RE.sub(accent, text)
    return _SPECIAL_RE.sub(lambda m: _SPECIAL_LETTERS[m.group(1)], text)


def cited_keys(latex: str, *, include_comments: bool = False) -> list[str]:
    """Keys cited in a LaTeX text by ``\\cite``-family commands, in order of first citation, without repeats.

    Handles ``\\cite``, ``\\citep``, ``\\citet``, ``\\citeauthor``, ``\\parencite``, ``\\textcite``,
    ``\\autocite``, ``\\nocite`` (and starred forms) with up to two optional ``[...]`` arguments and
    comma-separated key lists; ``\\nocite{*}`` is ignored. By default only what LaTeX typesets counts:
    commented-out text (``%`` to end of line, not ``\\%``) and anything after ``\\end{document}`` are
    skipped.

    Args:
        latex: the LaTeX source (with ``\\input`` files already inlined when they cite too).
        include_comments: also count keys in comments and after ``\\end{document}`` (every ``\\cite``
            written in the file).

    Returns:
        The distinct keys as written, e.g. ``["vaswani2017", "devlin2019"]`` (BibTeX keys are
        case-insensitive: :meth:`ReferenceList.select` matches them so).
    """
    text = latex
    if not include_comments:
        text = text.split("\\end{document}", 1)[0]
        text = "\n".join(_COMMENT.sub("", line) for line in text.splitlines())
    keys: list[str] = []
    seen: set[str] = set()
    for group in _CITE.findall(text):
        for key in group.split(","):
            key = _COMMENT.sub("", key).strip()  # "a,%<line end> b": a comment is no part of a key
            if key and key != "*" and key not in seen:
                seen.add(key)
                keys.append(key)
    return keys


def _bib_authors(value: str) -> list[str]:
    return [_clean(name) for name in re.split(r"\s+and\s+", value.replace("\n", " ")) if _clean(name)]


def parse_bibtex(text: str, *, path: str | None = None) -> ReferenceList:
    """Read BibTeX entries with ``bibtexparser`` 2 (LaTeX accents such as ``{\\"a}`` decoded).

    Args:
        text: the ``.bib`` file's text.
        path: the file name, recorded in the result and in problem lines.

    Returns:
        A :class:`ReferenceList` with one :class:`Reference` per entry (key = citation key; title, authors,
        year, DOI, arXiv id from ``doi`` / ``eprint`` / ``arxiv`` / ``url`` fields, venue from
        ``journal`` / ``booktitle`` / ``publisher``); blocks the parser failed on are listed in ``problems``.
    """
    library = bibtexparser.parse_string(text, append_middleware=[LatexDecodingMiddleware()])
    where = path or "bibtex"
    problems = []
    for block in library.failed_blocks:
        line = (block.start_line or 0) + 1
        if isinstance(block, DuplicateBlockKeyBlock):
            problems.append(f"{where}: line {line}: duplicate key {block.key!r} (the first entry is kept)")
        else:
            problems.append(f"{where}: line {line}: entry could not be parsed ({type(block).__name__})")
    refs: list[Reference] = []
    for entry in library.entries:
        fields = {name.lower(): str(value) for name, value in entry.fields_dict.items()
                  for value in [entry.fields_dict[name].value]}
        ids_text = " ".join(fields.get(name, "") for name in ("doi", "url", "eprint", "arxiv", "note", "journal"))
        doi, arxiv = _ids_in(ids_text)
        refs.append(Reference(
            key=entry.key,
            title=_clean(fields.get("title", "")),
            authors=_bib_authors(fields.get("author", "")),
            year=year_in_text(fields.get("year", "") or fields.get("date", "")),
            doi=normalise_doi(fields.get("doi")) or doi,
            arxiv_id=normalise_arxiv(fields.get("eprint")) or normalise_arxiv(fields.get("arxiv")) or arxiv,
            venue=_clean(fields.get("journal") or fields.get("booktitle") or fields.get("publisher") or ""),
            raw=entry.raw if hasattr(entry, "raw") else "",
            source="bibtex",
        ))
    return ReferenceList(refs, problems, "bibtex", path)


def parse_latex_bibliography(latex: str, *, path: str | None = None) -> ReferenceList:
    """Read the ``\\bibitem`` entries of ``thebibliography`` environments in a LaTeX text.

    LaTeX accents (``M{\\"u}ller``, ``\\'\\i``, ``\\ss``) are decoded first (:func:`decode_latex_accents`), as
    :func:`parse_bibtex` does for ``.bib`` files, so an accent never cuts an entry. Entries run from one
    ``\\bibitem[label]{key}`` to the next (or to ``\\end{thebibliography}``);
    ``\\newblock`` separates authors, title and venue when present. Commented-out lines are ignored.

    Args:
        latex: the LaTeX source.
        path: the file name, recorded in the result.

    Returns:
        A :class:`ReferenceList` (``source="latex"``, key = the ``\\bibitem`` key).
    """
    text = decode_latex_accents("\n".join(_COMMENT.sub("", line) for line in latex.splitlines()))
    refs: list[Reference] = []
    problems: list[str] = []
    number = 0  # entries counted over every block, empty ones included
    for env in re.findall(r"\\begin\{thebibliography\}(.*?)(?:\\end\{thebibliography\}|\Z)", text, re.DOTALL):
        items = re.split(r"\\bibitem\s*(?:\[[^\]]*\])?\s*\{([^}]*)\}", env)
        for key, body in zip(items[1::2], items[2::2], strict=True):
            number += 1
            blocks = [block.strip() for block in re.split(r"\\newblock", body) if block.strip()]
            if not blocks:
                problems.append(f"{path or 'latex'}: \\bibitem {key.strip()!r} (entry {number}) is empty")
                continue
            if len(blocks) >= 2:
                ref = parse_reference_text(" ".join(blocks), key.strip(), "latex")
                ref.authors = _split_authors(_clean(blocks[0]).rstrip("."))
                ref.title = _clean(blocks[1]).rstrip(".")
                ref.venue = _clean(" ".join(blocks[2:]))
            else:
                ref = parse_reference_text(_clean(blocks[0]), key.strip(), "latex")
            refs.append(ref)
    return ReferenceList(refs, problems, "latex", path)


def parse_jats_references(xml: str | bytes, *, path: str | None = None) -> ReferenceList:
    """Read the reference list of a JATS XML article (``<ref-list>`` in ``<back>``; referee reports' own
    references, in ``<sub-article>``, are not the article's and are left out).

    Args:
        xml: the JATS document.
        path: the file name, recorded in the result and in error messages.

    Returns:
        A :class:`ReferenceList` (``source="jats"``, key = the ``<ref>`` label, else its number); each entry's
        title is its ``article-title`` (else ``chapter-title`` / ``source``), ``raw`` the citation as printed.

    Raises:
        ValueError: malformed XML or a root other than ``<article>`` (:class:`~surveyalign.documents.JatsError`).
    """
    from surveyalign.documents.jats import parse_jats

    article = parse_jats(xml, source=path or "<jats>")
    refs = [Reference(key=ref.label.strip("[]. ") or str(ref.number), title=_clean(ref.title).rstrip("."),
                      authors=list(ref.authors), year=year_in_text(ref.year), doi=ref.doi or _ids_in(ref.text)[0],
                      arxiv_id=_ids_in(ref.text)[1], raw=ref.text, source="jats")
            for ref in article.references]
    problems = [] if refs else [f"{path or 'jats'}: the article has no <ref-list> references"]
    return ReferenceList(refs, problems, "jats", path)


def _xml_root(data: bytes) -> str:
    """Local name of an XML document's root element ("" when it cannot be told from the first 64 kB)."""
    head = re.sub(rb"<\?.*?\?>|<!--.*?-->|<!DOCTYPE[^>]*>", b"", data[:65536], flags=re.DOTALL)
    found = re.search(rb"<\s*(?:[A-Za-z_][\w.-]*:)?([A-Za-z_][\w.-]*)", head)
    return found.group(1).decode("ascii", "replace") if found else ""


_NUMERIC_CITATION = re.compile(r"\[(\d{1,4}(?:\s*[-–,;]\s*\d{1,4})*)\]")


def highest_citation_number(text: str) -> int | None:
    """The highest number cited in brackets in a text's body (``[6]``, ``[2, 7]``, ``[3-9]``, ``[3–9]``).

    The reference section (after the last ``References`` / ``Bibliography`` heading, markdown or a bare line)
    is left out, so entry labels do not count.

    Args:
        text: the document text (markdown as :func:`~surveyalign.documents.read_document` gives it).

    Returns:
        The highest cited number, or ``None`` when the body cites no number.
    """
    heads = list(re.finditer(r"(?im)^[ \t]{0,3}(?:#{1,6}[ \t]*)?(?:\d+\.?[ \t]*)?(?:references|bibliography)[ \t]*$",
                             text))
    body = text[:heads[-1].start()] if heads else text
    numbers = [int(n) for group in _NUMERIC_CITATION.findall(body) for n in re.findall(r"\d+", group)]
    return max(numbers) if numbers else None


def check_reference_count(refs: ReferenceList, text: str) -> ReferenceList:
    """Compare a reference list with the highest citation number in its document's text (a GROBID answer can hold
    fewer entries than the document numbers, e.g. two entries merged into one).

    Args:
        refs: the list read (its ``cited_up_to`` and ``problems`` are updated in place).
        text: the document's text.

    Returns:
        ``refs``, with :attr:`ReferenceList.cited_up_to` set and one problem line when entries are missing
        ("3 references read but the text cites up to [6]: 3 missing (entries merged or lost)").
    """
    highest = highest_citation_number(text)
    refs.cited_up_to = highest
    if highest is not None and len(refs) < highest:
        refs.problems.append(f"{refs.path or 'references'}: {len(refs)} references read but the text cites up to "
                             f"[{highest}]: {highest - len(refs)} missing (entries merged or lost)")
    return refs


def read_references(path: str | Path, *, pdf_reader: Callable[[Path], ReferenceList] | None = None
                    ) -> ReferenceList:
    """Read a reference list from a file, choosing the reader from its suffix.

    ``.bib`` -> :func:`parse_bibtex`; ``.tex`` / ``.bbl`` -> :func:`parse_latex_bibliography`; ``.md`` /
    ``.markdown`` / ``.txt`` -> :func:`parse_markdown_references`; ``.xml`` / ``.tei`` -> :func:`parse_tei_references` (GROBID
    TEI root) or :func:`parse_jats_references` (JATS ``<article>`` root; any other root is refused by name);
    ``.pdf`` -> ``pdf_reader`` (a GROBID server: ``surveyalign.knowledge.GrobidClient().references``, which reads
    the server named by ``GROBID_URL``).

    Args:
        path: the file.
        pdf_reader: PDF path -> :class:`ReferenceList`; needed for ``.pdf`` only.

    Returns:
        The :class:`ReferenceList`, with ``path`` set.

    Raises:
        OSError: the file cannot be read.
        ValueError: an unknown suffix (the message lists the known ones), malformed XML, an XML root that is
            neither TEI nor JATS, or a PDF
            without a ``pdf_reader``.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    readers = {".bib": parse_bibtex, ".tex": parse_latex_bibliography, ".bbl": parse_latex_bibliography,
               ".md": parse_markdown_references, ".markdown": parse_markdown_references,
               ".txt": parse_markdown_references, ".xml": parse_tei_references, ".tei": parse_tei_references}
    if suffix == ".pdf":
        if pdf_reader is None:
            server = os.environ.get(GROBID_URL_ENV) or "unset"
            raise ValueError(f"{path}: reading references from a PDF needs a GROBID server; set {GROBID_URL_ENV} "
                             f"(e.g. http://localhost:8070; now {server}) and pass "
                             "pdf_reader=surveyalign.knowledge.GrobidClient().references")
        return pdf_reader(path)
    if suffix not in readers:
        raise ValueError(f"{path}: cannot tell the reference format from suffix {suffix!r}; "
                         f"known: {sorted(readers)}")
    if suffix in (".xml", ".tei"):
        data = path.read_bytes()
        root = _xml_root(data)
        if root == "article":
            return parse_jats_references(data, path=str(path))
        if root not in ("TEI", "teiCorpus", "listBibl", "biblStruct"):
            raise ValueError(f"{path}: an XML file with root <{root or '?'}> is not a reference format read here; "
                             "known XML: GROBID TEI (<TEI>) and JATS articles (<article>)")
        return parse_tei_references(data, path=str(path))
    return readers[suffix](path.read_text(encoding="utf-8", errors="replace"), path=str(path))


_NUMBERED_LINE = re.compile(r"(?m)^\s*(?:\[\d{1,4}\]|\d{1,4}\.\s)")
_BIBTEX_ENTRY = re.compile(r"@\s*[A-Za-z]+\s*[{(]")
_TITLE_YEAR = re.compile(r"^(?P<title>.+?)[\s,;]*\(?(?P<year>(?:19|20)\d\d)[a-z]?\)?\.?$")
_BULLET = re.compile(r"^\s*(?:[-*+\u2022]\s+)")


def _entry_value(item: Any, key: str, where: str) -> Reference:
    """One entry of a list: a mapping of fields, a free-text reference (it has a year or a sentence end) or a
    bare title."""
    if isinstance(item, Mapping):
        fields = {k: item.get(k) for k in ("title", "year", "doi", "arxiv_id", "venue") if item.get(k) is not None}
        authors = item.get("authors") or []
        if not str(fields.get("title") or "").strip() and not fields.get("doi") and not fields.get("arxiv_id"):
            raise ValueError(f"{where}: entry {key} has no title, doi or arxiv_id")
        year = fields.pop("year", None)
        return Reference(key=key, authors=[str(a) for a in authors], raw=str(dict(item)), source="markdown",
                         year=year_in_text(str(year)) if year is not None else None,
                         doi=normalise_doi(fields.pop("doi", None)), arxiv_id=normalise_arxiv(fields.pop("arxiv_id", None)),
                         **{k: str(v) for k, v in fields.items()})
    if not isinstance(item, str):
        raise ValueError(f"{where}: entry {key} is a {type(item).__name__}; expected text or a mapping of fields")
    text = _BULLET.sub("", item).strip()
    dated = _TITLE_YEAR.match(text)
    if dated and not re.search(r"[.?!][\"”]?\s+\S", dated.group("title")):  # "Title (2001)", "Title, 2001"
        return Reference(key=key, title=_clean(dated.group("title")).rstrip(".,;"), year=int(dated.group("year")),
                         raw=text, source="markdown")
    if year_in_text(text) is not None or re.search(r"[.?!][\"”]?\s+\S", text):
        return parse_reference_text(text, key, "markdown")
    doi, arxiv = _ids_in(text)
    return Reference(key=key, title=_clean(text).rstrip("."), doi=doi, arxiv_id=arxiv, raw=text, source="markdown")


def read_reference_value(value: Any, *, where: str = "references") -> ReferenceList:
    """Read a reference list given as a value (a dataset or prompt field) with the readers above.

    Accepted shapes:

    * BibTeX text (an ``@type{`` entry in it) -> :func:`parse_bibtex`;
    * a markdown reference list: a ``References`` heading, or numbered ``[n]`` / ``n.`` lines ->
      :func:`parse_markdown_references` (a heading is added when the text has none);
    * other text: one entry per non-empty line (a leading ``-`` / ``*`` bullet dropped);
    * a list: one entry per item.

    An entry (a line or a list item) that is a title with its year at the end (``Title (2001)``, ``Title, 2001``)
    is read as such; one with a sentence end or a year elsewhere is a free-text reference
    (:func:`parse_reference_text`); otherwise it is a bare title. A list item may also be a mapping with ``title``,
    ``authors``, ``year``, ``doi``, ``arxiv_id``, ``venue``. (A citation graph resolves a title only with its year,
    first author, DOI or arXiv id: the safe rule of :mod:`surveyalign.knowledge.resolve`.)

    Args:
        value: the value (``None`` or empty: an empty list).
        where: what the value is (record and field), named in problems and errors.

    Returns:
        The :class:`ReferenceList` (keys ``"1"``, ``"2"``... for lines and items, BibTeX keys for BibTeX).

    Raises:
        ValueError: a value of another type, or a list item that is neither text nor a mapping with a title / id
            (one line naming ``where`` and the entry).
    """
    if value is None:
        return ReferenceList([], [], "markdown")
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return ReferenceList([], [], "markdown")
        if _BIBTEX_ENTRY.search(text):
            found = parse_bibtex(text, path=where)
            if not found.references:
                found.problems.append(f"{where}: BibTeX text with no entry read")
            return found
        if _REF_HEADING_TEXT.search(text) or _NUMBERED_LINE.search(text):
            body = text if _REF_HEADING_TEXT.search(text) else "## References\n\n" + text
            return parse_markdown_references(body, path=where)
        value = [line for line in text.splitlines() if line.strip()]
    if isinstance(value, Mapping) or not isinstance(value, (list, tuple)):
        raise ValueError(f"{where}: expected BibTeX, a markdown reference list or a list of titles, got "
                         f"{type(value).__name__}")
    refs, problems = [], []
    for i, item in enumerate(value, start=1):
        if isinstance(item, str) and not item.strip():
            problems.append(f"{where}: entry {i} is empty")
            continue
        refs.append(_entry_value(item, str(i), where))
    return ReferenceList(refs, problems, "markdown")


_REF_HEADING_TEXT = re.compile(r"(?im)^\s{0,3}#{1,6}\s*(?:\d+[.\s]*)?(references|bibliography|works cited)\s*$")

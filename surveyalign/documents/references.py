"""A survey's reference list R (SurveyReview §5.2.1) from BibTeX, LaTeX, markdown or GROBID TEI.

Every reader returns a :class:`ReferenceList`: the typed :class:`Reference` entries in source order, plus the
entries it could not read (``problems``, one line each with the entry's position), so nothing is dropped
silently. :func:`cited_keys` lists the keys a LaTeX text cites with the ``\\cite`` family of commands, so a
BibTeX file can be cut down to what the survey really cites.

Readers: :func:`parse_bibtex` (``bibtexparser`` 2), :func:`parse_latex_bibliography` (``\\bibitem``),
:func:`parse_markdown_references` (numbered ``[n]`` or author-year), :func:`parse_tei_references` (GROBID),
and :func:`read_references`, which picks one from a file's suffix.
"""

from __future__ import annotations

import itertools
import os
import re
import unicodedata
from collections.abc import Callable
from pathlib import Path

import bibtexparser
from bibtexparser.middlewares import LatexDecodingMiddleware
from bibtexparser.model import DuplicateBlockKeyBlock

from surveyalign.documents.papers import (
    Reference,
    ReferenceList,
    fix_ligatures,
    normalise_arxiv,
    normalise_doi,
    year_in_text,
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
    "read_references",
]


_DOI_IN_TEXT = re.compile(r"\b(10\.\d{4,9}/[^\s\"<>{}]+)", re.IGNORECASE)
_ARXIV_IN_TEXT = re.compile(r"(?:arxiv[:\s./a-z]*?)(\d{4}\.\d{4,5})(?:v\d+)?", re.IGNORECASE)
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


def _clean(text: str) -> str:
    """Collapse whitespace and strip the braces and stray markup that BibTeX / LaTeX leave in a field."""
    text = re.sub(r"\\(?:emph|textit|textbf|textsc|em|it|bf|url|href)\b\s*", "", text)
    text = text.replace("{", "").replace("}", "").replace("~", " ")
    return re.sub(r"\s+", " ", text).strip().strip(",;")


def _ids_in(text: str) -> tuple[str | None, str | None]:
    doi = _DOI_IN_TEXT.search(text)
    arxiv = _ARXIV_IN_TEXT.search(text)
    return (normalise_doi(doi.group(1)) if doi else None, normalise_arxiv(arxiv.group(1)) if arxiv else None)


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
            key = key.strip()
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
            arxiv_id=normalise_arxiv(fields.get("eprint")) or arxiv,
            venue=_clean(fields.get("journal") or fields.get("booktitle") or fields.get("publisher") or ""),
            raw=entry.raw if hasattr(entry, "raw") else "",
            source="bibtex",
        ))
    return ReferenceList(refs, problems, "bibtex", path)


def _split_authors(segment: str) -> list[str]:
    segment = re.sub(r"\bet al\.?", "", segment)
    # "Family, I. J., Family, K. and Family, L." (APA): pair each family name with its initials
    pairs = re.findall(r"([A-Z][^\s,.]+(?: [A-Z][^\s,.]+)*),\s*((?:[A-Z](?:\.|(?=[\s,]|$))\s*-?)+)", segment)
    if pairs and segment.lstrip().startswith(pairs[0][0]):
        return [f"{family}, {initials.strip()}" for family, initials in pairs]
    parts = re.split(r",\s*(?:and\s+)?|\s+and\s+|;\s*", segment)
    return [_clean(part) for part in parts if _clean(part) and len(_clean(part)) > 1]


_PARTICLES = frozenset({"van", "von", "de", "der", "den", "del", "della", "da", "di", "du", "la", "le", "dos", "das",
                        "bin", "ben", "al", "el", "y", "ter", "ten", "zu"})
_TITLE_WORDS = frozenset({"a", "an", "the", "of", "for", "on", "in", "with", "to", "via", "and", "is", "are", "from",
                          "by", "using", "towards", "learning", "networks", "models", "survey"})
_NAME = r"[A-ZÀ-ÖØ-ÞĀ-ſ][\w'’\-]*(?:[ -](?:(?:van|von|de|der|den|del|da|di|du|la|le)\s)?[A-ZÀ-ÖØ-ÞĀ-ſ][\w'’\-]*)*"
#: Author lists that end before the title, tried in order (each group "a" is the author segment).
_AUTHOR_SEGMENTS = (
    # Springer / F1000: "Vaswani, A., Shazeer, N.: Title" and "Alberts B, Kirschner MW, et al.: Title"
    re.compile(r"^(?P<a>[^:\"“]{2,800}?(?:\b[A-ZÀ-ÖØ-ÞĀ-ſ]\.|\b[A-ZÀ-ÖØ-ÞĀ-ſ]{1,3}|et al\.?))\s*:\s+(?=\S)"),
    # Vancouver / NLM: "Lee A, Kim BC. Title" (family name, then initials without periods)
    re.compile(rf"^(?P<a>(?:{_NAME}\s[A-ZÀ-ÖØ-ÞĀ-ſ]{{1,3}}(?:,\s+|(?=\.\s|,?\s*et al)))+(?:,?\s*et al)?)\.\s+(?=\S)"),
    # family name, initials: "Müller, A., Schmidt, B. J. and Weber, C. Title"
    re.compile(rf"^(?P<a>(?:{_NAME},\s(?:[A-ZÀ-ÖØ-ÞĀ-ſ]\.\s?-?)+(?:,\s(?:and\s|&\s)?|\s(?:and|&)\s)?)+(?:,?\s*et al\.)?)\s+"
               r"(?=[A-ZÀ-ÖØ-ÞĀ-ſ\d\"“])"),
    # initials first: "A. Vaswani, N. M. Shazeer and L. Kaiser. Title"
    re.compile(rf"^(?P<a>(?:(?:[A-ZÀ-ÖØ-ÞĀ-ſ]\.\s?-?)+\s?{_NAME}(?:,\s(?:and\s)?|\s(?:and|&)\s)?)+(?:,?\s*et al\.?)?)[.,]?\s+"
               r"(?=[A-ZÀ-ÖØ-ÞĀ-ſ\d\"“])"),
)
#: A sentence end inside a reference: ". " not after a lone capital (an initial), or "?" / "!".
_SENTENCE_END = re.compile(r"(?<!\b[A-ZÀ-ÖØ-ÞĀ-ſ])(?<!\bvs)(?<!\be\.g)(?<!\bi\.e)\.\s+|(?<=[?!])\s+")
_LABEL = re.compile(r"^\s*(?:\[\d{1,4}\]|\d{1,4}\.(?=\s))\s*")


def _looks_like_names(segment: str) -> bool:
    """True when a segment reads as an author list: mostly short pieces of capitalised words, initials or
    particles ("Ken- ichi Kawarabayashi", "yelong shen" and "[S]u[snjara" pass as one odd piece among others)."""
    text = re.sub(r",?\s*et al\.?", "", segment).strip(" .,")
    if not text or re.search(r"(?<!\bJr)(?<!\bSt)[a-z]{3,}\.\s", text):
        return False
    pieces = [piece.split() for piece in re.split(r",\s*(?:and\s+)?|\s+and\s+|\s*&\s*|;\s*", text)]
    if any(not words or len(words) > 6 for words in pieces):
        return False

    def name_like(words: list[str]) -> bool:
        capital = sum(w[0].isupper() or w.lower() in _PARTICLES or not w[0].isalpha() for w in words)
        return capital * 2 > len(words) or len(words) <= 2 and not any(w.lower() in _TITLE_WORDS for w in words)

    if re.match(r"[A-ZÀ-ÖØ-ÞĀ-ſ]\.", text):  # initials first (IEEE): every author has initials ("S. Kullback, Title")
        return all(re.match(r"(?:[A-ZÀ-ÖØ-ÞĀ-ſ]\.\s?-?)+", " ".join(words)) for words in pieces)
    if len(pieces) == 1:  # one name: every word capitalised ("Lee A. Specific graphs" is no name)
        return all(w[0].isupper() or w.lower() in _PARTICLES or not w[0].isalpha() for w in pieces[0])
    return sum(name_like(words) for words in pieces) >= 0.6 * len(pieces)


def _author_lead(text: str) -> bool:
    """True when the text before an ACM / APA year can be its author list (names, or one phrase such as
    "BIG bench authors" without a sentence end)."""
    return _looks_like_names(text) or bool(text) and not re.search(r"[a-z\d]{2,}[.?!]\s", text)


def _first_sentence(text: str) -> str:
    """The reference's title: ``text`` up to its first sentence end (a ``?`` or ``!`` is kept)."""
    found = _SENTENCE_END.search(text)
    return text[:found.start()] if found else text


def parse_reference_text(text: str, key: str, source: str = "markdown") -> Reference:
    """Read title, authors, year, DOI and arXiv id from one free-text reference entry.

    Rule-based (no maintained Python parser covers survey reference styles without a heavy CRF / ML model).
    Recognised layouts, a leading ``[n]`` / ``n.`` label removed first:

    * IEEE: ``A. Author, B. Author, "Title," in Proc. X, 2020.`` (the quoted title);
    * ACM / ACL: ``Authors. 2020. Title. In Venue.``; APA: ``Author, A. and Author, B. (2020). Title. Venue.``;
    * Springer: ``Author, A., Author, B.: Title. In: Venue, pp. 1-9 (2020)``;
    * Vancouver / NLM: ``Lee A, Kim BC. Title. Journal. 2019;12:1-9.``;
    * plain ``Authors. Title. Venue, 2020.`` and a title first with no authors
      (``Parameter-efficient transfer learning for NLP. In Proc. ICML``).

    The title runs to the first sentence end (``. `` not after an initial; a ``?`` / ``!`` is kept), so
    ``In Proc.``, a journal name or a year never become the title.

    Args:
        text: the entry (whitespace is collapsed).
        key: the key to give the :class:`Reference`.
        source: one of :data:`~surveyalign.documents.papers.REFERENCE_FORMATS`.

    Returns:
        The :class:`Reference` (``title`` may be a best guess for other layouts; ``raw`` keeps the text).
    """
    raw = fix_ligatures(re.sub(r"\s+", " ", text).strip())
    doi, arxiv = _ids_in(raw)
    body = _LABEL.sub("", raw)
    # a quoted title; an opening quote after the authors whose closing quote was lost runs to the sentence end
    quoted = (re.search(r"[\"“](.+?)[,.]?[\"”]|``(.+?)[,.]?''", body)
              or re.search(r"(?<=,\s)[\"“](.+?)(?:[,.]\s|$)()", body))
    title, authors_text = "", ""
    year_dot = re.search(r"(?:^|[.,]\s)((?:19|20)\d\d)[a-z]?\.(?:\s|$)", body)  # ACM / ACL: "Authors. 2020. Title."
    apa = re.search(r"\(((?:19|20)\d\d)[a-z]?\)[.,:]?\s", body)  # APA: "Authors (2020). Title."
    dated = next((found for found in (year_dot, apa) if found is not None and body[found.end():].strip()
                  and _author_lead(body[:found.start(1) - (1 if found is apa else 0)].rstrip(". ("))), None)
    if quoted and (not dated or quoted.start() < dated.start()):
        title = quoted.group(1) or quoted.group(2)
        authors_text = body[:quoted.start()]
    elif dated:
        authors_text = body[:dated.start(1) - (1 if dated is apa else 0)]
        title = _first_sentence(body[dated.end():])
    else:
        # a Springer colon or a "Family, I." list first; then "Authors. Title." when the first sentence reads
        # as names; then the author lists that end with an initial (Vancouver "Lee A.", "A. Vaswani")
        first = _SENTENCE_END.search(body)
        lead = body[:first.start()] if first else ""
        segments = [found for pattern in _AUTHOR_SEGMENTS for found in [pattern.match(body)]
                    if found and _looks_like_names(found.group("a"))]
        if segments and segments[0].re in (_AUTHOR_SEGMENTS[0], _AUTHOR_SEGMENTS[2]):
            authors_text, rest = segments[0].group("a"), body[segments[0].end():]
        elif first and _looks_like_names(lead):
            authors_text, rest = lead, body[first.end():]
        elif segments:
            authors_text, rest = segments[0].group("a"), body[segments[0].end():]
        else:
            rest = body
        title = _first_sentence(re.sub(r"^\[?n\.\s?d\.\]?\.?\s*", "", rest))
    return Reference(key=key, title=_clean(title).rstrip("."), authors=_split_authors(authors_text.rstrip(". (:")),
                     year=year_in_text(raw), doi=doi, arxiv_id=arxiv, raw=raw, source=source)


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
    for env in re.findall(r"\\begin\{thebibliography\}(.*?)(?:\\end\{thebibliography\}|\Z)", text, re.DOTALL):
        items = re.split(r"\\bibitem\s*(?:\[[^\]]*\])?\s*\{([^}]*)\}", env)
        for number, (key, body) in enumerate(zip(items[1::2], items[2::2], strict=True), start=len(refs) + 1):
            blocks = [block.strip() for block in re.split(r"\\newblock", body) if block.strip()]
            if not blocks:
                problems.append(f"{path or 'latex'}: \\bibitem {key!r} (entry {number}) is empty")
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


_REF_HEADING = re.compile(r"^\s{0,3}#{1,6}\s*(?:\d+[.\s]*)?(references|bibliography|works cited|literature cited)"
                          r"\s*$", re.IGNORECASE | re.MULTILINE)


def _reference_section(markdown: str) -> str | None:
    headings = list(_REF_HEADING.finditer(markdown))
    if not headings:
        return None
    rest = markdown[headings[-1].end():]
    following = re.search(r"^\s{0,3}#{1,6}\s+\S", rest, re.MULTILINE)
    if following and re.match(r"\s{0,3}#{1,6}\s*(appendix|[A-Z]\s)", rest[following.start():].strip(),
                              re.IGNORECASE):
        rest = rest[:following.start()]
    return rest


def _numbered_entries(section: str) -> list[tuple[str, str]]:
    """Split ``[1] ... [2] ...`` (or ``1. ...`` at line starts) into (number, text), following the numbering.

    A marker is taken only when its number is the next one expected, so bracketed numbers inside an entry
    (``[S]u``, ``[3]`` in a title) do not start a new entry.
    """
    markers = [(m.start(), m.end(), int(m.group(1))) for m in re.finditer(r"\[(\d{1,4})\]", section)]
    if not markers:
        markers = [(m.start(), m.end(), int(m.group(1)))
                   for m in re.finditer(r"(?m)^\s*(\d{1,4})\.\s", section)]
    chosen: list[tuple[int, int, int]] = []
    expected = None
    for start, end, number in markers:
        if expected is None and number in (0, 1) or expected is not None and number == expected:
            chosen.append((start, end, number))
            expected = number + 1
    entries = []
    for i, (_, end, number) in enumerate(chosen):
        stop = chosen[i + 1][0] if i + 1 < len(chosen) else len(section)
        entries.append((str(number), section[end:stop]))
    return entries


def _author_year_entries(section: str) -> list[str]:
    """Split an author-year list (``Authors. 2023a. Title. Venue.``) into entries, also when run together."""
    text = re.sub(r"\s+", " ", section).strip()
    years = list(re.finditer(r"(?<=\.)\s((?:19|20)\d\d[a-z]?)\.\s", text))
    if not years:
        return [para.strip() for para in re.split(r"\n\s*\n", section) if para.strip()]
    starts = [0]
    for prev, cur in itertools.pairwise(years):
        between = text[prev.end():cur.start()]
        # the next entry's authors are the last sentence before its year: split on ". " before a capital
        cut = list(re.finditer(r"(?<=[a-z\d)\]])\.\s+(?=[A-Z])", between))
        starts.append(prev.end() + cut[-1].end() if cut else cur.start())
    return [text[a:b].strip() for a, b in zip(starts, starts[1:] + [len(text)], strict=True)]


def parse_markdown_references(markdown: str, *, path: str | None = None) -> ReferenceList:
    """Read the reference section of a markdown survey (the last ``References`` / ``Bibliography`` heading).

    Numbered styles (``[n] ...``, also several entries run together on one line as PDF converters leave
    them, or ``n. ...`` at line starts) are split by following the numbering 1, 2, 3...; otherwise the
    section is read as an author-year list (``Authors. 2023. Title. Venue.``).

    Args:
        markdown: the survey's markdown text.
        path: the file name, recorded in the result and in problem lines.

    Returns:
        A :class:`ReferenceList` (``source="markdown"``; key = the number label, or ``"ref-N"`` for
        author-year entries). A text without a reference heading gives an empty list and one problem line.
    """
    where = path or "markdown"
    section = _reference_section(markdown)
    if section is None:
        return ReferenceList([], [f"{where}: no 'References' / 'Bibliography' heading found"], "markdown", path)
    numbered = _numbered_entries(section)
    refs: list[Reference] = []
    problems: list[str] = []
    if numbered:
        for number, body in numbered:
            if not body.strip():
                problems.append(f"{where}: reference [{number}] is empty")
                continue
            refs.append(parse_reference_text(body, number, "markdown"))
    else:
        for i, body in enumerate(_author_year_entries(section), start=1):
            refs.append(parse_reference_text(body, f"ref-{i}", "markdown"))
    return ReferenceList(refs, problems, "markdown", path)


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

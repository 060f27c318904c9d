"""Reference entries written as plain text (SurveyReview §5.2.1): one free-text entry into a :class:`Reference`
(:func:`parse_reference_text`, author / title / year / ids by pattern) and a markdown reference section into a
:class:`ReferenceList` (:func:`parse_markdown_references`, numbered ``[n]`` or author-year lists).

Shared field helpers live here too (``_clean`` strips BibTeX / LaTeX markup, ``_ids_in`` finds a DOI and an arXiv
id in a text) and :mod:`surveyalign.documents.references` reuses them for BibTeX, LaTeX and JATS entries.
"""

from __future__ import annotations

import itertools
import re

from surveyalign.documents.papers import (
    Reference,
    ReferenceList,
    fix_ligatures,
    normalise_arxiv,
    normalise_doi,
    year_in_text,
)

_DOI_IN_TEXT = re.compile(r"\b(10\.\d{4,9}/[^\s\"<>{}]+)", re.IGNORECASE)
_ARXIV_IN_TEXT = re.compile(r"(?:arxiv[:\s./a-z]*?)(\d{4}\.\d{4,5})(?:v\d+)?", re.IGNORECASE)


def _clean(text: str) -> str:
    """Collapse whitespace and strip the braces and stray markup that BibTeX / LaTeX leave in a field."""
    text = re.sub(r"\\(?:emph|textit|textbf|textsc|em|it|bf|url|href)\b\s*", "", text)
    text = text.replace("{", "").replace("}", "").replace("~", " ")
    return re.sub(r"\s+", " ", text).strip(" ,;")


def _ids_in(text: str) -> tuple[str | None, str | None]:
    doi = _DOI_IN_TEXT.search(text)
    arxiv = _ARXIV_IN_TEXT.search(text)
    return (normalise_doi(doi.group(1)) if doi else None, normalise_arxiv(arxiv.group(1)) if arxiv else None)


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
    # the year opens the entry ("2020a. Title.", "(2020). Title.": the authors lost) or follows what can be its authors
    dated = next((found for found in (year_dot, apa) if found is not None and body[found.end():].strip()
                  and (found.start() == 0
                       or _author_lead(body[:found.start(1) - (1 if found is apa else 0)].rstrip(". (")))), None)
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
                     year=year_in_text(_ARXIV_IN_TEXT.sub(" ", raw)), doi=doi, arxiv_id=arxiv, raw=raw, source=source)


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

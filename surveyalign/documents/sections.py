"""The one heading splitter: markdown and LaTeX headings of a text, and the sections they open.

Headings are read from markdown (``#``..``######`` at a line start; lines inside ````` fences skipped) and LaTeX
(``\\part``, ``\\chapter`` .. ``\\subsubsection``, starred or not, optional short title). Every heading and section
carries character offsets into the text it came from, so a caller can cut the text or point back into it.
Used by :class:`~surveyalign.documents.Document` (``sections``), PRISM's paper reader and the autoraters'
Introduction / Related Work finder.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Heading", "Section", "find_headings", "normalise_heading", "split_sections"]

_MD_HEADING = re.compile(r"^(#{1,6})[ \t]+(\S[^\n]*?)[ \t]*#*[ \t]*$", re.MULTILINE)
_FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)
_LATEX_HEADING = re.compile(r"\\(part|chapter|section|subsection|subsubsection)\*?\s*(?:\[[^\]]*\])?\s*\{")
_LATEX_LEVELS = {"part": 0, "chapter": 1, "section": 2, "subsection": 3, "subsubsection": 4}
_NUMBERING = re.compile(r"^(?:(?:section|chapter)\s+)?(?:\d+(?:\.\d+)*\.?|[ivxlc]+\.|[a-z]\.)\s*", re.IGNORECASE)
_ROMAN = re.compile(r"^[IVXLC]+\s+(?=\S)")
_COMMAND = re.compile(r"\\[a-zA-Z]+\*?")


@dataclass(frozen=True)
class Heading:
    """One heading of a text.

    Attributes:
        title: the heading text as written (markup kept; markdown closing hashes and spaces removed).
        level: depth (markdown: number of ``#``, 1-6; LaTeX: part 0, chapter 1, section 2, subsection 3, ...).
        start: character offset where the heading begins.
        body_start: offset just after the heading (end of its line / closing brace).
    """

    title: str
    level: int
    start: int
    body_start: int


@dataclass(frozen=True)
class Section:
    """One section: a heading and the text up to the next heading (of any level).

    Attributes:
        heading: the heading title as written, stripped.
        level: the heading's level (see :class:`Heading`).
        start: offset of the heading in the text.
        body_start: offset where the body begins.
        end: offset where the next heading begins (or the end of the text).
        text: the body, stripped.
    """

    heading: str
    level: int
    start: int
    body_start: int
    end: int
    text: str


def _braced(text: str, open_at: int) -> int:
    """Offset just after the ``}`` matching the ``{`` at ``open_at - 1`` (end of text when unbalanced)."""
    depth, i = 1, open_at
    while i < len(text) and depth:
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        i += 1
    return i


def find_headings(text: str, *, latex: bool = True) -> list[Heading]:
    """All markdown (and, with ``latex``, LaTeX) headings of ``text``, in document order.

    Args:
        text: markdown or LaTeX.
        latex: also read ``\\section{...}``-style headings.

    Returns:
        The headings sorted by offset (markdown lines inside code fences are skipped).
    """
    fences = [(m.start(), m.end()) for m in _FENCE.finditer(text)] if "```" in text else []
    found = [Heading(m.group(2), len(m.group(1)), m.start(), m.end()) for m in _MD_HEADING.finditer(text)
             if not any(a <= m.start() < b for a, b in fences)]
    if latex and "\\" in text:
        for m in _LATEX_HEADING.finditer(text):
            end = _braced(text, m.end())
            found.append(Heading(text[m.end():end - 1], _LATEX_LEVELS[m.group(1)], m.start(), end))
    return sorted(found, key=lambda h: h.start)


def split_sections(text: str, *, latex: bool = True) -> list[Section]:
    """The sections of ``text``: each heading with the body up to the next heading (of any level).

    Args:
        text: markdown or LaTeX.
        latex: also split at LaTeX headings.

    Returns:
        One :class:`Section` per heading, in order (text before the first heading belongs to none); ``[]``
        when there is no heading.
    """
    heads = find_headings(text, latex=latex)
    out = []
    for i, head in enumerate(heads):
        end = heads[i + 1].start if i + 1 < len(heads) else len(text)
        out.append(Section(head.title.strip(), head.level, head.start, head.body_start, end,
                           text[head.body_start:end].strip()))
    return out


def normalise_heading(title: str) -> str:
    """Lower-case words of a heading title without numbering, markup or punctuation.

    Args:
        title: e.g. ``"2.1 \\textbf{Related Works}:"`` or ``"**1 INTRODUCTION**"``.

    Returns:
        e.g. ``"related works"``, ``"introduction"``.
    """
    plain = _COMMAND.sub(" ", title)
    plain = re.sub(r"[*_`{}~\[\]()]", " ", plain).strip()
    plain = _NUMBERING.sub("", _ROMAN.sub("", plain))
    return " ".join(re.sub(r"[^0-9a-z]+", " ", plain.lower()).split())

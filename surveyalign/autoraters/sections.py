"""Find the Introduction and Related Work sections of a paper by heading similarity (PaperOrchestra App. F.3).

The side-by-side literature-review autorater reads only these two sections (or their closest equivalents).
Headings are read by the one heading splitter, :func:`surveyalign.documents.find_headings` (markdown and
LaTeX). A heading's title is normalised (:func:`surveyalign.documents.normalise_heading`: numbering such as
``1``, ``2.3``, ``IV.`` or ``A.`` removed, markup and punctuation dropped, lower case) and compared with the
names of each role: an exact name scores 100, a heading that contains every word of a name ("Introduction to
graph neural networks", "Background and related work") scores 95, anything else its rapidfuzz ratio (typos,
plurals). The best heading at or above :data:`MIN_HEADING_SIMILARITY` is taken per role (ties: earlier name in
the role's list, then the higher level, then the earlier heading); its section runs to the next heading of the
same or a higher level, or to the bibliography / appendix / end of the document. Which headings were taken,
with their scores, is reported.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Any

from rapidfuzz import fuzz

from surveyalign.documents import Heading, find_headings, normalise_heading

__all__ = ["MIN_HEADING_SIMILARITY", "SECTION_ROLES", "SectionSelection", "TakenSection", "extract_review_sections",
           "heading_similarity"]

#: Role -> heading names, most specific first.
SECTION_ROLES: dict[str, tuple[str, ...]] = {
    "introduction": ("introduction",),
    "related_work": ("related work", "related works", "literature review", "background", "related literature",
                     "related research", "prior work", "previous work", "state of the art", "preliminaries"),
}

#: Smallest similarity (0-100) for a heading to be taken.
MIN_HEADING_SIMILARITY: float = 85.0

_LATEX_END = re.compile(r"\\(?:appendix\b|begin\{thebibliography\}|bibliography\{|printbibliography|end\{document\})")


def heading_similarity(title: str, name: str) -> float:
    """Similarity (0-100) of a heading title to a section name (see the module docstring).

    Args:
        title: a heading as written.
        name: a lower-case section name, e.g. ``"related work"``.

    Returns:
        100 for an exact match, 95 when the title holds every word of ``name``, else the rapidfuzz ratio.
    """
    norm = normalise_heading(title)
    if norm == name:
        return 100.0
    if set(name.split()) <= set(norm.split()):
        return 95.0
    return float(fuzz.ratio(norm, name))


@dataclass(frozen=True)
class TakenSection:
    """A section taken for a role.

    Attributes:
        role: ``"introduction"`` or ``"related_work"``.
        heading: the heading as written.
        matched_name: the role name it matched.
        similarity: 0-100.
        level: heading level.
        start: offset of the heading.
        end: offset where the section ends.
    """

    role: str
    heading: str
    matched_name: str
    similarity: float
    level: int
    start: int
    end: int


@dataclass(frozen=True)
class SectionSelection:
    """The Introduction + Related Work text of a paper and how it was found.

    Attributes:
        text: the taken sections in document order (the whole document when nothing was found).
        taken: one entry per role found.
        missing: roles for which no heading reached the similarity threshold.
        nested: roles whose best heading lies inside another taken section (its text is already included).
        whole_document: True when no section was found and the whole text was used instead.
    """

    text: str
    taken: tuple[TakenSection, ...]
    missing: tuple[str, ...]
    nested: tuple[str, ...] = ()
    whole_document: bool = False

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable view without the text (its length is given as ``chars``)."""
        out = asdict(self)
        out.pop("text")
        out["chars"] = len(self.text)
        return out


def _section_end(text: str, headings: list[Heading], index: int) -> int:
    head = headings[index]
    end = len(text)
    for later in headings[index + 1:]:
        if later.level <= head.level:
            end = later.start
            break
    stop = _LATEX_END.search(text, head.body_start, end)
    return stop.start() if stop else end


def extract_review_sections(text: str, min_similarity: float = MIN_HEADING_SIMILARITY) -> SectionSelection:
    """The Introduction and Related Work sections (or the closest equivalents) of a paper.

    Args:
        text: the paper, markdown or LaTeX.
        min_similarity: smallest heading similarity (0-100) to take a heading.

    Returns:
        A :class:`SectionSelection` naming the headings taken (with their similarity), the roles missing and
        whether the whole document had to be used because no heading matched.
    """
    headings = find_headings(text)
    picks: dict[str, tuple[TakenSection, int]] = {}
    for role, names in SECTION_ROLES.items():
        best: tuple[tuple, TakenSection, int] | None = None
        for index, head in enumerate(headings):
            for rank, name in enumerate(names):
                sim = heading_similarity(head.title, name)
                if sim < min_similarity:
                    continue
                order = (-sim, rank, head.level, head.start)
                if best is None or order < best[0]:
                    taken = TakenSection(role, head.title.strip(), name, sim, head.level, head.start,
                                         _section_end(text, headings, index))
                    best = (order, taken, index)
        if best is not None:
            picks[role] = (best[1], best[2])
    if "introduction" in picks and "related_work" in picks:
        intro, related = picks["introduction"][0], picks["related_work"][0]
        if intro.start == related.start:  # one heading cannot play both roles
            del picks["related_work"]
    taken = sorted((p[0] for p in picks.values()), key=lambda t: t.start)
    nested = tuple(t.role for t in taken
                   if any(o is not t and o.start < t.start and t.end <= o.end for o in taken))
    missing = tuple(role for role in SECTION_ROLES if role not in picks)
    if not taken:
        return SectionSelection(text, (), missing, (), True)
    parts = [text[t.start:t.end].strip() for t in taken if t.role not in nested]
    return SectionSelection("\n\n".join(parts), tuple(taken), missing, nested)

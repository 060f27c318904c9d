"""Numbered reference lists of papers, for citation F1 (PaperOrchestra App. F.3).

The lists come from the shared readers: :func:`surveyalign.documents.read_document` for the paper and the
reference readers of :mod:`surveyalign.knowledge` for its bibliography. A LaTeX paper's raw bibliography (``.bib``
or ``thebibliography``) is read with its fields (DOI, arXiv id, year) and numbered as the reader numbers its
citations (``\\bibitem`` order, or order of first citation for BibTeX); a markdown or PDF paper's
``References`` section is read from its text.
Their resolution to Semantic Scholar ids is :func:`surveyalign.knowledge.resolve_references` (DOI / arXiv ids
first in one batch call, then a title search whose every hit is checked; never a top hit taken blindly).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from surveyalign.autoraters.raters import NumberedReference
from surveyalign.documents import (
    Document,
    Reference,
    ReferenceList,
    check_reference_count,
    parse_bibtex,
    parse_latex_bibliography,
    parse_markdown_references,
)

__all__ = ["PaperReferences", "paper_references"]


@dataclass
class PaperReferences:
    """The numbered reference list of one paper.

    Attributes:
        numbered: ``(number, Reference)`` in list order; the number is what the paper's text cites.
        source: where the list came from: ``"bibtex"``, ``"thebibliography"`` or ``"markdown"``.
        problems: unreadable entries, cited keys without an entry, a missing reference section.
        n_uncited: bibliography entries never cited (LaTeX; left out of the numbered list).
        cited_up_to: the highest ``[n]`` the text cites (markdown / PDF lists, checked against the list's length: a
            shorter list adds a problem line), else ``None``.
    """

    numbered: list[tuple[str, Reference]]
    source: str
    problems: list[str] = field(default_factory=list)
    n_uncited: int = 0
    cited_up_to: int | None = None

    def as_prompt_list(self) -> list[NumberedReference]:
        """The list as the partition prompt shows it: the entry as written; BibTeX entries (and entries without
        text) as ``"Authors (year). Title. Venue."``."""
        out = []
        for number, ref in self.numbered:
            if ref.title and (ref.source == "bibtex" or not ref.raw.strip()):
                authors = ", ".join(ref.authors[:3]) + (" et al." if len(ref.authors) > 3 else "")
                parts = [f"{authors} ({ref.year})" if ref.year else authors, ref.title, ref.venue]
                text = ". ".join(p for p in parts if p) + "."
            else:
                text = " ".join(ref.raw.split())
            out.append(NumberedReference(number, text))
        return out

    def counts(self) -> dict[str, Any]:
        """``{"source", "n_references", "n_uncited", "cited_up_to", "n_problems", "problems"}``."""
        return {"source": self.source, "n_references": len(self.numbered), "n_uncited": self.n_uncited,
                "cited_up_to": self.cited_up_to, "n_problems": len(self.problems), "problems": list(self.problems)}


def paper_references(document: Document) -> PaperReferences:
    """The numbered reference list of a paper read by :func:`surveyalign.documents.read_document`.

    Args:
        document: the paper (markdown, LaTeX or PDF).

    Returns:
        A :class:`PaperReferences` (possibly empty, with the reason in ``problems``).
    """
    where = str(document.source)
    if document.format == "latex" and document.bibliography:
        if document.bibliography_format == "bibtex":
            parsed: ReferenceList = parse_bibtex(document.bibliography, path=where)
            source = "bibtex"
        else:
            parsed = parse_latex_bibliography(document.bibliography, path=where)
            source = "thebibliography"
        by_key = {ref.key: ref for ref in parsed.references}
        # the reader's numbering: \bibitem order for thebibliography, order of first citation for BibTeX
        order = [ref.key for ref in parsed.references] if source == "thebibliography" else document.cited_keys
        numbered, problems = [], list(parsed.problems)
        for index, key in enumerate(order, start=1):
            if key in by_key:
                numbered.append((str(index), by_key[key]))
            else:
                problems.append(f"{where}: cited key {key!r} (reference [{index}]) has no bibliography entry")
        uncited = len(set(by_key) - set(document.cited_keys))
        return PaperReferences(numbered, source, problems, uncited)
    parsed = parse_markdown_references(document.text, path=where)
    # fewer entries than the highest [n] the text cites: entries merged or lost on the way
    check_reference_count(parsed, document.text)
    numbered = [(ref.key.removeprefix("ref-"), ref) for ref in parsed.references]
    return PaperReferences(numbered, "markdown", list(parsed.problems), cited_up_to=parsed.cited_up_to)

"""The JATS article record and its markdown rendering (SurveyReview §4.1, App. A).

:class:`JatsArticle` is the article alone; referee reports, author responses and decision letters live in
:attr:`JatsArticle.sub_articles` and are never part of :meth:`JatsArticle.to_markdown`.
"""

from __future__ import annotations

from dataclasses import dataclass, field


class JatsError(ValueError):
    """A document that is not well-formed JATS XML (names the source and the parser's message)."""


@dataclass
class JatsSection:
    """One section of the article body or back matter.

    Attributes:
        heading: section title with its label ("2.1 Survey design"); "" for text outside any titled section.
        level: nesting depth, 1 for a top-level section (rendered as a level-2 markdown heading).
        text: the section's own paragraphs (markdown), without those of its sub-sections.
    """

    heading: str
    level: int
    text: str

    def to_markdown(self) -> str:
        """Heading line (``level + 1`` hashes, at most 6) and text, "" parts left out."""
        heading = f"{'#' * min(self.level + 1, 6)} {self.heading}" if self.heading else ""
        return "\n\n".join(x for x in (heading, self.text) if x)


@dataclass
class JatsCaption:
    """Caption of a figure, table or box.

    Attributes:
        kind: "figure", "table" or "box".
        label: printed label ("Figure 1."), "" when absent.
        caption: caption title and paragraphs as one line of text.
        id: the element's id attribute ("" when absent).
    """

    kind: str
    label: str
    caption: str
    id: str = ""


@dataclass
class JatsReference:
    """One entry of a reference list.

    Attributes:
        number: 1-based position in the list.
        text: the citation as printed (names, title, source, year, pages, identifiers).
        label: printed label ("1", "[1]"), "" when absent.
        id: the ``<ref>`` id attribute.
        doi: DOI from ``<pub-id pub-id-type="doi">``, "" when absent.
        title: article or book title of the cited work, "" when absent.
        year: publication year as printed, "" when absent.
        authors: the cited authors as printed ("Lee A"), in order; empty when the citation names none.
    """

    number: int
    text: str
    label: str = ""
    id: str = ""
    doi: str = ""
    title: str = ""
    year: str = ""
    authors: list[str] = field(default_factory=list)


@dataclass
class SubArticle:
    """A document carried inside the article: referee report, author response, decision letter, ...

    Attributes:
        article_type: the element's ``article-type`` (``response-type`` for ``<response>``), e.g. "ref-report",
            "author-comment", "decision-letter", "reply"; "" when absent.
        id: the element's id attribute.
        title: its article title ("Reviewer response for version 1").
        contributors: contributor names, "Given Surname" (referees for a report).
        text: its body as markdown.
        recommendation: the ``recommendation`` custom-meta value ("approve-with-reservations"), "" when absent.
        references: its own reference list.
        parent_id: id of the sub-article that contains this one ("" for one directly under the article).
    """

    article_type: str
    id: str
    title: str
    contributors: list[str]
    text: str
    recommendation: str = ""
    references: list[JatsReference] = field(default_factory=list)
    parent_id: str = ""


@dataclass
class JatsArticle:
    """A JATS article without its peer-review record.

    Attributes:
        title: article title (the publication-status note next to it is not part of it).
        abstract: main abstract (markdown paragraphs); "" when absent.
        sections: body sections then back-matter sections (acknowledgements, data availability, ...), in order.
        captions: captions of every figure, table and box of the article, in document order.
        references: the article's reference list, numbered from 1.
        sub_articles: reports, responses and decision letters, in document order (nested ones flattened).
        doi: the article DOI ("" when absent); F1000Research DOIs end in the version number.
        pmcid: PubMed Central id ("PMC123"), "" when absent.
        year: first publication year ("" when absent).
        authors: author names, "Given Surname".
        keywords: keywords of the article.
    """

    title: str
    abstract: str = ""
    sections: list[JatsSection] = field(default_factory=list)
    captions: list[JatsCaption] = field(default_factory=list)
    references: list[JatsReference] = field(default_factory=list)
    sub_articles: list[SubArticle] = field(default_factory=list)
    doi: str = ""
    pmcid: str = ""
    year: str = ""
    authors: list[str] = field(default_factory=list)
    keywords: list[str] = field(default_factory=list)

    def to_markdown(self) -> str:
        """The article as markdown: title, abstract, sections with captions in place, numbered references.

        No sub-article (referee report, response, decision letter) is rendered.

        Returns:
            Markdown text ending in a newline: ``# title``, ``## Abstract``, one heading per section (level + 1
            hashes, at most 6), and ``## References`` with entries ``1. ...``.
        """
        parts = [f"# {self.title}" if self.title else ""]
        if self.abstract:
            parts.append(f"## Abstract\n\n{self.abstract}")
        if self.keywords:
            parts.append("Keywords: " + ", ".join(self.keywords))
        parts.extend(sec.to_markdown() for sec in self.sections)
        if self.references:
            parts.append("## References\n\n" + "\n".join(f"{r.number}. {r.text}" for r in self.references))
        return "\n\n".join(p for p in parts if p).strip() + "\n"

"""The typed inputs of a PRISM run: one paper and the reviews written about it (human or system).

A :class:`Review` keeps the sections PRISM reads (summary, strengths, weaknesses, questions) and its full
text, which is where critique quotes are looked up for prioritisation. The readers that build these
from files live in :mod:`surveyalign.prism.readers`.
"""

from __future__ import annotations

import datetime as dt
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from surveyalign.prism.units import REVIEW_SECTIONS

__all__ = ["REVIEW_SOURCES", "PaperSection", "Review", "Submission"]

#: Who wrote a review: a human reviewer or a reviewing system (an LLM reviewer).
REVIEW_SOURCES: tuple[str, ...] = ("human", "system")


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class PaperSection(_Frozen):
    """One section of the paper (heading, nesting level from 1, body text)."""

    heading: str = Field(..., description="section title as printed")
    level: int = Field(1, ge=1, description="nesting level, 1 = top level")
    text: str = Field("", description="section body (markdown)")


class Submission(_Frozen):
    """The paper under review (PRISM inputs; the bibliographic record of a paper is
    :class:`surveyalign.documents.Paper`).

    Attributes:
        paper_id: identifier (OpenReview forum id, DOI, file stem).
        title, abstract: as printed.
        text: the full body as markdown (sections joined when only sections were given).
        sections: the body's sections in order (may be empty).
        submission_date: when the paper was submitted; prior work must be older (novelty retrieval).
        submission_year: the year when only that is known (a full date sets it too).
        hidden: the paper's hidden-text record (:func:`surveyalign.documents.hidden.document_hidden`: what its
            reader listed as unseen by a human reader, and the answer-format tokens neutralised); ``None`` when
            the submission was not read from a file.
    """

    paper_id: str
    title: str = ""
    abstract: str = ""
    text: str = ""
    sections: tuple[PaperSection, ...] = ()
    submission_date: dt.date | None = None
    submission_year: int | None = None
    hidden: dict[str, Any] | None = None

    @model_validator(mode="after")
    def _fill(self) -> Submission:
        if not self.text and self.sections:
            body = "\n\n".join(f"{'#' * (s.level + 1)} {s.heading}\n\n{s.text}" for s in self.sections)
            object.__setattr__(self, "text", body)
        if self.submission_date is not None and self.submission_year is None:
            object.__setattr__(self, "submission_year", self.submission_date.year)
        if not (self.title or self.abstract or self.text):
            raise ValueError(f"paper {self.paper_id!r}: no title, abstract or text")
        return self


class Review(_Frozen):
    """One review of the paper.

    Attributes:
        review_id: the reviewer's exact id (matched to pooled flaws by equality, never by substring).
        source: ``"human"`` or ``"system"``.
        system: the reviewing system's name for a system review (e.g. ``"DeepReview"``); ``None`` for humans.
        sections: section name (one of summary / strengths / weaknesses / questions) -> text.
        text: the full review text; built from the sections (with headings) when not given.
        hidden: the review's hidden-text record (:func:`surveyalign.documents.hidden.document_hidden`) for a
            review read from a markdown / text file; ``None`` otherwise.
    """

    review_id: str
    source: Literal["human", "system"] = "human"
    system: str | None = None
    sections: dict[str, str] = Field(default_factory=dict)
    text: str = ""
    hidden: dict[str, Any] | None = None

    @field_validator("review_id")
    @classmethod
    def _id(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("review_id is empty")
        return value.strip()

    @field_validator("sections")
    @classmethod
    def _sections(cls, value: dict[str, str]) -> dict[str, str]:
        unknown = sorted(set(value) - set(REVIEW_SECTIONS))
        if unknown:
            raise ValueError(f"unknown review section(s) {unknown}; expected {list(REVIEW_SECTIONS)}")
        return {k: value[k] for k in REVIEW_SECTIONS if value.get(k, "").strip()}

    @model_validator(mode="after")
    def _fill(self) -> Review:
        if not self.text:
            joined = "\n\n".join(f"{k.capitalize()}:\n{v}" for k, v in self.sections.items())
            object.__setattr__(self, "text", joined)
        if not self.text.strip():
            raise ValueError(f"review {self.review_id!r}: no text and no section")
        if self.source == "human" and self.system:
            raise ValueError(f"review {self.review_id!r}: a human review has no system name")
        return self

    @property
    def label(self) -> str:
        """How the review is named in tables: the system's name, or ``"human"``."""
        return self.system or self.review_id if self.source == "system" else "human"

    def core_text(self) -> str:
        """The summary, strengths and weaknesses (PRISM's depth-of-analysis input), else the full text."""
        parts = [f"{k.capitalize()}:\n{self.sections[k]}" for k in ("summary", "strengths", "weaknesses")
                 if k in self.sections]
        return "\n\n".join(parts) if parts else self.text

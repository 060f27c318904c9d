"""Readers that build PRISM inputs from files: OpenReview-style JSON, JATS XML (F1000Research referee
reports as ``sub-article`` elements), markdown / plain text.

Bad input raises ``ValueError`` naming the file, the record and the field; records that are not reviews
(decisions, comments, author responses) are kept in :attr:`ReviewFile.skipped` with the reason, never
dropped silently.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from surveyalign.documents import (
    JatsError,
    extract_abstract,
    extract_title,
    parse_jats,
    read_document,
)
from surveyalign.documents.hidden import document_hidden, scan_unicode
from surveyalign.prism.inputs import PaperSection, Review, Submission

__all__ = ["SECTION_ALIASES", "ReviewFile", "read_paper", "read_reviews", "split_review_sections"]

#: Review section -> the field names / headings that hold it in OpenReview venues and plain-text reviews.
SECTION_ALIASES: dict[str, tuple[str, ...]] = {
    "summary": ("summary", "summary_of_the_paper", "paper_summary", "summary_of_contributions"),
    "strengths": ("strengths", "strong_points", "pros"),
    "weaknesses": ("weaknesses", "weak_points", "cons", "main_review", "strength_and_weaknesses",
                   "strengths_and_weaknesses"),
    "questions": ("questions", "questions_for_authors", "questions_and_suggestions", "requested_changes"),
}
_ALIAS = {alias: section for section, aliases in SECTION_ALIASES.items() for alias in aliases}
_NAMES = "|".join(re.escape(a.replace("_", " ")) for a in sorted(_ALIAS, key=len, reverse=True))
#: A section heading line: "## Strengths", "**Weaknesses**", "Summary:" (text may follow the colon), or the bare
#: name alone on its line. "Summary of results ..." in running text is not a heading.
_HEADING_RE = re.compile(
    rf"^[ \t]*(?:(?:#{{1,6}}[ \t]*|\*\*|__)[ \t]*(?P<marked>{_NAMES})[ \t]*(?:\*\*|__)?[ \t]*:?(?:\*\*|__)?"
    rf"|(?P<colon>{_NAMES})[ \t]*:|(?P<bare>{_NAMES})[ \t]*$)[ \t]*(?P<rest>.*)$",
    re.IGNORECASE | re.MULTILINE)


@dataclass
class ReviewFile:
    """The reviews read from one file, and the records that were not reviews (with why).

    Attributes:
        path: the file.
        reviews: the reviews, in file order.
        skipped: ``"record N (id): reason"`` for each record that holds no review section.
    """

    path: Path
    reviews: list[Review] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)


def split_review_sections(text: str) -> dict[str, str]:
    """Split a plain-text review at its section headings (``Summary:``, ``## Strengths``, ``**Weaknesses**``).

    Args:
        text: the review text.

    Returns:
        ``{section: body}`` for the sections found (text before the first heading is the summary when no
        summary heading exists); ``{}`` when there is no heading at all.
    """
    matches = list(_HEADING_RE.finditer(text))
    sections: dict[str, str] = {}
    if matches and text[:matches[0].start()].strip():
        sections["summary"] = text[:matches[0].start()].strip()
    for i, m in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(text)
        body = (m.group("rest") + "\n" + text[m.end():end]).strip()
        name = m.group("marked") or m.group("colon") or m.group("bare")
        key = _ALIAS[re.sub(r"\s+", "_", name.lower())]
        sections[key] = (sections[key] + "\n\n" + body).strip() if key in sections else body
    return sections


def _value(raw: Any) -> Any:
    """OpenReview API 2 wraps every content field as ``{"value": ...}``; API 1 does not."""
    return raw.get("value") if isinstance(raw, dict) and "value" in raw else raw


def _date(raw: Any, where: str) -> dt.date | None:
    if raw in (None, ""):
        return None
    if isinstance(raw, (int, float)):  # OpenReview timestamps are milliseconds since the epoch
        return dt.datetime.fromtimestamp(raw / 1000, tz=dt.UTC).date()
    try:
        return dt.date.fromisoformat(str(raw)[:10])
    except ValueError as err:
        raise ValueError(f"{where}: submission date {raw!r} is not YYYY-MM-DD or epoch milliseconds") from err


def _review_from_record(record: dict[str, Any], index: int, path: Path, source: str | None,
                        system: str | None) -> Review | str:
    content = record.get("content", record)
    if not isinstance(content, dict):
        raise ValueError(f"{path}: record {index}: field 'content' must be an object")  # noqa: TRY004
    sections: dict[str, str] = {}
    for key, raw in content.items():
        section = _ALIAS.get(str(key).lower())
        value = _value(raw)
        if section and isinstance(value, str) and value.strip():
            sections[section] = (sections[section] + "\n\n" + value).strip() if section in sections else value
    text = _value(content.get("text") or content.get("review") or "")
    if not sections and not (isinstance(text, str) and text.strip()):
        return f"record {index} ({record.get('id', '?')}): no review section or text"
    if isinstance(text, str) and text.strip() and not sections:
        sections = split_review_sections(text)
    signatures = record.get("signatures") or []
    rid = (record.get("reviewer_id") or record.get("review_id") or
           (str(signatures[0]).rsplit("/", 1)[-1] if signatures else None) or record.get("id") or f"review-{index}")
    src = record.get("source") or source or ("system" if system else "human")
    try:
        return Review(review_id=str(rid), source=src, system=record.get("system") or system,
                      sections=sections, text=text if isinstance(text, str) else "")
    except ValidationError as err:
        first = err.errors()[0]
        raise ValueError(f"{path}: record {index} ({rid}): field {'.'.join(map(str, first['loc'])) or '?'}: "
                         f"{first['msg']}") from None


def _records(path: Path) -> list[Any]:
    raw = path.read_text(encoding="utf-8")
    try:
        if path.suffix == ".jsonl":
            data: Any = [json.loads(line) for line in raw.splitlines() if line.strip()]
        else:
            data = json.loads(raw)
    except json.JSONDecodeError as err:
        raise ValueError(f"{path}: not valid JSON (line {err.lineno}: {err.msg})") from None
    if isinstance(data, dict):
        data = data.get("reviews") or data.get("notes") or [data]
    if not isinstance(data, list):
        raise ValueError(f"{path}: expected a list of review records or an object with 'reviews' / 'notes'")  # noqa: TRY004
    return data


def read_reviews(path: str | Path, *, source: str | None = None, system: str | None = None) -> ReviewFile:
    """Read the reviews in one file.

    Args:
        path: ``.json`` / ``.jsonl`` (OpenReview notes with ``content`` and ``signatures``, or flat objects
            with ``reviewer_id``, ``source``, ``summary`` ...), ``.xml`` (JATS: every ``ref-report``
            sub-article is one human review), or any other text file (one review; id = file stem; sections
            split at their headings; Unicode tag characters removed, and ``Review.hidden`` set by
            :func:`surveyalign.documents.hidden.document_hidden`).
        source: ``"human"`` or ``"system"`` for records that do not say (default human, or system when
            ``system`` is given).
        system: the reviewing system's name for a file of system reviews.

    Returns:
        A :class:`ReviewFile`.

    Raises:
        OSError: the file cannot be read.
        ValueError: malformed JSON / XML or a record with a bad field (file, record and field named).
    """
    path = Path(path)
    out = ReviewFile(path)
    if path.suffix in (".json", ".jsonl"):
        for index, record in enumerate(_records(path)):
            if not isinstance(record, dict):
                raise ValueError(f"{path}: record {index} is a {type(record).__name__}, expected an object")  # noqa: TRY004
            got = _review_from_record(record, index, path, source, system)
            (out.skipped if isinstance(got, str) else out.reviews).append(got)
    elif path.suffix == ".xml":
        article = _parse_jats_file(path)
        for index, sub in enumerate(article.sub_articles):
            if sub.article_type != "ref-report":
                out.skipped.append(f"sub-article {index} ({sub.id}): type {sub.article_type!r}, not a referee report")
            elif not sub.text.strip():
                out.skipped.append(f"sub-article {index} ({sub.id}): empty report")
            else:
                out.reviews.append(Review(review_id=sub.id or f"referee-{index + 1}", source=source or "human",
                                          system=system, sections=split_review_sections(sub.text), text=sub.text))
    else:
        # Unicode tag characters are removed (as every document reader does); zero-width and bidi characters are
        # kept and listed in the review's hidden-text record
        text, found = scan_unicode(path.read_text(encoding="utf-8"))
        try:
            out.reviews.append(Review(review_id=path.stem, source=source or ("system" if system else "human"),
                                      system=system, sections=split_review_sections(text), text=text,
                                      hidden=document_hidden(text, found)))
        except ValidationError as err:
            raise ValueError(f"{path}: {err.errors()[0]['msg']}") from None
    return out


def _parse_jats_file(path: Path):
    try:
        return parse_jats(path.read_bytes(), source=str(path))
    except JatsError as err:  # names the file already
        raise ValueError(f"not a readable JATS article: {err}") from None


def _with_hidden(paper: Submission) -> Submission:
    """``paper`` (read from JSON or JATS, through no document reader) with Unicode tag characters removed from
    its title, abstract, text and sections, and the hidden-text record of its text and title."""
    record = document_hidden(paper.text, title=paper.title, scan=True)
    clean = lambda text: scan_unicode(text)[0]  # noqa: E731
    sections = tuple(s.model_copy(update={"heading": clean(s.heading), "text": clean(s.text)}) for s in paper.sections)
    return paper.model_copy(update={"title": clean(paper.title), "abstract": clean(paper.abstract),
                                    "text": clean(paper.text), "sections": sections, "hidden": record})


def read_paper(path: str | Path, *, paper_id: str | None = None,
               submission_date: dt.date | str | None = None) -> Submission:
    """Read the paper under review.

    Args:
        path: ``.json`` (an OpenReview submission note or a flat object with title, abstract, text or
            sections, submission_date), ``.xml`` (JATS; the article without its sub-articles), or a markdown /
            text, LaTeX or PDF file read with :func:`surveyalign.documents.read_document` (title = first
            heading, abstract = the "Abstract" section, sections = ``Document.sections``, the one heading splitter).
        paper_id: identifier (default: the record's ``id`` / the file stem).
        submission_date: overrides the file's date (``YYYY-MM-DD``).

    Returns:
        The :class:`Submission`, its ``hidden`` set (:func:`surveyalign.documents.hidden.document_hidden`): the
        document reader's records, or for JSON and JATS the zero-width and bidi characters (kept) and Unicode
        tag characters (removed) of the text and title.

    Raises:
        OSError: the file cannot be read.
        ValueError: malformed input or a bad field (file and field named).
    """
    path = Path(path)
    override = _date(submission_date, str(path)) if isinstance(submission_date, str) else submission_date
    try:
        if path.suffix == ".json":
            records = _records(path)
            record = records[0] if records else {}
            content = record.get("content", record) if isinstance(record, dict) else {}
            sections = [PaperSection(**s) for s in content.get("sections", [])]
            when = override or _date(_value(content.get("submission_date")) or record.get("cdate")
                                     or record.get("tcdate"), f"{path}: field submission_date")
            paper = Submission(paper_id=paper_id or str(record.get("id") or path.stem),
                               title=str(_value(content.get("title")) or ""),
                               abstract=str(_value(content.get("abstract")) or ""),
                               text=str(_value(content.get("text")) or ""), sections=tuple(sections),
                               submission_date=when)
            return _with_hidden(paper)
        if path.suffix == ".xml":
            art = _parse_jats_file(path)
            year = int(art.year) if str(art.year).isdigit() else None
            parts = [PaperSection(heading=s.heading or "(untitled)", level=s.level, text=s.text) for s in art.sections]
            paper = Submission(paper_id=paper_id or path.stem, title=art.title, abstract=art.abstract,
                               text=art.to_markdown(),  # the article alone: sub-articles are never rendered
                               sections=tuple(parts),
                               submission_date=override, submission_year=None if override else year)
            return _with_hidden(paper)
        document = read_document(path)  # markdown, LaTeX (inputs resolved) or PDF, as markdown
        text = document.text
        sections = [PaperSection(heading=sec.heading, level=sec.level, text=sec.text) for sec in document.sections]
        return Submission(paper_id=paper_id or path.stem, title=document.title or extract_title(text),
                          abstract=extract_abstract(text), text=text, sections=tuple(sections),
                          submission_date=override, hidden=document_hidden(text, document.hidden))
    except ValidationError as err:
        first = err.errors()[0]
        raise ValueError(f"{path}: field {'.'.join(map(str, first['loc'])) or '?'}: {first['msg']}") from None

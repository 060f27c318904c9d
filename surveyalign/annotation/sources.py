"""Readers of the review reports the venues publish (SurveyReview §4.1): one :class:`ReviewRecord` per report.

* F1000Research: the article's JATS XML; every ``sub-article`` of type ``ref-report`` is one referee report
  (referee, date, version, recommendation). The article itself (without any sub-article) is the survey text.
* OpenReview: a forum's notes as JSON (API 1 or 2: a list, or ``{"notes": [...]}``); official reviews and
  meta-reviews are kept, their text fields joined in their order; decisions, comments and author responses are
  skipped with the reason.
* MOPRD / PeerJ: a review history as JSON: ``{"paper_id"|"id", "title", "abstract", "doi", "review_history"|
  "reviews"|"rounds": [{"version"|"round", "reviews"|"reviewers": [{"reviewer", "date", "recommendation",
  "text"|"content"|"comments"}]}]}`` where a report's content may be an object of headed fields (PeerJ's "Basic
  reporting", "Experimental design", "Validity of the findings", "Additional comments"), joined in order.
  Editor decisions (``"role": "editor"`` or a ``decision`` without text) are skipped with the reason.
* Plain text: one report per ``.txt`` / ``.md`` file; the paper id is the parent folder's name.

Every reader returns a :class:`SourceFile`; malformed input raises ``ValueError`` naming file, record, field.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .records import ReviewRecord, SurveyRecord, paper_key

#: Formats :func:`read_source` recognises.
FORMATS: tuple[str, ...] = ("f1000-jats", "openreview", "moprd", "text")

_F1000_DOI = re.compile(r"10\.12688/f1000research\.(\d+)(?:\.(\d+))?", re.IGNORECASE)
_VERSION_IN_TITLE = re.compile(r"version\s+(\d+)", re.IGNORECASE)
#: OpenReview content fields that are scores or bookkeeping, not review text.
_OPENREVIEW_META = {"rating", "confidence", "recommendation", "title", "soundness", "presentation",
                    "contribution", "code_of_conduct", "flag_for_ethics_review", "details_of_ethics_concerns",
                    "first_time_reviewer", "ethics_review_flag", "final_rating", "correctness",
                    "technical_novelty_and_significance", "empirical_novelty_and_significance", "experience"}
_RATING_FIELDS = ("rating", "recommendation", "final_rating")


@dataclass
class SourceFile:
    """What one input file gave.

    Attributes:
        path: the file.
        format: one of :data:`FORMATS`.
        survey: the paper the reviews are about (its text "" when the file does not hold it).
        reviews: the reports, in file order (``review_id`` / ``reviewer_index`` assigned later by ``collect``).
        skipped: ``"<element>: reason"`` for every record that is not a review report.
        raw_id: the paper id as the source writes it (F1000 article number, forum id, MOPRD id, folder name).
    """

    path: Path
    format: str
    survey: SurveyRecord
    reviews: list[ReviewRecord] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    raw_id: str = ""


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def _sub_article_meta(xml: bytes) -> list[tuple[str, dict[str, str]]]:
    """``[(sub-article id, {"date", "version"})]`` read from the JATS XML (date of the report, version reviewed),
    one per sub-article in the order :func:`surveyalign.documents.parse_jats` lists them (the ``<sub-article>`` /
    ``<response>`` children of the article and, after each, its own, depth first), so that reports without an
    ``id`` (or sharing one) are told apart by position. A report's date and version are read from its own
    elements, not from the reports or responses nested in it."""
    from surveyalign.documents.jats import SUB_ARTICLE_TAGS

    out: list[tuple[str, dict[str, str]]] = []

    def own(el: ET.Element):  # el's descendants, without those of the sub-articles nested in it
        for child in el:
            if _local(child.tag) in SUB_ARTICLE_TAGS:
                continue
            yield child
            yield from own(child)

    def walk(parent: ET.Element) -> None:
        for el in parent:
            if _local(el.tag) not in SUB_ARTICLE_TAGS:
                continue
            meta = {"date": "", "version": ""}
            for child in own(el):
                name = _local(child.tag)
                if name == "pub-date" and not meta["date"]:
                    parts = {(_local(c.tag)): (c.text or "").strip() for c in child}
                    if parts.get("year", "").isdigit():
                        meta["date"] = "-".join([parts["year"]] + [parts[k].zfill(2) for k in ("month", "day")
                                                                   if parts.get(k, "").isdigit()])
                if name == "related-article" and not meta["version"]:
                    href = next((v for k, v in child.attrib.items() if k.endswith("href")), "")
                    m = _F1000_DOI.search(href)
                    if m and m.group(2):
                        meta["version"] = m.group(2)
            out.append((el.attrib.get("id", ""), meta))
            walk(el)

    walk(ET.fromstring(xml))
    return out


def read_f1000_jats(path: Path) -> SourceFile:
    """Read an F1000Research article's JATS XML: the article as the survey, each referee report as a review.

    Raises:
        ValueError: not readable JATS (the file named).
    """
    from surveyalign.documents import parse_jats

    xml = path.read_bytes()
    try:
        article = parse_jats(xml, source=str(path))
        meta = _sub_article_meta(xml)
    except (ValueError, ET.ParseError) as err:
        raise ValueError(f"{path}: not a readable JATS article: {err}") from None
    m = _F1000_DOI.search(article.doi or "")
    raw_id = m.group(1) if m else path.stem
    article_version = int(m.group(2)) if m and m.group(2) else 1
    source = "f1000" if m or "f1000" in path.name.lower() else "moprd"  # PeerJ JATS carries its history the same way
    survey = SurveyRecord(paper_id=paper_key(source, raw_id), source=source, title=article.title,
                          abstract=article.abstract, text=article.to_markdown(), text_from=f"jats:{path.name}",
                          doi=article.doi)
    out = SourceFile(path, "f1000-jats", survey, raw_id=raw_id)
    for index, sub in enumerate(article.sub_articles):
        where = f"sub-article {index} ({sub.id or '?'})"
        if sub.article_type != "ref-report":
            out.skipped.append(f"{where}: type {sub.article_type!r}, not a referee report")
            continue
        if not sub.text.strip():
            out.skipped.append(f"{where}: empty report")
            continue
        # by position, as parse_jats lists them; no metadata if the two readers ever disagree on the element
        info = meta[index][1] if index < len(meta) and meta[index][0] == sub.id else {}
        title_version = _VERSION_IN_TITLE.search(sub.title or "")
        version = int(info.get("version") or (title_version.group(1) if title_version else article_version))
        out.reviews.append(ReviewRecord(
            review_id="", paper_id=survey.paper_id, source=source, text=sub.text.strip(), kind="referee_report",
            reviewer=", ".join(sub.contributors), version=version, date=info.get("date", ""),
            recommendation=sub.recommendation,
            provenance={"file": path.name, "format": "f1000-jats", "element": f"sub-article#{sub.id}"}))
    return out


def _value(raw: Any) -> Any:
    return raw.get("value") if isinstance(raw, dict) and "value" in raw else raw


def _ms_date(raw: Any) -> str:
    if isinstance(raw, (int, float)) and not isinstance(raw, bool):
        return dt.datetime.fromtimestamp(raw / 1000, tz=dt.UTC).date().isoformat()
    return str(raw)[:10] if raw else ""


def _invitations(note: dict[str, Any]) -> str:
    inv = note.get("invitations") or [note.get("invitation") or ""]
    return " ".join(str(i) for i in inv)


def _load_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise ValueError(f"{path}: not valid JSON (line {err.lineno}: {err.msg})") from None


def read_openreview(path: Path) -> SourceFile:
    """Read an OpenReview forum (its notes as JSON): official reviews and meta-reviews.

    The submission note is the one whose ``id`` equals its ``forum`` (else the first with a title and abstract).
    A review's text is its string fields other than scores (:data:`_OPENREVIEW_META`), each as ``"Field name:
    value"``, joined in their order with a blank line; its rating / recommendation is kept apart.

    Raises:
        ValueError: not JSON, not a list of notes, a note that is not an object (file and note named).
    """
    data = _load_json(path)
    notes = data.get("notes") if isinstance(data, dict) else data
    if not isinstance(notes, list):
        raise ValueError(f"{path}: expected a list of OpenReview notes or an object with 'notes'")  # noqa: TRY004
    for i, note in enumerate(notes):
        if not isinstance(note, dict):
            raise ValueError(f"{path}: note {i} is a {type(note).__name__}, expected an object")  # noqa: TRY004
    submission = next((n for n in notes if n.get("id") and n.get("id") == n.get("forum")), None) or next(
        (n for n in notes if isinstance(n.get("content"), dict) and _value(n["content"].get("abstract"))), None)
    if submission is None:
        raise ValueError(f"{path}: no submission note (a note whose id equals its forum, with title and abstract)")
    content = submission.get("content") or {}
    raw_id = str(submission.get("forum") or submission.get("id"))
    survey = SurveyRecord(paper_id=paper_key("openreview", raw_id), source="openreview",
                          title=str(_value(content.get("title")) or ""),
                          abstract=str(_value(content.get("abstract")) or ""))
    out = SourceFile(path, "openreview", survey, raw_id=raw_id)
    for i, note in enumerate(notes):
        if note is submission:
            continue
        inv = _invitations(note).lower()
        body = note.get("content")
        where = f"note {i} ({note.get('id', '?')})"
        if not isinstance(body, dict):
            raise ValueError(f"{path}: {where}: field 'content' must be an object")  # noqa: TRY004
        keys = {str(k).lower() for k in body}
        if "meta_review" in inv or "metareview" in keys:
            kind = "meta_review"
        elif "official_review" in inv or "review" in keys or {"summary", "weaknesses"} <= keys:
            kind = "official_review"
        else:
            out.skipped.append(f"{where}: {inv.rsplit('/', 1)[-1] or 'note'} is not a review or meta-review")
            continue
        parts = []
        for key, raw in body.items():
            value = _value(raw)
            if str(key).lower() in _OPENREVIEW_META or not isinstance(value, str) or not value.strip():
                continue
            parts.append(f"{str(key).replace('_', ' ').capitalize()}: {value.strip()}")
        if not parts:
            out.skipped.append(f"{where}: no review text")
            continue
        rating = next((str(_value(body[k])) for k in body if str(k).lower() in _RATING_FIELDS), "")
        signatures = note.get("signatures") or []
        out.reviews.append(ReviewRecord(
            review_id="", paper_id=survey.paper_id, source="openreview", text="\n\n".join(parts), kind=kind,
            reviewer=str(signatures[0]).rsplit("/", 1)[-1] if signatures else "", version=1,
            date=_ms_date(note.get("cdate") or note.get("tcdate")), recommendation=rating,
            provenance={"file": path.name, "format": "openreview", "element": f"note#{note.get('id', i)}"}))
    return out


def _join_fields(value: Any) -> str:
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, dict):
        return "\n\n".join(f"{str(k).replace('_', ' ').strip().capitalize()}: {str(v).strip()}"
                           for k, v in value.items() if isinstance(v, str) and v.strip())
    if isinstance(value, list):
        return "\n\n".join(_join_fields(v) for v in value if _join_fields(v))
    return ""


def read_moprd(path: Path) -> SourceFile:
    """Read a MOPRD / PeerJ review history (JSON, see the module docstring).

    Raises:
        ValueError: not JSON, no paper id, rounds or reports of the wrong type (file, round, report named).
    """
    data = _load_json(path)
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a JSON object with paper_id and review_history")  # noqa: TRY004
    raw_id = data.get("paper_id") or data.get("id") or data.get("manuscript_id")
    if not isinstance(raw_id, (str, int)) or isinstance(raw_id, bool) or not str(raw_id).strip():
        raise ValueError(f"{path}: field paper_id missing or empty")
    raw_id = str(raw_id).strip()
    rounds = next((data[k] for k in ("review_history", "reviews", "rounds") if k in data), None)
    if not isinstance(rounds, list):
        raise ValueError(f"{path}: field review_history must be a list of review rounds")  # noqa: TRY004
    survey = SurveyRecord(paper_id=paper_key("moprd", raw_id), source="moprd", title=str(data.get("title") or ""),
                          abstract=str(data.get("abstract") or ""), doi=str(data.get("doi") or ""))
    out = SourceFile(path, "moprd", survey, raw_id=raw_id)
    for r, rnd in enumerate(rounds):
        if not isinstance(rnd, dict):
            raise ValueError(f"{path}: review_history[{r}] must be an object")  # noqa: TRY004
        version = rnd.get("version", rnd.get("round", r + 1))
        try:
            version = int(str(version).lstrip("vV"))
        except ValueError:
            raise ValueError(f"{path}: review_history[{r}]: field version {version!r} is not a number") from None
        reports = next((rnd[k] for k in ("reviews", "reviewers", "reports") if k in rnd), [])
        if not isinstance(reports, list):
            raise ValueError(f"{path}: review_history[{r}]: field reviews must be a list")  # noqa: TRY004
        for j, rep in enumerate(reports):
            where = f"review_history[{r}].reviews[{j}]"
            if not isinstance(rep, dict):
                raise ValueError(f"{path}: {where} must be an object")  # noqa: TRY004
            if str(rep.get("role", "")).lower() == "editor":
                out.skipped.append(f"{where}: editor's decision, not a review")
                continue
            text = _join_fields(next((rep[k] for k in ("text", "content", "comments", "review") if k in rep), ""))
            if not text:
                out.skipped.append(f"{where}: no review text")
                continue
            out.reviews.append(ReviewRecord(
                review_id="", paper_id=survey.paper_id, source="moprd", text=text, kind="review",
                reviewer=str(rep.get("reviewer") or rep.get("reviewer_id") or f"Reviewer {j + 1}"),
                version=version, date=str(rep.get("date") or ""),
                recommendation=str(rep.get("recommendation") or rep.get("decision") or ""),
                provenance={"file": path.name, "format": "moprd", "element": where}))
    return out


def read_plain(path: Path, *, source: str = "unknown") -> SourceFile:
    """Read one plain-text report; the paper id is the parent folder's name, the reviewer the file stem."""
    text = path.read_text(encoding="utf-8").strip()
    raw_id = path.parent.name
    survey = SurveyRecord(paper_id=paper_key(source, raw_id), source=source)
    out = SourceFile(path, "text", survey, raw_id=raw_id)
    if not text:
        out.skipped.append(f"{path.name}: empty file")
        return out
    out.reviews.append(ReviewRecord(review_id="", paper_id=survey.paper_id, source=source, text=text,
                                    kind="review", reviewer=path.stem, version=1,
                                    provenance={"file": f"{raw_id}/{path.name}", "format": "text",
                                                "element": path.name}))
    return out


def read_source(path: str | Path, *, text_source: str = "unknown") -> SourceFile:
    """Read one input file by its kind: ``.xml`` (JATS), ``.json`` (an OpenReview forum when it holds notes,
    else a MOPRD / PeerJ history), ``.txt`` / ``.md`` (one plain report).

    Args:
        path: the file.
        text_source: source of plain-text reports ("f1000", "moprd", "openreview", "unknown").

    Raises:
        ValueError: an unsupported suffix or malformed content (file named).
    """
    path = Path(path)
    if path.suffix == ".xml":
        return read_f1000_jats(path)
    if path.suffix == ".json":
        data = _load_json(path)
        is_forum = isinstance(data, list) or (isinstance(data, dict) and "notes" in data)
        return read_openreview(path) if is_forum else read_moprd(path)
    if path.suffix in (".txt", ".md"):
        return read_plain(path, source=text_source)
    raise ValueError(f"{path}: unsupported review file (expected .xml JATS, .json OpenReview / MOPRD, .txt / .md)")

"""Records that flow through the SurveyReview construction pipeline (SurveyReview §4.1-4.3, App. A).

One JSON line per record in every stage folder:

* ``surveys.jsonl``: :class:`SurveyRecord`, one per confirmed survey (title, abstract, markdown text).
* ``reviews.jsonl``: :class:`ReviewRecord`, one per (survey, review report) with its provenance.
* ``annotations.jsonl`` (LLM) and ``human.jsonl`` (Label Studio import): one record per (review, annotator)
  holding, per dimension, a label of the initial space :data:`LABELS` and its rationale snippets.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

#: Initial annotation space (App. A): -3 unjudgeable / ambiguous, 0 not mentioned, -2..+2 the benchmark scale.
LABELS: tuple[int, ...] = (-3, -2, -1, 0, 1, 2)
#: Labels that never reach training or evaluation (App. A): unjudgeable and not mentioned.
EXCLUDED_LABELS: tuple[int, ...] = (-3, 0)
#: The annotation guideline our prompt and Label Studio config implement (recorded in every output).
GUIDELINE_VERSION = "surveyalign-annotation-1"


def label_name(label: int) -> str:
    """The printed form of a label: ``"-3"``, ``"-2"``, ``"-1"``, ``"0"``, ``"+1"``, ``"+2"``."""
    return f"+{label}" if label > 0 else str(label)


def parse_label(value: Any) -> int | None:
    """Read a label of :data:`LABELS` from a number or a string ("+1", "1", "1.0", " -2 ").

    Args:
        value: the raw value.

    Returns:
        The label, or None when the value is not one of the six labels (3, 0.5, "", None, True ...).
    """
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, str):
        text = value.strip()
        if not re.fullmatch(r"[+-]?\d+(\.0+)?", text):
            return None
        value = float(text)
    if not isinstance(value, (int, float)) or value != int(value):
        return None
    return int(value) if int(value) in LABELS else None


def safe_id(value: str) -> str:
    """``value`` with every character outside ``[A-Za-z0-9.]`` turned into ``.`` (uids must not hold ``-``/``_``
    inside their paper part, see :func:`review_uid`)."""
    return re.sub(r"[^A-Za-z0-9.]", ".", str(value)).strip(".") or "x"


def review_uid(source: str, paper: str, version: int, reviewer: int) -> str:
    """The release uid of one review: ``"<source>-<paper>-<version>-r<reviewer>"`` (the MOPRD uid shape, which
    ``surveyalign data build`` reads back into the paper key ``"<source>-<paper>"``).

    Args:
        source: "f1000", "moprd", "openreview" or "unknown".
        paper: the paper id (made safe with :func:`safe_id`).
        version: the paper version reviewed (>= 1).
        reviewer: the reviewer's 1-based number within the paper.
    """
    return f"{source}-{safe_id(paper)}-{int(version)}-r{int(reviewer)}"


def paper_key(source: str, paper: str) -> str:
    """The paper key of :func:`review_uid`: ``"<source>-<paper>"``."""
    return f"{source}-{safe_id(paper)}"


@dataclass
class SurveyRecord:
    """One confirmed survey paper.

    Attributes:
        paper_id: the paper key (``"<source>-<id>"``, :func:`paper_key`).
        source: "f1000", "moprd", "openreview" or "unknown".
        title: the title.
        abstract: the abstract ("" when unknown).
        text: the survey as markdown without any review material ("" when not at hand yet: ``data fetch-texts``).
        text_from: where the text came from ("jats:<file>", "texts:<file>", "" when none).
        doi: the DOI ("" when unknown).
        candidate_id: the id of the candidate list row it came from.
    """

    paper_id: str
    source: str
    title: str = ""
    abstract: str = ""
    text: str = ""
    text_from: str = ""
    doi: str = ""
    candidate_id: str = ""


@dataclass
class ReviewRecord:
    """One review report of one survey, with its provenance.

    Attributes:
        review_id: the release uid (:func:`review_uid`).
        paper_id: the survey's paper key.
        source: the survey's source.
        text: the review as plain text (fields joined in their order, blank line between them).
        kind: "referee_report" (F1000Research), "official_review" / "meta_review" (OpenReview), "review"
            (MOPRD / PeerJ rounds, plain text).
        reviewer: the referee's name or signature ("" when anonymous).
        reviewer_index: 1-based number of the reviewer within the paper (one per distinct reviewer).
        version: the paper version the report is about (>= 1).
        date: the report's date (ISO, "" when unknown).
        recommendation: the verdict ("approve-with-reservations", a rating, ...), "" when none.
        provenance: ``{"file", "format", "element"}``: where the report was read.
    """

    review_id: str
    paper_id: str
    source: str
    text: str
    kind: str = "review"
    reviewer: str = ""
    reviewer_index: int = 1
    version: int = 1
    date: str = ""
    recommendation: str = ""
    provenance: dict[str, Any] = field(default_factory=dict)


def to_json(record: Any) -> dict[str, Any]:
    """A dataclass record as a JSON-ready dict."""
    return asdict(record) if hasattr(record, "__dataclass_fields__") else dict(record)


def write_jsonl(path: str | os.PathLike, records: Iterable[Any]) -> int:
    """Write ``records`` (dataclasses or dicts) as JSON lines to ``path`` (replaced); returns the count."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    n = 0
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w", encoding="utf-8") as fh:
        for record in records:
            fh.write(json.dumps(to_json(record), ensure_ascii=False) + "\n")
            n += 1
    tmp.replace(path)
    return n


def read_jsonl(path: str | os.PathLike) -> Iterator[dict[str, Any]]:
    """The JSON objects of a JSON-lines file.

    Raises:
        FileNotFoundError: no such file.
        ValueError: a line that is not a JSON object (file and line number named).
    """
    path = Path(path)
    with path.open(encoding="utf-8") as fh:
        for number, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as err:
                raise ValueError(f"{path}: line {number}: not valid JSON ({err.msg})") from None
            if not isinstance(record, dict):
                raise ValueError(f"{path}: line {number}: expected a JSON object")  # noqa: TRY004
            yield record


def read_reviews(path: str | os.PathLike) -> list[ReviewRecord]:
    """The :class:`ReviewRecord` lines of ``reviews.jsonl`` (a folder holding it may be given).

    Raises:
        FileNotFoundError: no such file.
        ValueError: a bad line or a record missing review_id / paper_id / text (file and line named).
    """
    path = Path(path)
    if path.is_dir():
        path = path / "reviews.jsonl"
    out = []
    known = set(ReviewRecord.__dataclass_fields__)
    for number, record in enumerate(read_jsonl(path), 1):
        missing = [k for k in ("review_id", "paper_id", "text") if not isinstance(record.get(k), str)]
        if missing:
            raise ValueError(f"{path}: record {number}: field {missing[0]} missing or not a string")
        out.append(ReviewRecord(**{k: v for k, v in record.items() if k in known}))
    return out


def read_surveys(path: str | os.PathLike) -> list[SurveyRecord]:
    """The :class:`SurveyRecord` lines of ``surveys.jsonl`` (a folder holding it may be given)."""
    path = Path(path)
    if path.is_dir():
        path = path / "surveys.jsonl"
    known = set(SurveyRecord.__dataclass_fields__)
    out = []
    for number, record in enumerate(read_jsonl(path), 1):
        if not isinstance(record.get("paper_id"), str):
            raise ValueError(f"{path}: record {number}: field paper_id missing or not a string")  # noqa: TRY004
        out.append(SurveyRecord(**{k: v for k, v in record.items() if k in known}))
    return out


def carry_person_cells(rows: Sequence[dict[str, str]], earlier: dict[Any, dict[str, str]], key: Callable[[dict[str, str]], Any],
                       person: Sequence[str]) -> tuple[list[dict[str, str]], dict[str, int]]:
    """The rows of a new run with what a person wrote in the earlier file's rows carried over.

    Shared by ``verification.csv`` (:func:`surveyalign.annotation.identify.merge_verification`) and
    ``disagreements.csv`` (:func:`surveyalign.annotation.adjudicate.merge_disagreements`).

    Args:
        rows: the new run's rows, in order.
        earlier: the earlier file's rows by key (the first row of a key).
        key: row -> its key (e.g. the candidate id, or (review id, dimension)).
        person: the columns a person fills (their own added columns included).

    Returns:
        ``(rows, counts)``: each new row whose earlier row has a filled person cell takes every person column
        from it; earlier rows with a filled person cell and no new row follow, unchanged. Counts:
        ``{"rows_with_person_cells", "kept_not_listed"}``.
    """
    def filled(row: dict[str, str]) -> bool:
        return any((row.get(c) or "").strip() for c in person)

    counts = {"rows_with_person_cells": 0, "kept_not_listed": 0}
    listed = {key(r) for r in rows}
    out = []
    for row in rows:
        prev, new = earlier.get(key(row)), dict(row)
        if prev is not None and filled(prev):
            new.update({c: prev.get(c) or "" for c in person})
            counts["rows_with_person_cells"] += 1
        out.append(new)
    for unit, prev in earlier.items():
        if unit not in listed and filled(prev):
            out.append(dict(prev))
            counts["kept_not_listed"] += 1
    return out, counts

"""Reading an outside survey evaluator's output file (one record per survey) for ``surveyalign import-scores``
(:mod:`surveyalign.evaluation.prior`; file shapes in its docstring): records, their survey key, and a criterion's
score and rationale (SurveyReview App. H)."""

from __future__ import annotations

import csv
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from surveyalign.evaluation.prior_map import criterion_key

__all__ = ["KEY_FIELDS", "ToolRecord", "criterion_value", "read_tool_records", "title_key"]

#: Fields that name the survey of a record, tried in this order.
KEY_FIELDS: tuple[str, ...] = ("paper_id", "uid", "id", "title", "name", "topic", "prompt")
#: Fields of a score object or criterion item that hold its text.
_TEXT_FIELDS: tuple[str, ...] = ("rationale", "reason", "analysis", "explanation", "justification")
#: Fields of a score object that hold its number.
_SCORE_FIELDS: tuple[str, ...] = ("score", "value", "target_score")
def title_key(title: object) -> str:
    """A title for matching: lower case, every run of non-alphanumeric characters as one space, trimmed."""
    return re.sub(r"[^0-9a-z]+", " ", str(title).lower()).strip()


@dataclass
class ToolRecord:
    """One survey's record in the tool's file.

    Attributes:
        where: ``FILE:LINE`` (JSONL, CSV) or ``FILE[INDEX]`` / ``FILE[KEY]`` (JSON), for messages.
        key: the value that names the survey.
        key_field: the field it came from.
        fields: the record, with keys as :func:`criterion_key` writes them (a ``scores`` object merged in).
    """

    where: str
    key: str
    key_field: str
    fields: dict[str, Any]


def read_tool_records(path: str | Path) -> tuple[list[ToolRecord], str]:
    """Read an outside evaluator's output file.

    Args:
        path: a ``.jsonl``, ``.json`` or ``.csv`` file (shapes in the module docstring).

    Returns:
        ``(records, format)``; format is ``"jsonl"``, ``"json-array"``, ``"json-keyed"`` or ``"csv"``.

    Raises:
        FileNotFoundError: no such file.
        ValueError: naming the file and record: invalid JSON, a record that is not an object, a record with no
            field of :data:`KEY_FIELDS`, or an unknown suffix.
    """
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"scores file not found: {p}")
    suffix = p.suffix.lower()
    raw: list[tuple[str, Any, str | None]] = []  # (where, record, key from a keyed object)
    if suffix == ".jsonl":
        fmt = "jsonl"
        for lineno, line in enumerate(p.read_text(encoding="utf-8").splitlines(), start=1):
            if not line.strip():
                continue
            try:
                raw.append((f"{p}:{lineno}", json.loads(line), None))
            except json.JSONDecodeError as err:
                raise ValueError(f"{p}:{lineno}: not valid JSON: {err}") from None
    elif suffix == ".json":
        try:
            data = json.loads(p.read_text(encoding="utf-8"))
        except json.JSONDecodeError as err:
            raise ValueError(f"{p}: not valid JSON: {err}") from None
        if isinstance(data, list):
            fmt = "json-array"
            raw = [(f"{p}[{i}]", rec, None) for i, rec in enumerate(data)]
        elif isinstance(data, dict) and data and all(isinstance(v, dict) for v in data.values()):
            fmt = "json-keyed"
            raw = [(f"{p}[{k!r}]", rec, str(k)) for k, rec in data.items()]
        else:
            raise ValueError(f"{p}: expected a JSON array of objects or an object {{paper id or title: object}}")
    elif suffix == ".csv":
        fmt = "csv"
        with p.open(encoding="utf-8", newline="") as fh:
            raw = [(f"{p}:{i}", dict(row), None) for i, row in enumerate(csv.DictReader(fh), start=2)]
    else:
        raise ValueError(f"{p}: unknown file type {suffix or '(none)'}; expected .jsonl, .json or .csv")
    out: list[ToolRecord] = []
    for where, rec, keyed in raw:
        if not isinstance(rec, dict):
            raise ValueError(f"{where}: expected a JSON object, got {type(rec).__name__}")  # noqa: TRY004
        fields = {criterion_key(k): v for k, v in rec.items()}
        if isinstance(rec.get("scores"), dict):
            fields.update({criterion_key(k): v for k, v in rec["scores"].items()})
        if keyed is not None:
            out.append(ToolRecord(where, keyed, "(object key)", fields))
            continue
        found = next((f for f in KEY_FIELDS if fields.get(f) not in (None, "")), None)
        if found is None:
            raise ValueError(f"{where}: no field names the survey; expected one of {', '.join(KEY_FIELDS)}")
        out.append(ToolRecord(where, str(fields[found]), found, fields))
    return out, fmt


def _number(value: Any, where: str, name: str) -> float | None:
    """A score field's number; None for an empty value (null, "", NaN: the tool wrote nothing)."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, bool):
        raise ValueError(f"{where}: field {name} = {value!r} is not a number")  # noqa: TRY004 - one error type for bad input
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{where}: field {name} = {value!r} is not a number") from None
    return None if math.isnan(x) else x


def criterion_value(rec: ToolRecord, key: str) -> tuple[float | None, str]:
    """``(score, rationale)`` of one criterion of a record; score None when the record has no value for it.

    Raises:
        ValueError: naming the record and field: a value that is not a number, or a criterion item list with a
            reference-answer score (``article_2_score``) or no ``target_score``.
    """
    value = rec.fields.get(key)
    text = ""
    if isinstance(value, list):  # DeepResearch Bench: criterion items of one RACE dimension
        scores, weights, lines = [], [], []
        for i, item in enumerate(value):
            name = f"{key}[{i}]"
            if not isinstance(item, dict):
                raise ValueError(  # noqa: TRY004 - one error type for bad input
                    f"{rec.where}: field {name}: expected a criterion object, got {type(item).__name__}")
            if item.get("article_2_score") is not None:
                raise ValueError(f"{rec.where}: field {name}.article_2_score: a comparative score against a "
                                 "reference article; SurveyReview App. H leaves reference-answer components out "
                                 "(run RACE point-wise, target_score only)")
            x = _number(item.get("target_score", item.get("score")), rec.where, f"{name}.target_score")
            if x is None:
                raise ValueError(f"{rec.where}: field {name}: no target_score")
            scores.append(x)
            weights.append(_number(item.get("weight"), rec.where, f"{name}.weight"))
            analysis = next((item[t] for t in _TEXT_FIELDS if isinstance(item.get(t), str) and item[t].strip()), "")
            if analysis:
                lines.append(f"{item.get('criterion') or name}: {analysis.strip()}")
        if not scores:
            return None, ""
        if any(w is None for w in weights) or sum(weights) <= 0:
            weights = [1.0] * len(scores)
        return sum(s * w for s, w in zip(scores, weights)) / sum(weights), "\n".join(lines)
    if isinstance(value, dict):
        number = next((value[f] for f in _SCORE_FIELDS if f in value), None)
        text = next((value[t] for t in _TEXT_FIELDS if isinstance(value.get(t), str)), "")
        value = number
    if not text:
        rationales = rec.fields.get("rationales")
        if isinstance(rationales, dict):
            text = next((v for k, v in rationales.items() if criterion_key(k) == key and isinstance(v, str)), "")
    if not text:
        text = next((rec.fields[f] for f in (f"{key}_rationale", f"{key}_reason")
                     if isinstance(rec.fields.get(f), str)), "")
    return _number(value, rec.where, key), str(text).strip()

"""Prediction records (``predictions.jsonl`` lines) checked and normalised before any metric (SurveyReview §6.1)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from surveyalign.constants import STATUSES, VALID_SCORES
from surveyalign.data import row_dimension

__all__ = ["validate_records"]

#: Fields every prediction record has.
_REQUIRED = ("unit_id", "paper_id", "dimension", "reference", "prediction", "status")


def validate_records(records: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Check prediction records and return normalised copies.

    Normalisation: ``dimension`` lower case, ``source`` lower case (``"unknown"`` when absent or empty),
    ``paper_id``/``unit_id`` as str, ``consistency`` as float or None.

    Args:
        records: one mapping per unit (``predictions.jsonl`` lines).

    Returns:
        A list of new dicts, same order.

    Raises:
        ValueError: naming the record (index and unit_id) and the field: a missing field, an unknown
            status or dimension, a reference outside {-2, -1, 1, 2}, a ``scored`` unit without a
            prediction, a prediction outside {-2, -1, 1, 2}, a consistency outside [0, 1], or a
            repeated unit_id.
    """
    out: list[dict[str, Any]] = []
    seen: dict[str, int] = {}
    for i, rec in enumerate(records):
        where = f"record {i} (unit_id={rec.get('unit_id')!r})"
        missing = [f for f in _REQUIRED if f not in rec]
        if missing:
            raise ValueError(f"{where}: missing field(s) {', '.join(missing)}")
        r = dict(rec)
        r["unit_id"], r["paper_id"] = str(r["unit_id"]), str(r["paper_id"])
        if r["unit_id"] in seen:
            raise ValueError(f"{where}: unit_id repeats record {seen[r['unit_id']]}")
        seen[r["unit_id"]] = i
        try:
            r["dimension"] = row_dimension(r["dimension"])
        except ValueError as err:
            raise ValueError(f"{where}: field dimension: {err}") from None
        if r["status"] not in STATUSES:
            raise ValueError(f"{where}: field status = {r['status']!r}; expected one of {', '.join(STATUSES)}")
        ref = r["reference"]
        if isinstance(ref, bool) or not isinstance(ref, (int, float)) or ref not in VALID_SCORES:
            raise ValueError(f"{where}: field reference = {ref!r}; expected one of {VALID_SCORES}")
        r["reference"] = int(ref)
        pred = r["prediction"]
        if pred is not None:
            if isinstance(pred, bool) or not isinstance(pred, (int, float)) or not math.isfinite(pred) \
                    or pred not in VALID_SCORES:
                raise ValueError(f"{where}: field prediction = {pred!r}; expected one of {VALID_SCORES} or null")
            r["prediction"] = int(pred)
        if r["status"] == "scored" and pred is None:
            raise ValueError(f"{where}: status is 'scored' but prediction is null")
        if r["status"] != "scored":
            r["prediction"] = None  # a failed unit is never scored, whatever it carries
        c = r.get("consistency")
        if c is not None:
            if isinstance(c, bool) or not isinstance(c, (int, float)) or not 0.0 <= float(c) <= 1.0:
                raise ValueError(f"{where}: field consistency = {c!r}; expected a number in [0, 1] or null")
            r["consistency"] = float(c)
        else:
            r["consistency"] = None
        r["source"] = str(r.get("source") or "unknown").lower()
        out.append(r)
    return out

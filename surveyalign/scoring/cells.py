"""Cell formatting shared by the ``surveyalign report`` tables: a number to fixed digits (``_f``; a dash for none), a
value over its confidence interval on a second line (``_ci``), the dimensions present in a set of summaries in
the canonical order (``_dims``), and the short dimension names of column headers (``_SHORT``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from surveyalign.constants import DIMENSIONS

_SHORT = {"readability": "Read", "structure": "Stru", "comprehensiveness": "Comp", "criticalness": "Crit"}
_DASH = "–"


def _f(value: Any, digits: int = 2) -> str:
    if value is None:
        return _DASH
    return f"{float(value):.{digits}f}"


def _ci(value: Any, interval: list[float] | None, digits: int = 2) -> str:
    """``value`` over its interval on a second line (keeps CI columns narrow)."""
    if value is None:
        return _DASH
    if not interval:
        return _f(value, digits)
    return f"{float(value):.{digits}f}\n[{interval[0]:.{digits}f}, {interval[1]:.{digits}f}]"


def _dims(summaries: Mapping[str, Mapping[str, Any]]) -> list[str]:
    present = {d for s in summaries.values() for d in (s.get("per_dimension") or {})}
    return [d for d in DIMENSIONS if d in present]

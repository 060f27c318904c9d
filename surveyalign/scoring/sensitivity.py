"""HAS under other weights of RQS (SurveyReview App. I.3, Table 8), from finished runs: nothing is judged again.

Table 8 keeps Align and RQS of each model and recomputes ``HAS = (1 - b) * Align + b * RQS`` for
``b`` = beta_RQS in {0.25, 0.40, 0.60, 0.75} (0.25 is the paper's default). :func:`has_sensitivity` is the formula;
:func:`table8_rows` reads it off run summaries (``metrics.json`` / ``surveyalign report``), and
:func:`render_table8_markdown` writes the table.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["TABLE8_BETAS", "has_sensitivity", "render_table8_markdown", "table8_rows", "write_table8"]

#: The RQS weights of Table 8 (App. I.3).
TABLE8_BETAS: tuple[float, ...] = (0.25, 0.40, 0.60, 0.75)


def _unit_number(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(float(value)):
        raise ValueError(f"{name} = {value!r} is not a finite number")
    return float(value)


def has_sensitivity(align: float, rqs: float, betas: Sequence[float] = TABLE8_BETAS) -> dict[float, float]:
    """HAS of one model for each RQS weight ``b``: ``(1 - b) * Align + b * RQS`` (SurveyReview App. I.3, Table 8).

    Args:
        align: the model's Align (<= 1; ``alpha``-weighted A_MSE / A_MAE, SurveyReview Eq. 6-7).
        rqs: the model's RQS in [0, 1].
        betas: RQS weights, each in [0, 1] (Table 8: 0.25, 0.40, 0.60, 0.75).

    Returns:
        ``{b: HAS}`` in the order of ``betas`` (floats, unrounded; Table 8 prints two decimals).

    Raises:
        ValueError: ``align`` or ``rqs`` not a finite number, ``align`` > 1, ``rqs`` outside [0, 1], a weight
            outside [0, 1], or no weight.

    Example (Table 8, GPT-5.2 row from its Table 2 figures): ``has_sensitivity(0.7705, 0.42)`` ->
    ``{0.25: 0.6829, 0.4: 0.6303, 0.6: 0.5602, 0.75: 0.5076}`` (rounded here).
    """
    align, rqs = _unit_number(align, "align"), _unit_number(rqs, "rqs")
    if align > 1.0:
        raise ValueError(f"align = {align!r} is above 1, the largest Align")
    if not 0.0 <= rqs <= 1.0:
        raise ValueError(f"rqs = {rqs!r} is outside [0, 1]")
    if not betas:
        raise ValueError("betas: at least one RQS weight is needed")
    out: dict[float, float] = {}
    for b in betas:
        b = _unit_number(b, "beta")
        if not 0.0 <= b <= 1.0:
            raise ValueError(f"beta = {b!r} is outside [0, 1]")
        out[b] = (1.0 - b) * align + b * rqs
    return out


def table8_rows(summaries: Mapping[str, Mapping[str, Any]], betas: Sequence[float] = TABLE8_BETAS
                ) -> list[dict[str, Any]]:
    """Table 8 rows from run summaries (a run's ``metrics.json``, or ``summarize_predictions`` output).

    Args:
        summaries: ``{model name: summary}``; each summary's ``align`` and ``rqs`` are read (Align as the run
            computed it, with its own ``alpha``).
        betas: RQS weights (default Table 8's).

    Returns:
        One row per model, in the given order: ``{"model", "align", "rqs", "has": {str(b): HAS or None},
        "note"}``; a model without Align or RQS (no RQS stage) has ``None`` HAS values and ``note`` says why.

    Raises:
        ValueError: a summary's Align / RQS out of range, or a bad weight (see :func:`has_sensitivity`).
    """
    rows = []
    for name, s in summaries.items():
        align, rqs = s.get("align"), s.get("rqs")
        note = None
        if align is None or rqs is None:
            note = "no Align (no scored units)" if align is None else "no RQS (the run had no rated rationales)"
            values = {str(float(b)): None for b in betas}
        else:
            values = {str(b): v for b, v in has_sensitivity(align, rqs, betas).items()}
        rows.append({"model": str(name), "align": align, "rqs": rqs, "has": values, "note": note})
    return rows


def render_table8_markdown(rows: Sequence[Mapping[str, Any]], digits: int = 2) -> str:
    """Table 8 as a markdown table: Model, Align, RQS, then HAS per RQS weight (``digits`` decimals, "–" when
    undefined), with notes below for the rows that have none.

    Args:
        rows: :func:`table8_rows` output.
        digits: decimals shown (Table 8: 2).

    Returns:
        The markdown text (ends with a newline).
    """
    betas = list(rows[0]["has"]) if rows else [str(b) for b in TABLE8_BETAS]

    def f(v: Any) -> str:
        return "–" if v is None else f"{float(v):.{digits}f}"

    lines = ["| Model | Align | RQS | " + " | ".join(f"HAS (β_RQS = {float(b):.2f})" for b in betas) + " |",
             "| --- | --- | --- | " + " | ".join("---" for _ in betas) + " |"]
    lines += [f"| {r['model']} | {f(r['align'])} | {f(r['rqs'])} | " + " | ".join(f(r["has"].get(b)) for b in betas)
              + " |" for r in rows]
    notes = [f"- {r['model']}: {r['note']}" for r in rows if r.get("note")]
    return "\n".join(lines + ([""] + notes if notes else [])) + "\n"


def write_table8(summaries: Mapping[str, Mapping[str, Any]], betas: Sequence[float] = TABLE8_BETAS,
                 out_dir: str | os.PathLike | None = None) -> tuple[list[dict[str, Any]], str]:
    """Table 8 of run summaries: its rows and markdown, written as ``table8.md`` / ``table8.json`` into ``out_dir``.

    Args:
        summaries: ``{model name: summary}`` (see :func:`table8_rows`).
        betas: RQS weights.
        out_dir: folder to write into (created); ``None``: nothing written.

    Returns:
        ``(rows, markdown)``; ``table8.json`` holds ``{"betas": [...], "rows": rows}``.

    Raises:
        ValueError: from :func:`table8_rows`.
        OSError: the folder or files cannot be written.
    """
    rows = table8_rows(summaries, betas)
    text = render_table8_markdown(rows)
    if out_dir is not None:
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        (out / "table8.md").write_text(text, encoding="utf-8")
        (out / "table8.json").write_text(json.dumps({"betas": [float(b) for b in betas], "rows": rows}, indent=2,
                                                    allow_nan=False), encoding="utf-8")
    return rows, text

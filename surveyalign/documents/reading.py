"""How much of a survey a judge read: one line per (survey, dimension) and the summary over many.

A *read block* is what :meth:`surveyalign.judge.PreparedPrompt.reading` returns for one prompt: ``chars_read``
(characters of the survey body in the prompt; ``None`` when nothing was sent), ``chars_total``, ``tokens_read`` /
``tokens_total`` (``None`` without a tokenizer), ``cut`` (the end of the body was left out), ``cut_at_char`` and
``counted`` (``"tokens"``, ``"characters"`` or ``"none"``). ``surveyalign score`` puts one in each dimension
record of its reports, an evaluation run in each ``predictions.jsonl`` row; both render it with
:func:`reading_text`, and an evaluation's ``metrics.json`` / leaderboard / HTML report summarise the rows with
:func:`summarize_reading` and :func:`reading_summary_text`.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["reading_summary_text", "reading_text", "summarize_reading"]


def reading_text(read: Mapping[str, Any] | None) -> str:
    """One line saying how much of the survey the judge read on a dimension.

    Args:
        read: a read block (``None``: nothing was sent).

    Returns:
        e.g. ``"12,000 of 84,156 characters (512 of 20,311 tokens); cut at character 12,000, the rest not read"``,
        ``"84,156 of 84,156 characters (whole)"``, or ``"nothing sent"``.
    """
    if not read or read.get("chars_read") is None:
        return "nothing sent"
    text = f"{read['chars_read']:,} of {read['chars_total']:,} characters"
    if read.get("tokens_total") is not None:
        text += f" ({read['tokens_read']:,} of {read['tokens_total']:,} tokens)"
    if read.get("cut"):
        text += f"; cut at character {read['cut_at_char']:,}, the rest not read"
    else:
        text += " (whole)"
    if read.get("counted") == "none":
        text += "; length not checked (no tokenizer and no known context)"
    return text


def summarize_reading(blocks: Iterable[Mapping[str, Any] | None]) -> dict[str, Any]:
    """How much of their surveys a judge read over many units (one read block per unit).

    Args:
        blocks: read blocks, ``None`` (or a block with ``chars_read`` ``None``) for a unit that sent nothing.

    Returns:
        ``{"n_units", "n_sent" (units whose prompt was sent), "n_cut" (sent units whose survey end was left out),
        "n_unchecked" (sent units whose length nobody checked: ``counted == "none"``), "median_fraction_read" and
        "min_fraction_read" (characters read / characters of the survey, over the sent units with a non-empty
        survey, in [0, 1]; ``None`` when there is none), "chars_read", "chars_total" (sums over the sent units),
        "tokens_read", "tokens_total" (sums when every sent unit counted tokens, else ``None``)}``.
    """
    blocks = list(blocks)
    sent = [b for b in blocks if b and b.get("chars_read") is not None]
    fractions = [b["chars_read"] / b["chars_total"] for b in sent if b.get("chars_total")]
    counted = all(b.get("tokens_total") is not None for b in sent) and bool(sent)
    return {
        "n_units": len(blocks), "n_sent": len(sent), "n_cut": sum(bool(b.get("cut")) for b in sent),
        "n_unchecked": sum(b.get("counted") == "none" for b in sent),
        "median_fraction_read": statistics.median(fractions) if fractions else None,
        "min_fraction_read": min(fractions) if fractions else None,
        "chars_read": sum(int(b["chars_read"]) for b in sent),
        "chars_total": sum(int(b.get("chars_total") or 0) for b in sent),
        "tokens_read": sum(int(b["tokens_read"]) for b in sent) if counted else None,
        "tokens_total": sum(int(b["tokens_total"]) for b in sent) if counted else None,
    }


def reading_summary_text(summary: Mapping[str, Any] | None) -> str:
    """One short line of :func:`summarize_reading`'s result, for a leaderboard cell or a report line.

    Args:
        summary: the summary, or ``None`` (a run written before read blocks existed).

    Returns:
        e.g. ``"3/11 cut; median 42% read (least 10%)"``, ``"0/11 cut; whole surveys read"``, ``"nothing sent"``,
        ``"not recorded"``; ``"; N unchecked"`` is added when some lengths were never checked.
    """
    if not summary:
        return "not recorded"
    if not summary.get("n_sent"):
        return "nothing sent"
    text = f"{summary['n_cut']}/{summary['n_sent']} cut"
    median, least = summary.get("median_fraction_read"), summary.get("min_fraction_read")
    if summary["n_cut"] and median is not None:
        text += f"; median {median:.0%} read (least {least:.0%})"
    else:
        text += "; whole surveys read"
    if summary.get("n_unchecked"):
        text += f"; {summary['n_unchecked']} unchecked"
    return text

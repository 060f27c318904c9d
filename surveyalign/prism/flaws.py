"""Flaw identification (critical / minor recall, consensus-weighted recall) and prioritisation (nCPS).

PRISM pools the atomic flaws of all reviews of a paper, validates each against the paper and keeps the valid
ones of severity critical or minor. A reviewer detects a flaw when their exact id is among the ids that raised
it (whole-id set membership, never a substring test: ``"R1"`` does not match a flaw raised by ``"R10"``).

Prioritisation (the official code's per-section nDCG): each critique of a review weighs 2 (critical) or
1 (minor); within each review section, in presentation order, CPS = sum_i w_i / log2(i + 2) (i from 0) and
ICPS is the same sum with the weights sorted descending; nCPS = sum CPS / sum ICPS over sections, 0 when
ICPS is 0. The presentation order is recovered from each critique's quote in the review text: an exact
(case-insensitive) match, then a fuzzy match (rapidfuzz partial ratio >= 0.45), then the same fuzzy match on
the critique's own text, else the critique goes last (keeping the extractor's order among those).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

from rapidfuzz import fuzz

from surveyalign.prism.units import SEVERITY_WEIGHTS, Flaw, RankedCritique

__all__ = ["FUZZY_MIN_RATIO", "cps", "flaw_recall", "ncps", "quote_position"]

#: Minimum fuzzy similarity (0..1) for a quote to be placed by fuzzy matching.
FUZZY_MIN_RATIO = 0.45


def _ratio(num: float, den: float) -> float | None:
    return num / den if den else None


def flaw_recall(flaws: Sequence[Flaw], reviewer_id: str, consensus_reviewers: Iterable[str] | None = None
                ) -> dict[str, Any]:
    """Critical and minor recall of one reviewer, plain and consensus-weighted (PRISM flaw identification).

    Args:
        flaws: the paper's pooled flaws; only valid critical / minor ones (:attr:`Flaw.counted`) count.
        reviewer_id: the reviewer's exact id.
        consensus_reviewers: the N reviewer ids whose agreement defines the consensus weight
            W_i = C_i / N (C_i = how many of them raised flaw i); default: every id that raised a flaw.

    Returns:
        ``{"critical_recall", "minor_recall", "recall", "weighted_critical_recall", "weighted_minor_recall",
        "weighted_recall", "n_critical", "n_minor", "detected_critical", "detected_minor", "n_consensus"}``.
        Each recall is in [0, 1], or None when its denominator is 0 (no valid flaw of that severity, or no
        consensus weight at all).

    Raises:
        TypeError: ``reviewer_id`` is not a string (a collection would make matching ambiguous).
    """
    if not isinstance(reviewer_id, str):
        raise TypeError(f"reviewer_id must be a string, got {type(reviewer_id).__name__}")
    counted = [f for f in flaws if f.counted]
    pool = (frozenset(consensus_reviewers) if consensus_reviewers is not None
            else frozenset().union(*(f.raised_by for f in counted)))
    n = len(pool)
    out: dict[str, Any] = {"n_consensus": n}
    for label, subset in (("critical", [f for f in counted if f.severity == "critical"]),
                          ("minor", [f for f in counted if f.severity == "minor"]), ("all", counted)):
        detected = [f for f in subset if reviewer_id in f.raised_by]
        weight = [len(f.raised_by & pool) / n if n else 0.0 for f in subset]
        hit = [w for w, f in zip(weight, subset, strict=True) if reviewer_id in f.raised_by]
        key = "recall" if label == "all" else f"{label}_recall"
        out[key] = _ratio(len(detected), len(subset))
        out[f"weighted_{key}"] = _ratio(sum(hit), sum(weight))
        if label != "all":
            out[f"n_{label}"] = len(subset)
            out[f"detected_{label}"] = len(detected)
    return out


def quote_position(quote: str, text: str, min_ratio: float = FUZZY_MIN_RATIO) -> tuple[int | None, str]:
    """Character offset of ``quote`` in ``text``: exact (case-insensitive) first, then fuzzy.

    Args:
        quote: the span to find (stripped).
        text: the review text.
        min_ratio: minimum rapidfuzz partial-ratio similarity in [0, 1] for a fuzzy placement (inclusive:
            a similarity equal to it, up to 1e-9, places the quote).

    Returns:
        ``(offset, how)`` with ``how`` in ``"exact"``, ``"fuzzy"``, ``"unmatched"`` (offset None).
    """
    quote = (quote or "").strip()
    if not quote or not text:
        return None, "unmatched"
    found = text.lower().find(quote.lower())
    if found >= 0:
        return found, "exact"
    alignment = fuzz.partial_ratio_alignment(quote, text, processor=str.lower)
    # rapidfuzz scores a similarity of exactly 18 / 40 = 0.45 as 44.99999999999999: round before comparing,
    # or a quote exactly at the threshold would be left unmatched
    if alignment is not None and round(alignment.score / 100, 9) >= min_ratio:
        return alignment.dest_start, "fuzzy"
    return None, "unmatched"


def _dcg(weights: Sequence[float]) -> float:
    return sum(w / math.log2(i + 2) for i, w in enumerate(weights))


def _ordered_sections(critiques: Sequence[RankedCritique], review_text: str | None,
                      min_ratio: float) -> tuple[dict[str, list[float]], dict[str, int]]:
    how_counts = {"exact": 0, "fuzzy": 0, "unmatched": 0, "not_recovered": 0}
    placed = []
    for index, crit in enumerate(critiques):
        if review_text is None:
            pos, how = index, "not_recovered"
        else:
            pos, how = quote_position(crit.quote, review_text, min_ratio)
            if pos is None and crit.text:
                pos, how = quote_position(crit.text, review_text, min_ratio)
        how_counts[how] += 1
        placed.append((pos if pos is not None else math.inf, index, crit))
    placed.sort(key=lambda t: (t[0], t[1]))
    sections: dict[str, list[float]] = {}
    for _, _, crit in placed:
        weight = SEVERITY_WEIGHTS.get(crit.severity.strip().lower(), 0.0)
        bucket = sections.setdefault((crit.section or "weaknesses").strip().lower() or "weaknesses", [])
        if weight > 0:
            bucket.append(weight)
    return sections, how_counts


def cps(weights: Sequence[float]) -> float:
    """CPS of one section: sum_i w_i / log2(i + 2), i from 0, in the given order (a DCG).

    Args:
        weights: the section's critique weights (2 critical, 1 minor) in presentation order.

    Returns:
        The CPS, >= 0 (0 for an empty section). The ideal ICPS is ``cps(sorted(weights, reverse=True))``.
    """
    return _dcg(weights)


def ncps(critiques: Sequence[RankedCritique], review_text: str | None = None,
         min_ratio: float = FUZZY_MIN_RATIO) -> dict[str, Any]:
    """Normalised critique prioritisation score of one review (PRISM prioritisation).

    Args:
        critiques: the review's validated critiques with section, severity and quote (extractor order).
        review_text: the full review text used to recover each critique's position; ``None`` keeps the
            given order.
        min_ratio: fuzzy-match threshold in [0, 1] (PRISM: 0.45).

    Returns:
        ``{"ncps", "cps", "icps", "per_section", "positions"}``: nCPS in [0, 1] (0 when ICPS is 0), the summed
        CPS and ICPS, ``{section: {"cps", "icps", "n"}}`` and how many quotes were placed exactly, fuzzily or
        not at all.
    """
    sections, how = _ordered_sections(critiques, review_text, min_ratio)
    per_section = {name: {"cps": cps(w), "icps": cps(sorted(w, reverse=True)), "n": len(w)}
                   for name, w in sections.items()}
    total = sum(s["cps"] for s in per_section.values())
    ideal = sum(s["icps"] for s in per_section.values())
    return {"ncps": total / ideal if ideal else 0.0, "cps": total, "icps": ideal,
            "per_section": per_section, "positions": how}

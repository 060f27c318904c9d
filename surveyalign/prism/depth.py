"""Depth of analysis (DoA): premise ratio, grounding depth and their harmonic mean (PRISM §3.1).

Formulas as in PRISM's official code: with A the review's ADUs and P the premises among them,
R_premise = |P| / |A|, S_depth = mean grounding g over the graded premises (g in {0, 1, 2}),
DoA = harmonic mean of R_premise and S_depth / g_max (0 when both are 0). A review with no ADU gets 0 for
all three (nothing argued); a review with premises but no graded one gets S_depth = 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from surveyalign.prism.units import ADU, ASPECTS, GROUNDING_MAX

__all__ = ["depth_of_analysis", "harmonic_mean"]


def harmonic_mean(a: float, b: float) -> float:
    """Harmonic mean ``2ab / (a + b)`` of two non-negative numbers; 0 when both are 0.

    Args:
        a, b: values >= 0.

    Returns:
        The harmonic mean, in [0, max(a, b)].
    """
    return 0.0 if a + b == 0 else 2 * a * b / (a + b)


def depth_of_analysis(adus: Sequence[ADU], aspects: Sequence[str] = ASPECTS) -> dict[str, Any]:
    """DoA of one review from its ADUs (PRISM §3.1).

    Args:
        adus: the review's ADUs (any order); may be empty.
        aspects: aspect labels to report shares for (default :data:`~surveyalign.prism.units.ASPECTS`).

    Returns:
        ``{"r_premise", "s_depth", "doa", "doa_product", "n_adus", "n_premises", "n_graded", "n_defaulted",
        "aspect_share", "premise_aspect_share"}``: R_premise in [0, 1], S_depth in [0, 2], DoA in [0, 1]
        (harmonic mean of R_premise and S_depth / 2), ``doa_product`` = R_premise * S_depth / 2 (the official
        code's second form), counts, and per-aspect shares of all ADUs and of the premises (0 when the
        denominator is 0). ``n_defaulted`` counts ADUs whose classification fell back to claim/other.
    """
    n = len(adus)
    premises = [a for a in adus if a.role == "premise"]
    graded = [a.grounding for a in premises if a.grounding is not None]
    r_premise = len(premises) / n if n else 0.0
    s_depth = sum(graded) / len(graded) if graded else 0.0
    normalised = s_depth / GROUNDING_MAX
    return {
        "r_premise": r_premise,
        "s_depth": s_depth,
        "doa": harmonic_mean(r_premise, normalised),
        "doa_product": r_premise * normalised,
        "n_adus": n,
        "n_premises": len(premises),
        "n_graded": len(graded),
        "n_defaulted": sum(a.defaulted for a in adus),
        "aspect_share": {k: (sum(a.aspect == k for a in adus) / n if n else 0.0) for k in aspects},
        "premise_aspect_share": {
            k: (sum(a.aspect == k for a in premises) / len(premises) if premises else 0.0) for k in aspects
        },
    }

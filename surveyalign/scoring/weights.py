"""The weights of the Human-aligned Score (SurveyReview §3 Eq. 6-8, §6.1): checked, parsed and configured.

``Align = alpha[0] * A_MSE + alpha[1] * A_MAE`` and ``HAS = beta[0] * Align + beta[1] * RQS``; the paper's defaults
are alpha = (0.4, 0.6) and beta = (0.75, 0.25). Each pair is a convex combination: two non-negative weights summing
to 1. An evaluation config sets them in a ``has:`` block (:class:`HASWeights`), ``surveyalign report`` with
``--has-weights a1,a2,b1,b2`` (:func:`parse_has_weights`). The authors' results table calls the composite "SSR":
the same score (:data:`HAS_ALIASES`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = ["DEFAULT_ALPHA", "DEFAULT_BETA", "HAS_ALIASES", "HASWeights", "check_has_weights", "parse_has_weights",
           "recorded_weights", "weights_note"]

#: Paper defaults (SurveyReview §6.1): weights of (A_MSE, A_MAE) and of (Align, RQS).
DEFAULT_ALPHA: tuple[float, float] = (0.4, 0.6)
DEFAULT_BETA: tuple[float, float] = (0.75, 0.25)
#: Other names of HAS: "ssr" is what the authors' results table calls the composite.
HAS_ALIASES: tuple[str, ...] = ("has", "ssr")
_TOL = 1e-9


def check_has_weights(alpha: Sequence[float], beta: Sequence[float]) -> tuple[tuple[float, float], tuple[float, float]]:
    """Check the two HAS weight pairs.

    Args:
        alpha: weights of (A_MSE, A_MAE).
        beta: weights of (Align, RQS).

    Returns:
        ``(alpha, beta)`` as float tuples.

    Raises:
        ValueError: a pair without exactly two entries, a weight that is not a finite number or is negative, or a
            pair whose sum is not 1 (within 1e-9); the message names the pair and its values.
    """
    out = []
    for name, pair in (("alpha", alpha), ("beta", beta)):
        values = list(pair) if isinstance(pair, (list, tuple)) else None
        if values is None or len(values) != 2:
            raise ValueError(f"HAS weights {name}: expected two weights, got {pair!r}")
        for v in values:
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(float(v)):
                raise ValueError(f"HAS weights {name}: {v!r} is not a finite number")
            if v < 0:
                raise ValueError(f"HAS weights {name}: {v!r} is negative; each weight is >= 0")
        if abs(sum(values) - 1.0) > _TOL:
            raise ValueError(f"HAS weights {name} = ({values[0]:g}, {values[1]:g}) sum to {sum(values):g}; they must "
                             "sum to 1")
        out.append((float(values[0]), float(values[1])))
    return out[0], out[1]


def parse_has_weights(text: str) -> tuple[tuple[float, float], tuple[float, float]]:
    """Read ``"a1,a2,b1,b2"`` (the ``--has-weights`` flag) as ``(alpha, beta)``.

    Raises:
        ValueError: not four comma-separated numbers, or weights refused by :func:`check_has_weights`.
    """
    parts = [p.strip() for p in str(text).split(",")]
    try:
        numbers = [float(p) for p in parts]
    except ValueError:
        raise ValueError(f"--has-weights {text!r}: expected four numbers a1,a2,b1,b2 (e.g. 0.4,0.6,0.75,0.25)") from None
    if len(numbers) != 4:
        raise ValueError(f"--has-weights {text!r}: expected four numbers a1,a2,b1,b2, got {len(numbers)}")
    return check_has_weights(numbers[:2], numbers[2:])


class HASWeights(BaseModel):
    """The ``has:`` block of an evaluation config: ``{alpha: [a1, a2], beta: [b1, b2]}`` (paper defaults).

    Raises (at validation):
        pydantic.ValidationError: a pair refused by :func:`check_has_weights`.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    alpha: tuple[float, float] = Field(DEFAULT_ALPHA, description="weights of (A_MSE, A_MAE): >= 0, sum 1")
    beta: tuple[float, float] = Field(DEFAULT_BETA, description="weights of (Align, RQS): >= 0, sum 1")

    @model_validator(mode="after")
    def _convex(self) -> HASWeights:
        check_has_weights(self.alpha, self.beta)
        return self


def recorded_weights(run_config: Mapping[str, Any] | None, metrics: Mapping[str, Any] | None
                     ) -> tuple[tuple[float, float], tuple[float, float]] | None:
    """The HAS weights a run was configured with: ``run_config.json`` ``config.has``, else ``metrics.json``
    ``weights``; ``None`` when neither records them (a run made before they were configurable).

    Raises:
        ValueError: recorded weights refused by :func:`check_has_weights`.
    """
    has = ((run_config or {}).get("config") or {}).get("has")
    if isinstance(has, Mapping) and "alpha" in has and "beta" in has:
        return check_has_weights(has["alpha"], has["beta"])
    weights = (metrics or {}).get("weights")
    if isinstance(weights, Mapping) and "alpha" in weights and "beta" in weights:
        return check_has_weights(weights["alpha"], weights["beta"])
    return None


def weights_note(summaries: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """The leaderboard's line on the HAS weights of its rows (their ``weights``): one line when every row used
    the same, else one per judge; nothing when no row records them."""
    found = {j: s["weights"] for j, s in summaries.items() if isinstance(s.get("weights"), Mapping)
             and "alpha" in s["weights"] and "beta" in s["weights"]}

    def text(w: Mapping[str, Any]) -> str:
        a, b = w["alpha"], w["beta"]
        return f"Align = {a[0]:g} A_MSE + {a[1]:g} A_MAE, HAS = {b[0]:g} Align + {b[1]:g} RQS"

    lines = {j: text(w) for j, w in found.items()}
    if len(set(lines.values())) == 1:
        return [f"HAS weights: {next(iter(lines.values()))}"]
    return [f"HAS weights of {j}: {line}" for j, line in lines.items()]

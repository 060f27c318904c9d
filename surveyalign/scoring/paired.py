"""Paired comparisons of two systems over shared units (topics, papers): the mean difference with a unit-level
bootstrap interval, a two-sided sign test, and the insufficient-data rule of :mod:`surveyalign.scoring.bootstrap`
(used by ``surveyalign systems`` to compare survey writers topic by topic).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from surveyalign.scoring.bootstrap import (
    INSUFFICIENT_DATA,
    MIN_BOOTSTRAP_PAPERS,
    resample_weights,
)

__all__ = ["paired_difference", "resampled_means", "sign_test"]


def sign_test(differences: Sequence[float]) -> tuple[float | None, int, int]:
    """Two-sided exact sign test of paired differences (zeros dropped, as the test is defined).

    Args:
        differences: the paired differences ``a - b``.

    Returns:
        ``(p, n_positive, n_negative)``; ``p`` in (0, 1] is ``min(1, 2 * P[X <= min(n+, n-)])`` with X ~
        Binomial(n+ + n-, 1/2), ``None`` when every difference is zero.
    """
    pos = sum(1 for d in differences if d > 0)
    neg = sum(1 for d in differences if d < 0)
    n = pos + neg
    if n == 0:
        return None, 0, 0
    k = min(pos, neg)
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2**n
    return min(1.0, 2 * tail), pos, neg


def paired_difference(a: Mapping[str, float | None], b: Mapping[str, float | None], *, n_resamples: int = 1000,
                      seed: int = 0, min_units: int = MIN_BOOTSTRAP_PAPERS) -> dict[str, Any]:
    """Mean of ``a - b`` over the units both have a value for, with a percentile 95% bootstrap interval.

    Every resample draws the shared units with replacement (:func:`surveyalign.scoring.bootstrap.resample_weights`
    with ``seed``: the same draws as the other bootstraps of the package), so unit difficulty cancels out.

    Args:
        a: ``{unit: value or None}`` of system A (``None``: no value on that unit; a unit absent: not done).
        b: the same for system B.
        n_resamples: bootstrap resamples (>= 1).
        seed: numpy seed.
        min_units: fewest shared units from which an interval, a p-value and a "better" are reported.

    Returns:
        ``{"n_shared", "units", "a", "b" (means over the shared units), "diff", "ci95" ([lo, hi] | None),
        "sign_p", "n_positive", "n_negative", "n_zero", "better" ("a" | "b" | None: the interval excludes 0),
        "note"}``; below ``min_units`` shared units (or when the difference is the same in every resample) the
        interval, ``sign_p`` and ``better`` are ``None`` and ``note`` says :data:`INSUFFICIENT_DATA` and why.

    Raises:
        ValueError: ``n_resamples`` < 1.
    """
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be >= 1, got {n_resamples}")
    units = sorted(u for u in set(a) & set(b) if a[u] is not None and b[u] is not None)
    va = np.asarray([float(a[u]) for u in units])
    vb = np.asarray([float(b[u]) for u in units])
    d = va - vb
    p, pos, neg = sign_test(d.tolist())
    out: dict[str, Any] = {
        "n_shared": len(units), "units": units, "a": float(va.mean()) if units else None,
        "b": float(vb.mean()) if units else None, "diff": float(d.mean()) if units else None, "ci95": None,
        "sign_p": None, "n_positive": pos, "n_negative": neg, "n_zero": len(units) - pos - neg, "better": None,
        "note": None}
    if len(units) < min_units:
        out["note"] = f"{INSUFFICIENT_DATA}: {len(units)} shared units, fewer than {min_units}"
        return out
    out["sign_p"] = p
    means = (resample_weights(len(units), n_resamples, seed) @ d) / len(units)
    if np.ptp(means) == 0:
        out["note"] = f"{INSUFFICIENT_DATA}: the difference is the same in every resample"
        return out
    lo, hi = np.percentile(means, [2.5, 97.5])
    out["ci95"] = [float(lo), float(hi)]
    if lo > 0 or hi < 0:
        out["better"] = "a" if out["diff"] > 0 else "b"
    return out


def resampled_means(values: Mapping[str, Mapping[str, float | None]], units: Sequence[str], *,
                    n_resamples: int, seed: int) -> dict[str, np.ndarray]:
    """Each system's mean over its units with a value, in every unit-level bootstrap resample.

    Args:
        values: ``{system: {unit: value or None}}``.
        units: every unit (the resampled clusters; a system without a value on a unit skips it).
        n_resamples: resamples B (>= 1).
        seed: numpy seed (:func:`~surveyalign.scoring.bootstrap.resample_weights`).

    Returns:
        ``{system: (B,) means}``; NaN in a resample that drew none of the system's units.
    """
    W = resample_weights(len(units), n_resamples, seed)
    out = {}
    for system, per_unit in values.items():
        mask = np.asarray([per_unit.get(u) is not None for u in units], dtype=float)
        vals = np.asarray([float(per_unit[u]) if per_unit.get(u) is not None else 0.0 for u in units])
        with np.errstate(divide="ignore", invalid="ignore"):
            out[system] = (W @ vals) / (W @ mask)
    return out

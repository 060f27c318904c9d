"""Paper-level bootstrap: confidence intervals and a paired test between two judges (beyond the paper).

Units of one paper share the survey text (and reviews of one paper share the reviewer pool), so they
are not independent: resampling units would give too narrow intervals. We resample *papers* with
replacement and keep all their units (a cluster bootstrap), and report percentile 95% intervals.

All statistics of a resample are computed from per-paper confusion tables (prediction x reference),
so 1,000 resamples cost a few matrix products; the formulas match the point estimates of
:mod:`surveyalign.scoring.metrics` (tested).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from surveyalign.constants import DELTA_S, DIMENSIONS, VALID_SCORES
from surveyalign.scoring.records import validate_records

__all__ = ["INSUFFICIENT_DATA", "MIN_BOOTSTRAP_PAPERS", "bootstrap_intervals", "paired_bootstrap"]

#: Fewest papers (resampling clusters) from which intervals, p-values and a "better" judge are reported (our
#: choice; the paper reports no intervals). With fewer, a percentile interval comes from a handful of distinct
#: resamples and a paired test cannot reach 95% honestly, so the bootstrap says :data:`INSUFFICIENT_DATA`.
MIN_BOOTSTRAP_PAPERS = 10

#: What the bootstrap reports instead of an interval / p-value / winner when the data cannot support one.
INSUFFICIENT_DATA = "insufficient data"

#: Lower-is-better flags of the statistics the bootstrap reports.
_LOWER_IS_BETTER = {"avg_mse": True, "avg_mae": True, "align": False, "rqs": False, "has": False,
                    "mse": True, "mae": True, "macro_mae": True, "qwk": False, "krippendorff_alpha": False,
                    "skill_vs_majority": False, "rq": False}


@dataclass
class _Tables:
    """Per-paper sufficient statistics of one judge's scored units."""

    papers: list[str]
    dims: list[str]
    values: np.ndarray  # (L,) score values, the label axis of the confusion tables
    conf: dict[str, np.ndarray]  # dim -> (P, L, L) counts, axis 1 = prediction, axis 2 = reference
    csum: dict[str, np.ndarray]  # dim -> (P,) sum of consistency scores
    ccount: dict[str, np.ndarray]  # dim -> (P,) number of consistency scores


def build_tables(records: Sequence[dict], papers: list[str] | None = None,
                  values: Sequence[float] | None = None) -> _Tables:
    """Sufficient statistics from prediction records; only ``status == "scored"`` units enter ``conf``."""
    if papers is None:
        papers = sorted({str(r["paper_id"]) for r in records})
    pidx = {p: i for i, p in enumerate(papers)}
    if values is None:
        seen = {float(r["reference"]) for r in records}
        seen |= {float(r["prediction"]) for r in records if r.get("prediction") is not None}
        values = sorted(seen | {float(s) for s in VALID_SCORES})
    vidx = {float(v): i for i, v in enumerate(values)}
    present = {r["dimension"] for r in records}  # checked records (validate_records)
    dims = [d for d in DIMENSIONS if d in present]
    L, P = len(values), len(papers)
    conf = {d: np.zeros((P, L, L)) for d in dims}
    csum = {d: np.zeros(P) for d in dims}
    ccount = {d: np.zeros(P) for d in dims}
    for r in records:
        d = r["dimension"]
        p = pidx[str(r["paper_id"])]
        if r.get("status") == "scored" and r.get("prediction") is not None:
            conf[d][p, vidx[float(r["prediction"])], vidx[float(r["reference"])]] += 1
        c = r.get("consistency")
        if c is not None:
            csum[d][p] += float(c)
            ccount[d][p] += 1
    return _Tables(papers, dims, np.asarray(values, dtype=float), conf, csum, ccount)


def _div(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)


def _confusion_stats(C: np.ndarray, values: np.ndarray, majority: float | None) -> dict[str, np.ndarray]:
    """Vectorised statistics of a batch of confusion tables ``C`` (B, L, L); NaN where undefined."""
    v = values
    d2 = (v[:, None] - v[None, :]) ** 2
    d1 = np.abs(v[:, None] - v[None, :])
    n = C.sum(axis=(1, 2))
    out = {"mse": _div((C * d2).sum(axis=(1, 2)), n), "mae": _div((C * d1).sum(axis=(1, 2)), n)}
    ref_margin = C.sum(axis=1)  # (B, L) counts of each reference class
    pred_margin = C.sum(axis=2)
    per_class = _div((C * d1).sum(axis=1), ref_margin)  # (B, L)
    with np.errstate(invalid="ignore"), _quiet():
        out["macro_mae"] = np.nanmean(np.where(ref_margin > 0, per_class, np.nan), axis=1)
    rank = np.arange(len(v), dtype=float)
    w = (rank[:, None] - rank[None, :]) ** 2
    expected = _div(pred_margin[:, :, None] * ref_margin[:, None, :], n[:, None, None])
    kappa = 1.0 - _div((C * w).sum(axis=(1, 2)), np.nan_to_num((expected * w).sum(axis=(1, 2))))
    out["qwk"] = np.where(n >= 2, kappa, np.nan)
    pooled = pred_margin + ref_margin  # (B, L); 2n values
    m = 2 * n
    mean = _div((pooled * v).sum(axis=1), m)
    var = _div((pooled * (v[None, :] - mean[:, None]) ** 2).sum(axis=1), m)
    d_e = _div(2 * m * var, m - 1)
    alpha = 1.0 - _div(out["mse"], d_e)
    out["krippendorff_alpha"] = np.where(n >= 2, alpha, np.nan)
    if majority is not None:
        maj_mse = _div((ref_margin * (v[None, :] - majority) ** 2).sum(axis=1), n)
        out["skill_vs_majority"] = 1.0 - _div(out["mse"], maj_mse)
        out["majority_mse"] = maj_mse
    return out


class _quiet:
    """Silence numpy's 'Mean of empty slice' RuntimeWarning inside a block."""

    def __enter__(self):
        import warnings

        self._ctx = warnings.catch_warnings()
        self._ctx.__enter__()
        warnings.simplefilter("ignore", category=RuntimeWarning)

    def __exit__(self, *exc):
        return self._ctx.__exit__(*exc)


def resample_stats(t: _Tables, W: np.ndarray, *, majority: dict[str, int] | None,
                    alpha_w: Sequence[float], beta_w: Sequence[float], delta_s: float) -> dict[str, Any]:
    """Statistics for each row of the paper-weight matrix ``W`` (B, P); arrays of shape (B,)."""
    per_dim: dict[str, dict[str, np.ndarray]] = {}
    for d in t.dims:
        C = np.tensordot(W, t.conf[d], axes=(1, 0))
        maj = None if not majority or d not in majority else float(majority[d])
        stats = _confusion_stats(C, t.values, maj)
        stats["rq"] = _div(W @ t.csum[d], W @ t.ccount[d])
        per_dim[d] = stats
    with _quiet():
        dims_err = [d for d in t.dims if t.conf[d].sum() > 0]
        avg_mse = np.mean([per_dim[d]["mse"] for d in dims_err], axis=0) if dims_err else None
        avg_mae = np.mean([per_dim[d]["mae"] for d in dims_err], axis=0) if dims_err else None
        dims_rq = [d for d in t.dims if t.ccount[d].sum() > 0]
        rqs = np.mean([per_dim[d]["rq"] for d in dims_rq], axis=0) if dims_rq else None
    out: dict[str, Any] = {"per_dimension": per_dim, "avg_mse": avg_mse, "avg_mae": avg_mae, "rqs": rqs}
    if avg_mse is not None:
        align = alpha_w[0] * (1 - avg_mse / delta_s**2) + alpha_w[1] * (1 - avg_mae / delta_s)
        out["align"] = align
        out["has"] = None if rqs is None else beta_w[0] * align + beta_w[1] * rqs
        if majority and all(d in majority for d in dims_err):
            maj_avg = np.mean([per_dim[d]["majority_mse"] for d in dims_err], axis=0)
            out["skill_vs_majority"] = 1.0 - _div(avg_mse, maj_avg)
    return out


def resample_weights(n_papers: int, n_resamples: int, seed: int) -> np.ndarray:
    """(B, P) counts of how often each paper is drawn in each resample."""
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, n_papers, size=(n_resamples, n_papers))
    W = np.zeros((n_resamples, n_papers))
    np.add.at(W, (np.arange(n_resamples)[:, None], draws), 1.0)
    return W


def _interval(samples: np.ndarray | None, min_valid: float = 0.5) -> list[float] | None:
    """Percentile 95% interval over the finite resamples; None if fewer than ``min_valid`` are finite or every
    finite resample is identical (no spread to estimate from)."""
    if samples is None:
        return None
    finite = samples[np.isfinite(samples)]
    if finite.size == 0 or finite.size < min_valid * samples.size or np.ptp(finite) == 0:
        return None
    lo, hi = np.percentile(finite, [2.5, 97.5])
    return [float(lo), float(hi)]


def bootstrap_intervals(records: Sequence[dict], *, n_resamples: int = 1000, seed: int = 0,
                        majority: dict[str, int] | None = None, alpha: Sequence[float] = (0.4, 0.6),
                        beta: Sequence[float] = (0.75, 0.25), delta_s: float = DELTA_S) -> dict[str, Any]:
    """Percentile 95% intervals from a paper-level bootstrap of one judge's records.

    Args:
        records: prediction records (need ``paper_id``, ``dimension``, ``reference``,
            ``prediction``, ``status``, optional ``consistency``).
        n_resamples: number of bootstrap resamples (B >= 1).
        seed: seed of numpy's ``default_rng``; the same seed gives the same intervals.
        majority: ``{dimension: majority training score}`` for the skill intervals (optional).
        alpha, beta, delta_s: HAS weights (SurveyReview Eq. 6-8).

    Returns:
        ``{"method", "resamples", "seed", "n_papers", "avg_mse": [lo, hi] | None, "avg_mae", "align",
        "rqs", "has", "skill_vs_majority", "per_dimension": {dim: {"mse", "mae", "macro_mae", "qwk",
        "krippendorff_alpha", "skill_vs_majority", "rq"}}, "status", "insufficient"}``. An interval is ``None``
        when the statistic is undefined in more than half of the resamples or every resample gives the same
        value. With fewer than :data:`MIN_BOOTSTRAP_PAPERS` papers every interval is ``None``, ``status`` is
        :data:`INSUFFICIENT_DATA` and ``insufficient`` says why (``status`` is "ok" otherwise).

    Raises:
        ValueError: when ``n_resamples`` < 1.
    """
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be >= 1, got {n_resamples}")
    t = build_tables(records)
    too_few = _too_few(len(t.papers))
    W = resample_weights(len(t.papers), n_resamples, seed)
    s = resample_stats(t, W, majority=majority, alpha_w=alpha, beta_w=beta, delta_s=delta_s)
    out: dict[str, Any] = {
        "method": "paper-level cluster bootstrap, percentile 95% interval",
        "resamples": int(n_resamples), "seed": int(seed), "n_papers": len(t.papers),
        "note": _few_papers_note(len(t.papers)),
        "status": INSUFFICIENT_DATA if too_few else "ok", "insufficient": too_few,
    }

    def interval(samples):
        return None if too_few else _interval(samples)

    for key in ("avg_mse", "avg_mae", "align", "rqs", "has", "skill_vs_majority"):
        out[key] = interval(s.get(key))
    out["per_dimension"] = {
        d: {k: interval(s["per_dimension"][d].get(k)) for k in
            ("mse", "mae", "macro_mae", "qwk", "krippendorff_alpha", "skill_vs_majority", "rq")}
        for d in t.dims
    }
    return out


def _too_few(n_papers: int) -> str | None:
    """Why ``n_papers`` cannot support an interval, or None."""
    if n_papers >= MIN_BOOTSTRAP_PAPERS:
        return None
    return f"{INSUFFICIENT_DATA}: {n_papers} papers, fewer than the minimum of {MIN_BOOTSTRAP_PAPERS}"


#: Below this many papers a percentile bootstrap interval is too coarse to trust (our choice).
_MIN_PAPERS = 20


def _few_papers_note(n_papers: int) -> str | None:
    if n_papers >= _MIN_PAPERS or n_papers < MIN_BOOTSTRAP_PAPERS:
        return None
    return f"only {n_papers} papers: bootstrap intervals and p-values are rough (fewer than {_MIN_PAPERS})"


def _finite(x: Any) -> float | None:
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else None


def paired_bootstrap(
    records_a: Sequence[dict],
    records_b: Sequence[dict],
    *,
    n_resamples: int = 1000,
    seed: int = 0,
    alpha: Sequence[float] = (0.4, 0.6),
    beta: Sequence[float] = (0.75, 0.25),
    delta_s: float = DELTA_S,
) -> dict[str, Any]:
    """Paired paper-level bootstrap test between two judges on the units both of them scored.

    Both judges are compared on the same units (shared ``unit_id`` with ``status == "scored"`` in
    both runs) and every resample draws the same papers for both, so paper difficulty cancels out.

    Args:
        records_a: prediction records of judge A.
        records_b: prediction records of judge B.
        n_resamples: bootstrap resamples B.
        seed: numpy seed.
        alpha, beta, delta_s: HAS weights.

    Returns:
        ``{"n_shared", "n_both_scored", "n_only_a", "n_only_b", "n_papers", "resamples", "seed",
        "metrics": {name: {"a", "b", "diff", "ci95", "p_value", "lower_is_better", "better"}}}`` for
        ``avg_mse``, ``avg_mae``, ``align`` and, when both runs have consistency scores, ``rqs`` and
        ``has``. ``diff = a - b``; ``ci95`` is the percentile interval of the resampled differences;
        ``p_value`` is two-sided, from the differences centred on the observed one:
        ``(1 + #{|d* - d| >= |d|}) / (B + 1)``. ``better`` is "a"/"b" when the interval excludes 0,
        else None. With fewer than :data:`MIN_BOOTSTRAP_PAPERS` papers, or for a metric whose resampled
        difference is the same in every resample, ``ci95``, ``p_value`` and ``better`` are None and the entry's
        ``insufficient`` says why; the top-level ``status`` is :data:`INSUFFICIENT_DATA` when no metric could
        be tested ("ok" otherwise).

    Raises:
        ValueError: if a record is invalid (see ``validate_records``), the two runs share no scored unit,
            or a shared unit has different references.
    """
    # imported here: summary imports this module

    a_by = {r["unit_id"]: r for r in validate_records(records_a)}
    b_by = {r["unit_id"]: r for r in validate_records(records_b)}
    shared = sorted(set(a_by) & set(b_by))
    for u in shared:
        if a_by[u]["reference"] != b_by[u]["reference"]:
            raise ValueError(f"unit {u}: reference {a_by[u]['reference']} in run A but "
                             f"{b_by[u]['reference']} in run B; the runs are not on the same data")
    both = [u for u in shared if a_by[u].get("status") == "scored" and b_by[u].get("status") == "scored"
            and a_by[u].get("prediction") is not None and b_by[u].get("prediction") is not None]
    if not both:
        raise ValueError("the two runs share no unit scored by both judges")
    ra, rb = [a_by[u] for u in both], [b_by[u] for u in both]
    papers = sorted({str(r["paper_id"]) for r in ra})
    values = sorted({float(r["reference"]) for r in ra} | {float(r["prediction"]) for r in ra + rb}
                    | {float(s) for s in VALID_SCORES})
    ta, tb = build_tables(ra, papers, values), build_tables(rb, papers, values)
    kw = {"majority": None, "alpha_w": alpha, "beta_w": beta, "delta_s": delta_s}
    ones = np.ones((1, len(papers)))
    pa, pb = resample_stats(ta, ones, **kw), resample_stats(tb, ones, **kw)
    too_few = _too_few(len(papers))
    W = resample_weights(len(papers), n_resamples, seed)
    sa, sb = resample_stats(ta, W, **kw), resample_stats(tb, W, **kw)
    metrics: dict[str, Any] = {}
    for key in ("avg_mse", "avg_mae", "align", "rqs", "has"):
        if pa.get(key) is None or pb.get(key) is None:
            continue
        a, b = _finite(pa[key][0]), _finite(pb[key][0])
        if a is None or b is None:
            continue
        diff = a - b
        d_star = sa[key] - sb[key]
        d_star = d_star[np.isfinite(d_star)]
        lower = _LOWER_IS_BETTER[key]
        why = too_few or (None if d_star.size and np.ptp(d_star) > 0 else
                          f"{INSUFFICIENT_DATA}: the difference is the same in every resample")
        if why:
            metrics[key] = {"a": a, "b": b, "diff": diff, "ci95": None, "p_value": None, "lower_is_better": lower,
                            "better": None, "insufficient": why}
            continue
        ci = _interval(d_star)
        p = float((1 + np.sum(np.abs(d_star - diff) >= abs(diff))) / (d_star.size + 1))
        better = None
        if ci is not None and (ci[0] > 0 or ci[1] < 0):
            a_wins = (diff < 0) if lower else (diff > 0)
            better = "a" if a_wins else "b"
        metrics[key] = {"a": a, "b": b, "diff": diff, "ci95": ci, "p_value": p, "lower_is_better": lower,
                        "better": better, "insufficient": None}
    tested = any(m["insufficient"] is None for m in metrics.values())
    return {
        "n_shared": len(shared), "n_both_scored": len(both), "n_only_a": len(set(a_by) - set(b_by)),
        "n_only_b": len(set(b_by) - set(a_by)), "n_papers": len(papers), "resamples": int(n_resamples),
        "seed": int(seed), "method": "paired paper-level bootstrap on units scored by both judges",
        "note": _few_papers_note(len(papers)), "metrics": metrics,
        "status": "ok" if tested else INSUFFICIENT_DATA, "insufficient": too_few,
    }

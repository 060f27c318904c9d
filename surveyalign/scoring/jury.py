"""Juries of judges and the stability of a ranking across RQS judges (SurveyReview App. I.4, Tables 9-10).

* :func:`combine_votes`: several judges' votes on one unit as one vote, by weighted mean, median or majority,
  on the score scale {-2, -1, 1, 2} (scoring juries) or on a rating scale (RQS juries).
* :func:`kendall_tau`: Kendall's tau-b between two rankings of the same systems.
* :func:`multi_judge_rankings`: App. I.4 as one function: RQS and HAS of every system recomputed under each RQS
  judge, the agreement between the RQS judges (Krippendorff's alpha on the units all of them rated), and the
  stability of the system ranking by HAS across judges (Kendall tau of each pair of judges with a paper-level
  bootstrap 95% interval).

Conventions (our choice; the paper gives no jury rule):

* A missing vote (``None``: failed call, unparseable answer) is left out and the weights of the others are
  renormalised; a unit with no vote gets ``None`` (the jury failed on it).
* ``median`` is the lower weighted median: the smallest vote whose cumulative weight reaches half the total.
* ``majority`` is the vote with the largest total weight; a tie goes to the tied vote nearest the weighted mean,
  then to the lower one.
* ``mean`` on the score scale is snapped to the nearest score of {-2, -1, 1, 2} (scores must stay in the label
  space); a mean exactly between two scores (0, +-1.5) goes to the one nearer the weighted median, then the
  lower one. On a rating scale the mean is returned as is.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from itertools import combinations
from typing import Any, Literal

import numpy as np

from surveyalign.constants import DELTA_S, DIMENSIONS, VALID_SCORES
from surveyalign.data import row_dimension
from surveyalign.scoring.bootstrap import (
    INSUFFICIENT_DATA,
    _interval,
    _too_few,
    resample_weights,
)

__all__ = ["JURY_METHODS", "combine_votes", "kendall_tau", "multi_judge_rankings"]

#: The ways a jury combines its votes.
JURY_METHODS: tuple[str, ...] = ("mean", "median", "majority")


def _lower_median(values: list[float], weights: list[float]) -> float:
    order = sorted(range(len(values)), key=lambda i: values[i])
    total, acc = sum(weights), 0.0
    for i in order:
        acc += weights[i]
        if acc >= total / 2 - 1e-12:
            return values[i]
    return values[order[-1]]  # pragma: no cover - weights are positive


def combine_votes(votes: Sequence[float | None], weights: Sequence[float] | None = None,
                  method: Literal["mean", "median", "majority"] = "majority", *,
                  scale: Literal["scores", "ratings"] = "scores") -> tuple[float | None, str | None]:
    """One vote from several judges' votes on one unit (rules in the module docstring).

    Args:
        votes: one vote per judge, ``None`` for a judge that gave none. Scores in {-2, -1, 1, 2} with
            ``scale="scores"``; any finite numbers (RQS ratings in [0, 1]) with ``scale="ratings"``.
        weights: one positive weight per judge (default: all 1).
        method: "mean", "median" or "majority".
        scale: "scores" (the result is a score of {-2, -1, 1, 2}) or "ratings" (the mean is not snapped).

    Returns:
        ``(vote, None)``, or ``(None, reason)`` when no judge voted.

    Raises:
        ValueError: unknown method or scale, unequal lengths, a weight that is not a positive finite number, or a
            vote that is not finite (or outside {-2, -1, 1, 2} on the score scale).
    """
    if method not in JURY_METHODS:
        raise ValueError(f"unknown jury method {method!r}; expected one of {', '.join(JURY_METHODS)}")
    if scale not in ("scores", "ratings"):
        raise ValueError(f"unknown scale {scale!r}; expected 'scores' or 'ratings'")
    weights = [1.0] * len(votes) if weights is None else list(weights)
    if len(weights) != len(votes):
        raise ValueError(f"{len(votes)} votes but {len(weights)} weights")
    for i, w in enumerate(weights):
        if isinstance(w, bool) or not isinstance(w, (int, float)) or not math.isfinite(w) or w <= 0:
            raise ValueError(f"weights[{i}] = {w!r} is not a positive number")
    vals, ws = [], []
    for i, (v, w) in enumerate(zip(votes, weights)):
        if v is None:
            continue
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise ValueError(f"votes[{i}] = {v!r} is not a finite number")
        if scale == "scores" and v not in VALID_SCORES:
            raise ValueError(f"votes[{i}] = {v!r} is outside the label space {{-2, -1, 1, 2}}")
        vals.append(float(v))
        ws.append(float(w))
    if not vals:
        return None, "no judge of the jury gave a vote"
    mean = sum(v * w for v, w in zip(vals, ws)) / sum(ws)
    median = _lower_median(vals, ws)
    if method == "median":
        return median, None
    if method == "majority":
        totals: dict[float, float] = {}
        for v, w in zip(vals, ws):
            totals[v] = totals.get(v, 0.0) + w
        top = max(totals.values())
        tied = [v for v, t in totals.items() if abs(t - top) < 1e-12]
        return min(tied, key=lambda v: (abs(v - mean), v)), None
    if scale == "ratings":
        return mean, None
    return min((float(s) for s in VALID_SCORES), key=lambda s: (round(abs(s - mean), 12), abs(s - median), s)), None


def kendall_tau(x: Sequence[float], y: Sequence[float]) -> tuple[float | None, str | None]:
    """Kendall's tau-b between two scorings of the same systems (ties handled as in ``scipy.stats.kendalltau``).

    Returns:
        ``(tau, None)`` with tau in [-1, 1], or ``(None, reason)`` for fewer than 2 systems or a constant
        scoring.

    Raises:
        ValueError: unequal lengths.
    """
    if len(x) != len(y):
        raise ValueError(f"rankings differ in length: {len(x)} and {len(y)}")
    if len(x) < 2:
        return None, f"needs at least 2 systems (got {len(x)})"
    from scipy.stats import kendalltau

    tau = kendalltau(np.asarray(x, dtype=float), np.asarray(y, dtype=float)).statistic
    if not math.isfinite(float(tau)):
        return None, "a scoring gives every system the same value: tau undefined"
    return float(tau), None


def multi_judge_rankings(
    records: Mapping[str, Sequence[Mapping[str, Any]]],
    ratings: Mapping[str, Mapping[str, Mapping[str, float | None]]],
    *,
    n_resamples: int = 1000,
    seed: int = 0,
    alpha: Sequence[float] = (0.4, 0.6),
    beta: Sequence[float] = (0.75, 0.25),
    delta_s: float = DELTA_S,
) -> dict[str, Any]:
    """RQS and HAS of every system under each RQS judge, inter-judge alpha and ranking stability (App. I.4).

    Args:
        records: ``{system: prediction records}`` (``unit_id``, ``paper_id``, ``dimension``, ``reference``,
            ``prediction``, ``status``); MSE/MAE come from them and do not depend on the RQS judge.
        ratings: ``{rqs judge: {system: {unit_id: consistency in [0, 1] or None}}}``.
        n_resamples: paper-level bootstrap resamples for the Kendall tau intervals.
        seed: numpy seed.
        alpha, beta, delta_s: HAS weights (SurveyReview Eq. 6-8).

    Returns:
        ``{"systems", "judges", "rqs": {system: {judge: value}}, "has": {system: {judge: value}},
        "align": {system: value}, "avg_mse", "avg_mae" ({system: value}), "ranking": {judge: [systems by HAS,
        best first]}, "top": {judge: system}, "same_top": bool, "inter_judge_alpha", "alpha_units",
        "alpha_note", "kendall": [{"a", "b", "tau", "ci95", "note"}], "mean_tau", "n_papers", "resamples",
        "seed", "status"}``. RQS in [0, 1], HAS <= 1; a value that cannot be computed is None.

    Raises:
        ValueError: with no system or no judge, or a rating outside [0, 1].
    """
    systems = list(records)
    judges = list(ratings)
    if not systems or not judges:
        raise ValueError("needs at least one system and one RQS judge")
    papers = sorted({str(r["paper_id"]) for recs in records.values() for r in recs})
    pidx = {p: i for i, p in enumerate(papers)}
    P = len(papers)
    present = {row_dimension(str(r["dimension"])) for recs in records.values() for r in recs}
    dims = [d for d in DIMENSIONS if d in present]
    # err[s][d]: (P, 3) n scored, sum sq, sum abs; cons[j][s][d]: (P, 2) sum, count
    err = {s: {d: np.zeros((P, 3)) for d in dims} for s in systems}
    cons = {j: {s: {d: np.zeros((P, 2)) for d in dims} for s in systems} for j in judges}
    for s in systems:
        for r in records[s]:
            d, p = row_dimension(str(r["dimension"])), pidx[str(r["paper_id"])]
            if r.get("status") == "scored" and r.get("prediction") is not None:
                diff = float(r["prediction"]) - float(r["reference"])
                err[s][d][p] += (1.0, diff * diff, abs(diff))
                for j in judges:
                    c = (ratings[j].get(s) or {}).get(str(r["unit_id"]))
                    if c is None:
                        continue
                    if not 0.0 <= float(c) <= 1.0:
                        raise ValueError(f"judge {j}, system {s}, unit {r['unit_id']}: rating {c} is outside [0, 1]")
                    cons[j][s][d][p] += (float(c), 1.0)

    def figures(W: np.ndarray) -> dict[str, Any]:
        out: dict[str, Any] = {"mse": {}, "mae": {}, "has": {j: {} for j in judges}, "rqs": {j: {} for j in judges}}
        with np.errstate(divide="ignore", invalid="ignore"):
            for s in systems:
                used = [d for d in dims if err[s][d][:, 0].sum() > 0]
                sums = {d: W @ err[s][d] for d in used}
                mse = np.mean([sums[d][:, 1] / sums[d][:, 0] for d in used], axis=0) if used else None
                mae = np.mean([sums[d][:, 2] / sums[d][:, 0] for d in used], axis=0) if used else None
                out["mse"][s], out["mae"][s] = mse, mae
                align = None if mse is None else alpha[0] * (1 - mse / delta_s**2) + alpha[1] * (1 - mae / delta_s)
                for j in judges:
                    rused = [d for d in dims if cons[j][s][d][:, 1].sum() > 0]
                    rq = [(W @ cons[j][s][d]) for d in rused]
                    rqs = np.mean([x[:, 0] / x[:, 1] for x in rq], axis=0) if rq else None
                    out["rqs"][j][s] = rqs
                    out["has"][j][s] = None if align is None or rqs is None else beta[0] * align + beta[1] * rqs
        return out

    def scalar(x: Any) -> float | None:
        if x is None:
            return None
        v = float(np.asarray(x).reshape(-1)[0])
        return v if math.isfinite(v) else None

    point = figures(np.ones((1, P)))
    has = {s: {j: scalar(point["has"][j][s]) for j in judges} for s in systems}
    rqs = {s: {j: scalar(point["rqs"][j][s]) for j in judges} for s in systems}
    ranking: dict[str, list[str]] = {}
    for j in judges:
        scored = [s for s in systems if has[s][j] is not None]
        ranking[j] = sorted(scored, key=lambda s: -has[s][j])
    top = {j: (r[0] if r else None) for j, r in ranking.items()}
    # inter-judge agreement on the units every judge rated
    keys = sorted({(s, u) for j in judges for s, m in ratings[j].items() for u, v in m.items() if v is not None})
    matrix = np.asarray([[np.nan if (ratings[j].get(s) or {}).get(u) is None else float(ratings[j][s][u])
                          for s, u in keys] for j in judges], dtype=float) if keys else np.zeros((len(judges), 0))
    both = np.sum(np.isfinite(matrix), axis=0) >= 2 if keys else np.zeros(0, dtype=bool)
    ij_alpha, alpha_note = None, None
    if len(judges) < 2:
        alpha_note = "one RQS judge: no inter-judge agreement"
    elif both.sum() < 1 or np.ptp(matrix[np.isfinite(matrix)]) == 0:
        alpha_note = "undefined: no unit rated by two judges, or every rating identical"
    else:
        import krippendorff

        ij_alpha = float(krippendorff.alpha(reliability_data=matrix, level_of_measurement="interval"))
    too_few = _too_few(P)
    boot = None if too_few or n_resamples < 1 else figures(resample_weights(P, n_resamples, seed))
    kendall = []
    for a, b in combinations(judges, 2):
        common = [s for s in systems if has[s][a] is not None and has[s][b] is not None]
        tau, note = kendall_tau([has[s][a] for s in common], [has[s][b] for s in common])
        ci = None
        if tau is not None and boot is not None and len(common) >= 2:
            taus = []
            for k in range(n_resamples):
                t, _ = kendall_tau([float(boot["has"][a][s][k]) for s in common],
                                   [float(boot["has"][b][s][k]) for s in common])
                taus.append(np.nan if t is None else t)
            ci = _interval(np.asarray(taus))
            if ci is None:
                note = f"{INSUFFICIENT_DATA}: tau is undefined or the same in (nearly) every resample"
        elif tau is not None:
            note = too_few or "no bootstrap (0 resamples)"
        kendall.append({"a": a, "b": b, "n_systems": len(common), "tau": tau, "ci95": ci, "note": note})
    taus = [k["tau"] for k in kendall if k["tau"] is not None]
    return {
        "systems": systems, "judges": judges, "rqs": rqs, "has": has,
        "avg_mse": {s: scalar(point["mse"][s]) for s in systems}, "avg_mae": {s: scalar(point["mae"][s]) for s in systems},
        "align": {s: None if scalar(point["mse"][s]) is None else
                  alpha[0] * (1 - scalar(point["mse"][s]) / delta_s**2) + alpha[1] * (1 - scalar(point["mae"][s]) / delta_s)
                  for s in systems},
        "ranking": ranking, "top": top, "same_top": len(set(top.values()) - {None}) == 1,
        "inter_judge_alpha": ij_alpha, "alpha_units": int(both.sum()), "alpha_note": alpha_note,
        "kendall": kendall, "mean_tau": float(np.mean(taus)) if taus else None, "n_papers": P,
        "resamples": int(n_resamples), "seed": int(seed), "status": INSUFFICIENT_DATA if too_few else "ok",
        "insufficient": too_few, "method": "paper-level cluster bootstrap, percentile 95% interval",
    }

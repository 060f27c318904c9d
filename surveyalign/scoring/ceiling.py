"""The human ceiling: how well one human reviewer agrees with another on the same paper and dimension.

SurveyReview reports the agreement of two annotators labelling the *same review* (Table 5, alpha 0.74). A
judge, though, is scored against *one* reviewer's opinion of the paper, and reviewers of one paper disagree:
where a paper has two or more reviews scoring the same dimension (the raw annotation sets of the release,
the per-dimension files with several records per uid), each review can be "predicted" by every other review
of that paper and dimension. That agreement is the ceiling a judge can be held to (beyond the paper).

Conventions (our choice):

* A *unit* is one review's score of one (paper, dimension); the ceiling's prediction for it is each of the
  other reviews of the same (paper, dimension). Every unit weighs one: its ``k`` other reviews weigh ``1/k``
  each, so the ceiling's MSE is the mean over units of the mean squared difference to the other reviews, the
  same average a judge's MSE takes over units.
* QWK is computed on those weighted ordered pairs (labels fixed to {-2, -1, 1, 2}); Krippendorff's alpha
  (interval) treats each (paper, dimension) as one unit coded by its reviews, the textbook multi-coder alpha
  (its coincidence matrix is exactly the weighted pair table).
* Scores outside {-2, -1, 1, 2} (0 = not mentioned, -3 = unjudgeable) are not reviews of the dimension: they
  are counted (``n_excluded``) and left out, like in training and evaluation.
* Intervals: paper-level bootstrap (all units of a drawn paper), percentile 95%; with fewer than
  :data:`~surveyalign.scoring.bootstrap.MIN_BOOTSTRAP_PAPERS` papers "insufficient data".
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from surveyalign.constants import DELTA_S, DIMENSIONS, VALID_SCORES
from surveyalign.data import row_dimension
from surveyalign.scoring.bootstrap import (
    INSUFFICIENT_DATA,
    _confusion_stats,
    _interval,
    _too_few,
    resample_weights,
)

__all__ = ["CEILING_NAME", "ceiling_reviews", "compare_to_ceiling", "human_ceiling"]

#: How the ceiling is named in every table.
CEILING_NAME = "another reviewer"

_VALUES = np.asarray([float(s) for s in VALID_SCORES])
_INDEX = {float(s): i for i, s in enumerate(VALID_SCORES)}


def ceiling_reviews(rows: Sequence[Mapping[str, Any]], *, score_key: str = "score") -> list[dict[str, Any]]:
    """Normalise review records for the ceiling: one dict per (paper, review, dimension) score.

    Args:
        rows: dataset rows (``paper_id``, ``review_id``, ``dimension``, ``score``), prediction records
            (``score_key="reference"``) or any mapping with those fields; ``unit_id`` and ``source`` are kept
            when present.
        score_key: the field holding the human score.

    Returns:
        ``[{"paper_id", "review_id", "dimension", "score" (int | None), "unit_id", "source"}]`` in input order;
        ``score`` is None for a value outside {-2, -1, 1, 2} (counted later as excluded).

    Raises:
        ValueError: naming the row index and field: a missing ``paper_id`` / ``review_id`` / ``dimension`` /
            score, an unknown dimension, a score that is not a number, or a (paper, review, dimension) twice.
    """
    out: list[dict[str, Any]] = []
    seen: dict[tuple[str, str, str], int] = {}
    for i, row in enumerate(rows):
        for field in ("paper_id", "review_id", "dimension", score_key):
            if row.get(field) is None:
                raise ValueError(f"review record {i}: missing field {field}")
        try:
            dim = row_dimension(row["dimension"])  # review rows: the row edge
        except ValueError as err:
            raise ValueError(f"review record {i}: field dimension: {err}") from None
        raw = row[score_key]
        if isinstance(raw, bool) or not isinstance(raw, (int, float)) or not math.isfinite(float(raw)):
            raise ValueError(f"review record {i}: field {score_key} = {raw!r} is not a number")
        key = (str(row["paper_id"]), str(row["review_id"]), dim)
        if key in seen:
            raise ValueError(f"review record {i}: paper {key[0]}, review {key[1]}, dimension {dim} repeats "
                             f"record {seen[key]}")
        seen[key] = i
        score = int(raw) if float(raw) in _INDEX else None
        out.append({"paper_id": key[0], "review_id": key[1], "dimension": dim, "score": score,
                    "unit_id": str(row.get("unit_id") or f"{key[1]}:{dim}"),
                    "source": str(row.get("source") or "unknown").lower()})
    return out


def _groups(reviews: Sequence[Mapping[str, Any]]) -> dict[tuple[str, str], list[dict[str, Any]]]:
    """``{(paper_id, dimension): [reviews with a benchmark score]}``."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in reviews:
        if r["score"] is not None:
            groups[(r["paper_id"], r["dimension"])].append(r)
    return groups


def _alpha_from(conf: np.ndarray) -> np.ndarray:
    """Multi-coder Krippendorff alpha (interval) from a batch of coincidence tables ``conf`` (B, L, L)."""
    n = conf.sum(axis=(1, 2))
    d2 = (_VALUES[:, None] - _VALUES[None, :]) ** 2
    with np.errstate(divide="ignore", invalid="ignore"):
        d_o = (conf * d2).sum(axis=(1, 2)) / n
        margin = conf.sum(axis=2)  # n_c: how often each value is paired, (B, L)
        d_e = (margin[:, :, None] * margin[:, None, :] * d2).sum(axis=(1, 2)) / (n * (n - 1))
        alpha = 1.0 - d_o / d_e
    return np.where((n >= 2) & (d_e > 0), alpha, np.nan)


def _finite(x: Any) -> float | None:
    x = float(x)
    return x if math.isfinite(x) else None


def human_ceiling(reviews: Sequence[Mapping[str, Any]], *, n_resamples: int = 1000, seed: int = 0,
                  delta_s: float = DELTA_S) -> dict[str, Any]:
    """MSE, MAE, QWK and Krippendorff's alpha of each review against every other review of the same paper and
    dimension, with paper-level bootstrap 95% intervals (the human ceiling; beyond the paper).

    Args:
        reviews: output of :func:`ceiling_reviews` (one score per paper, review and dimension).
        n_resamples: bootstrap resamples B (0: no intervals).
        seed: numpy seed of the bootstrap.
        delta_s: largest score difference, for the Align figure (SurveyReview Eq. 6-7).

    Returns:
        ``{"name": "another reviewer", "n" (units with another review), "n_scored" (same), "n_pairs" (ordered
        pairs), "n_groups" ((paper, dimension) with >= 2 reviews), "n_papers", "n_single" (units with no other
        review: not in the ceiling), "n_excluded" (scores outside {-2,-1,1,2}), "per_dimension": {dim: {"n",
        "n_pairs", "n_groups", "mse", "mae", "qwk", "krippendorff_alpha", "ci": {stat: [lo, hi] | None},
        "notes"}}, "avg_mse", "avg_mae", "a_mse", "a_mae", "align", "ci": {"avg_mse", "avg_mae", "align"},
        "status" ("ok" | "insufficient data" | "no data"), "insufficient" (why, or None), "resamples", "seed"}``.
        MSE in [0, 16], MAE in [0, 4], QWK in [-1, 1], alpha <= 1; a statistic that is undefined is None with the
        reason in ``notes``. "no data" when no (paper, dimension) has two reviews.

    Raises:
        ValueError: when ``n_resamples`` < 0.
    """
    if n_resamples < 0:
        raise ValueError(f"n_resamples must be >= 0, got {n_resamples}")
    groups = {k: v for k, v in _groups(reviews).items() if len(v) >= 2}
    n_single = sum(len(v) for k, v in _groups(reviews).items() if len(v) < 2)
    n_excluded = sum(r["score"] is None for r in reviews)
    papers = sorted({p for p, _ in groups})
    pidx = {p: i for i, p in enumerate(papers)}
    dims = [d for d in DIMENSIONS if any(dd == d for _, dd in groups)]
    L, P = len(_VALUES), len(papers)
    conf = {d: np.zeros((P, L, L)) for d in dims}  # axis 1 = other review's score, axis 2 = unit's score
    counts = {d: {"n": 0, "n_pairs": 0, "n_groups": 0} for d in dims}
    for (paper, dim), members in groups.items():
        k = len(members) - 1
        counts[dim]["n"] += len(members)
        counts[dim]["n_pairs"] += len(members) * k
        counts[dim]["n_groups"] += 1
        for unit in members:
            for other in members:
                if other is not unit:
                    conf[dim][pidx[paper], _INDEX[float(other["score"])], _INDEX[float(unit["score"])]] += 1.0 / k
    out: dict[str, Any] = {
        "name": CEILING_NAME, "n": sum(c["n"] for c in counts.values()),
        "n_pairs": sum(c["n_pairs"] for c in counts.values()), "n_groups": len(groups), "n_papers": P,
        "n_single": n_single, "n_excluded": n_excluded, "resamples": int(n_resamples), "seed": int(seed),
        "method": "paper-level cluster bootstrap, percentile 95% interval",
    }
    out["n_scored"] = out["n"]
    if not groups:
        out.update({"per_dimension": {}, "avg_mse": None, "avg_mae": None, "a_mse": None, "a_mae": None,
                    "align": None, "ci": None, "status": "no data",
                    "insufficient": "no paper has two or more reviews of the same dimension"})
        return out
    too_few = _too_few(P) if n_resamples else "no bootstrap (0 resamples)"
    W = resample_weights(P, n_resamples, seed) if n_resamples and not _too_few(P) else None
    ones = np.ones((1, P))
    per_dim: dict[str, Any] = {}
    point_mse, point_mae, boot_mse, boot_mae = [], [], [], []
    for d in dims:
        stats = _confusion_stats(np.tensordot(ones, conf[d], axes=(1, 0)), _VALUES, None)
        alpha = _alpha_from(np.tensordot(ones, conf[d], axes=(1, 0)))
        entry: dict[str, Any] = {**counts[d], "notes": {}}
        for key in ("mse", "mae", "qwk"):
            entry[key] = _finite(stats[key][0])
        entry["krippendorff_alpha"] = _finite(alpha[0])
        for key in ("qwk", "krippendorff_alpha"):
            if entry[key] is None:
                entry["notes"][key] = "undefined: every review gives one and the same score"
        ci: dict[str, Any] = {}
        if W is not None:
            C = np.tensordot(W, conf[d], axes=(1, 0))
            s = _confusion_stats(C, _VALUES, None)
            s["krippendorff_alpha"] = _alpha_from(C)
            ci = {k: _interval(s[k]) for k in ("mse", "mae", "qwk", "krippendorff_alpha")}
            boot_mse.append(s["mse"])
            boot_mae.append(s["mae"])
        entry["ci"] = ci or None
        point_mse.append(entry["mse"])
        point_mae.append(entry["mae"])
        per_dim[d] = entry
    avg_mse, avg_mae = float(np.mean(point_mse)), float(np.mean(point_mae))
    a_mse, a_mae = 1.0 - avg_mse / delta_s**2, 1.0 - avg_mae / delta_s
    out.update({"per_dimension": per_dim, "avg_mse": avg_mse, "avg_mae": avg_mae, "a_mse": a_mse, "a_mae": a_mae,
                "align": 0.4 * a_mse + 0.6 * a_mae})
    if W is not None:
        bm, ba = np.mean(boot_mse, axis=0), np.mean(boot_mae, axis=0)
        out["ci"] = {"avg_mse": _interval(bm), "avg_mae": _interval(ba),
                     "align": _interval(0.4 * (1 - bm / delta_s**2) + 0.6 * (1 - ba / delta_s)),
                     "n_papers": P}
    else:
        out["ci"] = None
    out["status"] = INSUFFICIENT_DATA if too_few and n_resamples else "ok"
    out["insufficient"] = too_few
    return out


def compare_to_ceiling(judge_records: Sequence[Mapping[str, Any]], reviews: Sequence[Mapping[str, Any]], *,
                       n_resamples: int = 1000, seed: int = 0) -> dict[str, Any]:
    """Is a judge below, within or beyond the human ceiling, paired on the same units?

    For every unit the judge scored whose (paper, dimension) has other reviews in ``reviews``, the judge's
    squared (absolute) error against the unit's human score is set beside the mean squared (absolute)
    difference between the other reviews and that score. AVG MSE / MAE are macro means over dimensions, as on
    the leaderboard; a paper-level bootstrap draws the same papers for both.

    Args:
        judge_records: checked prediction records of one run (:func:`~surveyalign.scoring.validate_records`:
            ``unit_id``, ``paper_id``, ``review_id``, ``dimension``,
            ``reference``, ``prediction``, ``status``).
        reviews: output of :func:`ceiling_reviews`; a judge unit is matched by (paper, review, dimension).
        n_resamples: bootstrap resamples B (>= 1).
        seed: numpy seed.

    Returns:
        ``{"n_units" (paired units), "n_papers", "n_unmatched" (scored units without another review),
        "metrics": {"avg_mse" | "avg_mae": {"judge", "ceiling", "diff" (judge - ceiling), "ci95", "p_value",
        "verdict", "insufficient"}}, "verdict", "status"}``. ``verdict`` is "below the ceiling" (the judge errs
        more than another reviewer: the interval of the difference is above 0), "beyond the ceiling" (errs less:
        the interval is below 0), "within the ceiling" (the interval holds 0), or "insufficient data" (fewer than
        ten papers, or no spread); the top-level verdict is the MSE one. ``p_value`` is two-sided
        ``(1 + #{|d* - d| >= |d|}) / (B + 1)``.

    Raises:
        ValueError: when no scored unit of the judge has another review to compare with, or ``n_resamples`` < 1.
    """
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be >= 1, got {n_resamples}")
    groups = _groups(reviews)
    by_key = {(r["paper_id"], r["review_id"], r["dimension"]): r for r in reviews}
    rows: list[tuple[str, str, float, float, float, float]] = []
    unmatched = 0
    for rec in judge_records:
        if rec.get("status") != "scored" or rec.get("prediction") is None:
            continue
        dim = rec["dimension"]  # checked records (validate_records)
        key = (str(rec["paper_id"]), str(rec.get("review_id")), dim)
        others = [o for o in groups.get((key[0], dim), []) if o["review_id"] != key[1]]
        if key not in by_key or not others:
            unmatched += 1
            continue
        ref, pred = float(rec["reference"]), float(rec["prediction"])
        diffs = np.asarray([float(o["score"]) - ref for o in others])
        rows.append((key[0], dim, (pred - ref) ** 2, abs(pred - ref), float(np.mean(diffs**2)),
                     float(np.mean(np.abs(diffs)))))
    if not rows:
        raise ValueError("no unit scored by the judge has another review of the same paper and dimension "
                         "(the ceiling needs two or more reviews per paper and dimension)")
    papers = sorted({r[0] for r in rows})
    dims = [d for d in DIMENSIONS if any(r[1] == d for r in rows)]
    pidx = {p: i for i, p in enumerate(papers)}
    # per dimension, per paper: [n, judge sq, judge abs, ceiling sq, ceiling abs]
    sums = {d: np.zeros((len(papers), 5)) for d in dims}
    for paper, dim, jsq, jab, csq, cab in rows:
        sums[dim][pidx[paper]] += (1.0, jsq, jab, csq, cab)

    def stats(W: np.ndarray) -> dict[str, np.ndarray]:
        per = {d: W @ sums[d] for d in dims}  # (B, 5)
        with np.errstate(divide="ignore", invalid="ignore"):
            out = {}
            for name, col in (("judge_mse", 1), ("judge_mae", 2), ("ceiling_mse", 3), ("ceiling_mae", 4)):
                out[name] = np.mean([per[d][:, col] / per[d][:, 0] for d in dims], axis=0)
        return out

    point = stats(np.ones((1, len(papers))))
    too_few = _too_few(len(papers))
    boot = stats(resample_weights(len(papers), n_resamples, seed))
    metrics: dict[str, Any] = {}
    for key, short in (("avg_mse", "mse"), ("avg_mae", "mae")):
        j, c = float(point[f"judge_{short}"][0]), float(point[f"ceiling_{short}"][0])
        diff = j - c
        d_star = boot[f"judge_{short}"] - boot[f"ceiling_{short}"]
        d_star = d_star[np.isfinite(d_star)]
        why = too_few or (None if d_star.size and np.ptp(d_star) > 0 else
                          f"{INSUFFICIENT_DATA}: the difference is the same in every resample")
        entry = {"judge": j, "ceiling": c, "diff": diff, "ci95": None, "p_value": None,
                 "verdict": INSUFFICIENT_DATA, "insufficient": why}
        if not why:
            ci = _interval(d_star)
            entry["ci95"] = ci
            entry["p_value"] = float((1 + np.sum(np.abs(d_star - diff) >= abs(diff))) / (d_star.size + 1))
            if ci is None:
                entry["verdict"] = INSUFFICIENT_DATA
            elif ci[0] > 0:
                entry["verdict"] = "below the ceiling"
            elif ci[1] < 0:
                entry["verdict"] = "beyond the ceiling"
            else:
                entry["verdict"] = "within the ceiling"
        metrics[key] = entry
    return {"n_units": len(rows), "n_papers": len(papers), "n_unmatched": unmatched, "resamples": int(n_resamples),
            "seed": int(seed), "method": "paired paper-level bootstrap on the judge's scored units that have "
                                         "another review", "metrics": metrics,
            "verdict": metrics["avg_mse"]["verdict"], "status": INSUFFICIENT_DATA if too_few else "ok",
            "insufficient": too_few}

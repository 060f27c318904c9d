"""Meta-evaluation of the RQS judge against human raters (SurveyReview App. I.2).

The paper validates its rationale-consistency judge (GPT-5.2) on 50 (predicted, reference) rationale pairs
rated by three people: human-human Pearson r = 0.705, judge vs the mean human rating Pearson 0.804 and
Spearman 0.795. :func:`meta_evaluate` computes the same figures for any judge and any ratings, with
intervals the paper does not give.

Conventions (our choice):

* Ratings are numbers on the judge's scale (RQS: 0.0 ... 1.0); a rater may skip pairs. Human-human agreement
  is the mean over rater pairs of Pearson's r on the pairs both rated, and Krippendorff's alpha (interval) over
  all raters (missing ratings allowed).
* The judge is compared with the mean human rating of each pair that has a judge rating and at least one human
  rating. Intervals: percentile bootstrap over pairs (pairs are the sampled items here), 95%; with fewer than
  :data:`MIN_META_PAIRS` pairs, or when a resample cannot vary, "insufficient data".
* An undefined correlation (a constant column, fewer than 3 pairs) is ``None`` with its reason, never NaN.
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Mapping, Sequence
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np

from surveyalign.csvcells import unescape_cell, unescape_rows
from surveyalign.scoring.bootstrap import INSUFFICIENT_DATA

__all__ = ["MIN_META_PAIRS", "PAPER_META_EVAL", "meta_evaluate", "pearson", "read_ratings", "spearman"]

#: Fewest rated pairs from which intervals are reported (the same floor as the paper-level bootstrap).
MIN_META_PAIRS = 10

#: The figures of SurveyReview App. I.2, printed beside ours.
PAPER_META_EVAL = {"pairs": 50, "raters": 3, "human_human_pearson": 0.705, "judge_pearson": 0.804,
                   "judge_spearman": 0.795}


def pearson(x: Sequence[float], y: Sequence[float]) -> tuple[float | None, str | None]:
    """Pearson's r of two equal-length columns.

    Returns:
        ``(r, None)`` with r in [-1, 1], or ``(None, reason)`` for fewer than 3 pairs or a constant column.

    Raises:
        ValueError: unequal lengths.
    """
    if len(x) != len(y):
        raise ValueError(f"columns differ in length: {len(x)} and {len(y)}")
    if len(x) < 3:
        return None, f"needs at least 3 pairs (got {len(x)})"
    a, b = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    da, db = a - a.mean(), b - b.mean()
    den = math.sqrt(float((da**2).sum() * (db**2).sum()))
    if den == 0:
        return None, "a column is constant: r undefined"
    return float((da * db).sum() / den), None


def _ranks(x: np.ndarray) -> np.ndarray:
    from scipy.stats import rankdata

    return rankdata(x)


def spearman(x: Sequence[float], y: Sequence[float]) -> tuple[float | None, str | None]:
    """Spearman's rho: Pearson's r of the average ranks (ties share their mean rank).

    Returns:
        ``(rho, None)`` or ``(None, reason)`` as :func:`pearson`.

    Raises:
        ValueError: unequal lengths.
    """
    if len(x) != len(y):
        raise ValueError(f"columns differ in length: {len(x)} and {len(y)}")
    if len(x) < 3:
        return None, f"needs at least 3 pairs (got {len(x)})"
    return pearson(_ranks(np.asarray(x, dtype=float)), _ranks(np.asarray(y, dtype=float)))


def read_ratings(path: str | Path) -> dict[str, dict[str, float]]:
    """Read human (or judge) ratings of rationale pairs: ``{pair_id: {rater: rating}}``.

    Accepted files: CSV in long form (columns ``pair_id``, ``rater``, ``rating``) or wide form (``pair_id`` and
    one column per rater; an empty cell = not rated; other known sheet columns such as ``dimension``,
    ``reference_rationale``, ``predicted_rationale`` are ignored); JSON as a list of ``{"pair_id", "rater",
    "rating"}`` objects, an object ``{pair_id: {rater: rating}}``, or a Label Studio JSON export of the project
    ``surveyalign meta-eval export --label-studio`` writes (the annotator is the rater).

    Raises:
        FileNotFoundError: the file does not exist.
        ValueError: naming the file, the row (1-based, header = row 1) and the field: a missing ``pair_id``, a
            rating that is not a finite number, a (pair, rater) rated twice, or an unknown layout.
    """
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"ratings file not found: {p}")
    out: dict[str, dict[str, float]] = {}

    def put(pair: Any, rater: Any, value: Any, where: str) -> None:
        if pair is None or str(pair).strip() == "":
            raise ValueError(f"{p}: {where}: missing pair_id")
        if isinstance(value, str):
            value = value.strip()
            if value == "":
                return
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise ValueError(f"{p}: {where}: rating {value!r} of rater {rater} is not a number") from None
        if isinstance(value, bool) or not math.isfinite(number):
            raise ValueError(f"{p}: {where}: rating {value!r} of rater {rater} is not a finite number")
        cell = out.setdefault(str(pair).strip(), {})
        if str(rater) in cell:
            raise ValueError(f"{p}: {where}: pair {pair} is rated twice by {rater}")
        cell[str(rater)] = number

    if p.suffix.lower() == ".json":
        data = json.loads(p.read_text(encoding="utf-8"))
        if isinstance(data, list) and data and all(isinstance(t, dict) and "data" in t for t in data):
            _label_studio(data, put)  # a Label Studio export of `surveyalign meta-eval export --label-studio`
        elif isinstance(data, list):
            for i, row in enumerate(data):
                if not isinstance(row, dict) or not {"pair_id", "rater", "rating"} <= set(row):
                    raise ValueError(f"{p}: record {i}: expected an object with pair_id, rater, rating")
                put(row["pair_id"], row["rater"], row["rating"], f"record {i}")
        elif isinstance(data, dict):
            for pair, cells in data.items():
                if not isinstance(cells, dict):
                    raise ValueError(f"{p}: pair {pair}: expected an object {{rater: rating}}")  # noqa: TRY004
                for rater, value in cells.items():
                    put(pair, rater, value, f"pair {pair}")
        else:
            raise ValueError(f"{p}: expected a list of ratings or an object {{pair_id: {{rater: rating}}}}")
        return out
    with p.open(newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        fields = [unescape_cell(f.strip()) for f in (reader.fieldnames or [])]
        if "pair_id" not in fields:
            raise ValueError(f"{p}: row 1: no pair_id column (columns: {', '.join(fields) or 'none'})")
        long = {"rater", "rating"} <= set(fields)
        raters = [f for f in fields if f not in _SHEET_COLUMNS]
        if not long and not raters:
            raise ValueError(f"{p}: row 1: no rating column: expected pair_id,rater,rating or one column per rater")
        for i, row in enumerate(unescape_rows(reader), start=2):
            row = {(k or "").strip(): v for k, v in row.items()}
            if long:
                put(row.get("pair_id"), (row.get("rater") or "").strip(), row.get("rating"), f"row {i}")
            else:
                for rater in raters:
                    put(row.get("pair_id"), rater, row.get(rater) or "", f"row {i}")
    return out


def _label_studio(tasks: list[dict[str, Any]], put: Any) -> None:
    """Ratings from a Label Studio JSON export: per task ``data.pair_id``, per annotation the annotator
    (``completed_by``: email, username or id) and the chosen ``rating`` (cancelled or empty annotations skipped)."""
    for i, task in enumerate(tasks):
        pair = (task.get("data") or {}).get("pair_id")
        for a in task.get("annotations") or []:
            if a.get("was_cancelled"):
                continue
            who = a.get("completed_by")
            if isinstance(who, dict):
                who = who.get("email") or who.get("username") or who.get("id")
            for r in a.get("result") or []:
                choices = (r.get("value") or {}).get("choices") or []
                if r.get("from_name") == "rating" and choices:
                    put(pair, "unknown" if who in (None, "") else str(who), choices[0], f"task {i}")


#: Columns of a rating sheet that are not raters (``surveyalign meta-eval export``).
_SHEET_COLUMNS = {"pair_id", "rater", "rating", "dimension", "paper_id", "title", "reference_rationale",
                  "predicted_rationale", "unit_id", "notes"}


def _krippendorff_interval(matrix: np.ndarray) -> tuple[float | None, str | None]:
    """Alpha (interval) of a (raters, items) matrix with NaN for a missing rating."""
    pairable = (np.sum(np.isfinite(matrix), axis=0) >= 2).sum()
    values = matrix[np.isfinite(matrix)]
    if pairable < 1 or values.size < 2 or np.ptp(values) == 0:
        return None, "undefined: fewer than one pair rated twice, or every rating identical"
    import krippendorff

    return float(krippendorff.alpha(reliability_data=matrix, level_of_measurement="interval")), None


def _ci(stat, n: int, columns: tuple[np.ndarray, ...], n_resamples: int, seed: int) -> tuple[list | None, str | None]:
    if n < MIN_META_PAIRS:
        return None, f"{INSUFFICIENT_DATA}: {n} pairs, fewer than the minimum of {MIN_META_PAIRS}"
    if n_resamples < 1:
        return None, "no bootstrap (0 resamples)"
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, n, size=(n_resamples, n))
    values = []
    for idx in draws:
        v, _ = stat(*(c[idx] for c in columns))
        if v is not None:
            values.append(v)
    values = np.asarray(values)
    if values.size < 0.5 * n_resamples or np.ptp(values) == 0:
        return None, f"{INSUFFICIENT_DATA}: the statistic is undefined or constant in the resamples"
    lo, hi = np.percentile(values, [2.5, 97.5])
    return [float(lo), float(hi)], None


def meta_evaluate(human: Mapping[str, Mapping[str, float]], judge: Mapping[str, float] | None = None, *,
                  n_resamples: int = 1000, seed: int = 0) -> dict[str, Any]:
    """Human-human agreement and judge-vs-human correlation of rationale-consistency ratings (App. I.2).

    Args:
        human: ``{pair_id: {rater: rating}}`` (e.g. :func:`read_ratings`), ratings on the judge's scale.
        judge: ``{pair_id: rating}`` of the judge under test (None: human agreement only). Pairs without a
            judge rating, or without any human rating, are counted and left out of the judge figures.
        n_resamples: bootstrap resamples over pairs for the 95% intervals.
        seed: numpy seed.

    Returns:
        ``{"n_pairs", "raters", "human_human": {"mean_pearson", "rater_pairs": [{"a", "b", "n", "pearson",
        "note"}], "krippendorff_alpha", "alpha_note", "mean_pearson_ci", "ci_note"}, "judge": {"n",
        "n_without_judge", "n_without_human", "pearson", "pearson_ci", "spearman", "spearman_ci", "notes"} | None,
        "paper": PAPER_META_EVAL}``. Correlations in [-1, 1]; alpha <= 1; an interval is ``[lo, hi]`` or None
        with the reason in the notes.

    Raises:
        ValueError: when ``human`` holds no rating.
    """
    pairs = sorted(human)
    raters = sorted({r for cells in human.values() for r in cells})
    if not raters:
        raise ValueError("no human rating given")
    matrix = np.full((len(raters), len(pairs)), np.nan)
    for j, pair in enumerate(pairs):
        for i, rater in enumerate(raters):
            if rater in human[pair]:
                matrix[i, j] = float(human[pair][rater])
    rater_pairs = []
    for a, b in combinations(range(len(raters)), 2):
        both = np.isfinite(matrix[a]) & np.isfinite(matrix[b])
        r, note = pearson(matrix[a][both], matrix[b][both])
        rater_pairs.append({"a": raters[a], "b": raters[b], "n": int(both.sum()), "pearson": r, "note": note})
    defined = [rp["pearson"] for rp in rater_pairs if rp["pearson"] is not None]
    alpha, alpha_note = _krippendorff_interval(matrix)

    def mean_pairwise(*cols: np.ndarray) -> tuple[float | None, str | None]:
        m = np.vstack(cols)
        rs = []
        for a, b in combinations(range(m.shape[0]), 2):
            both = np.isfinite(m[a]) & np.isfinite(m[b])
            r, _ = pearson(m[a][both], m[b][both])
            if r is not None:
                rs.append(r)
        return (float(np.mean(rs)), None) if rs else (None, "undefined")

    hh_ci, hh_note = (None, "one rater: no human-human agreement") if len(raters) < 2 else _ci(
        mean_pairwise, len(pairs), tuple(matrix[i] for i in range(len(raters))), n_resamples, seed)
    out: dict[str, Any] = {
        "n_pairs": len(pairs), "raters": raters,
        "human_human": {"mean_pearson": float(np.mean(defined)) if defined else None, "rater_pairs": rater_pairs,
                        "krippendorff_alpha": alpha, "alpha_note": alpha_note, "mean_pearson_ci": hh_ci,
                        "ci_note": hh_note},
        "judge": None, "paper": dict(PAPER_META_EVAL), "method": "percentile bootstrap over pairs, 95%",
        "resamples": int(n_resamples), "seed": int(seed),
    }
    if judge is None:
        return out
    with_h = [p for p in pairs if any(math.isfinite(v) for v in matrix[:, pairs.index(p)])]
    used = [p for p in with_h if judge.get(p) is not None]
    j = np.asarray([float(judge[p]) for p in used])
    m = np.asarray([float(np.nanmean(matrix[:, pairs.index(p)])) for p in used])
    notes: dict[str, str] = {}
    entry: dict[str, Any] = {"n": len(used), "n_without_judge": len(with_h) - len(used),
                             "n_without_human": len([p for p in judge if p not in set(with_h)])}
    for name, fn in (("pearson", pearson), ("spearman", spearman)):
        value, note = fn(j, m)
        entry[name] = value
        if note:
            notes[name] = note
        ci, ci_note = _ci(fn, len(used), (j, m), n_resamples, seed)
        entry[f"{name}_ci"] = ci
        if ci_note:
            notes[f"{name}_ci"] = ci_note
    entry["notes"] = notes
    out["judge"] = entry
    return out

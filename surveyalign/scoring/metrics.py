"""Score-alignment, reason-quality and HAS metrics as pure functions (SurveyReview §3, §6.1, App. G).

Conventions (our choice where the paper is silent):

* A failed unit is a ``None`` prediction. It is counted (``n_failed``) and never scored as 0; MSE/MAE
  and every agreement statistic are computed over the scored units only. ``convention="authors"``
  reproduces the authors' evaluation script for comparison: an unparseable answer counts as a
  prediction of 0, API errors and missing papers are dropped.
* Dimension averages (AVGMSE, AVGMAE, RQS) are unweighted means over the dimensions present, in the
  order of :data:`surveyalign.constants.DIMENSIONS` (macro over dimensions, as in the paper).
* An undefined statistic is ``None`` with the reason in the dimension's ``notes``; never NaN.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from surveyalign.constants import (
    API_ERROR,
    DELTA_S,
    DIMENSIONS,
    MISSING,
    MISSING_TEXT,
    PROMPT_TOO_LONG,
    VALID_SCORES,
)
from surveyalign.data import row_dimension
from surveyalign.scoring.weights import check_has_weights

__all__ = [
    "agreement_statistics",
    "alignment_errors",
    "check_scores",
    "dimension_column",
    "human_aligned_score",
    "krippendorff_alpha_interval",
    "macro_mae",
    "mean_or_none",
    "quadratic_weighted_kappa",
    "reason_quality",
]

#: Statuses that the authors' script drops from the average (no answer to count; a paper missing from an outside
#: evaluator's output too, SPEC "missing papers").
_AUTHORS_DROPPED = (API_ERROR, PROMPT_TOO_LONG, MISSING_TEXT, MISSING)


# --------------------------------------------------------------------------------------------------
# input checks
# --------------------------------------------------------------------------------------------------
def _as_number(value: Any, what: str, index: int, *, allow_none: bool) -> float | None:
    if value is None:
        if allow_none:
            return None
        raise ValueError(f"{what}[{index}] is None; {what} must all be numbers")
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ValueError(f"{what}[{index}] = {value!r} is not a number")  # noqa: TRY004 - one error type for bad input
    out = float(value)
    if not math.isfinite(out):
        hint = "; use None for a failed unit" if allow_none else ""
        raise ValueError(f"{what}[{index}] = {value!r} is not finite{hint}")
    return out


def _as_score(value: Any, what: str, index: int, *, allow_none: bool) -> float | None:
    """A number of the benchmark label space {-2, -1, 1, 2} (or None where allowed), else a ValueError."""
    out = _as_number(value, what, index, allow_none=allow_none)
    if out is not None and out not in VALID_SCORES:
        raise ValueError(f"{what}[{index}] = {value!r} is outside the label space {{-2, -1, 1, 2}}")
    return out


def check_scores(values: Sequence[Any], what: str, *, allow_none: bool = False) -> list[float | None]:
    """Check that every value is a finite number of the label space {-2, -1, 1, 2} (SurveyReview §4).

    Args:
        values: scores (predictions, references or training labels), length n.
        what: their name in the error message, e.g. "references".
        allow_none: accept None (a failed unit) and keep it.

    Returns:
        The values as floats (None kept), length n.

    Raises:
        ValueError: naming the first bad value and its index: not a number, NaN/inf, outside the label space,
            or None where not allowed.
    """
    return [_as_score(v, what, i, allow_none=allow_none) for i, v in enumerate(values)]


def _scored_pairs(predictions: Sequence[Any], references: Sequence[Any]) -> tuple[list[float], list[float]]:
    """Checked (prediction, reference) columns of scored units: equal lengths, numbers of the label space."""
    _check_lengths(predictions=predictions, references=references)
    return check_scores(predictions, "predictions"), check_scores(references, "references")


def _check_lengths(**columns: Sequence[Any] | None) -> int:
    lengths = {name: len(col) for name, col in columns.items() if col is not None}
    if len(set(lengths.values())) > 1:
        raise ValueError(f"inputs differ in length: {lengths}")
    return next(iter(lengths.values()), 0)


def dimension_column(dimensions: Sequence[str]) -> tuple[list[str], list[str]]:
    """Parse the ``dimensions`` column given to a metric function (any case: the row edge, ``data.row_dimension``).

    Returns:
        (the Dimension of each item, the dimensions present in paper order).

    Raises:
        ValueError: an unknown dimension name (named).
    """
    names = [row_dimension(d) for d in dimensions]
    present = set(names)
    return names, [d for d in DIMENSIONS if d in present]


def mean_or_none(values: Sequence[float]) -> float | None:
    """The mean of ``values`` as a float, or None when there are none (an undefined average is not 0)."""
    return float(sum(values) / len(values)) if values else None


# --------------------------------------------------------------------------------------------------
# agreement statistics on the scored pairs of one dimension
# --------------------------------------------------------------------------------------------------
#: The ordered categories of the weighted kappa: the label space, whichever scores occur (values are checked to be
#: in it before any statistic is computed).
_KAPPA_LABELS = [float(v) for v in VALID_SCORES]


def quadratic_weighted_kappa(predictions: Sequence[float], references: Sequence[float]) -> tuple[float | None, str | None]:
    """Quadratic weighted Cohen's kappa between a judge and the human scores (beyond the paper).

    The four benchmark scores are treated as ordered categories ``-2 < -1 < +1 < +2``, with quadratic weights on
    the category rank, as in
    ``sklearn.metrics.cohen_kappa_score(weights="quadratic")`` with the label set fixed to
    :data:`VALID_SCORES` so the weights do not depend on which scores happen to occur.

    Args:
        predictions: judge scores of the scored units, length n.
        references: human scores, length n.

    Returns:
        ``(kappa, None)`` with kappa in [-1, 1], or ``(None, reason)`` when undefined (n < 2, or no
        variation so that the expected disagreement is 0).

    Raises:
        ValueError: unequal lengths, or a value that is not a finite number of {-2, -1, 1, 2}.
    """
    predictions, references = _scored_pairs(predictions, references)
    if len(predictions) < 2:
        return None, f"needs at least 2 scored units (got {len(predictions)})"
    if len(set(predictions) | set(references)) < 2:
        return None, "judge and humans give one and the same score everywhere: kappa undefined"
    from sklearn.metrics import cohen_kappa_score

    # (no variation was refused above, so the expected disagreement is > 0; a non-finite value is still caught)
    value = float(cohen_kappa_score(references, predictions, labels=_KAPPA_LABELS, weights="quadratic"))
    if not math.isfinite(value):
        return None, "expected disagreement is 0: kappa undefined"
    return value, None


def krippendorff_alpha_interval(predictions: Sequence[float], references: Sequence[float]) -> tuple[float | None, str | None]:
    """Krippendorff's alpha (interval metric) between judge and humans, two coders (beyond the paper).

    Comparable with the paper's human-human agreement of 0.74 (§4). Uses the ``krippendorff`` package.

    Args:
        predictions: judge scores of the scored units, length n.
        references: human scores, length n.

    Returns:
        ``(alpha, None)`` with alpha <= 1, or ``(None, reason)`` when undefined (n < 2 or every value
        identical).

    Raises:
        ValueError: unequal lengths, or a value that is not a finite number of {-2, -1, 1, 2}.
    """
    predictions, references = _scored_pairs(predictions, references)
    if len(predictions) < 2:
        return None, f"needs at least 2 scored units (got {len(predictions)})"
    if len(set(predictions) | set(references)) < 2:
        return None, "every score is identical: alpha undefined (no variation)"
    import krippendorff

    value = float(krippendorff.alpha(reliability_data=np.array([references, predictions]),
                                     level_of_measurement="interval"))
    if not math.isfinite(value):
        return None, "expected disagreement is 0: alpha undefined"
    return value, None


def macro_mae(predictions: Sequence[float], references: Sequence[float]) -> tuple[float | None, str | None]:
    """MAE averaged over the reference score classes (each class weighs the same; beyond the paper).

    With 66% of labels at -1 the plain MAE rewards a judge that always says -1; the macro MAE gives the
    rare classes -2, +1 and +2 the same weight as -1.

    Args:
        predictions: judge scores of the scored units, length n.
        references: human scores, length n.

    Returns:
        ``(value, reason)``: value in [0, 4] on the benchmark scale, ``None`` when n = 0; ``reason``
        names the classes absent from the references (averaged over the present ones), else None.

    Raises:
        ValueError: unequal lengths, or a value that is not a finite number of {-2, -1, 1, 2}.
    """
    predictions, references = _scored_pairs(predictions, references)
    if not predictions:
        return None, "no scored units"
    by_class: dict[float, list[float]] = {}
    for p, r in zip(predictions, references):
        by_class.setdefault(r, []).append(abs(p - r))
    value = float(np.mean([np.mean(v) for v in by_class.values()]))
    absent = [s for s in VALID_SCORES if float(s) not in by_class]
    reason = f"reference classes absent, averaged over the rest: {absent}" if absent else None
    return value, reason


def agreement_statistics(predictions: Sequence[float], references: Sequence[float]) -> dict[str, Any]:
    """MSE, MAE, accuracy, macro MAE, quadratic weighted kappa and Krippendorff's alpha on scored pairs.

    Args:
        predictions: judge scores (no ``None``), length n.
        references: human scores, length n.

    Returns:
        ``{"mse", "mae", "accuracy", "macro_mae", "qwk", "krippendorff_alpha", "notes"}``; ``accuracy`` is the
        share of exact score matches in [0, 1]. A value is ``None`` when undefined and ``notes[name]`` says why.

    Raises:
        ValueError: unequal lengths, or a value that is not a finite number of {-2, -1, 1, 2}.
    """
    predictions, references = _scored_pairs(predictions, references)
    notes: dict[str, str] = {}
    n = len(predictions)
    if n:
        diffs = np.asarray(predictions) - np.asarray(references)  # floats from check_scores
        mse, mae, accuracy = float(np.mean(diffs**2)), float(np.mean(np.abs(diffs))), float(np.mean(diffs == 0))
    else:
        mse = mae = accuracy = None
        notes["mse"] = notes["mae"] = notes["accuracy"] = "no scored units"
    out: dict[str, Any] = {"mse": mse, "mae": mae, "accuracy": accuracy}
    for name, fn in (("macro_mae", macro_mae), ("qwk", quadratic_weighted_kappa),
                     ("krippendorff_alpha", krippendorff_alpha_interval)):
        value, reason = fn(list(predictions), list(references))
        out[name] = value
        if reason:
            notes[name] = reason
    out["notes"] = notes
    return out


# --------------------------------------------------------------------------------------------------
# paper metrics
# --------------------------------------------------------------------------------------------------
def alignment_errors(
    predictions: Sequence[int | float | None],
    references: Sequence[int | float],
    dimensions: Sequence[str],
    *,
    convention: str = "strict",
    statuses: Sequence[str] | None = None,
) -> dict[str, Any]:
    """Per-dimension MSE/MAE and their unweighted mean over dimensions (SurveyReview §3, Eq. 2-3).

    Args:
        predictions: one judge score per unit (benchmark scale {-2, -1, 1, 2}); ``None`` marks a
            failed unit (unparseable answer, API error, missing text). Length n.
        references: the human score of each unit, length n.
        dimensions: the dimension of each unit (any case), length n.
        convention: ``"strict"`` (default): failed units are counted and left out of every average;
            per dimension also the macro MAE, quadratic weighted kappa and Krippendorff's alpha.
            ``"authors"``: the authors' script, for comparison only: a ``None`` prediction of status
            ``parse_failed`` (or of unknown status) counts as a prediction of 0; units with status
            ``api_error``/``prompt_too_long``/``missing_text``/``missing`` are dropped.
        statuses: optional status of each unit (``surveyalign.constants.STATUSES``), length n; only used by
            ``convention="authors"``.

    Returns:
        ``{"convention", "per_dimension": {dim: {...}}, "avg_mse", "avg_mae", "avg_dimensions"}``.
        Strict per-dimension entries: ``n``, ``n_scored``, ``n_failed``, ``mse``, ``mae``, ``accuracy``,
        ``macro_mae``, ``qwk``, ``krippendorff_alpha``, ``notes``. Authors entries: ``n``, ``n_used``,
        ``n_zeroed``, ``n_dropped``, ``mse``, ``mae``. ``avg_*`` average the dimensions whose error is
        defined (listed in ``avg_dimensions``); ``None`` when none is. MSE is in [0, 16], MAE in [0, 4].

    Raises:
        ValueError: on unequal lengths, an unknown dimension or convention, or a prediction or reference that
            is not a finite number of the label space {-2, -1, 1, 2} (NaN included; a failed unit is None).
    """
    if convention not in ("strict", "authors"):
        raise ValueError(f"unknown convention {convention!r}; expected 'strict' or 'authors'")
    n = _check_lengths(predictions=predictions, references=references, dimensions=dimensions, statuses=statuses)
    names, present = dimension_column(dimensions)
    preds = check_scores(predictions, "predictions", allow_none=True)
    refs = check_scores(references, "references")
    per_dim: dict[str, dict[str, Any]] = {}
    for dim in present:
        idx = [i for i in range(n) if names[i] == dim]
        if convention == "strict":
            scored = [i for i in idx if preds[i] is not None]
            stats = agreement_statistics([preds[i] for i in scored], [refs[i] for i in scored])
            per_dim[dim] = {"n": len(idx), "n_scored": len(scored), "n_failed": len(idx) - len(scored), **stats}
        else:
            used_p, used_r, zeroed, dropped = [], [], 0, 0
            for i in idx:
                if preds[i] is None:
                    if statuses is not None and statuses[i] in _AUTHORS_DROPPED:
                        dropped += 1
                        continue
                    zeroed += 1
                    used_p.append(0.0)
                else:
                    used_p.append(preds[i])
                used_r.append(refs[i])
            diffs = np.asarray(used_p) - np.asarray(used_r)
            per_dim[dim] = {
                "n": len(idx), "n_used": len(used_p), "n_zeroed": zeroed, "n_dropped": dropped,
                "mse": float(np.mean(diffs**2)) if used_p else None,
                "mae": float(np.mean(np.abs(diffs))) if used_p else None,
            }
    used = [d for d in present if per_dim[d]["mse"] is not None]
    return {
        "convention": convention,
        "per_dimension": per_dim,
        "avg_mse": mean_or_none([per_dim[d]["mse"] for d in used]),
        "avg_mae": mean_or_none([per_dim[d]["mae"] for d in used]),
        "avg_dimensions": used,
    }


def reason_quality(
    consistency: Sequence[float | None],
    dimensions: Sequence[str],
    *,
    convention: str = "strict",
) -> dict[str, Any]:
    """Reason quality per dimension (RQ_i) and the Reason Quality Score (SurveyReview §3 Eq. 4-5, App. G).

    Args:
        consistency: one rationale-consistency score per unit in [0, 1] (the paper's judge answers
            one of {0.0, 0.2, ..., 1.0}); ``None`` marks a unit without a score (failed judge or
            consistency call). 0.0 is a valid score. Length n.
        dimensions: the dimension of each unit, length n.
        convention: ``"strict"`` (default) or ``"authors"``: the authors' RQS code turns a 0.0 into a
            failure and drops it; reproduced for comparison only.

    Returns:
        ``{"per_dimension": {dim: {"rq", "n", "n_scored", "n_failed"}}, "rqs", "rqs_dimensions"}``.
        ``rq``/``rqs`` are in [0, 1]; ``rqs`` is the unweighted mean of the defined RQ_i (listed in
        ``rqs_dimensions``), ``None`` when no unit has a score.

    Raises:
        ValueError: on unequal lengths, an unknown dimension or convention, or a score outside [0, 1].
    """
    if convention not in ("strict", "authors"):
        raise ValueError(f"unknown convention {convention!r}; expected 'strict' or 'authors'")
    n = _check_lengths(consistency=consistency, dimensions=dimensions)
    names, present = dimension_column(dimensions)
    values = [_as_number(c, "consistency", i, allow_none=True) for i, c in enumerate(consistency)]
    for i, v in enumerate(values):
        if v is not None and not 0.0 <= v <= 1.0:
            raise ValueError(f"consistency[{i}] = {v} is outside [0, 1]")
        if convention == "authors" and v == 0.0:
            values[i] = None
    per_dim: dict[str, dict[str, Any]] = {}
    for dim in present:
        got = [values[i] for i in range(n) if names[i] == dim]
        scored = [v for v in got if v is not None]
        per_dim[dim] = {"rq": mean_or_none(scored), "n": len(got), "n_scored": len(scored),
                        "n_failed": len(got) - len(scored)}
    used = [d for d in present if per_dim[d]["rq"] is not None]
    return {"per_dimension": per_dim, "rqs": mean_or_none([per_dim[d]["rq"] for d in used]), "rqs_dimensions": used}


def human_aligned_score(
    avg_mse: float | None,
    avg_mae: float | None,
    rqs: float | None,
    *,
    alpha: tuple[float, float] = (0.4, 0.6),
    beta: tuple[float, float] = (0.75, 0.25),
    delta_s: float = DELTA_S,
) -> dict[str, Any]:
    """Human-aligned Score (SurveyReview §3 Eq. 6-8).

    ``A_MSE = 1 - AVGMSE / delta_s**2``, ``A_MAE = 1 - AVGMAE / delta_s``,
    ``Align = alpha[0] * A_MSE + alpha[1] * A_MAE``, ``HAS = beta[0] * Align + beta[1] * RQS``.

    Args:
        avg_mse: mean over dimensions of the per-dimension MSE (benchmark scale: [0, 16]); None if unknown.
        avg_mae: mean over dimensions of the per-dimension MAE ([0, 4]); None if unknown.
        rqs: Reason Quality Score in [0, 1]; ``None`` when no rationale-consistency scores exist, in
            which case ``has`` is ``None`` and ``has_note`` says so (no RQS is invented).
        alpha: weights of (A_MSE, A_MAE); paper default (0.4, 0.6).
        beta: weights of (Align, RQS); paper default (0.75, 0.25); Table 8 varies beta[1].
        delta_s: largest possible |score difference| (4 on {-2, -1, 1, 2}).

    Returns:
        ``{"a_mse", "a_mae", "align", "rqs", "has", "has_note", "weights"}``; ``align``/``has`` are
        <= 1 (1 = perfect agreement), ``None`` where an input is missing.

    Raises:
        ValueError: if ``delta_s`` <= 0, a weight pair is refused (two non-negative weights summing to 1:
            :func:`~surveyalign.scoring.weights.check_has_weights`), or an input is not finite or outside its range (``avg_mse`` in [0, delta_s**2], ``avg_mae`` in [0, delta_s], ``rqs`` in [0, 1]).
    """
    if not delta_s > 0:
        raise ValueError(f"delta_s must be > 0, got {delta_s}")
    alpha, beta = check_has_weights(alpha, beta)
    for name, value, top in (("avg_mse", avg_mse, delta_s**2), ("avg_mae", avg_mae, delta_s), ("rqs", rqs, 1.0)):
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
            raise ValueError(f"{name} = {value!r} is not a number")  # noqa: TRY004 - one error type for bad input
        if not math.isfinite(float(value)):
            raise ValueError(f"{name} = {value!r} is not finite")
        if not 0.0 <= float(value) <= top:
            raise ValueError(f"{name} = {value!r} is outside [0, {top:g}]")
    a_mse = None if avg_mse is None else 1.0 - float(avg_mse) / delta_s**2
    a_mae = None if avg_mae is None else 1.0 - float(avg_mae) / delta_s
    align = None if a_mse is None or a_mae is None else alpha[0] * a_mse + alpha[1] * a_mae
    note = None
    if align is None:
        has = None
        note = "no scored units: MSE/MAE undefined, so Align and HAS are undefined"
    elif rqs is None:
        has = None
        note = "no rationale-consistency scores: RQS unavailable, so HAS is not computed (Align is)"
    else:
        has = beta[0] * align + beta[1] * float(rqs)
    return {
        "a_mse": a_mse, "a_mae": a_mae, "align": align, "rqs": None if rqs is None else float(rqs),
        "has": has, "has_note": note,
        "weights": {"alpha": list(alpha), "beta": list(beta), "delta_s": float(delta_s)},
    }

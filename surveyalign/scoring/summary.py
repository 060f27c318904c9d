"""``summarize_predictions``: the metrics.json of an evaluation run (SurveyReview §3, §6.1,
App. G, I.1).

Reads the ``predictions.jsonl`` records and returns one JSON-serialisable dict: counts of
every status per dimension, MSE/MAE over scored units, chance-corrected agreement, RQS/Align/HAS,
training-label baselines, paper-level bootstrap intervals, the per-source breakdown of Table 7 and,
under an explicit name, the authors' convention.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from surveyalign.constants import (
    API_ERROR,
    MISSING,
    MISSING_TEXT,
    PARSE_FAILED,
    PROMPT_TOO_LONG,
    count_statuses,
)
from surveyalign.documents.reading import summarize_reading
from surveyalign.scoring.baselines import (
    baseline_metrics,
    check_train_scores,
    majority_label,
)
from surveyalign.scoring.bootstrap import bootstrap_intervals
from surveyalign.scoring.calibration import vote_summary
from surveyalign.scoring.ceiling import ceiling_reviews, human_ceiling
from surveyalign.scoring.metrics import (
    alignment_errors,
    human_aligned_score,
    mean_or_none,
    reason_quality,
)
from surveyalign.scoring.records import validate_records
from surveyalign.scoring.weights import check_has_weights

__all__ = ["METRICS_VERSION", "reading_summary", "reweigh_summary", "summarize_predictions", "unit_has"]

#: Version of the metrics.json layout written by :func:`summarize_predictions`.
METRICS_VERSION = 1

_STATUS_KEY = {PARSE_FAILED: "n_parse_failed", API_ERROR: "n_error", PROMPT_TOO_LONG: "n_prompt_too_long",
               MISSING_TEXT: "n_missing_text", MISSING: "n_missing"}


def _bare_score(record: Mapping[str, Any]) -> bool:
    """A scored unit whose answer had no rationale (``rationale`` present and blank: "**Score:** $$$-1$$$").

    Records without a ``rationale`` field are not counted (nothing is known about them).
    """
    if record["status"] != "scored" or "rationale" not in record:
        return False
    return not str(record["rationale"] or "").strip()


def _core(records: list[dict], *, use_consistency: bool, majority: dict[str, int] | None,
          weights: dict[str, Any]) -> dict[str, Any]:
    """Strict-convention metrics of validated records (no bootstrap, no baselines)."""
    preds = [r["prediction"] for r in records]
    refs = [r["reference"] for r in records]
    dims = [r["dimension"] for r in records]
    err = alignment_errors(preds, refs, dims)
    rq = reason_quality([r["consistency"] for r in records], dims) if use_consistency else None
    per_dim: dict[str, dict[str, Any]] = {}
    for d, e in err["per_dimension"].items():
        sub = [r for r in records if r["dimension"] == d]
        entry: dict[str, Any] = {"n": e["n"], "n_scored": e["n_scored"]}
        for status, key in _STATUS_KEY.items():
            entry[key] = sum(r["status"] == status for r in sub)
        entry["n_failed"] = e["n_failed"]
        entry["n_scored_without_rationale"] = sum(_bare_score(r) for r in sub)
        for k in ("mse", "mae", "accuracy", "macro_mae", "qwk", "krippendorff_alpha"):
            entry[k] = e[k]
        notes = dict(e["notes"])
        scored_refs = [r["reference"] for r in sub if r["prediction"] is not None]
        if majority is None or d not in majority:
            entry["skill_vs_majority"] = None
            notes["skill_vs_majority"] = "no training labels for this dimension: no majority baseline"
        else:
            maj_mse = mean_or_none([(x - majority[d]) ** 2 for x in scored_refs])
            if e["mse"] is None or not maj_mse:
                entry["skill_vs_majority"] = None
                notes["skill_vs_majority"] = ("no scored units" if e["mse"] is None else
                                              "majority baseline is perfect on these units (MSE 0)")
            else:
                entry["skill_vs_majority"] = 1.0 - e["mse"] / maj_mse
            entry["majority_mse_on_scored"] = maj_mse
        if rq is None:
            entry["rq"], entry["n_rq"] = None, 0
        else:
            entry["rq"], entry["n_rq"] = rq["per_dimension"][d]["rq"], rq["per_dimension"][d]["n_scored"]
            if entry["rq"] is None:
                notes["rq"] = "no consistency score in this dimension"
        entry["notes"] = notes
        per_dim[d] = entry
    rqs = None if rq is None else rq["rqs"]
    has = human_aligned_score(err["avg_mse"], err["avg_mae"], rqs, **weights)
    out: dict[str, Any] = {
        "per_dimension": per_dim,
        "avg_mse": err["avg_mse"], "avg_mae": err["avg_mae"], "avg_dimensions": err["avg_dimensions"],
        "accuracy": mean_or_none([per_dim[d]["accuracy"] for d in err["avg_dimensions"]]),
        "rqs": rqs, "rqs_dimensions": [] if rq is None else rq["rqs_dimensions"],
        "a_mse": has["a_mse"], "a_mae": has["a_mae"], "align": has["align"], "has": has["has"],
        "has_note": has["has_note"],
    }
    used = err["avg_dimensions"]
    maj = [per_dim[d].get("majority_mse_on_scored") for d in used]
    if used and all(m is not None for m in maj) and mean_or_none(maj) > 0:
        out["skill_vs_majority"] = 1.0 - err["avg_mse"] / mean_or_none(maj)
    else:
        out["skill_vs_majority"] = None
    return out


def _authors(records: list[dict], use_consistency: bool, weights: dict[str, Any]) -> dict[str, Any]:
    preds = [r["prediction"] for r in records]
    err = alignment_errors(preds, [r["reference"] for r in records], [r["dimension"] for r in records],
                           convention="authors", statuses=[r["status"] for r in records])
    rqs = None
    if use_consistency:
        rqs = reason_quality([r["consistency"] for r in records], [r["dimension"] for r in records],
                             convention="authors")["rqs"]
    has = human_aligned_score(err["avg_mse"], err["avg_mae"], rqs, **weights)
    return {
        "description": ("the authors' evaluation script, for comparison only: an unparseable answer counts "
                        "as a prediction of 0 inside MSE/MAE, API errors and missing papers are dropped, "
                        "and a consistency score of 0.0 is dropped from RQS"),
        "per_dimension": err["per_dimension"], "avg_mse": err["avg_mse"], "avg_mae": err["avg_mae"],
        "rqs": rqs, "align": has["align"], "has": has["has"],
    }


def summarize_predictions(
    records: Sequence[Mapping[str, Any]],
    *,
    train_scores: Mapping[str, Sequence[int]] | None = None,
    consistency_available: bool | None = None,
    bootstrap: int = 1000,
    seed: int = 0,
    alpha: tuple[float, float] = (0.4, 0.6),
    beta: tuple[float, float] = (0.75, 0.25),
    delta_s: float = 4.0,
) -> dict[str, Any]:
    """Every metric of one evaluation run, as written to ``metrics.json`` (``surveyalign/scoring/summary.py``).

    Args:
        records: ``predictions.jsonl`` records (fields unit_id, paper_id, review_id, source,
            dimension, reference, prediction (int | None), status, consistency (float | None), ...).
        train_scores: ``{dimension: [training scores]}`` (any dimension case, see
            :func:`~surveyalign.scoring.baselines.check_train_scores`) for the majority / prior-sampling baselines
            and the skill scores; ``None`` leaves them out (``baselines`` is None with a note).
        consistency_available: whether the run had a rationale-consistency (RQS) stage; ``None``
            means "if any record has a consistency score". Without it ``rqs`` and ``has`` are None
            and ``has_note`` says why; ``align`` is always given.
        bootstrap: resamples of the paper-level bootstrap (0 = no intervals).
        seed: seed of the bootstrap.
        alpha, beta, delta_s: HAS weights (SurveyReview Eq. 6-8; defaults of the paper; each pair non-negative and
            summing to 1), written to ``weights``.

    Returns:
        A JSON-serialisable dict (no NaN): ``metrics_version``, ``convention`` ("strict"),
        ``status_counts`` ({status: count, "total"}), ``n``, ``n_scored``, ``n_failed``,
        ``n_scored_without_rationale`` (scored units whose ``rationale`` is blank: the score counts, the
        answer gave no reason), ``per_dimension`` ({dim: {n, n_scored, n_parse_failed, n_error,
        n_prompt_too_long, n_missing_text, n_missing, n_failed, n_scored_without_rationale, mse, mae, accuracy, macro_mae,
        qwk, krippendorff_alpha, skill_vs_majority, rq, n_rq, notes}}), ``avg_mse``,
        ``avg_mae``, ``avg_dimensions``, ``accuracy`` (share of scored units whose score equals the human score,
        per dimension, then the unweighted mean over ``avg_dimensions``), ``rqs``, ``a_mse``, ``a_mae``, ``align``, ``has``,
        ``has_note``, ``skill_vs_majority``, ``baselines`` (see
        :func:`~surveyalign.scoring.baselines.baseline_metrics`) or None with ``baselines_note``,
        ``ci`` (see :func:`~surveyalign.scoring.bootstrap.bootstrap_intervals`) or None,
        ``per_source`` ({source: same keys as the top level, without ci/baselines}),
        ``authors_convention`` and ``voting`` (agreement of the K samples and calibration of the vote share, see
        :func:`~surveyalign.scoring.calibration.vote_summary`; None when every unit had one sample) and ``ceiling``
        (the human ceiling of these units, :func:`~surveyalign.scoring.ceiling.human_ceiling`, when a paper has two
        or more reviews of one dimension; else None) and ``reading`` (how much of the surveys the judge read:
        :func:`reading_summary`). MSE in [0, 16], MAE in [0, 4], RQS in [0, 1], Align/HAS <= 1.

    Raises:
        ValueError: on an invalid record (see :func:`validate_records`).
    """
    recs = validate_records(records)
    alpha, beta = check_has_weights(alpha, beta)
    weights = {"alpha": alpha, "beta": beta, "delta_s": float(delta_s)}
    has_scores = any(r["consistency"] is not None for r in recs)
    use_consistency = has_scores if consistency_available is None else bool(consistency_available)
    train = None
    if train_scores:
        train = {k: v for k, v in check_train_scores(train_scores).items() if len(v)}
    majority = {d: majority_label(v) for d, v in train.items()} if train else None

    out: dict[str, Any] = {"metrics_version": METRICS_VERSION, "convention": "strict"}
    counts = count_statuses(recs)
    out.update({"status_counts": counts, "n": len(recs), "n_scored": counts["scored"],
                "n_failed": len(recs) - counts["scored"],
                "n_scored_without_rationale": sum(_bare_score(r) for r in recs)})
    out.update(_core(recs, use_consistency=use_consistency, majority=majority, weights=weights))
    if use_consistency and not has_scores:
        out["has_note"] = "the run has a consistency stage but no unit got a consistency score: no RQS, no HAS"
    out["weights"] = {"alpha": list(alpha), "beta": list(beta), "delta_s": float(delta_s)}

    if train:
        out["baselines"] = baseline_metrics(train, [r["reference"] for r in recs], [r["dimension"] for r in recs])
        out["baselines_note"] = None
    else:
        out["baselines"] = None
        out["baselines_note"] = "no training labels given (train_scores): no majority / prior-sampling baselines"

    if bootstrap and recs:
        out["ci"] = bootstrap_intervals(
            [r if use_consistency else {**r, "consistency": None} for r in recs],
            n_resamples=int(bootstrap), seed=seed, majority=majority, alpha=alpha, beta=beta, delta_s=delta_s,
        )
    else:
        out["ci"] = None

    per_source: dict[str, Any] = {}
    for source in sorted({r["source"] for r in recs}):
        sub = [r for r in recs if r["source"] == source]
        c = count_statuses(sub)
        per_source[source] = {"status_counts": c, "n": len(sub), "n_scored": c["scored"],
                              "n_failed": len(sub) - c["scored"],
                              "n_papers": len({r["paper_id"] for r in sub}),
                              **_core(sub, use_consistency=use_consistency, majority=majority, weights=weights)}
    out["per_source"] = per_source
    out["authors_convention"] = _authors(recs, use_consistency, weights)
    out["voting"] = vote_summary(recs)
    out["reading"] = reading_summary(recs)
    reviews = ceiling_reviews([r for r in recs if r.get("review_id") is not None], score_key="reference")
    ceiling = human_ceiling(reviews, n_resamples=int(bootstrap), seed=seed, delta_s=delta_s)
    out["ceiling"] = None if ceiling["status"] == "no data" else ceiling
    return _clean(out)


def unit_has(predictions: Sequence[Any], references: Sequence[Any], dimensions: Sequence[str],
             consistency: Sequence[Any] | None = None, *, alpha: Sequence[float] = (0.4, 0.6),
             beta: Sequence[float] = (0.75, 0.25), delta_s: float = 4.0) -> dict[str, Any]:
    """HAS of per-unit columns: the result of the ``has`` (alias ``ssr``) evaluate modules (SurveyReview Eq. 2-8).

    Args:
        predictions: judge score per unit ({-2, -1, 1, 2}, ``None`` = failed), length n.
        references: human score per unit, length n.
        dimensions: dimension per unit, length n.
        consistency: rationale-consistency rating per unit in [0, 1] (``None`` where missing), or ``None`` for no
            RQS stage (then ``has`` is ``None`` and ``has_note`` says why).
        alpha, beta: HAS weights (each pair >= 0, summing to 1); delta_s: the largest score gap (4).

    Returns:
        ``{"has", "has_note", "align", "a_mse", "a_mae", "rqs", "avg_mse", "avg_mae", "avg_dimensions", "accuracy",
        "n", "n_scored", "n_failed", "per_dimension" (survey_alignment entries plus ``rq``), "weights"}``.

    Raises:
        ValueError: bad scores, ratings or weights (see :func:`alignment_errors`, :func:`reason_quality`,
            :func:`human_aligned_score`).
    """
    err = alignment_errors(predictions, references, dimensions)
    have_rq = consistency is not None and any(c is not None for c in consistency)
    rq = reason_quality(consistency, dimensions) if have_rq else None
    score = human_aligned_score(err["avg_mse"], err["avg_mae"], None if rq is None else rq["rqs"],
                                alpha=tuple(alpha), beta=tuple(beta), delta_s=delta_s)
    per_dim = err["per_dimension"]
    for dim, entry in per_dim.items():
        entry["rq"] = None if rq is None else rq["per_dimension"][dim]["rq"]
    n_scored = sum(e["n_scored"] for e in per_dim.values())
    return {
        "has": score["has"], "has_note": score["has_note"], "align": score["align"],
        "a_mse": score["a_mse"], "a_mae": score["a_mae"], "rqs": score["rqs"],
        "avg_mse": err["avg_mse"], "avg_mae": err["avg_mae"], "avg_dimensions": err["avg_dimensions"],
        "accuracy": mean_or_none([per_dim[d]["accuracy"] for d in err["avg_dimensions"]]),
        "n": len(predictions), "n_scored": n_scored, "n_failed": len(predictions) - n_scored,
        "per_dimension": per_dim, "weights": score["weights"],
    }


def reading_summary(records: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """How much of the surveys the judge read, over all units and per dimension.

    Args:
        records: prediction records; each unit's ``read`` block (``predictions.jsonl``) is summarised.

    Returns:
        ``{"all": summary, "per_dimension": {dim: summary}}`` with each summary from
        :func:`surveyalign.documents.reading.summarize_reading` (units cut, median / least fraction of the survey
        read, ...); ``None`` when no record has a ``read`` block (a run written before it was recorded).
    """
    if not any("read" in r for r in records):
        return None
    dims = list(dict.fromkeys(str(r["dimension"]) for r in records))
    return {"all": summarize_reading(r.get("read") for r in records),
            "per_dimension": {d: summarize_reading(r.get("read") for r in records if str(r["dimension"]) == d)
                              for d in dims}}


def _clean(value: Any) -> Any:
    """Recursively turn numpy scalars into Python numbers and non-finite floats into None."""
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def reweigh_summary(summary: dict, alpha: tuple[float, float], beta: tuple[float, float]) -> dict:
    """A ``metrics.json`` summary with Align / HAS recomputed under other weights (SurveyReview §3).

    Args:
        summary: a run's metrics (``avg_mse``, ``avg_mae``, ``rqs``, ``weights``).
        alpha, beta: the HAS weight pairs (each >= 0, summing to 1).

    Returns:
        A copy with ``a_mse``, ``a_mae``, ``align``, ``has`` and ``weights`` recomputed; averages and RQS kept.
    """
    has = human_aligned_score(summary.get("avg_mse"), summary.get("avg_mae"), summary.get("rqs"), alpha=alpha,
                              beta=beta, delta_s=(summary.get("weights") or {}).get("delta_s", 4.0))
    return {**summary, **{k: has[k] for k in ("a_mse", "a_mae", "align", "has", "has_note")}, "weights": has["weights"],
            "ci": None}

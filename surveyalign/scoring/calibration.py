"""Agreement of the K voted samples and calibration of the vote share (SurveyReview App. E test-time scaling).

The paper keeps only the majority score of its K=5 samples. The distribution of the votes says more: how often
the samples agree, and whether a larger majority means a more likely correct score. For every unit judged with
K > 1 samples, the *vote share* is the winning score's votes over the samples that carried a score; on a labelled
split it is read as a confidence and its calibration is reported as the expected calibration error (ECE) and a
reliability table (equal-width bins of the share: per bin the units, mean share and accuracy).

ECE = sum over bins b of (n_b / N) * |accuracy_b - mean_share_b|, in [0, 1] (0 = calibrated).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["expected_calibration_error", "vote_share", "vote_summary"]

#: Bins of the reliability table; with K=5 votes each possible share (0.2, 0.4, ... 1.0) falls in its own bin.
DEFAULT_BINS = 5


def vote_share(scores: Sequence[int | None]) -> tuple[int | None, float | None, int]:
    """The majority score's share of the votes of one unit (ties: the score seen first, as counted here).

    Args:
        scores: the K samples' parsed scores, ``None`` for a sample without a score (it does not vote).

    Returns:
        ``(top_score, share, n_voted)``: ``share`` = votes of the most voted score / ``n_voted`` in (0, 1];
        ``(None, None, 0)`` when no sample carried a score.
    """
    voted = [s for s in scores if s is not None]
    if not voted:
        return None, None, 0
    counts: dict[int, int] = {}
    for s in voted:
        counts[s] = counts.get(s, 0) + 1
    top = max(counts, key=lambda s: counts[s])
    return top, counts[top] / len(voted), len(voted)


def expected_calibration_error(confidences: Sequence[float], correct: Sequence[bool], bins: int = DEFAULT_BINS
                               ) -> tuple[float | None, list[dict[str, Any]]]:
    """Expected calibration error of confidences in (0, 1] against correctness, with equal-width bins.

    Args:
        confidences: one confidence per unit, in [0, 1] (here: the vote share of the predicted score).
        correct: whether each unit's prediction equals the reference; same length.
        bins: number of equal-width bins over [0, 1], >= 1; bin ``b`` holds ``(b/bins, (b+1)/bins]`` (the first
            also holds 0).

    Returns:
        ``(ece, table)``: ``ece`` in [0, 1] (``None`` without units) and one row per bin: ``{"low", "high",
        "n", "mean_confidence", "accuracy"}`` (mean and accuracy ``None`` for an empty bin).

    Raises:
        ValueError: lengths differ, ``bins < 1`` or a confidence outside [0, 1].
    """
    if len(confidences) != len(correct):
        raise ValueError(f"calibration: {len(confidences)} confidences but {len(correct)} correctness flags")
    if bins < 1:
        raise ValueError(f"calibration: bins must be >= 1, got {bins}")
    grouped: list[list[tuple[float, bool]]] = [[] for _ in range(bins)]
    for conf, ok in zip(confidences, correct):
        if not 0.0 <= conf <= 1.0 or math.isnan(conf):
            raise ValueError(f"calibration: confidence {conf!r} is outside [0, 1]")
        index = max(0, math.ceil(conf * bins - 1e-9) - 1)
        grouped[index].append((float(conf), bool(ok)))
    total = len(confidences)
    table, ece = [], 0.0
    for b, items in enumerate(grouped):
        row: dict[str, Any] = {"low": round(b / bins, 6), "high": round((b + 1) / bins, 6), "n": len(items),
                               "mean_confidence": None, "accuracy": None}
        if items:
            mean_conf = math.fsum(c for c, _ in items) / len(items)
            accuracy = sum(ok for _, ok in items) / len(items)
            row.update(mean_confidence=mean_conf, accuracy=accuracy)
            ece += len(items) / total * abs(accuracy - mean_conf)
        table.append(row)
    return (ece if total else None), table


def _summary(units: list[tuple[float, int, int, bool | None, str | None]], bins: int) -> dict[str, Any]:
    labelled = [(share, ok) for share, _, _, ok, _ in units if ok is not None]
    ece, table = expected_calibration_error([s for s, _ in labelled], [ok for _, ok in labelled], bins)
    n = len(units)
    return {
        "n_units": n,
        "mean_vote_share": math.fsum(u[0] for u in units) / n if n else None,
        "unanimous": sum(u[0] == 1.0 for u in units) / n if n else None,
        "mean_samples": math.fsum(u[2] for u in units) / n if n else None,
        "mean_voted": math.fsum(u[1] for u in units) / n if n else None,
        "n_unparsed_samples": sum(u[2] - u[1] for u in units),
        "n_tie_break": sum(u[4] is not None for u in units),
        "n_labelled": len(labelled),
        "accuracy": sum(ok for _, ok in labelled) / len(labelled) if labelled else None,
        "ece": ece,
        "reliability": table,
    }


def vote_summary(records: Sequence[Mapping[str, Any]], bins: int = DEFAULT_BINS) -> dict[str, Any] | None:
    """Vote agreement and vote-share calibration per dimension, over the units judged with K > 1 samples.

    Args:
        records: ``predictions.jsonl`` records (``dimension``, ``samples`` with ``score``; optionally
            ``prediction``, ``reference`` and ``vote.tie_break``). A unit counts when it has more than one sample
            and at least one carried a score; its share is that of the recorded ``prediction`` when it has one
            (the vote's winner after the tie-break), else of the most voted score.
        bins: reliability-table bins.

    Returns:
        ``None`` when no unit was judged with several samples; else ``{"per_dimension": {dim: summary},
        "all": summary}`` where a summary holds ``n_units``, ``mean_vote_share``, ``unanimous`` (share of units
        whose voters all agreed), ``mean_samples``, ``mean_voted``, ``n_unparsed_samples``, ``n_tie_break``,
        ``n_labelled`` (units with a reference), ``accuracy``, ``ece`` and ``reliability`` (see
        :func:`expected_calibration_error`).
    """
    per_dim: dict[str, list[tuple[float, int, int, bool | None, str | None]]] = {}
    for record in records:
        samples = record.get("samples") or []
        if len(samples) < 2:
            continue
        scores = [s.get("score") for s in samples]
        top, share, n_voted = vote_share(scores)
        if top is None:
            continue
        predicted = record.get("prediction")
        if predicted is not None and predicted in scores:
            share = sum(s == predicted for s in scores) / n_voted
        else:
            predicted = top
        reference = record.get("reference")
        correct = None if reference is None else int(predicted) == int(reference)
        tie = (record.get("vote") or {}).get("tie_break")
        per_dim.setdefault(str(record.get("dimension")), []).append((share, n_voted, len(samples), correct, tie))
    if not per_dim:
        return None
    every = [u for units in per_dim.values() for u in units]
    return {"per_dimension": {d: _summary(u, bins) for d, u in sorted(per_dim.items())},
            "all": _summary(every, bins)}

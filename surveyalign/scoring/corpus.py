"""Aggregates of per-paper figures over a corpus: each system's mean over papers with a paper-level bootstrap
interval, and the papers where a figure is missing counted (beyond the papers; used by ``surveyalign prism
--corpus``, PRISM's systems x metrics table over many papers).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from surveyalign.scoring.bootstrap import INSUFFICIENT_DATA, MIN_BOOTSTRAP_PAPERS

__all__ = ["aggregate_cell", "aggregate_over_papers"]


def aggregate_over_papers(values: Mapping[str, Mapping[str, Mapping[str, float | None]]], papers: list[str], *,
                          n_resamples: int = 1000, seed: int = 0) -> dict[str, dict[str, dict[str, Any]]]:
    """Mean over papers of each system's per-paper value of each metric, with a percentile 95% bootstrap interval.

    Args:
        values: ``{system: {metric: {paper_id: value or None}}}``: a paper the system reviewed but where the metric
            could not be computed has ``None``; a paper the system did not review is absent.
        papers: every paper of the corpus (for the count of papers a system did not review).
        n_resamples: bootstrap resamples over the papers with a value (0: no interval).
        seed: numpy seed.

    Returns:
        ``{system: {metric: {"mean", "ci95" ([lo, hi] | None), "n_papers" (with a value), "n_missing" (reviewed,
        no value), "n_absent" (not reviewed), "note"}}}``; ``mean`` None when no paper has a value; the interval is
        None with ``note`` "insufficient data: ..." below :data:`MIN_BOOTSTRAP_PAPERS` papers or without spread.
    """
    rng = np.random.default_rng(seed)
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for system, metrics in values.items():
        out[system] = {}
        for metric, per_paper in metrics.items():
            got = np.asarray([float(v) for v in per_paper.values() if v is not None])
            entry: dict[str, Any] = {
                "mean": float(got.mean()) if got.size else None, "ci95": None, "n_papers": int(got.size),
                "n_missing": sum(v is None for v in per_paper.values()),
                "n_absent": sum(p not in per_paper for p in papers), "note": None}
            if got.size < MIN_BOOTSTRAP_PAPERS:
                entry["note"] = (f"{INSUFFICIENT_DATA}: {got.size} papers with a value, fewer than "
                                 f"{MIN_BOOTSTRAP_PAPERS}")
            elif n_resamples > 0:
                means = got[rng.integers(0, got.size, size=(n_resamples, got.size))].mean(axis=1)
                if np.ptp(means) == 0:
                    entry["note"] = f"{INSUFFICIENT_DATA}: the same value on every paper"
                else:
                    lo, hi = np.percentile(means, [2.5, 97.5])
                    entry["ci95"] = [float(lo), float(hi)]
            out[system][metric] = entry
    return out


def aggregate_cell(entry: Mapping[str, Any] | None) -> str:
    """One :func:`aggregate_over_papers` entry as a table cell: ``"0.412 [0.301, 0.520] (n=12, missing 1)"``.

    Args:
        entry: ``{"mean", "ci95", "n_papers", "n_missing", "n_absent"}``, or None (no entry: ``"n/a"``).

    Returns:
        The mean to 3 decimals (``"-"`` when None), its interval when there is one, the count of papers with a
        value and, when non-zero, the papers missing the figure and those not reviewed ("absent").
    """
    if entry is None:
        return "n/a"
    ci = entry.get("ci95")
    text = "-" if entry["mean"] is None else f"{entry['mean']:.3f}" + (f" [{ci[0]:.3f}, {ci[1]:.3f}]" if ci else "")
    extra = [f"n={entry['n_papers']}"]
    if entry.get("n_missing"):
        extra.append(f"missing {entry['n_missing']}")
    if entry.get("n_absent"):
        extra.append(f"absent {entry['n_absent']}")
    return f"{text} ({', '.join(extra)})"

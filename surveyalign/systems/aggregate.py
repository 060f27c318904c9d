"""Aggregates of ``surveyalign systems``: per system and column the mean over topics with a topic-level bootstrap
interval, every pair of systems compared on the topics both have, the ranking under each column and its
stability (Kendall tau between columns, with topic-level bootstrap intervals).

Topics play the part papers play in :func:`surveyalign.scoring.aggregate_over_papers`: a topic the system did not
write is *absent*, a topic where the measure could not be computed is *missing*; neither is imputed. The human
reference is a row of the table and of the pairwise comparisons wherever a column applies to it; rankings and
Kendall tau rank the systems only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import combinations
from typing import Any

import numpy as np

from surveyalign.scoring import (
    INSUFFICIENT_DATA,
    MIN_BOOTSTRAP_PAPERS,
    aggregate_over_papers,
    kendall_tau,
    paired_difference,
    resampled_means,
)

__all__ = ["aggregate_systems", "tau_between"]


def tau_between(values: Mapping[str, Mapping[str, Mapping[str, float | None]]], a: str, b: str,
                systems: Sequence[str], topics: Sequence[str], *, n_resamples: int, seed: int) -> dict[str, Any]:
    """Kendall tau-b between the system rankings of columns ``a`` and ``b`` with a topic-level bootstrap interval.

    Args:
        values: ``{column: {system: {topic: value | None}}}``.
        a, b: the two columns.
        systems: the systems ranked (those with a mean under both columns take part).
        topics: every topic (the resampled clusters).
        n_resamples: bootstrap resamples (each recomputes every system's mean over the drawn topics).
        seed: numpy seed.

    Returns:
        ``{"a", "b", "systems", "tau" (in [-1, 1] | None), "ci95" ([lo, hi] | None), "note"}``; no interval (note
        :data:`INSUFFICIENT_DATA`) below :data:`MIN_BOOTSTRAP_PAPERS` topics or when tau is undefined in more than
        half the resamples; a tau the same in every resample gives ``[tau, tau]`` with a note saying so.
    """
    def mean(col: str, s: str) -> float | None:
        got = [v for v in values[col].get(s, {}).values() if v is not None]
        return sum(got) / len(got) if got else None

    common = [s for s in systems if mean(a, s) is not None and mean(b, s) is not None]
    tau, note = kendall_tau([mean(a, s) for s in common], [mean(b, s) for s in common])
    out = {"a": a, "b": b, "systems": common, "tau": tau, "ci95": None, "note": note}
    if tau is None:
        return out
    if len(topics) < MIN_BOOTSTRAP_PAPERS:
        out["note"] = f"{INSUFFICIENT_DATA}: {len(topics)} topics, fewer than {MIN_BOOTSTRAP_PAPERS}"
        return out
    ra = resampled_means({s: values[a][s] for s in common}, topics, n_resamples=n_resamples, seed=seed)
    rb = resampled_means({s: values[b][s] for s in common}, topics, n_resamples=n_resamples, seed=seed)
    taus = []
    for k in range(n_resamples):
        x, y = [ra[s][k] for s in common], [rb[s][k] for s in common]
        t = None if not np.all(np.isfinite(x + y)) else kendall_tau(x, y)[0]
        taus.append(np.nan if t is None else t)
    finite = np.round(np.asarray(taus)[np.isfinite(taus)], 12)  # tau-b of equal rankings differs only in fp noise
    if finite.size < 0.5 * n_resamples:
        out["note"] = f"{INSUFFICIENT_DATA}: tau is undefined in more than half of the resamples"
        return out
    lo, hi = np.percentile(finite, [2.5, 97.5])
    out["ci95"] = [float(lo), float(hi)]
    if np.ptp(finite) == 0:
        out["note"] = "the same tau in every resample: the rankings do not move with the topics drawn"
    return out


def aggregate_systems(values: Mapping[str, Mapping[str, Mapping[str, float | None]]], columns: Sequence[Mapping[str, Any]],
              systems: Sequence[str], topics: Sequence[str], reference: str | None, *, n_resamples: int = 1000,
              seed: int = 0) -> dict[str, Any]:
    """The table, pairwise comparisons, rankings and Kendall taus of a systems run (module docstring).

    Args:
        values: ``{column: {system: {topic: value | None}}}`` (a topic absent: the system did not write it).
        columns: the columns (:func:`surveyalign.systems.measures.columns_of`).
        systems: the systems, in report order.
        topics: every topic.
        reference: the reference row's name (``None``: no reference surveys).
        n_resamples: topic-level bootstrap resamples.
        seed: numpy seed.

    Returns:
        ``{"table": {row: {column: {"mean", "ci95", "n_papers" (topics with a value), "n_missing", "n_absent",
        "note"}}}, "pairwise": [{"column", "a", "b" (rows), "mean_a", "mean_b", "diff", "ci95", "sign_p", "better", "n_shared",
        ...}],
        "rankings": {column: [systems, best first]}, "kendall": [{"a", "b", "kind", "tau", "ci95", "note", ...}]}``.
    """
    rows = [*systems, *([reference] if reference else [])]
    nested = {r: {c["key"]: dict(values[c["key"]].get(r, {})) for c in columns
                  if r != reference or c["reference"]} for r in rows}
    table = aggregate_over_papers(nested, list(topics), n_resamples=n_resamples, seed=seed)
    pairwise = []
    for col in (c for c in columns if c["headline"]):
        present = [r for r in rows if r in values[col["key"]] and (r != reference or col["reference"])]
        for a, b in combinations(present, 2):
            got = paired_difference(values[col["key"]][a], values[col["key"]][b], n_resamples=n_resamples, seed=seed)
            means = {"mean_a": got.pop("a"), "mean_b": got.pop("b")}
            pairwise.append({"column": col["key"], **{k: v for k, v in got.items() if k != "units"}, **means,
                             "a": a, "b": b})
    ranked = [c for c in columns if c["headline"] or c["kind"] == "covariate"]
    rankings = {c["key"]: sorted((s for s in systems if table[s][c["key"]]["mean"] is not None),
                                 key=lambda s, k=c["key"]: -table[s][k]["mean"]) for c in ranked}
    kendall = []
    for ca, cb in combinations(ranked, 2):
        kind = ("covariate" if "covariate" in (ca["kind"], cb["kind"]) else
                "between judges" if ca["kind"] == cb["kind"] else "between measures")
        got = tau_between(values, ca["key"], cb["key"], systems, topics, n_resamples=n_resamples, seed=seed)
        kendall.append({**got, "kind": kind})
    return {"table": table, "pairwise": pairwise, "rankings": rankings, "kendall": kendall}

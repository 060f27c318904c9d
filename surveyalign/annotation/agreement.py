"""Agreement between two annotations of the same units, as in SurveyReview Table 5 (§4.3, App. A.2).

A unit is one (review, dimension). For two annotators (two people, or the LLM and a person) over the units both
labelled, per dimension and overall: units, disagreements (labels differ), disagreement rate, Krippendorff's
alpha (ordinal and interval, from the ``krippendorff`` package), how far apart the disagreeing labels are, a
confusion matrix over the six labels, and percentile bootstrap intervals (units resampled with replacement).

Our choices where the paper is silent (recorded in every table under ``rules``):

* alpha is computed over the values -2, -1, 0, +1, +2 (0, "not mentioned", sits between -1 and +1 on the ordered
  scale); -3 ("unjudgeable") is no point of that scale and enters alpha as a missing value. Disagreements and the
  confusion matrix count all six labels.
* distance of a disagreement: on the benchmark levels -2 < -1 < +1 < +2, one, two or three levels apart; a
  disagreement involving 0 or -3 is counted apart (``with_not_mentioned`` / ``with_unjudgeable``). The paper's
  70 disagreements were 48 one-level and 22 two-level; it does not say whether -1 against +1 is one level or two,
  so ``score_difference`` also counts |a - b| on the numbers (1 to 4) for disagreements between benchmark labels.
"""

from __future__ import annotations

import math
import random
from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from surveyalign.constants import DIMENSIONS

from .records import LABELS, label_name

#: Values on alpha's scale (-3 is a missing value there).
ALPHA_VALUES: tuple[int, ...] = (-2, -1, 0, 1, 2)
#: Benchmark levels, in order, for the distance of a disagreement.
LEVELS: tuple[int, ...] = (-2, -1, 1, 2)
#: Default units per dimension of the double-annotation sample (App. A.2: 70 per dimension, 280 in all).
DEFAULT_SAMPLE = 70
#: Distance buckets of a disagreement.
DISTANCES: tuple[str, ...] = ("one_level", "two_levels", "three_levels", "with_not_mentioned", "with_unjudgeable")
RULES = {
    "alpha_values": "alpha over -2,-1,0,+1,+2 (0 between -1 and +1); -3 is a missing value for alpha",
    "disagreement": "labels differ, over all six labels",
    "distance": "levels apart on -2<-1<+1<+2; disagreements involving 0 or -3 counted apart",
    "score_difference": "the other reading of a level: |a - b| on the numbers, for disagreements between two of "
                        "-2,-1,+1,+2 (so -1 against +1 is 2)",
    "bootstrap": "percentile interval, units resampled with replacement within each table",
}

Unit = tuple[str, str]  # (review_id, dimension)


def unit_labels(records: Iterable[dict[str, Any]]) -> dict[Unit, dict[str, int]]:
    """``{(review_id, dimension): {annotator: label}}`` from annotation records (LLM or Label Studio import);
    dimensions without a label are left out."""
    out: dict[Unit, dict[str, int]] = defaultdict(dict)
    for rec in records:
        for dim, value in rec["dimensions"].items():
            if value.get("label") is not None:
                out[(rec["review_id"], dim)].setdefault(str(rec.get("annotator", "?")), int(value["label"]))
    return dict(out)


def sample_units(units: Iterable[Unit], *, n: int = DEFAULT_SAMPLE, seed: int = 0) -> list[Unit]:
    """A seeded sample of ``n`` units per dimension (all of a dimension's units when it has fewer).

    Args:
        units: candidate units.
        n: units per dimension (>= 1).
        seed: the sample seed; the same units and seed always give the same sample.

    Returns:
        The sampled units, sorted by dimension (:data:`DIMENSIONS` order) then review id.

    Raises:
        ValueError: ``n`` < 1.
    """
    if n < 1:
        raise ValueError(f"sample size must be >= 1, got {n}")
    by_dim: dict[str, list[Unit]] = defaultdict(list)
    for u in sorted(set(units)):
        by_dim[u[1]].append(u)
    out: list[Unit] = []
    for dim in DIMENSIONS:
        pool = by_dim.get(dim, [])
        rng = random.Random(f"{seed}:{dim}")
        out.extend(sorted(rng.sample(pool, min(n, len(pool)))))
    return out


def distance(a: int, b: int) -> str | None:
    """The bucket of :data:`DISTANCES` of a disagreement ``a != b`` (None when they agree)."""
    if a == b:
        return None
    if -3 in (a, b):
        return "with_unjudgeable"
    if 0 in (a, b):
        return "with_not_mentioned"
    return DISTANCES[abs(LEVELS.index(a) - LEVELS.index(b)) - 1]


def alpha(pairs: Sequence[tuple[int, int]], level: str) -> float | None:
    """Krippendorff's alpha of two annotators (``krippendorff.alpha``), -3 as missing.

    Args:
        pairs: ``(label_a, label_b)`` per unit.
        level: "ordinal" or "interval".

    Returns:
        alpha in [-1, 1] (rounded to 6 places), or None when it is undefined (no pairable unit, or one value only).
    """
    import krippendorff

    data = np.array([[np.nan if x == -3 else x for x in col] for col in zip(*pairs)], dtype=float) if pairs else None
    if data is None or not np.isfinite(data).all(axis=0).any():
        return None
    pairable = data[:, np.isfinite(data).all(axis=0)]
    if len(np.unique(pairable)) < 2:
        return None
    kwargs = {"value_domain": list(ALPHA_VALUES)} if level == "ordinal" else {}
    value = float(krippendorff.alpha(reliability_data=data, level_of_measurement=level, **kwargs))
    return None if math.isnan(value) else round(value, 6)


def _stats(pairs: Sequence[tuple[int, int]]) -> dict[str, Any]:
    n = len(pairs)
    dis = sum(a != b for a, b in pairs)
    buckets = {k: 0 for k in DISTANCES}
    for a, b in pairs:
        d = distance(a, b)
        if d:
            buckets[d] += 1
    differences = {str(k): 0 for k in (1, 2, 3, 4)}
    for a, b in pairs:
        if a != b and a in LEVELS and b in LEVELS:
            differences[str(abs(a - b))] += 1
    return {"units": n, "disagreements": dis, "rate": round(dis / n, 6) if n else None,
            "alpha_ordinal": alpha(pairs, "ordinal"), "alpha_interval": alpha(pairs, "interval"),
            "distance": buckets, "score_difference": differences}


def _confusion(pairs: Sequence[tuple[int, int]]) -> dict[str, dict[str, int]]:
    out = {label_name(a): {label_name(b): 0 for b in LABELS} for a in LABELS}
    for a, b in pairs:
        out[label_name(a)][label_name(b)] += 1
    return out


def _bootstrap(pairs: Sequence[tuple[int, int]], n_boot: int, rng: np.random.Generator) -> dict[str, Any]:
    if len(pairs) < 2 or n_boot < 1:
        return {"n_boot": 0}
    values: dict[str, list[float]] = {"rate": [], "alpha_ordinal": [], "alpha_interval": []}
    arr = list(pairs)
    for _ in range(n_boot):
        sample = [arr[i] for i in rng.integers(0, len(arr), len(arr))]
        values["rate"].append(sum(a != b for a, b in sample) / len(sample))
        for level in ("ordinal", "interval"):
            v = alpha(sample, level)
            if v is not None:
                values[f"alpha_{level}"].append(v)
    out: dict[str, Any] = {"n_boot": n_boot}
    for key, vals in values.items():
        out[key] = ([round(float(np.percentile(vals, 2.5)), 4), round(float(np.percentile(vals, 97.5)), 4)]
                    if vals else None)
        out[f"{key}_resamples_defined"] = len(vals)
    return out


def agreement_table(pairs: dict[str, Sequence[tuple[int, int]]], *, n_boot: int = 1000, seed: int = 0
                    ) -> dict[str, Any]:
    """The Table 5 figures for one pair of annotators.

    Args:
        pairs: ``{dimension: [(label_a, label_b), ...]}``, labels in :data:`LABELS`.
        n_boot: bootstrap resamples per row (0 = no intervals).
        seed: bootstrap seed.

    Returns:
        ``{"rows": {dim | "overall": {units, disagreements, rate, alpha_ordinal, alpha_interval, distance,
        confusion, ci}}, "rules": RULES, "overall_is": OVERALL_IS}``; overall pools every dimension's units
        (one alpha over all pairs, not a mean of the dimensions' alphas). An undefined alpha is None.

    Raises:
        ValueError: a label outside :data:`LABELS` (dimension and position named).
    """
    rng = np.random.default_rng(seed)
    rows: dict[str, Any] = {}
    pooled: list[tuple[int, int]] = []
    for dim in [d for d in DIMENSIONS if d in pairs] + sorted(set(pairs) - set(DIMENSIONS)):
        items = [(int(a), int(b)) for a, b in pairs[dim]]
        for i, (a, b) in enumerate(items):
            if a not in LABELS or b not in LABELS:
                raise ValueError(f"{dim}: unit {i}: labels ({a}, {b}) outside {list(LABELS)}")
        pooled.extend(items)
        rows[dim] = {**_stats(items), "confusion": _confusion(items), "ci": _bootstrap(items, n_boot, rng)}
    rows["overall"] = {**_stats(pooled), "confusion": _confusion(pooled), "ci": _bootstrap(pooled, n_boot, rng)}
    return {"rows": rows, "rules": RULES, "overall_is": OVERALL_IS}


#: What the "overall" row of :func:`agreement_table` is (in the JSON and, shortened, in the markdown).
OVERALL_IS = "pooled over dimensions: one figure over every dimension's units together, not a mean of the rows"
#: Why a unit is left out of the LLM-vs-human comparison (:func:`llm_vs_human`), in report order.
LEFT_OUT_REASONS: tuple[str, ...] = ("annotators_disagree_no_third_decision", "no_human_label", "no_llm_label")


def llm_vs_human(machine: dict[Unit, int], finals: dict[Unit, dict[str, Any]]
                 ) -> tuple[dict[str, list[tuple[int, int]]], dict[str, Any]]:
    """The LLM-vs-human pairs and which units they cover.

    Args:
        machine: ``{unit: LLM label}``.
        finals: :func:`~surveyalign.annotation.adjudicate.final_labels` of the human records (``label`` None when
            the annotators disagree and no third decision exists).

    Returns:
        ``(pairs, scope)``: ``pairs`` as :func:`pair_labels` over the units with both an LLM label and a final
        human label; ``scope = {"compares", "units_compared", "left_out": {reason: n}, "left_out_units":
        {reason: [[review_id, dimension], ...]}}`` with reasons :data:`LEFT_OUT_REASONS`.
    """
    reference = {u: f["label"] for u, f in finals.items() if f["label"] is not None}
    left: dict[str, list[Unit]] = {r: [] for r in LEFT_OUT_REASONS}
    for u in sorted(set(machine) | set(finals)):
        if u in machine and u in reference:
            continue
        if u not in machine:
            left["no_llm_label"].append(u)
        elif u in finals:
            left["annotators_disagree_no_third_decision"].append(u)
        else:
            left["no_human_label"].append(u)
    pairs = pair_labels(machine, reference)
    scope = {"compares": "the LLM's label against the final human label (annotators agreed, a single annotator, "
                         "or a third decision)",
             "units_compared": sum(len(v) for v in pairs.values()),
             "left_out": {r: len(v) for r, v in left.items()},
             "left_out_units": {r: [list(u) for u in v] for r, v in left.items()}}
    return pairs, scope


def pair_labels(a: dict[Unit, int], b: dict[Unit, int], units: Iterable[Unit] | None = None
                ) -> dict[str, list[tuple[int, int]]]:
    """``{dimension: [(a, b)]}`` over the units both label (restricted to ``units`` when given), in unit order."""
    keys = sorted(set(a) & set(b) if units is None else [u for u in units if u in a and u in b])
    out: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for u in keys:
        out[u[1]].append((a[u], b[u]))
    return dict(out)


def _row_name(name: str) -> str:
    return "Overall (pooled over dimensions)" if name == "overall" else name.capitalize()


def render_table(table: dict[str, Any], title: str) -> str:
    """A markdown table in the shape of Table 5, with intervals and distances."""

    def fmt(v: Any, pct: bool = False) -> str:
        if v is None:
            return "n/a"
        return f"{100 * v:.2f}%" if pct else f"{v:.4f}"

    def ci(row: dict[str, Any], key: str, pct: bool = False) -> str:
        iv = row["ci"].get(key)
        return f" [{fmt(iv[0], pct)}, {fmt(iv[1], pct)}]" if iv else ""

    lines = [f"### {title}", ""]
    scope = table.get("scope")
    if scope:
        out = ", ".join(f"{n} {r.replace('_', ' ')}" for r, n in scope["left_out"].items() if n) or "none"
        lines += [f"Compares {scope['compares']}: {scope['units_compared']} units; left out: {out}.", ""]
    lines += [("| Dimension | Units | Disagr. | Rate | KP-alpha ordinal | KP-alpha interval | "
             "1 level | 2 levels | 3 levels | with 0 | with -3 |"), "|" + " --- |" * 11]
    for name, row in table["rows"].items():
        d = row["distance"]
        lines.append(f"| {_row_name(name)} | {row['units']} | {row['disagreements']} | {fmt(row['rate'], True)}"
                     f"{ci(row, 'rate', True)} | {fmt(row['alpha_ordinal'])}{ci(row, 'alpha_ordinal')} | "
                     f"{fmt(row['alpha_interval'])}{ci(row, 'alpha_interval')} | {d['one_level']} | {d['two_levels']} "
                     f"| {d['three_levels']} | {d['with_not_mentioned']} | {d['with_unjudgeable']} |")
    return "\n".join(lines) + "\n"


def render_confusion(table: dict[str, Any], title: str) -> str:
    """The confusion matrices of a table (per dimension and overall) as markdown: rows are the first annotation's
    labels (the first human, or the LLM), columns the second's (the second human, or the final human label), over
    the six labels -3, -2, -1, 0, +1, +2."""
    names = [label_name(x) for x in LABELS]
    lines = [f"#### {title}: confusion matrices (rows: first, columns: second)", ""]
    for row_name, row in table["rows"].items():
        lines += [f"{_row_name(row_name)}:", "", "| first \\ second | " + " | ".join(names) + " |",
                  "|" + " --- |" * (len(names) + 1)]
        lines += [f"| {a} | " + " | ".join(str(row["confusion"][a][b]) for b in names) + " |" for a in names]
        lines.append("")
    return "\n".join(lines)

"""Tables of the human-agreement ceiling (``surveyalign report --ceiling``): one ceiling result per dimension
(:func:`render_ceiling`), and several results side by side (:func:`render_ceiling_comparison`); the numbers come
from :mod:`surveyalign.scoring.ceiling`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.table import Table

from surveyalign.scoring.bootstrap import INSUFFICIENT_DATA
from surveyalign.scoring.cells import _DASH, _SHORT, _ci, _f


def render_ceiling(ceiling: Mapping[str, Any]) -> Table:
    """The human ceiling of :func:`~surveyalign.scoring.ceiling.human_ceiling` per dimension, with 95% CIs.

    Args:
        ceiling: the ceiling dict (``per_dimension`` with n, n_pairs, n_groups, mse, mae, qwk,
            krippendorff_alpha and ``ci``; ``avg_mse``/``avg_mae`` with the top-level ``ci``).

    Returns:
        A rich Table: Dimension, units, pairs, papers x dimension groups, MSE, MAE, QWK, Kripp. alpha (each
        "value [lo, hi]"), then an AVG row; the caption gives the papers, the units without another review and
        the excluded scores, or "insufficient data".
    """
    table = Table(title=f"Human ceiling: each review against every other review of the same paper and dimension "
                        f"({ceiling['n']} units, {ceiling['n_papers']} papers)")
    for name in ("Dim.", "units", "pairs", "groups", "MSE", "MAE", "QWK", "Kripp. α"):
        table.add_column(name, justify="left" if name == "Dim." else "right")
    for d, e in (ceiling.get("per_dimension") or {}).items():
        ci = e.get("ci") or {}
        table.add_row(_SHORT.get(d, d), str(e["n"]), str(e["n_pairs"]), str(e["n_groups"]),
                      *[_ci(e.get(k), ci.get(k)) for k in ("mse", "mae", "qwk", "krippendorff_alpha")])
    ci = ceiling.get("ci") or {}
    table.add_row("AVG", str(ceiling["n"]), str(ceiling["n_pairs"]), str(ceiling["n_groups"]),
                  _ci(ceiling.get("avg_mse"), ci.get("avg_mse")), _ci(ceiling.get("avg_mae"), ci.get("avg_mae")),
                  _DASH, _DASH)
    notes = [f"{ceiling['n_single']} units have no other review of their paper and dimension (not in the ceiling)"]
    if ceiling.get("n_excluded"):
        notes.append(f"{ceiling['n_excluded']} scores outside {{-2,-1,1,2}} left out")
    if ceiling.get("insufficient"):
        notes.append(str(ceiling["insufficient"]))
    if ceiling.get("source"):
        notes.append(f"reviews from {ceiling['source']}")
    table.caption = "; ".join(notes)
    return table


def render_ceiling_comparison(results: Mapping[str, Mapping[str, Any]]) -> Table:
    """Each judge against the human ceiling on the same units (:func:`~surveyalign.scoring.ceiling.compare_to_ceiling`).

    Args:
        results: ``{judge name: compare_to_ceiling output}``.

    Returns:
        A rich Table, one row per (judge, metric): units, papers, judge, another reviewer, judge - reviewer,
        95% CI, p and the verdict ("below the ceiling", "within the ceiling", "beyond the ceiling" or
        "insufficient data").
    """
    table = Table(title="Judge against the human ceiling, paired on the same units (paper-level bootstrap)")
    for name in ("Judge", "Metric", "units", "papers", "judge", "another reviewer", "judge - reviewer", "95% CI",
                 "p", "verdict"):
        table.add_column(name, justify="left" if name in ("Judge", "Metric", "verdict") else "right")
    notes: set[str] = set()
    for judge, res in results.items():
        for key, m in res["metrics"].items():
            ci = m.get("ci95")
            ci_text = INSUFFICIENT_DATA if m.get("insufficient") else (
                f"[{ci[0]:.3f}, {ci[1]:.3f}]" if ci else _DASH)
            table.add_row(str(judge), key, str(res["n_units"]), str(res["n_papers"]), _f(m["judge"], 3),
                          _f(m["ceiling"], 3), _f(m["diff"], 3), ci_text, _f(m.get("p_value"), 3), m["verdict"])
            if m.get("insufficient"):
                notes.add(str(m["insufficient"]))
        if res.get("n_unmatched"):
            notes.add(f"{judge}: {res['n_unmatched']} scored units have no other review (left out)")
    table.caption = "; ".join(["lower is better; below = the judge errs more than another reviewer", *sorted(notes)])
    return table

"""Dataset statistics in the shape of SurveyReview Table 6 (App. B) plus per-source counts (§4.4)."""

from __future__ import annotations

import math
import os
from collections import Counter
from typing import Any

from surveyalign.constants import DIMENSIONS, SOURCES, SPLITS, VALID_SCORES


def dataset_stats(path: str | os.PathLike) -> dict[str, Any]:
    """Per-dimension statistics of a built dataset folder (all splits together and per split).

    Args:
        path: folder written by :func:`surveyalign.data.build_dataset`.

    Returns:
        ``{"dimensions": {dim: {"n", "distribution" {score: count}, "mean", "std", "avg_rationales",
        "per_split" {split: n}, "n_without_text"}}, "overall": {...same keys...}, "per_source": {source:
        {"papers", "reviews", "units"}}}``. ``n_without_text`` counts units kept with an empty survey text
        (the evaluation harness marks them ``missing_text``; training leaves them out). ``std`` is the population standard deviation (ddof=0); means and stds are
        None for an empty dimension.
    """
    from .load import load_surveyreview

    dims: dict[str, Any] = {}
    all_scores: list[int] = []
    all_r: list[int] = []
    per_source: dict[str, dict[str, set | int]] = {}
    for dim in DIMENSIONS:
        dd = load_surveyreview(path, dim)
        scores: list[int] = []
        n_r: list[int] = []
        per_split = {}
        without_text = 0
        for split in SPLITS:
            ds = dd[split]
            per_split[split] = len(ds)
            cols = ds.select_columns(["score", "rationales", "source", "paper_id", "review_id"]).to_dict()
            without_text += sum(1 for t in ds["text"] if not t)
            scores += cols["score"]
            n_r += [len(r) for r in cols["rationales"]]
            for src, paper, review in zip(cols["source"], cols["paper_id"], cols["review_id"]):
                entry = per_source.setdefault(src, {"papers": set(), "reviews": set(), "units": 0})
                entry["papers"].add(paper)
                entry["reviews"].add(review)
                entry["units"] += 1
        dims[dim] = _summary(scores, n_r)
        dims[dim]["per_split"] = per_split
        dims[dim]["n_without_text"] = without_text
        all_scores += scores
        all_r += n_r
    ordered = [s for s in SOURCES if s in per_source] + sorted(set(per_source) - set(SOURCES))
    overall = _summary(all_scores, all_r)
    overall["n_without_text"] = sum(d["n_without_text"] for d in dims.values())
    return {
        "dimensions": dims,
        "overall": overall,
        "per_source": {
            s: {"papers": len(per_source[s]["papers"]), "reviews": len(per_source[s]["reviews"]),
                "units": per_source[s]["units"]}
            for s in ordered
        },
    }


def _summary(scores: list[int], n_r: list[int]) -> dict[str, Any]:
    n = len(scores)
    counts = Counter(scores)
    mean = sum(scores) / n if n else None
    std = math.sqrt(sum((s - mean) ** 2 for s in scores) / n) if n else None
    return {
        "n": n,
        "distribution": {str(s): counts.get(s, 0) for s in VALID_SCORES},
        "mean": mean,
        "std": std,
        "avg_rationales": sum(n_r) / n if n else None,
    }


def render_stats(stats: dict[str, Any]):
    """Rich tables of :func:`dataset_stats`: Table 6 shape (with the score distribution) and per-source counts.

    Fits an 80-column terminal: score counts per value, mean, population std, average rationale snippets
    (avg R) and units per split as train/validation/test ("tr/va/te").

    Returns:
        ``rich.console.Group`` of two ``rich.table.Table``.
    """
    from rich import box
    from rich.console import Group
    from rich.table import Table

    def fmt(x: float | None) -> str:
        return "-" if x is None else f"{x:+.2f}"

    table = Table(title="Units per dimension (SurveyReview Table 6 shape)", box=box.SIMPLE_HEAD, pad_edge=False)
    for col in ("dimension", "n", *(f"{int(s):+d}" for s in VALID_SCORES), "mean", "std", "avg R",
                "tr/va/te"):
        table.add_column(col, justify="left" if col == "dimension" else "right", no_wrap=True)

    def row(name: str, s: dict[str, Any], splits: list[int], **kw) -> None:
        table.add_row(
            name, str(s["n"]), *(str(s["distribution"][str(v)]) for v in VALID_SCORES),
            fmt(s["mean"]), "-" if s["std"] is None else f"{s['std']:.2f}",
            "-" if s["avg_rationales"] is None else f"{s['avg_rationales']:.2f}",
            "/".join(str(n) for n in splits), **kw,
        )

    for dim, s in stats["dimensions"].items():
        row(dim, s, [s["per_split"][x] for x in SPLITS])
    row("all", stats["overall"], [sum(d["per_split"][x] for d in stats["dimensions"].values()) for x in SPLITS],
        style="bold")
    missing = stats["overall"].get("n_without_text", 0)
    if missing:
        per_dim = ", ".join(f"{d} {s['n_without_text']}" for d, s in stats["dimensions"].items() if s["n_without_text"])
        table.caption = (f"{missing} units have no survey text ({per_dim}): evaluation marks them missing_text, "
                         "training leaves them out; see build_report.json")
    sources = Table(title="Per source", box=box.SIMPLE_HEAD)
    for col in ("source", "papers", "reviews", "units"):
        sources.add_column(col, justify="left" if col == "source" else "right")
    for src, c in stats["per_source"].items():
        sources.add_row(src, str(c["papers"]), str(c["reviews"]), str(c["units"]))
    return Group(table, sources)

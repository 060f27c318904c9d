"""``surveyalign rewards report LOG``: the reward log per step, as a table and an HTML page with plots.

Per step: completions, mean reward and mean value per dimension (over the completions that got one), Spearman's
correlation of the judge's reward with completion length, flags by kind, penalized completions, failed judgments
(reward ``None``), and the held-out divergence (mean absolute difference between the training judge's and the
held-out judge's rewards on the re-scored sample).
"""

from __future__ import annotations

import base64
import html
import io
import json
import os
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from surveyalign.rewards._checks import spearman
from surveyalign.rewards._config import FLAG_KINDS

__all__ = ["format_reward_report", "read_reward_log", "reward_report_html", "summarize_reward_log"]


def read_reward_log(path: str | os.PathLike) -> list[dict[str, Any]]:
    """Read a reward log (JSONL written by :class:`~surveyalign.rewards.SurveyAlignReward`).

    Raises:
        FileNotFoundError: no such file.
        ValueError: a line that is not a JSON object with a ``kind``, naming the file and line.
    """
    records = []
    with Path(path).open(encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except ValueError as err:
                raise ValueError(f"{path}: line {n}: not JSON ({err})") from None
            if not isinstance(record, dict) or "kind" not in record:
                raise ValueError(f"{path}: line {n}: a reward record is a JSON object with a 'kind' field")
            records.append(record)
    return records


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def summarize_reward_log(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Per-step summary of a reward log.

    Args:
        records: the log's records (:func:`read_reward_log`).

    Returns:
        ``{"dimensions": [...], "steps": [row, ...], "total": row}``; a row has ``step``, ``completions``,
        ``mean_reward`` (over rewards not ``None``), ``mean_judge_reward``, ``dimensions`` (``{dim: mean value}``),
        ``length_spearman`` (judge reward vs length, ``None`` under 3 pairs or constant), ``mean_length``,
        ``flags`` (``{kind: count}``), ``flagged``, ``penalized``, ``failed`` (reward ``None``), ``heldout_n``,
        ``heldout_divergence`` (mean |reward - held-out reward| over pairs with both) and ``heldout_failed``.
    """
    config = next((r for r in records if r["kind"] == "config"), {})
    completions = [r for r in records if r["kind"] == "completion"]
    heldout = [r for r in records if r["kind"] == "heldout"]
    dims = list(config.get("dimensions") or dict.fromkeys(d for r in completions for d in r.get("scores", {})))
    by_step: dict[Any, list[dict[str, Any]]] = defaultdict(list)
    held_by_step: dict[Any, list[dict[str, Any]]] = defaultdict(list)
    for r in completions:
        by_step[r["step"]].append(r)
    for r in heldout:
        held_by_step[r["step"]].append(r)

    def row(step: Any, rows: list[dict[str, Any]], held: list[dict[str, Any]]) -> dict[str, Any]:
        judged = [r for r in rows if r.get("judge_reward") is not None]
        pairs = [(r["reward"], r["heldout"]) for r in held if r.get("reward") is not None and r.get("heldout") is not None]
        flags = {kind: sum(kind in (r.get("flags") or {}) for r in rows) for kind in FLAG_KINDS}
        return {
            "step": step,
            "completions": len(rows),
            "mean_reward": _mean([r["reward"] for r in rows if r.get("reward") is not None]),
            "mean_judge_reward": _mean([r["judge_reward"] for r in judged]),
            "dimensions": {d: _mean([r["scores"][d] for r in rows if (r.get("scores") or {}).get(d) is not None])
                           for d in dims},
            "length_spearman": spearman([r["length"] for r in judged], [r["judge_reward"] for r in judged]),
            "mean_length": _mean([r["length"] for r in rows]),
            "flags": flags,
            "flagged": sum(bool(r.get("flags")) for r in rows),
            "penalized": sum(bool(r.get("penalized")) for r in rows),
            "failed": sum(r.get("reward") is None for r in rows),
            "heldout_n": len(pairs),
            "heldout_divergence": _mean([abs(a - b) for a, b in pairs]),
            "heldout_failed": sum(r.get("heldout") is None for r in held),
        }

    steps = sorted(set(by_step) | set(held_by_step), key=lambda s: (s is None, s))
    return {"dimensions": dims, "signal": config.get("signal"),
            "steps": [row(s, by_step[s], held_by_step[s]) for s in steps],
            "total": row("all", completions, heldout)}


def _f(value: Any, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def format_reward_report(summary: dict[str, Any]) -> str:
    """The per-step table of :func:`summarize_reward_log` as text (one line per step, then the total)."""
    dims = summary["dimensions"]
    head = (["step", "n", "reward"] + [d[:6] for d in dims]
            + ["len_rho", "flags(inj/rep/deg)", "penalized", "failed", "heldout |d| (n)"])
    lines = [f"signal: {summary.get('signal')}", "  ".join(head)]
    for r in [*summary["steps"], summary["total"]]:
        flags = "/".join(str(r["flags"][k]) for k in FLAG_KINDS)
        cells = ([str(r["step"]), str(r["completions"]), _f(r["mean_reward"])]
                 + [_f(r["dimensions"][d]) for d in dims]
                 + [_f(r["length_spearman"]), flags, str(r["penalized"]), str(r["failed"]),
                    f"{_f(r['heldout_divergence'])} ({r['heldout_n']})"])
        lines.append("  ".join(cells))
    return "\n".join(lines)


def _png(fig: Any) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")
    return base64.b64encode(buf.getvalue()).decode("ascii")


def reward_report_html(records: Sequence[dict[str, Any]], title: str = "SurveyAlign reward log") -> str:
    """A self-contained HTML page of a reward log: the per-step table and plots (mean reward and dimension values
    by step; reward against length; flags, failed and held-out divergence by step), PNGs embedded as ``data:``
    URIs.

    Args:
        records: the log's records.
        title: the page title.

    Returns:
        The HTML text.
    """
    from matplotlib.figure import Figure

    summary = summarize_reward_log(records)
    steps = [r for r in summary["steps"] if r["completions"]]
    xs = [r["step"] for r in steps]
    figures = []
    fig = Figure(figsize=(6, 3.2))
    ax = fig.add_subplot()
    ax.plot(xs, [r["mean_reward"] for r in steps], marker="o", label="reward")
    for d in summary["dimensions"]:
        ax.plot(xs, [r["dimensions"][d] for r in steps], marker=".", linestyle="--", label=d)
    ax.set_xlabel("step")
    ax.set_ylabel("mean")
    ax.legend(fontsize=7)
    figures.append(("Mean reward and dimension values by step", _png(fig)))
    completions = [r for r in records if r["kind"] == "completion" and r.get("judge_reward") is not None]
    fig = Figure(figsize=(6, 3.2))
    ax = fig.add_subplot()
    ax.scatter([r["length"] for r in completions], [r["judge_reward"] for r in completions], s=10,
               c=["tab:red" if r.get("flags") else "tab:blue" for r in completions])
    unit = completions[0]["length_unit"] if completions else "length"
    ax.set_xlabel(f"completion length ({unit})")
    ax.set_ylabel("judge reward")
    figures.append(((f"Judge reward against length (Spearman {_f(summary['total']['length_spearman'])}; red: "
                    f"flagged)"), _png(fig)))
    fig = Figure(figsize=(6, 3.2))
    ax = fig.add_subplot()
    ax.bar(xs, [r["flagged"] for r in steps], label="flagged", alpha=0.6)
    ax.bar(xs, [r["failed"] for r in steps], label="failed", alpha=0.6)
    held = [(r["step"], r["heldout_divergence"]) for r in steps if r["heldout_divergence"] is not None]
    if held:
        ax2 = ax.twinx()
        ax2.plot([h[0] for h in held], [h[1] for h in held], color="black", marker="s", label="held-out |d|")
        ax2.set_ylabel("held-out divergence")
    ax.set_xlabel("step")
    ax.set_ylabel("completions")
    ax.legend(fontsize=7)
    figures.append(("Flagged and failed completions, held-out divergence", _png(fig)))
    table = html.escape(format_reward_report(summary))
    images = "\n".join(f"<h2>{html.escape(t)}</h2><img alt='{html.escape(t)}' src='data:image/png;base64,{png}'>"
                       for t, png in figures)
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
            "<style>body{font-family:sans-serif;margin:2em} pre{background:#f6f6f6;padding:1em}</style></head>"
            f"<body><h1>{html.escape(title)}</h1><pre>{table}</pre>{images}</body></html>")

"""What an evaluation report says about the judge and its reading: the judge that ran and how much of the
surveys it read, for ``metrics.json``, the console report, the leaderboard and the HTML page.

The judge that ran is read from a run's ``run_config.json`` (``backend.per_dimension``: each dimension's backend
``describe()``), so the header names what answered each dimension (a served model or adapter name, a base model
folder with its LoRA adapter) rather than the config's label alone.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rich.table import Table

from surveyalign.backends import backend_capabilities
from surveyalign.documents.reading import reading_summary_text
from surveyalign.scoring.cells import _DASH, _SHORT

__all__ = ["judge_of_run", "judge_ran", "render_reading"]

def _served(kind: Any) -> bool:
    """Whether a backend of ``kind`` names the model a server answers under (an adapter served under its own name
    included): ``serves_adapters_by_name``."""
    return bool(backend_capabilities(kind if isinstance(kind, str) else None).serves_adapters_by_name)


def _answered_by(desc: Mapping[str, Any]) -> tuple[str, str | None]:
    """``(base, adapter)`` of one dimension's backend description."""
    kind = str(desc.get("backend") or "unknown")
    if _served(kind):
        return f"served model {desc.get('model')}", None
    if not backend_capabilities(kind).answers_from_model:
        return f"{kind} baseline", None
    adapter = desc.get("adapter") or desc.get("adapter_name")
    return str(desc.get("model")), (str(adapter) if adapter else None)


def judge_ran(run_config: Mapping[str, Any]) -> dict[str, Any]:
    """The judge that ran in an evaluation run, per dimension, and one sentence for a report header.

    Args:
        run_config: a run's ``run_config.json`` content (``name``, ``backend.kind``, ``backend.per_dimension``:
            {dimension: backend ``describe()``}).

    Returns:
        ``{"name", "backend", "per_dimension": {dim: {"backend", "model", "adapter", "base_url"}}, "line"}``; e.g.
        ``line`` = ``"Judge j (transformers, base /m/qwen; adapters: comprehensiveness=/a/comp, ...)"`` or
        ``"Judge j (openai at http://h:8000/v1; served models: comprehensiveness=comp-lora, ...)"`` or, with no
        adapter, ``"Judge j (transformers, base /m/qwen; no adapter: the base model answered every dimension)"``.
    """
    name = run_config.get("name") or "unnamed"
    backend = run_config.get("backend") or {}
    per = backend.get("per_dimension") or {}
    kinds = sorted({str(d.get("backend") or backend.get("kind") or "unknown") for d in per.values()}) \
        or [str(backend.get("kind") or "unknown")]
    dims: dict[str, dict[str, Any]] = {}
    for dim, desc in per.items():
        base, adapter = _answered_by(desc)
        dims[str(dim)] = {"backend": desc.get("backend"), "model": desc.get("model"), "adapter": adapter,
                          "answered_by": base if adapter is None else f"{base} + adapter {adapter}",
                          "base_url": desc.get("base_url")}
    served = {d: str(e["model"]) for d, e in dims.items() if _served(e["backend"])}
    urls = sorted({json.dumps(e["base_url"]) if not isinstance(e["base_url"], str) else e["base_url"]
                   for e in dims.values() if e["base_url"]})
    parts = [", ".join(kinds) + (f" at {', '.join(urls)}" if urls else "")]
    if served:
        models = set(served.values())
        parts.append(f"served model {models.pop()}" if len(models) == 1 and len(served) == len(dims) else
                     "served models: " + ", ".join(f"{d}={m}" for d, m in served.items()))
    local = {d: e for d, e in dims.items() if not _served(e["backend"])}
    if local:
        bases = sorted({_answered_by(per[d])[0] for d in local})
        adapters = {d: e["adapter"] for d, e in local.items() if e["adapter"]}
        text = "base " + ", ".join(bases)
        text += ("; adapters: " + ", ".join(f"{d}={a}" for d, a in adapters.items()) if adapters else
                 "; no adapter: the base model answered every dimension")
        parts.append(text)
    return {"name": name, "backend": kinds[0] if len(kinds) == 1 else kinds, "per_dimension": dims,
            "line": f"Judge {name} ({'; '.join(parts)})"}


def judge_of_run(run_dir: str | Path | None) -> dict[str, Any] | None:
    """:func:`judge_ran` of a run folder's ``run_config.json``; ``None`` when it is absent or unreadable."""
    path = Path(run_dir) / "run_config.json" if run_dir is not None else None
    if path is None or not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return judge_ran(data) if isinstance(data, dict) and data.get("backend") else None


def render_reading(summaries: Mapping[str, Mapping[str, Any]]) -> Table | None:
    """How much of the surveys each judge read, per dimension: units sent, cut, fraction read.

    Args:
        summaries: ``{judge name: summarize_predictions output}`` (its ``reading`` block).

    Returns:
        A table (Judge, Dim., units, sent, cut, median read, least read, tokens read / total), or ``None`` when
        no summary has a ``reading`` block.
    """
    rows = [(judge, s["reading"]) for judge, s in summaries.items() if s.get("reading")]
    if not rows:
        return None
    table = Table(title="How much of each survey the judge read (characters read / survey length)")
    table.add_column("Judge", style="bold", overflow="fold")
    table.add_column("Dim.", no_wrap=True)
    for name in ("units", "sent", "cut", "median read", "least read", "tokens read"):
        table.add_column(name, justify="right")
    for judge, reading in rows:
        for d, e in [*reading["per_dimension"].items(), ("all", reading["all"])]:
            tokens = _DASH if e.get("tokens_total") is None else f"{e['tokens_read']:,}/{e['tokens_total']:,}"
            pct = [_DASH if e.get(k) is None else f"{e[k]:.0%}" for k in ("median_fraction_read", "min_fraction_read")]
            table.add_row(str(judge), _SHORT.get(d, d), str(e["n_units"]), str(e["n_sent"]), str(e["n_cut"]), *pct,
                          tokens, end_section=d == "all")
    table.caption = ("cut: the end of the survey body was left out to fit the judge's length budget; "
                     "least read: the smallest fraction of one survey read. " + "; ".join(
                         f"{j}: {reading_summary_text(r['all'])}" for j, r in rows))
    return table

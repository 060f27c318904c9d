"""The console summary of a run: leaderboard, unit statuses per dimension, calls, length and error notes."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any

from rich.table import Table

from surveyalign.calls import CallCache
from surveyalign.constants import API_ERROR, MISSING_TEXT, SCORED, STATUSES
from surveyalign.documents.reading import reading_summary_text
from surveyalign.evaluation.config import EvalConfig
from surveyalign.scoring import render_leaderboard

__all__ = ["error_notes", "length_notes", "print_summary"]

#: An error text that says a server refused the prompt for its length.
_OVERFLOW = re.compile(r"context|too long|maximum .*length", re.IGNORECASE)


def print_summary(console: Any, config: EvalConfig, metrics: dict[str, Any], predictions: list[dict[str, Any]],
                  counts: dict[str, int], calls: dict[str, Any], rqs_counts: dict[str, int], run_dir: Path, *,
                  prompt_length: dict[str, Any] | None = None) -> None:
    """Print the judge that ran, the leaderboard row, the status table, the call line and the notes on lengths and errors.

    Args:
        console: a ``rich`` console.
        config: the run configuration.
        metrics: the run's ``metrics.json`` content.
        predictions: the prediction records.
        counts: status counts (``surveyalign.constants.count_statuses``).
        calls: call bookkeeping (made, cached, errors, seconds, torn_lines).
        rqs_counts: the RQS stage's counts (empty without the stage).
        run_dir: the run folder.
        prompt_length: the length report of :func:`surveyalign.evaluation.lengths.prepare_units`.
    """
    if metrics.get("judge"):
        console.print(metrics["judge"]["line"], markup=False)
    if config.layout != "app_c":  # a prompt variant: every report says so
        console.print(f"prompt layout: {config.layout} (the survey first; not the App. C order)", markup=False)
    try:
        console.print(render_leaderboard({config.name: metrics}))
    except Exception as err:  # noqa: BLE001 - the status table below is still printed
        console.print(f"[yellow]leaderboard unavailable: {err}[/]")

    table = Table(title=f"{config.name}: unit status ({config.split})")
    table.add_column("dimension")
    for s in STATUSES:
        table.add_column(s, justify="right")
    table.add_column("total", justify="right")
    for dim in config.dimensions:
        c = Counter(p["status"] for p in predictions if p["dimension"] == dim)
        table.add_row(dim, *(str(c.get(s, 0)) for s in STATUSES), str(sum(c.values())))
    table.add_row("all", *(str(counts[s]) for s in STATUSES), str(counts["total"]), style="bold")
    console.print(table)
    line = (f"calls: {calls.get('made', 0)} made ({calls.get('errors', 0)} with errors), "
            f"{calls.get('cached', 0)} reused from calls.jsonl")
    if calls.get("calls_per_s"):
        line += f" [{calls['calls_per_s']:.1f} calls/s over the {calls['made']} made]"
    if calls.get("answers"):  # cached answers reused, failed ones asked again, new ones
        line += "; " + CallCache.counts_line(calls["answers"])
    if calls.get("torn_lines"):
        line += f", {calls['torn_lines']} torn line(s) skipped"
    if rqs_counts:
        line += (f"; RQS: {rqs_counts['scored']}/{rqs_counts['eligible']} rated, "
                 f"{rqs_counts['parse_failed']} parse_failed, {rqs_counts['api_error']} api_error")
    console.print(line)
    reading = metrics.get("reading")
    if reading:  # how much of the surveys the judge read
        console.print("survey read: " + "; ".join(f"{d} {reading_summary_text(e)}"
                                                  for d, e in reading["per_dimension"].items()), markup=False)
    for note in length_notes(prompt_length or {}):
        console.print(note, markup=False)
    for note in error_notes(predictions):
        console.print(note, markup=False)
    n_overflow = sum(1 for p in predictions if p["status"] == API_ERROR and p.get("shortened_tokens", 0) == 0
                     and _OVERFLOW.search(str(p.get("error") or "")))
    if n_overflow:
        console.print(f"{n_overflow} call(s) failed on the prompt length at the server: set `max_length` (CLI "
                      "--max-length) and, for API judges, `tokenizer` (CLI --tokenizer DIR: the served model's "
                      "tokenizer) so survey bodies are cut to fit", markup=False)
    console.print(f"run folder: {run_dir}")


def length_notes(prompt_length: dict[str, Any]) -> list[str]:
    """Summary lines on shortened and too-long prompts (per dimension), from the run's length report.

    Args:
        prompt_length: the report of :func:`surveyalign.evaluation.lengths.prepare_units`.

    Returns:
        Zero, one or two lines.
    """
    per_dim = prompt_length.get("per_dimension") or {}
    notes: list[str] = []
    shortened = {d: e for d, e in per_dim.items() if e.get("n_shortened")}
    if shortened:
        parts = ", ".join(f"{d} {e['n_shortened']}/{e['n_counted']} (max_length={e['max_length']}, "
                          f"{e['removed_tokens']} tokens cut)" for d, e in shortened.items())
        notes.append(f"shortened survey body (prompt + max_new_tokens={prompt_length.get('max_new_tokens')} fitted "
                     f"to max_length): {parts}")
    too_long = {d: e["n_too_long"] for d, e in per_dim.items() if e.get("n_too_long")}
    if too_long:
        notes.append(f"{sum(too_long.values())} unit(s) with a prompt too long to fit (model context or max_length) "
                     f"even with the survey body shortened, no call made (prompt_too_long): "
                     + ", ".join(f"{d} {n}" for d, n in too_long.items())
                     + "; the error texts below say why (max_length, CLI --max-length, sets the token budget)")
    return notes


def error_notes(predictions: list[dict[str, Any]], top: int = 3) -> list[str]:
    """The ``top`` most common error texts of the units that failed, with counts.

    Texts that differ only in their numbers (token counts, ports) are counted together; the first one is shown.

    Args:
        predictions: the prediction records.
        top: how many error texts to list.

    Returns:
        No line when no unit failed; else a heading and up to ``top`` (+1) lines.
    """
    failed = [p for p in predictions if p["status"] not in (SCORED, MISSING_TEXT)]
    if not failed:
        return []
    groups: Counter[str] = Counter()
    shown: dict[str, str] = {}
    for p in failed:
        text = f"{p['status']}: {p.get('error') or 'no error text'}"
        key = re.sub(r"\d+", "N", text)
        groups[key] += 1
        shown.setdefault(key, text if len(text) <= 300 else text[:297] + "...")
    lines = [f"most common errors of the {len(failed)} failed unit(s):"]
    lines += [f"  {n} x {shown[key]}" for key, n in groups.most_common(top)]
    if len(groups) > top:
        lines.append(f"  ... and {len(groups) - top} other error text(s) (see predictions.jsonl `error`)")
    return lines

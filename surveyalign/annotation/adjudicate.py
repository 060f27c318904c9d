"""Final labels from the human annotations, a third person's decisions and (optionally) the LLM (§4.3, App. A.2).

Rules, one recorded per unit (review, dimension) under ``rule``:

* ``agreed``: every annotator gave the same label (two or more annotators); with three or more, any split
  (two against one included) is a disagreement and waits for a third decision.
* ``single_annotator``: one annotator labelled the unit.
* ``third_decision``: the annotators disagreed and ``disagreements.csv`` carries a third person's ``final`` label.
* ``unresolved``: they disagreed and no decision exists yet: left out of the release (counted).
* ``llm_unverified``: no person labelled it and the release was asked to take the LLM's label
  (``allow_llm``); otherwise ``not_annotated`` and left out (counted).

Snippets: those of the annotators whose label is the final one (their Label Studio spans, verbatim by
construction); for ``llm_unverified``, only the LLM snippets verified verbatim in the review (the review's own
span), flagged ones dropped and counted.
"""

from __future__ import annotations

import csv
import os
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from surveyalign.csvcells import escape_row, read_csv_rows

from .records import carry_person_cells, label_name, parse_label

#: Rules of :func:`final_labels`, in report order.
FINAL_RULES: tuple[str, ...] = ("agreed", "single_annotator", "third_decision", "llm_unverified", "unresolved",
                                "not_annotated")
#: Rules whose units go into a release.
RELEASED_RULES: tuple[str, ...] = ("agreed", "single_annotator", "third_decision", "llm_unverified")
DISAGREEMENT_COLUMNS: tuple[str, ...] = ("review_id", "dimension", "labels", "final", "note")

Unit = tuple[str, str]


def _by_unit(records: Iterable[dict[str, Any]]) -> dict[Unit, list[tuple[str, dict[str, Any]]]]:
    out: dict[Unit, list[tuple[str, dict[str, Any]]]] = {}
    for rec in records:
        for dim, value in rec["dimensions"].items():
            who = str(rec.get("annotator", "?"))
            values = out.setdefault((rec["review_id"], dim), [])
            if value.get("label") is not None and all(w != who for w, _ in values):  # one annotator counts once,
                values.append((who, value))  # the first labelling (as agreement.unit_labels)
    out = {u: v for u, v in out.items() if v}
    for values in out.values():
        values.sort(key=lambda x: x[0])
    return out


def disagreements(human: Sequence[dict[str, Any]]) -> list[dict[str, str]]:
    """Rows of ``disagreements.csv``: every unit whose annotators gave different labels, ``final`` left blank."""
    rows = []
    for (rid, dim), values in sorted(_by_unit(human).items()):
        if len({v["label"] for _, v in values}) > 1:
            rows.append({"review_id": rid, "dimension": dim, "final": "", "note": "",
                         "labels": "; ".join(f"{who}={label_name(v['label'])}" for who, v in values)})
    return rows


def merge_disagreements(path: str | os.PathLike, rows: Sequence[dict[str, str]]
                        ) -> tuple[list[dict[str, str]], dict[str, int]]:
    """Carry what the third person wrote in an existing ``disagreements.csv`` into a new run's rows.

    For every unit still listed (matched by ``review_id`` and ``dimension``) the person's cells are kept:
    ``final``, ``note`` and any column the person added; ``labels`` comes from the new run. A row of a unit no
    longer in disagreement whose person cells are filled is kept, unchanged, after the new rows.

    Returns:
        ``(rows to write, {"rows_with_person_cells": n, "kept_not_listed": n})``.

    Raises:
        ValueError: the existing file lacks ``review_id`` / ``dimension`` (file named).
    """
    path = Path(path)
    counts = {"rows_with_person_cells": 0, "kept_not_listed": 0}
    old = read_csv_rows(path) if path.is_file() else []
    if not old:
        return list(rows), counts
    if not {"review_id", "dimension"} <= set(old[0]):
        raise ValueError(f"{path}: needs the columns review_id, dimension to keep what a person wrote in it")
    person = [c for c in old[0] if c and c not in ("review_id", "dimension", "labels")]
    by_unit: dict[Unit, dict[str, str]] = {}
    for row in old:
        by_unit.setdefault(((row["review_id"] or "").strip(), (row["dimension"] or "").strip().lower()), row)
    return carry_person_cells(rows, by_unit, lambda r: (r["review_id"], r["dimension"]), person)


def write_disagreements(path: str | os.PathLike, rows: Sequence[dict[str, str]]) -> None:
    """Write ``disagreements.csv``: the :data:`DISAGREEMENT_COLUMNS`, then any column a person added; a cell a
    spreadsheet would run as a formula is escaped (:func:`surveyalign.csvcells.escape_cell`; undone on read)."""
    extra = [k for r in rows for k in r if k and k not in DISAGREEMENT_COLUMNS]
    columns = list(DISAGREEMENT_COLUMNS) + list(dict.fromkeys(extra))
    with Path(path).open("w", encoding="utf-8", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=columns)
        writer.writeheader()
        writer.writerows(escape_row({k: r.get(k) or "" for k in columns}) for r in rows)


def read_decisions(path: str | os.PathLike) -> dict[Unit, int]:
    """The third person's decisions: rows of ``disagreements.csv`` whose ``final`` is filled.

    Raises:
        FileNotFoundError: no such file.
        ValueError: a ``final`` that is not one of the six labels, or missing columns (file and row named).
    """
    path = Path(path)
    rows = read_csv_rows(path)
    if rows and not {"review_id", "dimension", "final"} <= set(rows[0]):
        raise ValueError(f"{path}: needs the columns review_id, dimension, final")
    out: dict[Unit, int] = {}
    for n, row in enumerate(rows, 2):
        raw = (row.get("final") or "").strip()
        if not raw:
            continue
        label = parse_label(raw)
        if label is None:
            raise ValueError(f"{path}: row {n} ({row['review_id']}, {row['dimension']}): field final {raw!r} is not "
                             f"one of -3, -2, -1, 0, +1, +2")
        out[(row["review_id"].strip(), row["dimension"].strip().lower())] = label
    return out


def final_labels(human: Sequence[dict[str, Any]], llm: Sequence[dict[str, Any]] = (), *,
                 decisions: dict[Unit, int] | None = None, allow_llm: bool = False
                 ) -> tuple[dict[Unit, dict[str, Any]], dict[str, Any]]:
    """Decide the final label of every unit (see the module docstring for the rules).

    Args:
        human: Label Studio import records (one per review and annotator).
        llm: ``annotations.jsonl`` records.
        decisions: ``{(review_id, dimension): label}`` from :func:`read_decisions`.
        allow_llm: take the LLM's label for units no person labelled.

    Returns:
        ``(finals, report)``: ``finals[(review_id, dim)] = {"label": int | None, "rule", "snippets": [str],
        "annotators": [str]}`` for every unit seen (label None for unresolved / not annotated); the report counts
        units per rule and per label, flagged LLM snippets dropped and released units without a snippet.
    """
    decisions = decisions or {}
    humans = _by_unit(human)
    machine = _by_unit(llm)
    finals: dict[Unit, dict[str, Any]] = {}
    counts: Counter = Counter()
    dropped = 0
    for unit in sorted(set(humans) | set(machine)):
        values = humans.get(unit, [])
        if values:
            labels = {v["label"] for _, v in values}
            if len(labels) == 1:
                label, rule = values[0][1]["label"], "agreed" if len(values) > 1 else "single_annotator"
            elif unit in decisions:
                label, rule = decisions[unit], "third_decision"
            else:
                label, rule = None, "unresolved"
            chosen = [(w, v) for w, v in values if v["label"] == label]
            snippets: list[str] = []
            for _, v in chosen:
                for s in v.get("snippets", []):
                    if s["text"] not in snippets:
                        snippets.append(s["text"])
            finals[unit] = {"label": label, "rule": rule, "snippets": snippets if label is not None else [],
                            "annotators": [w for w, _ in values]}
        elif allow_llm:
            _, v = machine[unit][0]
            kept = [s for s in v.get("snippets", []) if s.get("verbatim")]
            dropped += len(v.get("snippets", [])) - len(kept)
            finals[unit] = {"label": v["label"], "rule": "llm_unverified", "annotators": ["llm"],
                            "snippets": [s["span"] if "span" in s else s["text"] for s in kept]}
        else:
            finals[unit] = {"label": None, "rule": "not_annotated", "snippets": [], "annotators": []}
        counts[finals[unit]["rule"]] += 1
    released = [f for f in finals.values() if f["rule"] in RELEASED_RULES]
    report = {"units": len(finals), "rules": {r: counts[r] for r in FINAL_RULES},
              "released_labels": dict(sorted(Counter(label_name(f["label"]) for f in released).items())),
              "llm_snippets_dropped_not_verbatim": dropped,
              "released_nonzero_without_snippet": sum(1 for f in released if f["label"] not in (0, -3)
                                                      and not f["snippets"])}
    return finals, report

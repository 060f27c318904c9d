"""Which model rated the rationales of a run (the RQS judge, SurveyReview §3, App. G), and leaderboard honesty about it.

RQS (and HAS, which weighs it in) depends on the consistency judge: rows rated by different judges are not
comparable. ``surveyalign evaluate`` records the judge as ``rqs_judge`` in ``metrics.json`` and ``run_config.json``
(``{"name", "model", "backend"}``; ``name`` is the RQS config's ``name`` when set, e.g. ``"lexical stand-in"`` for
the demo's offline word-overlap rater, else the backend's model id). Leaderboards show the name of each row's RQS
judge and mark (:data:`RQS_JUDGE_MARK`) the rows whose judge differs from the others', with a note saying so.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from surveyalign.scoring.cells import _DASH

__all__ = ["RQS_JUDGE_MARK", "rqs_judge_marks", "rqs_judge_name", "rqs_judge_of_run"]

#: The footnote mark of a leaderboard row whose RQS judge differs from the other rows'.
RQS_JUDGE_MARK = "‡"


def rqs_judge_name(summary: Mapping[str, Any]) -> str | None:
    """The RQS judge's name of one leaderboard row (its ``rqs_judge`` entry: a dict with ``name`` or a string);
    ``None`` for a row without an RQS stage."""
    entry = summary.get("rqs_judge")
    if isinstance(entry, Mapping):
        entry = entry.get("name") or entry.get("model")
    return str(entry) if entry else None


def rqs_judge_marks(summaries: Mapping[str, Mapping[str, Any]]) -> tuple[dict[str, str], list[str]]:
    """The RQS judge cell of every row and the note when the rows' RQS judges differ.

    Rows whose judge is not the one most rows share are marked with :data:`RQS_JUDGE_MARK` (all rows with a judge
    when no judge is shared by more rows than any other).

    Args:
        summaries: ``{row name: metrics summary}`` (rows without ``rqs_judge`` have no RQS judge).

    Returns:
        ``({row name: "<judge name>" or "<judge name> ‡" or "–"}, notes)``; ``notes`` holds one line when two or
        more RQS judges appear.
    """
    names = {row: rqs_judge_name(s) for row, s in summaries.items()}
    counts = Counter(n for n in names.values() if n)
    cells = {row: n or _DASH for row, n in names.items()}
    if len(counts) <= 1:
        return cells, []
    ranked = counts.most_common()
    shared = ranked[0][0] if ranked[0][1] > ranked[1][1] else None
    for row, name in names.items():
        if name and name != shared:
            cells[row] = f"{name} {RQS_JUDGE_MARK}"
    judges = ", ".join(sorted(counts))
    return cells, [(f"{RQS_JUDGE_MARK} RQS judge differs from the other rows' (RQS judges: {judges}): RQS and HAS are "
                   "not comparable across those rows")]


def rqs_judge_of_run(run_dir: str | Path) -> dict[str, Any] | None:
    """The RQS judge a run folder records (``run_config.json``, else ``metrics.json``: ``rqs_judge``), or ``None``
    (no RQS stage, or a run written before the judge was recorded)."""
    for name in ("run_config.json", "metrics.json"):
        try:
            data = json.loads((Path(run_dir) / name).read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            continue
        if isinstance(data, dict) and isinstance(data.get("rqs_judge"), dict):
            return data["rqs_judge"]
    return None

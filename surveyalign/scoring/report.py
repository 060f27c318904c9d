"""Rich tables of metrics summaries (``surveyalign report``); the run-folder readers are in :mod:`.run_folder`.

Every table takes ``{judge name: summary}`` where a summary is the output of
:func:`~surveyalign.scoring.summary.summarize_predictions` (the content of a run's ``metrics.json``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.table import Table

from surveyalign.constants import DIMENSIONS
from surveyalign.documents.reading import reading_summary_text
from surveyalign.scoring.bootstrap import INSUFFICIENT_DATA
from surveyalign.scoring.ceiling_tables import render_ceiling, render_ceiling_comparison
from surveyalign.scoring.cells import _DASH, _SHORT, _ci, _dims, _f
from surveyalign.scoring.rqs_judge import rqs_judge_marks
from surveyalign.scoring.run_folder import (
    find_train_scores,
    read_predictions,
)
from surveyalign.scoring.weights import weights_note

__all__ = [
    "PARTIAL_AVG_MARK",
    "average_scopes",
    "find_train_scores",
    "read_predictions",
    "render_agreement",
    "render_baselines",
    "render_ceiling",
    "render_ceiling_comparison",
    "render_comparison",
    "render_failures",
    "render_intervals",
    "render_leaderboard",
    "render_per_source",
    "source_scopes",
]


#: Mark on an average taken over fewer dimensions than the board shows (see :func:`average_scopes`).
PARTIAL_AVG_MARK = "†"

#: Summary keys that average over the judge's dimensions (marked when the dimension sets differ).
_AVERAGED = ("avg_mse", "avg_mae", "rqs", "align", "has", "accuracy", "skill_vs_majority")


def average_scopes(summaries: Mapping[str, Mapping[str, Any]]) -> tuple[dict[str, str], list[str]]:
    """Whether each judge's averages (AVG MSE/MAE, RQS, Align, HAS, Skill) cover the same dimensions as the board.

    A judge scored on 1 dimension and another on 4 must not share an unmarked "AVG" column: a judge whose
    dimension set is smaller than the union over all judges gets :data:`PARTIAL_AVG_MARK` on each averaged cell,
    and one note per such judge names its dimensions.

    Args:
        summaries: ``{judge name: summarize_predictions(...) output}`` (their ``per_dimension`` keys are the sets).

    Returns:
        ``(marks, notes)``: judge -> ``""`` or the mark; and the caption lines (empty when every set is the same).
    """
    sets = {j: {d for d in (s.get("per_dimension") or {})} for j, s in summaries.items()}
    union = set().union(*sets.values()) if sets else set()
    marks = {j: PARTIAL_AVG_MARK if dims != union else "" for j, dims in sets.items()}
    notes = [f"{PARTIAL_AVG_MARK} {j}: averages over {len(sets[j])} of {len(union)} dimensions "
             f"({', '.join(_SHORT.get(d, d) for d in DIMENSIONS if d in sets[j]) or 'none'}); not comparable with "
             f"the other rows' averages" for j, m in marks.items() if m]
    return marks, notes


def source_scopes(summaries: Mapping[str, Mapping[str, Any]]) -> tuple[dict[tuple[str, str], str], list[str]]:
    """:func:`average_scopes` for the per-source rows: a (judge, source) row whose averages cover fewer dimensions
    than the table (a source labelled on fewer dimensions) gets :data:`PARTIAL_AVG_MARK` and a note.

    Returns:
        ``(marks, notes)``: ``(judge, source)`` -> ``""`` or the mark; the caption lines.
    """
    rows = {(str(j), str(src)): e for j, s in summaries.items() for src, e in (s.get("per_source") or {}).items()}
    marks, notes = average_scopes({f"{j} / {src}": e for (j, src), e in rows.items()})
    return {(j, src): marks[f"{j} / {src}"] for j, src in rows}, notes


def _marked(summary: Mapping[str, Any], key: str, mark: str) -> str:
    text = _f(summary.get(key))
    return f"{text} {mark}" if mark and key in _AVERAGED and summary.get(key) is not None else text


def _failures(s: Mapping[str, Any]) -> str:
    c = s.get("status_counts") or {}
    short = {"parse_failed": "parse", "api_error": "api", "prompt_too_long": "long", "missing_text": "text",
             "missing": "missing"}
    parts = [f"{short[k]} {c[k]}" for k in short if c.get(k)]
    return " ".join(parts) if parts else "0"


def _ceiling_rows(summaries: Mapping[str, Mapping[str, Any]], ceiling: Mapping[str, Any] | None
                  ) -> dict[str, Mapping[str, Any]]:
    """``{"another reviewer (n=...)": ceiling}``: the given ceiling, else the distinct ones embedded in summaries."""
    found = [ceiling] if ceiling is not None else [s["ceiling"] for s in summaries.values() if s.get("ceiling")]
    out: dict[str, Mapping[str, Any]] = {}
    seen = set()
    for c in found:
        key = (c.get("n"), c.get("avg_mse"), c.get("avg_mae"))
        if key in seen:
            continue
        seen.add(key)
        name = f"{c.get('name', 'another reviewer')} (n={c.get('n')})"
        out[name if name not in out else f"{name} [{len(out) + 1}]"] = c
    return out


def render_leaderboard(summaries: Mapping[str, Mapping[str, Any]],
                       ceiling: Mapping[str, Any] | None = None) -> Table:
    """The main leaderboard: one row per judge (SurveyReview Table 2 layout plus honesty columns).

    Args:
        summaries: ``{judge name: summarize_predictions(...) output}``.

    Returns:
        A ``rich.table.Table`` with columns Judge, "MSE/MAE" of each dimension (only when more than one
        dimension is present; with one, AVG is that dimension), AVG MSE, AVG MAE, RQS, Align, HAS, Acc (exact score
        matches over scored units, the mean of the dimensions' shares; "–" for a summary written before it),
        Skill (1 - AVGMSE / AVGMSE of the majority-class judge on the same units), scored (scored/n),
        failed (counts by status), "RQS judge" (with RQS and a recorded ``rqs_judge``: the model that rated each
        row's rationales, marked ‡ with a caption note where the rows' RQS judges differ:
        :mod:`surveyalign.scoring.rqs_judge`) and, when a summary has a ``reading`` block, "survey read" (units whose survey
        was cut / units sent, median and least fraction read). Missing values show as "–"; a column that is missing for every
        judge (RQS/HAS without consistency scores, Skill without training labels) is left out and the
        caption says why. Judge names fold instead of being cut; a single-dimension board fits 80
        columns; the caption also names the HAS weights of the rows (``weights``). The human ceiling ("another reviewer (n=units)", :mod:`surveyalign.scoring.ceiling`) is the last
        row: ``ceiling`` when given, else every distinct ``ceiling`` embedded in the summaries.
    """
    summaries = {**summaries, **_ceiling_rows(summaries, ceiling)}
    dims = _dims(summaries)
    scope = f" ({dims[0]})" if len(dims) == 1 else ""
    table = Table(title=f"SurveyReview leaderboard{scope}: strict convention, failures counted, never scored",
                  box=None, pad_edge=False, collapse_padding=True, header_style="bold underline")
    width = max([len(str(j)) for j in summaries] + [5])
    table.add_column("Judge", style="bold", overflow="fold", min_width=min(width, 23))
    per_dim = dims if len(dims) > 1 else []
    for d in per_dim:
        table.add_column(f"{_SHORT[d]} MSE/MAE", justify="right")
    avg = "AVG " if per_dim else ""  # with one dimension the averages are that dimension's errors
    values = {
        f"{avg}MSE": "avg_mse", f"{avg}MAE": "avg_mae", "RQS": "rqs", "Align": "align", "HAS": "has",
        "Acc": "accuracy", "Skill": "skill_vs_majority",
    }
    shown = {h: k for h, k in values.items()  # Acc: every summary that computed it (those written before lack it)
             if k in ("avg_mse", "avg_mae", "align") or any(s.get(k) is not None for s in summaries.values())
             or (k == "accuracy" and any(k in s for s in summaries.values()))}
    for name in shown:
        table.add_column(name, justify="right")
    rqs_cells, rqs_notes = rqs_judge_marks(summaries)
    named = "RQS" in shown and any(cell != _DASH for cell in rqs_cells.values())
    if named:  # who rated the rationales; rows rated by another judge marked (not comparable)
        table.add_column("RQS judge", overflow="fold", max_width=12)
    table.add_column("scored", justify="right")
    table.add_column("failed", justify="right", overflow="fold", max_width=8)
    reading = any(s.get("reading") for s in summaries.values())
    if reading:  # how much of the surveys the judge read
        table.add_column("survey read", justify="right", overflow="fold", max_width=16)
    marks, scope_notes = average_scopes(summaries)
    for judge, s in summaries.items():
        per = s.get("per_dimension") or {}
        row = [str(judge)]
        for d in per_dim:
            e = per.get(d) or {}
            row.append(f"{_f(e.get('mse'))}/{_f(e.get('mae'))}")
        row += [_marked(s, k, marks[judge]) for k in shown.values()]
        if named:
            row.append(rqs_cells[judge])
        row += [f"{s.get('n_scored', 0)}/{s.get('n', 0)}", _failures(s)]
        if reading:
            row.append(reading_summary_text(s["reading"]["all"]) if s.get("reading") else _DASH)
        table.add_row(*row)
    notes = sorted({s.get("has_note") for s in summaries.values() if s.get("has_note")})
    if "HAS" not in shown and summaries:
        notes.insert(0, "RQS/HAS columns left out")
    if "Skill" not in shown and summaries:
        if any(s.get("baselines") for s in summaries.values()):
            notes.append("Skill left out: undefined for every judge (no scored units, or the majority baseline "
                          "is perfect on them; see metrics.json)")
        else:
            notes.append("Skill left out: no training labels")
    notes += scope_notes + (rqs_notes if named else [])
    notes += weights_note(summaries)
    if "Acc" in shown:
        notes.append("Acc: share of scored units whose score equals the human score (mean over dimensions)")
    if notes:
        table.caption = "; ".join(notes)
    return table


def render_intervals(summaries: Mapping[str, Mapping[str, Any]]) -> Table:
    """The headline figures of each judge with paper-level bootstrap 95% intervals.

    Columns: Judge, AVG MSE, AVG MAE, RQS, Align, HAS, Skill (each "value [lo, hi]"; "–" when undefined),
    papers. The caption carries the bootstrap method and any few-papers warning.
    """
    table = Table(title="Headline figures with 95% CI (paper-level bootstrap)")
    table.add_column("Judge", style="bold", overflow="fold")
    keys = {"AVG MSE": "avg_mse", "AVG MAE": "avg_mae", "RQS": "rqs", "Align": "align", "HAS": "has",
            "Skill": "skill_vs_majority"}
    for name in [*keys, "papers"]:
        table.add_column(name, justify="right")
    marks, scope_notes = average_scopes(summaries)
    for judge, s in summaries.items():
        ci = s.get("ci") or {}
        if ci.get("insufficient"):  # too few papers: the values, and no interval
            table.add_row(str(judge), *[_marked(s, k, marks[judge]) for k in keys.values()],
                          f"{ci.get('n_papers', _DASH)}\n{INSUFFICIENT_DATA}")
            continue
        table.add_row(str(judge) + (f" {marks[judge]}" if marks[judge] else ""),
                      *[_ci(s.get(k), ci.get(k)) for k in keys.values()], str(ci.get("n_papers", _DASH)))
    methods = {(s.get("ci") or {}).get("method") for s in summaries.values()} - {None}
    notes = sorted({(s.get("ci") or {}).get(k) for s in summaries.values() for k in ("note", "insufficient")} - {None})
    resamples = sorted({(s.get("ci") or {}).get("resamples") for s in summaries.values()} - {None})
    caption = [f"{m}, {', '.join(map(str, resamples))} resamples" for m in methods] or ["no bootstrap (--bootstrap 0)"]
    table.caption = "; ".join(caption + notes + scope_notes)
    return table


def render_agreement(summaries: Mapping[str, Mapping[str, Any]]) -> Table:
    """Chance-corrected agreement per judge and dimension with paper-level bootstrap 95% intervals.

    Columns: Judge, Dimension, n scored, MSE, MAE, macro MAE, QWK, Krippendorff alpha (interval;
    human-human 0.74 in the paper), skill vs majority; one row per (judge, dimension) plus an AVG row.
    """
    table = Table(title="Agreement with human reviewers, 95% CI (paper-level bootstrap)")
    table.add_column("Judge", style="bold", overflow="fold")
    table.add_column("Dim.", no_wrap=True)
    for name in ("scored", "MSE", "MAE", "macro MAE", "QWK", "Kripp. α", "Skill"):
        table.add_column(name, justify="right")
    for judge, s in summaries.items():
        ci = s.get("ci") or {}
        cid = ci.get("per_dimension") or {}
        for d, e in (s.get("per_dimension") or {}).items():
            c = cid.get(d) or {}
            table.add_row(str(judge), _SHORT.get(d, d), f"{e.get('n_scored', 0)}/{e.get('n', 0)}",
                          _ci(e.get("mse"), c.get("mse")), _ci(e.get("mae"), c.get("mae")),
                          _ci(e.get("macro_mae"), c.get("macro_mae")), _ci(e.get("qwk"), c.get("qwk")),
                          _ci(e.get("krippendorff_alpha"), c.get("krippendorff_alpha")),
                          _ci(e.get("skill_vs_majority"), c.get("skill_vs_majority")))
        table.add_row(str(judge), "AVG", f"{s.get('n_scored', 0)}/{s.get('n', 0)}",
                      _ci(s.get("avg_mse"), ci.get("avg_mse")), _ci(s.get("avg_mae"), ci.get("avg_mae")),
                      _DASH, _DASH, _DASH, _ci(s.get("skill_vs_majority"), ci.get("skill_vs_majority")),
                      end_section=True)
    table.caption = ("Kripp. α: interval metric, human-human 0.74 in the paper; QWK on the category ranks; "
                     "Skill = 1 - MSE / MSE of the majority-class judge on the same units")
    return table


def render_voting(summaries: Mapping[str, Mapping[str, Any]]) -> Table | None:
    """Agreement of the K voted samples and calibration of the vote share (SurveyReview App. E), per dimension.

    Columns: Judge, Dimension, units voted, mean vote share, unanimous, unparsed samples, log-prob tie-breaks,
    accuracy, ECE; then the reliability rows (share bin, units, mean share, accuracy) of all dimensions together.

    Returns:
        The table, or ``None`` when no judge voted over several samples.
    """
    rows = [(judge, s["voting"]) for judge, s in summaries.items() if s.get("voting")]
    if not rows:
        return None
    table = Table(title="Vote agreement and calibration of the vote share (K samples per unit)")
    table.add_column("Judge", style="bold", overflow="fold")
    table.add_column("Dim.", no_wrap=True)
    for name in ("voted", "mean share", "unanimous", "unparsed", "ties", "accuracy", "ECE"):
        table.add_column(name, justify="right")
    for judge, voting in rows:
        for d, e in [*voting["per_dimension"].items(), ("all", voting["all"])]:
            table.add_row(str(judge), _SHORT.get(d, d), str(e["n_units"]), _f(e["mean_vote_share"]),
                          _f(e["unanimous"]), str(e["n_unparsed_samples"]), str(e["n_tie_break"]),
                          _f(e["accuracy"]), _f(e["ece"], 3), end_section=d == "all")
        for b in voting["all"]["reliability"]:
            if b["n"]:
                table.add_row(str(judge), f"({b['low']:.1f},{b['high']:.1f}]", str(b["n"]),
                              _f(b["mean_confidence"]), _DASH, _DASH, _DASH, _f(b["accuracy"]), _DASH)
    table.caption = ("share = votes of the winning score / samples that carried a score; ECE over equal-width "
                     "share bins (rows below each judge: the reliability table)")
    return table


def render_per_source(summaries: Mapping[str, Mapping[str, Any]]) -> Table:
    """Source-wise results (SurveyReview Table 7 shape, App. I.1): one row per (judge, review source)
    with papers, scored/n, AVG MSE, AVG MAE, RQS, Align and HAS."""
    table = Table(title="Per review source (Table 7 shape)")
    for name in ("Judge", "Source", "papers", "scored/n", "AVG MSE", "AVG MAE", "RQS", "Align", "HAS"):
        table.add_column(name, justify="left" if name in ("Judge", "Source") else "right")
    marks, notes = source_scopes(summaries)
    for judge, s in summaries.items():
        sources = s.get("per_source") or {}
        for i, (src, e) in enumerate(sources.items()):
            mark = marks[(str(judge), str(src))]
            table.add_row(str(judge), src, str(e.get("n_papers", "")), f"{e.get('n_scored', 0)}/{e.get('n', 0)}",
                          *[_marked(e, k, mark) for k in ("avg_mse", "avg_mae", "rqs", "align", "has")],
                          end_section=i == len(sources) - 1)
    if notes:
        table.caption = "; ".join(notes)
    return table


def render_baselines(summaries: Mapping[str, Mapping[str, Any]]) -> Table:
    """Majority-class and prior-sampling baselines (training labels) next to each judge.

    Rows: each judge, then each distinct baseline (taken from the first summary that has one);
    columns: per-dimension MSE/MAE, AVG MSE/MAE, Align, macro MAE (mean over dimensions).
    """
    dims = _dims(summaries)
    table = Table(title="Judges against training-label baselines (same references)")
    table.add_column("Judge / baseline", style="bold")
    for d in dims:
        table.add_column(f"{_SHORT[d]} MSE", justify="right")
        table.add_column(f"{_SHORT[d]} MAE", justify="right")
    for name in ("AVG MSE", "AVG MAE", "Align", "macro MAE"):
        table.add_column(name, justify="right")

    def add(label: str, entry: Mapping[str, Any]) -> None:
        per = entry.get("per_dimension") or {}
        row = [label]
        for d in dims:
            row += [_f((per.get(d) or {}).get("mse")), _f((per.get(d) or {}).get("mae"))]
        macro = [(per.get(d) or {}).get("macro_mae") for d in dims if (per.get(d) or {}).get("macro_mae") is not None]
        row += [_f(entry.get("avg_mse")), _f(entry.get("avg_mae")), _f(entry.get("align")),
                _f(sum(macro) / len(macro) if macro else None)]
        table.add_row(*row)

    for judge, s in summaries.items():
        add(str(judge), s)
    base = next((s["baselines"] for s in summaries.values() if s.get("baselines")), None)
    if base is None:
        table.caption = "no training labels: baselines unavailable (pass --train-scores FILE)"
        return table
    labels = {d: e.get("label") for d, e in base["majority"]["per_dimension"].items()}
    add("majority class", base["majority"])
    add("prior sampling (expected)", base["prior_sampling"])
    caption = ["majority labels " + ", ".join(f"{_SHORT[d]} {v:+d}" for d, v in labels.items())]
    table.caption = "; ".join(caption + list(base.get("notes") or []))
    return table


def render_failures(summaries: Mapping[str, Mapping[str, Any]]) -> Table:
    """Unit status counts per judge and dimension (SurveyReview §6.1 failures; statuses of ``surveyalign.constants``).

    Args:
        summaries: ``{judge name: summarize_predictions output}``; metrics.json files written before the
            ``n_scored_without_rationale`` count existed show "-" in that column.

    Returns:
        A rich Table, one row per (judge, dimension): n, scored, scored without rationale (the score
        counts; the answer had only a label before its marker), parse failed, API error, prompt too long
        (never sent), missing text, missing (no score in an imported outside evaluator's output).
    """
    table = Table(title="Failures (counted, kept in predictions.jsonl, never scored as 0)")
    for name in ("Judge", "Dimension", "n", "scored", "no rationale", "parse failed", "API error", "prompt too long",
                 "missing text", "missing"):
        table.add_column(name, justify="left" if name in ("Judge", "Dimension") else "right")
    for judge, s in summaries.items():
        for d, e in (s.get("per_dimension") or {}).items():
            bare = e.get("n_scored_without_rationale")
            table.add_row(str(judge), d, str(e.get("n", 0)), str(e.get("n_scored", 0)),
                          _DASH if bare is None else str(bare),
                          str(e.get("n_parse_failed", 0)), str(e.get("n_error", 0)),
                          str(e.get("n_prompt_too_long", 0)), str(e.get("n_missing_text", 0)),
                          str(e.get("n_missing", 0)))
    return table


def render_comparison(result: Mapping[str, Any], name_a: str, name_b: str) -> Table:
    """The paired bootstrap test of :func:`~surveyalign.scoring.bootstrap.paired_bootstrap` as a table.

    Args:
        result: the dict returned by ``paired_bootstrap`` (``n_both_scored``, ``n_papers``, ``resamples``,
            ``metrics`` = {name: {a, b, diff, ci95 ([low, high] or None), p_value, better ("a" | "b" |
            None), lower_is_better}}, optional ``note``). MSE in [0, 16], MAE in [0, 4], HAS <= 1.
        name_a: judge name of run A (first RUN_DIR of ``surveyalign report --compare``).
        name_b: judge name of run B.

    Returns:
        A rich Table, one row per metric: A, B, A - B, 95% CI of the difference, p-value and the judge
        that is better at 95% (or "no difference at 95%").
    """
    table = Table(title=f"Paired bootstrap: A = {name_a}  vs  B = {name_b}  "
                        f"({result['n_both_scored']} units scored by both, {result['n_papers']} papers, "
                        f"{result['resamples']} resamples)")
    for name in ("Metric", "A", "B", "A - B", "95% CI", "p", "better"):
        table.add_column(name, justify="left" if name == "Metric" else "right")
    for key, m in result["metrics"].items():
        ci = m.get("ci95")
        better = {"a": name_a, "b": name_b}.get(m.get("better") or "", "no difference at 95%")
        if m.get("insufficient"):  # no interval, p-value or winner from too little data
            ci_text, p_text, better = INSUFFICIENT_DATA, _DASH, INSUFFICIENT_DATA
        else:
            ci_text, p_text = (f"[{ci[0]:.3f}, {ci[1]:.3f}]" if ci else _DASH), _f(m["p_value"], 3)
        table.add_row(key + (" (lower better)" if m["lower_is_better"] else ""), _f(m["a"], 3), _f(m["b"], 3),
                      _f(m["diff"], 3), ci_text, p_text, better)
    notes = sorted({m.get("insufficient") for m in result["metrics"].values()} - {None})
    if result.get("note") or notes:
        table.caption = "; ".join(([result["note"]] if result.get("note") else []) + notes)
    return table


def render_costs(costs: Mapping[str, Mapping[str, Any] | None]) -> Table | None:
    """Tokens and cost per judge (``metrics.json`` ``harness.cost`` of each run), or ``None`` when no run has them.

    Args:
        costs: ``{judge name: cost summary (surveyalign.calls.summarize_costs + gpu_hours) or None}``.

    Returns:
        A table: one row per run (its total), then one per dimension (``  <dimension>``: the dimension's calls,
        the RQS ratings under ``rqs``) and one per model that answered (``  model <id>``: the judge, the RQS
        judge); columns: calls (of them in provider batches), prompt and completion tokens, cost in USD, USD per
        1,000 units (of the dimension, or of the run), GPU-hours of local engines, the price table's date; ``-``
        where there is no price.
    """
    rows = {name: c for name, c in costs.items() if c}
    if not rows:
        return None
    table = Table(title="Tokens and cost (configs/prices.yaml; GPU-hours for local engines)")
    for col in ("judge", "calls", "batch", "prompt tokens", "completion tokens", "USD", "USD / 1,000 units",
                "GPU-hours", "prices as of"):
        table.add_column(col, justify="left" if col == "judge" else "right")

    def add(label: str, totals: Mapping[str, Any], hours: float | None, as_of: str) -> None:
        cost, per = totals.get("cost_usd"), totals.get("cost_per_1000_units")
        table.add_row(label, str(totals.get("calls", 0)), str(totals.get("batch_calls", 0)),
                      f"{totals.get('prompt_tokens', 0):,}", f"{totals.get('completion_tokens', 0):,}",
                      _DASH if cost is None else f"{cost:,.4f}", _DASH if per is None else f"{per:,.2f}",
                      f"{hours:.4f}" if hours else _DASH, as_of)

    for name, c in rows.items():
        as_of = str((c.get("prices") or {}).get("as_of", _DASH))
        hours = c.get("gpu_hours") or {}
        add(name, c.get("total") or {}, sum(hours.values()), as_of)
        for dim, totals in (c.get("by_dimension") or {}).items():
            add(f"  {dim}", totals, None, as_of)
        for model, totals in (c.get("by_judge") or {}).items():
            add(f"  model {model}", totals, hours.get(model), as_of)
    return table

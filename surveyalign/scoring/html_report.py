"""``surveyalign report RUN... --html OUT.html``: one self-contained page of the evaluation results.

The page holds the leaderboard (per-dimension MSE/MAE, AVG MSE/MAE, RQS, Align, HAS with paper-level bootstrap
95% intervals, Acc (exact score matches), the HAS weights used, and the training-label baselines), per-dimension confusion matrices against the human scores,
score distributions (judge vs human), the per-source table (SurveyReview Table 7 shape), failure counts, the
paired comparison when asked for, the human ceiling, a unit browser (every unit with the judge's score and
rationale beside the human score and rationale snippets, filtered in the page) and each run's provenance. Figures are matplotlib PNGs embedded as base64
``data:`` URIs and the styles are inline, so the page opens without network. Rendered with a jinja2 template
(``surveyalign/resources/templates/report.html.j2``).
"""

from __future__ import annotations

import base64
import io
import json
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import jinja2
from matplotlib.figure import Figure

from surveyalign import __version__
from surveyalign.constants import (
    DIMENSIONS,
    STATUSES,
    VALID_SCORES,
)
from surveyalign.data import row_dimension
from surveyalign.documents.hidden import hidden_section
from surveyalign.documents.reading import reading_summary_text, reading_text
from surveyalign.paths import resource_path
from surveyalign.scoring.bootstrap import INSUFFICIENT_DATA
from surveyalign.scoring.weights import weights_note

__all__ = ["render_html_report", "unit_rows", "write_html_report"]

_TEMPLATES = resource_path("templates")
_DASH = "–"


def _f(value: Any, digits: int = 3) -> str:
    return _DASH if value is None else f"{float(value):.{digits}f}"


def _cell(summary: Mapping[str, Any], key: str) -> dict[str, str | None]:
    ci = summary.get("ci") or {}
    interval = ci.get(key)
    text = None
    if ci.get("insufficient"):
        text = INSUFFICIENT_DATA
    elif interval:
        text = f"[{interval[0]:.3f}, {interval[1]:.3f}]"
    return {"value": _f(summary.get(key)), "ci": text}


def _png(fig: Figure) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")
    return base64.b64encode(buf.getvalue()).decode("ascii")


def confusion_matrices(records: Sequence[Mapping[str, Any]]) -> dict[str, list[list[int]]]:
    """Judge-by-human count tables of the scored units, per dimension.

    Args:
        records: prediction records.

    Returns:
        ``{dimension: matrix}`` in paper order, ``matrix[i][j]`` = units the judge scored
        ``VALID_SCORES[i]`` and the humans ``VALID_SCORES[j]`` (4 x 4 counts).
    """
    index = {float(s): i for i, s in enumerate(VALID_SCORES)}
    out: dict[str, list[list[int]]] = {}
    for r in records:
        if r.get("status") != "scored" or r.get("prediction") is None:
            continue
        dim = r["dimension"]
        matrix = out.setdefault(dim, [[0] * len(VALID_SCORES) for _ in VALID_SCORES])
        matrix[index[float(r["prediction"])]][index[float(r["reference"])]] += 1
    return {d: out[d] for d in DIMENSIONS if d in out}


def _confusion_figure(matrices: Mapping[str, list[list[int]]]) -> str:
    fig = Figure(figsize=(3.2 * len(matrices), 3.0))
    for k, (dim, matrix) in enumerate(matrices.items()):
        ax = fig.add_subplot(1, len(matrices), k + 1)
        ax.imshow(matrix, cmap="Blues")
        for i, row in enumerate(matrix):
            for j, v in enumerate(row):
                ax.text(j, i, str(v), ha="center", va="center", fontsize=9)
        ticks = range(len(VALID_SCORES))
        ax.set_xticks(ticks, [str(s) for s in VALID_SCORES])
        ax.set_yticks(ticks, [str(s) for s in VALID_SCORES])
        ax.set_xlabel("human")
        ax.set_ylabel("judge")
        ax.set_title(dim)
    return _png(fig)


def _distribution_figure(rows: list[dict[str, Any]]) -> str:
    fig = Figure(figsize=(3.2 * len(rows), 2.6))
    x = range(len(VALID_SCORES))
    for k, row in enumerate(rows):
        ax = fig.add_subplot(1, len(rows), k + 1)
        ax.bar([i - 0.2 for i in x], row["human"], width=0.4, label="human")
        ax.bar([i + 0.2 for i in x], row["judge"], width=0.4, label="judge")
        ax.set_xticks(list(x), [str(s) for s in VALID_SCORES])
        ax.set_title(row["dimension"])
        if k == 0:
            ax.legend(fontsize=8)
    return _png(fig)


def _distribution(records: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Per dimension, counts of each score among the human scores of all units and the judge's scored units."""
    index = {float(s): i for i, s in enumerate(VALID_SCORES)}
    human: dict[str, list[int]] = {}
    judge: dict[str, list[int]] = {}
    for r in records:
        dim = r["dimension"]
        human.setdefault(dim, [0] * len(VALID_SCORES))[index[float(r["reference"])]] += 1
        row = judge.setdefault(dim, [0] * len(VALID_SCORES))
        if r.get("status") == "scored" and r.get("prediction") is not None:
            row[index[float(r["prediction"])]] += 1
    return [{"dimension": d, "human": human[d], "judge": judge[d]} for d in DIMENSIONS if d in human]


def _baseline_rows(summaries: Mapping[str, Mapping[str, Any]], dims: list[str]) -> list[dict[str, Any]]:
    """The majority-class and prior-sampling rows of the first summary that has baselines."""
    base = next((s["baselines"] for s in summaries.values() if s.get("baselines")), None)
    if not base:
        return []
    rows = []
    for key, label in (("majority", "baseline: majority class"), ("prior_sampling", "baseline: prior sampling")):
        b = base[key]
        per = b.get("per_dimension") or {}
        rows.append({
            "kind": "baseline", "name": label,
            "dims": {d: {"mse": _f((per.get(d) or {}).get("mse")), "mae": _f((per.get(d) or {}).get("mae"))}
                     for d in dims},
            "avg_mse": {"value": _f(b.get("avg_mse")), "ci": None}, "avg_mae": {"value": _f(b.get("avg_mae")), "ci": None},
            "rqs": {"value": _DASH, "ci": None}, "align": {"value": _f(b.get("align")), "ci": None},
            "has": {"value": _DASH, "ci": None}, "accuracy": {"value": _DASH, "ci": None}, "scored": _DASH,
            "read": _DASH, "rqs_judge": _DASH,
        })
    return rows


def unit_rows(records: Mapping[str, Sequence[Mapping[str, Any]]]) -> list[dict[str, Any]]:
    """Rows of the unit browser: every unit of every judge with the human score and rationale beside the judge's.

    Args:
        records: ``{judge name: prediction records}`` (``unit_id``, ``paper_id``, ``dimension``, ``source``,
            ``status``, ``prediction``, ``reference``, ``rationale``, ``reference_rationales``, ``error``).

    Returns:
        One dict per (judge, unit), in judge then record order: ``judge``, ``unit_id``, ``anchor`` (the row's HTML
        id, ``u-<judge index>-<record index>``), ``paper``, ``dimension``, ``source``, ``status``, ``error``,
        ``prediction`` / ``reference`` (signed text, "–" when not scored), ``diff`` (|judge - human| as text,
        "–" when not scored), ``read`` (how much of the survey the judge read, :func:`reading_text`), ``rationale``, ``rationale_short`` (first 90 characters), ``snippets`` (the human
        rationale sentences) and ``links`` ([{"dimension", "anchor"}] to the same judge's units of the same paper in
        the other dimensions).
    """
    rows: list[dict[str, Any]] = []
    for k, (judge, recs) in enumerate(records.items()):
        by_paper: dict[str, list[tuple[str, str]]] = {}
        start = len(rows)
        for i, r in enumerate(recs or []):
            scored = r.get("status") == "scored" and r.get("prediction") is not None
            dim = row_dimension(r["dimension"])  # report records: the row edge
            rationale = str(r.get("rationale") or "")
            row = {
                "judge": judge, "unit_id": str(r["unit_id"]), "anchor": f"u-{k}-{i}",
                "paper": str(r.get("paper_id") or ""), "dimension": dim,
                "source": str(r.get("source") or "unknown").lower(), "status": str(r.get("status")),
                "error": str(r.get("error") or "") if not scored else "",
                "prediction": f"{int(r['prediction']):+d}" if scored else _DASH,
                "reference": f"{int(r['reference']):+d}",
                "diff": str(abs(int(r["prediction"]) - int(r["reference"]))) if scored else _DASH,
                "rationale": rationale, "rationale_short": rationale[:90] + ("…" if len(rationale) > 90 else ""),
                "snippets": [str(s) for s in (r.get("reference_rationales") or [])],
                "read": reading_text(r.get("read")) if "read" in r else _DASH,
            }
            by_paper.setdefault(row["paper"], []).append((dim, row["anchor"]))
            rows.append(row)
        for row in rows[start:]:
            row["links"] = [{"dimension": d, "anchor": a} for d, a in by_paper.get(row["paper"], [])
                            if a != row["anchor"] and d != row["dimension"]]
    return rows


def _comparison(result: Mapping[str, Any] | None, names: tuple[str, str] | None) -> dict[str, Any] | None:
    if not result or not names:
        return None
    rows = []
    for key, m in result["metrics"].items():
        ci = m.get("ci95")
        if m.get("insufficient"):
            ci_text, p_text, better = INSUFFICIENT_DATA, _DASH, INSUFFICIENT_DATA
        else:
            ci_text = f"[{ci[0]:.3f}, {ci[1]:.3f}]" if ci else _DASH
            p_text = _f(m.get("p_value"))
            better = {"a": names[0], "b": names[1]}.get(m.get("better") or "", "no difference at 95%")
        rows.append({"metric": key, "a": _f(m["a"]), "b": _f(m["b"]), "diff": _f(m["diff"]), "ci": ci_text,
                     "p": p_text, "better": better})
    note = (f"{result['method']}; {result['n_both_scored']} units scored by both judges in {result['n_papers']} "
            f"papers, {result['resamples']} resamples")
    notes = [result.get("note"), *sorted({m.get("insufficient") for m in result["metrics"].values()} - {None})]
    return {"a": names[0], "b": names[1], "rows": rows, "note": "; ".join([note, *[n for n in notes if n]])}


def _provenance_items(run_dir: Path | None, summary: Mapping[str, Any]) -> list[tuple[str, str]]:
    items: list[tuple[str, str]] = []
    if run_dir is not None:
        items.append(("run folder", str(run_dir)))
        cfg_path = run_dir / "run_config.json"
        if cfg_path.is_file():
            try:
                cfg = json.loads(cfg_path.read_text(encoding="utf-8"))
            except json.JSONDecodeError:
                cfg = {"run_config.json": "not valid JSON"}
            for key, value in cfg.items():
                if key == "cost" and isinstance(value, dict) and value.get("total"):
                    from surveyalign.calls.cost import cost_lines

                    items.append(("tokens and cost", " ".join(line.strip() for line in cost_lines(value))))
                    continue
                items.append((str(key), value if isinstance(value, str) else json.dumps(value, sort_keys=True)))
    items.append(("units", f"{summary.get('n_scored', 0)} scored of {summary.get('n', 0)}"))
    return items


def hidden_text_rows(summaries: Mapping[str, Mapping[str, Any]],
                     run_dirs: Mapping[str, Path] | None = None) -> list[dict[str, Any]]:
    """The "hidden text" section of an evaluation report: per judge run, the surveys whose text or title carried
    invisible characters or answer-format tokens (``metrics.json`` ``hidden_text``, from the summary or the run
    folder's metrics.json).

    Returns:
        ``[{"judge", "n_surveys", "lines": [markdown line, ...] (``["none found"]`` when none)}]``.
    """
    rows = []
    for name, summary in summaries.items():
        hidden = summary.get("hidden_text")
        run_dir = (run_dirs or {}).get(name)
        if hidden is None and run_dir is not None and (Path(run_dir) / "metrics.json").is_file():
            try:
                hidden = json.loads((Path(run_dir) / "metrics.json").read_text(encoding="utf-8")).get("hidden_text")
            except json.JSONDecodeError:
                hidden = None
        hidden = hidden or {}
        rows.append({"judge": name, "n_surveys": int(hidden.get("n_surveys") or 0),
                     "lines": hidden_section(hidden.get("surveys"))})
    return rows


def _judge(name: str, summary: Mapping[str, Any], run_dirs: Mapping[str, Path] | None) -> dict[str, Any] | None:
    """The judge that ran: from the run's run_config.json, else the summary's ``judge`` block."""
    from surveyalign.scoring.judge_info import judge_of_run

    return judge_of_run((run_dirs or {}).get(name)) or summary.get("judge")


def render_html_report(
    summaries: Mapping[str, Mapping[str, Any]],
    records: Mapping[str, Sequence[Mapping[str, Any]]],
    *,
    run_dirs: Mapping[str, Path] | None = None,
    comparison: Mapping[str, Any] | None = None,
    compared: tuple[str, str] | None = None,
    ceiling: Mapping[str, Any] | None = None,
    ceiling_comparison: Mapping[str, Mapping[str, Any]] | None = None,
) -> str:
    """The report page as one HTML string (no external resource).

    Args:
        summaries: ``{judge name: summarize_predictions(...) output}`` (or a run's metrics.json).
        records: ``{judge name: prediction records}``; a judge without records gets no confusion matrix or
            distribution (its metrics.json figures still show).
        run_dirs: ``{judge name: run folder}`` for the provenance section (run_config.json is read).
        comparison: output of :func:`surveyalign.scoring.paired_bootstrap`, or None.
        compared: the ``(A, B)`` judge names of ``comparison``.
        ceiling: output of :func:`surveyalign.scoring.ceiling.human_ceiling` (a leaderboard row "another
            reviewer (n=...)", class ``ceiling``), or None.
        ceiling_comparison: ``{judge: compare_to_ceiling output}`` (table ``ceiling-comparison``), or None.

    Returns:
        The HTML text. The header names the judge that ran in each run (``p.judge-line``, :func:`surveyalign.scoring.
        judge_info.judge_ran`). Tables carry ids (``reading``: how much of the surveys each judge read, ``leaderboard``, ``comparison``, ``ceiling-comparison``,
        ``confusion-<k>-<dimension>``, ``distribution-<k>``, ``per-source``, ``failures``, ``units``) and every figure
        is a base64 PNG. The unit browser (``units``, rows from :func:`unit_rows`) filters with an inline script
        (no network): selects ``f-judge``, ``f-dimension``, ``f-status``, ``f-source``, ``f-diff`` (minimum
        |judge - human|), the text box ``f-paper``, the button ``f-clear``; ``unit-count`` says how many are shown.
    """
    from surveyalign.scoring.report import average_scopes, source_scopes

    dims = [d for d in DIMENSIONS if any(d in (s.get("per_dimension") or {}) for s in summaries.values())]
    from surveyalign.scoring.rqs_judge import rqs_judge_marks

    marks, scope_notes = average_scopes(summaries)
    rqs_cells, rqs_notes = rqs_judge_marks(summaries)
    leaderboard = []
    for name, s in summaries.items():
        per = s.get("per_dimension") or {}
        averaged = {key: _cell(s, key) for key in ("avg_mse", "avg_mae", "rqs", "align", "has", "accuracy")}
        if marks[name]:  # averages over fewer dimensions than the board: marked, and named in a note
            averaged = {k: {**v, "value": f"{v['value']} {marks[name]}"} if s.get(k) is not None else v
                        for k, v in averaged.items()}
        leaderboard.append({
            "kind": "judge", "name": name,
            "dims": {d: {"mse": _f((per.get(d) or {}).get("mse")), "mae": _f((per.get(d) or {}).get("mae"))}
                     for d in dims},
            **averaged,
            "scored": f"{s.get('n_scored', 0)}/{s.get('n', 0)}",
            "read": reading_summary_text(s["reading"]["all"]) if s.get("reading") else _DASH,
            "rqs_judge": rqs_cells[name],
        })
    if ceiling is not None:
        per = ceiling.get("per_dimension") or {}
        leaderboard.append({
            "kind": "ceiling", "name": f"{ceiling['name']} (n={ceiling['n']})",
            "dims": {d: {"mse": _f((per.get(d) or {}).get("mse")), "mae": _f((per.get(d) or {}).get("mae"))}
                     for d in dims},
            **{key: _cell(ceiling, key) for key in ("avg_mse", "avg_mae", "align")},
            "rqs": {"value": _DASH, "ci": None}, "has": {"value": _DASH, "ci": None},
            "accuracy": {"value": _DASH, "ci": None},
            "scored": f"{ceiling['n']} units, {ceiling['n_papers']} papers", "read": _DASH, "rqs_judge": _DASH,
        })
    leaderboard += _baseline_rows(summaries, dims)
    notes = sorted({s.get("has_note") for s in summaries.values()} - {None})
    notes += sorted({(s.get("ci") or {}).get(k) for s in summaries.values() for k in ("note", "insufficient")} - {None})
    notes += scope_notes + weights_note(summaries) + rqs_notes
    judges = []
    for k, name in enumerate(summaries):
        recs = records.get(name)
        judge: dict[str, Any] = {"index": k, "name": name, "confusion": [], "distribution": []}
        if recs:
            matrices = confusion_matrices(recs)
            judge["confusion"] = [{"dimension": d, "matrix": m, "n": sum(map(sum, m))} for d, m in matrices.items()]
            if matrices:
                judge["confusion_png"] = _confusion_figure(matrices)
            judge["distribution"] = _distribution(recs)
            if judge["distribution"]:
                judge["distribution_png"] = _distribution_figure(judge["distribution"])
        judges.append(judge)
    source_marks, source_notes = source_scopes(summaries)  # a source with fewer dimensions: its averages marked

    def _source_cell(e: dict[str, Any], key: str, mark: str) -> str:
        return f"{_f(e.get(key))} {mark}" if mark and e.get(key) is not None else _f(e.get(key))

    per_source = [
        {"judge": name, "source": src, "papers": e.get("n_papers", ""), "scored": f"{e.get('n_scored', 0)}/{e.get('n', 0)}",
         **{key: _source_cell(e, key, source_marks[(str(name), str(src))])
            for key in ("avg_mse", "avg_mae", "rqs", "align", "has")}}
        for name, s in summaries.items() for src, e in (s.get("per_source") or {}).items()
    ]
    failures = []
    for name, s in summaries.items():
        counts = s.get("status_counts") or {}
        failures.append({"judge": name, "counts": [counts.get(st, 0) for st in STATUSES],
                         "total": counts.get("total", sum(counts.get(st, 0) for st in STATUSES))})
    voting = [{"judge": name, "rows": [{"dimension": d, **{k: _f(e.get(k)) for k in ("mean_vote_share", "unanimous",
                                                                                    "accuracy", "ece")},
                                        "n_units": e["n_units"], "n_unparsed": e["n_unparsed_samples"],
                                        "n_ties": e["n_tie_break"]}
                                       for d, e in [*s["voting"]["per_dimension"].items(), ("all", s["voting"]["all"])]],
               "reliability": [{**b, "mean": _f(b["mean_confidence"]), "acc": _f(b["accuracy"])}
                               for b in s["voting"]["all"]["reliability"] if b["n"]]}
              for name, s in summaries.items() if s.get("voting")]
    reading = [{"judge": name, "dimension": d, "units": e["n_units"], "sent": e["n_sent"], "cut": e["n_cut"],
                "median": _DASH if e["median_fraction_read"] is None else f"{e['median_fraction_read']:.0%}",
                "least": _DASH if e["min_fraction_read"] is None else f"{e['min_fraction_read']:.0%}",
                "tokens": _DASH if e["tokens_total"] is None else f"{e['tokens_read']:,} of {e['tokens_total']:,}",
                "text": reading_summary_text(e)}
               for name, s in summaries.items() if s.get("reading")
               for d, e in [*s["reading"]["per_dimension"].items(), ("all", s["reading"]["all"])]]
    judge_lines = [{"judge": name, "line": ran["line"]} for name, ran in
                   ((n, _judge(n, s, run_dirs)) for n, s in summaries.items()) if ran]
    units = unit_rows({name: recs for name, recs in records.items() if recs})
    unit_filters = {key: sorted({u[field] for u in units}) for key, field in
                    (("judges", "judge"), ("dimensions", "dimension"), ("statuses", "status"), ("sources", "source"))}
    methods = sorted({f"{(s.get('ci') or {}).get('method')}, {(s.get('ci') or {}).get('resamples')} resamples"
                      for s in summaries.values() if s.get("ci")})
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(_TEMPLATES), autoescape=True,
                             undefined=jinja2.StrictUndefined)
    return env.get_template("report.html.j2").render(
        title="SurveyReview evaluation report: " + ", ".join(summaries),
        generated=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), version=__version__,
        ci_method="; ".join(methods) or "none (--bootstrap 0)", dims=dims, scores=list(VALID_SCORES),
        leaderboard=leaderboard, leaderboard_notes=notes, comparison=_comparison(comparison, compared),
        ceiling_rows=[{"judge": name, "metric": key, "units": res["n_units"], "papers": res["n_papers"],
                       "judge_value": _f(m["judge"]), "ceiling": _f(m["ceiling"]), "diff": _f(m["diff"]),
                       "ci": INSUFFICIENT_DATA if m.get("insufficient") else
                       (f"[{m['ci95'][0]:.3f}, {m['ci95'][1]:.3f}]" if m.get("ci95") else _DASH),
                       "p": _f(m.get("p_value")), "verdict": m["verdict"]}
                      for name, res in (ceiling_comparison or {}).items() for key, m in res["metrics"].items()],
        units=units, unit_filters=unit_filters, reading=reading, judge_lines=judge_lines,
        judges=judges, per_source=per_source, per_source_notes=source_notes, statuses=list(STATUSES), failures=failures, voting=voting,
        provenance=[{"judge": name, "rows": _provenance_items((run_dirs or {}).get(name), s)}
                    for name, s in summaries.items()],
        hidden=hidden_text_rows(summaries, run_dirs),
    )


def write_html_report(path: str | Path, summaries: Mapping[str, Mapping[str, Any]],
                      records: Mapping[str, Sequence[Mapping[str, Any]]], **kwargs: Any) -> Path:
    """Render :func:`render_html_report` and write it to ``path`` (UTF-8; parent folders created).

    Args:
        path: the output ``.html`` file.
        summaries: ``{judge name: summary}``.
        records: ``{judge name: records}``.
        **kwargs: ``run_dirs``, ``comparison``, ``compared`` (see :func:`render_html_report`).

    Returns:
        The written path.
    """
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render_html_report(summaries, records, **kwargs), encoding="utf-8")
    return out

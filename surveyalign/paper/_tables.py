"""The tables stage of ``surveyalign paper``: SurveyReview Tables 2, 3, 4, 7 and 8 from the evaluate stage's runs.

Each table is ``tableN.md`` + ``tableN.json`` in the run folder, and all five are on one self-contained page,
``paper.html``. Nothing is re-judged: every figure is computed from the runs' ``predictions.jsonl`` with the
paper config's HAS weights (SurveyReview §3: A_MSE = 1 - AVGMSE/16, A_MAE = 1 - AVGMAE/4,
Align = a1*A_MSE + a2*A_MAE, HAS = b1*Align + b2*RQS).
"""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

from surveyalign.paper._stages import PaperRun, dimension_order

_SHORT = {"readability": "Read.", "criticalness": "Crit.", "comprehensiveness": "Comp.", "structure": "Stru."}
_MIXED = "†"


def _f(value: Any, digits: int = 2) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def _summary(run: PaperRun, records: list[dict[str, Any]], consistency: bool) -> dict[str, Any]:
    from surveyalign.scoring import summarize_predictions

    return summarize_predictions(records, bootstrap=0, consistency_available=consistency,
                                 alpha=tuple(run.cfg.has.alpha), beta=tuple(run.cfg.has.beta))


def _md_table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def _write(work: Path, number: int, title: str, header: list[str], rows: list[list[str]], data: dict[str, Any],
           notes: list[str]) -> dict[str, Any]:
    md = f"## Table {number}. {title}\n\n{_md_table(header, rows)}\n" + "".join(f"\n{n}\n" for n in notes)
    (work / f"table{number}.md").write_text(md)
    payload = {"table": number, "title": title, "header": header, "rows": rows, "data": data, "notes": notes}
    (work / f"table{number}.json").write_text(json.dumps(payload, indent=2, default=str))
    return payload


def write_tables(run: PaperRun) -> dict[str, Any]:
    """Write Tables 2, 3, 4, 7 and 8 (markdown, JSON) and ``paper.html`` from the evaluate stage's record.

    Returns:
        The stage record: ``{"outputs": [files], "tables": {"2": {row name: {avg_mse, avg_mae, rqs, has, accuracy}}}}``.

    Raises:
        ValueError: the evaluate stage has no record (run it first).
    """
    from surveyalign.scoring import read_predictions

    entry = (run.record.data.get("evaluate") if run.record else None) or {}
    runs: dict[str, Any] = entry.get("runs") or {}
    if not runs:
        raise ValueError(f"{run.work}: the evaluate stage has not finished (no runs recorded)")
    records = {name: read_predictions(r["run_dir"]) for name, r in runs.items()}
    payloads = [_table2(run, runs, records), _table34(run, runs, records, 3), _table34(run, runs, records, 4),
                _table7(run, runs, records), _table8(run, runs, records)]
    _html(run.work, payloads, run.cfg.profile)
    outputs = [str(run.work / f"table{p['table']}.{ext}") for p in payloads for ext in ("md", "json")]
    outputs.append(str(run.work / "paper.html"))
    return {"outputs": outputs, "tables": {"2": {r["name"]: {k: r.get(k) for k in ("avg_mse", "avg_mae", "rqs",
                                                                                        "has", "accuracy")}
                                                 for r in payloads[0]["data"]["rows"]}}}


def _rows(runs: dict[str, Any]) -> list[str]:
    return [n for n, r in runs.items() if r["kind"] in ("surveyalign", "baseline", "prior")]


def _rqs_notes(runs: dict[str, Any], names: list[str]) -> tuple[set[str], list[str]]:
    """Rows whose RQS judge differs from the SurveyAlign row's (marked), and the notes naming the judges."""
    from surveyalign.testing import LEXICAL_RQS_NAME

    judges = {n: runs[n].get("rqs_judge") for n in names if runs[n].get("rqs_judge") is not None}
    reference = judges.get("surveyalign") or next(iter(judges.values()), None)
    marked = {n for n, j in judges.items() if j != reference}
    notes = [f"RQS judge: {reference}." if not marked else
             f"RQS judges differ: {', '.join(f'{n}: {j}' for n, j in judges.items())}; rows marked {_MIXED} are "
             "not comparable on RQS / HAS with the others."]
    if LEXICAL_RQS_NAME in judges.values():
        notes.append("The lexical stand-in rates word overlap; it is not the paper's LLM judge (GPT-5.2, App. G), "
                     "so RQS and HAS here check the plumbing, not rationale quality.")
    return marked, notes


def _table2(run: PaperRun, runs: dict[str, Any], records: dict[str, list]) -> dict[str, Any]:
    dims = dimension_order(sorted({r["dimension"] for n in _rows(runs) for r in records[n]}))
    names = _rows(runs)
    marked, notes = _rqs_notes(runs, names)
    header = ["Method", "Model"] + [f"{_SHORT.get(d, d)} {m}" for d in dims for m in ("MSE", "MAE")] + \
             ["AVG MSE", "AVG MAE", "Acc.", "RQS", "HAS", "scored", "RQS judge"]
    rows, data = [], []
    for name in names:
        s = _summary(run, records[name], consistency=runs[name].get("rqs_judge") is not None)
        per = s.get("per_dimension") or {}
        method = {"surveyalign": "SurveyAlign", "prior": "Prior work"}.get(runs[name]["kind"], "Baseline")
        mark = _MIXED if name in marked else ""
        row = [method, runs[name]["name"]]
        for d in dims:
            row += [_f((per.get(d) or {}).get("mse")), _f((per.get(d) or {}).get("mae"))]
        row += [_f(s.get("avg_mse")), _f(s.get("avg_mae")), _f(s.get("accuracy")), _f(s.get("rqs")) + mark,
                _f(s.get("has")) + mark, f"{s.get('n_scored')}/{s.get('n')}", str(runs[name].get("rqs_judge") or "–")]
        rows.append(row)
        data.append({"run": name, "name": runs[name]["name"], "run_dir": runs[name]["run_dir"],
                     "avg_mse": s.get("avg_mse"), "avg_mae": s.get("avg_mae"), "rqs": s.get("rqs"),
                     "align": s.get("align"), "has": s.get("has"), "accuracy": s.get("accuracy"),
                     "accuracy_per_dimension": {d: (per.get(d) or {}).get("accuracy") for d in dims}, "n": s.get("n"), "n_scored": s.get("n_scored"),
                     "per_dimension": {d: {k: (per.get(d) or {}).get(k) for k in ("mse", "mae", "n", "n_scored", "rq")}
                                       for d in dims},
                     "rqs_judge": runs[name].get("rqs_judge"), "rqs_judge_differs": name in marked})
    notes.append(f"HAS weights: alpha {list(run.cfg.has.alpha)}, beta {list(run.cfg.has.beta)} (Delta_s = 4). "
                 "Acc. = exact score match over scored units, mean over dimensions.")
    return _write(run.work, 2, "Main results (SurveyReview Table 2 shape)", header, rows, {"rows": data}, notes)


def _variant_records(runs: dict[str, Any], records: dict[str, list], variant: Any) -> list[dict] | None:
    for name, r in runs.items():
        if r.get("variant") == variant.name:
            return records[name]
    if "surveyalign" in records:
        return [x for x in records["surveyalign"] if x["dimension"] == variant.dimension]
    return None


def _table34(run: PaperRun, runs: dict[str, Any], records: dict[str, list], number: int) -> dict[str, Any]:
    from surveyalign.scoring import INSUFFICIENT_DATA, paired_bootstrap

    variants = [v for v in run.cfg.variants if v.table == number]
    title = ("Ablation of the Comprehensiveness adapter (SurveyReview Table 3 shape)" if number == 3 else
             "Ablation of the Criticalness adapter (SurveyReview Table 4 shape)")
    header = ["Variant", "MSE", "MAE", "scored", "ΔMSE vs first", "95% CI", "p", "ΔMAE vs first", "95% CI", "p"]
    if not variants:
        return _write(run.work, number, title, header, [], {"rows": []}, ["No variant of this table in the config."])
    base = _variant_records(runs, records, variants[0]) or []
    rows, data = [], []
    for v in variants:
        recs = _variant_records(runs, records, v) or []
        s = _summary(run, recs, consistency=False) if recs else {}
        row = [v.label, _f(s.get("avg_mse")), _f(s.get("avg_mae")), f"{s.get('n_scored', 0)}/{s.get('n', 0)}"]
        comparison = None
        if v is variants[0]:
            row += ["(reference)", "", "", "", "", ""]
        else:
            try:
                comparison = paired_bootstrap(recs, base, n_resamples=max(run.cfg.evaluate.bootstrap, 1),
                                              seed=run.cfg.seed)
            except ValueError as err:
                comparison = {"status": INSUFFICIENT_DATA, "error": str(err), "metrics": {}}
            for key in ("avg_mse", "avg_mae"):
                m = (comparison.get("metrics") or {}).get(key)
                if m is None:
                    row += [INSUFFICIENT_DATA, "", ""]
                else:
                    ci = m.get("ci95")
                    row += [f"{m['diff']:+.2f}", INSUFFICIENT_DATA if ci is None else f"[{ci[0]:+.2f}, {ci[1]:+.2f}]",
                            "–" if m.get("p_value") is None else f"{m['p_value']:.3f}"]
        rows.append(row)
        data.append({"variant": v.model_dump(), "avg_mse": s.get("avg_mse"), "avg_mae": s.get("avg_mae"),
                     "n": s.get("n"), "n_scored": s.get("n_scored"), "paired_vs_first": comparison})
    notes = [(f"Each variant is trained as named (knowledge = on the KA dataset; DPO after SFT) and judged on the same "
             f"{run.cfg.evaluate.split} units; differences are paired on the units both scored (paper-level bootstrap, "
             f"{run.cfg.evaluate.bootstrap} resamples; '{INSUFFICIENT_DATA}' under 10 papers or no spread).")]
    return _write(run.work, number, title, header, rows, {"rows": data}, notes)


def _table7(run: PaperRun, runs: dict[str, Any], records: dict[str, list]) -> dict[str, Any]:
    names = _rows(runs)
    marked, notes = _rqs_notes(runs, names)
    summaries = {n: _summary(run, records[n], consistency=True) for n in names}
    sources = sorted({src for s in summaries.values() for src in (s.get("per_source") or {})})
    header = ["Model", *sources]
    rows, data = [], []
    for n in names:
        per = summaries[n].get("per_source") or {}
        mark = _MIXED if n in marked else ""
        rows.append([runs[n]["name"], *[_f((per.get(src) or {}).get("has")) + mark for src in sources]])
        data.append({"run": n, "name": runs[n]["name"],
                     "per_source": {src: {k: (per.get(src) or {}).get(k) for k in ("has", "align", "rqs", "avg_mse",
                                                                                   "avg_mae", "n", "n_scored")}
                                    for src in sources}})
    return _write(run.work, 7, "Source-wise HAS (SurveyReview Table 7 shape)", header, rows, {"rows": data}, notes)


def _table8(run: PaperRun, runs: dict[str, Any], records: dict[str, list]) -> dict[str, Any]:
    from surveyalign.scoring import has_sensitivity

    names = _rows(runs)
    marked, notes = _rqs_notes(runs, names)
    betas = list(run.cfg.has.table8_betas)
    header = ["Model", "Align", "RQS", *[f"{b:.2f}" for b in betas]]
    rows, data = [], []
    for n in names:
        s = _summary(run, records[n], consistency=True)
        align, rqs = s.get("align"), s.get("rqs")
        by_beta = has_sensitivity(align, rqs, betas) if align is not None and rqs is not None else {}
        values = {f"{b:.2f}": by_beta.get(b) for b in betas}
        mark = _MIXED if n in marked else ""
        rows.append([runs[n]["name"], _f(align), _f(rqs) + mark, *[_f(v) + mark for v in values.values()]])
        data.append({"run": n, "name": runs[n]["name"], "align": align, "rqs": rqs, "has": values})
    notes.append("HAS = (1 - b) * Align + b * RQS for each RQS weight b (SurveyReview App. I.3); Align with alpha "
                 f"{list(run.cfg.has.alpha)}.")
    return _write(run.work, 8, "HAS sensitivity to the RQS weight (SurveyReview Table 8 shape)", header, rows,
                  {"rows": data}, notes)


def _html(work: Path, payloads: list[dict[str, Any]], profile: str) -> None:
    parts = [(f"<!doctype html><html><head><meta charset='utf-8'><title>SurveyReview tables ({html.escape(profile)})"
             "</title><style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;margin:1em 0}"
             "td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}td:first-child,th:first-child"
             "{text-align:left}p.note{color:#555;max-width:60em}</style></head><body>"),
             f"<h1>SurveyReview tables: profile {html.escape(profile)}</h1>"]
    for p in payloads:
        parts.append(f"<h2>Table {p['table']}. {html.escape(p['title'])}</h2><table><tr>"
                     + "".join(f"<th>{html.escape(h)}</th>" for h in p["header"]) + "</tr>")
        for row in p["rows"]:
            parts.append("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in row) + "</tr>")
        parts.append("</table>" + "".join(f"<p class='note'>{html.escape(n)}</p>" for n in p["notes"]))
    parts.append("</body></html>")
    (work / "paper.html").write_text("\n".join(parts))

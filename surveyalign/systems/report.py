"""``systems.md`` and ``systems.html`` of a ``surveyalign systems`` run (from the ``systems.json`` content).

The HTML page is self-contained (inline style, no script, nothing fetched): the systems table, the win rate
against the human reference, one pairwise matrix per measure, the rankings and their Kendall taus, and a
drill-down per topic (``<details id="topic-<name>">``) showing every survey's scores and review beside its
rivals', and for the surveyalign measures whether knowledge augmentation (KA, SurveyReview App. F) was used per
dimension (also listed per survey in ``systems.md``).
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from typing import Any

from surveyalign.scoring import aggregate_cell

__all__ = ["ka_lines", "render_html", "render_markdown"]

_STYLE = ("body{font-family:system-ui,sans-serif;margin:2em;max-width:90em}table{border-collapse:collapse;"
          "font-size:.85em;margin:.5em 0 1.5em}td,th{border:1px solid #ccc;padding:.3em .5em;vertical-align:top}"
          "td{text-align:right}td.text{text-align:left;max-width:28em}th:first-child{text-align:left}"
          "details{margin:.4em 0}summary{cursor:pointer;font-weight:600}.note{color:#666;font-size:.85em}")


def _num(x: Any, digits: int = 3) -> str:
    return "-" if x is None else f"{x:.{digits}f}" if isinstance(x, float) else str(x)


def _ci(ci: Any) -> str:
    return f"[{ci[0]:.3f}, {ci[1]:.3f}]" if ci else "-"




def _ka_dims(knowledge: Mapping[str, Any]) -> str:
    """``"comprehensiveness from graph (2 resolved); criticalness without KA: <note>"``."""
    parts = []
    for dim, ka in knowledge.items():
        if ka.get("used"):
            resolved = f" ({ka['n_resolved']} resolved)" if ka.get("n_resolved") is not None else ""
            parts.append(f"{dim} from {ka.get('source') or 'unknown source'}{resolved}")
        else:
            parts.append(f"{dim} without KA: {ka.get('note') or 'no reason recorded'}")
    return "; ".join(parts)


def ka_lines(detail: Mapping[str, Any] | None) -> list[str]:
    """Whether knowledge augmentation was used for one survey, per measure that records it.

    Args:
        detail: ``systems.json`` ``details["<system>/<topic>"]``: measure label -> that measure's detail (a
            surveyalign measure's holds ``"knowledge"``: dimension -> ``{"used", "source", "note", "n_resolved"}``,
            only for the dimensions whose adapter needs KA or that got it).

    Returns:
        ``"<measure>: comprehensiveness from graph (2 resolved); ..."`` per measure with a KA record; ``[]`` when
        none has one.
    """
    return [f"{label}: {_ka_dims(got['knowledge'])}" for label, got in (detail or {}).items()
            if isinstance(got, Mapping) and got.get("knowledge")]


def _rows(result: Mapping[str, Any]) -> list[str]:
    return [*result["systems"], *([result["reference"]] if result["reference"] else [])]


def _name(result: Mapping[str, Any], row: str) -> str:
    return f"{row} (human reference)" if row == result["reference"] else row


def _pair_cell(p: Mapping[str, Any]) -> str:
    ci = p["ci95"]
    text = f"{_num(p['diff'])}" + (f" [{ci[0]:.3f}, {ci[1]:.3f}]" if ci else "")
    text += f", sign p={p['sign_p']:.4f}" if p["sign_p"] is not None else ""
    return f"{text} (n={p['n_shared']}{'; ' + p['note'] if p['note'] else ''})"


def render_markdown(result: Mapping[str, Any]) -> str:
    """The run as markdown: systems table, side-by-side win rates, pairwise comparisons, rankings and Kendall taus,
    missing and unreadable surveys."""
    cols = result["columns"]
    lines = [f"# Survey writers on {len(result['topics'])} topics: {result['name']}", "",
             ("Mean over topics [topic-level bootstrap 95% CI] (n = topics with a value; missing = written, measure "
              "not computable; absent = topic not written by the system, never imputed)."), "",
             "| system | " + " | ".join(c["label"] for c in cols) + " |", "|---|" + "---|" * len(cols)]
    for row in _rows(result):
        lines.append(f"| {_name(result, row)} | "
                     + " | ".join(aggregate_cell(result["table"][row].get(c["key"])) for c in cols) + " |")
    for label, sxs in result["sxs"].items():
        lines += ["", f"## {label}: side by side against the human reference (rule {sxs['rule']}, order swapped)", "",
                  "| system | win rate | outcomes | failed | position-flip rate |", "|---|---|---|---|---|"]
        for system, s in sxs["systems"].items():
            flips = s["flip_rate"]
            lines.append(f"| {system} | {_num(s['win_rate'])} | "
                         + ", ".join(f"{k} {v}" for k, v in sorted(s["outcomes"].items()))
                         + f" | {s['n_failed']} | {_num(flips['rate'])} ({flips['n_flips']}/{flips['n_counted']}) |")
    lines += ["", "## Pairwise (a - b on the topics both have; CI: paired topic bootstrap; sign test)", ""]
    for p in result["pairwise"]:
        better = f"; better: {p[p['better']]}" if p["better"] else ""
        lines.append(f"- {p['column']}: {_name(result, p['a'])} - {_name(result, p['b'])} = {_pair_cell(p)}{better}")
    lines += ["", "## Rankings", ""]
    lines += [f"- {col}: {' > '.join(order) or '-'}" for col, order in result["rankings"].items()]
    lines += ["", "## Ranking stability (Kendall tau-b over the systems, topic-level bootstrap 95% CI)", "",
              "| a | b | kind | tau | CI | note |", "|---|---|---|---|---|---|"]
    for k in result["kendall"]:
        lines.append(f"| {k['a']} | {k['b']} | {k['kind']} | {_num(k['tau'])} | {_ci(k['ci95'])} | {k['note'] or ''} |")
    lines += ["", f"Missing (system, topic) pairs: {result['n_missing']}"
              + (": " + ", ".join(result["missing"]) if result["missing"] else "")]
    if result["unreadable"]:
        lines += ["", "Unreadable surveys (not scored):", *[f"- {k}: {v}" for k, v in result["unreadable"].items()]]
    ka = [f"- {pair}: {line}" for pair, detail in result["details"].items() for line in ka_lines(detail)]
    if ka:
        lines += ["", "## Knowledge augmentation per survey (KA-trained dimensions: from where, or why not)", "", *ka]
    for label, c in result["citations"].items():
        lines += ["", f"{label}: reference lists: " + ", ".join(f"{t} from {s}" for t, s in
                                                                c["reference_lists"].items())]
        lines += [f"- API error: {e}" for e in c["api_errors"]]
    lines += ["", f"Calls: {result['calls']}"]
    return "\n".join(lines) + "\n"


def _review_text(detail: Mapping[str, Any], measure: Mapping[str, Any]) -> str:
    """What a measure said about one survey, as escaped HTML (rationales, summaries, outcomes)."""
    e = html.escape
    got = detail.get(measure["measure"]) if detail else None
    if got is None:
        return ""
    if measure["kind"] == "surveyalign" and not measure["headline"]:
        dim = measure["key"].rsplit(".", 1)[-1]
        record = got["dimensions"].get(dim) or {}
        return e(record.get("rationale") or record.get("reason") or "")
    if measure["kind"] == "litreview" and measure["headline"]:
        summary = got.get("summary") or {}
        parts = [f"strengths: {'; '.join(summary.get('strengths') or []) or '-'}",
                 f"weaknesses: {'; '.join(summary.get('weaknesses') or []) or '-'}"]
        return e(" | ".join(parts + got.get("problems", [])))
    if measure["kind"] == "sxs":
        return e(f"{got['outcome']} (winners {', '.join(str(w) for w in got['winners'])})")
    if measure["kind"] == "citations" and measure["headline"]:
        if "note" in got:
            return e(got["note"])
        return e(f"{got['n_matched']} matched; unresolved: survey {got['n_unresolved_survey']}, list "
                 f"{got['n_unresolved_topic']}")
    return ""


def _drilldown(result: Mapping[str, Any], topic: Mapping[str, Any]) -> str:
    e = html.escape
    rows = [r for r in _rows(result) if f"{r}/{topic['name']}" in result["details"]]
    absent = [r for r in _rows(result) if r not in rows]
    head = "".join(f"<th>{e(_name(result, r))}</th>" for r in rows)
    body = []
    for col in result["columns"]:
        cells = []
        for r in rows:
            value = result["values"][col["key"]].get(r, {}).get(topic["name"], "n/a") if (
                r != result["reference"] or col["reference"]) else "n/a"
            text = _review_text(result["details"][f"{r}/{topic['name']}"], col)
            cells.append(f'<td class="text" data-system="{e(r)}"><b>{e(_num(value))}</b>'
                         + (f"<br>{text}" if text else "") + "</td>")
        body.append(f'<tr data-measure="{e(col["key"])}"><th>{e(col["label"])}</th>{"".join(cells)}</tr>')
    ka = {r: ka_lines(result["details"][f"{r}/{topic['name']}"]) for r in rows}
    if any(ka.values()):
        cells = "".join(f'<td class="text" data-system="{e(r)}">{"<br>".join(e(line) for line in ka[r])}</td>'
                        for r in rows)
        body.append(f'<tr data-measure="knowledge"><th>KA</th>{cells}</tr>')
    note = f'<p class="note">not written: {e(", ".join(absent))}</p>' if absent else ""
    return (f'<details class="topic" id="topic-{e(topic["name"])}"><summary>{e(topic["title"])} '
            f'({e(topic["name"])})</summary>{note}<table><thead><tr><th>measure</th>{head}</tr></thead>'
            f'<tbody>{"".join(body)}</tbody></table></details>')


def render_html(result: Mapping[str, Any]) -> str:
    """The run as one self-contained HTML page (module docstring)."""
    e = html.escape
    cols = result["columns"]
    head = "".join(f"<th>{e(c['label'])}</th>" for c in cols)
    rows = "".join(
        f'<tr data-system="{e(r)}"><th>{e(_name(result, r))}</th>'
        + "".join(f'<td data-measure="{e(c["key"])}">{e(aggregate_cell(result["table"][r].get(c["key"])))}</td>' for c in cols)
        + "</tr>" for r in _rows(result))
    parts = [(f"<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{e(result['name'])}: survey "
             f"writers</title><style>{_STYLE}</style></head><body><h1>Survey writers on {len(result['topics'])} "
             f"topics</h1><p>Mean over topics [topic-level bootstrap 95% CI]; n = topics with a value, missing = "
             f"written but not computable, absent = not written (never imputed). Missing pairs: "
             f"{result['n_missing']}.</p><table id=\"systems\"><thead><tr><th>system</th>{head}</tr></thead><tbody>"
             f"{rows}</tbody></table>")]
    for label, sxs in result["sxs"].items():
        body = "".join(f'<tr data-system="{e(s)}"><th>{e(s)}</th><td>{e(_num(v["win_rate"]))}</td><td>'
                       + e(", ".join(f"{k} {n}" for k, n in sorted(v["outcomes"].items())))
                       + f'</td><td>{e(_num(v["flip_rate"]["rate"]))}</td></tr>' for s, v in sxs["systems"].items())
        parts.append(f"<h2>{e(label)}: against the human reference (rule {e(sxs['rule'])})</h2><table "
                     f"id=\"sxs-{e(label)}\"><thead><tr><th>system</th><th>win rate</th><th>outcomes</th><th>"
                     f"position-flip rate</th></tr></thead><tbody>{body}</tbody></table>")
    for col in (c for c in cols if c["headline"]):
        pairs = {(p["a"], p["b"]): p for p in result["pairwise"] if p["column"] == col["key"]}
        present = [r for r in _rows(result) if any(r in k for k in pairs)]
        if not pairs:
            continue
        cells = []
        for a in present:
            row = []
            for b in present:
                p = pairs.get((a, b))
                q = pairs.get((b, a))
                text = _pair_cell(p) if p else (f"(-) {_pair_cell(q)}" if q else "")
                row.append(f'<td data-b="{e(b)}">{e(text)}</td>')
            cells.append(f'<tr data-a="{e(a)}"><th>{e(_name(result, a))}</th>{"".join(row)}</tr>')
        heads = "".join(f"<th>{e(_name(result, b))}</th>" for b in present)
        parts.append(f"<h2>Pairwise: {e(col['label'])}</h2><p class=\"note\">row - column on the topics both have "
                     f"[paired topic bootstrap 95% CI], sign test p; (-) the difference column - row.</p><table "
                     f"class=\"pairwise\" id=\"pairwise-{e(col['key'])}\"><thead><tr><th></th>{heads}</tr></thead>"
                     f"<tbody>{''.join(cells)}</tbody></table>")
    ranking = "".join(f"<li>{e(c)}: {e(' > '.join(o) or '-')}</li>" for c, o in result["rankings"].items())
    taus = "".join(f"<tr><th>{e(k['a'])}</th><td>{e(k['b'])}</td><td>{e(k['kind'])}</td><td>{e(_num(k['tau']))}</td>"
                   f"<td>{e(_ci(k['ci95']))}</td>"
                   f"<td class=\"text\">{e(k['note'] or '')}</td></tr>" for k in result["kendall"])
    parts.append(f"<h2>Rankings</h2><ul id=\"rankings\">{ranking}</ul><h2>Ranking stability</h2><table "
                 f"id=\"kendall\"><thead><tr><th>a</th><th>b</th><th>kind</th><th>Kendall tau-b</th><th>95% CI</th>"
                 f"<th>note</th></tr></thead><tbody>{taus}</tbody></table>")
    parts.append("<h2>Topics</h2>" + "".join(_drilldown(result, t) for t in result["topics"]))
    if result["unreadable"]:
        parts.append("<h2>Unreadable surveys</h2><ul id=\"unreadable\">"
                     + "".join(f"<li>{e(k)}: {e(v)}</li>" for k, v in result["unreadable"].items()) + "</ul>")
    return "".join(parts) + "</body></html>\n"

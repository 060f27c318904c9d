"""Markdown tables of autorater results (the ``result.md`` next to ``result.json``)."""

from __future__ import annotations

from typing import Any

__all__ = ["markdown_report"]


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.4f}"
    return str(value).replace("|", "\\|").replace("\n", " ")


def _table(header: list[str], rows: list[list[Any]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_cell(v) for v in row) + " |" for row in rows]
    return lines


def _problems(call: dict[str, Any]) -> str:
    return "; ".join(call.get("problems") or []) or "-"


def _sxs(result: dict[str, Any]) -> list[str]:
    lines = [f"# {result['autorater']} (rule: {result['rule']}, prompts: {result['prompt_version']})", ""]
    rows = []
    for pair in result["pairs"]:
        ab, ba = pair["calls"]
        out = pair["outcome"]
        rows.append([pair["pair"], pair["a"], pair["b"], ab["winner"], ba["winner"], out["outcome"], out["score"],
                     "yes" if out["position_flip"] else "no", f"AB: {_problems(ab)}; BA: {_problems(ba)}"])
    lines += _table(["pair", "A", "B", "AB winner", "BA winner", f"outcome for A ({result['rule']})", "s",
                     "position flip", "problems"], rows)
    flip = result["flip_rate"]
    lines += ["", (f"Outcomes: {', '.join(f'{k} {v}' for k, v in result['outcomes'].items())}. "
              f"Position-flip rate: {flip['rate']:.4f} ({flip['n_flips']}/{flip['n_counted']} pairs with two readable "
              f"winners{'; ' + flip['flag'] if flip['flag'] else ''}). Unreadable calls: {result['n_unreadable_calls']} "
              f"of {2 * result['n_pairs']}.")]
    sections = [(pair["pair"], side, pair["sections"][side]) for pair in result["pairs"] if "sections" in pair
                for side in ("a", "b")]
    if sections:
        lines += ["", "Sections sent (Introduction + Related Work by heading similarity):", ""]
        lines += _table(["pair", "side", "headings taken", "missing", "chars"], [
            [p, side, "; ".join(f"{t['heading']} ({t['similarity']:.0f})" for t in s["taken"]) or "whole document",
             ", ".join(s["missing"]) or "-", s["chars"]] for p, side, s in sections])
    return lines


def _litreview(result: dict[str, Any]) -> list[str]:
    lines = [(f"# litreview (average citation count {result['avg_citation_count']:g}"
             f"{', ' + result['venue'] if result['venue'] else ''}; prompts: {result['prompt_version']})"), ""]
    rows = []
    for row in result["papers"]:
        check = row["check"] or {}
        violations = ", ".join(v["rule"] for v in check.get("violations", [])) or "-"
        rows.append([row["paper"], "yes" if row["valid"] else "no", row["overall_score"],
                     check.get("weighted_score"), row["recomputed_score"], violations, _problems(row["call"])])
    lines += _table(["paper", "valid", "overall (judge)", "weighted", "weighted - penalties", "violated rules",
                     "problems"], rows)
    lines += ["", f"Valid: {result['n_valid']} of {result['n_papers']}; with violations: {result['n_with_violations']}."]
    return lines


def _citation_f1(result: dict[str, Any]) -> list[str]:
    lines = [f"# citation-f1 (variant: {result['variant']}; prompts: {result['prompt_version']})", ""]
    f1 = result["f1"]
    if f1 is None:
        lines.append("No F1: " + "; ".join(result["problems"]))
    else:
        lines += _table(["score", "precision", "recall", "F1", "matched", "|Gen|", "|GT|", "flags"], [
            [name, f1[key]["precision"], f1[key]["recall"], f1[key]["f1"], f1[key]["n_matched"], f1[key]["n_generated"],
             f1[key]["n_ground_truth"], "; ".join(f1[key]["flags"]) or "-"]
            for name, key in (("overall", "overall"), ("P0", "p0"), ("P1", "p1"))])
    lines += ["", "References per side:", ""]
    rows = []
    for side in ("ground_truth", "generated"):
        refs = result.get("references", {}).get(side, {})
        summary = (f1 or {}).get(side, {})
        part = result["partitions"].get(side)
        rows.append([side, result["papers"][side], refs.get("n_references"), summary.get("n_resolved"),
                     summary.get("n_unresolved"), "-" if part is None else ("ok" if part["ok"] else "; ".join(
                         part["problems"]))])
    lines += _table(["side", "paper", "references", "resolved", "unresolved", "partition"], rows)
    return lines


def markdown_report(result: dict[str, Any]) -> str:
    """A markdown rendering of an autorater result (tables, counts, problems).

    Args:
        result: what :func:`~surveyalign.autoraters.rate_sxs`, :func:`~surveyalign.autoraters.rate_litreview` or
            :func:`~surveyalign.autoraters.rate_citation_f1` returned.

    Returns:
        The markdown text (ends with a newline).

    Raises:
        ValueError: a result of an unknown autorater.
    """
    kind = result.get("autorater", "")
    if kind.startswith("sxs-"):
        lines = _sxs(result)
    elif kind == "litreview":
        lines = _litreview(result)
    elif kind == "citation-f1":
        lines = _citation_f1(result)
    else:
        raise ValueError(f"not an autorater result (autorater={kind!r})")
    return "\n".join(lines) + "\n"

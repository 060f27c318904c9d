"""Markdown tables of autorater results (the ``result.md`` next to ``result.json``)."""

from __future__ import annotations

from typing import Any

from surveyalign.documents.hidden import hidden_section

__all__ = ["citation_f1_missing", "judge_line", "markdown_report", "reading_line", "reading_summary"]


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
    rate = "n/a" if flip["rate"] is None else f"{flip['rate']:.4f}"
    lines += ["", (f"Outcomes: {', '.join(f'{k} {v}' for k, v in result['outcomes'].items())}. "
              f"Position-flip rate: {rate} ({flip['n_flips']}/{flip['n_counted']} pairs with two readable "
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


def _flag_reasons(score: dict[str, Any]) -> dict[str, str]:
    """``{"precision" | "recall" | "f1": reason}`` from a score's flags (``"recall: no ground-truth ids ..."``)."""
    return dict(flag.split(": ", 1) for flag in score["flags"] if ": " in flag)


def _score_cells(score: dict[str, Any]) -> list[Any]:
    """Precision, recall, F1 cells: ``n/a (reason)`` for a zero denominator (the stored value is a flagged 0.0)."""
    reasons = _flag_reasons(score)
    cells: list[Any] = [f"n/a ({reasons[key]})" if key in reasons and score[key] is not None else score[key]
                        for key in ("precision", "recall")]
    undefined = [key for key in ("precision", "recall") if key in reasons and score[key] is not None]
    if score["f1"] is not None and undefined:
        cells.append(f"n/a ({' and '.join(undefined)} undefined)")
    else:  # P = R = 0 over non-empty sets is a real 0.0 (its flag stays in the flags column)
        cells.append(score["f1"])
    return cells


def citation_f1_missing(result: dict[str, Any]) -> str | None:
    """Why a citation-F1 result has no overall F1, or ``None`` when it has one (PaperOrchestra App. F.3).

    The pure :func:`~surveyalign.autoraters.citation_f1` returns a flagged 0.0 for a zero denominator; this
    tells such a 0.0 apart from a real score, for the report and the command's exit status.

    Args:
        result: what :func:`~surveyalign.autoraters.rate_citation_f1` returned.

    Returns:
        A one-line reason (a partition could not be read, or the overall precision / recall had no ids), or
        ``None``.
    """
    if result["f1"] is None:
        return next((p for p in reversed(result["problems"]) if p.startswith("no F1")), "no F1 computed")
    overall = result["f1"]["overall"]
    reasons = _flag_reasons(overall)
    undefined = [f"{key}: {reasons[key]}" for key in ("precision", "recall") if key in reasons
                 and overall[key] is not None]
    return f"no F1: overall {'; '.join(undefined)}" if undefined else None


def _resolution_lines(result: dict[str, Any]) -> list[str]:
    """One line per side: unresolved references (by reason) and failed API requests."""
    resolution = result.get("resolution") or {}
    lines = []
    for side in ("ground_truth", "generated"):
        got = resolution.get(side)
        if got is None:  # ids given with --ids: a number without an id is unresolved
            n_refs = len(result["ids"][side])
            n_unres = sum(v is None for v in result["ids"][side].values())
            lines.append(f"- {side}: {n_unres} of {n_refs} references unresolved (no id in "
                         f"{resolution.get('source', 'the ids given')})")
            continue
        reasons = ", ".join(f"{k} {v}" for k, v in got.get("unresolved_reasons", {}).items())
        line = f"- {side}: {got['unresolved']} of {got['n']} references unresolved" + (f" ({reasons})" if reasons else "")
        errors = got.get("api_errors") or []
        if errors:
            line += (f"; the {resolution.get('source', 'API')} API failed on {len(errors)} request(s) at "
                     f"{resolution.get('base_url')} (first: {errors[0]})")
        lines.append(line)
    return lines


def _citation_f1(result: dict[str, Any]) -> list[str]:
    lines = [f"# citation-f1 (variant: {result['variant']}; prompts: {result['prompt_version']})", ""]
    f1 = result["f1"]
    if f1 is None:
        lines.append("No F1: " + "; ".join(result["problems"]))
    else:
        lines += _table(["score", "precision", "recall", "F1", "matched", "|Gen|", "|GT|", "flags"], [
            [name, *_score_cells(f1[key]), f1[key]["n_matched"], f1[key]["n_generated"], f1[key]["n_ground_truth"],
             "; ".join(f1[key]["flags"]) or "-"]
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
    for side in ("ground_truth", "generated"):
        problems = result.get("references", {}).get(side, {}).get("problems") or []
        if problems:
            lines += ["", f"Reference list of {side}: {len(problems)} problem(s):", *[f"- {p}" for p in problems]]
    lines += ["", "Resolution:", "", *_resolution_lines(result)]
    missing = citation_f1_missing(result)
    if missing:
        note = " (the 0.0 values in result.json are flagged placeholders, not scores)" if f1 is not None else ""
        lines += ["", f"**{missing}**{note}."]
    return lines


def markdown_report(result: dict[str, Any]) -> str:
    """A markdown rendering of an autorater result (tables, counts, problems).

    Args:
        result: what :func:`~surveyalign.autoraters.rate_sxs`, :func:`~surveyalign.autoraters.rate_litreview` or
            :func:`~surveyalign.autoraters.rate_citation_f1` returned.

    Returns:
        The markdown text (ends with a newline); with ``result["hidden_text"]`` (paper ->
        :func:`surveyalign.documents.hidden.document_hidden`) a "Hidden text" section, ``none found`` when empty.

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
    hidden = ["", "## Hidden text", "", *hidden_section(result.get("hidden_text"))] if "hidden_text" in result else []
    return "\n".join([lines[0], "", judge_line(result.get("judge") or {}), *lines[1:], "", reading_line(result),
                      *hidden]) + "\n"


def judge_line(judge: dict[str, Any]) -> str:
    """The judge that ran, for the report header: backend kind, model (and adapter), server, settings.

    Args:
        judge: :meth:`~surveyalign.autoraters.AutoraterJudge.describe` (``backend``: the backend's ``describe()``;
            ``settings``: the generation settings).

    Returns:
        e.g. ``"Judge: openai, model gpt-5.2 at https://api.openai.com/v1 (temperature 0.0, max_new_tokens 2048)."``
    """
    backend = judge.get("backend") or {}
    settings = judge.get("settings") or {}
    parts = [str(backend.get("backend") or "unknown backend")]
    model = backend.get("model") or backend.get("model_path")
    if model:
        parts.append(f"model {model}")
    if backend.get("adapter"):
        parts.append(f"adapter {backend['adapter']}")
    url = f" at {backend['base_url']}" if backend.get("base_url") else ""
    omitted = list(settings.get("omit") or ())
    knobs = ", ".join([f"{k} {settings[k]}" for k in ("temperature", "max_new_tokens")
                       if settings.get(k) is not None and k not in omitted]
                      + ([f"not sent: {', '.join(omitted)}"] if omitted else []))
    return f"Judge: {', '.join(parts)}{url}" + (f" ({knobs})." if knobs else ".")


def _lengths(value: Any) -> list[dict[str, Any] | None]:
    """Every call's ``length`` record (the length rule's result, ``None`` when it was off) found in ``value``."""
    if isinstance(value, dict):
        found = [value["length"]] if "length" in value and "key" in value else []
        return found + [x for k, v in value.items() if k != "length" for x in _lengths(v)]
    if isinstance(value, list):
        return [x for v in value for x in _lengths(v)]
    return []


def reading_summary(result: dict[str, Any]) -> dict[str, Any]:
    """How much of the paper texts the judge read over the result's calls, as numbers (the ``read`` block
    of ``result.json``).

    Args:
        result: an autorater result; each call's record holds ``length`` (``{"prompt_tokens", "cut_tokens",
            "reason", "limit", "counted"}`` of the length rule, ``None`` when no budget applied).

    Returns:
        ``{"n_calls", "n_checked", "n_cut", "tokens_cut", "n_refused", "limits"}``: calls, calls checked against a
        budget, calls whose texts were cut, tokens cut in all, calls refused (too long, nothing sent), and which
        budgets applied (``"max_length"``: ``--max-length``; ``"context"``: the model's ``max_model_len``).
    """
    lengths = _lengths(result)
    fitted = [x for x in lengths if x]
    refused = [x for x in fitted if x.get("reason")]
    cut = [x for x in fitted if not x.get("reason") and any(x.get("cut_tokens") or [])]
    return {"n_calls": len(lengths), "n_checked": len(fitted), "n_cut": len(cut),
            "tokens_cut": sum(sum(x.get("cut_tokens") or []) for x in cut), "n_refused": len(refused),
            "limits": sorted({x.get("limit") or "max_length" for x in fitted})}


def reading_line(result: dict[str, Any]) -> str:
    """How much of the paper texts the judge read over the result's calls (:func:`reading_summary`).

    Args:
        result: an autorater result (see :func:`reading_summary`).

    Returns:
        e.g. ``"Paper texts read: cut to fit --max-length in 1 of 2 call(s), 5,210 tokens cut in all (the ends of
        the texts)."``, ``"Paper texts read: whole in all 2 call(s) (they fit the model context (max_model_len))."``
        or ``"Paper texts read: whole in every call (no --max-length and no known model context: a server may
        refuse a prompt longer than its context)."``.
    """
    read = reading_summary(result)
    if not read["n_checked"]:
        return ("Paper texts read: whole in every call (no --max-length and no known model context: a server may "
                "refuse a prompt longer than its context).")
    budget = " / ".join({"max_length": "--max-length", "context": "the model context (max_model_len)"}[x]
                        for x in read["limits"])
    n, sent = read["n_calls"], read["n_calls"] - read["n_refused"]
    refused = (f"{read['n_refused']} of {n} call(s) refused: longer than {budget} (nothing sent; the reason is in "
               "result.json).")
    if not sent:
        return f"Paper texts read: none: {refused}"
    if read["n_cut"]:
        line = (f"Paper texts read: cut to fit {budget} in {read['n_cut']} of {n} call(s), {read['tokens_cut']:,} "
                "tokens cut in all (the ends of the texts).")
    elif read["n_refused"]:
        line = f"Paper texts read: whole in the {sent} call(s) sent (they fit {budget})."
    else:
        line = f"Paper texts read: whole in all {n} call(s) (they fit {budget})."
    return f"{line} {refused}" if read["n_refused"] else line

"""Reports of ``surveyalign score``: JSON per survey, a markdown and a self-contained HTML page, a comparison.

Everything is rendered from the JSON review records (:meth:`surveyalign.inference.judge.SurveyReview.to_dict`),
so a report can be rebuilt from the JSON files alone. The HTML page (jinja2 template
``surveyalign/resources/templates/score_report.html.j2``) holds inline styles and one inline SVG bar chart of the
vote distribution per dimension: it opens without network.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup

from surveyalign import __version__
from surveyalign.constants import VALID_SCORES
from surveyalign.documents.hidden import clean_title, hidden_lines
from surveyalign.documents.reading import reading_text
from surveyalign.paths import resource_path
from surveyalign.prompts import RUBRICS

__all__ = ["cost_text", "judge_line", "reading_text", "render_html", "render_markdown", "vote_chart_svg", "write_comparison", "write_survey_report"]

_TEMPLATES = resource_path("templates")
_DASH = "–"


def _score_text(score: Any) -> str:
    return _DASH if score is None else f"{int(score):+d}"


def vote_chart_svg(counts: Mapping[str, int], winner: int | None, n_samples: int) -> str:
    """A small inline SVG bar chart of the votes per score (-2, -1, +1, +2; unparsed samples as a grey bar).

    Args:
        counts: votes per score, keys as strings (``{"1": 3, "-1": 1}``).
        winner: the winning score (its bar is dark), or ``None``.
        n_samples: K; the bars are scaled to it and ``K - sum(counts)`` is drawn as "none".

    Returns:
        An ``<svg>`` element (about 180 x 70 px) with one ``<rect>`` per bar and a ``<title>`` per bar.
    """
    bars = [(f"{s:+d}", int(counts.get(str(s), 0)), s == winner) for s in VALID_SCORES]
    bars.append(("none", max(0, n_samples - sum(int(v) for v in counts.values())), False))
    top = max([n_samples, 1])
    parts = [('<svg xmlns="http://www.w3.org/2000/svg" width="180" height="70" role="img" '
              'aria-label="votes per score">')]
    for i, (label, value, won) in enumerate(bars):
        height = round(48 * value / top)
        x = 6 + i * 34
        colour = "#2b5d8a" if won else ("#bbb" if label == "none" else "#9ab8d3")
        parts.append(f'<rect x="{x}" y="{52 - height}" width="26" height="{height}" fill="{colour}">'
                     f'<title>{label}: {value}</title></rect>')
        parts.append(f'<text x="{x + 13}" y="66" text-anchor="middle">{label}</text>')
        parts.append(f'<text x="{x + 13}" y="{48 - height}" text-anchor="middle">{value}</text>')
    parts.append("</svg>")
    return "".join(parts)


#: Status of a dimension refused for lack of knowledge (``inference.judge.KNOWLEDGE_REFUSED``): shown as skipped.
_SKIPPED_STATUS = "knowledge_required"


def _state(record: Mapping[str, Any]) -> str:
    """``"scored"``, ``"skipped"`` (refused: its adapter needs knowledge and none was available) or ``"failed"``."""
    if record.get("score") is not None:
        return "scored"
    return "skipped" if record.get("status") == _SKIPPED_STATUS else "failed"


def judge_line(judge: Mapping[str, Any]) -> str:
    """The report header's sentence naming the judge that ran: name, backend, base model and, per dimension, the
    adapter that answered (a served adapter name or a folder), or that the base model answered without one.

    Args:
        judge: the review's ``judge`` record (:meth:`SurveyAlignJudge.describe`).

    Returns:
        One sentence, e.g. ``"Judge x (openai, base q; adapters: comprehensiveness=comp-lora, ...), 5 sample(s)
        per dimension at temperature 0.7, seed 0."``.
    """
    adapters = judge.get("adapters") or {}
    ran = "; adapters: " + ", ".join(f"{d}={a}" for d, a in adapters.items()) if adapters else \
        "; no adapter: the base model answered every dimension"
    return (f"Judge {judge.get('name')} ({judge.get('backend')}, base {judge.get('model')}{ran}), "
            f"{judge.get('samples')} sample(s) per dimension at temperature {judge.get('temperature')}, "
            f"seed {judge.get('seed')}.")


def cost_text(cost: Mapping[str, Any] | None) -> str:
    """One line with the tokens and cost of a dimension's calls (its ``cost`` block).

    Args:
        cost: the dimension record's ``cost`` (``None``: no call made or no cache).

    Returns:
        e.g. ``"2,310 tokens (2,280 prompt + 30 completion, 4 calls), $0.0046"``, ``"... , no price (local
        engine: GPU time)"`` (with ``", 0.0012 GPU-hours"`` when the engine ran on GPUs), ``"... , $0.0012
        (unverified price)"``, or ``"no calls"``.
    """
    if not cost or not cost.get("calls"):
        return "no calls"
    from surveyalign.calls.cost import UNVERIFIED

    text = (f"{cost['prompt_tokens'] + cost['completion_tokens']:,} tokens ({cost['prompt_tokens']:,} prompt + "
            f"{cost['completion_tokens']:,} completion, {cost['calls']} call{'s' if cost['calls'] != 1 else ''})")
    if cost.get("cost_usd") is None:
        hours = cost.get("gpu_hours")
        return text + ", no price (local engine: GPU time)" + (f", {hours:.4f} GPU-hours" if hours else "")
    return text + f", ${cost['cost_usd']:,.4f}" + (f" {UNVERIFIED}" if cost.get("unverified_price") else "")


def agreement_text(record: Mapping[str, Any]) -> str:
    """The agreement cell of a dimension: the winning score's share of the usable (parsed) samples, marked with
    "k of K usable samples" when some of the K samples failed (``-`` when there is no score)."""
    share = record.get("vote_share")
    if share is None:
        return _DASH
    failed, k = int(record.get("n_failed_samples") or 0), int(record.get("n_usable") or 0)
    if not failed:
        return f"{share:.0%}"
    return f"{share:.0%} of {k} usable, {k} of {int(record.get('n_requested') or 0)} samples"


def _dimension_view(dim: str, record: Mapping[str, Any]) -> dict[str, Any]:
    votes = record.get("votes") or {}
    n_voted = int(record.get("n_voted") or 0)
    synthesis = record.get("synthesis") or {}
    reason = record.get("reason") or ""
    notes = [n for n in record.get("notes") or [] if n != reason]  # the reason is shown once, as the reason
    samples = []
    for s in record.get("samples") or []:
        shown = s.get("rationale") or s.get("text") or ""
        if s.get("error") or s.get("parse_error"):
            shown = f"{s.get('error') or s.get('parse_error')}"
        samples.append({**s, "score_text": _score_text(s.get("score")), "shown": shown[:400],
                        "logprob_text": _DASH if s.get("mean_logprob") is None else f"{s['mean_logprob']:.3f}"})
    return {
        "dimension": dim, "label": RUBRICS[dim].label if dim in RUBRICS else dim, "score": record.get("score"),
        "score_text": _score_text(record.get("score")), "rationale": record.get("rationale") or "",
        "rationale_note": {"synthesized": "merged from the winning samples' rationales",
                           "single": "the winning samples gave one rationale",
                           "best_sample": f"best winning sample's rationale ({synthesis.get('error')})"}.get(
                               synthesis.get("source"), ""),
        "reason": reason, "notes": notes, "samples": samples, "state": _state(record),
        "read_text": reading_text(record.get("read")),
        "cost_text": cost_text(record.get("cost")),
        "state_text": _score_text(record.get("score")) if record.get("score") is not None else _state(record),
        "agreement": agreement_text(record),
        "counts_text": f"{n_voted}/{record.get('n_samples', 0)} parsed"
                       + (f", tie broken by {record['tie_break']}" if record.get("tie_break") else ""),
        # our own markup (numbers and score labels only): not escaped by the template
        "chart": Markup(vote_chart_svg(votes, record.get("score"), int(record.get("n_samples") or 0))),
    }


def hidden_text_lines(review: Mapping[str, Any]) -> list[str]:
    """The "hidden text" section of a report, one line each: text a reader of the rendered survey would not see
    (:mod:`surveyalign.documents.hidden`), the answer-format tokens neutralised before the judge read it, and the
    tokens a judge's answer quoted from it (ignored by the parser); ``["none found"]`` when there is nothing."""
    survey = review.get("survey") or {}
    lines = list(hidden_lines({**(survey.get("hidden_text") or {}), "neutralised": survey.get("neutralised")}))
    for dim, record in (review.get("dimensions") or {}).items():
        for sample in record.get("samples") or []:
            if sample.get("quoted"):
                lines.append(f"- {dim}, sample {sample.get('sample')}: the answer quoted "
                             f"{', '.join('`' + q + '`' for q in sample['quoted'])} from the survey; not read as "
                             f"the judge's answer")
    return lines or ["none found"]


def _survey_view(review: Mapping[str, Any]) -> dict[str, Any]:
    survey = review.get("survey") or {}
    dims = review.get("dimensions") or {}
    return {"title": clean_title(survey.get("title") or survey.get("source")), "source": survey.get("source"),
            "format": survey.get("format"), "extractor": survey.get("extractor"), "chars": survey.get("chars"),
            "warnings": survey.get("warnings") or [], "hidden": hidden_text_lines(review),
            "dimensions": [_dimension_view(d, r) for d, r in dims.items()]}


def _comparison(reviews: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    dims: list[str] = []
    for review in reviews:
        dims += [d for d in (review.get("dimensions") or {}) if d not in dims]
    rows = []
    for review in reviews:
        cells, failed, skipped = [], 0, 0
        for d in dims:
            r = (review.get("dimensions") or {}).get(d)
            if r is None:
                cells.append(_DASH)
            elif r.get("score") is None:
                cells.append(_state(r))
                failed += _state(r) == "failed"
                skipped += _state(r) == "skipped"
            else:
                share = r.get("vote_share")
                cells.append(_score_text(r["score"]) + ("" if share is None else f" ({agreement_text(r)})"))
        rows.append({"title": clean_title((review.get("survey") or {}).get("title")
                                          or (review.get("survey") or {}).get("source")),
                     "cells": cells, "failed": failed, "skipped": skipped})
    return {"labels": [RUBRICS[d].label if d in RUBRICS else d for d in dims], "rows": rows}


def _environment() -> jinja2.Environment:
    return jinja2.Environment(loader=jinja2.FileSystemLoader(str(_TEMPLATES)), autoescape=True,
                              undefined=jinja2.StrictUndefined)


def render_html(reviews: Sequence[Mapping[str, Any]], *, title: str | None = None, comparison: bool = False) -> str:
    """The self-contained HTML page of one or several reviews (same judge).

    Args:
        reviews: review records (``SurveyReview.to_dict()``), at least one.
        title: page title; default "Review of <survey title>" (one) or "Review of N surveys".
        comparison: add the comparison table (one row per survey).

    Returns:
        The HTML text.

    Raises:
        ValueError: no review given.
    """
    if not reviews:
        raise ValueError("render_html: no review to render")
    first = reviews[0]
    surveys = [_survey_view(r) for r in reviews]
    if title is None:
        title = f"Review of {surveys[0]['title']}" if len(surveys) == 1 else f"Review of {len(surveys)} surveys"
    template = _environment().get_template("score_report.html.j2")
    page = template.render(title=title, judge=first.get("judge") or {}, judge_line=judge_line(first.get("judge") or {}),
                           surveys=surveys,
                           warnings=first.get("warnings") or [], generated=time.strftime("%Y-%m-%d %H:%M UTC",
                                                                                           time.gmtime()),
                           version=__version__, comparison=_comparison(reviews) if comparison else None)
    return page


def render_markdown(review: Mapping[str, Any]) -> str:
    """The markdown report of one review: a score table, then each dimension's rationale and notes.

    Args:
        review: one review record.

    Returns:
        Markdown text.
    """
    view = _survey_view(review)
    about = judge_line(review.get("judge") or {})
    lines = [f"# Review of {view['title']}", "", about, ""]
    lines += [f"> {w}" for w in [*(review.get("warnings") or []), *view["warnings"]]]
    lines += ["", "| Dimension | Score | Votes (-2/-1/+1/+2/none) | Agreement | Survey read | Tokens and cost |",
              "| --- | --- | --- | --- | --- | --- |"]
    for d, record in (review.get("dimensions") or {}).items():
        votes = record.get("votes") or {}
        none = int(record.get("n_samples") or 0) - sum(int(v) for v in votes.values())
        counts = "/".join(str(votes.get(str(s), 0)) for s in VALID_SCORES) + f"/{none}"
        item = _dimension_view(d, record)
        lines.append(f"| {item['label']} | {item['state_text']} | "
                     f"{counts} | {item['agreement']} | {item['read_text']} | {item['cost_text']} |")
    for item in view["dimensions"]:
        lines += ["", f"## {item['label']}: {item['state_text']}", ""]
        lines.append(item["rationale"] if item["score"] is not None else
                     f"{'Skipped' if item['state'] == 'skipped' else 'Not scored'}: {item['reason']}")
        if item["rationale_note"]:
            lines += ["", f"*Rationale: {item['rationale_note']}.*"]
        lines += [f"- note: {n}" for n in item["notes"]]
    lines += ["", "## Hidden text", "", *view["hidden"]]
    return "\n".join(lines).rstrip() + "\n"


def write_survey_report(review: Mapping[str, Any], out_dir: Path, stem: str) -> dict[str, Path]:
    """Write ``<stem>.json``, ``<stem>.md`` and ``<stem>.html`` for one review.

    Args:
        review: the review record.
        out_dir: output folder (created).
        stem: file name stem (e.g. the survey file's stem).

    Returns:
        ``{"json": path, "markdown": path, "html": path}``.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {"json": out_dir / f"{stem}.json", "markdown": out_dir / f"{stem}.md", "html": out_dir / f"{stem}.html"}
    paths["json"].write_text(json.dumps(review, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    paths["markdown"].write_text(render_markdown(review), encoding="utf-8")
    paths["html"].write_text(render_html([review]), encoding="utf-8")
    return paths


def write_comparison(reviews: Sequence[Mapping[str, Any]], out_dir: Path) -> dict[str, Path]:
    """Write ``comparison.md`` and ``comparison.html`` (one row per survey, one column per dimension).

    Args:
        reviews: the batch's review records (two or more).
        out_dir: output folder.

    Returns:
        ``{"markdown": path, "html": path}``.
    """
    table = _comparison(reviews)
    lines = ["# Comparison", "", "| Survey | " + " | ".join(table["labels"]) + " | failed | skipped |",
             "| --- |" + " --- |" * (len(table["labels"]) + 2)]
    lines += [f"| {row['title']} | " + " | ".join(row["cells"]) + f" | {row['failed']} | {row['skipped']} |"
              for row in table["rows"]]
    lines += ["", ("Cells: score (share of the parsed votes for it); failed: no sample could be scored; skipped: the "
              "adapter needs knowledge augmentation and none was available (the reason is in the survey's report).")]
    paths = {"markdown": out_dir / "comparison.md", "html": out_dir / "comparison.html"}
    paths["markdown"].write_text("\n".join(lines) + "\n", encoding="utf-8")
    paths["html"].write_text(render_html(reviews, comparison=True), encoding="utf-8")
    return paths

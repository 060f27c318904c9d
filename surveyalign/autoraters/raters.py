"""The four PaperOrchestra autoraters as functions over texts (PaperOrchestra §5, App. F.3).

Each one builds its prompts, asks an :class:`~surveyalign.autoraters.calls.AutoraterJudge` (shared backends + call
cache), parses every answer strictly and returns a JSON-serialisable report that names the autorater, the
variant / rule that ran, the prompt version and every problem met. No answer is dropped: unreadable ones are
kept with their text and reasons, and counted.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from surveyalign.autoraters.calls import AutoraterJudge, CallAnswer, PromptCall
from surveyalign.autoraters.citation_f1 import CITATION_F1_VARIANTS, citation_f1
from surveyalign.autoraters.litreview import check_litreview, parse_litreview
from surveyalign.autoraters.parsing import parse_partition, parse_sxs
from surveyalign.autoraters.prompts import (
    PROMPT_VERSION,
    build_litreview_messages,
    build_partition_messages,
    build_sxs_messages,
)
from surveyalign.autoraters.rubric import DEFAULT_AVERAGE_CITATIONS
from surveyalign.autoraters.sections import extract_review_sections
from surveyalign.autoraters.sxs import (
    FAILED,
    OUTCOMES,
    SXS_RULES,
    position_flip_rate,
    sxs_outcome,
)

__all__ = ["NumberedReference", "PaperText", "litreview_prompt_calls", "rate_citation_f1", "rate_litreview", "rate_sxs",
           "sxs_prompt_calls"]


@dataclass(frozen=True)
class PaperText:
    """A paper to rate: its name and full text (the bibliographic record of a paper is
    :class:`surveyalign.documents.Paper`).

    Attributes:
        paper_id: a short name used in outputs and cache keys (e.g. the file name).
        text: the paper as markdown or LaTeX.
    """

    paper_id: str
    text: str


@dataclass(frozen=True)
class NumberedReference:
    """One entry of a paper's numbered reference list.

    Attributes:
        number: the reference number as a string (``"1"``).
        text: the entry as written (authors, year, title, venue).
    """

    number: str
    text: str


def _sxs_build(kind: str, texts: Sequence[str]) -> list[dict[str, str]]:
    return build_sxs_messages(kind, texts[0], texts[1])


def _litreview_build(avg_citation_count: float, texts: Sequence[str]) -> list[dict[str, str]]:
    return build_litreview_messages(texts[0], avg_citation_count)


def _partition_build(references: str, texts: Sequence[str]) -> list[dict[str, str]]:
    return build_partition_messages(texts[0], references)


def _call_view(answer: CallAnswer, problems: Sequence[str]) -> dict[str, Any]:
    failure = [answer.failure] if answer.failure else []
    return {**answer.to_dict(), "problems": failure + [p for p in problems if p != "empty answer" or not failure]}


def _read_sxs(kind: str, call: PromptCall, answer: CallAnswer) -> str | None:
    """Why a side-by-side answer names no winner (asked again on a re-run), else ``None``."""
    parsed = parse_sxs(answer.readable_text, kind, untrusted=call.texts)
    return None if parsed.winner is not None else ("; ".join(parsed.problems) or answer.failure or "no winner")


def _read_litreview(call: PromptCall, answer: CallAnswer) -> str | None:
    """Why a literature-review answer gives no valid judgement (asked again on a re-run), else ``None``."""
    parsed = parse_litreview(answer.readable_text, untrusted=call.texts)
    return None if parsed.judgement is not None else ("; ".join(parsed.problems) or answer.failure or "invalid")


def sxs_prompt_calls(pairs: Sequence[tuple[PaperText, PaperText]], kind: str = "litreview"
                     ) -> tuple[list[PromptCall], list[dict[str, Any]]]:
    """The order-swapped calls of :func:`rate_sxs` (two per pair: AB then BA), built without asking anyone.

    Args:
        pairs: (A, B) papers; ``kind="litreview"`` sends only their Introduction + Related Work sections.
        kind: ``"litreview"`` or ``"paper"``.

    Returns:
        ``(calls, views)``: 2 x len(pairs) :class:`PromptCall` and one view per pair (``pair``, ``a``, ``b``,
        ``sections`` taken for ``litreview``).

    Raises:
        ValueError: unknown ``kind``.
    """
    if kind not in ("litreview", "paper"):
        raise ValueError(f"unknown side-by-side kind {kind!r}; expected 'litreview' or 'paper'")
    stage = f"sxs-{kind}"
    calls, views = [], []
    for index, (a, b) in enumerate(pairs):
        texts, sections = {}, {}
        for side, paper in (("a", a), ("b", b)):
            if kind == "litreview":
                selection = extract_review_sections(paper.text)
                texts[side], sections[side] = selection.text, selection.to_dict()
            else:
                texts[side] = paper.text
        unit = f"{index}:{a.paper_id}|{b.paper_id}"
        build = partial(_sxs_build, kind)
        for order, pair in (("AB", (texts["a"], texts["b"])), ("BA", (texts["b"], texts["a"]))):
            calls.append(PromptCall(stage, f"{unit}::{order}", build(pair), pair, build))
        views.append({"pair": index, "a": a.paper_id, "b": b.paper_id, **({"sections": sections} if sections else {})})
    return calls, views


def rate_sxs(pairs: Sequence[tuple[PaperText, PaperText]], judge: AutoraterJudge, kind: str = "litreview",
             rule: str = "seed") -> dict[str, Any]:
    """Side-by-side comparison of each pair (A, B), judged twice with the order swapped (PaperOrchestra §5.2).

    Args:
        pairs: (A, B) papers; for ``kind="litreview"`` only their Introduction + Related Work sections are sent
            (which headings were taken is reported per paper).
        judge: backend + settings + cache.
        kind: ``"litreview"`` (side-by-side literature review) or ``"paper"`` (whole-paper quality).
        rule: outcome rule, one of :data:`~surveyalign.autoraters.sxs.SXS_RULES` (default ``"seed"``).

    Returns:
        ``{"autorater", "rule", "prompt_version", "judge", "pairs": [...], "outcomes": {label: count},
        "flip_rate": {...}, "n_unreadable_calls", "n_failed_pairs"}``; ``outcomes`` counts ``"failed"`` pairs (both
        answers unreadable) apart from ties; each pair has both calls (order, text, winner, problems)
        and its :class:`~surveyalign.autoraters.sxs.SxSOutcome`.

    Raises:
        ValueError: unknown ``kind`` or ``rule``.
    """
    if kind not in ("litreview", "paper"):
        raise ValueError(f"unknown side-by-side kind {kind!r}; expected 'litreview' or 'paper'")
    if rule not in SXS_RULES:
        raise ValueError(f"unknown side-by-side rule {rule!r}; expected one of {SXS_RULES}")
    stage = f"sxs-{kind}"
    calls, views = sxs_prompt_calls(pairs, kind)
    answers = judge.ask(calls, desc=stage, read=partial(_read_sxs, kind))
    winners = []
    for index, view in enumerate(views):
        ab, ba = answers[2 * index], answers[2 * index + 1]
        pair_texts = calls[2 * index].texts
        parsed_ab = parse_sxs(ab.readable_text, kind, untrusted=pair_texts)
        parsed_ba = parse_sxs(ba.readable_text, kind, untrusted=pair_texts)
        view["calls"] = [
            {"order": "AB", "paper_1": view["a"], "paper_2": view["b"], **parsed_ab.to_dict(),
             **_call_view(ab, parsed_ab.problems)},
            {"order": "BA", "paper_1": view["b"], "paper_2": view["a"], **parsed_ba.to_dict(),
             **_call_view(ba, parsed_ba.problems)},
        ]
        view["outcome"] = sxs_outcome(parsed_ab.winner, parsed_ba.winner, rule).to_dict()
        winners.append((parsed_ab.winner, parsed_ba.winner))
    counts = Counter(v["outcome"]["outcome"] for v in views)
    return {
        "autorater": stage, "rule": rule, "prompt_version": PROMPT_VERSION, "judge": judge.describe(),
        "n_pairs": len(views), "outcomes": {label: counts.get(label, 0) for label in (*OUTCOMES[rule], FAILED)},
        "n_failed_pairs": counts.get(FAILED, 0),
        "flip_rate": position_flip_rate(winners).to_dict(),
        "n_unreadable_calls": sum(w is None for pair in winners for w in pair),
        "pairs": views,
    }


def litreview_prompt_calls(papers: Sequence[PaperText], avg_citation_count: float = DEFAULT_AVERAGE_CITATIONS
                           ) -> list[PromptCall]:
    """The calls of :func:`rate_litreview`, one per paper, built without asking anyone.

    Raises:
        ValueError: ``avg_citation_count`` not positive.
    """
    build = partial(_litreview_build, avg_citation_count)
    return [PromptCall("litreview", f"{i}:{p.paper_id}", build([p.text]), (p.text,), build)
            for i, p in enumerate(papers)]


def rate_litreview(papers: Sequence[PaperText], judge: AutoraterJudge,
                   avg_citation_count: float = DEFAULT_AVERAGE_CITATIONS, venue: str | None = None) -> dict[str, Any]:
    """Six-axis literature-review quality of each paper (PaperOrchestra App. F.3).

    Args:
        papers: the papers (the judge is told to read only their Introduction and Related Work).
        judge: backend + settings + cache.
        avg_citation_count: the venue's average citation count (58.52 CVPR 2025, 59.18 ICLR 2025; 58 by default).
        venue: the venue name, recorded only.

    Returns:
        ``{"autorater": "litreview", "avg_citation_count", "venue", "prompt_version", "judge", "papers": [...],
        "n_valid", "n_invalid", "n_with_violations"}``; each paper has its call, problems, the validated
        judgement (or ``None``), the judge's ``overall_score``, the ``recomputed_score`` and the violated rules.

    Raises:
        ValueError: ``avg_citation_count`` not positive.
    """
    calls = litreview_prompt_calls(papers, avg_citation_count)
    answers = judge.ask(calls, desc="litreview", read=_read_litreview)
    rows = []
    for paper, answer in zip(papers, answers, strict=True):
        parsed = parse_litreview(answer.readable_text, untrusted=(paper.text,))
        row: dict[str, Any] = {"paper": paper.paper_id, "call": _call_view(answer, parsed.problems),
                               "valid": parsed.judgement is not None}
        if parsed.judgement is not None:
            check = check_litreview(parsed.judgement, avg_citation_count)
            row.update(judgement=parsed.judgement.model_dump(), overall_score=check.overall_score,
                       recomputed_score=check.recomputed_score, check=check.to_dict())
        else:
            row.update(judgement=None, overall_score=None, recomputed_score=None, check=None)
        rows.append(row)
    return {
        "autorater": "litreview", "avg_citation_count": avg_citation_count, "venue": venue,
        "prompt_version": PROMPT_VERSION, "judge": judge.describe(), "n_papers": len(rows),
        "n_valid": sum(r["valid"] for r in rows), "n_invalid": sum(not r["valid"] for r in rows),
        "n_with_violations": sum(bool(r["check"] and r["check"]["violations"]) for r in rows),
        "papers": rows,
    }


def _references_block(references: Sequence[NumberedReference]) -> str:
    return "\n".join(f"{r.number}. {' '.join(r.text.split())}" for r in references)


def rate_citation_f1(ground_truth: PaperText, gt_references: Sequence[NumberedReference], generated: PaperText,
                     gen_references: Sequence[NumberedReference], judge: AutoraterJudge,
                     ids: Mapping[str, Mapping[str, str | None]], variant: str = "seed") -> dict[str, Any]:
    """Citation F1 of a generated paper against its ground truth (PaperOrchestra App. F.3), end to end.

    Partitions the reference lists into P0/P1 with the judge (``seed``: both papers; ``official``: the ground
    truth only) and computes :func:`citation_f1` over the resolved ids.

    Args:
        ground_truth: the ground-truth paper.
        gt_references: its numbered reference list.
        generated: the generated paper.
        gen_references: its numbered reference list.
        judge: backend + settings + cache.
        ids: resolved paper ids ``{"ground_truth": {number: id | None}, "generated": {...}}`` (e.g. from
            :func:`surveyalign.autoraters.references.resolve_references`); a number without an entry is unresolved.
        variant: ``"seed"`` (default) or ``"official"``.

    Returns:
        ``{"autorater": "citation-f1", "variant", "prompt_version", "judge", "partitions": {side: parse},
        "ids": {side: {number: id}}, "f1": CitationF1 dict or None, "problems": [...]}``; ``f1`` is ``None``
        (with the reason in ``problems``) when a needed partition could not be read at all.

    Raises:
        ValueError: unknown ``variant``.
    """
    if variant not in CITATION_F1_VARIANTS:
        raise ValueError(f"unknown citation F1 variant {variant!r}; expected one of {CITATION_F1_VARIANTS}")
    sides = {"ground_truth": (ground_truth, gt_references), "generated": (generated, gen_references)}
    wanted = ["ground_truth", "generated"] if variant == "seed" else ["ground_truth"]
    calls = []
    for side in wanted:
        paper, refs = sides[side]
        build = partial(_partition_build, _references_block(refs))  # the reference list is never cut
        calls.append(PromptCall("partition", f"{side}:{paper.paper_id}", build([paper.text]), (paper.text,), build))
    numbers = {call.unit_id: [r.number for r in sides[side][1]] for side, call in zip(wanted, calls, strict=True)}

    def read_partition(call: PromptCall, answer: CallAnswer) -> str | None:
        return parse_partition(answer.readable_text, numbers[call.unit_id], untrusted=call.texts).error

    answers = dict(zip(wanted, judge.ask(calls, desc="partition", read=read_partition), strict=True))
    partitions, problems = {}, []
    for side, answer in answers.items():
        parsed = parse_partition(answer.readable_text, [r.number for r in sides[side][1]],
                                 untrusted=(sides[side][0].text,))
        partitions[side] = {**parsed.to_dict(), "call": _call_view(answer, parsed.problems)}
        problems += [f"{side} partition: {p}" for p in partitions[side]["call"]["problems"]]
    resolved = {side: {r.number: (ids.get(side) or {}).get(r.number) for r in refs}
                for side, (_, refs) in sides.items()}
    unreadable = [side for side in wanted if partitions[side]["error"] is not None]
    result = None
    if unreadable:
        problems.append(f"no F1: the partition of {', '.join(unreadable)} could not be read")
    else:
        result = citation_f1(resolved["ground_truth"], resolved["generated"], partitions["ground_truth"]["labels"],
                             partitions["generated"]["labels"] if variant == "seed" else None, variant).to_dict()
    return {"autorater": "citation-f1", "variant": variant, "prompt_version": PROMPT_VERSION,
            "judge": judge.describe(), "papers": {s: sides[s][0].paper_id for s in sides},
            "partitions": partitions, "ids": resolved, "f1": result, "problems": problems}

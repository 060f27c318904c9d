"""The synthesis stage of an evaluation run: one rationale per voted unit (SurveyReview §5.3, App. E).

With K > 1 samples per unit the vote picks the score; the rationales of the samples that voted for it are then
merged into one rationale that agrees with that score, by the function ``surveyalign score`` uses
(:mod:`surveyalign.judge.synthesis`): one call of the judge itself (its backend and identity, temperature 0) per
unit with two or more distinct winning rationales, through the run's call stage (``calls.jsonl``, stage and
namespace ``"synthesis"``, the provider batch API when the judge's backend has ``batch`` on, the ``max_cost``
cap). The RQS stage then rates that rationale.

A merge that fails (an error, no score, another score, no rationale) is counted and the unit keeps the best
winning sample's rationale (the winning-score sample with the highest mean log-probability, the vote's tie-break
order), with the reason in its record; it is never dropped. ``synthesis: false`` (CLI ``--no-synthesis``) makes no
merge call and keeps that best sample for every unit.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from surveyalign.calls import Call, CallCache
from surveyalign.constants import SCORED
from surveyalign.evaluation.config import EvalConfig
from surveyalign.evaluation.units import Unit
from surveyalign.judge import Judge, Judgement
from surveyalign.judge.synthesis import (
    SYNTHESIS_OFF,
    SYNTHESIS_VERSION,
    merge_check,
    synthesis_call,
)

__all__ = ["BEST_SAMPLE_RULE", "merge_calls", "merge_lines", "plan_merge_calls", "synthesis_counts",
           "synthesis_settings"]

#: How the kept sample is chosen when no merged rationale is used (recorded in ``run_config.json``).
BEST_SAMPLE_RULE = "the winning-score sample with the highest mean log-probability (the vote's tie-break order)"


def _verdicts(config: EvalConfig, units: Sequence[Unit], judge: Judge, cache: CallCache) -> list[Judgement]:
    return [judge.decide(u.prompt, [cache.generation(c.key) for c in
                                    judge.calls_for(u.prompt, config.samples_per_unit, unit_id=u.unit_id)])
            for u in units]


def merge_calls(config: EvalConfig, units: Sequence[Unit], judge: Judge, cache: CallCache
                ) -> tuple[list[Call], list[Call], int]:
    """The merge calls of the run's voted units, from the judge answers in the cache.

    Args:
        config: the run configuration (``samples_per_unit``, ``synthesis``, ``retry_errors``).
        units: the units, with their prepared prompts.
        judge: the run's judge.
        cache: the run's call cache, holding the judge answers.

    Returns:
        ``(every merge call, the calls still to make, the number answered from the cache)``; all empty with
        K = 1 or synthesis off. A cached merge answer that is unusable (:func:`~surveyalign.judge.synthesis.merge_check`)
        is asked again when ``retry_errors`` is on.
    """
    if config.samples_per_unit <= 1 or not config.synthesis:
        return [], [], 0
    checks: dict[str, Any] = {}
    calls: list[Call] = []
    for unit, verdict in zip(units, _verdicts(config, units, judge, cache)):
        call = synthesis_call(judge, verdict, unit_id=unit.unit_id)
        if call is not None:
            calls.append(call)
            checks[call.key] = merge_check(verdict, judge.protocol)
    todo, cached = cache.missing(calls, retry_errors=config.retry_errors,
                                 check=lambda call, generation: checks[call.key](call, generation))
    return calls, todo, cached


def plan_merge_calls(config: EvalConfig, units: Sequence[Unit], judge: Judge, cache: CallCache,
                     pending: set[str]) -> tuple[list[Call], set[str]]:
    """The merge calls a run will make, before its judge stage (``--plan``, ``--max-cost``).

    A unit already judged gets its real merge call (none when it was not scored or has one distinct winning
    rationale). A unit whose judge calls are still to make (``pending``) is counted as if its K samples all voted
    for one score with K distinct rationales (the upper bound): its call carries K stand-in rationales, and its key
    is returned (``--plan`` prints the bound apart from the judge's figures: :func:`merge_lines`).

    Args:
        config: the run configuration; units: the units with their prompts; judge: the run's judge.
        cache: the run's call cache (read, not changed).
        pending: unit ids with judge calls still to make.

    Returns:
        ``(calls, keys of the calls whose rationales are not written yet)``.
    """
    if config.samples_per_unit <= 1 or not config.synthesis:
        return [], set()
    k = config.samples_per_unit
    calls, unwritten = [], set()
    for unit, verdict in zip(units, _verdicts(config, units, judge, cache)):
        if unit.unit_id in pending:
            if not unit.prompt.sendable:
                continue
            verdict = replace(verdict, score=verdict.score if verdict.score is not None else 1, status=SCORED)
            call = synthesis_call(judge, verdict, unit_id=unit.unit_id, rationales=[f"({i + 1})" for i in range(k)])
            if call is not None:
                unwritten.add(call.key)
        else:
            call = synthesis_call(judge, verdict, unit_id=unit.unit_id)
        if call is not None:
            calls.append(call)
    return calls, unwritten


def merge_lines(merges: Sequence[Call] | int) -> list[str]:
    """The ``--plan`` line of the synthesis stage: the bound of the merge calls still to make (a list of them or
    their number), planned apart from the judge's calls because each is made only for a voted unit with two or
    more distinct winning rationales; no line when there are none."""
    n = merges if isinstance(merges, int) else len(merges)
    if not n:
        return []
    return [(f"  synthesis (App. E): up to {n} merge call(s) of the judge, one per voted unit with two or more "
            "distinct winning rationales (not in the figures above)")]


def synthesis_counts(predictions: Sequence[dict[str, Any]]) -> dict[str, int]:
    """``{"eligible", "synthesized", "single", "best_sample", "failed"}`` over the voted units (K > 1, scored):
    merged; one distinct winning rationale (nothing to merge); best sample kept because synthesis is off; best
    sample kept because the merge failed (its reason in the record's ``synthesis.error``)."""
    rows = [p["synthesis"] for p in predictions if p.get("status") == SCORED and p.get("synthesis")]
    return {"eligible": len(rows),
            "synthesized": sum(r["source"] == "synthesized" for r in rows),
            "single": sum(r["source"] == "single" for r in rows),
            "best_sample": sum(r["source"] == "best_sample" and r.get("error") == SYNTHESIS_OFF for r in rows),
            "failed": sum(r["source"] == "best_sample" and r.get("error") != SYNTHESIS_OFF for r in rows)}


def synthesis_settings(config: EvalConfig) -> dict[str, Any]:
    """What ``run_config.json`` records of the stage: ``enabled``, ``applies`` (K > 1), ``version`` of the merge
    prompt, ``model`` (``"the judge"``: the merge is the judge's own call), ``fallback`` (the kept sample's rule)."""
    return {"enabled": config.synthesis, "applies": config.samples_per_unit > 1, "version": SYNTHESIS_VERSION,
            "model": "the judge (same backend, temperature 0)", "fallback": BEST_SAMPLE_RULE}

"""One prediction record per unit, whatever its status (``predictions.jsonl``; SurveyReview §6.1, App. E).

The cached answers of a unit's K samples are parsed (:func:`surveyalign.prompts.parse_generation`) and decided
by the judge's vote step; units never sent (``missing_text``, ``prompt_too_long``) are kept with their reason.
With K > 1 a scored unit's ``rationale`` is the one consolidated from its winning samples (App. E:
:func:`surveyalign.judge.synthesis.consolidate`, the merge answer read from the cache), and ``synthesis`` says how it
was made; ``samples`` keeps every sample.
"""

from __future__ import annotations

from typing import Any

from surveyalign.calls import CallCache
from surveyalign.evaluation.config import EvalConfig
from surveyalign.evaluation.units import Unit
from surveyalign.judge import Judge
from surveyalign.judge.synthesis import consolidate, synthesis_call

__all__ = ["assemble_predictions"]


def assemble_predictions(config: EvalConfig, units: list[Unit], judge: Judge, cache: CallCache
                         ) -> list[dict[str, Any]]:
    """The prediction records of the units, in unit order, from the cached judge answers.

    Args:
        config: the run configuration (``samples_per_unit``).
        units: the units, with their prepared prompts.
        judge: the run's judge (call keys, parsing, vote).
        cache: the run's call cache, holding an answer for every call made.

    Returns:
        Records with unit_id, paper_id, review_id, source, dimension, reference, reference_rationales,
        prompt_tokens, shortened_tokens, read (characters / tokens of the survey read against its total, ``cut``,
        ``cut_at_char``, ``counted``, ``max_length``, ``context``: :meth:`surveyalign.judge.PreparedPrompt.reading`;
        ``chars_read`` is ``None`` for a unit never sent), prediction, status, rationale, error, samples, consistency (and
        ``vote`` when K > 1).
    """
    out: list[dict[str, Any]] = []
    limits = {d: {"max_length": judge.options(d).max_length, "context": judge.context_for(d)}
              for d in dict.fromkeys(u.dimension for u in units)}
    for unit in units:
        row, prompt = unit.row, unit.prompt
        record: dict[str, Any] = {
            "unit_id": row["unit_id"],
            "paper_id": row.get("paper_id"),
            "review_id": row.get("review_id"),
            "source": row.get("source"),
            "dimension": unit.dimension,
            "reference": int(row["score"]),
            "reference_rationales": list(row.get("rationales") or []),
            "prompt_tokens": prompt.prompt_tokens,
            "shortened_tokens": prompt.shortened_tokens,
            # how much of the survey the judge read: the block ``score`` reports carry too
            "read": {**prompt.reading(), **limits[unit.dimension]},
        }
        calls = judge.calls_for(prompt, config.samples_per_unit, unit_id=unit.unit_id)
        verdict = judge.decide(prompt, [cache.generation(c.key) for c in calls])
        record.update({"prediction": verdict.score, "status": verdict.status, "rationale": verdict.rationale,
                       "error": verdict.reason, "samples": [s.to_dict() for s in verdict.samples],
                       "consistency": None})
        if verdict.vote is not None and config.samples_per_unit > 1:
            record["vote"] = verdict.vote.to_dict()
            if verdict.score is not None:
                merge = synthesis_call(judge, verdict, unit_id=unit.unit_id) if config.synthesis else None
                answer = None if merge is None or cache.get(merge.key) is None else cache.generation(merge.key)
                synthesis = consolidate(verdict, answer, protocol=judge.protocol, enabled=config.synthesis)
                record["rationale"], record["synthesis"] = synthesis.rationale, synthesis.to_dict()
        out.append(record)
    return out

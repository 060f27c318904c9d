"""Which calls a run still has to make, and making them (SurveyReview App. E: K samples per unit).

Every (unit, sample k) is one call, keyed by unit, dimension, k, the hash of the messages, the backend's
identity and the generation settings (:func:`surveyalign.judge.call_key`). A call already in ``calls.jsonl`` is
not made again (unless its cached answer is an error and ``retry_errors`` is set); the others run through the
shared executor (:func:`surveyalign.judge.run_calls`) and each answer is appended to the cache as it arrives.
"""

from __future__ import annotations

import time

from surveyalign.evaluation.config import EvalConfig
from surveyalign.evaluation.units import Unit
from surveyalign.judge import Call, CallCache, Judge, answers_from_models, run_calls

__all__ = ["execute", "judge_calls"]


def judge_calls(config: EvalConfig, units: list[Unit], judge: Judge, cache: CallCache) -> tuple[list[Call], int]:
    """The judge calls not yet in the cache (or cached with an error when ``retry_errors``), and how many are.

    Args:
        config: the run configuration (``samples_per_unit``, ``retry_errors``).
        units: the units, with their prepared prompts.
        judge: the run's judge.
        cache: the run's call cache.

    Returns:
        ``(calls to make, number of calls answered from the cache)``.
    """
    calls: list[Call] = []
    cached = 0
    for unit in units:
        for call in judge.calls_for(unit.prompt, config.samples_per_unit, unit_id=unit.unit_id):
            rec = cache.get(call.key)
            if rec is not None and not (config.retry_errors and rec.get("error")):
                cached += 1
                continue
            calls.append(call)
    return calls, cached


def execute(calls: list[Call], config: EvalConfig, cache: CallCache, stage: str
            ) -> tuple[int, float, float | None]:
    """Make ``calls``, appending every answer to ``cache`` as it arrives.

    Args:
        calls: the calls (from :func:`judge_calls` or the RQS stage).
        config: the run configuration (``concurrency``, ``batch_size``, ``progress``, ``name``).
        cache: the run's call cache.
        stage: the progress bar's label (``"judge"``, ``"rqs"``).

    Returns:
        ``(number of answers with an error, wall-clock seconds, calls per second)``; the rate is over the calls
        made (cached ones never count) and ``None`` when nothing was made or a backend answers without a model
        (constant / scripted judges: no work to time).
    """
    t0 = time.perf_counter()
    errors = run_calls(calls, cache.add, concurrency=config.concurrency, batch_size=config.batch_size,
                       progress=config.progress, desc=f"{config.name} [{stage}]", around_async=cache.background)
    seconds = time.perf_counter() - t0
    rate = round(len(calls) / seconds, 2) if calls and seconds > 0 and answers_from_models(calls) else None
    return errors, round(seconds, 3), rate

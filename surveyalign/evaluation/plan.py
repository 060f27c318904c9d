"""Which calls a run still has to make, and making them (SurveyReview App. E: K samples per unit).

Every (unit, sample k) is one call, keyed by unit, dimension (the key's namespace), k, the hash of the messages,
the backend's identity and the generation settings (:func:`surveyalign.calls.call_key`). A call already in
``calls.jsonl`` is not made again (unless its cached answer is an error or gives no score, and ``retry_errors`` is set:
:meth:`surveyalign.calls.CallCache.missing`); the others run through the call layer's executor
(:func:`surveyalign.calls.run_calls`, timed here) and each answer is appended to the cache as it arrives.
"""

from __future__ import annotations

import time

from surveyalign.calls import Call, CallCache, answers_from_models, run_calls
from surveyalign.evaluation.config import EvalConfig
from surveyalign.evaluation.units import Unit
from surveyalign.judge import Judge

__all__ = ["execute", "judge_calls"]


def judge_calls(config: EvalConfig, units: list[Unit], judge: Judge, cache: CallCache) -> tuple[list[Call], int]:
    """The judge calls not yet in the cache (or cached with an error or an answer without a score, when
    ``retry_errors``), and how many are.

    Args:
        config: the run configuration (``samples_per_unit``, ``retry_errors``).
        units: the units, with their prepared prompts.
        judge: the run's judge.
        cache: the run's call cache.

    Returns:
        ``(calls to make, number of calls answered from the cache)``.
    """
    return cache.missing([call for unit in units
                          for call in judge.calls_for(unit.prompt, config.samples_per_unit, unit_id=unit.unit_id)],
                         retry_errors=config.retry_errors, check=judge.unusable)


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

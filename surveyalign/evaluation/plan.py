"""Which calls a run still has to make, and making them (SurveyReview App. E: K samples per unit).

Every (unit, sample k) is one call, keyed by unit, dimension (the key's namespace), k, the hash of the messages,
the backend's identity and the generation settings (:func:`surveyalign.calls.call_key`). A call already in
``calls.jsonl`` is not made again (unless its cached answer is an error or gives no score, and ``retry_errors`` is set:
:meth:`surveyalign.calls.CallCache.missing`); the others run through the call layer's executor
(:func:`surveyalign.calls.run_calls`, timed here) and each answer is appended to the cache as it arrives.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any

from surveyalign.backends import Generation
from surveyalign.calls import Call, CallCache, answers_from_models, run_calls
from surveyalign.evaluation.config import EvalConfig
from surveyalign.evaluation.units import Unit
from surveyalign.judge import Judge

__all__ = ["NO_CONTEXT", "context_lines", "execute", "judge_calls", "offline_contexts"]

#: The source of a ``--plan`` context when none is known without a server.
NO_CONTEXT = ("none known without a server (no max_model_len option, max_length or tokenizer): prompt tokens "
              "estimated at 4 characters per token, no prompt refused for its length")
#: A tokenizer's ``model_max_length`` at or above this is the transformers "no limit" sentinel, not a context.
_NO_LIMIT = 10**7


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


def offline_contexts(config: EvalConfig, judge: Judge, sources: dict[str, str | None]) -> dict[str, dict[str, Any]]:
    """The model context of each dimension for ``evaluate --plan``, found without asking any server, and set on
    ``judge`` (:attr:`~surveyalign.judge.Judge.contexts`, ``probe_context`` off) so preparing the prompts sends
    nothing.

    In order: the backend's ``max_model_len`` option (an API judge) or the local engine's own context; the
    dimension's ``max_length`` (prompt + ``max_new_tokens`` budget; config, CLI ``--max-length`` or the adapter's
    training record: with a tokenizer it cuts the survey to fit, without one it is the context prompts are checked
    against by the 4-characters-per-token estimate); the tokenizer's ``model_max_length`` (``tokenizer``); else none
    (:data:`NO_CONTEXT`: the 4-characters-per-token estimate, no prompt refused for its length).

    Args:
        config: the run configuration (``dimensions``).
        judge: the run's judge (changed: ``probe_context = False``, ``contexts`` filled).
        sources: dimension -> where its ``max_length`` comes from (:func:`surveyalign.evaluation.judges.build_judge`).

    Returns:
        ``{dimension: {"tokens": int | None, "source": str}}``.

    Raises:
        ValueError: a tokenizer that cannot be loaded.
    """
    from surveyalign.judge import model_context

    judge.probe_context = False
    out: dict[str, dict[str, Any]] = {}
    for dim in config.dimensions:
        backend = judge.backend_for(dim)
        tokens, source = model_context(backend, probe=False), None
        if tokens is not None:
            source = ("backend option max_model_len" if hasattr(backend, "max_model_len_option")
                      else "the local engine's context")
        elif judge.options(dim).max_length is not None:
            tokens = int(judge.options(dim).max_length)
            source = f"max_length ({sources.get(dim) or 'config'})"
            if judge.tokenizer_for(dim) is None:  # with a tokenizer the budget already cuts the survey to fit
                judge.contexts[dim] = tokens
        else:
            limit = getattr(judge.tokenizer_for(dim), "model_max_length", None)
            if isinstance(limit, int) and 0 < limit < _NO_LIMIT:
                tokens, source = limit, "the tokenizer's model_max_length"
                judge.contexts[dim] = tokens
        out[dim] = {"tokens": tokens, "source": source or NO_CONTEXT}
    return out


def context_lines(contexts: dict[str, dict[str, Any]]) -> list[str]:
    """The ``--plan`` lines saying which context figure each dimension was planned with and where it came from
    (dimensions sharing one figure and source on one line)."""
    groups: dict[tuple[Any, str], list[str]] = {}
    for dim, entry in contexts.items():
        groups.setdefault((entry["tokens"], entry["source"]), []).append(dim)
    return [f"  context (no server asked): {', '.join(dims)}: "
            + (f"{tokens:,} tokens from {source}" if tokens is not None else source)
            for (tokens, source), dims in groups.items()]


def execute(calls: list[Call], config: EvalConfig, cache: CallCache, stage: str, *, cap: Any = None,
            cost_of: Callable[[Call, Generation], float | None] | None = None,
            batches: dict[str, Any] | None = None) -> tuple[int, float, float | None]:
    """Make ``calls``, appending every answer to ``cache`` as it arrives.

    Calls whose backend has ``batch`` on (``backend.options.batch``) go through the provider's batch API
    (:func:`surveyalign.calls.batches.run_batches`, batch ids in ``RUN_DIR/batches.jsonl``); the others through
    :func:`surveyalign.calls.run_calls`. With a cap (``--max-cost``), calls are sent in chunks of whole units while
    the projected total stays under it (:class:`surveyalign.calls.budget.CostCap`; the calls of a prefix group
    kept together, so the cap's prompt-cache estimate holds).

    Args:
        calls: the calls (from :func:`judge_calls` or the RQS stage).
        config: the run configuration (``concurrency``, ``batch_size``, ``progress``, ``name``, ``run_dir``).
        cache: the run's call cache.
        stage: the progress bar's label (``"judge"``, ``"rqs"``).
        cap: a ``CostCap`` or ``None``; cost_of: USD of one answer (counted against the cap).
        batches: filled with the batch outcome (``run_batches``'s counts, open batch ids) when calls were batched.

    Returns:
        ``(number of answers with an error, wall-clock seconds, calls per second)``; the rate is over the calls
        made (cached ones never count) and ``None`` when nothing was made or a backend answers without a model
        (constant / scripted judges: no work to time).
    """
    t0 = time.perf_counter()

    def on_result(call: Call, generation: Generation, seconds: float) -> None:
        cache.add(call, generation, seconds)
        if cap is not None and cost_of is not None:
            cap.add(cost_of(call, generation))
            cap.observe(call, generation.prompt_tokens)  # the estimate of the next chunk learns tokens per character

    errors = 0
    live = [c for c in calls if not getattr(c.backend, "batch", False)]
    batched = [c for c in calls if getattr(c.backend, "batch", False)]
    size = max(16, 2 * int(config.concurrency or 8))
    if cap is not None:  # a prefix group's units in one chunk or adjacent ones: the cap's cached estimate holds
        from surveyalign.calls.prefix import order_for_cache

        live = order_for_cache(live)
    chunks = cap.chunks(live, size) if cap is not None else [live]
    for chunk in chunks:
        errors += run_calls(chunk, on_result, concurrency=config.concurrency, batch_size=config.batch_size,
                            progress=config.progress, desc=f"{config.name} [{stage}]", around_async=cache.background)
    if batched:
        errors += _run_batched(batched, config, cache, cap, batches if batches is not None else {})
    seconds = time.perf_counter() - t0
    rate = round(len(calls) / seconds, 2) if calls and seconds > 0 and answers_from_models(calls) else None
    return errors, round(seconds, 3), rate


def _run_batched(calls: list[Call], config: EvalConfig, cache: CallCache, cap: Any, out: dict[str, Any]) -> int:
    """The calls of batch-enabled backends through their provider's batch API; returns the failed answers."""
    from surveyalign.calls.batches import BATCHES_FILE, BatchLog, run_batches
    from surveyalign.calls.spend import PromptCounter

    errors = 0
    # calls already in a submitted batch are paid for: they are collected whatever the cap (never held back, so
    # never dropped when their batch ends), and their estimate counts before any new call is let through
    in_flight = {k for rec in BatchLog(config.run_dir / BATCHES_FILE).open_batches().values()
                 for k in rec["keys"]} if cap is not None else set()
    by_backend: dict[int, list[Call]] = {}
    for call in calls:
        by_backend.setdefault(id(call.backend), []).append(call)
    for group in by_backend.values():
        backend = group[0].backend
        if cap is not None:  # only what fits: a submitted batch is committed, its estimate counts at once
            committed = [c for c in group if c.key in in_flight]
            for call in committed:
                cap.add(cap.estimate(call))
            fresh = [c for c in group if c.key not in in_flight]
            fresh = [c for chunk in cap.chunks(fresh, len(fresh)) for c in chunk]
            for call in fresh:
                cap.add(cap.estimate(call))
            group = committed + fresh
        outcome = run_batches(group, backend.batch_api(), cache.add, config.run_dir / BATCHES_FILE,
                              wait=backend.batch_wait, poll_s=backend.batch_poll_s,
                              max_enqueued_tokens=getattr(backend, "max_enqueued_tokens", None),
                              tokens_of=PromptCounter(lambda call: None).messages_tokens,
                              settled=lambda key: (cache.get(key) or {}).get("error") is None
                              and cache.get(key) is not None)
        for line in outcome.problems:  # malformed provider lines, unknown batches, broken log records
            print(f"batches: {line}", file=sys.stderr)
        errors += outcome.failed
        for key, value in outcome.to_dict().items():
            if isinstance(value, list):
                out[key] = [*out.get(key, []), *value]
            elif isinstance(value, int):
                out[key] = out.get(key, 0) + value
            else:
                out[key] = value
    return errors

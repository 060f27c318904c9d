"""The judge stage a chunk of units at a time, so a large split never holds every prompt at once.

Every prompt carries its survey text (about 100 kB); 14.5k units would hold 4 prompts per paper for the whole run.
:func:`judge_in_chunks` runs steps 2-4 of :mod:`surveyalign.evaluation.runner` (prompts, calls, predictions) on
:data:`CHUNK_UNITS` units at a time and then lets go of their prompts' messages and survey texts, keeping the
prediction records, the prompt bookkeeping and the calls' keys. Its outputs are those of the whole-split path:
the same predictions in the same order, the same ``prompt_length`` summary and call counts.

It applies (:func:`applies`) when nothing needs every prompt before the first call: no RQS stage (it reads the
units' prompts after the judge stage), no ``--plan`` / ``--max-cost`` (they price every call first), no
``--check-drift``, no provider batch API (one batch per run), and more units than one chunk.

``--plan`` alone goes a chunk at a time as well (:func:`plan_in_chunks`, when :func:`plan_applies`): each chunk's
prompts are prepared, its calls counted and priced (:func:`surveyalign.evaluation.spend.plan_run`) and let go; the
chunks' plans add up (:meth:`surveyalign.calls.CallPlan.merged`) to the whole-split plan. At 14.5k units of 100 kB
texts planning the whole split at once peaks at 934 MB RSS against 367 MB for the run itself.
"""

from __future__ import annotations

import dataclasses
import io
from collections.abc import Iterator
from typing import Any

from surveyalign.calls import Call, CallCache, CallPlan
from surveyalign.calls.cost import PriceTable
from surveyalign.calls.spend import model_of_call, spent_usd
from surveyalign.evaluation.caching import cache_plan, merge_cache_plans
from surveyalign.evaluation.config import EvalConfig
from surveyalign.evaluation.consolidation import merge_calls, plan_merge_calls
from surveyalign.evaluation.lengths import prepare_units
from surveyalign.evaluation.plan import execute, judge_calls
from surveyalign.evaluation.predictions import assemble_predictions
from surveyalign.evaluation.spend import plan_run
from surveyalign.evaluation.units import Unit
from surveyalign.judge import Judge

__all__ = ["CHUNK_UNITS", "applies", "judge_in_chunks", "plan_applies", "plan_in_chunks"]

#: Units per chunk: at K=4, 8,192 calls, 32 times the largest concurrency in use (256), so the ramp-down at the end
#: of a chunk (at most one call latency with fewer calls in flight) costs about a thirtieth of the chunk's time;
#: their prompts, about 2,048 / 2 x 100 kB (the reviews of one paper share one), stay near 100 MB.
CHUNK_UNITS = 2048


def applies(config: EvalConfig, units: list[Unit], groups: dict[str, Any], *, rqs: bool, plan_only: bool,
            check_drift: int | None) -> bool:
    """Whether the judge stage of this run goes a chunk at a time (see the module docstring)."""
    return (not rqs and not plan_only and not check_drift and config.max_cost is None
            and not any(getattr(b, "batch", False) for b in groups.values()) and len(units) > CHUNK_UNITS)


def plan_applies(units: list[Unit], *, rqs: bool, check_drift: int | None) -> bool:
    """Whether ``--plan`` goes a chunk at a time: no RQS stage (its calls quote the judge's answers of every
    unit), no ``--check-drift`` (it re-judges stored units first), and more units than one chunk."""
    return not rqs and not check_drift and len(units) > CHUNK_UNITS


def plan_in_chunks(config: EvalConfig, units: list[Unit], judge: Judge, sources: dict[str, str | None],
                   cache: CallCache, prices: PriceTable, console: Any) -> dict[str, Any]:
    """The ``--plan`` of ``units``, :data:`CHUNK_UNITS` at a time (nothing is sent).

    Args:
        config, judge, sources, cache, console: as for :func:`judge_in_chunks`.
        units: the units, in run order; their prompts' messages and survey texts are dropped chunk by chunk.
        prices: the run's price table.

    Returns:
        ``{"plan": CallPlan, "cache": the :func:`~surveyalign.evaluation.caching.cache_plan` of the chunks merged,
        "cached": calls answered from the cache, "spent_usd": USD of those answers,
        "prompt_length": the prompt-length summary, "merges": the bound of the merge calls still to make (App. E)}``: the numbers the whole-split path prints (a call key met
        in an earlier chunk is planned once, as :meth:`CallCache.missing` makes it once).
    """
    lengths: list[dict[str, Any]] = []
    plan = CallPlan()  # the plan of no call: merged with the first chunk's, it is that plan
    cached_plan = None  # likewise for the plan with and without the provider's cache and batch API
    planned: set[str] = set()
    cached, spent, n_merges = 0, 0.0, 0
    for chunk in _prepared_chunks(config, units, judge, sources, console, lengths):
        calls = [c for u in chunk for c in judge.calls_for(u.prompt, config.samples_per_unit, unit_id=u.unit_id)]
        todo, n_cached = cache.missing(calls, retry_errors=config.retry_errors, check=judge.unusable)
        merges, unwritten = plan_merge_calls(config, chunk, judge, cache, {c.unit_id for c in todo})
        n_merges += sum(c.key in unwritten or cache.get(c.key) is None for c in merges)  # the bound, apart
        todo = [c for c in todo if c.key not in planned]
        planned.update(c.key for c in todo)
        cached += n_cached
        spent += spent_usd(cache, [*calls, *merges], prices, model_of_call)
        plan = plan.merged(plan_run(config, todo, judge, cache, prices, model_of_call)[0])
        cached_plan = merge_cache_plans(cached_plan, cache_plan(todo, judge, cache, prices, model_of_call))
        calls = todo = merges = None  # the calls hold the messages: let go of them before the chunk's memory is handed back
    return {"plan": plan, "cached": cached, "spent_usd": spent, "prompt_length": lengths[0], "merges": n_merges,
            "cache": cached_plan}


def _prepared_chunks(config: EvalConfig, units: list[Unit], judge: Judge, sources: dict[str, str | None],
                     console: Any, lengths: list[dict[str, Any]]) -> Iterator[list[Unit]]:
    """``units`` :data:`CHUNK_UNITS` at a time, each chunk's prompts prepared and its survey texts dropped (the
    prompts carry them; they are read again if ever needed). Once the caller is done with a chunk, its prompts lose
    their messages (units sharing a prompt, the reviews of one paper, share one bare copy) and the freed memory is
    handed back. The length warnings of the first chunk go to ``console``, the others nowhere; the chunks'
    prompt-length summaries are added up in ``lengths[0]``."""
    quiet = _quiet_console()
    for start in range(0, len(units), CHUNK_UNITS):
        chunk = units[start:start + CHUNK_UNITS]
        part = prepare_units(config, chunk, judge, sources, console if start == 0 else quiet)
        for unit in chunk:
            unit.row["text"] = None
        if lengths:
            _merge(lengths[0], part)
        else:
            lengths.append(part)
        yield chunk
        bare: dict[int, Any] = {}
        for unit in chunk:
            shared = id(unit.prompt)
            if shared not in bare:
                bare[shared] = dataclasses.replace(unit.prompt, messages=[])
            unit.prompt = bare[shared]
        chunk = bare = part = None
        _give_back()


def _merge(total: dict[str, Any], part: dict[str, Any]) -> dict[str, Any]:
    """Add the ``prompt_length`` summary of one chunk to that of the chunks before it."""
    for dim, entry in part["per_dimension"].items():
        into = total["per_dimension"][dim]
        for key in ("n_counted", "n_shortened", "removed_tokens", "n_too_long"):
            into[key] += entry[key]
        into["longest_prompt"] = max(into["longest_prompt"], entry["longest_prompt"])
    total["n_shortened"] += part["n_shortened"]
    total["n_too_long"] += part["n_too_long"]
    for paper, record in (part.get("hidden_text") or {}).items():
        total.setdefault("hidden_text", {}).setdefault(paper, record)
    return total


def judge_in_chunks(config: EvalConfig, units: list[Unit], judge: Judge, sources: dict[str, str | None],
                    cache: CallCache, console: Any) -> dict[str, Any]:
    """Prompts, calls and predictions of ``units``, :data:`CHUNK_UNITS` at a time.

    Args:
        config: the run configuration.
        units: the units, in run order; each one's prompt messages and survey text are dropped once its chunk is
            done (``unit.prompt`` keeps everything else).
        judge: the run's judge.
        sources: dimension -> where its ``max_length`` comes from.
        cache: the run's call cache (answers appended as they arrive).
        console: a ``rich`` console (the length warnings of the first chunk are printed, once).

    Returns:
        ``{"prompt_length", "predictions", "calls"}`` (the judge calls without their messages: keys, backends) and
        ``"cached"``, ``"made"``, ``"errors"``, ``"seconds"``, ``"calls_per_s"``, ``"keys"`` (distinct call keys)
        as the whole-split path counts them, and ``"synthesis"`` (``cached``, ``made``, ``errors``, ``seconds`` of
        the merge calls, App. E; ``None`` when no unit needed one). The ``calls`` list the merge calls too.
    """
    lengths: list[dict[str, Any]] = []
    predictions: list[dict[str, Any]] = []
    light: list[Call] = []
    keys: set[str] = set()
    cached = made = errors = 0
    seconds, timed = 0.0, True
    merged = {"cached": 0, "made": 0, "errors": 0, "seconds": 0.0}
    any_merge = False
    for chunk in _prepared_chunks(config, units, judge, sources, console, lengths):
        todo, n_cached = judge_calls(config, chunk, judge, cache)
        n_errors, n_seconds, rate = execute(todo, config, cache, "judge")
        cached, made, errors, seconds = cached + n_cached, made + len(todo), errors + n_errors, seconds + n_seconds
        timed = timed and (rate is not None or not todo)
        merges, merge_todo, n_merged = merge_calls(config, chunk, judge, cache)  # App. E: one rationale per unit
        if merges:
            any_merge = True
            n_errors, n_seconds, _ = execute(merge_todo, config, cache, "synthesis")
            merged["cached"] += n_merged
            merged["made"] += len(merge_todo)
            merged["errors"] += n_errors
            merged["seconds"] += n_seconds
            light += [dataclasses.replace(call, messages=[]) for call in merges]
        predictions += assemble_predictions(config, chunk, judge, cache)
        for unit in chunk:
            for call in judge.calls_for(unit.prompt, config.samples_per_unit, unit_id=unit.unit_id):
                keys.add(call.key)
                light.append(dataclasses.replace(call, messages=[]))
        todo = None  # the calls hold the messages: let go of them before the chunk's memory is handed back
    rate = round(made / seconds, 2) if made and seconds > 0 and timed else None
    return {"prompt_length": lengths[0], "predictions": predictions, "calls": light, "cached": cached, "made": made,
            "errors": errors, "seconds": round(seconds, 3), "calls_per_s": rate, "keys": len(keys),
            "synthesis": {**merged, "seconds": round(merged["seconds"], 3)} if any_merge else None}


def _give_back() -> None:
    """Hand the memory of a finished chunk's texts and prompts back to the system: glibc keeps freed blocks of
    100 kB texts in its heap (its mmap threshold grows past them), so the resident size would keep the largest
    chunk's footprint for the rest of the run. A no-op where ``malloc_trim`` is missing."""
    import ctypes
    import ctypes.util

    global _TRIM
    if _TRIM is None:
        try:
            _TRIM = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").malloc_trim
        except (OSError, AttributeError):
            _TRIM = False
    if _TRIM:
        _TRIM(0)


_TRIM: Any = None


def _quiet_console() -> Any:
    from rich.console import Console

    return Console(file=io.StringIO())

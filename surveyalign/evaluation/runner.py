"""The evaluation harness: a judge over a split, cached call by call, resumable (SurveyReview §3, §6.1, App. E, G).

``run_evaluation(config)`` does, in order:

1. read the dataset split (:mod:`surveyalign.evaluation.units`) and check every adapter's training record
   against the config before any model is loaded (:mod:`surveyalign.evaluation.adapters`);
2. build the judge (:mod:`surveyalign.evaluation.judges`) and one prompt per unit with it
   (:mod:`surveyalign.evaluation.lengths`): a unit with an empty survey text is ``missing_text``; with a token
   budget (``max_length``, default: the adapter's training ``max_length``) the survey body is cut by the
   training length rule so prompt + ``max_new_tokens`` fit, and a prompt that cannot fit the budget or the model
   context is ``prompt_too_long``; neither gets a call;
3. for every unit and sample k < K, look the call up in ``RUN_DIR/calls.jsonl`` by its key and run only the
   missing calls (:mod:`surveyalign.evaluation.plan`), concurrently for async backends and in batches for local
   ones, appending each answer to the cache as soon as it returns;
4. parse every answer and vote over the K samples; with K > 1 merge each voted unit's winning rationales into one
   (:mod:`surveyalign.evaluation.consolidation`, App. E; ``synthesis: false`` keeps the best winning sample), then
   build the records (:mod:`surveyalign.evaluation.predictions`); optionally (``rqs``) rate every scored unit's
   rationale, the consolidated one, against the reference (:mod:`surveyalign.evaluation.rqs`);
5. write ``predictions.jsonl`` (one line per unit, whatever its status), ``metrics.json``
   (``surveyalign.scoring.summarize_predictions``) and ``run_config.json``
   (:mod:`surveyalign.evaluation.provenance`), and print the summary (:mod:`surveyalign.evaluation.summary`);
6. when every answer is usable, write ``finished.json`` (:mod:`surveyalign.evaluation.finished`): asked again
   with the same run fingerprint and untouched files, the run reads its predictions and metrics back instead of
   steps 1-4.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from surveyalign.backends import preflight
from surveyalign.calls import CallCache
from surveyalign.calls.cost import cost_lines
from surveyalign.calls.spend import (
    answer_cost,
    gpu_hours_per_second,
    model_of_call,
    unanswered,
)
from surveyalign.console import make_console
from surveyalign.constants import count_statuses
from surveyalign.evaluation import finished, stream
from surveyalign.evaluation.adapters import check_training_records
from surveyalign.evaluation.config import EvalConfig
from surveyalign.evaluation.consolidation import (
    merge_calls,
    plan_merge_calls,
)
from surveyalign.evaluation.identity import check_drift as rejudge
from surveyalign.evaluation.identity import judge_identity
from surveyalign.evaluation.judges import build_backends, build_judge, close_backend
from surveyalign.evaluation.lengths import prepare_units
from surveyalign.evaluation.outputs import (
    RunResult,
    finish_run,
    print_plan,
    print_plan_in_chunks,
    start_run_config,
)
from surveyalign.evaluation.plan import (
    execute,
    judge_calls,
    offline_contexts,
)
from surveyalign.evaluation.predictions import assemble_predictions
from surveyalign.evaluation.provenance import redact_argv, scrub
from surveyalign.evaluation.rqs import (
    attach_ratings,
    plan_rqs_calls,
    rqs_calls,
    rqs_unusable,
)
from surveyalign.evaluation.rundir import (
    RunLock,
    now,
    set_cache_aside,
    write_json,
)
from surveyalign.evaluation.spend import (
    cost_summary,
    load_run_prices,
    make_cap,
    plan_run,
)
from surveyalign.evaluation.summary import print_summary
from surveyalign.evaluation.units import (
    load_units,
    template_hashes,
)

__all__ = ["RunIncomplete", "run_evaluation"]


class RunIncomplete(RuntimeError):
    """The run stopped before every call was answered, on purpose: the ``--max-cost`` cap would have been passed,
    or provider batches are still running (``batch_wait: false``). What was answered is in ``calls.jsonl``; the same
    command (with a higher cap) continues. The message says what is left and how to go on."""





def run_evaluation(
    config: EvalConfig,
    *,
    backend: Any | None = None,
    rqs_backend: Any | None = None,
    console: Any | None = None,
    argv: Sequence[str] | None = None,
    plan_only: bool = False,
    check_drift: int | None = None,
) -> RunResult:
    """Evaluate one judge on one split and write the run folder (SurveyReview §6.1).

    Args:
        config: the validated run configuration.
        backend: an already built judge backend to use instead of ``load_backend(config.backend...)``
            (same object for every dimension). Its ``describe()`` goes into the cache keys as usual.
        rqs_backend: likewise for the consistency judge of the RQS stage.
        console: a ``rich.console.Console`` for the summary (default: a new one on stdout).
        argv: the command line to record in ``run_config.json`` (default ``sys.argv``); values of
            credential-like ``key=value`` arguments are redacted.
        plan_only: print the plan (calls, tokens, estimated cost and time: :func:`surveyalign.evaluation.spend.plan_run`)
            and return before any call is sent (``calls["plan"]`` holds it; nothing else is written).
        check_drift: re-judge this many stored units (sample 0, bypassing the cache) before the run and report how
            many scores changed (``run_config.json`` ``check_drift``; :func:`surveyalign.evaluation.identity.check_drift`).

    Returns:
        :class:`RunResult` with the run folder, the metrics dict and the status counts.

    Raises:
        FileNotFoundError: the dataset folder does not exist.
        ValueError: the split or a dimension is absent from the dataset, or a backend option is invalid.
        TrainingMismatchError: (a ``ValueError``) an adapter's training record disagrees with the config on
            dimension, protocol, enable_thinking, use_knowledge or the knowledge counts (training examples vs
            evaluated units), and ``allow_training_mismatch`` is false.
        RuntimeError: another process holds the run folder's lock.
        RunIncomplete: the ``max_cost`` cap stopped the run, or provider batches are still running; what was
            answered is kept in ``calls.jsonl``.
    """
    console = console or make_console()
    run_dir = config.run_dir
    run_dir.mkdir(parents=True, exist_ok=True)
    with RunLock(run_dir / ".lock"):
        return _run_locked(config, run_dir, backend, rqs_backend, console, argv, plan_only, check_drift)


def _run_locked(config: EvalConfig, run_dir: Path, backend: Any, rqs_backend: Any, console: Any,
                argv: Sequence[str] | None, plan_only: bool = False,
                check_drift: int | None = None) -> RunResult:
    started = now()
    prices = load_run_prices(config)
    calls_path = run_dir / "calls.jsonl"
    if not config.resume:
        aside = set_cache_aside(calls_path)
        if aside is not None:
            console.print(f"resume=false: moved the earlier cache aside to {aside.name}")

    rqs_cfg = config.rqs if (config.rqs is not None and config.rqs.enabled) else None
    # a finished run asked again: read back, not replayed (finished.json)
    static = finished.static_fingerprint(config, backend) if rqs_cfg is None else None
    done = (finished.candidate(run_dir, static) if static is not None and config.resume and not plan_only
            and not check_drift else None)
    if done is None:
        if not plan_only:
            finished.clear(run_dir)
        units, data_info = load_units(config)
        # before any model is loaded: an adapter trained for another prompt setting is refused (or recorded)
        training_records = check_training_records(config, units, backend, console)

    built: list[Any] = []
    try:
        judge, groups, judge_of_dim, sources = build_judge(config, backend)
        built += [b for b in groups.values() if b is not backend]
        contexts = offline_contexts(config, judge, sources) if plan_only else None  # --plan asks no server
        if done is not None:
            if finished.confirm(done, groups, judge_of_dim):
                got = finished.read_back(run_dir, done)
                if got is not None:
                    return _finished_again(config, run_dir, console, argv, started, *got)
            finished.clear(run_dir)
            units, data_info = load_units(config)
            training_records = check_training_records(config, units, backend, console)
        chunked = stream.applies(config, units, groups, rqs=rqs_cfg is not None, plan_only=plan_only,
                                 check_drift=check_drift)
        plan_chunked = plan_only and stream.plan_applies(units, rqs=rqs_cfg is not None, check_drift=check_drift)
        prompt_length = None if chunked or plan_chunked else prepare_units(config, units, judge, sources, console)
        hidden = (prompt_length or {}).pop("hidden_text", None) or {}  # metrics.json hidden_text, not prompt_length
        rqs_judge = None
        if rqs_cfg is not None:
            rqs_judge = rqs_backend if rqs_backend is not None else build_backends(rqs_cfg.backend, [None])[0]["shared"]
            if rqs_judge is not rqs_backend:
                built.append(rqs_judge)
        # before the first call: every recorded setting applies, and each API server answers (no minutes of retries)
        preflight(list(groups.values()), config.generation, ready=not plan_only)
        if rqs_judge is not None:
            preflight([rqs_judge], rqs_cfg.generation, ready=not plan_only)
        run_config = start_run_config(config, run_dir, data_info, groups, judge_of_dim, rqs_judge, argv, started,
                                       training_records, prompt_length)

        with CallCache.load(calls_path, fsync=config.fsync) as cache:
            if cache.n_torn:
                console.print(f"[yellow]calls.jsonl: skipped {cache.n_torn} torn/unreadable line(s); "
                              "those calls are made again[/]")
            calls: dict[str, Any] = {"torn_lines": cache.n_torn}
            if check_drift:
                drift = rejudge(units, judge, cache, check_drift, concurrency=config.concurrency)
                run_config["check_drift"] = drift
                console.print(f"check-drift: re-judged {drift['n_rejudged']} stored unit(s): {drift['n_changed']} "
                              f"changed score, {drift['n_failed']} failed to answer or parse"
                              + (f" ({drift['note']})" if drift["note"] else ""))
            batches: dict[str, Any] = {}
            if plan_chunked:  # --plan a chunk of units at a time (stream.py)
                return print_plan_in_chunks(config, run_dir, units, judge, sources, cache, prices, console, run_config,
                                     contexts)
            if chunked:  # a chunk of units at a time: never every prompt at once (stream.py)
                out = stream.judge_in_chunks(config, units, judge, sources, cache, console)
                hidden = out["prompt_length"].pop("hidden_text", None) or {}
                prompt_length = run_config["prompt_length"] = out["prompt_length"]
                predictions, all_calls = out["predictions"], out["calls"]
                calls.update(cached=out["cached"], made=out["made"], errors=out["errors"], seconds=out["seconds"],
                             calls_per_s=out["calls_per_s"])
                if out["synthesis"]:
                    calls.update({f"synthesis_{k}": v for k, v in out["synthesis"].items()})
            else:
                todo, cached = judge_calls(config, units, judge, cache)
                all_calls = [c for u in units for c in judge.calls_for(u.prompt, config.samples_per_unit,
                                                                          unit_id=u.unit_id)]
                rqs_all, rqs_todo, unwritten = [], [], set()
                if rqs_cfg is not None:  # exact for units already judged; the rest as if they will be scored
                    rqs_all, unwritten = plan_rqs_calls(units, assemble_predictions(config, units, judge, cache),
                                                        {c.unit_id for c in todo}, rqs_judge, rqs_cfg.generation)
                    # a plan, not a run: not counted in the answers reused / retried / made
                    rqs_todo = unanswered(cache, rqs_all, rqs_unusable, retry_errors=config.retry_errors)
                merge_all, merge_unwritten = plan_merge_calls(config, units, judge, cache, {c.unit_id for c in todo})
                merge_plan = [c for c in merge_all if c.key in merge_unwritten or cache.get(c.key) is None]
                plan, estimate = plan_run(config, todo, judge, cache, prices, model_of_call, rqs_todo=rqs_todo,
                                          rqs_unwritten=unwritten)
                if plan_only:
                    return print_plan(run_dir, console, plan, todo, judge, cache, prices, contexts,
                                       planned=[*all_calls, *merge_all, *rqs_all],
                                       cached_calls=cached + len(rqs_all) - len(rqs_todo), merge_plan=merge_plan,
                                       unwritten=unwritten)
                cap = make_cap(config, [*all_calls, *merge_all, *rqs_all], cache, prices, model_of_call, estimate)
                cost_of = answer_cost(prices)
                calls.update(cached=cached, made=len(todo))
                calls["errors"], calls["seconds"], calls["calls_per_s"] = execute(
                    todo, config, cache, "judge", cap=cap, cost_of=cost_of, batches=batches)
                _stop_if_incomplete(cap, batches, todo, cache, config, "judge", later=[*merge_plan, *rqs_todo])
                predictions = _merge_and_rate(config, run_dir, units, judge, cache, rqs_judge, calls, all_calls,
                                              cap=cap, cost_of=cost_of, batches=batches, rqs_todo=rqs_todo)
            # judge and merge calls (and the RQS stage's, which never leaves a finished.json)
            n_judge_calls, n_judge_keys = len(all_calls), len({c.key for c in all_calls})
            if batches:
                calls["batches"] = batches
            calls["answers"] = dict(cache.counts)  # reused / retried (cached failed) / made
            cost = _summary(all_calls, cache, prices, units, groups, rqs_judge, config.concurrency)
            run_config["identity"] = judge_identity(
                config, {g: (b.describe() if hasattr(b, "describe") else {}) for g, b in groups.items()},
                template_hashes(config), cache)
    finally:
        for b in built:  # close only what this run built
            close_backend(b)

    return finish_run(config, run_dir, console, predictions, calls, cost, run_config, hidden, prompt_length, static,
                   groups, judge_of_dim, n_judge_calls, n_judge_keys)






def _merge_and_rate(config: EvalConfig, run_dir: Path, units: list[Any], judge: Any, cache: CallCache, rqs_judge: Any,
                    calls: dict[str, Any], all_calls: list[Any], *, cap: Any, cost_of: Any, batches: dict[str, Any],
                    rqs_todo: list[Any]) -> list[dict[str, Any]]:
    """After the judge calls: the App. E merge calls of the voted units, the prediction records, then the RQS
    stage's ratings (App. G) attached to them. ``calls`` gets each stage's counts; ``all_calls`` gets the merge and
    RQS calls (for the cost summary). Returns the predictions.

    Raises:
        RunIncomplete: the cost cap or a provider batch stopped a stage (what was answered is kept).
    """
    rqs_cfg = config.rqs if (config.rqs is not None and config.rqs.enabled) else None
    merge_all, merge_todo, merge_cached = merge_calls(config, units, judge, cache)
    if merge_all:
        calls.update(synthesis_cached=merge_cached, synthesis_made=len(merge_todo))
        calls["synthesis_errors"], calls["synthesis_seconds"], _ = execute(
            merge_todo, config, cache, "synthesis", cap=cap, cost_of=cost_of, batches=batches)
        _stop_if_incomplete(cap, batches, merge_todo, cache, config, "synthesis", later=rqs_todo)
        all_calls += merge_all
    predictions = assemble_predictions(config, units, judge, cache)
    if rqs_cfg is not None:
        rtodo, rcached = rqs_calls(units, predictions, rqs_judge, rqs_cfg.generation, cache,
                                   retry_errors=config.retry_errors)
        calls.update(rqs_cached=rcached, rqs_made=len(rtodo))
        calls["rqs_errors"], calls["rqs_seconds"], _ = execute(rtodo, config, cache, "rqs", cap=cap,
                                                               cost_of=cost_of, batches=batches)
        _stop_if_incomplete(cap, batches, rtodo, cache, config, "rqs")
        attach_ratings(units, predictions, rqs_judge, rqs_cfg.generation, cache)
        all_calls += [c for c in rqs_calls(units, predictions, rqs_judge, rqs_cfg.generation,
                                           CallCache(Path(run_dir / ".none")))[0]]
    return predictions


def _finished_again(config: EvalConfig, run_dir: Path, console: Any, argv: Sequence[str] | None, started: str,
                    predictions: list[dict[str, Any]], metrics: dict[str, Any], run_config: dict[str, Any],
                    calls: dict[str, Any]) -> RunResult:
    """The result of a run that finished earlier with the same fingerprint (:mod:`surveyalign.evaluation.finished`):
    its predictions and metrics as written, this invocation's bookkeeping (every call cached, none made) in
    ``metrics.json`` and ``run_config.json``, the summary printed as a replay would print it."""
    console.print(f"resume: {run_dir} finished earlier with the same config, data, prompts, judge and code "
                  f"({finished.FINISHED_FILE}): {calls['cached']} answers and {len(predictions)} predictions read "
                  "back, nothing re-parsed", markup=False)
    counts = count_statuses(predictions)
    harness = metrics.setdefault("harness", {})
    harness["calls"] = calls
    finished.rewrite_metrics(run_dir, metrics)
    run_config.update(started=started, finished=now(), calls=calls, config=config.describe(),
                      command=redact_argv(list(sys.argv if argv is None else argv)))
    write_json(run_dir / "run_config.json", scrub(run_config))
    print_summary(console, config, metrics, predictions, counts, calls, {}, run_dir,
                  prompt_length=harness.get("prompt_length"))
    for line in cost_lines(run_config.get("cost") or harness.get("cost") or {}):
        console.print(line, markup=False)
    return RunResult(run_dir=run_dir, metrics=metrics, counts=counts, calls=calls, predictions=predictions)


def _stop_if_incomplete(cap: Any, batches: dict[str, Any], todo: list[Any], cache: CallCache, config: EvalConfig,
                        stage: str, later: Sequence[Any] = ()) -> None:
    """Raise :class:`RunIncomplete` when the cap held calls back or batches are still running (``later``: the
    calls of later stages, counted in what is left)."""
    if batches.get("open_batches") or batches.get("held_back_calls"):
        open_ids = batches.get("open_batches") or []
        held = batches.get("held_back_calls") or 0
        raise RunIncomplete(f"{len(open_ids)} provider batch(es) still running ({', '.join(open_ids)}; ids in "
                            f"{config.run_dir / 'batches.jsonl'})"
                            + (f", {held} call(s) held back by max_enqueued_tokens" if held else "")
                            + "; run the same command again to collect them")
    if cap is not None and cap.stopped:
        left = [c for c in todo if cache.get(c.key) is None]
        raise RunIncomplete(cap.stop_message([*left, *later], stage, cache.path))



def _summary(all_calls: list[Any], cache: CallCache, prices: Any, units: list[Any], groups: dict[str, Any],
             rqs_judge: Any, concurrency: int | None = None) -> dict[str, Any]:
    """Counted tokens and cost of the run's calls (answers in the cache), GPU-hours of its local engines."""
    model_of_key = {c.key: model_of_call(c) for c in all_calls}
    dim_of_unit = {u.unit_id: u.dimension for u in units}
    records = cache.attempts(c.key for c in all_calls)  # every sent attempt was paid (retries included)
    local: dict[str, float] = {}  # model -> GPU-hours per recorded call second (local engines on GPUs)
    for backend in [*groups.values(), *([rqs_judge] if rqs_judge is not None else [])]:
        factor = gpu_hours_per_second(backend, concurrency)
        if factor:
            desc = backend.describe() if hasattr(backend, "describe") else {}
            local[str(desc.get("model") or desc.get("backend"))] = factor
    units_per_dimension: dict[str, int] = {}
    for u in units:
        units_per_dimension[u.dimension] = units_per_dimension.get(u.dimension, 0) + 1
    return cost_summary(records, prices, model_of_record=lambda r: model_of_key.get(r["key"]),
                        dimension_of=lambda r: dim_of_unit.get(r.get("unit_id")),
                        units_per_dimension=units_per_dimension, local_gpus={m: g for m, g in local.items() if g})

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
4. parse every answer and vote over the K samples (:mod:`surveyalign.evaluation.predictions`); optionally
   (``rqs``) rate every scored unit's rationale against the reference (:mod:`surveyalign.evaluation.rqs`);
5. write ``predictions.jsonl`` (one line per unit, whatever its status), ``metrics.json``
   (``surveyalign.scoring.summarize_predictions``) and ``run_config.json``
   (:mod:`surveyalign.evaluation.provenance`), and print the summary (:mod:`surveyalign.evaluation.summary`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from surveyalign.backends import preflight
from surveyalign.calls import CallCache
from surveyalign.console import make_console
from surveyalign.constants import count_statuses
from surveyalign.evaluation.adapters import check_training_records
from surveyalign.evaluation.config import EvalConfig
from surveyalign.evaluation.judges import build_backends, build_judge, close_backend
from surveyalign.evaluation.lengths import prepare_units
from surveyalign.evaluation.plan import execute, judge_calls
from surveyalign.evaluation.predictions import assemble_predictions
from surveyalign.evaluation.provenance import run_config as provenance
from surveyalign.evaluation.provenance import scrub
from surveyalign.evaluation.rqs import attach_ratings, rqs_calls, rqs_counts
from surveyalign.evaluation.rundir import (
    RunLock,
    now,
    set_cache_aside,
    write_json,
    write_jsonl,
)
from surveyalign.evaluation.summary import print_summary
from surveyalign.evaluation.units import (
    load_units,
    template_hashes,
    train_scores_or_none,
)
from surveyalign.scoring import summarize_predictions

__all__ = ["RunResult", "run_evaluation"]


@dataclass
class RunResult:
    """What :func:`run_evaluation` returns.

    Attributes:
        run_dir: the run folder (``calls.jsonl``, ``predictions.jsonl``, ``metrics.json``, ``run_config.json``).
        metrics: the content of ``metrics.json``.
        counts: unit statuses (every status of ``surveyalign.constants.STATUSES`` and ``total``).
        calls: call bookkeeping: ``made`` (this invocation), ``cached`` (reused), ``torn_lines`` (skipped
            cache lines), ``errors`` (calls of this invocation that came back with an error), ``seconds``
            (wall time of the call stage), and the same for the RQS stage under ``rqs_*``.
        predictions: the records written to ``predictions.jsonl``.
    """

    run_dir: Path
    metrics: dict[str, Any]
    counts: dict[str, int]
    calls: dict[str, int] = field(default_factory=dict)
    predictions: list[dict[str, Any]] = field(default_factory=list, repr=False)


def run_evaluation(
    config: EvalConfig,
    *,
    backend: Any | None = None,
    rqs_backend: Any | None = None,
    console: Any | None = None,
    argv: Sequence[str] | None = None,
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

    Returns:
        :class:`RunResult` with the run folder, the metrics dict and the status counts.

    Raises:
        FileNotFoundError: the dataset folder does not exist.
        ValueError: the split or a dimension is absent from the dataset, or a backend option is invalid.
        TrainingMismatchError: (a ``ValueError``) an adapter's training record disagrees with the config on
            dimension, protocol, enable_thinking or use_knowledge, and ``allow_training_mismatch`` is false.
        RuntimeError: another process holds the run folder's lock.
    """
    console = console or make_console()
    run_dir = config.run_dir
    run_dir.mkdir(parents=True, exist_ok=True)
    with RunLock(run_dir / ".lock"):
        return _run_locked(config, run_dir, backend, rqs_backend, console, argv)


def _run_locked(config: EvalConfig, run_dir: Path, backend: Any, rqs_backend: Any, console: Any,
                argv: Sequence[str] | None) -> RunResult:
    started = now()
    calls_path = run_dir / "calls.jsonl"
    if not config.resume:
        aside = set_cache_aside(calls_path)
        if aside is not None:
            console.print(f"resume=false: moved the earlier cache aside to {aside.name}")

    units, data_info = load_units(config)
    train_scores = train_scores_or_none(config.dataset)
    # before any model is loaded: an adapter trained for another prompt setting is refused (or recorded)
    training_records = check_training_records(config, units, backend, console)

    rqs_cfg = config.rqs if (config.rqs is not None and config.rqs.enabled) else None
    built: list[Any] = []
    try:
        judge, groups, judge_of_dim, sources = build_judge(config, backend)
        built += [b for b in groups.values() if b is not backend]
        prompt_length = prepare_units(config, units, judge, sources, console)
        rqs_judge = None
        if rqs_cfg is not None:
            rqs_judge = rqs_backend if rqs_backend is not None else build_backends(rqs_cfg.backend, [None])[0]["shared"]
            if rqs_judge is not rqs_backend:
                built.append(rqs_judge)
        # before the first call: every recorded setting applies, and each API server answers (no minutes of retries)
        preflight(list(groups.values()), config.generation)
        if rqs_judge is not None:
            preflight([rqs_judge], rqs_cfg.generation)
        run_config = provenance(config, run_dir, data_info, template_hashes(config), groups, judge_of_dim, rqs_judge,
                                argv, started)
        run_config["training_records"] = training_records
        run_config["allow_training_mismatch"] = config.allow_training_mismatch
        run_config["prompt_length"] = prompt_length
        write_json(run_dir / "run_config.json", run_config)

        with CallCache.load(calls_path, fsync=config.fsync) as cache:
            if cache.n_torn:
                console.print(f"[yellow]calls.jsonl: skipped {cache.n_torn} torn/unreadable line(s); "
                              "those calls are made again[/]")
            calls: dict[str, Any] = {"torn_lines": cache.n_torn}
            todo, cached = judge_calls(config, units, judge, cache)
            calls.update(cached=cached, made=len(todo))
            calls["errors"], calls["seconds"], calls["calls_per_s"] = execute(todo, config, cache, "judge")
            predictions = assemble_predictions(config, units, judge, cache)
            if rqs_cfg is not None:
                rtodo, rcached = rqs_calls(units, predictions, rqs_judge, rqs_cfg.generation, cache)
                calls.update(rqs_cached=rcached, rqs_made=len(rtodo))
                calls["rqs_errors"], calls["rqs_seconds"], _ = execute(rtodo, config, cache, "rqs")
                attach_ratings(units, predictions, rqs_judge, rqs_cfg.generation, cache)
    finally:
        for b in built:  # close only what this run built
            close_backend(b)

    write_jsonl(run_dir / "predictions.jsonl", predictions)
    counts = count_statuses(predictions)
    stage_counts = rqs_counts(predictions) if rqs_cfg is not None else {}
    metrics = summarize_predictions(predictions, train_scores=train_scores or None,
                                    consistency_available=rqs_cfg is not None, bootstrap=config.bootstrap,
                                    seed=config.generation.seed)
    metrics["harness"] = {"status_counts": counts, "calls": calls, "rqs_counts": stage_counts,
                          "prompt_length": prompt_length}
    write_json(run_dir / "metrics.json", metrics)

    run_config["finished"] = now()
    run_config["counts"] = counts
    run_config["calls"] = calls
    if stage_counts:
        run_config["rqs_counts"] = stage_counts
    write_json(run_dir / "run_config.json", scrub(run_config))

    print_summary(console, config, metrics, predictions, counts, calls, stage_counts, run_dir,
                  prompt_length=prompt_length)
    return RunResult(run_dir=run_dir, metrics=metrics, counts=counts, calls=calls, predictions=predictions)

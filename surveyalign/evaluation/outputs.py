"""The outputs of one evaluation run (:func:`surveyalign.evaluation.run_evaluation`): ``run_config.json`` as written
before the first call, the printed ``--plan`` (whole split or in chunks), and ``predictions.jsonl``, ``metrics.json``,
the finished ``run_config.json`` and the summary after the last call."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from surveyalign.calls import CallCache
from surveyalign.calls.cost import cost_lines
from surveyalign.calls.spend import model_of_call, spent_usd
from surveyalign.constants import count_statuses
from surveyalign.evaluation import finished, stream
from surveyalign.evaluation.caching import cache_plan, cache_plan_lines
from surveyalign.evaluation.config import EvalConfig
from surveyalign.evaluation.consolidation import merge_lines, synthesis_counts, synthesis_settings
from surveyalign.evaluation.plan import context_lines
from surveyalign.evaluation.provenance import run_config as provenance
from surveyalign.evaluation.provenance import scrub
from surveyalign.evaluation.rqs import rqs_counts, rqs_judge_info
from surveyalign.evaluation.rundir import now, write_json, write_jsonl
from surveyalign.evaluation.summary import print_summary
from surveyalign.evaluation.units import template_hashes, train_scores_or_none
from surveyalign.scoring import summarize_predictions
from surveyalign.scoring.judge_info import judge_ran

__all__ = ["RunResult", "finish_run", "print_plan_in_chunks", "print_attempts", "print_plan", "start_run_config"]


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

def start_run_config(config: EvalConfig, run_dir: Path, data_info: dict[str, Any], groups: dict[str, Any],
                      judge_of_dim: dict[str, str], rqs_judge: Any, argv: Sequence[str] | None, started: str,
                      training_records: dict[str, Any], prompt_length: dict[str, Any] | None) -> dict[str, Any]:
    """``run_config.json`` as written before the first call (provenance, training records, prompt lengths, the
    synthesis and batch settings, the RQS judge's name); returned for the run to complete."""
    run_config = provenance(config, run_dir, data_info, template_hashes(config), groups, judge_of_dim, rqs_judge,
                            argv, started)
    run_config["training_records"] = training_records
    run_config["allow_training_mismatch"] = config.allow_training_mismatch
    run_config["prompt_length"] = prompt_length
    run_config["synthesis"] = synthesis_settings(config)
    run_config["batch"] = config.batch_stages()  # which stages go through a provider batch API
    if rqs_judge is not None:  # named on leaderboards (surveyalign.scoring.rqs_judge)
        run_config["rqs_judge"] = rqs_judge_info(config.rqs.name, rqs_judge)
    write_json(run_dir / "run_config.json", run_config)
    return run_config

def print_plan_in_chunks(config: EvalConfig, run_dir: Path, units: list[Any], judge: Any, sources: dict[str, Any],
                  cache: CallCache, prices: Any, console: Any, run_config: dict[str, Any], contexts: Any
                  ) -> RunResult:
    """``--plan`` a chunk of units at a time (:func:`surveyalign.evaluation.stream.plan_in_chunks`): print it, return
    it; nothing is sent."""
    out = stream.plan_in_chunks(config, units, judge, sources, cache, prices, console)
    out["prompt_length"].pop("hidden_text", None)
    run_config["prompt_length"] = out["prompt_length"]
    write_json(run_dir / "run_config.json", run_config)
    for line in [*out["plan"].lines(spent_usd=out["spent_usd"], cached_calls=out["cached"]),
                 *cache_plan_lines(out["cache"]), *merge_lines(out["merges"]), *context_lines(contexts)]:
        console.print(line, markup=False)
    print_attempts(console, cache.attempts())  # chunked: the calls are never held at once
    return RunResult(run_dir=run_dir, metrics={}, counts={},
                     calls={"plan": {**out["plan"].to_dict(), "cache": out["cache"]}, "context": contexts})

def print_plan(run_dir: Path, console: Any, plan: Any, todo: list[Any], judge: Any, cache: CallCache, prices: Any,
                contexts: Any, *, planned: list[Any], cached_calls: int, merge_plan: list[Any],
                unwritten: set[str]) -> RunResult:
    """``--plan`` of the whole split: the plan, the cache / batch scenarios, the merge bound and the context
    lines printed; nothing is sent."""
    cached_plan = cache_plan(todo, judge, cache, prices, model_of_call)
    for line in plan.lines(spent_usd=spent_usd(cache, planned, prices, model_of_call), cached_calls=cached_calls) + \
            cache_plan_lines(cached_plan) + merge_lines(merge_plan) + context_lines(contexts):
        console.print(line, markup=False)
    print_attempts(console, cache.attempts(c.key for c in planned))
    if unwritten:
        console.print(f"  (rqs: {len(unwritten)} rating(s) of rationales not written yet, counted as if "
                      "every unit is scored, each rationale as long as a judge answer)", markup=False)
    return RunResult(run_dir=run_dir, metrics={}, counts={},
                     calls={"plan": {**plan.to_dict(), "cache": cached_plan}, "context": contexts})

def finish_run(config: EvalConfig, run_dir: Path, console: Any, predictions: list[dict[str, Any]],
            calls: dict[str, Any], cost: Any, run_config: dict[str, Any], hidden: dict[str, Any],
            prompt_length: dict[str, Any] | None, static: Any, groups: dict[str, Any], judge_of_dim: dict[str, str],
            n_judge_calls: int, n_judge_keys: int) -> RunResult:
    """Write ``predictions.jsonl``, ``metrics.json``, the finished ``run_config.json`` (and ``finished.json`` when
    the run can be read back), print the summary; the run's result."""
    rqs_cfg = config.rqs if (config.rqs is not None and config.rqs.enabled) else None
    write_jsonl(run_dir / "predictions.jsonl", predictions)
    counts = count_statuses(predictions)
    stage_counts = rqs_counts(predictions) if rqs_cfg is not None else {}
    merged = synthesis_counts(predictions) if config.samples_per_unit > 1 else {}
    train_scores = train_scores_or_none(config.dataset)
    metrics = summarize_predictions(predictions, train_scores=train_scores or None,
                                    consistency_available=rqs_cfg is not None, bootstrap=config.bootstrap,
                                    seed=config.generation.seed, alpha=config.has.alpha, beta=config.has.beta)
    # surveys whose text or title carries invisible characters or answer-format tokens (neutralised before the judge)
    metrics["hidden_text"] = {"n_surveys": len(hidden), "surveys": hidden}
    metrics["harness"] = {"status_counts": counts, "calls": calls, "rqs_counts": stage_counts,
                          "prompt_length": prompt_length, "cost": cost, "layout": config.layout}
    if merged:
        metrics["harness"]["synthesis_counts"] = run_config["synthesis_counts"] = merged
    metrics["judge"] = judge_ran(run_config)  # the judge that ran, per dimension
    if run_config.get("rqs_judge"):
        metrics["rqs_judge"] = run_config["rqs_judge"]
    write_json(run_dir / "metrics.json", metrics)

    run_config["finished"] = now()
    run_config["counts"] = counts
    run_config["calls"] = calls
    run_config["cost"] = cost
    if stage_counts:
        run_config["rqs_counts"] = stage_counts
    write_json(run_dir / "run_config.json", scrub(run_config))
    if static is not None and finished.reusable(predictions, config.retry_errors):
        finished.record(run_dir, static, groups, judge_of_dim, n_calls=n_judge_calls, n_keys=n_judge_keys,
                        torn_lines=calls["torn_lines"])

    print_summary(console, config, metrics, predictions, counts, calls, stage_counts, run_dir,
                  prompt_length=prompt_length)
    if merged:
        console.print(f"synthesis ({'on' if config.synthesis else 'off: best winning sample kept'}): "
                      f"{merged['eligible']} voted unit(s): {merged['synthesized']} merged, {merged['single']} with one "
                      f"distinct rationale, {merged['best_sample']} best sample kept, {merged['failed']} merge(s) "
                      "failed (best sample kept, reason in predictions.jsonl synthesis.error)", markup=False)
    for line in cost_lines(cost):
        console.print(line, markup=False)
    return RunResult(run_dir=run_dir, metrics=metrics, counts=counts, calls=calls, predictions=predictions)

def print_attempts(console: Any, sent: list[dict[str, Any]]) -> None:
    """The ``--plan`` line of what the spend so far counts: every sent attempt (each was paid), retries named.
    ``sent``: the records of the run's calls (the chunked plan, which never holds every call, passes every record
    of ``calls.jsonl``)."""
    if sent:
        console.print(f"  spent so far counts every sent attempt: {len(sent)} record(s) in calls.jsonl, "
                      f"{len(sent) - len({r['key'] for r in sent})} of them retries of a failed answer", markup=False)

"""Tokens, cost and time of an evaluation run: the ``--plan`` estimate, the ``--max-cost`` cap and the summary.

* :func:`plan_run`: before anything is sent, the calls still to make with their prompt tokens (counted with the
  judge's tokenizer: the local engine's own, or ``tokenizer:`` for an API judge; else 4 characters per token),
  expected completion tokens (the mean of the answers already in ``calls.jsonl``, else ``max_new_tokens``), cost
  (``configs/prices.yaml`` or ``prices:``; batch prices for ``backend.options.batch``) and time (seconds per call
  measured so far in the run, over the calls in flight).
* :func:`make_cap`: a :class:`~surveyalign.calls.budget.CostCap` whose starting point is what the run's cache
  already cost.
* :func:`cost_summary`: counted tokens and cost per dimension, per judge and per 1,000 units, and GPU-hours of the
  local engines (the seconds of their calls x their GPUs), written to ``metrics.json`` (``harness.cost``) and
  ``run_config.json``, and printed.

A prompt whose samples share one request or prefill (local engines, ``n_per_request``) counts its prompt tokens
once per run of samples the executor fuses into one request (:func:`surveyalign.calls.fuse_samples`): the same
rule the backends use when they record ``prompt_tokens``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from surveyalign.calls import Call, CallCache
from surveyalign.calls.budget import CallPlan, CostCap, TokenRate
from surveyalign.calls.cost import PriceTable, load_prices, summarize_costs
from surveyalign.calls.spend import PromptCounter, plan_calls
from surveyalign.calls.spend import make_cap as _make_cap
from surveyalign.evaluation.config import EvalConfig

__all__ = ["cost_summary", "load_run_prices", "make_cap", "plan_run"]


def load_run_prices(config: EvalConfig) -> PriceTable:
    """The shipped price table with the config's ``prices`` file (CLI ``--prices``) merged over it.

    Raises:
        FileNotFoundError, ValueError: see :func:`surveyalign.calls.cost.load_prices`.
    """
    return load_prices(override=config.prices)


def plan_run(config: EvalConfig, todo: Sequence[Call], judge: Any, cache: CallCache, prices: PriceTable,
             model_of: Callable[[Any], str | None], *, rqs_todo: Sequence[Call] = (),
             rqs_unwritten: set[str] | frozenset[str] = frozenset()) -> tuple[CallPlan, Callable[[Call], float]]:
    """The estimate of the calls still to make (``--plan``), and the per-call cost estimate (for ``--max-cost``):
    :func:`surveyalign.calls.spend.plan_calls` over the judge calls (the judge's tokenizer per dimension) and the
    RQS stage's (:func:`surveyalign.evaluation.rqs.plan_rqs_calls`; the RQS backend's tokenizer, else 4
    characters per token), with the run's ``concurrency``.

    A rating call of a rationale not written yet (``rqs_unwritten``) adds the tokens a judge answer is expected
    to take (the mean of the judge answers so far, else the judge's ``max_new_tokens``) to its prompt.

    Args:
        config: the run configuration (``concurrency``, ``generation.max_new_tokens``).
        todo: the judge calls still to make.
        judge: the run's judge (``tokenizer_for(dimension)``).
        cache: the run's call cache (completion lengths and seconds measured so far).
        prices: the price table; model_of: the model answering a call.
        rqs_todo: the RQS stage's calls still to make; rqs_unwritten: the keys of those quoting a rationale
            that is not written yet.

    Returns:
        ``(plan, estimate)``: :class:`~surveyalign.calls.budget.CallPlan` and ``call -> estimated USD`` (0 for
        unpriced models). Calls counted without a tokenizer take the tokens per character of the judge answers in
        ``cache`` (:meth:`~surveyalign.calls.budget.TokenRate.learn_records`), the same whole or in chunks.
    """
    from surveyalign.calls.spend import answer_history

    calls = [*todo, *rqs_todo]
    counter = PromptCounter(lambda call: judge.tokenizer_for(call.namespace) if call.stage == "judge" else None,
                            calls, TokenRate().learn_records(cache, "judge"))
    means = answer_history(cache)[0]
    rationale = round(min(means.get("judge", config.generation.max_new_tokens), config.generation.max_new_tokens))

    def extra(call: Call) -> int:
        return rationale if call.key in rqs_unwritten else 0

    return plan_calls(calls, counter, cache, prices, concurrency=config.concurrency, model_of=model_of,
                      extra_prompt=extra)


def make_cap(config: EvalConfig, all_calls: Sequence[Call], cache: CallCache, prices: PriceTable,
             model_of: Callable[[Any], str | None], estimate: Callable[[Call], float]) -> CostCap | None:
    """The ``max_cost`` cap of the run (:func:`surveyalign.calls.spend.make_cap`; ``None`` without one).

    Raises:
        ValueError: a cap on a run whose judge has no price (a local engine: its cost is GPU time).
    """
    return _make_cap(config.max_cost, all_calls, cache, prices, estimate, model_of)


def cost_summary(records: Sequence[dict[str, Any]], prices: PriceTable, *, model_of_record: Callable[[dict], str | None],
                 dimension_of: Callable[[dict], str | None], units_per_dimension: dict[str, int],
                 local_gpus: dict[str, float]) -> dict[str, Any]:
    """Counted tokens and cost of a run's calls, with GPU-hours of its local engines.

    Args:
        records: the ``calls.jsonl`` records of the run's calls.
        prices: the price table.
        model_of_record, dimension_of: which model answered a record and which dimension it counts under.
        units_per_dimension: units of the run per dimension.
        local_gpus: model -> GPU-hours per recorded call second of a local engine on GPUs
            (:func:`surveyalign.calls.spend.gpu_hours_per_second`: ``tensor_parallel_size x workers / 3600``,
            divided by the requests in flight together for the Ray actors).

    Returns:
        :func:`surveyalign.calls.cost.summarize_costs`'s dict plus ``"gpu_hours"`` (model -> GPU-hours: the
        seconds of its calls x its factor).
    """
    out = summarize_costs(records, prices, model_of=model_of_record, units_per_dimension=units_per_dimension,
                          dimension_of=dimension_of)
    hours: dict[str, float] = {}
    for rec in records:
        model = model_of_record(rec) or "unknown"
        if model in local_gpus and rec.get("seconds") is not None:
            hours[model] = hours.get(model, 0.0) + float(rec["seconds"]) * local_gpus[model]
    out["gpu_hours"] = {m: round(h, 6) for m, h in hours.items()}
    return out

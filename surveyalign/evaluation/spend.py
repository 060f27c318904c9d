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
from surveyalign.calls.budget import (
    CallPlan,
    CostCap,
    chars_per_token_count,
    estimate_calls,
)
from surveyalign.calls.cost import PriceTable, load_prices, summarize_costs
from surveyalign.evaluation.config import EvalConfig

__all__ = ["cost_summary", "load_run_prices", "make_cap", "plan_run"]


def load_run_prices(config: EvalConfig) -> PriceTable:
    """The shipped price table with the config's ``prices`` file (CLI ``--prices``) merged over it.

    Raises:
        FileNotFoundError, ValueError: see :func:`surveyalign.calls.cost.load_prices`.
    """
    return load_prices(override=config.prices)


def _model(backend: Any) -> str | None:
    desc = backend.describe() if hasattr(backend, "describe") else {}
    return desc.get("model") or desc.get("backend")


def _shares_prompt(backend: Any) -> bool:
    """True when the K samples of a prompt share one request / prefill (the prompt is processed once)."""
    desc = backend.describe() if hasattr(backend, "describe") else {}
    return bool(desc.get("shared_prefill") or desc.get("n_per_request") or desc.get("backend") == "vllm")


def _batched(backend: Any) -> bool:
    return bool(getattr(backend, "batch", False))


class _Counter:
    """Prompt tokens of a call's messages with the judge's tokenizer for its dimension (cached per messages)."""

    def __init__(self, judge: Any, settings: Any, calls: Sequence[Call] = ()) -> None:
        from surveyalign.calls import fuse_samples

        self.judge = judge
        self.settings = settings
        self.source = "tokenizer"
        self._cache: dict[str, int] = {}
        # the executor sends each run of fused samples as one request (one prefill): its first call pays the prompt
        self._heads = {run[0].key for run in fuse_samples(list(calls))}

    def __call__(self, call: Call) -> int:
        if _shares_prompt(call.backend) and call.key not in self._heads:
            return 0
        if call.messages_hash in self._cache:
            return self._cache[call.messages_hash]
        tok = None
        try:
            tok = self.judge.tokenizer_for(call.namespace)
        except (ValueError, KeyError):
            tok = None
        if tok is None:
            tok = getattr(call.backend, "tokenizer", None)
        if tok is not None:
            from surveyalign.backends.chat import render_chat

            text = render_chat(tok, list(call.messages), enable_thinking=call.settings.enable_thinking)
            n = len(tok(text, add_special_tokens=False)["input_ids"])
        else:
            self.source = "4 characters per token (no tokenizer: set `tokenizer:` for an exact count)"
            n = chars_per_token_count(call.messages)
        self._cache[call.messages_hash] = n
        return n


def _history(cache: CallCache) -> tuple[float | None, float | None]:
    """(mean completion tokens, mean seconds) of the answers in the cache that have them."""
    tokens = [r["completion_tokens"] for r in cache if r.get("completion_tokens") is not None and not r.get("error")]
    seconds = [r["seconds"] for r in cache if r.get("seconds") and not r.get("error") and not r.get("batch_id")]
    return (sum(tokens) / len(tokens) if tokens else None, sum(seconds) / len(seconds) if seconds else None)


def plan_run(config: EvalConfig, todo: Sequence[Call], judge: Any, cache: CallCache, prices: PriceTable,
             model_of: Callable[[Any], str | None]) -> tuple[CallPlan, Callable[[Call], float]]:
    """The estimate of the calls still to make (``--plan``), and the per-call cost estimate (for ``--max-cost``).

    Args:
        config: the run configuration (``generation.max_new_tokens``, ``concurrency``).
        todo: the calls still to make.
        judge: the run's judge (tokenizers).
        cache: the run's call cache (completion lengths and seconds measured so far).
        prices: the price table; model_of: the model answering a call.

    Returns:
        ``(plan, estimate)``: :class:`~surveyalign.calls.budget.CallPlan` and ``call -> estimated USD`` (0 for
        unpriced models).
    """
    mean_completion, mean_seconds = _history(cache)
    count = _Counter(judge, config.generation, todo)

    def completion(call: Call) -> int:
        if mean_completion is not None:
            return round(min(mean_completion, call.settings.max_new_tokens))
        return call.settings.max_new_tokens

    source = (f"mean of the {sum(1 for r in cache if r.get('completion_tokens') is not None)} answers so far"
              if mean_completion is not None else "max_new_tokens (upper bound)")
    in_flight = config.concurrency or max((getattr(c.backend, "concurrency", None) or 1) for c in todo) if todo else 1
    plan = estimate_calls(todo, prompt_tokens=count, completion_tokens=completion, prices=prices,
                          model_of=model_of, batch_of=lambda c: _batched(c.backend), seconds_per_call=mean_seconds,
                          in_flight=int(in_flight or 1), token_source="tokenizer", completion_source=source)
    plan.token_source = count.source

    def estimate(call: Call) -> float:
        hit = prices.lookup(model_of(call))
        return hit[1].cost(count(call), completion(call), batch=_batched(call.backend)) if hit else 0.0

    return plan, estimate


def spent_usd(cache: CallCache, calls: Sequence[Call], prices: PriceTable,
              model_of: Callable[[Any], str | None]) -> float:
    """USD of the answers already in the cache for ``calls`` (their counted tokens)."""
    total = 0.0
    for call in calls:
        rec = cache.get(call.key)
        hit = prices.lookup(model_of(call)) if rec is not None else None
        if hit is not None:
            total += hit[1].cost(int(rec.get("prompt_tokens") or 0), int(rec.get("completion_tokens") or 0),
                                 int(rec.get("cached_tokens") or 0), batch=bool(rec.get("batch_id")))
    return total


def make_cap(config: EvalConfig, all_calls: Sequence[Call], cache: CallCache, prices: PriceTable,
             model_of: Callable[[Any], str | None], estimate: Callable[[Call], float]) -> CostCap | None:
    """The ``--max-cost`` cap (``None`` without one), starting from what the run's cache already cost.

    Raises:
        ValueError: a cap on a run whose judge has no price (a local engine: its cost is GPU time).
    """
    if config.max_cost is None:
        return None
    unpriced = sorted({str(model_of(c)) for c in all_calls if prices.lookup(model_of(c)) is None})
    if unpriced:
        raise ValueError(f"--max-cost: no price for {', '.join(unpriced)} in {', '.join(prices.files)}; add it "
                         "with --prices FILE (a local engine has no token price: its cost is GPU time)")
    return CostCap(config.max_cost, spent_usd(cache, all_calls, prices, model_of), estimate)


def cost_summary(records: Sequence[dict[str, Any]], prices: PriceTable, *, model_of_record: Callable[[dict], str | None],
                 dimension_of: Callable[[dict], str | None], units_per_dimension: dict[str, int],
                 local_gpus: dict[str, int]) -> dict[str, Any]:
    """Counted tokens and cost of a run's calls, with GPU-hours of its local engines.

    Args:
        records: the ``calls.jsonl`` records of the run's calls.
        prices: the price table.
        model_of_record, dimension_of: which model answered a record and which dimension it counts under.
        units_per_dimension: units of the run per dimension.
        local_gpus: model -> GPUs of a local engine (``tensor_parallel_size x workers``, 1 on CPU).

    Returns:
        :func:`surveyalign.calls.cost.summarize_costs`'s dict plus ``"gpu_hours"`` (model -> GPU-hours: the
        seconds of its calls x its GPUs / 3600).
    """
    out = summarize_costs(records, prices, model_of=model_of_record, units_per_dimension=units_per_dimension,
                          dimension_of=dimension_of)
    hours: dict[str, float] = {}
    for rec in records:
        model = model_of_record(rec) or "unknown"
        if model in local_gpus and rec.get("seconds") is not None:
            hours[model] = hours.get(model, 0.0) + float(rec["seconds"]) * local_gpus[model] / 3600.0
    out["gpu_hours"] = {m: round(h, 6) for m, h in hours.items()}
    return out

"""What a command's calls will cost and have cost: the ``--plan`` estimate and the ``--max-cost`` cap of one run
folder, shared by ``evaluate`` and ``score``.

* :class:`PromptCounter`: prompt tokens of a call with the judge's tokenizer (the local engine's own, or
  ``tokenizer:`` for an API judge), else the tokens per character the run's answers show
  (:class:`~surveyalign.calls.budget.TokenRate`, learned as answers come in), else 4 ASCII characters per token; the second and later samples of a prompt whose
  K samples share one request / prefill count 0 (the rule the backends use when they record ``prompt_tokens``).
* :func:`plan_calls`: the :class:`~surveyalign.calls.budget.CallPlan` of the calls still to make (completion =
  the mean of the answers already in the cache, else ``max_new_tokens``; time = seconds per call measured so far
  over the calls in flight) and the per-call USD estimate used by the cap, which prices the prompt-cache reads and
  writes :func:`cache_use` predicts where the call's backend meets a provider prompt cache (the plan's own rows
  stay at the list price: an upper bound).
* :func:`spent_usd` / :func:`make_cap`: the cap starts from what the run folder's cache already cost.
* :func:`model_of_call` / :func:`answer_cost`: which model answers a call and what one answer cost.
* :func:`engine_gpus` / :func:`gpu_hours_per_second`: the GPUs of a local engine and the GPU-hours its recorded
  call seconds stand for (its cost when it has no token price); :func:`planned_gpu_hours`: the plan's estimate.

Prices come from :mod:`surveyalign.calls.cost`; nothing here sends a request.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from surveyalign.backends import backend_capabilities
from surveyalign.calls.budget import (
    CallPlan,
    CostCap,
    TokenRate,
    estimate_calls,
)
from surveyalign.calls.cache import CallCache
from surveyalign.calls.cost import PriceTable
from surveyalign.calls.executor import Call

__all__ = ["CallEstimate", "PromptCounter", "answer_cost", "answer_history", "cache_use", "engine_gpus", "gpu_hours_per_second", "make_cap",
           "model_of_call", "plan_calls", "planned_gpu_hours", "spent_usd", "unanswered"]

#: How prompt tokens are counted without a tokenizer (printed in the plan).
NO_TOKENIZER = "4 characters per token (no tokenizer: set `tokenizer:` for an exact count)"


class CallEstimate:
    """``call -> estimated USD`` (what :func:`plan_calls` returns for the cap), with the :class:`TokenRate` its
    prompt counts use, so the cap can teach it the answers' counted tokens (:meth:`CostCap.observe`).

    Args:
        estimate: the per-call function; rate: its rate (``None``: its counts learn nothing).
    """

    def __init__(self, estimate: Callable[[Any], float], rate: TokenRate | None = None) -> None:
        self.estimate = estimate
        self.rate = rate

    def __call__(self, call: Any) -> float:
        return self.estimate(call)


def model_of_call(call: Any) -> str | None:
    """The model answering ``call``: its backend's ``describe()["model"]`` (a local engine's model folder), else
    the backend's name."""
    desc = call.backend.describe() if hasattr(call.backend, "describe") else {}
    return desc.get("model") or desc.get("backend")


def engine_gpus(backend: Any) -> int:
    """GPUs a local engine holds while it answers: ``tensor_parallel_size`` (1 when not set) x Ray ``workers`` (1
    in-process) for a local engine (``local_engine`` of the kind its ``describe()`` names: transformers / vLLM,
    in-process, on Ray actors or ``ray.data.llm``); 0 on CPU (``device: cpu``) and for API and model-less backends
    (their cost is a token price, or nothing)."""
    desc = backend.describe() if hasattr(backend, "describe") else {}
    if not backend_capabilities(desc.get("backend")).local_engine or not getattr(backend, "answers_from_model", True):
        return 0
    if str(desc.get("device") or "").startswith("cpu"):
        return 0
    return int(desc.get("tensor_parallel_size") or 1) * int((desc.get("ray") or {}).get("workers") or 1)


def gpu_hours_per_second(backend: Any, concurrency: int | None = None) -> float:
    """GPU-hours that one recorded second of a call of ``backend`` stands for: ``engine_gpus / 3600``, divided by
    the requests in flight together for an engine that takes several at once (the Ray actors:
    :func:`~surveyalign.calls.executor.overlapping_requests`), whose recorded seconds are overlapping latencies
    (there the figure is exact while every request in flight is being answered, as in a saturated run, and low
    by the idle share otherwise). 0 for a backend without GPUs.

    Args:
        backend: the backend that answered; concurrency: the run's requests in flight (``None``: the backend's).
    """
    from surveyalign.calls.executor import overlapping_requests

    gpus = engine_gpus(backend)
    return gpus / 3600.0 / overlapping_requests(backend, concurrency) if gpus else 0.0


def planned_gpu_hours(todo: Sequence[Call], seconds_per_call: float | None, concurrency: int | None = None
                      ) -> float | None:
    """Estimated GPU-hours of ``todo``: each call's expected recorded seconds (the run's mean so far) x
    :func:`gpu_hours_per_second` of its backend, the rule the run's counted GPU-hours follow afterwards.

    Returns:
        The estimate, or ``None`` when no answer was timed yet or no call runs on a local engine on GPUs.
    """
    if seconds_per_call is None:
        return None
    factors: dict[int, float] = {}
    for call in todo:
        if id(call.backend) not in factors:
            factors[id(call.backend)] = gpu_hours_per_second(call.backend, concurrency)
    hours = sum(seconds_per_call * factors[id(call.backend)] for call in todo)
    return hours or None


def _shares_prompt(backend: Any) -> bool:
    """True when the K samples of a prompt share one request / prefill (the prompt is processed once): the
    description says so, or the kind it names always shares (``shares_prefill``: vLLM)."""
    desc = backend.describe() if hasattr(backend, "describe") else {}
    return bool(desc.get("shared_prefill") or desc.get("n_per_request")
                or backend_capabilities(desc.get("backend")).shares_prefill)


def batched(call: Any) -> bool:
    """Whether ``call`` goes through its provider's batch API (``backend.options.batch``: batch prices)."""
    return bool(getattr(call.backend, "batch", False))


class PromptCounter:
    """Prompt tokens of a call's messages (cached per messages hash).

    Args:
        tokenizer_of: call -> the tokenizer of the judge for it (``None``: the backend's ``tokenizer``, else
            4 characters per token).
        calls: the calls that will be sent together (their fused runs of samples decide who pays the prompt).
        rate: tokens per character for calls without a tokenizer (shared with the cap, which teaches it the
            answers' counts); default a new :class:`TokenRate` (4 ASCII characters per token until it learns).

    Attributes:
        source: ``"tokenizer"``, or :data:`NO_TOKENIZER` (with the rate's description) once a call was counted
            without one.
        rate: the :class:`TokenRate`.
    """

    def __init__(self, tokenizer_of: Callable[[Call], Any], calls: Sequence[Call] = (),
                 rate: TokenRate | None = None) -> None:
        from surveyalign.calls.fuse import fuse_samples

        self.tokenizer_of = tokenizer_of
        self.source = "tokenizer"
        self.rate = rate if rate is not None else TokenRate()
        self._cache: dict[str, int] = {}
        self._untokenized: set[str] = set()
        # the executor sends each run of fused samples as one request (one prefill): its first call pays the prompt
        self._heads = {run[0].key for run in fuse_samples(list(calls))}

    def _tokenizer(self, call: Call) -> Any:
        """The tokenizer counting ``call``'s tokens: the caller's (``tokenizer_of``), else the backend's, else None."""
        try:
            tok = self.tokenizer_of(call)
        except (ValueError, KeyError):
            tok = None
        return tok if tok is not None else getattr(call.backend, "tokenizer", None)

    def messages_tokens(self, call: Call) -> int:
        """Prompt tokens of ``call``'s messages, whoever pays them (>= 0)."""
        if call.messages_hash in self._cache:
            return self._cache[call.messages_hash]
        if call.messages_hash in self._untokenized:
            return self.rate.count(call.messages)  # never cached: the rate learns as answers come in
        tok = self._tokenizer(call)
        if tok is not None:
            from surveyalign.backends.chat import render_chat

            text = render_chat(tok, list(call.messages), enable_thinking=call.settings.enable_thinking)
            n = len(tok(text, add_special_tokens=False)["input_ids"])
        else:
            self.source = (NO_TOKENIZER if self.rate.rate is None else
                           f"no tokenizer: {self.rate.describe()}; set `tokenizer:` for an exact count")
            self._untokenized.add(call.messages_hash)
            return self.rate.count(call.messages)
        self._cache[call.messages_hash] = n
        return n

    def prefix_tokens(self, call: Call) -> int:
        """Tokens of the shared prefix ``call``'s prompt declares (:func:`surveyalign.calls.prefix.shared_text`;
        0 when it declares none), with the same tokenizer as :meth:`messages_tokens` (else 4 characters per
        token)."""
        from surveyalign.calls.prefix import shared_text

        text = shared_text(call.messages)
        if not text:
            return 0
        tok = self._tokenizer(call)
        return len(tok(text, add_special_tokens=False)["input_ids"]) if tok is not None else -(-len(text) // 4)

    def __call__(self, call: Call) -> int:
        """Billed prompt tokens of ``call`` (0 for a sample riding on another's prefill)."""
        if call.key not in self._heads and (_shares_prompt(call.backend) or (
                call.settings.greedy and backend_capabilities(getattr(call.backend, "name", None))
                .greedy_reads_prompt_once)):
            return 0  # a greedy run of samples on the transformers engine is one row: the prompt read once
        return self.messages_tokens(call)


def unanswered(cache: CallCache, calls: Sequence[Call], check: Any = None, *, retry_errors: bool = True) -> list[Call]:
    """The calls of ``calls`` a cached caller would still make (absent from the cache, or failed there and asked
    again: :meth:`CallCache.missing`'s rule, ``retry_errors`` included), one per key, without counting them in the
    cache's reuse counts (for plans and estimates)."""
    retry = retry_errors and not cache.keep_failed
    out: dict[str, Call] = {}
    for call in calls:
        if call.key in out:
            continue
        if cache.get(call.key) is None or (retry and cache.failure(call, check) is not None):
            out[call.key] = call
    return list(out.values())


def answer_history(cache: CallCache) -> tuple[dict[str, float], float | None, int]:
    """``({stage: mean completion tokens}, mean seconds, answers with a completion count)`` of the answers in the
    cache (errors left out; batch answers do not time a call)."""
    tokens: dict[str, list[int]] = {}
    for r in cache:
        if r.get("completion_tokens") is not None and not r.get("error"):
            tokens.setdefault(str(r.get("stage")), []).append(int(r["completion_tokens"]))
    seconds = [r["seconds"] for r in cache if r.get("seconds") and not r.get("error") and not r.get("batch_id")]
    return ({s: sum(t) / len(t) for s, t in tokens.items()}, sum(seconds) / len(seconds) if seconds else None,
            sum(len(t) for t in tokens.values()))


def plan_calls(todo: Sequence[Call], counter: PromptCounter, cache: CallCache, prices: PriceTable, *,
               concurrency: int | None = None, model_of: Callable[[Any], str | None] = model_of_call,
               extra_prompt: Callable[[Call], int] | None = None) -> tuple[CallPlan, Callable[[Call], float]]:
    """The estimate of the calls still to make (``--plan``), and the per-call USD estimate (for ``--max-cost``).

    Completion tokens of a call: the mean of the answers of its stage already in the cache (capped by its
    ``max_new_tokens``), else ``max_new_tokens`` (an upper bound).

    Args:
        todo: the calls still to make (``namespace`` groups the plan's rows).
        counter: counts a call's prompt tokens.
        cache: the run folder's cache (completion lengths and seconds measured so far).
        prices: the price table; model_of: the model answering a call.
        concurrency: calls in flight (default: the largest backend ``concurrency``, else 1).
        extra_prompt: prompt tokens a call will hold beyond its messages (a call planned before the text it
            quotes exists: an RQS rating of a rationale not yet written); default none.

    Returns:
        ``(plan, estimate)``: the :class:`~surveyalign.calls.budget.CallPlan` and ``call -> estimated USD`` (0 for
        unpriced models; with the predicted prompt-cache reads and writes of :func:`cache_use` where the call's
        backend meets a provider prompt cache, the calls sent in the executor's prefix-group order; a
        :class:`CallEstimate` sharing the counter's rate).
    """
    counter.rate.learn(cache, todo)  # retried calls: their earlier answers' counts
    means, mean_seconds, n_answers = answer_history(cache)

    def completion(call: Call) -> int:
        mean = means.get(call.stage)
        return call.settings.max_new_tokens if mean is None else round(min(mean, call.settings.max_new_tokens))

    def prompt(call: Call) -> int:
        return counter(call) + (extra_prompt(call) if extra_prompt is not None else 0)

    stages = {c.stage for c in todo}
    source = ("max_new_tokens (upper bound)" if not any(s in means for s in stages) else
              f"mean of the {n_answers} answers so far" if all(s in means for s in stages) else
              f"mean of the {n_answers} answers so far; max_new_tokens (upper bound) for "
              + ", ".join(sorted(s for s in stages if s not in means)))
    in_flight = concurrency or (max((getattr(c.backend, "concurrency", None) or 1) for c in todo) if todo else 1)
    plan = estimate_calls(todo, prompt_tokens=prompt, completion_tokens=completion, prices=prices,
                          model_of=model_of, batch_of=batched, seconds_per_call=mean_seconds,
                          in_flight=int(in_flight or 1), completion_source=source)
    plan.token_source = counter.source
    plan.gpu_hours = planned_gpu_hours(todo, mean_seconds, concurrency)

    use = cache_use(todo, counter)

    def estimate(call: Call) -> float:
        hit = prices.lookup(model_of(call))
        if hit is None:
            return 0.0
        tokens = prompt(call)
        got = use.get(call.key)
        read = min(got.read, tokens) if got is not None else 0
        write = min(got.write, tokens - read) if got is not None else 0
        return hit[1].cost(tokens, completion(call), read, batch=batched(call), cache_write_tokens=write)

    return plan, CallEstimate(estimate, counter.rate)


def cache_use(todo: Sequence[Call], counter: PromptCounter) -> dict[str, Any]:
    """The predicted prompt-cache reads and writes of ``todo`` (:func:`surveyalign.calls.prefix.predict_cache`
    with each backend's rules, :func:`surveyalign.calls.executor.cache_rules`), for the calls whose backend meets
    a provider prompt cache; empty when none does.

    Args:
        todo: the calls still to make.
        counter: counts a call's prompt tokens and its shared prefix's.

    Returns:
        ``{call.key: CacheUse}`` (``read`` / ``write`` tokens, >= 0) of the calls of cached backends.
    """
    from surveyalign.calls.executor import cache_rules
    from surveyalign.calls.prefix import predict_cache

    rules = {id(c.backend): cache_rules(c.backend) for c in todo}
    cached = [c for c in todo if rules[id(c.backend)] is not None]
    if not cached:
        return {}
    return predict_cache(cached, counter.messages_tokens, counter.prefix_tokens, lambda c: rules[id(c.backend)])


def spent_usd(cache: CallCache, calls: Sequence[Call], prices: PriceTable,
              model_of: Callable[[Any], str | None] = model_of_call) -> float:
    """USD of every attempt in the cache for ``calls`` (:meth:`CallCache.attempts`: a failed answer asked again
    was paid each time it was sent) at their counted tokens; batch prices for batch answers."""
    by_key = {call.key: call for call in calls}
    total = 0.0
    for rec in cache.attempts(by_key):
        hit = prices.lookup(model_of(by_key[rec["key"]]))
        if hit is not None:
            total += hit[1].cost(int(rec.get("prompt_tokens") or 0), int(rec.get("completion_tokens") or 0),
                                 int(rec.get("cached_tokens") or 0), batch=bool(rec.get("batch_id")),
                                 cache_write_tokens=int(rec.get("cache_write_tokens") or 0))
    return total


def make_cap(max_cost: float | None, all_calls: Sequence[Call], cache: CallCache, prices: PriceTable,
             estimate: Callable[[Call], float], model_of: Callable[[Any], str | None] = model_of_call
             ) -> CostCap | None:
    """The ``--max-cost`` cap (``None`` without one), starting from what the run folder's cache already cost
    (every attempt of ``all_calls``: the answers of earlier runs, failed and unparseable ones asked again
    included). When ``estimate`` carries a rate (:class:`CallEstimate`), the rate learns from the answers of
    ``all_calls`` already kept and the cap teaches it each new answer's counts.

    Raises:
        ValueError: a cap on a run whose judge has no price (a local engine: its cost is GPU time).
    """
    if max_cost is None:
        return None
    unpriced = sorted({str(model_of(c)) for c in all_calls if prices.lookup(model_of(c)) is None})
    if unpriced:
        raise ValueError(f"--max-cost: no price for {', '.join(unpriced)} in {', '.join(prices.files)}; add it "
                         "with --prices FILE (a local engine has no token price: its cost is GPU time)")
    rate = getattr(estimate, "rate", None)
    if rate is not None:
        rate.learn(cache, all_calls)
    return CostCap(max_cost, spent_usd(cache, all_calls, prices, model_of), estimate, rate)


def answer_cost(prices: PriceTable, model_of: Callable[[Any], str | None] = model_of_call
                ) -> Callable[[Call, Any], float | None]:
    """``(call, generation) -> USD`` of one answer at its counted tokens (``None``: the model has no price)."""
    def cost_of(call: Call, generation: Any) -> float | None:
        hit = prices.lookup(model_of(call))
        if hit is None:
            return None
        return hit[1].cost(int(generation.prompt_tokens or 0), int(generation.completion_tokens or 0),
                           int(generation.cached_tokens or 0), batch=bool(generation.batch_id),
                           cache_write_tokens=int(getattr(generation, "cache_write_tokens", None) or 0))
    return cost_of

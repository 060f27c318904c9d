"""surveyalign.calls: the call layer below every LLM and HTTP user (cached calls, retries, polite HTTP).

Sub-modules:

- :mod:`~surveyalign.calls.cache`: :class:`CallCache` (the append-only ``calls.jsonl`` of a run: what makes it
  resumable), :func:`call_key` (content + a free ``namespace`` chosen by the caller), :func:`stable_hash`,
  :func:`backend_identity`;
- :mod:`~surveyalign.calls.cached`: :func:`make_call`, :func:`cached_generate` / :func:`acached_generate`: the one
  cached caller (answers from the cache, the rest from the backend, each answer appended as it arrives);
- :mod:`~surveyalign.calls.executor`: :class:`Call`, :func:`run_calls` / :func:`arun_calls` (requests in flight for
  API backends, batches for local ones);
- :mod:`~surveyalign.calls.fuse`: :func:`fuse_samples` (the K samples of one prompt as one ``n=K`` request);
- :mod:`~surveyalign.calls.http`: :class:`PoliteClient` (on-disk cache, rate limit, retries, keys from the
  environment) and its errors;
- :mod:`~surveyalign.calls.cost`: what calls cost (:func:`load_prices`: the dated ``configs/prices.yaml`` with a
  user's table over it; :func:`summarize_costs`: tokens x prices per dimension / judge / 1,000 units; GPU-hours);
- :mod:`~surveyalign.calls.budget`: before the calls are sent: :func:`estimate_calls` (``--plan``) and
  :class:`CostCap` (``--max-cost``);
- :mod:`~surveyalign.calls.batches`: :func:`run_batches`: calls through a provider batch API, batch ids in
  ``RUN_DIR/batches.jsonl``, collected by the next run after a crash, never sent twice;
- :class:`RetryPolicy` with the per-service settings :data:`OPENAI_RETRY` and :data:`HTTP_RETRY` (defined in
  :mod:`surveyalign.backends.retry`, the layer below, so the ``openai`` backend uses the same policy).

Usage::

    from surveyalign.calls import CallCache, cached_generate, make_call

    cache = CallCache.load("run/calls.jsonl")
    calls = [make_call(backend, settings, stage="summary", unit_id=doc_id, namespace="ka.summary",
                       messages=messages) for doc_id, messages in prompts]
    answers = cached_generate(calls, cache, check=reader)  # a re-run makes only the missing or failed calls
    print(cache.summary())  # answers: R reused, T retried (their cached answer had failed), M made

A failed answer (an error, or one the caller's ``check`` cannot use: it failed to parse) is asked again on a
re-run; ``CallCache.load(path, keep_failed=True)`` (the commands' ``--keep-failed``) keeps it instead.

Namespaces in use: the survey judge passes the dimension judged; ``"rqs"`` (evaluation consistency ratings),
``"synthesis"`` (rationale synthesis), ``"ka.summary"`` (Crit-KA summaries), ``"prism.extract"`` (PRISM
extraction), ``"autorate.<stage>"`` (autoraters).
"""

from surveyalign.backends.retry import HTTP_RETRY, OPENAI_RETRY, RetryPolicy
from surveyalign.calls.batches import BatchLog, BatchOutcome, run_batches
from surveyalign.calls.budget import CallPlan, CostCap, estimate_calls
from surveyalign.calls.cache import (
    OPERATIONAL_KEYS,
    CallCache,
    Check,
    backend_identity,
    call_key,
    stable_hash,
)
from surveyalign.calls.cached import (
    CachedAnswer,
    acached_generate,
    cached_generate,
    make_call,
)
from surveyalign.calls.cost import ModelPrice, PriceTable, load_prices, summarize_costs
from surveyalign.calls.executor import (
    Call,
    OnResult,
    answers_from_models,
    arun_calls,
    run_calls,
    run_coroutine,
)
from surveyalign.calls.fuse import fuse_samples

#: Names of :mod:`surveyalign.calls.http`, loaded on first use (it imports httpx and hishel: a tenth of a second
#: that ``surveyalign CMD --help`` and every LLM-only caller need not pay).
_HTTP_NAMES = ("UNREACHABLE_RETRY_S", "HttpStats", "HTTPStatusError", "NotFoundError", "PoliteClient",
               "UnreachableError")


def __getattr__(name: str):
    if name in _HTTP_NAMES:
        from surveyalign.calls import http

        value = getattr(http, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "HTTP_RETRY",
    "OPENAI_RETRY",
    "OPERATIONAL_KEYS",
    "UNREACHABLE_RETRY_S",
    "BatchLog",
    "BatchOutcome",
    "CachedAnswer",
    "Call",
    "CallCache",
    "CallPlan",
    "Check",
    "CostCap",
    "HTTPStatusError",
    "HttpStats",
    "ModelPrice",
    "NotFoundError",
    "OnResult",
    "PoliteClient",
    "PriceTable",
    "RetryPolicy",
    "UnreachableError",
    "acached_generate",
    "answers_from_models",
    "arun_calls",
    "backend_identity",
    "cached_generate",
    "call_key",
    "estimate_calls",
    "fuse_samples",
    "load_prices",
    "make_call",
    "run_batches",
    "run_calls",
    "run_coroutine",
    "stable_hash",
    "summarize_costs",
]

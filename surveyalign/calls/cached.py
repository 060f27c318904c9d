"""Cached calls: build a keyed :class:`~surveyalign.calls.Call`, answer it from ``calls.jsonl`` or the backend.

The one loop of every LLM caller (the judge, autoraters, PRISM extraction, Crit-KA summaries, rationale synthesis;
the evaluation harness plans with :meth:`~surveyalign.calls.CallCache.missing` and makes the calls with
:func:`~surveyalign.calls.run_calls` itself, to time them): key each call (:func:`~surveyalign.calls.call_key`),
reuse the cached answers that did not fail, make the missing or failed calls with
:func:`~surveyalign.calls.run_calls` and append each answer to the cache as it arrives, so a re-run makes only
what is missing.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from surveyalign.backends import Backend, Generation, GenerationSettings
from surveyalign.calls.cache import (
    CallCache,
    Check,
    backend_identity,
    call_key,
    stable_hash,
)
from surveyalign.calls.executor import Call, OnResult, arun_calls, run_calls

__all__ = ["CachedAnswer", "acached_generate", "cached_generate", "make_call"]


@dataclass(frozen=True)
class CachedAnswer:
    """The answer to one call of :func:`cached_generate`.

    Attributes:
        generation: the backend's answer (``error`` set when the call failed).
        cached: True when it was read from the cache (no call made).
    """

    generation: Generation
    cached: bool


def make_call(backend: Backend, settings: GenerationSettings, *, stage: str, unit_id: str, namespace: str,
              messages: Sequence[dict[str, str]], sample: int = 0, identity: dict[str, Any] | None = None) -> Call:
    """A :class:`~surveyalign.calls.Call` with its cache key (PaperOrchestra §4 / PRISM / SurveyReview App. E calls).

    Args:
        backend: the backend that answers the call.
        settings: its generation settings (part of the key).
        stage: the caller's stage name, e.g. ``"autorate/partition"`` or ``"prism:extract"``.
        unit_id: what the call is about (review id, pair id, ...); part of the key.
        namespace: the caller's namespace in the key (keeps one caller's calls apart from another's), e.g.
            ``"prism.extract"``, ``"ka.summary"``; the judge passes the dimension judged.
        messages: the chat messages.
        sample: sample index k (part of the key).
        identity: the backend part of the key; default :func:`~surveyalign.calls.backend_identity` of ``backend``
            (pass it when making many calls, it calls ``backend.describe()``).

    Returns:
        The call, ``key`` and ``messages_hash`` filled in.
    """
    messages = list(messages)
    messages_hash = stable_hash(messages)
    key = call_key(stage=stage, unit_id=unit_id, namespace=namespace, sample=sample, messages_hash=messages_hash,
                   backend=backend_identity(backend) if identity is None else identity,
                   settings=settings.model_dump())
    return Call(key=key, stage=stage, unit_id=unit_id, namespace=namespace, sample=sample, messages=messages,
                messages_hash=messages_hash, settings=settings, backend=backend)


def _plan(calls: Sequence[Call], cache: CallCache | None, check: Check | None = None
          ) -> tuple[dict[str, CachedAnswer], list[Call], OnResult]:
    """The cached answers, the calls still to make (one per key: :meth:`CallCache.missing`) and the callback
    recording each new answer."""
    if cache is None:
        first: dict[str, Call] = {}
        for call in calls:
            first.setdefault(call.key, call)
        todo, answers = list(first.values()), {}
    else:
        todo, _ = cache.missing(calls, check=check)
        asked = {call.key for call in todo}
        answers = {call.key: CachedAnswer(cache.generation(call.key), True) for call in calls if call.key not in asked}
    lock = threading.Lock()

    def on_result(call: Call, generation: Generation, seconds: float) -> None:
        with lock:
            answers[call.key] = CachedAnswer(generation, False)
            if cache is not None:
                cache.add(call, generation, seconds)

    return answers, todo, on_result


def _in_order(calls: Sequence[Call], answers: dict[str, CachedAnswer]) -> list[CachedAnswer]:
    return [answers.get(c.key) or CachedAnswer(Generation.failed("no answer"), False) for c in calls]


def cached_generate(calls: Sequence[Call], cache: CallCache | None, *, concurrency: int | None = None,
                    batch_size: int | None = None, progress: bool = False, desc: str = "calls",
                    check: Check | None = None) -> list[CachedAnswer]:
    """Answer ``calls`` in order: from ``cache`` where a usable answer is stored, else from the backend.

    Calls with the same key are made once; a cached failed answer (an error, or one ``check`` rejects: it failed
    to parse) is asked again unless the cache keeps failed answers (``CallCache.keep_failed``); every answer made
    is appended to ``cache`` as it arrives (so an interrupted run resumes), and ``cache.counts`` counts the
    answers reused, retried and made. A failing call never raises.

    Args:
        calls: the calls (from :func:`make_call` or ``surveyalign.judge.Judge.calls_for``), any backends, stages
            and sample indices.
        cache: the run's ``calls.jsonl``; ``None`` = every call is made.
        concurrency: requests in flight for native-async (API) backends (default: the backend's own setting).
        batch_size: prompts per ``generate`` call for the other backends (default: the backend's own).
        progress: show a progress bar.
        desc: its label.
        check: the caller's reader, ``(call, generation) -> reason | None`` (a reason: unusable, ask again).

    Returns:
        One :class:`CachedAnswer` per call, in the order of ``calls`` (a failed ``Generation`` when the backend
        gave none).

    Raises:
        ValueError: from the backend's request check (e.g. empty messages); backend errors are returned instead.
    """
    answers, todo, on_result = _plan(calls, cache, check)
    run_calls(todo, on_result, concurrency=concurrency, batch_size=batch_size, progress=progress, desc=desc,
              around_async=cache.background if cache is not None else None)
    return _in_order(calls, answers)


async def acached_generate(calls: Sequence[Call], cache: CallCache | None, *, concurrency: int | None = None,
                           batch_size: int | None = None, progress: bool = False, desc: str = "calls",
                           check: Check | None = None) -> list[CachedAnswer]:
    """Async :func:`cached_generate` for callers already in an event loop (same arguments, same result; the
    calls go through :func:`~surveyalign.calls.arun_calls`)."""
    answers, todo, on_result = _plan(calls, cache, check)
    await arun_calls(todo, on_result, concurrency=concurrency, batch_size=batch_size, progress=progress, desc=desc)
    return _in_order(calls, answers)

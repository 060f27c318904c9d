"""The call executor: many chat prompts through their backends, each answer handed over as it arrives.

Native-async backends (the API client) keep ``concurrency`` requests in flight; the others get batches of
``batch_size`` prompts that share their settings (vLLM schedules its own batches, so it gets many at once). A
failing call never raises: it comes back as a ``Generation`` with ``error`` set. Callers persist answers in
``on_result`` (the evaluation call cache appends them to ``calls.jsonl``), which is what makes a run resumable.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import sys
import threading
import time
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass
from typing import Any

from tqdm.auto import tqdm

from surveyalign.backends import Backend, Generation, GenerationSettings, backend_capabilities
from surveyalign.calls.fuse import fuse_samples

__all__ = ["Call", "OnResult", "answers_from_models", "arun_calls", "cache_rules", "run_calls", "run_coroutine"]

_log = logging.getLogger(__name__)


@dataclass
class Call:
    """One call to make: ``messages`` with ``settings`` through ``backend``.

    Attributes:
        key: the call-cache key (:func:`surveyalign.calls.call_key`).
        stage: ``"judge"`` or ``"rqs"`` (or a caller's own stage name).
        unit_id: the unit the call belongs to.
        namespace: the caller's namespace in the key (the judge: the dimension judged; e.g. ``"ka.summary"``).
        sample: sample index k.
        messages: the chat prompt.
        messages_hash: ``stable_hash(messages)``.
        settings: the generation settings of this sample (seed = base seed + k).
        backend: the backend answering it.
    """

    key: str
    stage: str
    unit_id: str
    namespace: str
    sample: int
    messages: list[dict[str, str]]
    messages_hash: str
    settings: GenerationSettings
    backend: Backend


#: Called once per answered call: ``(call, generation, seconds)``; from one thread at a time per backend group.
OnResult = Callable[[Call, Generation, float], None]


def _failed(err: BaseException) -> Generation:
    return Generation.failed(f"{type(err).__name__}: {err}")


def _native_async(backend: Any) -> bool:
    """True when the backend implements ``agenerate`` itself (rather than wrapping ``generate`` in a thread)."""
    own = getattr(type(backend), "agenerate", None)
    return own is not None and own is not Backend.agenerate


def _option(backend: Any, name: str) -> int | None:
    value = getattr(backend, name, None)
    if value is None and hasattr(backend, "describe"):
        value = backend.describe().get(name)
    return value if isinstance(value, int) and value > 0 else None


def cache_rules(backend: Any) -> Any:
    """The provider prompt cache ``backend`` meets (its ``prompt_cache()``; ``None`` when it has none)."""
    ask = getattr(backend, "prompt_cache", None)
    return ask() if callable(ask) else None


def _cache_waves(backend: Any, calls: Sequence[Call]) -> list[list[list[Call]]]:
    """The prefix groups of ``calls`` (:func:`surveyalign.calls.prefix.order_for_cache`), each as a list of runs
    whose first run is sent alone before the others: the group's first call (its whole fused run when the backend
    sends a run's samples as one request), so the others find its prefix in the provider's cache."""
    from surveyalign.calls.prefix import order_for_cache, prefix_group

    groups: dict[str, list[Call]] = {}
    for call in order_for_cache(calls):
        groups.setdefault(prefix_group(call), []).append(call)
    one_request = bool(getattr(backend, "n_per_request", False))
    out = []
    for members in groups.values():
        runs = fuse_samples(members)
        if not one_request and len(runs[0]) > 1:
            runs = [runs[0][:1], runs[0][1:], *runs[1:]]
        out.append(runs)
    return out


async def _run_async(backend: Any, calls: Sequence[Call], concurrency: int, record: OnResult) -> None:
    """``concurrency`` workers pull runs of calls (the K samples of one prompt: :func:`fuse_samples`) and await
    one ``agenerate(n=len(run))`` each; every answer is recorded on arrival. A backend with a provider prompt cache
    (:func:`cache_rules`) gets its calls by prefix group: a group's first call, then the rest of the group
    together, at most ``concurrency`` groups open at once and ``concurrency`` requests in flight."""
    set_limit = getattr(backend, "set_concurrency", None)
    if callable(set_limit):  # one knob: the run's limit is what the backend keeps in flight
        set_limit(concurrency)
    if cache_rules(backend) is not None:
        try:
            await _run_waves(backend, calls, concurrency, record)
        finally:
            await _aclose(backend)
        return
    pending = list(reversed(fuse_samples(calls)))

    async def worker() -> None:
        while pending:
            run = pending.pop()
            await _send(backend, run, record)

    try:
        await asyncio.gather(*(worker() for _ in range(min(concurrency, len(calls)))))
    finally:
        await _aclose(backend)


async def _run_waves(backend: Any, calls: Sequence[Call], concurrency: int, record: OnResult) -> None:
    """:func:`_cache_waves` groups through ``concurrency`` group workers sharing ``concurrency`` request slots."""
    pending = list(reversed(_cache_waves(backend, calls)))
    slots = asyncio.Semaphore(concurrency)

    async def limited(run: list[Call]) -> None:
        async with slots:
            await _send(backend, run, record)

    async def worker() -> None:
        while pending:
            runs = pending.pop()
            await limited(runs[0])
            if runs[1:]:
                await asyncio.gather(*(limited(run) for run in runs[1:]))

    await asyncio.gather(*(worker() for _ in range(min(concurrency, len(pending)))))


async def _send(backend: Any, run: list[Call], record: OnResult) -> None:
    """One ``agenerate(n=len(run))`` of a run of samples; every answer recorded (a failure as the run's error)."""
    t0 = time.perf_counter()
    try:
        out = await backend.agenerate([run[0].messages], run[0].settings, n=len(run))
        generations = list(out[0])
        if len(generations) != len(run):
            raise RuntimeError(f"backend returned {len(generations)} answers for {len(run)} samples")
    except Exception as err:  # noqa: BLE001 - a backend bug becomes this call's recorded error
        generations = [_failed(err)] * len(run)
    seconds = (time.perf_counter() - t0) / len(run)
    for call, generation in zip(run, generations):
        record(call, generation, seconds)


async def _aclose(backend: Any) -> None:
    aclose = getattr(backend, "aclose", None)
    if callable(aclose):
        try:
            await aclose()
        except Exception as err:  # noqa: BLE001
            _log.debug("closing the async client of %s failed: %s", type(backend).__name__, err)


def _run_sync(backend: Any, calls: Sequence[Call], batch_size: int, record: OnResult) -> None:
    """Batches of ``batch_size`` prompts sharing settings through ``backend.generate``; the K samples of one prompt
    go as one ``n=K`` row (:func:`fuse_samples`: one prefill for them); recorded per batch."""
    by_shape: dict[tuple[str, int], list[list[Call]]] = {}
    for run in fuse_samples(calls):
        by_shape.setdefault((run[0].settings.model_dump_json(), len(run)), []).append(run)
    for (_, n), runs in by_shape.items():
        for start in range(0, len(runs), batch_size):
            batch = runs[start:start + batch_size]
            t0 = time.perf_counter()
            try:
                out = backend.generate([run[0].messages for run in batch], batch[0][0].settings, n=n)
                if len(out) != len(batch) or any(len(row) != n for row in out):
                    raise RuntimeError(f"backend returned {[len(row) for row in out]} answers for {len(batch)} "
                                       f"prompts x {n} samples")
            except Exception as err:  # noqa: BLE001 - recorded per call, retried on resume
                out = [[_failed(err)] * n for _ in batch]
            per_call = (time.perf_counter() - t0) / (len(batch) * n)
            for run, row in zip(batch, out):
                for call, generation in zip(run, row):
                    record(call, generation, per_call)


def answers_from_models(calls: Sequence[Call]) -> bool:
    """True when every backend of ``calls`` answers with a model (``Backend.answers_from_model``): only then are
    calls per second a measure of work (constant / scripted judges answer instantly)."""
    return all(getattr(c.backend, "answers_from_model", True) for c in calls)


def overlapping_requests(backend: Any, concurrency: int | None = None) -> int:
    """How many of ``backend``'s requests :func:`run_calls` keeps in flight at once, as their recorded seconds
    overlap: ``concurrency`` (default: the backend's ``concurrency``, else 32) for a native-async backend, whose
    recorded seconds are latencies of requests in flight together (the limit :func:`_groups` gives it); 1 for the
    others, whose recorded seconds share out each batch's wall time (they sum to the time the engine was busy)."""
    return int(concurrency or _option(backend, "concurrency") or 32) if _native_async(backend) else 1


def _groups(calls: Sequence[Call], concurrency: int | None, batch_size: int | None
            ) -> list[tuple[Any, list[Call], bool, int]]:
    """Calls grouped by backend object, in first-seen order: ``(backend, calls, native async, limit)``.

    The limit is the number of requests in flight for a native-async backend, else the batch size.
    """
    groups: dict[int, tuple[Any, list[Call]]] = {}
    for call in calls:
        groups.setdefault(id(call.backend), (call.backend, []))[1].append(call)
    out = []
    for backend, group in groups.values():
        if _native_async(backend):
            out.append((backend, group, True, int(concurrency or _option(backend, "concurrency") or 32)))
        else:  # the kind's own batch size (vLLM schedules its own batches: it takes many prompts at once)
            fallback = backend_capabilities(getattr(backend, "name", None)).default_batch_size
            out.append((backend, group, False, int(batch_size or _option(backend, "batch_size") or fallback)))
    return out


class _Counter:
    """Error count and progress bar shared by the answers of one run of calls."""

    def __init__(self, calls: Sequence[Call], desc: str, progress: bool, on_result: OnResult) -> None:
        self.errors = 0
        self._lock = threading.Lock()
        self._on_result = on_result
        timed = answers_from_models(calls)  # a baseline's "rate" is no work: no rate or ETA shown
        self.bar = tqdm(total=len(calls), desc=desc, unit="call", disable=not progress, dynamic_ncols=True,
                        file=sys.stderr, smoothing=0.1, bar_format=None if timed else "{l_bar}{bar}| {n_fmt}/{total_fmt}")

    def __call__(self, call: Call, generation: Generation, seconds: float) -> None:
        with self._lock:
            self._on_result(call, generation, seconds)
            if generation.error:
                self.errors += 1
                self.bar.set_postfix(errors=self.errors, refresh=False)
            self.bar.update(1)


@contextlib.contextmanager
def _frozen_heap() -> Any:
    """While the calls run, the objects that were alive before them (units, prompts, cache records, the dataset
    rows) sit in the collector's permanent generation (``gc.freeze``), so its periodic full passes walk only what
    the calls allocate: about a sixth of the CPU per call at 256 calls in flight. They go back on exit.
    """
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def run_calls(calls: Sequence[Call], on_result: OnResult, *, concurrency: int | None = None,
              batch_size: int | None = None, progress: bool = False, desc: str = "calls",
              around_async: Callable[[], Any] | None = None) -> int:
    """Make ``calls`` and hand every answer to ``on_result`` as it arrives (SurveyReview App. E: K calls per unit).

    Args:
        calls: the calls, in any order; grouped by backend, each group run in turn.
        on_result: receives ``(call, generation, seconds)`` for every call (under a lock).
        concurrency: requests in flight for a native-async backend (default: its ``concurrency``, else 32); a
            backend with ``set_concurrency`` (the ``openai`` one) is set to it, so this is what is in flight, not
            capped by the backend's own ``concurrency`` option.
        batch_size: prompts per ``generate`` call for the other backends (default: the backend's ``batch_size``,
            else 256 for vLLM, 8 otherwise).
        progress: show a tqdm bar on stderr.
        desc: the bar's label.
        around_async: a context-manager factory entered around each async group (the evaluation cache passes
            ``cache.background`` so disk writes stay off the event loop).

    Returns:
        The number of answers that came back with an error.
    """
    if not calls:
        return 0
    counter = _Counter(calls, desc, progress, on_result)
    try:
        for backend, group, native, limit in _groups(calls, concurrency, batch_size):
            if not native:
                _run_sync(backend, group, limit, counter)
                continue
            with around_async() if around_async is not None else contextlib.nullcontext(), _frozen_heap():
                run_coroutine(_run_async(backend, group, limit, counter))
    finally:
        counter.bar.close()
    return counter.errors


async def arun_calls(calls: Sequence[Call], on_result: OnResult, *, concurrency: int | None = None,
                     batch_size: int | None = None, progress: bool = False, desc: str = "calls") -> int:
    """Async :func:`run_calls` for callers already in an event loop (same arguments, same result).

    Native-async backends are awaited on the caller's loop; the batches of the other backends run in a worker
    thread so the loop is never blocked.
    """
    if not calls:
        return 0
    counter = _Counter(calls, desc, progress, on_result)
    try:
        for backend, group, native, limit in _groups(calls, concurrency, batch_size):
            if native:
                with _frozen_heap():
                    await _run_async(backend, group, limit, counter)
            else:
                await asyncio.to_thread(_run_sync, backend, group, limit, counter)
    finally:
        counter.bar.close()
    return counter.errors


def run_coroutine(coro: Coroutine[Any, Any, Any]) -> Any:
    """Run ``coro`` to completion and return its result, in a helper thread when this thread runs an event loop.

    Args:
        coro: the coroutine.

    Returns:
        Its result.

    Raises:
        Whatever the coroutine raises.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = asyncio.run(coro)
        except BaseException as err:  # noqa: BLE001
            box["err"] = err

    t = threading.Thread(target=target, name="surveyalign-calls")
    t.start()
    t.join()
    if "err" in box:
        raise box["err"]
    return box.get("value")

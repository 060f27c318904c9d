"""The call executor's rules (surveyalign/calls/executor.py): which backends are awaited and which are batched, the
default limits (32 in flight, batches of 8, 256 for vLLM), a backend's own ``concurrency`` / ``batch_size``, the
K samples of a prompt as one ``n=K`` request, answers of the wrong length recorded as errors, the error count and
progress bar, the frozen heap, ``around_async`` and ``run_coroutine`` inside a running loop."""

from __future__ import annotations

import asyncio
import gc
import threading
import time

import pytest

from surveyalign.backends import Backend, Generation, GenerationSettings
from surveyalign.backends.simple import ConstantBackend, ScriptedBackend
from surveyalign.calls import (
    answers_from_models,
    arun_calls,
    make_call,
    run_calls,
    run_coroutine,
)
from surveyalign.calls.executor import overlapping_requests

_IDENTITY = {"backend": "test"}


pytestmark = pytest.mark.usefixtures("tqdm_thread_lock")  # conftest.py: mutmut forks this process


def _calls(backend, count, *, samples=1, settings=None, stage="judge"):
    """``count`` prompts x ``samples`` samples (seed k for sample k: one fused run per prompt)."""
    base = settings or GenerationSettings(max_new_tokens=8)
    return [make_call(backend, base.model_copy(update={"seed": base.seed + k}), stage=stage, unit_id=f"u{i}",
                      namespace="readability", messages=[{"role": "user", "content": f"rate survey {i}"}],
                      sample=k, identity=_IDENTITY)
            for i in range(count) for k in range(samples)]


class _AsyncJudge(Backend):
    """A native-async backend answering ``"<prompt> #<seed + i>"``; records each request and the peak in flight."""

    name = "async-judge"

    def __init__(self, *, latency: float = 0.0, wrong_count: bool = False, fail_on: str | None = None,
                 close_error: bool = False, **attrs) -> None:
        self.latency, self.wrong_count, self.fail_on, self.close_error = latency, wrong_count, fail_on, close_error
        self.requests: list[tuple[str, int, int]] = []  # (prompt text, seed, n)
        self.in_flight = self.max_in_flight = 0
        self.closed = 0
        self.limits: list[int] = []
        self.freeze_counts: list[int] = []
        self.__dict__.update(attrs)

    async def agenerate(self, prompts, settings=None, n=1):
        text = prompts[0][-1]["content"]
        self.requests.append((text, settings.seed, n))
        self.freeze_counts.append(gc.get_freeze_count())
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            await asyncio.sleep(self.latency)
        finally:
            self.in_flight -= 1
        if self.fail_on is not None and self.fail_on in text:
            raise ConnectionError(f"server dropped {text!r}")
        count = n - 1 if self.wrong_count else n
        return [[Generation(f"{text} #{settings.seed + i}", "stop", -0.5) for i in range(count)]]

    async def aclose(self):
        self.closed += 1
        if self.close_error:
            raise OSError("already closed")


class _SetLimit(_AsyncJudge):
    def set_concurrency(self, limit: int) -> None:
        self.limits.append(limit)


class _BatchJudge(Backend):
    """A sync backend answering ``"<prompt> #<seed + i>"``; records the prompts and ``n`` of each ``generate``."""

    name = "batch-judge"

    def __init__(self, *, name: str | None = None, shape: str = "ok", latency: float = 0.0, **attrs) -> None:
        if name is not None:
            self.name = name
        self.shape, self.latency = shape, latency
        self.batches: list[tuple[list[str], int, int]] = []  # (prompt texts, seed, n)
        self.threads: list[str] = []
        self.__dict__.update(attrs)

    def generate(self, prompts, settings=None, n=1):
        texts = [p[-1]["content"] for p in prompts]
        self.batches.append((texts, settings.seed, n))
        self.threads.append(threading.current_thread().name)
        time.sleep(self.latency)
        if self.shape == "raise":
            raise ValueError("CUDA out of memory")
        rows = [[Generation(f"{t} #{settings.seed + i}", "stop", -0.5) for i in range(n)] for t in texts]
        if self.shape == "short-row":
            rows[-1] = rows[-1][:-1]
        elif self.shape == "short-batch":
            rows = rows[:-1]
        return rows


def _collect():
    got: list[tuple[str, Generation, float]] = []
    return got, lambda call, generation, seconds: got.append((call.key, generation, seconds))


# ---- which path, which limit -------------------------------------------------------------------------------------


def test_a_native_async_backend_gets_one_request_per_prompt_and_samples_fused():
    backend = _AsyncJudge()
    calls = _calls(backend, 3, samples=2)
    got, on_result = _collect()
    assert run_calls(calls, on_result) == 0
    # one agenerate per prompt with n = K = 2 and the first sample's seed; answers in sample order
    assert sorted(backend.requests) == [("rate survey 0", 0, 2), ("rate survey 1", 0, 2), ("rate survey 2", 0, 2)]
    texts = {key: g.text for key, g, _ in got}
    assert [texts[c.key] for c in calls] == ["rate survey 0 #0", "rate survey 0 #1", "rate survey 1 #0",
                                             "rate survey 1 #1", "rate survey 2 #0", "rate survey 2 #1"]
    assert backend.closed == 1  # its async client is closed after the group


def test_one_request_in_flight_answers_in_call_order():
    backend = _AsyncJudge()
    calls = _calls(backend, 4)
    got, on_result = _collect()
    run_calls(calls, on_result, concurrency=1)
    assert [key for key, _, _ in got] == [c.key for c in calls]
    assert [r[0] for r in backend.requests] == [f"rate survey {i}" for i in range(4)]
    assert backend.max_in_flight == 1


@pytest.mark.parametrize(("asked", "attrs", "expected"), [
    (None, {}, 32),  # default: 32 in flight
    (None, {"concurrency": 5}, 5),  # the backend's own option
    (None, {"concurrency": 0}, 32),  # not a positive int: ignored
    (None, {"concurrency": "5"}, 32),
    (3, {"concurrency": 5}, 3),  # the run's limit wins
])
def test_requests_in_flight(asked, attrs, expected):
    backend = _AsyncJudge(latency=0.01, **attrs)
    got, on_result = _collect()
    run_calls(_calls(backend, 40), on_result, concurrency=asked)
    assert backend.max_in_flight == expected and len(got) == 40


@pytest.mark.parametrize(("asked", "attrs", "expected"), [
    (None, {}, 32), (None, {"concurrency": 5}, 5), (None, {"concurrency": 0}, 32), (None, {"concurrency": "5"}, 32),
    (3, {"concurrency": 5}, 3)])
def test_overlapping_requests_is_the_in_flight_limit_of_an_async_backend_and_1_otherwise(asked, attrs, expected):
    # the same table as test_requests_in_flight: the recorded seconds of that many requests overlap
    assert overlapping_requests(_AsyncJudge(**attrs), asked) == expected
    assert overlapping_requests(_BatchJudge(**attrs), asked) == 1  # its seconds share out each batch's wall time
    assert overlapping_requests(ConstantBackend(), asked) == 1


def test_fewer_calls_than_the_limit_start_one_worker_each():
    backend = _AsyncJudge(latency=0.01)
    run_calls(_calls(backend, 3), lambda *a: None, concurrency=10)
    assert backend.max_in_flight == 3 and len(backend.requests) == 3


def test_a_backend_with_set_concurrency_is_set_to_the_runs_limit():
    backend = _SetLimit(latency=0.01, concurrency=4)
    run_calls(_calls(backend, 6), lambda *a: None, concurrency=2)
    assert backend.limits == [2] and backend.max_in_flight == 2
    default = _SetLimit()
    run_calls(_calls(default, 2), lambda *a: None)
    assert default.limits == [32]


class _Described(_BatchJudge):
    def describe(self):
        return {"backend": self.name, "batch_size": 3}


@pytest.mark.parametrize(("make", "asked", "sizes"), [
    (_BatchJudge, None, [8, 8, 4]),  # default: batches of 8
    (lambda: _BatchJudge(batch_size=6), None, [6, 6, 6, 2]),  # the backend's attribute
    (_Described, None, [3, 3, 3, 3, 3, 3, 2]),  # or its describe()
    (lambda: _BatchJudge(batch_size=0), None, [8, 8, 4]),
    (lambda: _BatchJudge(batch_size=6), 7, [7, 7, 6]),  # the run's batch size wins
])
def test_sync_backends_get_batches(make, asked, sizes):
    backend = make()
    got, on_result = _collect()
    assert run_calls(_calls(backend, 20), on_result, batch_size=asked) == 0
    assert [len(texts) for texts, _, _ in backend.batches] == sizes
    assert [t for texts, _, _ in backend.batches for t in texts] == [f"rate survey {i}" for i in range(20)]
    assert len(got) == 20


def test_vllm_gets_batches_of_256():
    backend = _BatchJudge(name="vllm")
    run_calls(_calls(backend, 300), lambda *a: None)
    assert [len(texts) for texts, _, _ in backend.batches] == [256, 44]


def test_sync_batches_share_settings_and_sample_count():
    backend = _BatchJudge()
    hot = GenerationSettings(temperature=0.7, max_new_tokens=8)
    calls = [*_calls(backend, 2, samples=3, settings=hot), *_calls(backend, 2, stage="rqs"),
             *_calls(backend, 1, samples=3, settings=hot, stage="synthesis")]
    got, on_result = _collect()
    run_calls(calls, on_result)
    # one batch per (settings, K): the three-sample prompts together with n = 3, the single ones with n = 1
    assert backend.batches == [(["rate survey 0", "rate survey 1", "rate survey 0"], 0, 3),
                               (["rate survey 0", "rate survey 1"], 0, 1)]
    by_key = {key: g.text for key, g, _ in got}
    assert [by_key[c.key] for c in calls[:3]] == ["rate survey 0 #0", "rate survey 0 #1", "rate survey 0 #2"]


# ---- failures ----------------------------------------------------------------------------------------------------


def test_a_raising_async_call_is_recorded_for_each_of_its_samples():
    backend = _AsyncJudge(fail_on="survey 1")
    got, on_result = _collect()
    assert run_calls(_calls(backend, 3, samples=2), on_result) == 2
    errors = [g.error for _, g, _ in got if g.error]
    assert errors == ["ConnectionError: server dropped 'rate survey 1'"] * 2
    assert sum(g.error is None for _, g, _ in got) == 4


def test_too_few_async_answers_are_an_error_for_the_run():
    backend = _AsyncJudge(wrong_count=True)
    got, on_result = _collect()
    assert run_calls(_calls(backend, 1, samples=3), on_result) == 3
    assert [g.error for _, g, _ in got] == ["RuntimeError: backend returned 2 answers for 3 samples"] * 3


@pytest.mark.parametrize(("shape", "error"), [
    ("raise", "ValueError: CUDA out of memory"),
    ("short-row", "RuntimeError: backend returned [2, 1] answers for 2 prompts x 2 samples"),
    ("short-batch", "RuntimeError: backend returned [2] answers for 2 prompts x 2 samples"),
])
def test_a_failing_sync_batch_is_recorded_per_call(shape, error):
    backend = _BatchJudge(shape=shape)
    got, on_result = _collect()
    assert run_calls(_calls(backend, 2, samples=2), on_result) == 4
    assert [g.error for _, g, _ in got] == [error] * 4


def test_only_the_failing_batch_fails():
    backend = _BatchJudge(batch_size=2)
    original = backend.generate

    def generate(prompts, settings=None, n=1):
        if prompts[0][-1]["content"] == "rate survey 2":
            raise TimeoutError("engine stalled")
        return original(prompts, settings, n)

    backend.generate = generate
    got, on_result = _collect()
    assert run_calls(_calls(backend, 6), on_result) == 2
    assert [g.error is None for _, g, _ in got] == [True, True, False, False, True, True]


def test_a_failing_aclose_does_not_fail_the_run():
    backend = _AsyncJudge(close_error=True)
    got, on_result = _collect()
    assert run_calls(_calls(backend, 2), on_result) == 0 and backend.closed == 1 and len(got) == 2


# ---- timing, counting, progress --------------------------------------------------------------------------------


def test_seconds_are_per_call_of_a_fused_or_batched_request():
    async_backend = _AsyncJudge(latency=0.2)
    got, on_result = _collect()
    run_calls(_calls(async_backend, 1, samples=4), on_result)
    # one request of 0.2 s for 4 samples: 0.05 s each
    assert all(0.04 <= s < 0.2 for _, _, s in got)
    sync_backend = _BatchJudge(latency=0.2)
    got, on_result = _collect()
    run_calls(_calls(sync_backend, 2, samples=2), on_result)
    # one batch of 0.2 s for 2 prompts x 2 samples
    assert all(0.04 <= s < 0.2 for _, _, s in got)


def test_answers_from_models():
    model = _BatchJudge()
    assert answers_from_models(_calls(model, 2)) is True
    assert answers_from_models([*_calls(model, 1), *_calls(ConstantBackend(), 1)]) is False

    class _Plain:  # a duck-typed backend without the attribute answers from a model
        pass

    assert answers_from_models(_calls(_Plain(), 1)) is True
    assert answers_from_models([]) is True


def test_progress_bar_counts_calls_and_errors(capsys):
    backend = _BatchJudge(shape="raise")
    run_calls(_calls(backend, 3), lambda *a: None, progress=True, desc="judging")
    err = capsys.readouterr().err
    assert "judging" in err and "3/3" in err and "errors=3" in err and "call/s" in err
    run_calls(_calls(ScriptedBackend(["a"], cycle=True), 3), lambda *a: None, progress=True, desc="baseline")
    err = capsys.readouterr().err
    # a judge that answers without a model: no rate, no ETA
    assert "baseline" in err and "3/3" in err and "call/s" not in err and "s/call" not in err
    last = err.rstrip().split("\r")[-1]
    assert last.startswith("baseline: 100%|") and last.endswith("| 3/3")  # the bar and the count, nothing more
    run_calls(_calls(_BatchJudge(), 3), lambda *a: None)
    assert capsys.readouterr().err == ""  # no bar unless asked


def test_on_result_runs_under_one_lock():
    backend = _AsyncJudge(latency=0.01)
    seen = []

    def on_result(call, generation, seconds):
        seen.append(threading.current_thread().name)

    assert run_calls(_calls(backend, 8), on_result, concurrency=8) == 0 and len(seen) == 8


# ---- the event loop, the heap, around_async --------------------------------------------------------------------


def test_heap_is_frozen_while_async_calls_run_and_thawed_after():
    gc.unfreeze()
    backend = _AsyncJudge()
    run_calls(_calls(backend, 2), lambda *a: None)
    assert min(backend.freeze_counts) > 0
    assert gc.get_freeze_count() == 0
    backend = _AsyncJudge()
    asyncio.run(arun_calls(_calls(backend, 2), lambda *a: None))
    assert min(backend.freeze_counts) > 0
    assert gc.get_freeze_count() == 0


def test_around_async_wraps_each_async_group_only():
    events = []

    class _Around:
        def __enter__(self):
            events.append("enter")

        def __exit__(self, *exc):
            events.append("exit")

    sync_backend, async_backend = _BatchJudge(), _AsyncJudge()
    calls = [*_calls(sync_backend, 2), *_calls(async_backend, 2)]
    got, on_result = _collect()
    assert run_calls(calls, on_result, around_async=_Around) == 0
    # both groups ran, in first-seen order; only the async one inside around_async
    assert len(sync_backend.batches) == 1 and len(async_backend.requests) == 2 and len(got) == 4
    assert events == ["enter", "exit"]
    assert [key for key, _, _ in got][:2] == [c.key for c in calls[:2]]


def test_empty_runs_make_nothing():
    assert run_calls([], lambda *a: pytest.fail("no answer expected")) == 0
    assert asyncio.run(arun_calls([], lambda *a: pytest.fail("no answer expected"))) == 0


def test_async_run_awaits_async_backends_and_threads_the_sync_ones():
    sync_backend, async_backend = _BatchJudge(shape="raise"), _AsyncJudge()
    calls = [*_calls(async_backend, 3), *_calls(sync_backend, 2)]
    got, on_result = _collect()

    async def main():
        return await arun_calls(calls, on_result, concurrency=2, batch_size=1), threading.current_thread().name

    errors, loop_thread = asyncio.run(main())
    assert errors == 2 and len(got) == 5
    assert async_backend.max_in_flight <= 2 and len(async_backend.requests) == 3
    assert [len(t) for t, _, _ in sync_backend.batches] == [1, 1]
    assert all(name != loop_thread for name in sync_backend.threads)  # the loop is never blocked


def test_run_calls_inside_a_running_loop():
    backend = _AsyncJudge()
    got, on_result = _collect()

    async def main():
        return run_calls(_calls(backend, 3), on_result)

    assert asyncio.run(main()) == 0 and len(got) == 3


def test_run_coroutine_in_and_out_of_a_loop():
    async def where():
        return threading.current_thread().name

    async def boom():
        raise KeyError("missing unit")

    here = threading.current_thread().name
    assert run_coroutine(where()) == here

    async def nested():
        return run_coroutine(where())

    assert asyncio.run(nested()) == "surveyalign-calls"  # a helper thread, since this one runs a loop

    async def nested_error():
        return run_coroutine(boom())

    with pytest.raises(KeyError, match="missing unit"):
        asyncio.run(nested_error())
    with pytest.raises(KeyError, match="missing unit"):
        run_coroutine(boom())

    async def none():
        return None

    async def nested_none():
        return run_coroutine(none())

    assert asyncio.run(nested_none()) is None


# ---- duck-typed backends, defaults, the close log ---------------------------------------------------------------


class _Duck:
    """A backend that is no Backend subclass: only ``generate`` (no name, no agenerate, no aclose)."""

    def __init__(self) -> None:
        self.sizes: list[int] = []

    def generate(self, prompts, settings=None, n=1):
        self.sizes.append(len(prompts))
        return [[Generation("duck", "stop", None) for _ in range(n)] for _ in prompts]


class _NoClose(Backend):
    """A native-async backend without ``aclose``."""

    async def agenerate(self, prompts, settings=None, n=1):
        return [[Generation("no close", "stop", None) for _ in range(n)]]


def test_a_duck_typed_backend_is_batched_by_eight():
    duck = _Duck()
    got, on_result = _collect()
    assert run_calls(_calls(duck, 10), on_result) == 0
    assert duck.sizes == [8, 2] and {g.text for _, g, _ in got} == {"duck"}


def test_an_async_backend_without_aclose():
    got, on_result = _collect()
    assert run_calls(_calls(_NoClose(), 3), on_result) == 0 and [g.text for _, g, _ in got] == ["no close"] * 3


def test_a_batch_size_of_one_is_kept():
    backend = _BatchJudge(batch_size=1)
    run_calls(_calls(backend, 3), lambda *a: None)
    assert [len(t) for t, _, _ in backend.batches] == [1, 1, 1]


def test_a_failing_aclose_is_logged_at_debug_level(caplog):
    caplog.set_level("DEBUG", logger="surveyalign.calls.executor")
    run_calls(_calls(_AsyncJudge(close_error=True), 1), lambda *a: None)
    assert [r.getMessage() for r in caplog.records if r.name == "surveyalign.calls.executor"] == [
        "closing the async client of _AsyncJudge failed: already closed"]


def test_default_bar_label_and_async_progress(capsys):
    run_calls(_calls(_BatchJudge(), 2), lambda *a: None, progress=True)
    assert "calls: 100%" in capsys.readouterr().err
    asyncio.run(arun_calls(_calls(_BatchJudge(), 2), lambda *a: None, progress=True))
    assert "calls: 100%" in capsys.readouterr().err
    asyncio.run(arun_calls(_calls(_AsyncJudge(fail_on="survey 0"), 2), lambda *a: None, progress=True,
                           desc="async judging"))
    err = capsys.readouterr().err
    assert "async judging" in err and "2/2" in err and "errors=1" in err
    asyncio.run(arun_calls(_calls(_BatchJudge(), 2), lambda *a: None))
    assert capsys.readouterr().err == ""  # no bar unless asked

"""The shared retry policy (issue 27): its error messages, boundaries, the jitter's exact bounds, and the tenacity
objects it builds (waits taken from the server's Retry-After, capped, or from the backoff; the last error raised)."""

from __future__ import annotations

import asyncio
import random
import re

import pytest

from surveyalign.backends.retry import HTTP_RETRY, OPENAI_RETRY, RetryPolicy


class Busy(Exception):
    """A transient failure carrying the server's Retry-After (seconds or None)."""

    def __init__(self, retry_after: float | None = None) -> None:
        super().__init__("HTTP 429")
        self.retry_after = retry_after


def _flaky(failures: int, retry_after: float | None = None):
    calls: list[int] = []

    def call() -> str:
        calls.append(1)
        if len(calls) <= failures:
            raise Busy(retry_after)
        return "ok"

    return call, calls


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"attempts": 0}, "retry policy: attempts must be >= 1, got 0"),
    ({"max_wait": -1.0}, "retry policy: max_wait must be >= 0 seconds, got -1.0"),
    ({"max_retry_after": -0.5}, "retry policy: max_retry_after must be >= 0 seconds, got -0.5"),
])
def test_policy_errors_name_the_field_and_value(kwargs, message):
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        RetryPolicy(**kwargs)


def test_of_boundaries_and_a_whole_policy():
    whole = RetryPolicy(attempts=2, base_wait=0.25, max_wait=2.0, max_retry_after=5.0)
    assert RetryPolicy.of(OPENAI_RETRY, policy=whole) == whole
    assert RetryPolicy.of(OPENAI_RETRY, policy=whole, max_retries=4).attempts == 5
    # the smallest allowed values: one try in all, no wait at all
    assert RetryPolicy.of(HTTP_RETRY, max_attempts=1).attempts == 1
    zero = RetryPolicy.of(HTTP_RETRY, backoff_initial=0, backoff_max=0, max_retry_after=0)
    assert (zero.base_wait, zero.max_wait, zero.max_retry_after, zero.attempts) == (0.0, 0.0, 0.0, 6)
    assert RetryPolicy.of(HTTP_RETRY, backoff_max=5).max_wait == 5.0
    with pytest.raises(ValueError, match=re.escape("give max_retries (retries after the first try) or "
                                                   "max_attempts (tries in all), not both")):
        RetryPolicy.of(HTTP_RETRY, max_retries=1, max_attempts=2)


def test_jitter_spans_exactly_half_to_the_whole_step(monkeypatch):
    policy = RetryPolicy(attempts=5, base_wait=1.0, max_wait=4.0)
    monkeypatch.setattr(random, "uniform", lambda low, high: high)
    assert [policy.wait(k) for k in (1, 2, 3, 4)] == [1.0, 2.0, 4.0, 4.0]  # d = min(4, 2**(k-1))
    monkeypatch.setattr(random, "uniform", lambda low, high: low)
    assert [policy.wait(k) for k in (1, 2, 3, 4)] == [0.5, 1.0, 2.0, 2.0]


def test_retrying_waits_retry_after_capped_then_raises_the_last_error():
    sleeps: list[tuple[int, float]] = []
    policy = RetryPolicy(attempts=3, base_wait=0.0, max_retry_after=0.02)
    call, calls = _flaky(2, retry_after=0.01)
    retrying = policy.retrying(Busy, before_sleep=lambda s: sleeps.append((s.attempt_number, s.next_action.sleep)))
    assert retrying(call) == "ok" and len(calls) == 3
    assert sleeps == [(1, 0.01), (2, 0.01)]  # the server's Retry-After
    sleeps.clear()
    call, calls = _flaky(5, retry_after=30.0)
    retrying = policy.retrying(Busy, before_sleep=lambda s: sleeps.append((s.attempt_number, s.next_action.sleep)))
    with pytest.raises(Busy, match="HTTP 429"):  # tenacity's RetryError never shows: the last error is raised
        retrying(call)
    assert len(calls) == 3 and sleeps == [(1, 0.02), (2, 0.02)]  # capped at max_retry_after


def test_retrying_backoff_without_retry_after_other_errors_and_a_replaced_wait(monkeypatch):
    monkeypatch.setattr(random, "uniform", lambda low, high: high)
    sleeps: list[float] = []
    policy = RetryPolicy(attempts=3, base_wait=0.004, max_wait=1.0)
    call, _ = _flaky(2)
    assert policy.retrying(Busy, before_sleep=lambda s: sleeps.append(s.next_action.sleep))(call) == "ok"
    assert sleeps == [0.004, 0.008]
    # a type not named in retry_on is not retried
    tries: list[int] = []

    def broken() -> None:
        tries.append(1)
        raise KeyError("x")

    with pytest.raises(KeyError):
        policy.retrying(Busy)(broken)
    assert tries == [1]
    # a timeout carries no Retry-After attribute at all: the backoff applies
    sleeps.clear()
    timeouts: list[int] = []

    def slow() -> str:
        timeouts.append(1)
        if len(timeouts) == 1:
            raise TimeoutError("read timed out")
        return "ok"

    assert policy.retrying((Busy, TimeoutError), before_sleep=lambda s: sleeps.append(s.next_action.sleep))(slow) \
        == "ok"
    assert sleeps == [0.004]
    # a replaced wait (another server can take the request) overrides both Retry-After and backoff
    sleeps.clear()
    call, _ = _flaky(1, retry_after=9.0)
    policy.retrying(Busy, wait=lambda s: 0.0, before_sleep=lambda s: sleeps.append(s.next_action.sleep))(call)
    assert sleeps == [0.0]


def test_aretrying_is_the_same_policy_for_async_calls():
    sleeps: list[float] = []
    policy = RetryPolicy(attempts=2, base_wait=0.0, max_retry_after=1.0)

    async def run(failures: int) -> tuple[str, int]:
        tries = 0
        async for attempt in policy.aretrying(Busy, before_sleep=lambda s: sleeps.append(s.next_action.sleep)):
            with attempt:
                tries += 1
                if tries <= failures:
                    raise Busy(0.005)
                return "ok", tries
        raise AssertionError("unreachable")

    assert asyncio.run(run(1)) == ("ok", 2) and sleeps == [0.005]
    with pytest.raises(Busy):
        asyncio.run(run(2))  # 2 tries in all
    # a replaced wait reaches the async retrying too
    sleeps.clear()

    async def replaced() -> int:
        tries = 0
        async for attempt in policy.aretrying(Busy, wait=lambda s: 0.0,
                                              before_sleep=lambda s: sleeps.append(s.next_action.sleep)):
            with attempt:
                tries += 1
                if tries == 1:
                    raise Busy(0.5)
        return tries

    assert asyncio.run(replaced()) == 2 and sleeps == [0.0]

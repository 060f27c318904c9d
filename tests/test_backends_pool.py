"""The openai backend over several servers (least outstanding requests, dead servers skipped) and n=K requests."""

from __future__ import annotations

import socket
import time

import pytest

from surveyalign.backends import GenerationSettings, load_backend
from surveyalign.backends.pool import ServerPool
from surveyalign.testing import FakeChatServer

MESSAGES = [{"role": "user", "content": "judge"}]
SAMPLED = GenerationSettings(temperature=0.7, max_new_tokens=8, seed=3)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_pool_picks_least_outstanding_then_least_recent():
    pool = ServerPool(["http://a/v1", "http://b/v1/", "http://c/v1"])
    assert pool.urls == ["http://a/v1", "http://b/v1", "http://c/v1"]
    first, second, third = pool.acquire(), pool.acquire(), pool.acquire()
    assert [first, second, third] == ["http://a/v1", "http://b/v1", "http://c/v1"]
    pool.release("http://b/v1")
    assert pool.acquire() == "http://b/v1"  # the only one with nothing in flight
    pool.release("http://a/v1", error="ConnectError")
    pool.release("http://c/v1")
    assert pool.acquire() == "http://c/v1"  # a is set aside; c (0 in flight) beats b (1)
    assert pool.stats()["http://a/v1"] == {"sent": 1, "failed": 1, "outstanding": 0, "down": True,
                                           "last_error": "ConnectError"}
    assert pool.acquire(exclude=["http://b/v1", "http://c/v1"]) == "http://a/v1"  # nothing else left
    with pytest.raises(ValueError, match="duplicate"):
        ServerPool(["http://a/v1", "http://a/v1/"])


def test_requests_spread_evenly_over_equal_servers():
    with FakeChatServer(delay=0.2, replies=["ok$$$1$$$"]) as one, FakeChatServer(delay=0.2, replies=["ok$$$1$$$"]) as two:
        backend = load_backend("openai", model="fake", base_url=[one.base_url, two.base_url], api_key_env=None,
                               concurrency=20)
        rows = backend.generate([MESSAGES] * 5, SAMPLED, n=4)
        backend.close()
    assert all(g.ok for row in rows for g in row)
    assert (len(one.requests), len(two.requests)) == (10, 10)
    assert backend.describe()["base_url"] == [one.base_url, two.base_url]


def test_slow_server_gets_fewer_requests():
    with FakeChatServer(delay=0.4, replies=["ok"]) as slow, FakeChatServer(delay=0.01, replies=["ok"]) as fast:
        backend = load_backend("openai", model="fake", base_url=[slow.base_url, fast.base_url], api_key_env=None,
                               concurrency=4)
        backend.generate([MESSAGES] * 40, SAMPLED)
        backend.close()
    assert len(slow.requests) + len(fast.requests) == 40
    assert len(fast.requests) >= 4 * len(slow.requests)


def test_dead_server_calls_are_retried_on_the_others_without_backoff():
    dead = f"http://127.0.0.1:{_free_port()}/v1"
    with FakeChatServer(replies=["fine$$$2$$$"]) as live:
        backend = load_backend("openai", model="fake", base_url=[dead, live.base_url], api_key_env=None,
                               concurrency=8, max_retries=2, backoff_initial=30.0, timeout=5.0)
        backend.check_ready()  # one server answers: the run may start
        start = time.monotonic()
        rows = backend.generate([MESSAGES] * 6, SAMPLED, n=2)
        elapsed = time.monotonic() - start
        backend.close()
    assert [g.text for row in rows for g in row] == ["fine$$$2$$$"] * 12
    assert len(live.requests) == 12 and elapsed < 10.0  # a 30 s backoff was never waited
    stats = backend._pool.stats()
    assert stats[dead]["failed"] >= 1 and stats[dead]["down"] is True
    assert backend.stats["retries"] == stats[dead]["failed"]


def test_all_servers_dead_fail_loudly():
    urls = [f"http://127.0.0.1:{_free_port()}/v1", f"http://127.0.0.1:{_free_port()}/v1"]
    backend = load_backend("openai", model="fake", base_url=urls, api_key_env=None, max_retries=1,
                           backoff_initial=0.01, timeout=2.0)
    with pytest.raises(ConnectionError, match="no server answers"):
        backend.check_ready()
    [[generation]] = backend.generate([MESSAGES], SAMPLED)
    backend.close()
    assert not generation.ok and "gave up after 2 attempts" in generation.error


def test_n_per_request_matches_separate_requests_on_serve(tiny_model_dir):
    from surveyalign.backends.server import serve_in_thread

    with serve_in_thread(str(tiny_model_dir), device="cpu") as handle:
        grouped = load_backend("openai", model=handle.model, base_url=handle.base_url, api_key_env=None,
                               n_per_request=True, request_logprobs=True)
        separate = load_backend("openai", model=handle.model, base_url=handle.base_url, api_key_env=None,
                                request_logprobs=True)
        [row_grouped] = grouped.generate([MESSAGES], SAMPLED, n=4)
        served_after_grouped = _health(handle.base_url)["requests"]["served"]
        [row_separate] = separate.generate([MESSAGES], SAMPLED, n=4)
        served_after_separate = _health(handle.base_url)["requests"]["served"]
        grouped.close()
        separate.close()
    assert [g.text for g in row_grouped] == [g.text for g in row_separate]
    assert [g.mean_logprob for g in row_grouped] == pytest.approx([g.mean_logprob for g in row_separate], abs=1e-5)
    assert len({g.text for g in row_grouped}) > 1
    assert (served_after_grouped, served_after_separate - served_after_grouped) == (1, 4)


def _health(base_url: str) -> dict:
    import httpx

    return httpx.get(base_url.removesuffix("/v1") + "/health").json()

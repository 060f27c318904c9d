"""OpenAI-compatible backend against a real HTTP server on 127.0.0.1 (FakeChatServer): retries, Retry-After,
timeouts, concurrency bound, per-sample seeds, logprobs, key handling."""

from __future__ import annotations

import asyncio
import email.utils
import importlib.util
import json
import socket
import time

import pytest

from surveyalign.backends import GenerationSettings, load_backend
from surveyalign.backends.transport import parse_retry_after
from surveyalign.testing import FakeChatServer

USER = [{"role": "user", "content": "Judge this survey."}]
FAST = {"backoff_initial": 0.01, "backoff_max": 0.05}


TRANSPORTS = ["aiohttp", "httpx"] if importlib.util.find_spec("aiohttp") else ["httpx"]


def _backend(server, **options):
    return load_backend("openai", base_url=server.base_url, model="fake-judge", api_key_env=None,
                        **{**FAST, **options})


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_429_twice_then_success_makes_exactly_three_requests(transport):
    with FakeChatServer(fail_first=2, fail_status=429, retry_after="0", replies=["Fine.$$$1$$$"]) as server:
        with _backend(server, max_retries=5, transport=transport) as backend:
            [[generation]] = backend.generate([USER])
        assert generation.error is None and generation.text == "Fine.$$$1$$$"
        assert len(server.requests) == 3
        assert backend.stats == {"attempts": 3, "retries": 2, "failed": 0}


def test_retry_after_header_is_honoured():
    with FakeChatServer(fail_first=1, retry_after="0.4") as server:
        with _backend(server, max_retries=2) as backend:
            [[generation]] = backend.generate([USER])
        assert generation.error is None
        assert len(server.request_times) == 2
        assert server.request_times[1] - server.request_times[0] >= 0.39  # backoff alone would be ~0.01 s


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_persistent_500_gives_error_after_max_retries(transport):
    with FakeChatServer(always_status=500) as server:
        with _backend(server, max_retries=3, transport=transport) as backend:
            out = backend.generate([USER], n=2)
        assert len(server.requests) == 2 * (3 + 1)
        for generation in out[0]:
            assert generation.text == "" and generation.finish_reason is None
            assert generation.error.startswith("gave up after 4 attempts: HTTP 500")


def test_client_error_is_not_retried():
    with FakeChatServer(always_status=400, retry_after=None) as server:
        with _backend(server, max_retries=3) as backend:
            [[generation]] = backend.generate([USER])
        assert len(server.requests) == 1
        assert generation.error.startswith("HTTP 400") and "scripted failure 400" in generation.error


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_timeout_is_retried_then_reported(transport):
    with FakeChatServer(delay=1.0) as server, _backend(server, timeout=0.15, max_retries=1,
                                                         transport=transport) as backend:
        start = time.monotonic()
        [[generation]] = backend.generate([USER])
        elapsed = time.monotonic() - start
        assert generation.error == "gave up after 2 attempts: timeout after 0.15 s"
        assert len(server.requests) == 2
        assert 0.3 <= elapsed < 0.9


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_connection_refused_is_an_error_not_an_exception(transport):
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    backend = load_backend("openai", base_url=f"http://127.0.0.1:{port}/v1", model="m", max_retries=1,
                           transport=transport, **FAST)
    [[generation]] = backend.generate([USER])
    backend.close()
    assert generation.error.startswith("gave up after 2 attempts: connection error: ")
    assert backend.stats["attempts"] == 2


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_concurrency_bound_is_respected(transport):
    with FakeChatServer(delay=0.1) as server:
        with _backend(server, concurrency=3, transport=transport) as backend:
            start = time.monotonic()
            out = backend.generate([USER] * 12)
            elapsed = time.monotonic() - start
        assert all(row[0].ok for row in out)
        assert server.max_in_flight == 3
        assert elapsed >= 0.39  # 12 requests, 3 at a time, 0.1 s each -> at least 4 waves


def test_request_body_has_per_sample_seeds_and_settings():
    settings = GenerationSettings(temperature=0.7, top_p=0.9, max_new_tokens=77, seed=40, want_logprobs=True)
    with FakeChatServer(replies=["a b c$$$-1$$$"], logprob=-0.25) as server, \
            _backend(server, send_chat_template_kwargs=True) as backend:
        out = backend.generate([USER], settings, n=3)
    assert sorted(body["seed"] for body in server.requests) == [40, 41, 42]
    body = server.requests[0]
    assert body["n"] == 1 and body["temperature"] == 0.7 and body["top_p"] == 0.9 and body["max_tokens"] == 77
    assert body["logprobs"] is True and body["messages"] == USER and body["model"] == "fake-judge"
    assert body["chat_template_kwargs"] == {"enable_thinking": False}
    assert [g.mean_logprob for g in out[0]] == [-0.25] * 3
    assert all(g.finish_reason == "stop" for g in out[0])


def test_no_logprobs_requested_by_default():
    with FakeChatServer() as server, _backend(server, max_tokens_field="max_completion_tokens") as backend:
        [[generation]] = backend.generate([USER])
    assert "logprobs" not in server.requests[0] and generation.mean_logprob is None
    assert server.requests[0]["max_completion_tokens"] == 512 and "max_tokens" not in server.requests[0]


def test_request_logprobs_option_overrides_settings():
    with FakeChatServer(replies=["a b"], logprob=-1.5) as server:
        with _backend(server, request_logprobs=True) as backend:
            [[on]] = backend.generate([USER], GenerationSettings(want_logprobs=False))
        with _backend(server, request_logprobs=False) as backend:
            [[off]] = backend.generate([USER], GenerationSettings(want_logprobs=False))
            # a recorded want_logprobs=true that request_logprobs=false would drop is refused, not ignored
            with pytest.raises(ValueError, match="request_logprobs is false"):
                backend.generate([USER], GenerationSettings(want_logprobs=True))
    assert [body.get("logprobs") for body in server.requests] == [True, None]
    assert (on.mean_logprob, off.mean_logprob) == (-1.5, None)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_key_comes_from_environment_and_never_appears_in_describe(monkeypatch, transport):
    secret = "sk-test-SECRET-4242"
    monkeypatch.setenv("SURVEYALIGN_TEST_KEY", secret)
    with FakeChatServer() as server:
        backend = load_backend("openai", base_url=server.base_url, model="m", api_key_env="SURVEYALIGN_TEST_KEY",
                               transport=transport)
        backend.generate([USER])
        description = backend.describe()
        backend.close()
    assert server.request_headers[0]["authorization"] == f"Bearer {secret}"
    dumped = json.dumps(description)
    assert secret not in dumped and "Bearer" not in dumped
    assert description["api_key_env"] == "SURVEYALIGN_TEST_KEY" and description["api_key_present"] is True
    assert secret not in repr(vars(backend))


def test_agenerate_in_callers_event_loop():
    async def run(url):
        backend = load_backend("openai", base_url=url, model="m", concurrency=4)
        out = await backend.agenerate([USER] * 5, GenerationSettings(seed=3), n=2)
        one = await backend.agenerate_one(USER, GenerationSettings(seed=3), sample_index=7)
        await backend.aclose()
        return out, one

    with FakeChatServer(replies=["x$$$1$$$"]) as server:
        out, one = asyncio.run(run(server.base_url))
    assert [len(row) for row in out] == [2] * 5 and one.text == "x$$$1$$$"
    assert sorted(body["seed"] for body in server.requests) == [3] * 5 + [4] * 5 + [10]


@pytest.mark.parametrize("value, expected", [("3", 3.0), ("0.25", 0.25), (" 7 ", 7.0), ("-2", 0.0),
                                             ("soon", None), (None, None)])
def test_parse_retry_after_seconds(value, expected):
    assert parse_retry_after(value) == expected


def test_parse_retry_after_http_date():
    now = 1_800_000_000.0
    header = email.utils.formatdate(now + 30, usegmt=True)
    assert parse_retry_after(header, now=now) == pytest.approx(30.0)
    assert parse_retry_after(email.utils.formatdate(now - 30, usegmt=True), now=now) == 0.0


def test_invalid_options_are_named():
    with pytest.raises(ValueError, match="concurrency must be >= 1"):
        load_backend("openai", model="m", concurrency=0)
    with pytest.raises(ValueError, match="transport must be auto, aiohttp or httpx"):
        load_backend("openai", model="m", transport="urllib")
    with pytest.raises(ValueError, match="'model' is required"):
        load_backend("openai", model="")


class _ModelsServer:
    """A real HTTP server on 127.0.0.1 answering only ``GET /v1/models`` with ``status`` and ``data``; records the
    headers of each request."""

    def __init__(self, data: list[dict], status: int = 200) -> None:
        from starlette.applications import Starlette
        from starlette.responses import JSONResponse
        from starlette.routing import Route

        from surveyalign.backends._http import _UvicornThread

        self.headers: list[dict[str, str]] = []

        async def models(request):
            self.headers.append(dict(request.headers))
            return JSONResponse({"object": "list", "data": data}, status_code=status)

        self._thread = _UvicornThread(Starlette(routes=[Route("/v1/models", models, methods=["GET"])]))

    def __enter__(self):
        self._thread.start()
        self.base_url = f"http://127.0.0.1:{self._thread.port}/v1"
        return self

    def __exit__(self, *exc):
        self._thread.stop()


def test_server_fingerprint_is_read_once_for_the_configured_model(monkeypatch):
    secret = "sk-test-FP-777"
    monkeypatch.setenv("SURVEYALIGN_TEST_KEY", secret)
    data = [{"id": "other", "surveyalign": {"fingerprint": "a" * 64}},
            {"id": "judge", "object": "model", "surveyalign": {"fingerprint": "0123456789abcdef" * 4}}]
    with _ModelsServer(data) as server:
        backend = load_backend("openai", base_url=server.base_url + "/", model="judge",
                               api_key_env="SURVEYALIGN_TEST_KEY")
        assert backend.describe()["server_fingerprint"] == "0123456789abcdef" * 4
        assert backend.describe()["server_fingerprint"] == "0123456789abcdef" * 4
        assert len(server.headers) == 1  # fetched once per instance
        assert server.headers[0]["authorization"] == f"Bearer {secret}"
        assert secret not in json.dumps(backend.describe())
        other = load_backend("openai", base_url=server.base_url, model="other", api_key_env=None)
        assert other.describe()["server_fingerprint"] == "a" * 64
        assert "authorization" not in server.headers[1]
        # a model the server does not list has no fingerprint
        missing = load_backend("openai", base_url=server.base_url, model="absent", api_key_env=None)
        assert missing.describe()["server_fingerprint"] is None


@pytest.mark.parametrize("data, status", [
    ([{"id": "judge", "surveyalign": {"fingerprint": "not-hex"}}], 200),
    ([{"id": "judge", "surveyalign": "x"}], 200),
    ({"judge": 1}, 200),
    ([{"id": "judge", "surveyalign": {"fingerprint": "b" * 64}}], 404),
])
def test_unreadable_fingerprint_is_none(data, status):
    with _ModelsServer(data, status=status) as server:
        backend = load_backend("openai", base_url=server.base_url, model="judge", api_key_env=None)
        assert backend.describe()["server_fingerprint"] is None


def test_server_without_fingerprint_or_unreachable_gives_none():
    with FakeChatServer(replies=["x$$$1$$$"]) as server, _backend(server) as backend:  # lists models, no field
        assert backend.describe()["server_fingerprint"] is None
        assert backend.generate([USER])[0][0].text == "x$$$1$$$"
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    refused = load_backend("openai", base_url=f"http://127.0.0.1:{port}/v1", model="m", api_key_env=None)
    t0 = time.monotonic()
    assert refused.describe()["server_fingerprint"] is None
    assert time.monotonic() - t0 < 5.0

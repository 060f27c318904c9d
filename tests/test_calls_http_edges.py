"""PoliteClient edges (surveyalign/calls/http.py) against the fake scholarly server on 127.0.0.1: the exact errors of
a 4xx, a 404 and a non-JSON answer, query parameters (None left out, secrets left out of the URL and the messages),
headers and keys from the environment, POST bodies and multipart files, what ``describe`` and the counters say
(waits of the rate limit and of the backoff included), the cache's time to live."""

from __future__ import annotations

import socket
import time

import pytest

from surveyalign.calls import (
    HTTPStatusError,
    NotFoundError,
    PoliteClient,
    UnreachableError,
)
from surveyalign.calls.http import UNREACHABLE_RETRY_S, HttpStats
from surveyalign.documents import Paper
from surveyalign.testing import FakeScholarServer

FAST = {"requests_per_second": 0, "backoff_initial": 0.01, "backoff_max": 0.05}
_TEI = "<TEI><text>references</text></TEI>"


def _papers() -> list[Paper]:
    return [Paper(id="W1", title="Attention is all you need", year=2017, citation_count=90000, reference_count=0,
                  authors=["Ashish Vaswani"]),
            Paper(id="W2", title="Long short-term memory", year=1997, citation_count=80000, reference_count=0,
                  authors=["Sepp Hochreiter"])]


def test_a_4xx_fails_at_once_with_the_url_status_and_body():
    with FakeScholarServer(_papers(), always_status=401) as server:
        client = PoliteClient(server.base_url, **FAST)
        with pytest.raises(HTTPStatusError) as err:
            client.get_json("/works/W1")
        assert str(err.value) == f'GET {server.base_url}/works/W1: HTTP 401: {{"error": "forced failure"}}'
        assert (err.value.status, err.value.url, err.value.attempts) == (401, f"{server.base_url}/works/W1", 1)
        assert len(server.requests) == 1
        assert client.stats.to_dict() == {"requests": 1, "network": 1, "cache_hits": 0, "retries": 0,
                                          "failures": 1, "waited_s": 0.0}
        with pytest.raises(HTTPStatusError):
            client.get_json("/works/W2")
        assert client.stats.failures == 2


def test_a_long_error_body_is_cut_to_200_characters_and_none_params_are_left_out():
    with FakeScholarServer(_papers()) as server:
        client = PoliteClient(server.base_url + "/", **FAST)  # a trailing slash is dropped
        name = "x" * 300
        with pytest.raises(HTTPStatusError) as err:
            client.get_json("/works", params={"filter": f"{name}:1", "cursor": None})
        url = f"{server.base_url}/works?filter={name}%3A1"
        body = '{"error": "unsupported filter \'' + name + '\'"}'
        assert str(err.value) == f"GET {url}: HTTP 400: {body[:200]}"
        assert err.value.status == 400 and err.value.url == url
        assert server.requests[0].query == {"filter": f"{name}:1"}  # no cursor sent
        assert client.describe()["base_url"] == server.base_url


def test_a_404_is_not_found_with_its_url():
    with FakeScholarServer(_papers()) as server:
        client = PoliteClient(server.base_url, **FAST)
        with pytest.raises(NotFoundError) as err:
            client.get_json("/works/W9", params={"select": "id"})
        url = f"{server.base_url}/works/W9?select=id"
        assert str(err.value) == f"GET {url}: 404 not found"
        assert (err.value.status, err.value.url, err.value.attempts) == (404, url, 1)
        assert (client.stats.failures, client.stats.requests) == (1, 1)
        with pytest.raises(NotFoundError):
            client.get_json("/works/W8")
        assert (client.stats.failures, client.stats.requests) == (2, 2)


def test_an_answer_that_is_not_json_names_the_url_without_its_query():
    with FakeScholarServer(_papers(), grobid_tei=_TEI) as server:
        client = PoliteClient(server.base_url, **FAST)
        with pytest.raises(ValueError) as err:
            client.get_json("/api/processReferences", params={"consolidate": "1"})
        assert str(err.value) == f"{server.base_url}/api/processReferences: the answer is not JSON ({_TEI!r})"
        long_tei = "<TEI>" + "r" * 300
        server.grobid_tei = long_tei
        with pytest.raises(ValueError) as err:
            client.get_json("/api/processReferences")
        assert str(err.value).endswith(f"({long_tei[:120]!r})")


def test_post_json_and_multipart_files_reach_the_server_and_are_not_cached(tmp_path):
    with FakeScholarServer(_papers(), grobid_tei=_TEI) as server:
        client = PoliteClient(server.s2_url, cache_dir=tmp_path, **FAST)
        for _ in range(2):
            out = client.post_json("/paper/batch", {"ids": ["W2", "W9"]}, params={"fields": "title"})
            assert [p and p["title"] for p in out] == ["Long short-term memory", None]
        assert [(r.method, r.body, r.query) for r in server.requests] == [
            ("POST", {"ids": ["W2", "W9"]}, {"fields": "title"})] * 2
        assert client.stats.cache_hits == 0 and client.stats.network == 2
        grobid = PoliteClient(server.base_url, **FAST)
        response = grobid.request("POST", "/api/processReferences",
                                  files={"input": ("paper.pdf", b"%PDF-1.4 survey", "application/pdf")},
                                  data={"consolidateCitations": "0"})
        assert response.text == _TEI and response.status_code == 200
        sent = server.requests[-1].body
        assert b"%PDF-1.4 survey" in sent and b'name="consolidateCitations"' in sent and b'filename="paper.pdf"' in sent


def test_headers_and_keys_from_the_environment(tmp_path, monkeypatch):
    import uuid

    header_env = f"SCHOLAR_CONTACT_{uuid.uuid4().hex[:8].upper()}"  # never registered before this test
    monkeypatch.setenv(header_env, "header-value-123")
    monkeypatch.setenv("SCHOLAR_QUERY_PARAM", "param-value-456")
    monkeypatch.delenv("SCHOLAR_UNSET_VALUE", raising=False)
    monkeypatch.setenv("SCHOLAR_EMPTY_VALUE", "")
    with FakeScholarServer(_papers(), always_status=403) as server:
        client = PoliteClient(server.base_url, headers={"User-Agent": "surveyalign-test (mailto:me@example.org)"},
                              key_headers={"x-contact": header_env, "x-unset": "SCHOLAR_UNSET_VALUE"},
                              key_params={"key": "SCHOLAR_QUERY_PARAM", "empty": "SCHOLAR_EMPTY_VALUE"},
                              cache_dir=tmp_path / "c" / "d", **FAST)
        with pytest.raises(HTTPStatusError) as err:
            client.get_json("/works/W1", params={"select": "id"})
        sent = server.requests[0]
        assert sent.headers["user-agent"] == "surveyalign-test (mailto:me@example.org)"
        assert sent.headers["x-contact"] == "header-value-123" and "x-unset" not in sent.headers
        assert sent.query == {"select": "id", "key": "param-value-456"}
        # the secret is sent, never shown: not in the URL, the message or describe()
        assert err.value.url == f"{server.base_url}/works/W1?select=id" and "param-value" not in str(err.value)
        assert client.describe() == {
            "base_url": server.base_url, "cache_dir": str(tmp_path / "c" / "d"),
            "key_env": sorted([header_env, "SCHOLAR_EMPTY_VALUE", "SCHOLAR_QUERY_PARAM", "SCHOLAR_UNSET_VALUE"]),
            "keys_set": True}
        # the names are registered as secrets: a message quoting a value is redacted
        assert "header-value-123" not in str(HTTPStatusError("echo header-value-123", status=500, url="u"))
        plain = PoliteClient(server.base_url, key_params={"key": "SCHOLAR_UNSET_VALUE"}, **FAST)
        assert plain.describe() == {"base_url": server.base_url, "cache_dir": None,
                                    "key_env": ["SCHOLAR_UNSET_VALUE"], "keys_set": None}


def test_counters_and_the_context_manager(tmp_path):
    with FakeScholarServer(_papers()) as server:
        with PoliteClient(server.base_url, cache_dir=tmp_path, **FAST) as client:
            for _ in range(3):
                assert client.get_json("/works/W1")["id"].endswith("W1")
            assert client.stats.to_dict() == {"requests": 3, "network": 1, "cache_hits": 2, "retries": 0,
                                              "failures": 0, "waited_s": 0.0}
        assert client._client.is_closed
    assert HttpStats().to_dict() == {"requests": 0, "network": 0, "cache_hits": 0, "retries": 0, "failures": 0,
                                     "waited_s": 0.0}


def test_the_rate_limit_and_the_backoff_count_their_waits():
    with FakeScholarServer(_papers()) as server:
        client = PoliteClient(server.base_url, requests_per_second=10)
        for wid in ("W1", "W2", "W1", "W2", "W1"):
            client.get_json(f"/works/{wid}")
        # 5 requests at 10/s: four gaps of 0.1 s, summed, less the time the requests themselves took
        assert 0.2 <= client.stats.waited_s <= 0.4 and client.stats.network == 5
    with FakeScholarServer(_papers(), always_status=503) as server:
        client = PoliteClient(server.base_url, max_attempts=3, **FAST)
        with pytest.raises(HTTPStatusError) as err:
            client.get_json("/works/W1")
        # backoff waits d/2 + uniform(0, d/2) with d = 0.01, then 0.02
        assert 0.015 <= client.stats.waited_s <= 0.03 and client.stats.retries == 2
        assert str(err.value) == (f"GET {server.base_url}/works/W1 failed after 3 tries: HTTP 503")
        assert (err.value.url, err.value.status, err.value.attempts) == (f"{server.base_url}/works/W1", 503, 3)
        assert client.max_attempts == 3 and client.stats.failures == 1
        with pytest.raises(HTTPStatusError):
            client.get_json("/works/W2")
        assert client.stats.failures == 2 and client.stats.retries == 4
    with FakeScholarServer(_papers(), fail_first=2, retry_after="0.2") as server:
        client = PoliteClient(server.base_url, **FAST)
        assert client.get_json("/works/W2")["title"] == "Long short-term memory"
        assert client.stats.waited_s == pytest.approx(0.4) and client.stats.retries == 2  # the server's waits, summed


def test_cached_answers_expire_after_cache_ttl(tmp_path):
    with FakeScholarServer(_papers()) as server:
        client = PoliteClient(server.base_url, cache_dir=tmp_path, cache_ttl=0.5, **FAST)
        client.get_json("/works/W1")
        client.get_json("/works/W1")
        assert len(server.requests) == 1 and client.stats.cache_hits == 1
        time.sleep(0.8)  # the time to live passes
        client.get_json("/works/W1")
        assert len(server.requests) == 2 and client.stats.cache_hits == 1


def test_refused_connection_waits_once_and_a_negative_rate_is_refused():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    client = PoliteClient(url, requests_per_second=0, max_attempts=2)
    with pytest.raises(UnreachableError) as err:
        client.get_json("/works/W1")
    assert UNREACHABLE_RETRY_S == 0.5 and client.stats.waited_s == 0.5 and client.stats.retries == 1
    assert err.value.base_url == url and str(err.value).endswith("; check the API URL and the network")
    with pytest.raises(UnreachableError):
        client.get_json("/works/W2")
    assert (client.stats.waited_s, client.stats.retries, client.stats.failures) == (1.0, 2, 2)
    with pytest.raises(ValueError, match=r"^requests_per_second must be >= 0, got -1$"):
        PoliteClient(url, requests_per_second=-1)


def test_a_failed_post_names_its_method():
    with FakeScholarServer(_papers(), always_status=400) as server:
        client = PoliteClient(server.s2_url, **FAST)
        with pytest.raises(HTTPStatusError) as err:
            client.post_json("/paper/batch", {"ids": ["W1"]})
        assert str(err.value) == f'POST {server.s2_url}/paper/batch: HTTP 400: {{"error": "forced failure"}}'


def test_the_default_rate_is_one_request_a_second():
    with FakeScholarServer(_papers()) as server:
        client = PoliteClient(server.base_url)  # the default rate: one request a second reaches the network
        client.get_json("/works/W1")
        client.get_json("/works/W2")
        assert 0.8 <= client.stats.waited_s <= 1.0


def test_the_client_settings_without_a_request():
    import httpx

    assert PoliteClient("http://127.0.0.1:9")._client.timeout == httpx.Timeout(30.0)
    assert PoliteClient("http://127.0.0.1:9", timeout=2.5)._client.timeout == httpx.Timeout(2.5)
    tuned = PoliteClient("http://127.0.0.1:9", retry={"attempts": 2, "base_wait": 0.5}, backoff_max=7.0)
    assert (tuned.max_attempts, tuned.retry.base_wait, tuned.retry.max_wait) == (2, 0.5, 7.0)
    assert tuned._client.follow_redirects is True

"""Polite HTTP and the scholarly API clients against a real HTTP server on 127.0.0.1 (fake S2 / OpenAlex)."""

from __future__ import annotations

import itertools
import socket
import threading
import time

import pytest

from surveyalign.calls import (
    HTTPStatusError,
    NotFoundError,
    PoliteClient,
    UnreachableError,
)
from surveyalign.documents import Paper
from surveyalign.knowledge import OpenAlexClient, SemanticScholarClient
from surveyalign.testing import FakeScholarServer

FAST = {"requests_per_second": 0, "backoff_initial": 0.01, "backoff_max": 0.05}


def _papers() -> list[Paper]:
    return [
        Paper(id="W1", title="Attention is all you need", year=2017, citation_count=90000, reference_count=2,
              authors=["Ashish Vaswani", "Noam Shazeer"], doi="10.5555/attn", arxiv_id="1706.03762",
              abstract="We propose the Transformer", reference_ids=["W2", "W3"]),
        Paper(id="W2", title="Neural machine translation by jointly learning to align", year=2014,
              citation_count=30000, reference_count=1, authors=["Dzmitry Bahdanau"], reference_ids=["W3"]),
        Paper(id="W3", title="Long short-term memory", year=1997, citation_count=80000, reference_count=0,
              authors=["Sepp Hochreiter"]),
        # the API reports 40 references but lists none: incomplete, never "0 references"
        Paper(id="W4", title="A paper with hidden references", year=2020, citation_count=5, reference_count=40),
    ]


def test_s2_paper_batch_search_and_edges():
    with FakeScholarServer(_papers()) as server:
        client = SemanticScholarClient(server.s2_url, **FAST)
        paper = client.paper("W1", with_references=True)
        assert (paper.title, paper.year, paper.citation_count, paper.reference_count) == (
            "Attention is all you need", 2017, 90000, 2)
        assert paper.reference_ids == ["W2", "W3"] and paper.references_status == "complete"
        assert paper.doi == "10.5555/attn" and paper.arxiv_id == "1706.03762"
        assert paper.authors == ["Ashish Vaswani", "Noam Shazeer"] and paper.first_author_surname == "Vaswani"
        assert client.paper("DOI:10.5555/attn").id == "W1"
        # batch: aligned with the ids, None for a dangling id
        got = client.papers(["W3", "W-dangling", "W1"])
        assert [p.id if p else None for p in got] == ["W3", None, "W1"]
        batch = [r for r in server.requests if r.method == "POST"]
        assert batch[0].path == "/graph/v1/paper/batch" and batch[0].body == {"ids": ["W3", "W-dangling", "W1"]}
        assert next(p.id for p in client.search("long short-term memory")) == "W3"
        assert [p.id for p in client.references("W1")] == ["W2", "W3"]
        assert sorted(p.id for p in client.citations("W3")) == ["W1", "W2"]
        with pytest.raises(NotFoundError) as err:
            client.paper("W-dangling")
        assert err.value.status == 404 and err.value.attempts == 1


def test_incomplete_reference_list_is_never_zero_references():
    with FakeScholarServer(_papers()) as server:
        for client in (SemanticScholarClient(server.s2_url, **FAST), OpenAlexClient(server.base_url, **FAST)):
            paper = client.paper("W4", with_references=True)
            assert paper.reference_ids == [] and paper.reference_count == 40
            assert paper.references_status == "incomplete"
            assert client.paper("W3", with_references=True).references_status == "complete"  # count 0, list 0


def test_openalex_work_batch_citing_and_abstract():
    with FakeScholarServer(_papers()) as server:
        client = OpenAlexClient(server.base_url, **FAST)
        work = client.paper("W1")
        assert work.id == "W1" and work.reference_ids == ["W2", "W3"] and work.reference_count == 2
        assert work.abstract == "We propose the Transformer" and work.doi == "10.5555/attn"
        got = client.papers(["W2", "W404", "10.5555/attn"])
        assert [p.id if p else None for p in got] == ["W2", None, "W1"]
        filters = [r.query["filter"] for r in server.requests if r.query.get("filter")]
        assert "openalex:W2|W404" in filters and "doi:10.5555/attn" in filters
        assert sorted(p.id for p in client.citations("W3")) == ["W1", "W2"]
        assert [p.id for p in client.references("W1")] == ["W2", "W3"]
        with pytest.raises(NotFoundError):
            client.paper("W404")


def test_429_then_200_honours_retry_after():
    with FakeScholarServer(_papers(), fail_first=1, retry_after=1) as server:
        client = SemanticScholarClient(server.s2_url, **FAST)
        assert client.paper("W2").title.startswith("Neural machine")
        first, second = server.requests[0], server.requests[1]
        assert second.at - first.at >= 0.95  # waited for Retry-After: 1 s, not the 0.05 s backoff
        assert client.http.stats.retries == 1 and client.http.stats.network == 2


def test_5xx_retried_with_backoff_then_error_names_url_and_tries():
    with FakeScholarServer(_papers(), always_status=503) as server:
        client = SemanticScholarClient(server.s2_url, max_attempts=3, **FAST)
        with pytest.raises(HTTPStatusError) as err:
            client.paper("W1")
        assert err.value.status == 503 and err.value.attempts == 3 and len(server.requests) == 3
        assert "/paper/W1" in str(err.value) and "3 tries" in str(err.value)
    with FakeScholarServer(_papers(), fail_first=2, fail_status=500) as server:
        client = OpenAlexClient(server.base_url, max_attempts=3, **FAST)
        assert client.paper("W3").title == "Long short-term memory" and len(server.requests) == 3


def test_disk_cache_serves_repeat_get_without_network(tmp_path):
    with FakeScholarServer(_papers()) as server:
        client = OpenAlexClient(server.base_url, cache_dir=tmp_path / "cache", **FAST)
        first = client.paper("W1")
        assert (first.id, first.title, first.year) == ("W1", "Attention is all you need", 2017)
        assert client.paper("W1") == first
        assert len(server.requests) == 1 and client.http.stats.cache_hits == 1
        # a new client over the same folder reads the cache from disk
        again = OpenAlexClient(server.base_url, cache_dir=tmp_path / "cache", **FAST)
        assert again.paper("W1").id == "W1" and len(server.requests) == 1
        with pytest.raises(NotFoundError):  # 404s are not cached: asked twice, sent twice
            again.paper("W404")
        with pytest.raises(NotFoundError):
            again.paper("W404")
        assert len(server.requests) == 3
        assert (tmp_path / "cache" / "http_cache.db").is_file()


def test_rate_limit_spaces_network_requests():
    with FakeScholarServer(_papers()) as server:
        client = PoliteClient(server.base_url, requests_per_second=5)
        start = time.monotonic()
        for wid in ("W1", "W2", "W3"):
            client.get_json(f"/works/{wid}")
        assert time.monotonic() - start >= 0.38  # 3 requests at 5/s: two gaps of 0.2 s
        arrivals = [r.at for r in server.requests]
        assert min(b - a for a, b in itertools.pairwise(arrivals)) >= 0.18


def test_keys_come_from_environment_only_and_stay_out_of_cache_key(tmp_path, monkeypatch):
    monkeypatch.setenv("S2_API_KEY", "s2-secret")
    monkeypatch.setenv("OPENALEX_API_KEY", "oa-secret")
    monkeypatch.setenv("OPENALEX_MAILTO", "me@example.org")
    with FakeScholarServer(_papers()) as server:
        SemanticScholarClient(server.s2_url, **FAST).paper("W1")
        assert server.requests[-1].headers["x-api-key"] == "s2-secret"
        client = OpenAlexClient(server.base_url, cache_dir=tmp_path, **FAST)
        client.paper("W1")
        assert server.requests[-1].query["api_key"] == "oa-secret"
        assert server.requests[-1].query["mailto"] == "me@example.org"
        assert "secret" not in str(client.http.describe())
        assert client.http.describe()["key_env"] == ["OPENALEX_API_KEY"]
        # a changed key still hits the cache: the key is not part of the cache key
        monkeypatch.setenv("OPENALEX_API_KEY", "another")
        n = len(server.requests)
        OpenAlexClient(server.base_url, cache_dir=tmp_path, **FAST).paper("W1")
        assert len(server.requests) == n


def _closed_port() -> int:
    with socket.socket() as sock:  # nothing listens once the socket is closed: connection refused
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_refused_connection_fails_fast_with_the_url():
    url = f"http://127.0.0.1:{_closed_port()}"
    client = PoliteClient(url, requests_per_second=0)  # the default 6 attempts and 1 s backoff
    start = time.monotonic()
    with pytest.raises(UnreachableError) as err:
        client.get_json("/works/W1")
    assert time.monotonic() - start < 5
    message = str(err.value)
    assert f"cannot reach {url} (GET {url}/works/W1, 2 tries: ConnectError" in message and "\n" not in message
    assert err.value.attempts == 2 and err.value.url == f"{url}/works/W1"
    assert not isinstance(err.value, HTTPStatusError)  # per-record handlers of HTTPStatusError let it through
    assert (client.stats.network, client.stats.retries, client.stats.failures) == (2, 1, 1)
    single = PoliteClient(url, requests_per_second=0, max_attempts=1)
    with pytest.raises(UnreachableError, match="1 tries"):
        single.get_json("/works/W1")


def test_read_timeout_is_still_retried_with_backoff():
    with socket.socket() as sock:  # accepts connections (backlog) but never answers: a read timeout
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        client = PoliteClient(url, max_attempts=3, timeout=0.2, **FAST)
        with pytest.raises(HTTPStatusError) as err:
            client.get_json("/works/W1")
    assert err.value.status is None and err.value.attempts == 3 and "3 tries: ReadTimeout" in str(err.value)
    assert client.stats.retries == 2 and client.stats.network == 3


def test_connection_dropped_after_connect_is_retried():
    with socket.socket() as sock:  # the first connection is closed without an answer, the next ones too
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        accepted = []

        def drop() -> None:
            for _ in range(2):
                conn, _ = sock.accept()
                accepted.append(conn)
                conn.close()

        thread = threading.Thread(target=drop, daemon=True)
        thread.start()
        client = PoliteClient(f"http://127.0.0.1:{sock.getsockname()[1]}", max_attempts=2, **FAST)
        with pytest.raises(HTTPStatusError) as err:
            client.get_json("/works/W1")
        thread.join(5)
    assert len(accepted) == 2 and err.value.status is None and err.value.attempts == 2
    assert "2 tries: " in str(err.value) and "ConnectError" not in str(err.value)  # closed or reset: retried

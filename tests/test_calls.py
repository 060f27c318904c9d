"""The call layer (surveyalign.calls): namespaced keys, the plan of missing calls, the one retry policy."""

from __future__ import annotations

import json

import pytest

from surveyalign.autoraters import AutoraterJudge, PromptCall
from surveyalign.backends import Generation, GenerationSettings, load_backend
from surveyalign.calls import (
    HTTP_RETRY,
    OPENAI_RETRY,
    CallCache,
    PoliteClient,
    RetryPolicy,
    call_key,
    make_call,
    stable_hash,
)
from surveyalign.constants import DIMENSIONS
from surveyalign.prism import CallRequest, Extractor

_MESSAGES = [{"role": "user", "content": "summarise these papers"}]


def _key(namespace: str) -> str:
    return call_key(stage="summary", unit_id="u1", namespace=namespace, sample=0, messages_hash="h",
                    backend={"backend": "scripted"}, settings={"temperature": 0.0})


def test_two_namespaces_with_the_same_content_get_different_keys():
    assert _key("ka.summary") != _key("prism.extract")
    assert _key("ka.summary") == _key("ka.summary")
    backend = load_backend("scripted", replies=["x"])
    settings = GenerationSettings()
    a, b = (make_call(backend, settings, stage="s", unit_id="u", namespace=ns, messages=_MESSAGES)
            for ns in ("rqs", "synthesis"))
    assert (a.messages_hash == b.messages_hash, a.key != b.key, a.namespace, b.namespace) == (True, True, "rqs",
                                                                                                "synthesis")


def test_judge_keys_keep_the_hash_of_earlier_versions():
    # the namespace is hashed under "dimension" (the field name of earlier versions): judge caches resume
    old = stable_hash({"stage": "summary", "unit_id": "u1", "dimension": "readability", "sample": 0, "prompt": "h",
                       "backend": {"backend": "scripted"}, "settings": {"temperature": 0.0}})
    assert _key("readability") == old


def _namespaces(path) -> list[str]:
    return [json.loads(line)["namespace"] for line in path.read_text().splitlines()]


def test_prism_and_autoraters_pass_their_own_namespace_not_a_dimension(tmp_path):
    backend = load_backend("scripted", replies=lambda messages, settings, k: '{"ok": true}')
    with CallCache.load(tmp_path / "prism.jsonl") as cache:
        Extractor(backend, cache=cache).run([CallRequest("flaw_merge", "p1", _MESSAGES)])
    with CallCache.load(tmp_path / "autorate.jsonl") as cache:
        AutoraterJudge(backend, cache=cache).ask([PromptCall("litreview", "0:p1", _MESSAGES),
                                                  PromptCall("partition", "a:p1", _MESSAGES)])
    prism, autorate = _namespaces(tmp_path / "prism.jsonl"), _namespaces(tmp_path / "autorate.jsonl")
    assert prism == ["prism.extract"]
    assert sorted(autorate) == ["autorate.litreview", "autorate.partition"]
    assert not set(prism + autorate) & set(DIMENSIONS)
    for path in (tmp_path / "prism.jsonl", tmp_path / "autorate.jsonl"):
        assert all("dimension" not in json.loads(line) for line in path.read_text().splitlines())


def test_missing_plans_each_key_once_and_retries_errors_on_request(tmp_path):
    backend = load_backend("scripted", replies=["x"])
    settings = GenerationSettings()
    calls = [make_call(backend, settings, stage="s", unit_id=u, namespace="test", messages=_MESSAGES)
             for u in ("done", "failed", "new", "new")]
    with CallCache.load(tmp_path / "calls.jsonl") as cache:
        cache.add(calls[0], Generation(text="answer", finish_reason="stop", mean_logprob=None), 0.1)
        cache.add(calls[1], Generation.failed("HTTP 503"), 0.1)
        todo, cached = cache.missing(calls)
        assert ([c.unit_id for c in todo], cached) == (["failed", "new"], 1)
        todo, cached = cache.missing(calls, retry_errors=False)
        assert ([c.unit_id for c in todo], cached) == (["new"], 2)


def test_one_retry_policy_with_per_service_settings():
    assert (OPENAI_RETRY.attempts, OPENAI_RETRY.max_retry_after) == (7, 300.0)
    assert (HTTP_RETRY.attempts, HTTP_RETRY.max_retry_after) == (6, 600.0)
    backend = load_backend("openai", model="m", base_url="http://127.0.0.1:9/v1", api_key_env=None,
                           max_retries=2, backoff_initial=0.5)
    assert isinstance(backend.retry, RetryPolicy)
    assert (backend.retry.attempts, backend.retry.base_wait, backend.retry.max_wait, backend.retry.max_retry_after) \
        == (3, 0.5, 60.0, 300.0)
    assert load_backend("openai", model="m", api_key_env=None, retry={"attempts": 2}).retry.attempts == 2
    client = PoliteClient("http://127.0.0.1:9", max_attempts=3, max_retry_after=10)
    assert (client.retry.attempts, client.max_attempts, client.retry.max_retry_after) == (3, 3, 10.0)
    assert PoliteClient("http://127.0.0.1:9").retry == HTTP_RETRY


def test_retry_policy_waits():
    policy = RetryPolicy(attempts=5, base_wait=1.0, max_wait=4.0, max_retry_after=30.0)
    assert policy.wait(1, retry_after=12.0) == 12.0  # the server's Retry-After
    assert policy.wait(1, retry_after=100.0) == 30.0  # capped
    for attempt, step in ((1, 1.0), (2, 2.0), (3, 4.0), (6, 4.0)):
        waits = [policy.wait(attempt) for _ in range(200)]
        assert all(step / 2 <= w <= step for w in waits)  # jittered, never below half the step
    assert RetryPolicy(honour_retry_after=False, base_wait=0.0).wait(1, retry_after=9.0) == 0.0
    assert RetryPolicy.of(HTTP_RETRY, max_retries=0).attempts == 1


@pytest.mark.parametrize(("options", "message"), [
    ({"max_retries": -1}, "max_retries must be >= 0"),
    ({"max_attempts": 0}, "max_attempts must be >= 1"),
    ({"backoff_initial": -1.0}, "backoff_initial must be >= 0"),
    ({"max_retries": 1, "max_attempts": 2}, "not both"),
    ({"policy": {"tries": 3}}, r"unknown field\(s\) \['tries'\]"),
])
def test_retry_policy_refuses_bad_settings(options, message):
    with pytest.raises(ValueError, match=message):
        RetryPolicy.of(OPENAI_RETRY, **options)

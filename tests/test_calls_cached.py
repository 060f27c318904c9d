"""The one cached caller (surveyalign.calls: make_call, cached_generate): cache hits, retries of failed calls, K samples."""

from __future__ import annotations

import asyncio
import json

from surveyalign.backends import GenerationSettings
from surveyalign.backends.simple import ScriptedBackend
from surveyalign.calls import (
    CallCache,
    acached_generate,
    backend_identity,
    cached_generate,
    call_key,
    make_call,
    stable_hash,
)

_MESSAGES = [{"role": "user", "content": "rate this survey"}]


def _call(backend, unit_id="u1", sample=0, seed=0):
    return make_call(backend, GenerationSettings(temperature=0.7, seed=seed), stage="test", unit_id=unit_id,
                     namespace="test-dim", messages=_MESSAGES, sample=sample)


def test_make_call_key_is_call_key_of_its_parts():
    backend = ScriptedBackend(["x"])
    settings = GenerationSettings(temperature=0.7, seed=0)
    call = _call(backend)
    assert call.messages_hash == stable_hash(_MESSAGES)
    assert call.key == call_key(stage="test", unit_id="u1", namespace="test-dim", sample=0,
                                messages_hash=stable_hash(_MESSAGES), backend=backend_identity(backend),
                                settings=settings.model_dump())
    assert _call(backend, unit_id="u2").key != call.key


def test_cache_hit_makes_no_call(tmp_path):
    path = tmp_path / "calls.jsonl"
    first = ScriptedBackend(["answer one"])
    with CallCache.load(path) as cache:
        [answer] = cached_generate([_call(first)], cache)
    assert (answer.generation.text, answer.cached) == ("answer one", False)
    assert len(first.calls) == 1
    assert len(path.read_text().splitlines()) == 1

    again = ScriptedBackend(["must not be asked"])
    with CallCache.load(path) as cache:
        [answer] = cached_generate([_call(again)], cache)
    assert (answer.generation.text, answer.cached) == ("answer one", True)
    assert again.calls == []


def test_failed_call_is_retried_on_the_next_run(tmp_path):
    path = tmp_path / "calls.jsonl"
    flaky = ScriptedBackend([RuntimeError("server down")])
    with CallCache.load(path) as cache:
        [answer] = cached_generate([_call(flaky)], cache)
    assert answer.generation.error is not None and "server down" in answer.generation.error
    assert answer.cached is False
    assert json.loads(path.read_text().splitlines()[0])["error"] == answer.generation.error

    fixed = ScriptedBackend(["now fine"])
    with CallCache.load(path) as cache:
        [answer] = cached_generate([_call(fixed)], cache)
    assert (answer.generation.text, answer.generation.error, answer.cached) == ("now fine", None, False)
    assert len(fixed.calls) == 1
    with CallCache.load(path) as cache:  # the last record per key wins: the retry's answer
        assert cache.get(_call(fixed).key)["text"] == "now fine"


def test_k_samples_kept_in_order_and_duplicates_made_once(tmp_path):
    backend = ScriptedBackend(lambda messages, settings, index: f"seed {settings.seed} index {index}")
    calls = [_call(backend, sample=k, seed=10 + k) for k in range(3)]
    with CallCache.load(tmp_path / "calls.jsonl") as cache:
        answers = cached_generate([*calls, calls[1]], cache)
    # the three samples share one prompt: made as one n=3 request with the first seed (10), answers in order
    assert [a.generation.text for a in answers] == ["seed 10 index 0", "seed 10 index 1", "seed 10 index 2",
                                                     "seed 10 index 1"]
    assert len(backend.calls) == 3
    assert [a.cached for a in answers] == [False] * 4


def test_no_cache_makes_every_distinct_call():
    backend = ScriptedBackend(["a", "b"])
    answers = cached_generate([_call(backend, unit_id="u1"), _call(backend, unit_id="u2")], None)
    assert [(a.generation.text, a.cached) for a in answers] == [("a", False), ("b", False)]


def test_async_variant_reads_the_same_cache(tmp_path):
    path = tmp_path / "calls.jsonl"
    with CallCache.load(path) as cache:
        cached_generate([_call(ScriptedBackend(["stored"]))], cache)
    backend = ScriptedBackend(["new"])
    with CallCache.load(path) as cache:
        answers = asyncio.run(acached_generate([_call(backend), _call(backend, unit_id="u2")], cache))
    assert [(a.generation.text, a.cached) for a in answers] == [("stored", True), ("new", False)]
    assert len(backend.calls) == 1

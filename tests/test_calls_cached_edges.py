"""The cached caller's edges (surveyalign/calls/cached.py): every field of a made call, a given identity in its key,
an answer the caller's check rejects asked again, the run's settings (in flight, batch size, progress label) passed
through, the cache written in the background while an API judge answers, and the async variant's limit."""

from __future__ import annotations

import asyncio

import pytest

from surveyalign.backends import Backend, Generation, GenerationSettings
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

_MESSAGES = ({"role": "system", "content": "Rate it."}, {"role": "user", "content": "a survey"})


pytestmark = pytest.mark.usefixtures("tqdm_thread_lock")  # conftest.py: mutmut forks this process


class _ApiJudge(Backend):
    """A native-async backend: answers ``"<n> $$$-1$$$"``; records the peak in flight and the cache's writer."""

    name = "api-judge"

    def __init__(self, cache: CallCache | None = None, latency: float = 0.0) -> None:
        self.cache, self.latency = cache, latency
        self.in_flight = self.max_in_flight = 0
        self.background: list[bool] = []

    async def agenerate(self, prompts, settings=None, n=1):
        if self.cache is not None:
            self.background.append(self.cache.writing_in_background)
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        await asyncio.sleep(self.latency)
        self.in_flight -= 1
        return [[Generation(f"{prompts[0][-1]['content']} $$$-1$$$", "stop", -0.1) for _ in range(n)]]


class _Batches(Backend):
    name = "batches"

    def __init__(self) -> None:
        self.sizes: list[int] = []

    def generate(self, prompts, settings=None, n=1):
        self.sizes.append(len(prompts))
        return [[Generation("ok$$$1$$$", "stop", None) for _ in range(n)] for _ in prompts]


def _call(backend, unit_id="u1", **kwargs):
    return make_call(backend, GenerationSettings(temperature=0.7, seed=4), stage="rqs", unit_id=unit_id,
                     namespace="structure", messages=[{"role": "user", "content": unit_id}],
                     identity={"backend": "test"}, **kwargs)


def test_every_field_of_a_made_call():
    backend = ScriptedBackend(["x"])
    settings = GenerationSettings(temperature=0.7, seed=4)
    identity = {"backend": "openai", "model": "judge-model"}
    call = make_call(backend, settings, stage="rqs", unit_id="p7", namespace="structure", messages=_MESSAGES,
                     sample=2, identity=identity)
    assert (call.stage, call.unit_id, call.namespace, call.sample, call.settings, call.backend) == (
        "rqs", "p7", "structure", 2, settings, backend)
    assert call.messages == list(_MESSAGES) and isinstance(call.messages, list)
    assert call.messages_hash == stable_hash(list(_MESSAGES))
    assert call.key == call_key(stage="rqs", unit_id="p7", namespace="structure", sample=2,
                                messages_hash=stable_hash(list(_MESSAGES)), backend=identity,
                                settings=settings.model_dump())
    default = make_call(backend, settings, stage="rqs", unit_id="p7", namespace="structure", messages=_MESSAGES,
                        sample=2)
    assert default.key == call_key(stage="rqs", unit_id="p7", namespace="structure", sample=2,
                                   messages_hash=call.messages_hash, backend=backend_identity(backend),
                                   settings=settings.model_dump()) != call.key
    assert make_call(backend, settings, stage="rqs", unit_id="p7", namespace="structure",
                     messages=_MESSAGES).sample == 0


def test_an_answer_the_check_rejects_is_asked_again(tmp_path):
    path = tmp_path / "calls.jsonl"
    with CallCache.load(path) as cache:
        cached_generate([_call(ScriptedBackend(["no score at all"]))], cache)

    def reader(call, generation):
        return None if "$$$" in generation.text else "no score marker"

    fixed = ScriptedBackend(["fine$$$2$$$"])
    with CallCache.load(path) as cache:
        [answer] = cached_generate([_call(fixed)], cache, check=reader)
        assert cache.counts == {"reused": 0, "retried": 1, "made": 0}
    assert (answer.generation.text, answer.cached) == ("fine$$$2$$$", False) and len(fixed.calls) == 1
    with CallCache.load(path) as cache:  # the new answer passes the check: reused
        [again] = cached_generate([_call(ScriptedBackend([]))], cache, check=reader)
        assert (again.generation.text, again.cached) == ("fine$$$2$$$", True)
        assert cache.counts == {"reused": 1, "retried": 0, "made": 0}
    with CallCache.load(path) as cache:  # without a check the old answer would have been kept as is
        async_again = asyncio.run(acached_generate([_call(ScriptedBackend([]))], cache, check=reader))
        assert async_again[0].cached is True


def test_async_check_asks_a_rejected_answer_again(tmp_path):
    path = tmp_path / "calls.jsonl"
    with CallCache.load(path) as cache:
        cached_generate([_call(ScriptedBackend(["unreadable"]))], cache)
    fixed = ScriptedBackend(["readable$$$1$$$"])
    with CallCache.load(path) as cache:
        [answer] = asyncio.run(acached_generate([_call(fixed)], cache,
                                                check=lambda c, g: None if "$$$" in g.text else "no score"))
    assert answer.generation.text == "readable$$$1$$$" and answer.cached is False


def test_the_runs_settings_reach_the_executor(tmp_path, capsys):
    backend = _Batches()
    calls = [_call(backend, f"u{i}") for i in range(5)]
    with CallCache.load(tmp_path / "calls.jsonl") as cache:
        answers = cached_generate(calls, cache, batch_size=2, progress=True, desc="rating pairs")
    assert backend.sizes == [2, 2, 1] and [a.generation.text for a in answers] == ["ok$$$1$$$"] * 5
    err = capsys.readouterr().err
    assert "rating pairs" in err and "5/5" in err
    api = _ApiJudge(latency=0.01)
    cached_generate([_call(api, f"u{i}") for i in range(6)], None, concurrency=2)
    assert api.max_in_flight == 2
    abatches = _Batches()
    asyncio.run(acached_generate([_call(abatches, f"u{i}") for i in range(3)], None, batch_size=1, progress=True,
                                 desc="async pairs"))
    assert abatches.sizes == [1, 1, 1] and "async pairs" in capsys.readouterr().err
    aapi = _ApiJudge(latency=0.01)
    asyncio.run(acached_generate([_call(aapi, f"u{i}") for i in range(6)], None, concurrency=3))
    assert aapi.max_in_flight == 3


def test_an_api_judges_answers_are_written_in_the_background(tmp_path):
    path = tmp_path / "calls.jsonl"
    with CallCache.load(path) as cache:
        api = _ApiJudge(cache)
        answers = cached_generate([_call(api, "u1"), _call(api, "u2")], cache)
        assert api.background == [True, True] and not cache.writing_in_background
    assert [a.generation.text for a in answers] == ["u1 $$$-1$$$", "u2 $$$-1$$$"]
    assert len(path.read_text(encoding="utf-8").splitlines()) == 2
    with CallCache.load(path) as cache:
        assert [cache.get(_call(api, u).key)["text"] for u in ("u1", "u2")] == ["u1 $$$-1$$$", "u2 $$$-1$$$"]


def test_no_bar_unless_asked_and_the_default_label(capsys):
    cached_generate([_call(_Batches(), "u1")], None)
    asyncio.run(acached_generate([_call(_Batches(), "u1")], None))
    assert capsys.readouterr().err == ""
    cached_generate([_call(_Batches(), "u1")], None, progress=True)
    assert "calls: 100%" in capsys.readouterr().err
    asyncio.run(acached_generate([_call(_Batches(), "u1")], None, progress=True))
    assert "calls: 100%" in capsys.readouterr().err

"""Backend interface, load_backend, constant / scripted / vLLM (absent) backends."""

from __future__ import annotations

import asyncio
import importlib.util

import pytest
from pydantic import ValidationError

from surveyalign.backends import (
    BACKENDS,
    Backend,
    Generation,
    GenerationSettings,
    load_backend,
)
from surveyalign.prompts import parse_judgement

USER = [{"role": "user", "content": "Judge this survey."}]


def test_settings_defaults_and_validation():
    s = GenerationSettings()
    assert (s.temperature, s.top_p, s.max_new_tokens, s.seed, s.enable_thinking) == (0.0, 1.0, 512, 0, False)
    assert s.greedy and not GenerationSettings(temperature=0.7).greedy
    for bad in ({"temperature": -0.1}, {"top_p": 0.0}, {"top_p": 1.5}, {"max_new_tokens": 0}, {"seed": -1},
                {"temprature": 0.5}):
        with pytest.raises(ValidationError):
            GenerationSettings(**bad)
    # frozen and hashable: the server groups requests by settings
    assert hash(GenerationSettings(seed=3)) == hash(GenerationSettings(seed=3))


def test_load_backend_rejects_unknown_kind_and_option():
    with pytest.raises(ValueError, match="unknown backend kind 'nope'.*constant"):
        load_backend("nope")
    with pytest.raises(ValueError, match=r"does not take option\(s\) \['scroe'\].*'score'"):
        load_backend("constant", scroe=1)
    assert set(BACKENDS) == {"openai", "anthropic", "transformers", "vllm", "constant", "scripted", "ray"}


@pytest.mark.parametrize("protocol, score, expected", [
    ("v1.0", -1, "Adequate overall.$$$-1$$$"),
    ("v1.0", 2, "Adequate overall.$$$2$$$"),
    ("v1.1", -2, "<reason>Adequate overall.</reason> <score>-2</score>"),
])
def test_constant_backend_answers_parseable_constant(protocol, score, expected):
    backend = load_backend("constant", score=score, rationale="Adequate overall.", protocol=protocol)
    out = backend.generate([USER, USER, USER], GenerationSettings(), n=2)
    assert [len(row) for row in out] == [2, 2, 2]
    assert all(g == Generation(expected, "stop", None) for row in out for g in row)
    parsed = parse_judgement(out[0][0].text, protocol=protocol)
    assert (parsed.score, parsed.error) == (score, None)
    assert backend.describe() == {"backend": "constant", "score": score, "rationale": "Adequate overall.",
                                  "protocol": protocol}


@pytest.mark.parametrize("score", [0, 3, True, 1.5])
def test_constant_backend_rejects_invalid_score(score):
    with pytest.raises(ValueError, match="score must be one of"):
        load_backend("constant", score=score)


def test_scripted_backend_plays_replies_in_order_and_reports_exhaustion():
    backend = load_backend("scripted", replies=["a$$$1$$$", Generation("b", "length", -0.3), ValueError("boom")])
    out = backend.generate([USER, USER], n=2)
    assert [g.text for g in out[0]] == ["a$$$1$$$", "b"]
    assert out[0][1].finish_reason == "length" and out[0][1].mean_logprob == -0.3
    assert out[1][0].error == "ValueError: boom" and out[1][0].text == ""
    assert out[1][1].error == "RuntimeError: scripted backend ran out of replies after 3"
    assert [index for _, _, index in backend.calls] == [0, 1, 0, 1]


def test_scripted_backend_callable_sees_seeded_sample_index_and_async_works():
    backend = load_backend("scripted", replies=lambda msgs, s, i: f"{msgs[0]['content']}|{s.seed + i}")
    out = asyncio.run(backend.agenerate([USER], GenerationSettings(seed=10), n=3))
    assert [g.text for g in out[0]] == ["Judge this survey.|10", "Judge this survey.|11", "Judge this survey.|12"]


def test_generate_validates_arguments():
    backend = load_backend("scripted", replies=["x"], cycle=True)
    with pytest.raises(ValueError, match="n must be a positive integer"):
        backend.generate([USER], n=0)
    with pytest.raises(ValueError, match="prompt 1: expected a non-empty list"):
        backend.generate([USER, []])
    with pytest.raises(ValueError, match="prompt 0, message 0: expected a dict with 'role' and 'content'"):
        backend.generate([[{"role": "user"}]])


def test_async_only_backend_gets_sync_generate():
    class Echo(Backend):
        name = "echo"

        async def agenerate(self, prompts, settings=None, n=1):
            await asyncio.sleep(0)
            return [[Generation(p[-1]["content"][::-1], "stop", None) for _ in range(n)] for p in prompts]

    with Echo() as backend:
        assert backend.generate([USER], n=2) == [[Generation(".yevrus siht egduJ", "stop", None)] * 2]
        assert backend.generate([USER]) == [[Generation(".yevrus siht egduJ", "stop", None)]]  # loop reused


@pytest.mark.skipif(importlib.util.find_spec("vllm") is not None, reason="vLLM is installed, so the message shown without it cannot be checked here")
def test_vllm_backend_missing_dependency_message():
    with pytest.raises(ImportError, match=r"pip install surveyalign\[gpu\]"):
        load_backend("vllm", model="unused")

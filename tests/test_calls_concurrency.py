"""One concurrency knob (issue 23): the limit a run asks for is what reaches the server, whatever the backend's
own ``concurrency`` option says."""

from __future__ import annotations

import asyncio

import pytest

from surveyalign.backends import GenerationSettings, load_backend
from surveyalign.calls import arun_calls, make_call, run_calls
from surveyalign.testing import FakeChatServer


def _calls(backend, count):
    settings = GenerationSettings(max_new_tokens=8)
    identity = {"backend": "openai", "model": "fake"}
    return [make_call(backend, settings, stage="judge", unit_id=f"u{i}", namespace="readability",
                      messages=[{"role": "user", "content": f"rate {i}"}], identity=identity)
            for i in range(count)]


@pytest.mark.parametrize(("asked", "expected"), [(24, 24), (None, 4), (2, 2)])
def test_run_limit_is_what_the_server_sees(asked, expected):
    with FakeChatServer(delay=0.4) as server:
        backend = load_backend("openai", base_url=server.base_url, model="fake", api_key_env=None, concurrency=4)
        answers = []
        errors = run_calls(_calls(backend, 48), lambda call, gen, s: answers.append(gen), concurrency=asked)
        assert errors == 0 and len(answers) == 48
        assert server.max_in_flight == expected
        assert backend.concurrency == expected  # run_config records what was in flight


def test_async_run_raises_the_limit_on_the_callers_loop():
    async def go(server):
        backend = load_backend("openai", base_url=server.base_url, model="fake", api_key_env=None, concurrency=3)
        await arun_calls(_calls(backend, 10), lambda *a: None, concurrency=3)
        server.reset()
        await arun_calls(_calls(backend, 40), lambda *a: None, concurrency=20)
        return server.max_in_flight

    with FakeChatServer(delay=0.4) as server:
        assert asyncio.run(go(server)) == 20


def test_set_concurrency_refuses_zero():
    backend = load_backend("openai", base_url="http://127.0.0.1:9/v1", model="fake", api_key_env=None)
    with pytest.raises(ValueError, match="concurrency must be >= 1"):
        backend.set_concurrency(0)


def test_a_prompts_messages_are_encoded_once_and_spliced_into_each_body():
    """The K samples of one prompt share its encoded messages; the bytes sent are the body's JSON all the same."""
    import json

    from surveyalign.backends.openai_api import OpenAIBackend

    messages = [{"role": "system", "content": "Rate it."}, {"role": "user", "content": "Übersicht \"quoted\"\n"}]
    body = {"model": "m", "messages": messages, "temperature": 0.7, "seed": 3, "n": 1}
    spliced = OpenAIBackend._encode(body, json.dumps(messages))
    assert json.loads(spliced) == body
    assert json.loads(OpenAIBackend._encode(body)) == body
    assert json.loads(OpenAIBackend._encode({"messages": messages}, json.dumps(messages))) == {"messages": messages}


def test_sent_bodies_reach_the_server_as_json():
    with FakeChatServer() as server:
        backend = load_backend("openai", base_url=server.base_url, model="fake", api_key_env=None, concurrency=2)
        out = asyncio.run(backend.agenerate([[{"role": "user", "content": "hi"}]], GenerationSettings(seed=5), n=3))
        assert [g.error for g in out[0]] == [None, None, None]
        assert sorted(b["seed"] for b in server.requests) == [5, 6, 7]
        assert all(b["messages"] == [{"role": "user", "content": "hi"}] for b in server.requests)

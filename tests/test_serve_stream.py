"""Issue 21 F: ``surveyalign serve`` streams token by token while the transformers engine generates (it used to
generate the whole answer, then cut it into chunks). The order of events is asserted, not wall time: the engine is
held after its third token until the client has read a token chunk, so only a server that sends tokens during
generation lets the client read one before "generation finished"."""

from __future__ import annotations

import json
import threading

import httpx

from surveyalign.backends import load_backend, serve_in_thread
from surveyalign.backends.server_stream import held_back

MESSAGES = [{"role": "user", "content": "Score the readability of this survey: it is clearly written."}]


def _read_stream(server, body: dict, on_chunk=None) -> tuple[str, list[dict]]:
    chunks = []
    with httpx.stream("POST", f"{server.base_url}/chat/completions", json={**body, "stream": True},
                      timeout=120) as response:
        assert response.status_code == 200
        for line in response.iter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            chunk = json.loads(line[len("data: "):])
            chunks.append(chunk)
            if on_chunk is not None:
                on_chunk(chunk)
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])
    return text, chunks


def test_the_first_token_reaches_the_client_before_generation_finishes(tiny_model_dir):
    backend = load_backend("transformers", model=str(tiny_model_dir), device="cpu")
    original = backend.generate_detailed
    gate = threading.Event()
    log: list[str] = []

    def generate_detailed(prompts, settings=None, n=1, seeds=None, adapter_name=None, top_logprobs=0,
                          on_token=None):
        seen = [0]

        def hold(token):
            on_token(token)
            seen[0] += 1
            if seen[0] == 3:  # hold the engine until the client has read a token chunk (or 30 s pass)
                log.append("engine waits")
                gate.wait(30)

        try:
            return original(prompts, settings, n, seeds, adapter_name=adapter_name, top_logprobs=top_logprobs,
                            on_token=hold if on_token is not None else None)
        finally:
            log.append("generation finished")

    backend.generate_detailed = generate_detailed
    body = {"model": "tiny", "messages": MESSAGES, "max_tokens": 48, "temperature": 0, "seed": 1}
    with serve_in_thread(backend=backend, served_model_name="tiny") as server:
        whole = httpx.post(f"{server.base_url}/chat/completions", json={**body, "logprobs": True}, timeout=120).json()
        assert whole["usage"]["completion_tokens"] > 3  # long enough to be held after its third token
        log.clear()

        def on_chunk(chunk):
            if chunk["choices"] and chunk["choices"][0]["logprobs"] and "client read a token" not in log:
                log.append("client read a token")
                gate.set()

        text, chunks = _read_stream(server, {**body, "logprobs": True}, on_chunk)
        # the engine cannot finish before the client has read a token (it waits after its third one)
        assert sorted(log) == ["client read a token", "engine waits", "generation finished"]
        assert log.index("client read a token") < log.index("generation finished")
        assert text == whole["choices"][0]["message"]["content"]
        entries = [e for c in chunks if c["choices"] and c["choices"][0]["logprobs"]
                   for e in c["choices"][0]["logprobs"]["content"]]
        assert [(e["token"], round(e["logprob"], 5)) for e in entries] == [
            (e["token"], round(e["logprob"], 5)) for e in whole["choices"][0]["logprobs"]["content"]]
        finals = [c["choices"][0]["finish_reason"] for c in chunks if c["choices"] and c["choices"][0]["finish_reason"]]
        assert finals == [whole["choices"][0]["finish_reason"]]

        # a stop string: the streamed text is the non-streamed cut, nothing after the stop is ever sent
        full = whole["choices"][0]["message"]["content"]
        stop = full[5:8]
        cut = httpx.post(f"{server.base_url}/chat/completions", json={**body, "stop": [stop]}, timeout=120).json()
        streamed, chunks = _read_stream(server, {**body, "stop": [stop]})
        assert streamed == cut["choices"][0]["message"]["content"] == full[:full.find(stop)]
        assert [c["choices"][0]["finish_reason"] for c in chunks if c["choices"] and c["choices"][0]["finish_reason"]
                ] == ["stop"]


def test_held_back_is_the_longest_end_that_starts_a_stop_string():
    assert held_back("the answer is $$", ["$$$"]) == 2
    assert held_back("the answer is $", ["$$$", "is $x"]) == 4  # "is $" starts "is $x"
    assert held_back("plain", ["$$$"]) == 0 and held_back("abc", []) == 0

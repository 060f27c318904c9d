"""`surveyalign serve` stops generating for a streaming client that disconnected (surveyalign/backends/server*.py,
hf.py ``cancelled``): the engine's batch ends within 2 s of the client closing the connection, instead of running
n x max_tokens steps nobody reads while every other client waits; /health counts the request as cancelled."""

from __future__ import annotations

import json
import time

import httpx

from surveyalign.backends import load_backend, serve_in_thread

MESSAGES = [{"role": "user", "content": "Score the readability of this survey: it is clearly written."}]


def test_a_disconnected_stream_stops_within_2_s_and_the_next_client_is_answered(tiny_model_dir):
    backend = load_backend("transformers", model=str(tiny_model_dir), device="cpu")
    original = backend.generate_detailed
    ended: list[tuple[float, int]] = []  # (when a generate_detailed call returned, tokens it handed out)

    def generate_detailed(prompts, settings=None, n=1, seeds=None, adapter_name=None, top_logprobs=0,
                          on_token=None, cancelled=None):
        count = [0]

        def slow(token):  # 10 ms a token: n=2 x 600 tokens is >= 12 s of generation
            on_token(token)
            count[0] += 1
            time.sleep(0.01)

        try:
            return original(prompts, settings, n, seeds, adapter_name=adapter_name, top_logprobs=top_logprobs,
                            on_token=slow if on_token is not None else None,
                            **({"cancelled": cancelled} if cancelled is not None else {}))
        finally:
            ended.append((time.monotonic(), count[0]))

    backend.generate_detailed = generate_detailed
    body = {"model": "tiny", "messages": MESSAGES, "max_tokens": 600, "n": 2, "temperature": 1.0, "seed": 3,
            "stream": True}
    with serve_in_thread(backend=backend, served_model_name="tiny") as server:
        read = 0
        with httpx.stream("POST", f"{server.base_url}/chat/completions", json=body, timeout=60) as response:
            assert response.status_code == 200
            for line in response.iter_lines():
                if line.startswith("data: ") and line != "data: [DONE]":
                    chunk = json.loads(line[len("data: "):])
                    read += bool(chunk["choices"] and chunk["choices"][0]["delta"].get("content"))
                if read >= 3:
                    break
        closed = time.monotonic()  # the client left after 3 content chunks
        deadline = closed + 30
        while not ended and time.monotonic() < deadline:
            time.sleep(0.02)
        assert ended, "the engine never stopped"
        stopped_after = ended[0][0] - closed
        assert stopped_after < 2.0, f"generation ran {stopped_after:.1f} s after the client left"
        assert ended[0][1] < 2 * 600  # it did not run to max_tokens
        start = time.monotonic()
        small = httpx.post(f"{server.base_url}/chat/completions",
                           json={"model": "tiny", "messages": MESSAGES, "max_tokens": 4}, timeout=60)
        assert small.status_code == 200 and time.monotonic() - start < 2.0 + 4 * 0.01 * 2
        health = httpx.get(f"http://127.0.0.1:{server.port}/health", timeout=10).json()
    assert health["requests"]["cancelled"] == 1 and health["requests"]["served"] == 1

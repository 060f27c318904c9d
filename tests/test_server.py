"""`surveyalign serve` on 127.0.0.1 over the tiny model: the OpenAI backend against it, request validation,
micro-batching that keeps seeded samples identical, and the real CLI process."""

from __future__ import annotations

import json
import math
import os
import socket
import subprocess
import sys
import time

import httpx
import pytest

from surveyalign.backends import GenerationSettings, load_backend, serve_in_thread

P1 = [{"role": "user", "content": "Score the readability of this survey: it is clearly written."}]
P2 = [{"role": "user", "content": "short"}]


@pytest.fixture(scope="module")
def server(tiny_model_dir):
    with serve_in_thread(str(tiny_model_dir), device="cpu", batch_size=8) as handle:
        yield handle


@pytest.fixture()
def client(server):
    backend = load_backend("openai", base_url=server.base_url, model=server.model, api_key_env=None,
                           concurrency=8, timeout=60, max_retries=0)
    yield backend
    backend.close()


def test_openai_backend_against_served_tiny_model(server, client):
    settings = GenerationSettings(temperature=1.0, max_new_tokens=8, seed=21, want_logprobs=True)
    remote = client.generate([P1, P2], settings, n=2)
    local = server.backend.generate([P1, P2], settings, n=2)
    for remote_row, local_row in zip(remote, local):
        assert remote_row[0].text != remote_row[1].text  # seeds 21 and 22
        for r, g in zip(remote_row, local_row):
            assert r.error is None and r.finish_reason == "length"
            assert r.text == g.text
            assert r.mean_logprob == pytest.approx(g.mean_logprob, abs=1e-4)
    greedy = client.generate([P2], GenerationSettings(max_new_tokens=5))
    assert greedy[0][0].text == server.backend.generate([P2], GenerationSettings(max_new_tokens=5))[0][0].text
    assert greedy[0][0].mean_logprob is None  # not requested


def test_concurrent_requests_are_batched_without_changing_samples(server, client):
    settings = GenerationSettings(temperature=1.0, max_new_tokens=6, seed=100)
    prompts = [[{"role": "user", "content": f"survey number {k}"}] for k in range(10)]
    remote = client.generate(prompts, settings, n=3)  # 30 requests, seeds 100-102, batched together
    for prompt, row in zip(prompts, remote):
        alone = server.backend.generate([prompt], settings, n=3)[0]
        assert [g.text for g in row] == [g.text for g in alone]
        assert len({g.text for g in row}) == 3


def test_chat_completion_response_shape(server):
    body = {"model": server.model, "messages": P2, "max_tokens": 4, "n": 2, "seed": 3, "temperature": 0.9,
            "logprobs": True}
    r = httpx.post(f"{server.base_url}/chat/completions", json=body, timeout=60)
    assert r.status_code == 200
    data = r.json()
    assert data["object"] == "chat.completion" and data["model"] == server.model
    assert [c["index"] for c in data["choices"]] == [0, 1]
    tokens = [len(c["logprobs"]["content"]) for c in data["choices"]]
    assert tokens == [4, 4] and all(c["finish_reason"] == "length" for c in data["choices"])
    prompt_tokens = len(server.backend.tokenizer(server.backend.render(P2, GenerationSettings()),
                                                 add_special_tokens=False)["input_ids"])
    assert data["usage"] == {"prompt_tokens": prompt_tokens, "completion_tokens": 8, "total_tokens": prompt_tokens + 8}
    choice = data["choices"][0]
    assert "".join(t["token"] for t in choice["logprobs"]["content"]) == choice["message"]["content"]
    # content parts are accepted like plain strings; thinking switch reaches the template
    parts = {"messages": [{"role": "user", "content": [{"type": "text", "text": "short"}]}], "max_tokens": 1,
             "chat_template_kwargs": {"enable_thinking": True}}
    r2 = httpx.post(f"{server.base_url}/chat/completions", json=parts, timeout=60)
    think = len(server.backend.tokenizer("<think>\n\n</think>\n\n", add_special_tokens=False)["input_ids"])
    assert r2.status_code == 200 and r2.json()["usage"]["prompt_tokens"] == prompt_tokens - think


def test_serve_help_lists_options():
    result = subprocess.run([sys.executable, "-m", "surveyalign", "serve", "--help"], capture_output=True, text=True,
                            timeout=60, check=False)
    assert result.returncode == 0
    for option in ("--model", "--adapter", "--host", "--port", "--served-model-name"):
        assert option in result.stdout


def test_models_endpoint(server):
    r = httpx.get(f"{server.base_url}/models")
    assert r.status_code == 200
    assert [m["id"] for m in r.json()["data"]] == [server.model] == [os.path.basename(server.backend.model_path)]


def test_served_fingerprint_in_models_header_and_openai_describe(server, client):
    """The served model's content digest is listed, sent with each completion and becomes the client's identity."""
    from surveyalign.backends.fingerprint import served_fingerprint

    expected = served_fingerprint(server.backend.describe())
    assert expected is not None and len(expected) == 64
    [entry] = httpx.get(f"{server.base_url}/models").json()["data"]
    assert entry["surveyalign"] == {"fingerprint": expected}
    assert str(server.backend.model_path) not in json.dumps(entry)  # digests only, no paths
    body = {"model": server.model, "messages": P2, "max_tokens": 1}
    r = httpx.post(f"{server.base_url}/chat/completions", json=body, timeout=60)
    assert r.status_code == 200 and r.headers["x-surveyalign-fingerprint"] == expected
    assert client.describe()["server_fingerprint"] == expected
    # another served name in the client config: not this model's fingerprint
    other = load_backend("openai", base_url=server.base_url, model="not-served", api_key_env=None)
    assert other.describe()["server_fingerprint"] is None


@pytest.mark.parametrize("body, status, fragment", [
    ({"messages": []}, 400, "messages"),
    ({"messages": [{"role": "user", "content": "x"}], "temperature": -1}, 400, "temperature"),
    ({"messages": [{"role": "user", "content": "x"}], "n": 0}, 400, "invalid request: n"),
    ({"messages": [{"role": "user", "content": "x"}], "logit_bias": {"1": 5}}, 400, "logit_bias"),
    ({"messages": [{"role": "user", "content": "x"}], "stop": ["a"] * 5}, 400, "stop"),
    ({"messages": [{"role": "user", "content": "x"}], "top_logprobs": 5}, 400, "top_logprobs"),
    ({"messages": [{"role": "robot", "content": "x"}]}, 400, "messages.0.role"),
    ({"messages": [{"role": "assistant", "content": "x"}]}, 400, "last message must not be an assistant"),
    ({"messages": [{"role": "user", "content": "x"}], "model": "other"}, 404, "'other' is not served here"),
    ([1, 2], 400, "must be a JSON object"),
])
def test_bad_requests_get_openai_style_errors(server, body, status, fragment):
    r = httpx.post(f"{server.base_url}/chat/completions", json=body, timeout=30)
    assert r.status_code == status
    assert fragment in r.json()["error"]["message"]


def test_invalid_json_body(server):
    r = httpx.post(f"{server.base_url}/chat/completions", content=b"{not json", timeout=30)
    assert r.status_code == 400 and r.json()["error"]["message"] == "request body is not valid JSON"


def test_backend_reports_server_400_as_generation_error(server, client):
    too_long = GenerationSettings(max_new_tokens=40000)  # exceeds the tiny model's 32768-token context
    [[generation]] = client.generate([P2], too_long)
    assert generation.error.startswith("HTTP 400") and "exceeds the model context" in generation.error


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.slow  # a cold process imports torch + transformers: 5-25 s on the shared CPU
def test_surveyalign_serve_cli(tiny_model_dir):
    port = _free_port()
    cmd = [sys.executable, "-m", "surveyalign", "serve", "--model", str(tiny_model_dir), "--port", str(port),
           "--served-model-name", "judge", "--device", "cpu", "--log-level", "warning"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                r = httpx.get(f"http://127.0.0.1:{port}/v1/models", timeout=2)
                break
            except httpx.TransportError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"server did not come up: {proc.stdout.read() if proc.poll() is not None else ''}")
                time.sleep(0.2)
        assert r.json()["data"][0]["id"] == "judge"
        backend = load_backend("openai", base_url=f"http://127.0.0.1:{port}/v1", model="judge", api_key_env=None)
        [[generation]] = backend.generate([P2], GenerationSettings(max_new_tokens=3, want_logprobs=True))
        backend.close()
        assert generation.error is None and generation.finish_reason == "length" and generation.mean_logprob < 0
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_serve_with_adapter(tiny_model_dir, tmp_path):
    """The served adapter is applied: answers equal the local adapted backend, not the base model."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    from surveyalign.backends.fingerprint import adapter_fingerprint, served_fingerprint

    torch.manual_seed(1)
    peft_model = get_peft_model(AutoModelForCausalLM.from_pretrained(tiny_model_dir),
                                LoraConfig(r=4, lora_alpha=32, target_modules=["q_proj", "v_proj"],
                                           init_lora_weights=False, task_type="CAUSAL_LM"))
    adapter = tmp_path / "crit-adapter"
    peft_model.save_pretrained(adapter)
    settings = GenerationSettings(max_new_tokens=6, want_logprobs=True)
    with serve_in_thread(str(tiny_model_dir), adapter=str(adapter), device="cpu") as handle:
        assert handle.model == "crit-adapter"
        backend = load_backend("openai", base_url=handle.base_url, model="crit-adapter", api_key_env=None)
        [[remote]] = backend.generate([P1], settings)
        adapted_fingerprint = backend.describe()["server_fingerprint"]
        backend.close()
        [[local]] = handle.backend.generate([P1], settings)
        assert adapted_fingerprint == served_fingerprint(handle.backend.describe())
        assert handle.backend.describe()["fingerprints"]["adapter"] == adapter_fingerprint(adapter)
    base_backend = load_backend("transformers", model=str(tiny_model_dir), device="cpu")
    assert adapted_fingerprint != served_fingerprint(base_backend.describe())
    base = base_backend.generate([P1], settings)[0][0]
    assert remote.text == local.text
    assert remote.mean_logprob == pytest.approx(local.mean_logprob, abs=1e-4)
    assert remote.mean_logprob != pytest.approx(base.mean_logprob, abs=1e-3)


def test_requests_of_disconnected_clients_are_dropped(tiny_model_dir):
    """A killed client's queued requests are not generated: a new request waits at most for the batch that was
    already running, and /health counts the dropped requests."""
    import threading

    with serve_in_thread(str(tiny_model_dir), device="cpu", batch_size=2) as handle:
        url = f"{handle.base_url}/chat/completions"
        start = time.monotonic()
        calibration = httpx.post(url, json={"messages": P2, "max_tokens": 120, "temperature": 0}, timeout=300)
        per_token = (time.monotonic() - start) / 120
        assert calibration.json()["choices"][0]["finish_reason"] == "length"
        # long requests take >= ~1 s per batch on any CPU, so the 0.3 s clients leave while batch 1 runs
        long_tokens = min(4000, max(120, math.ceil(1.0 / per_token)))
        t_long = per_token * long_tokens
        long_body = {"messages": P2, "max_tokens": long_tokens, "temperature": 0}
        outcomes: list[str] = []

        def abandoned() -> None:  # a client that gives up (like a killed `surveyalign evaluate`)
            try:
                httpx.post(url, json=long_body, timeout=0.3)
                outcomes.append("answered")
            except httpx.TimeoutException:
                outcomes.append("timed out")

        threads = [threading.Thread(target=abandoned) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        start = time.monotonic()
        small = httpx.post(url, json={"messages": P2, "max_tokens": 4}, timeout=300)
        elapsed = time.monotonic() - start
        health = httpx.get(f"http://127.0.0.1:{handle.port}/health", timeout=30).json()
    assert outcomes == ["timed out"] * 8
    assert small.status_code == 200 and small.json()["usage"]["completion_tokens"] == 4
    counts = health["requests"]
    # batch size 2: at most 2 of the 8 had started when their clients left (then cancelled mid-generation); the others
    # were never generated
    assert counts["dropped"] >= 6 and counts["failed"] == 0
    assert counts["served"] + counts["dropped"] + counts["cancelled"] == 1 + 8 + 1
    assert health["queued"] == 0
    # without dropping, the small request would wait for 3 more long batches (>= 3 * t_long); the bound leaves one
    # batch of slack for a loaded machine (the dropped count above is the exact check)
    assert elapsed < 3 * t_long, (elapsed, t_long)

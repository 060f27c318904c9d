"""`surveyalign serve` is safe to expose (issue 26) and speaks more of the OpenAI API (issue 21 F).

Over the tiny model on 127.0.0.1: the API key (401 without it, /health open, the key never echoed, the
SURVEYALIGN_API_KEY variable, a warning for a non-loopback bind without a key), a body cap checked before parsing,
deeply nested JSON answered 400 (not 500), the prompt's characters checked before tokenising, header and body
timeouts; the official ``openai`` client streaming, ``top_logprobs`` and ``stop``.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time

import httpx
import pytest

from surveyalign.backends import ServerLimits, serve_in_thread
from surveyalign.backends.server_guard import is_loopback, json_depth
from surveyalign.cli import main

KEY = "sk-test-0123456789abcdef0123"
MESSAGES = [{"role": "user", "content": "Score the readability of this survey: it is clearly written."}]
LIMITS = ServerLimits(api_key=KEY, max_body_bytes=1_000_000, max_prompt_chars=50_000, header_timeout_s=0.5,
                      body_timeout_s=0.5)


@pytest.fixture(scope="module")
def guarded(tiny_model_dir):
    with serve_in_thread(str(tiny_model_dir), device="cpu", batch_size=8, limits=LIMITS) as handle:
        yield handle


def _post(server, body=None, *, key=KEY, content=None, headers=None):
    headers = dict(headers or {})
    if key is not None:
        headers["Authorization"] = f"Bearer {key}"
    return httpx.post(f"{server.base_url}/chat/completions", json=body, content=content, headers=headers,
                      timeout=60)


def test_api_key_required_and_never_echoed(guarded):
    body = {"model": guarded.model, "messages": MESSAGES, "max_tokens": 2}
    for key in (None, "sk-other-key-42", KEY + "x"):
        r = _post(guarded, body, key=key)
        assert r.status_code == 401 and r.json()["error"]["type"] == "authentication_error"
        assert KEY not in r.text and (key is None or key not in r.text)
    assert httpx.get(f"{guarded.base_url}/models", timeout=30).status_code == 401
    assert httpx.get(f"{guarded.base_url}/models", headers={"Authorization": f"Bearer {KEY}"},
                     timeout=30).status_code == 200
    assert httpx.get(guarded.base_url.removesuffix("/v1") + "/health", timeout=30).status_code == 200
    assert _post(guarded, body).status_code == 200


def test_without_a_key_no_header_is_needed(tiny_model_dir, monkeypatch):
    monkeypatch.delenv("SURVEYALIGN_API_KEY", raising=False)
    with serve_in_thread(str(tiny_model_dir), device="cpu", limits=ServerLimits.with_env_key()) as server:
        assert _post(server, {"messages": MESSAGES, "max_tokens": 1}, key=None).status_code == 200
    monkeypatch.setenv("SURVEYALIGN_API_KEY", "from-env")
    assert ServerLimits.with_env_key().api_key == "from-env" and ServerLimits.with_env_key("flag").api_key == "flag"
    assert ServerLimits.with_env_key().authorized("Bearer from-env")
    assert not ServerLimits.with_env_key().authorized("Basic from-env")


def test_non_loopback_bind_without_a_key_warns(tiny_model_dir, tmp_path):
    assert is_loopback("127.0.0.1") and is_loopback("localhost") and is_loopback("::1")
    assert not is_loopback("0.0.0.0") and not is_loopback("10.1.2.3")
    env = {k: v for k, v in os.environ.items() if k != "SURVEYALIGN_API_KEY"}
    env["PYTHONPATH"] = os.pathsep.join([os.getcwd(), env.get("PYTHONPATH", "")])
    cmd = [sys.executable, "-m", "surveyalign", "serve", "--model", str(tmp_path / "no-model"), "--host", "0.0.0.0",
           "--port", "1"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env, check=False)
    assert "WARNING: serving on 0.0.0.0 without an API key" in done.stderr
    done = subprocess.run([*cmd, "--api-key", "k"], capture_output=True, text=True, timeout=120, env=env, check=False)
    assert "without an API key" not in done.stderr


def test_body_cap_is_checked_before_parsing(guarded):
    big = b'{"messages": [{"role": "user", "content": "' + b"x" * 2_000_000 + b'"}]}'
    started = time.monotonic()
    r = _post(guarded, content=big, headers={"content-type": "application/json"})
    assert r.status_code == 413 and "exceeds the limit of 1,000,000" in r.json()["error"]["message"]

    def chunks():  # no Content-Length: counted as it arrives
        yield b'{"messages": [{"role": "user", "content": "'
        for _ in range(30):
            yield b"y" * 100_000
        yield b'"}]}'

    r = _post(guarded, content=chunks(), headers={"content-type": "application/json"})
    assert r.status_code == 413
    assert time.monotonic() - started < 30


def test_deeply_nested_json_is_400_not_500(guarded):
    for depth in (40, 100_000):
        content = b'{"messages": ' + b"[" * depth + b"]" * depth + b"}"
        r = _post(guarded, content=content, headers={"content-type": "application/json"})
        assert r.status_code == 400 and "nested deeper than 32 levels" in r.json()["error"]["message"]
    assert json_depth({"a": [[1]]}, 32) == 3 and json_depth([[[[]]]], 2) == 3


def test_prompt_characters_checked_before_tokenising(guarded):
    body = {"messages": [{"role": "user", "content": "word " * 20_000}], "max_tokens": 1}  # 100,000 characters
    started = time.monotonic()
    r = _post(guarded, body)
    assert r.status_code == 400 and "100,000 characters, above this server's limit of 50,000" in r.text
    assert time.monotonic() - started < 10


def _raw(server) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=10)
    return sock


def test_slow_headers_are_disconnected(guarded):
    sock = _raw(guarded)
    sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n")  # never finishes its headers
    started = time.monotonic()
    assert sock.recv(1024) == b""  # closed by the server
    assert 0.3 < time.monotonic() - started < 8
    sock.close()


def test_stalled_body_gets_408(guarded):
    sock = _raw(guarded)
    sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                 b"Authorization: Bearer " + KEY.encode() + b"\r\nContent-Length: 500\r\n\r\n{\"messages\"")
    started = time.monotonic()
    reply = sock.recv(4096)
    assert reply.startswith(b"HTTP/1.1 408") and time.monotonic() - started < 8
    sock.close()


# ------------------------------------------------------------------------------------ issue 21 F: more of the API

def test_openai_client_streams(guarded):
    from openai import OpenAI

    client = OpenAI(base_url=guarded.base_url, api_key=KEY, max_retries=0)
    whole = client.chat.completions.create(model=guarded.model, messages=MESSAGES, max_tokens=12, temperature=0,
                                           seed=3)
    stream = client.chat.completions.create(model=guarded.model, messages=MESSAGES, max_tokens=12, temperature=0,
                                            seed=3, stream=True, stream_options={"include_usage": True},
                                            logprobs=True, top_logprobs=2)
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == whole.choices[0].message.content and text
    assert chunks[0].choices[0].delta.role == "assistant"
    finals = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
    assert finals == [whole.choices[0].finish_reason]
    assert chunks[-1].choices == [] and chunks[-1].usage.completion_tokens == whole.usage.completion_tokens
    entries = [e for c in chunks if c.choices and c.choices[0].logprobs for e in c.choices[0].logprobs.content]
    assert len(entries) == whole.usage.completion_tokens and all(len(e.top_logprobs) == 2 for e in entries)
    with pytest.raises(Exception) as info:
        list(OpenAI(base_url=guarded.base_url, api_key="wrong", max_retries=0).chat.completions.create(
            model=guarded.model, messages=MESSAGES, max_tokens=2, stream=True))
    assert "401" in str(info.value)


def test_top_logprobs_values(guarded):
    r = _post(guarded, {"messages": MESSAGES, "max_tokens": 6, "temperature": 0, "logprobs": True,
                        "top_logprobs": 3})
    assert r.status_code == 200
    content = r.json()["choices"][0]["logprobs"]["content"]
    assert len(content) == r.json()["usage"]["completion_tokens"]
    for entry in content:
        top = entry["top_logprobs"]
        assert len(top) == 3 and [t["logprob"] for t in top] == sorted((t["logprob"] for t in top), reverse=True)
        assert top[0]["token"] == entry["token"] and abs(top[0]["logprob"] - entry["logprob"]) < 1e-5  # greedy
        assert all(t["logprob"] <= 0 for t in top)


def test_stop_strings(guarded):
    base = {"messages": MESSAGES, "max_tokens": 24, "temperature": 0}
    plain = _post(guarded, base).json()["choices"][0]
    assert _post(guarded, {**base, "stop": []}).json()["choices"][0]["message"]["content"] == plain["message"][
        "content"]
    text = plain["message"]["content"]
    assert len(text) > 8
    stop = text[4:7]
    cut = _post(guarded, {**base, "stop": [stop, "\u2603never"], "logprobs": True}).json()
    choice = cut["choices"][0]
    assert choice["message"]["content"] == text[:text.find(stop)] and choice["finish_reason"] == "stop"
    assert 1 <= len(choice["logprobs"]["content"]) < len(plain["message"]["content"]) + 2
    assert _post(guarded, {**base, "stop": stop}).json()["choices"][0]["message"]["content"] == text[:text.find(stop)]


@pytest.mark.parametrize(("extra", "fragment"), [
    ({"stop": ["a", "b", "c", "d", "e"]}, "at most 4 stop strings"),
    ({"stop": [""]}, "must not be empty"),
    ({"top_logprobs": 3}, "top_logprobs needs logprobs"),
    ({"logprobs": True, "top_logprobs": 21}, "top_logprobs"),
    ({"tools": [{"type": "function"}]}, "tools"),
    ({"frequency_penalty": 0.5}, "frequency_penalty"),
    ({"response_format": {"type": "json_object"}}, "response_format"),
])
def test_still_refused_fields(guarded, extra, fragment):
    r = _post(guarded, {"messages": MESSAGES, **extra})
    assert r.status_code == 400 and fragment in r.json()["error"]["message"]


def test_serve_help_lists_refused_fields_and_the_key(capsys):
    with pytest.raises(SystemExit):
        main(["serve", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "still refused" in out and "logit_bias" in out and "frequency_penalty" in out
    assert "--api-key" in out and "SURVEYALIGN_API_KEY" in out and "stream" in out and "top_logprobs" in out


def test_body_of_a_401_is_json(guarded):
    r = _post(guarded, {"messages": MESSAGES}, key=None)
    assert json.loads(r.text)["error"]["message"].startswith("missing or wrong API key")

"""Secrets never leave (issue 26): a key a server echoes back in its 401 body is redacted before it is cached
(calls.jsonl), written (score's <survey>.json / .md / .html, evaluate's predictions.jsonl go through the same
Generation) or printed; the one rule is surveyalign.redact.redact_secrets."""

from __future__ import annotations

import json

import pytest

from surveyalign.backends import Generation, GenerationSettings, load_backend
from surveyalign.calls import CallCache
from surveyalign.cli import main
from surveyalign.redact import REDACTED, redact_secrets, register_secret_env
from surveyalign.testing import FakeChatServer

KEY = "sk-live-0123456789abcdefABCDEF0123"


@pytest.mark.parametrize(("text", "expected"), [
    (f"HTTP 401: bad key Bearer {KEY}", f"HTTP 401: bad key Bearer {REDACTED}"),
    ("{'authorization': 'Bearer abc.def-123456'}", f"{{'authorization': '{REDACTED}'}}"),
    ("Authorization: Basic dXNlcjpwYXNzd29yZA==", f"Authorization: {REDACTED}"),
    ("the key sk-proj-AAAAAAAAAAAAAAAAAAAAAAAA leaked", f"the key {REDACTED} leaked"),
    ("token hf_abcdefghijklmnopqrstuvwxyz0123", f"token {REDACTED}"),
    ("GET https://api.x.org/p?api_key=abcd1234&q=1", f"GET https://api.x.org/p?api_key={REDACTED}&q=1"),
    ("no secret here: Bearer of bad news", "no secret here: Bearer of bad news"),
    (None, None),
])
def test_redact_patterns(text, expected):
    assert redact_secrets(text) == expected


def test_redact_configured_key_values(monkeypatch):
    monkeypatch.setenv("MY_JUDGE_CRED", "plain-value-without-prefix")
    assert redact_secrets("got plain-value-without-prefix back") == "got plain-value-without-prefix back"
    register_secret_env("MY_JUDGE_CRED")
    assert redact_secrets("got plain-value-without-prefix back") == f"got {REDACTED} back"
    monkeypatch.setenv("OTHER_API_KEY", "another-secret-1")  # a *_API_KEY name is secret without registering
    assert redact_secrets("x another-secret-1 y") == f"x {REDACTED} y"
    assert Generation.failed(f"oops {KEY}").error == f"oops {REDACTED}"


def test_echoed_key_is_not_in_the_backend_error_or_the_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("JUDGE_KEY_FOR_TEST", KEY)
    with FakeChatServer(always_status=401, echo_headers=True) as server:
        backend = load_backend("openai", base_url=server.base_url, model="fake-judge",
                               api_key_env="JUDGE_KEY_FOR_TEST", max_retries=0)
        [[generation]] = backend.generate([[{"role": "user", "content": "hi"}]], GenerationSettings())
        backend.close()
        assert server.request_headers[0]["authorization"] == f"Bearer {KEY}"  # the server did see it
    assert generation.error.startswith("HTTP 401") and "request headers were" in generation.error
    assert KEY not in generation.error and REDACTED in generation.error
    cache = CallCache.load(tmp_path / "calls.jsonl")
    cache.append({"key": "k1", "text": "", "error": f"HTTP 401: Bearer {KEY}"})
    cache.close()
    assert KEY not in (tmp_path / "calls.jsonl").read_text() and REDACTED in (tmp_path / "calls.jsonl").read_text()
    old = tmp_path / "old.jsonl"  # a line written before redaction existed is redacted when read back
    old.write_text(json.dumps({"key": "k", "text": "", "error": f"HTTP 401 Bearer {KEY}"}) + "\n")
    assert KEY not in CallCache.load(old).generation("k").error
    assert KEY not in CallCache.load(old).get("k")["error"]


def test_score_with_an_echoing_server_writes_no_key(monkeypatch, tmp_path, capsys):
    """Old code: the key was stored in calls.jsonl, <survey>.json/.md/.html and printed."""
    monkeypatch.setenv("JUDGE_KEY_FOR_TEST", KEY)
    survey = tmp_path / "survey.md"
    survey.write_text("# A survey of things\n\n## Intro\n\nText about things.\n")
    out = tmp_path / "out"
    with FakeChatServer(always_status=401, echo_headers=True) as server:
        judge = tmp_path / "judge.yaml"
        judge.write_text(f"backend: {{kind: openai, options: {{model: fake-judge, base_url: '{server.base_url}', "
                         f"api_key_env: JUDGE_KEY_FOR_TEST, max_retries: 0}}}}\n")
        code = main(["score", str(survey), "--judge", str(judge), "--out", str(out), "--samples", "1",
                     "--allow-no-knowledge", "--no-progress"])
    printed = capsys.readouterr()
    assert code == 3
    written = {p.name: p.read_text(encoding="utf-8") for p in out.iterdir() if p.is_file()}
    assert {"calls.jsonl", "survey.json", "survey.md", "survey.html"} <= set(written)
    assert "HTTP 401" in written["calls.jsonl"] and REDACTED in written["calls.jsonl"]
    for name, text in written.items():
        assert KEY not in text, name
    assert KEY not in printed.out and KEY not in printed.err

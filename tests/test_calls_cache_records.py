"""The call cache's records (issue 27): every field of an answer survives a write and a reload, torn or foreign
lines are counted and skipped, legacy errors are redacted, the counts line, and the key's canonical hash."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from surveyalign.backends import Generation, GenerationSettings, load_backend
from surveyalign.calls import CallCache, make_call, stable_hash
from surveyalign.calls.cache import backend_identity

FULL = Generation(text="score: 2", finish_reason="stop", mean_logprob=-0.25, error=None, reasoning="short",
                  refusal=None, prompt_tokens=120, completion_tokens=8, cached_tokens=64, batch_id="batch-1",
                  served_model="judge-2026-01-01", system_fingerprint="fp_1")


def _call(unit="u1"):
    backend = load_backend("scripted", replies=["x"])
    return make_call(backend, GenerationSettings(), stage="judge", unit_id=unit, namespace="readability",
                     messages=[{"role": "user", "content": "rate this review"}], sample=1)


def test_every_field_survives_a_reload(tmp_path):
    call = _call()
    with CallCache.load(tmp_path / "calls.jsonl") as cache:
        cache.add(call, FULL, 1.234567)
    line = json.loads((tmp_path / "calls.jsonl").read_text(encoding="utf-8"))
    assert {k: line[k] for k in ("key", "stage", "unit_id", "namespace", "sample", "messages_hash", "seconds")} == {
        "key": call.key, "stage": "judge", "unit_id": "u1", "namespace": "readability", "sample": 1,
        "messages_hash": call.messages_hash, "seconds": 1.2346}
    assert line["time"].endswith("+00:00") and len(line["time"]) == 25  # ISO seconds in UTC
    again = CallCache.load(tmp_path / "calls.jsonl")
    assert (again.n_lines, again.n_torn, call.key in again) == (1, 0, True)
    assert again.generation(call.key) == FULL
    assert list(again) == [again.get(call.key)]
    # no served model / fingerprint: the keys are left out, and read back as None
    bare = Generation(text="", finish_reason=None, mean_logprob=None)
    with CallCache.load(tmp_path / "bare.jsonl") as cache:
        cache.add(call, bare, 0.0)
    bare_line = json.loads((tmp_path / "bare.jsonl").read_text(encoding="utf-8"))
    assert "served_model" not in bare_line and "system_fingerprint" not in bare_line
    assert CallCache.load(tmp_path / "bare.jsonl").generation(call.key) == bare
    assert CallCache.load(tmp_path / "none.jsonl").generation("k").error == "no answer recorded"


def test_torn_and_foreign_lines_are_counted_and_legacy_errors_redacted(tmp_path):
    path = tmp_path / "calls.jsonl"
    secret = "sk-" + "a" * 40
    good = {"key": "k1", "text": "ok"}
    legacy = {"key": "k2", "text": "", "error": f"HTTP 401 with key {secret}"}
    path.write_bytes(b"\n".join([json.dumps(good).encode(), b"  ", b'{"key": "k3", "te', b"[1, 2]",
                                 json.dumps({"text": "no key"}).encode(), b"\xff\xfe",
                                 json.dumps(legacy).encode(), b""]))
    cache = CallCache.load(path)
    assert (cache.n_lines, cache.n_torn, sorted(cache.records)) == (2, 4, ["k1", "k2"])
    assert secret not in cache.get("k2")["error"] and cache.get("k2")["error"].startswith("HTTP 401 with key ")


def test_counts_line_and_summary(tmp_path):
    assert CallCache.counts_line({"reused": 3, "retried": 1, "made": 2}) == (
        "answers: 3 reused, 1 retried (their cached answer had failed), 2 made")
    assert CallCache.counts_line({"reused": 0, "retried": 0, "made": 0}, keep_failed=True) == (
        "answers: 0 reused, 0 retried (their cached answer had failed), 0 made (failed answers kept: --keep-failed)")
    cache = CallCache.load(tmp_path / "c.jsonl", keep_failed=True)
    cache.missing([_call("a"), _call("a"), _call("b")])
    assert cache.summary() == ("answers: 0 reused, 0 retried (their cached answer had failed), 2 made "
                               "(failed answers kept: --keep-failed)")


def test_canonical_hash_and_backend_identity():
    # sorted keys, no spaces, UTF-8 kept as is
    assert stable_hash({"b": 1, "a": ["é", None]}) == hashlib.sha256('{"a":["é",null],"b":1}'.encode()).hexdigest()
    assert stable_hash({"p": Path("a/b")}) == stable_hash({"p": "a/b"})  # non-JSON values by their str()

    class Remote:
        def describe(self):
            return {"backend": "openai", "model": "m", "timeout": 30, "concurrency": 8, "api_key_present": True}

    assert backend_identity(Remote()) == {"backend": "openai", "model": "m"}  # operational keys left out

    class Bare:
        pass

    assert backend_identity(Bare()) == {"backend": "Bare"}


def test_failed_answers_keep_error_and_refusal_redacted(tmp_path):
    secret = "sk-" + "b" * 40
    failed = Generation(text="", finish_reason="content_filter", mean_logprob=None, error=f"HTTP 400 key {secret}",
                        refusal="I cannot rate this review.")
    with CallCache.load(tmp_path / "calls.jsonl") as cache:
        cache.add(_call(), failed, 0.5)
        cache.append({"key": "k2", "text": "café", "source": Path("runs/a")})  # non-JSON values by their str()
    raw = (tmp_path / "calls.jsonl").read_text(encoding="utf-8")
    assert secret not in raw and "café" in raw and '"source": "runs/a"' in raw  # UTF-8 kept, not \\u escapes
    got = CallCache.load(tmp_path / "calls.jsonl").generation(_call().key)
    assert got.refusal == "I cannot rate this review." and got.error.startswith("HTTP 400 key ")


def test_appending_after_a_torn_last_line_and_into_new_folders(tmp_path):
    path = tmp_path / "calls.jsonl"
    path.write_text('{"key": "k1", "text": "a"}', encoding="utf-8")  # killed mid-run: no final newline
    with CallCache.load(path, fsync=True) as cache:
        cache.add(_call(), FULL, 0.1)
    assert [json.loads(line)["key"] for line in path.read_text(encoding="utf-8").splitlines()] == ["k1", _call().key]
    empty = tmp_path / "empty.jsonl"
    empty.write_text("", encoding="utf-8")
    with CallCache.load(empty) as cache:
        cache.add(_call(), FULL, 0.1)
    assert empty.read_text(encoding="utf-8").count("\n") == 1 and not empty.read_text(encoding="utf-8").startswith("\n")
    nested = tmp_path / "a" / "b" / "calls.jsonl"
    with CallCache.load(nested) as cache:
        cache.add(_call(), FULL, 0.1)
    assert CallCache.load(nested).n_lines == 1


def test_missing_counts_reuse_once_per_key_and_retries_rejected_answers(tmp_path):
    good, bad = _call("good"), _call("bad")
    with CallCache.load(tmp_path / "calls.jsonl") as cache:
        cache.add(good, FULL, 0.1)
        cache.add(bad, Generation(text="no score here", finish_reason="stop", mean_logprob=None), 0.1)
    cache = CallCache.load(tmp_path / "calls.jsonl")
    seen = []

    def check(call, generation):
        seen.append((call.unit_id, generation.text))
        return None if "score" in generation.text and generation.text != "no score here" else "no score"

    todo, cached = cache.missing([good, good, bad, _call("new")], check=check)
    assert ([c.unit_id for c in todo], cached) == (["bad", "new"], 2)
    assert cache.counts == {"reused": 1, "retried": 1, "made": 1}
    assert ("good", "score: 2") in seen and ("bad", "no score here") in seen
    assert cache.failure(bad, check) == "no score" and cache.failure(good) is None


def test_direct_and_background_appends_are_redacted_and_newlines_exact(tmp_path):
    secret = "sk-" + "c" * 40
    path = tmp_path / "calls.jsonl"
    path.write_text('{"key": "k0"}\n', encoding="utf-8")  # a complete last line: nothing to repair
    cache = CallCache.load(path)
    cache.append({"key": "k1", "error": f"HTTP 401 {secret}"})
    with cache.background():
        cache.append({"key": "k2", "error": f"HTTP 401 {secret}"})
    cache.close()
    cache.append({"key": "k3"})  # appending after close reopens the file
    cache.close()
    raw = path.read_text(encoding="utf-8")
    assert secret not in raw and "\n\n" not in raw and raw.count("\n") == 4
    assert cache.get("k1")["error"] == cache.get("k2")["error"] != f"HTTP 401 {secret}"
    one = tmp_path / "one.jsonl"
    one.write_text("{", encoding="utf-8")  # a one-byte torn line
    with CallCache.load(one) as c:
        c.append({"key": "k1"})
    again = CallCache.load(one)
    assert (again.n_lines, again.n_torn) == (1, 1)


def test_reuse_is_counted_per_cached_key(tmp_path):
    a, b = _call("a"), _call("b")
    with CallCache.load(tmp_path / "calls.jsonl") as cache:
        cache.add(a, FULL, 0.1)
        cache.add(b, FULL, 0.1)
    cache = CallCache.load(tmp_path / "calls.jsonl")
    assert cache.missing([a]) == ([], 1) and cache.counts["reused"] == 1
    assert cache.missing([b, a]) == ([], 2) and cache.counts["reused"] == 3

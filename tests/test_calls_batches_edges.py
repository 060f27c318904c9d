"""run_batches and batches.jsonl edges (surveyalign/calls/batches.py), against the local batch stand-in through the
official SDKs: the log's torn and foreign lines, what each record holds, duplicate keys sent once, the sample's seed,
a failed batch's own errors on each missing answer, the seconds from the intent's epoch, a lookup that raises, a
refused submission, waiting with ``max_wait_s``, ``wait=False`` and the poll interval."""

from __future__ import annotations

import json
import time

import pytest

from surveyalign.backends import BatchRequest, GenerationSettings, make_batch_api
from surveyalign.calls import BatchLog, BatchOutcome, run_batches
from surveyalign.testing import BatchCall, FakeBatchServer


def _calls(names: str = "AB", seed: int = 3) -> list[BatchCall]:
    return [BatchCall(f"key-{x}", [{"role": "user", "content": f"survey {x}"}], GenerationSettings(seed=seed), sample=i)
            for i, x in enumerate(names)]


def _openai(server):
    return make_batch_api("openai", base_url=server.openai_url, api_key="sk-test", model="judge-model")


def _anthropic(server):
    return make_batch_api("anthropic", base_url=server.anthropic_url, api_key="sk-test", model="judge-model")


def _events(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


class _Wrapped:
    """A provider client with one of its methods replaced (submit / find failing as a provider does)."""

    def __init__(self, api, **methods) -> None:
        self.api = api
        self.name, self.max_requests, self.max_bytes = api.name, api.max_requests, api.max_bytes
        self.__dict__.update(methods)

    def __getattr__(self, name):
        return getattr(self.api, name)


class _Sleeps:
    """The ``sleep`` of run_batches: records each wait, really waits, and stops a run that would never return."""

    def __init__(self, limit: int = 200) -> None:
        self.calls: list[float] = []
        self.limit = limit

    def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)
        if len(self.calls) > self.limit:
            raise AssertionError("run_batches kept waiting")
        time.sleep(min(seconds, 0.02))


def _poll() -> dict:
    """Fast polls whose ``sleep`` stops a run that never collects (a batch that is never logged as collected)."""
    return {"poll_s": 0.01, "sleep": _Sleeps(limit=100)}


# ---- the log -----------------------------------------------------------------------------------------------------


def test_log_skips_torn_and_foreign_lines_and_appends_on_a_line_of_its_own(tmp_path):
    path = tmp_path / "batches.jsonl"
    path.write_text('{"event": "intent", "tag": "t1", "keys": ["k1"]}\n'
                    '[1, 2]\n'
                    '{"batch_id": "b0"}\n'
                    '{"event": "submitted", "tag": "t1", "batch_id": "b1", "keys": ["k1"]}\n'
                    '{"event": "subm', encoding="utf-8")  # a torn last line, no newline
    log = BatchLog(path)
    assert [r["event"] for r in log.records] == ["intent", "submitted"]
    log.append({"event": "collected", "batch_id": "b1", "note": "café"})
    lines = path.read_text(encoding="utf-8").splitlines()
    assert lines[-2] == '{"event": "subm' and json.loads(lines[-1])["note"] == "café"
    assert '"café"' in lines[-1]  # written as UTF-8, not \\u escapes
    assert [r["event"] for r in BatchLog(path).records] == ["intent", "submitted", "collected"]
    assert BatchLog(path).open_batches() == {} and log.dangling_intents() == []


def test_log_in_a_new_folder_and_its_open_and_dangling_records(tmp_path):
    path = tmp_path / "run" / "nested" / "batches.jsonl"
    log = BatchLog(path)
    assert log.records == [] and not path.exists()
    for rec in ({"event": "intent", "tag": "t1"}, {"event": "intent", "tag": "t2"}, {"event": "intent", "tag": "t3"},
                {"event": "submitted", "tag": "t1", "batch_id": "b1", "keys": []},
                {"event": "abandoned", "tag": "t2"},
                {"event": "submitted", "tag": "t4", "batch_id": "b4", "keys": []},
                {"event": "collected", "batch_id": "b4"}, {"event": "collected"}):
        log.append(rec)
    assert path.read_text(encoding="utf-8").count("\n") == 8
    again = BatchLog(path)
    assert list(again.open_batches()) == ["b1"] and again.open_batches()["b1"]["tag"] == "t1"
    assert [r["tag"] for r in again.dangling_intents()] == ["t3"]


def test_outcome_counts_failures_and_serialises():
    out = BatchOutcome(provider="openai", succeeded=5, errored=1, expired=2, canceled=3, missing=4)
    assert out.failed == 10
    d = out.to_dict()
    assert d["failed"] == 10 and d["provider"] == "openai" and d["missing"] == 4 and d["open_batches"] == []
    assert json.loads(json.dumps(d)) == d


# ---- submitting --------------------------------------------------------------------------------------------------


def test_duplicate_keys_go_once_with_the_samples_seed_and_the_log_says_what_was_sent(tmp_path):
    log_path = tmp_path / "batches.jsonl"
    got: list = []
    calls = _calls("ABC", seed=3)
    dup = BatchCall("key-A", [{"role": "user", "content": "another prompt"}], GenerationSettings(seed=3), sample=9)
    before = time.time()
    with FakeBatchServer(reply=lambda body: f"seed {body['seed']}") as server:
        out = run_batches([*calls, dup], _openai(server), lambda c, g, s: got.append((c, g)), log_path, **_poll())
        assert sorted(server.requests_seen) == ["key-A", "key-B", "key-C"]
    assert (out.submitted_calls, out.collected_calls, out.succeeded, out.skipped_in_flight) == (3, 3, 3, 0)
    assert out.provider == "openai" and out.collected_batches == out.submitted_batches
    # the first call of a key is the one answered; its seed is the settings' seed + its sample
    assert {c.key: (c is calls[0] if c.key == "key-A" else True, g.text) for c, g in got} == {
        "key-A": (True, "seed 3"), "key-B": (True, "seed 4"), "key-C": (True, "seed 5")}
    intent, submitted, collected = _events(log_path)
    assert intent["event"] == "intent" and intent["provider"] == "openai"
    assert intent["keys"] == ["key-A", "key-B", "key-C"] and before <= intent["epoch"] <= time.time()
    assert len(intent["tag"]) == 32 and submitted["tag"] == intent["tag"]
    assert (submitted["event"], submitted["provider"], submitted["keys"], submitted["epoch"]) == (
        "submitted", "openai", intent["keys"], intent["epoch"])
    assert submitted["batch_id"] == out.submitted_batches[0] and "adopted" not in submitted
    assert (collected["event"], collected["batch_id"], collected["status"]) == ("collected",
                                                                                submitted["batch_id"], "completed")
    assert (collected["succeeded"], collected["errored"], collected["expired"], collected["canceled"],
            collected["missing"]) == (3, 0, 0, 0, 0)
    for rec in (intent, submitted, collected):
        assert rec["time"].endswith("+00:00") and "." not in rec["time"]  # UTC, whole seconds


def test_calls_over_the_providers_count_limit_go_as_several_batches(tmp_path):
    with FakeBatchServer() as server:
        api = _openai(server)
        api.max_requests = 2
        out = run_batches(_calls("ABCDE"), api, lambda c, g, s: None, tmp_path / "b.jsonl", **_poll())
        assert out.submitted_calls == 5 and len(out.submitted_batches) == 3 == len(server.created)
        assert sorted(out.collected_batches) == sorted(out.submitted_batches) and out.succeeded == 5
    intents = [r for r in _events(tmp_path / "b.jsonl") if r["event"] == "intent"]
    assert [r["keys"] for r in intents] == [["key-A", "key-B"], ["key-C", "key-D"], ["key-E"]]
    assert len({r["tag"] for r in intents}) == 3


def test_a_refused_submission_raises_and_is_abandoned_so_the_next_run_sends_it(tmp_path):
    log_path = tmp_path / "batches.jsonl"
    with FakeBatchServer() as server:
        api = _openai(server)

        def refuse(requests, *, tag):
            raise PermissionError("403 batch API not enabled for this key")

        with pytest.raises(PermissionError, match="not enabled"):
            run_batches(_calls(), _Wrapped(api, submit=refuse), lambda c, g, s: None, log_path, **_poll())
        assert [r["event"] for r in _events(log_path)] == ["intent", "abandoned"] and server.created == []
        got: dict = {}
        out = run_batches(_calls(), api, lambda c, g, s: got.__setitem__(c.key, g), log_path, **_poll())
        assert out.submitted_calls == 2 and out.succeeded == 2 and out.adopted_batches == []
        assert sorted(got) == ["key-A", "key-B"]


def test_a_submission_adopted_after_an_error_does_not_stop_the_next_chunk(tmp_path):
    log_path = tmp_path / "batches.jsonl"
    with FakeBatchServer() as server:
        api = _openai(server)
        api.max_requests = 2
        first = {"done": False}

        def accept_then_time_out(requests, *, tag):
            batch_id = api.submit(requests, tag=tag)
            if not first["done"]:
                first["done"] = True
                raise TimeoutError("read timed out")  # the provider accepted it anyway
            return batch_id

        got: dict = {}
        out = run_batches(_calls("ABCD"), _Wrapped(api, submit=accept_then_time_out),
                          lambda c, g, s: got.__setitem__(c.key, g), log_path, **_poll())
        assert out.adopted_batches == server.created[:1] and out.submitted_batches == server.created[1:]
        assert out.submitted_calls == 2 and out.succeeded == 4 and sorted(got) == ["key-A", "key-B", "key-C", "key-D"]
    adopted = [r for r in _events(log_path) if r.get("adopted")]
    assert len(adopted) == 1 and adopted[0]["keys"] == ["key-A", "key-B"] and adopted[0]["provider"] == "openai"
    assert adopted[0]["batch_id"] == server.created[0] and isinstance(adopted[0]["epoch"], float)


def test_a_lookup_that_raises_abandons_the_intent_and_sends_again(tmp_path):
    log_path = tmp_path / "batches.jsonl"
    BatchLog(log_path).append({"event": "intent", "tag": "t-lost", "provider": "openai",
                               "keys": ["key-A", "key-B"], "epoch": time.time()})
    looked: list = []

    def unreachable(tag, *, keys=(), since=None):
        looked.append((tag, list(keys), since))
        raise ConnectionError("provider unreachable")

    with FakeBatchServer() as server:
        out = run_batches(_calls(), _Wrapped(_openai(server), find=unreachable), lambda c, g, s: None, log_path,
                          **_poll())
        assert out.adopted_batches == [] and out.submitted_calls == 2 and len(server.created) == 1
    assert looked[0][:2] == ("t-lost", ["key-A", "key-B"]) and looked[0][2] is not None
    events = _events(log_path)
    assert [r["event"] for r in events] == ["intent", "abandoned", "intent", "submitted", "collected"]
    assert events[1]["tag"] == "t-lost" and events[1]["time"].endswith("+00:00")


def test_an_intent_without_keys_or_epoch_is_looked_up_with_empty_keys(tmp_path):
    log_path = tmp_path / "batches.jsonl"
    BatchLog(log_path).append({"event": "intent", "tag": "t-old"})
    looked: list = []

    def nothing(tag, *, keys=(), since=None):
        looked.append((tag, keys, since))

    with FakeBatchServer() as server:
        run_batches([], _Wrapped(_openai(server), find=nothing), lambda c, g, s: None, log_path, **_poll())
    assert looked == [("t-old", [], None)]
    assert [r["event"] for r in _events(log_path)] == ["intent", "abandoned"]


# ---- collecting --------------------------------------------------------------------------------------------------


def test_a_failed_batch_gives_each_request_its_errors(tmp_path):
    """An OpenAI batch that fails validation ends without results: each answer names the batch, its status and
    the provider's errors."""
    log_path = tmp_path / "batches.jsonl"
    with FakeBatchServer() as server:
        api = _openai(server)
        req = BatchRequest("key-A", [{"role": "user", "content": "survey A"}], GenerationSettings())
        batch_id = api.submit([req, req, req], tag="dup")  # the same custom id 3 times: the file is refused
        log = BatchLog(log_path)
        log.append({"event": "submitted", "tag": "dup", "batch_id": batch_id, "provider": "openai",
                    "keys": ["key-A", "key-Z"], "epoch": time.time() - 100.0})
        got: list = []
        out = run_batches(_calls("A"), api, lambda c, g, s: got.append((c.key, g, s)), log_path, **_poll())
    assert out.skipped_in_flight == 1 and out.submitted_calls == 0
    assert (out.missing, out.failed, out.collected_calls, out.collected_batches) == (2, 2, 1, [batch_id])
    [(key, generation, seconds)] = got  # key-Z has no call here: counted, not handed over
    assert key == "key-A" and generation.batch_id == batch_id and generation.text == ""
    assert generation.error == (f"batch {batch_id} ended failed without a result for this request; "
                                "duplicate_custom_id: custom_id 'key-A' (line 2); "
                                "duplicate_custom_id: custom_id 'key-A' (line 3)")
    assert 99.0 <= seconds < 200.0  # from the intent's epoch to the collection
    assert _events(log_path)[-1]["missing"] == 2 and _events(log_path)[-1]["status"] == "failed"


def test_a_batch_without_an_epoch_is_timed_from_now(tmp_path):
    log_path = tmp_path / "batches.jsonl"
    with FakeBatchServer() as server:
        api = _anthropic(server)
        batch_id = api.submit([BatchRequest(c.key, c.messages, c.settings) for c in _calls()], tag="x")
        BatchLog(log_path).append({"event": "submitted", "tag": "x", "batch_id": batch_id, "provider": "anthropic",
                                   "keys": ["key-A", "key-B"]})
        got: list = []
        out = run_batches(_calls(), api, lambda c, g, s: got.append(s), log_path, **_poll())
    assert out.succeeded == 2 and out.skipped_in_flight == 2 and all(0.0 <= s < 0.5 for s in got)


def test_an_adopted_intent_is_timed_from_its_epoch_and_logged_as_adopted(tmp_path):
    log_path = tmp_path / "batches.jsonl"
    epoch = time.time() - 60.0
    with FakeBatchServer() as server:
        api = _openai(server)
        BatchLog(log_path).append({"event": "intent", "tag": "t9", "provider": "openai",
                                   "keys": ["key-A", "key-B"], "epoch": epoch})
        batch_id = api.submit([BatchRequest(c.key, c.messages, c.settings) for c in _calls()], tag="t9")
        got: list = []
        out = run_batches(_calls(), api, lambda c, g, s: got.append(s), log_path, **_poll())
    assert out.adopted_batches == [batch_id] and out.succeeded == 2 and all(59.0 <= s < 120.0 for s in got)
    submitted = _events(log_path)[1]
    assert (submitted["event"], submitted["tag"], submitted["batch_id"], submitted["adopted"], submitted["epoch"]) == (
        "submitted", "t9", batch_id, True, epoch)
    assert submitted["time"].endswith("+00:00")
    assert submitted["keys"] == ["key-A", "key-B"] and submitted["provider"] == "openai"


# ---- waiting -----------------------------------------------------------------------------------------------------


def test_waiting_polls_at_poll_s_until_the_batch_ends(tmp_path):
    sleeps = _Sleeps()
    with FakeBatchServer(complete_after=0.2) as server:  # (Anthropic batches keep a float creation time)
        out = run_batches(_calls(), _anthropic(server), lambda c, g, s: None, tmp_path / "b.jsonl", poll_s=0.01,
                          sleep=sleeps)
    assert out.succeeded == 2 and out.open_batches == []
    assert len(sleeps.calls) >= 1 and set(sleeps.calls) == {0.01}


def test_max_wait_s_stops_waiting_and_leaves_the_batch_open(tmp_path):
    sleeps = _Sleeps()
    with FakeBatchServer(complete_after=1e9) as server:
        started = time.monotonic()
        out = run_batches(_calls(), _openai(server), lambda c, g, s: None, tmp_path / "b.jsonl", poll_s=0.01,
                          max_wait_s=0.3, sleep=sleeps)
        waited = time.monotonic() - started
    assert out.open_batches == out.submitted_batches and out.collected_calls == 0
    assert len(sleeps.calls) >= 3 and waited >= 0.3


def test_wait_false_makes_one_pass(tmp_path):
    sleeps = _Sleeps()
    with FakeBatchServer(complete_after=1e9) as server:
        out = run_batches(_calls(), _openai(server), lambda c, g, s: None, tmp_path / "b.jsonl", wait=False,
                          sleep=sleeps)
    assert sleeps.calls == [] and out.open_batches == out.submitted_batches and len(out.open_batches) == 1


def test_a_cancelled_batch_names_no_errors_it_does_not_have(tmp_path):
    log_path = tmp_path / "batches.jsonl"
    with FakeBatchServer(complete_after=1e9) as server:
        api = _openai(server)
        first = run_batches(_calls("A"), api, lambda c, g, s: None, log_path, wait=False, sleep=_Sleeps())
        api.cancel(first.open_batches[0])
        got: list = []
        run_batches(_calls("A"), api, lambda c, g, s: got.append(g), log_path, **_poll())
    expected = f"batch {first.open_batches[0]} ended cancelled without a result for this request"
    assert [g.error for g in got] == [expected]


def test_the_log_is_utf8_whatever_the_locale_and_a_torn_character_is_skipped(tmp_path, ascii_locale):

    path = tmp_path / "batches.jsonl"
    BatchLog(path).append({"event": "intent", "tag": "t1", "note": "café"})
    with path.open("ab") as fh:
        fh.write(b'{"event": "submitted", "tag": "t1", "note": "caf' + "é".encode()[:1])  # killed mid-é
    assert [(r["event"], r["note"]) for r in BatchLog(path).records] == [("intent", "café")]


def test_a_new_record_after_an_empty_file_or_a_one_byte_torn_line(tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.touch()
    BatchLog(empty).append({"event": "intent", "tag": "t1"})
    assert empty.read_text(encoding="utf-8") == '{"event": "intent", "tag": "t1"}\n'  # no blank first line
    torn = tmp_path / "torn.jsonl"
    torn.write_text("{", encoding="utf-8")  # killed after one byte
    BatchLog(torn).append({"event": "intent", "tag": "t2"})
    assert [r["tag"] for r in BatchLog(torn).records] == ["t2"]


def test_the_default_poll_is_30_seconds(tmp_path):
    sleeps = _Sleeps()
    with FakeBatchServer(complete_after=0.2) as server:
        run_batches(_calls(), _anthropic(server), lambda c, g, s: None, tmp_path / "b.jsonl", sleep=sleeps)
    assert sleeps.calls and set(sleeps.calls) == {30.0}

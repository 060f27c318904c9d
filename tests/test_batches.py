"""Provider batch APIs (OpenAI Batch, Anthropic Message Batches) through the official SDKs against the local
stand-in server (surveyalign.testing.batch_server): submit, poll, collect with token usage and batch ids; the batch
ids are in RUN_DIR/batches.jsonl before anything else happens, so a process killed after submitting is followed by
a run that collects without resubmitting; errored and expired requests are counted and retried in a new batch."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from surveyalign.backends import (
    AnthropicBatchAPI,
    BatchRequest,
    GenerationSettings,
    make_batch_api,
    split_requests,
)
from surveyalign.calls import BatchLog, run_batches
from surveyalign.testing import BatchCall, FakeBatchServer

REPO = Path(__file__).resolve().parents[1]



def _calls(names: str = "ABCD") -> list[BatchCall]:
    return [BatchCall(f"key-{x}", [{"role": "system", "content": "Rate the survey."},
                               {"role": "user", "content": f"survey {x} has four sections"}],
                  GenerationSettings(max_new_tokens=64, seed=3), sample=i) for i, x in enumerate(names)]


def _fail_b_once_expire_c_once(body: dict, attempt: int) -> str:
    text = json.dumps(body.get("messages"))
    if "survey B" in text and attempt == 0:
        return "error"
    if "survey C" in text and attempt == 0:
        return "expire"
    return "ok"


def _api(server: FakeBatchServer, provider: str):
    url = server.openai_url if provider == "openai" else server.anthropic_url
    return make_batch_api(provider, base_url=url, api_key="sk-test", model="judge-model")


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_submit_collect_count_failures_and_retry_them_as_a_new_batch(tmp_path, provider):
    got: dict = {}
    log_path = tmp_path / "batches.jsonl"
    with FakeBatchServer(outcome=_fail_b_once_expire_c_once) as server:
        api = _api(server, provider)
        out = run_batches(_calls(), api, lambda c, g, s: got.__setitem__(c.key, g), log_path, poll_s=0.01)
        (batch_id,) = out.submitted_batches
        assert (out.submitted_calls, out.collected_calls, out.succeeded, out.errored, out.expired) == (4, 4, 2, 1, 1)
        assert out.failed == 2 and out.open_batches == [] and server.created == [batch_id]
        a = got["key-A"]
        assert a.error is None and a.text == "The survey is fine.$$$-1$$$" and a.batch_id == batch_id
        # usage from the provider: prompt = words of the system + user messages, completion = words of the answer
        assert (a.prompt_tokens, a.completion_tokens) == (3 + 5, 4)
        assert "scripted per-request failure" in got["key-B"].error and got["key-B"].batch_id == batch_id
        assert "expired" in got["key-C"].error
        log = [json.loads(line) for line in log_path.read_text().splitlines()]
        assert [r["event"] for r in log] == ["intent", "submitted", "collected"]
        assert log[1]["batch_id"] == batch_id and sorted(log[1]["keys"]) == ["key-A", "key-B", "key-C", "key-D"]
        assert (log[2]["succeeded"], log[2]["errored"], log[2]["expired"]) == (2, 1, 1)

        failed = [c for c in _calls() if got[c.key].error]
        again = run_batches(failed, api, lambda c, g, s: got.__setitem__(c.key, g), log_path, poll_s=0.01)
        assert again.submitted_calls == 2 and again.succeeded == 2 and len(server.created) == 2
        assert all(got[k].error is None for k in ("key-B", "key-C"))
        assert got["key-B"].batch_id == again.submitted_batches[0] != batch_id
    if provider == "openai":  # the request line is what a direct call sends: seed = seed + sample, n = 1
        body = json.loads(api._line(BatchRequest("k", _calls()[2].messages, _calls()[2].settings, 2)))["body"]
        assert (body["seed"], body["n"], body["max_completion_tokens"], body["model"]) == (5, 1, 64, "judge-model")


_CHILD = """
import sys
from dataclasses import dataclass
from surveyalign.backends import GenerationSettings
from surveyalign.backends import make_batch_api
from surveyalign.calls import run_batches

@dataclass
class C:
    key: str
    messages: list
    settings: GenerationSettings
    sample: int = 0

provider, url, log = sys.argv[1:4]
calls = [C(f"key-{x}", [{"role": "user", "content": f"survey {x}"}], GenerationSettings()) for x in "ABCD"]
api = make_batch_api(provider, base_url=url, api_key="k", model="m")
run_batches(calls, api, lambda c, g, s: None, log, poll_s=0.05)  # waits: the server never ends the batch
"""


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_killed_after_submission_rerun_collects_without_resubmitting(tmp_path, provider):
    script, log_path = tmp_path / "child.py", tmp_path / "batches.jsonl"
    script.write_text(_CHILD)
    with FakeBatchServer(complete_after=1e9) as server:
        url = server.openai_url if provider == "openai" else server.anthropic_url
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        child = subprocess.Popen([sys.executable, str(script), provider, url, str(log_path)], env=env)
        try:
            deadline = time.monotonic() + 60
            while not (log_path.exists() and '"submitted"' in log_path.read_text()):
                assert child.poll() is None and time.monotonic() < deadline, "the child never submitted"
                time.sleep(0.05)
            time.sleep(0.3)  # it is polling now
        finally:
            child.send_signal(signal.SIGKILL)
            child.wait()
        assert len(server.created) == 1 and list(BatchLog(log_path).open_batches()) == server.created
        server.complete_after = 0.0  # the provider finishes the batch
        got: dict = {}
        calls = [BatchCall(f"key-{x}", [{"role": "user", "content": f"survey {x}"}], GenerationSettings()) for x in "ABCD"]
        out = run_batches(calls, _api(server, provider), lambda c, g, s: got.__setitem__(c.key, g), log_path,
                          poll_s=0.01)
        assert out.submitted_calls == 0 and out.skipped_in_flight == 4 and len(server.created) == 1
        assert out.collected_batches == server.created and out.succeeded == 4
        assert sorted(got) == ["key-A", "key-B", "key-C", "key-D"] and all(g.error is None for g in got.values())
        assert sorted(server.requests_seen) == sorted(c.key for c in calls)  # each request ran once


def test_killed_between_accept_and_log_line_adopts_the_batch_by_its_tag(tmp_path):
    log_path = tmp_path / "batches.jsonl"
    calls = _calls("AB")
    with FakeBatchServer() as server:
        api = _api(server, "openai")
        log = BatchLog(log_path)
        log.append({"event": "intent", "tag": "t1", "provider": "openai", "keys": [c.key for c in calls]})
        batch_id = api.submit([BatchRequest(c.key, c.messages, c.settings) for c in calls], tag="t1")  # then killed
        got: dict = {}
        out = run_batches(calls, api, lambda c, g, s: got.__setitem__(c.key, g), log_path, poll_s=0.01)
        assert out.adopted_batches == [batch_id] and out.submitted_calls == 0 and server.created == [batch_id]
        assert out.succeeded == 2 and got["key-A"].batch_id == batch_id


def test_wait_false_returns_open_batches_and_cancel_counts_missing(tmp_path):
    log_path = tmp_path / "batches.jsonl"
    with FakeBatchServer(complete_after=1e9) as server:
        api = _api(server, "openai")
        out = run_batches(_calls("AB"), api, lambda c, g, s: None, log_path, wait=False)
        assert out.open_batches == out.submitted_batches and out.collected_calls == 0
        status = api.cancel(out.open_batches[0])
        assert status.status in ("cancelling", "cancelled")
        got: dict = {}
        again = run_batches(_calls("AB"), api, lambda c, g, s: got.__setitem__(c.key, g), log_path, poll_s=0.01)
        assert again.submitted_calls == 0 and again.missing == 2 and again.failed == 2
        assert "ended cancelled without a result" in got["key-A"].error
        # an Anthropic batch cancelled in flight: every request comes back "canceled"
        aapi = _api(server, "anthropic")
        first = run_batches(_calls("CD"), aapi, lambda c, g, s: None, tmp_path / "a.jsonl", wait=False)
        assert aapi.cancel(first.open_batches[0]).status in ("canceling", "ended")
        done = run_batches(_calls("CD"), aapi, lambda c, g, s: None, tmp_path / "a.jsonl", poll_s=0.01)
        assert done.canceled == 2 and done.submitted_calls == 0


def test_one_log_shared_by_two_backends_each_collects_only_its_own_batches(tmp_path):
    """Two batch backends of one run (one per dimension, here two providers) share RUN_DIR/batches.jsonl: each
    run_batches looks up, collects and waits for the batches holding its own calls only; another backend's batch
    is neither asked of the wrong provider nor collected without its calls (its answers would be dropped)."""
    log_path = tmp_path / "batches.jsonl"
    with FakeBatchServer(complete_after=1e9) as server:
        oapi, aapi = _api(server, "openai"), _api(server, "anthropic")
        first_o = run_batches(_calls("AB"), oapi, lambda c, g, s: None, log_path, wait=False)
        first_a = run_batches(_calls("CD"), aapi, lambda c, g, s: None, log_path, wait=False)
        assert len(first_o.open_batches) == 1 and first_a.open_batches == first_a.submitted_batches  # its own only
        server.complete_after = 0.0
        got: dict = {}
        out_o = run_batches(_calls("AB"), oapi, lambda c, g, s: got.__setitem__(c.key, g), log_path, poll_s=0.01)
        assert out_o.collected_batches == first_o.submitted_batches and out_o.open_batches == []
        assert sorted(got) == ["key-A", "key-B"]
        assert list(BatchLog(log_path).open_batches()) == first_a.submitted_batches  # left for its own backend
        out_a = run_batches(_calls("CD"), aapi, lambda c, g, s: got.__setitem__(c.key, g), log_path, poll_s=0.01)
        assert out_a.submitted_calls == 0 and out_a.succeeded == 2 and sorted(got) == [f"key-{x}" for x in "ABCD"]
        assert len(server.created) == 2 and BatchLog(log_path).open_batches() == {}


def test_expiry_of_a_whole_batch_and_provider_limits(tmp_path):
    with FakeBatchServer(complete_after=1e9) as server:
        api = _api(server, "anthropic")
        first = run_batches(_calls("AB"), api, lambda c, g, s: None, tmp_path / "b.jsonl", wait=False)
        server.expire_all()  # the 24 h window passes
        got: dict = {}
        out = run_batches(_calls("AB"), api, lambda c, g, s: got.__setitem__(c.key, g), tmp_path / "b.jsonl",
                          poll_s=0.01)
        assert first.open_batches and out.expired == 2 and "expired" in got["key-A"].error
    assert isinstance(api, AnthropicBatchAPI)
    params = api.params(BatchRequest("k", _calls()[0].messages, GenerationSettings(top_p=0.9)))
    assert params["system"] == "Rate the survey." and [m["role"] for m in params["messages"]] == ["user"]
    assert params["top_p"] == 0.9 and params["max_tokens"] == 512
    api.max_requests = 3  # the provider's count limit, made small
    chunks = split_requests([BatchRequest(f"k{i}", [{"role": "user", "content": "x"}], GenerationSettings())
                             for i in range(7)], api)
    assert [len(c) for c in chunks] == [3, 3, 1]
    api.max_bytes = 10
    with pytest.raises(ValueError, match="over the anthropic batch limit"):
        split_requests([BatchRequest("k", [{"role": "user", "content": "x"}], GenerationSettings())], api)


class _Killed(BaseException):
    """A kill right after the provider accepted the batch (not an Exception: nothing in the submitter handles it)."""


class _CrashAfterCreate:
    """An Anthropic batch client whose submit raises right after the provider created the batch."""

    def __init__(self, api, error: BaseException) -> None:
        self.api, self.error = api, error
        self.name, self.max_requests, self.max_bytes = api.name, api.max_requests, api.max_bytes

    def submit(self, requests, *, tag):
        self.api.submit(requests, tag=tag)  # accepted by the provider ...
        raise self.error  # ... and the process dies before the id is written

    def __getattr__(self, name):
        return getattr(self.api, name)


@pytest.mark.parametrize("complete_after", [1e9, 0.0])
def test_anthropic_killed_between_accept_and_id_write_adopts_the_batch(tmp_path, complete_after):
    """Message Batches have no metadata: the batch of an intent without its submitted line is found through the
    list endpoint (created after the intent, same request count; an ended one by its custom ids) and collected;
    nothing is sent twice. Running (1e9) and ended (0.0) batches."""
    log_path = tmp_path / "batches.jsonl"
    calls = _calls("ABC")
    with FakeBatchServer(complete_after=complete_after) as server:
        api = _api(server, "anthropic")
        other = api.submit([BatchRequest(c.key, c.messages, c.settings) for c in _calls("XY")], tag="someone")
        with pytest.raises(_Killed):
            run_batches(calls, _CrashAfterCreate(api, _Killed()), lambda c, g, s: None, log_path, poll_s=0.01)
        assert [r["event"] for r in BatchLog(log_path).records] == ["intent"]  # the id was never written
        assert len(server.created) == 2
        mine = server.created[1]
        server.complete_after = 0.0
        got: dict = {}
        out = run_batches(calls, api, lambda c, g, s: got.__setitem__(c.key, g), log_path, poll_s=0.01)
        assert out.adopted_batches == [mine] and out.submitted_calls == 0 and server.created == [other, mine]
        assert out.succeeded == 3 and sorted(got) == ["key-A", "key-B", "key-C"]
        assert {g.batch_id for g in got.values()} == {mine}
        assert sorted(server.requests_seen).count("key-A") == 1  # each of our requests ran once


def test_anthropic_submit_error_after_accept_is_looked_up_before_giving_up(tmp_path):
    """A submission that raises after the provider accepted it (e.g. a timeout on the answer) is adopted at once,
    in the same run, instead of being marked abandoned and sent again by the next run."""
    log_path = tmp_path / "batches.jsonl"
    calls = _calls("AB")
    with FakeBatchServer() as server:
        api = _api(server, "anthropic")
        got: dict = {}
        out = run_batches(calls, _CrashAfterCreate(api, TimeoutError("read timed out")),
                          lambda c, g, s: got.__setitem__(c.key, g), log_path, poll_s=0.01)
        assert len(server.created) == 1 and out.adopted_batches == server.created and out.succeeded == 2
        events = [r["event"] for r in BatchLog(log_path).records]
        assert events == ["intent", "submitted", "collected"]


def test_anthropic_find_refuses_two_running_lookalikes(tmp_path):
    """Two running batches of the same size created after the intent cannot be told apart: find returns None
    (the calls are sent again rather than adopt someone else's batch)."""
    with FakeBatchServer(complete_after=1e9) as server:
        api = _api(server, "anthropic")
        since = time.time()
        for name in ("AB", "XY"):
            api.submit([BatchRequest(c.key, c.messages, c.settings) for c in _calls(name)], tag=name)
        assert api.find("t", keys=["key-A", "key-B"], since=since) is None
        assert api.find("t", keys=["key-A", "key-B", "key-C"], since=since) is None  # no batch of 3
        assert api.find("t", keys=["key-A", "key-B"], since=None) is None
        server.complete_after = 0.0  # once ended, the custom ids tell them apart
        assert api.find("t", keys=["key-A", "key-B"], since=since) == server.created[0]

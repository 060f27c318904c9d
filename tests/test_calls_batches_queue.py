"""OpenAI's batch queue limit (``max_enqueued_tokens``) in run_batches / split_requests, against the local batch
stand-in through the official openai SDK: batches cut to the limit, a batch sent only while the running ones plus
it fit (the rest after the first ones end, or by the next run after a kill, never twice), a single request over
the limit refused, and a batch the provider fails at validation with ``token_limit_exceeded`` counted and retried.

Token estimates are 4 characters per token + 4 per message (``chars_per_token_count``): a prompt of ``w`` words
``"abc "`` is 4w characters = w + 4 tokens, and the stand-in counts it as w tokens (words)."""

from __future__ import annotations

import json
import time

import pytest

from surveyalign.backends import (
    BatchRequest,
    GenerationSettings,
    make_batch_api,
    split_requests,
)
from surveyalign.calls import run_batches
from surveyalign.testing import BatchCall, FakeBatchServer

#: key -> words of its prompt; estimated tokens = words + 4: A 10, B 10, C 30, D 5, E 5, F 20.
WORDS = {"A": 6, "B": 6, "C": 26, "D": 1, "E": 1, "F": 16}


def _calls(names: str = "ABCDEF") -> list[BatchCall]:
    return [BatchCall(f"key-{x}", [{"role": "user", "content": "abc " * WORDS[x]}], GenerationSettings(seed=1))
            for x in names]


def _openai(server):
    return make_batch_api("openai", base_url=server.openai_url, api_key="sk-test", model="judge-model")


def _events(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


class _Sleeps:
    """run_batches' ``sleep``: a short real wait; ``kill_after`` polls raises KeyboardInterrupt (a killed run)."""

    def __init__(self, kill_after: int | None = None, limit: int = 200) -> None:
        self.calls = 0
        self.kill_after, self.limit = kill_after, limit

    def __call__(self, seconds: float) -> None:
        self.calls += 1
        if self.kill_after is not None and self.calls > self.kill_after:
            raise KeyboardInterrupt
        if self.calls > self.limit:
            raise AssertionError("run_batches kept waiting")
        time.sleep(0.005)


def test_split_requests_cuts_by_estimated_tokens_in_order():
    with FakeBatchServer() as server:
        api = _openai(server)
        reqs = [BatchRequest(c.key, c.messages, c.settings) for c in _calls()]
        tokens = {r.custom_id: int(r.messages[0]["content"].count("abc")) + 4 for r in reqs}

        def cut(limit):
            return [[r.custom_id[-1] for r in chunk]
                    for chunk in split_requests(reqs, api, max_tokens=limit, tokens_of=lambda r: tokens[r.custom_id])]

        # 10+10 | 30 | 5+5+20 = 30 (exactly the limit stays in one batch)
        assert cut(30) == [["A", "B"], ["C"], ["D", "E", "F"]]
        assert cut(40) == [["A", "B"], ["C", "D", "E"], ["F"]]  # 20 | 30+5+5 = 40 | 20
        assert cut(79) == [["A", "B", "C", "D", "E"], ["F"]]  # 10+10+30+5+5 = 60 | 20 (60 + 20 > 79)
        assert cut(80) == [["A", "B", "C", "D", "E", "F"]]  # 80 fits exactly
        assert cut(None) == [["A", "B", "C", "D", "E", "F"]]
        with pytest.raises(ValueError, match=r"^request key-C holds about 30 prompt tokens, over the batch queue "
                                             r"limit max_enqueued_tokens=29: raise the limit"):
            cut(29)
        with pytest.raises(ValueError, match="max_tokens needs tokens_of"):
            split_requests(reqs, api, max_tokens=30)


def test_batches_are_cut_to_the_limit_and_the_held_back_ones_go_out_as_the_first_ones_end(tmp_path):
    """Limit 30: batches [A B] (20 tokens), [C] (30), [D E F] (30). Only one fits at a time (20 + 30 > 30), so
    [C] is sent after [A B] is collected and [D E F] after [C]; the stand-in enforces its own queue limit of 26
    words (batches of 12, 26, 18 words), so sending two at once would fail there."""
    answers = {}
    with FakeBatchServer(enqueued_token_limit=26) as server:
        outcome = run_batches(_calls(), _openai(server), lambda c, g, s: answers.setdefault(c.key, g),
                              tmp_path / "batches.jsonl", poll_s=0.01, sleep=_Sleeps(), max_enqueued_tokens=30)
        created = list(server.created)
        assert all(server._batches[b]["status"] == "completed" for b in created)
    events = _events(tmp_path / "batches.jsonl")
    submitted = [e for e in events if e["event"] == "submitted"]
    assert [[k[-1] for k in e["keys"]] for e in submitted] == [["A", "B"], ["C"], ["D", "E", "F"]]
    assert [e["tokens"] for e in submitted] == [20, 30, 30]
    assert [e["tokens"] for e in events if e["event"] == "intent"] == [20, 30, 30]
    assert [e["batch_id"] for e in submitted] == created
    # each batch is sent only after the one before it was collected
    order = [(e["event"], e.get("batch_id")) for e in events if e["event"] in ("submitted", "collected")]
    assert order == [("submitted", created[0]), ("collected", created[0]), ("submitted", created[1]),
                     ("collected", created[1]), ("submitted", created[2]), ("collected", created[2])]
    assert outcome.submitted_calls == 6 and outcome.succeeded == 6 and outcome.failed == 0
    assert outcome.held_back_calls == 0 and outcome.open_batches == []
    assert sorted(answers) == [f"key-{x}" for x in "ABCDEF"] and all(not g.error for g in answers.values())
    assert sorted(server.requests_seen) == sorted(answers)  # each request ran once


def test_two_batches_that_fit_together_go_out_together(tmp_path):
    """Limit 40: [A B] 20 | [C D E] 40 | [F] 20; at once: 20 (next 40 does not fit); after [A B]: 40; after
    [C D E]: 20. With wait=False and batches that stay running, one run sends only [A B] and holds 4 back."""
    with FakeBatchServer(complete_after=3600) as server:
        api = _openai(server)
        outcome = run_batches(_calls(), api, lambda *a: None, tmp_path / "b.jsonl", wait=False,
                              max_enqueued_tokens=40)
        assert outcome.submitted_calls == 2 and outcome.held_back_calls == 4 and len(outcome.open_batches) == 1
        assert len(server.created) == 1
        # limit 60 in a second run folder: [A B C D E] = 60 | [F] 20
        outcome = run_batches(_calls(), api, lambda *a: None, tmp_path / "c.jsonl", wait=False,
                              max_enqueued_tokens=60)
        assert outcome.submitted_calls == 5 and outcome.held_back_calls == 1  # [F] waits: 60 + 20 > 60


def test_a_rerun_after_a_kill_sends_nothing_twice(tmp_path):
    """Limit 30, batches that take a while: the first run sends [A B] and is killed while polling (C, D, E, F
    held back in memory, never logged). The re-run skips A and B (in flight), waits for their batch, then sends
    [C], then [D E F]: every request reaches the provider exactly once, in 3 batches."""
    answers = {}
    log = tmp_path / "batches.jsonl"
    with FakeBatchServer(complete_after=3600, enqueued_token_limit=26) as server:
        api = _openai(server)
        with pytest.raises(KeyboardInterrupt):
            run_batches(_calls(), api, lambda c, g, s: answers.setdefault(c.key, g), log, poll_s=0.01,
                        sleep=_Sleeps(kill_after=2), max_enqueued_tokens=30)
        assert len(server.created) == 1 and [e["event"] for e in _events(log)] == ["intent", "submitted"]
        server.complete_after = 0.0
        outcome = run_batches(_calls(), api, lambda c, g, s: answers.setdefault(c.key, g), log, poll_s=0.01,
                              sleep=_Sleeps(), max_enqueued_tokens=30)
        assert len(server.created) == 3
    assert outcome.skipped_in_flight == 2 and outcome.submitted_calls == 4 and outcome.collected_calls == 6
    assert sorted(server.requests_seen) == [f"key-{x}" for x in "ABCDEF"]  # no request twice
    submitted = [e for e in _events(log) if e["event"] == "submitted"]
    assert [[k[-1] for k in e["keys"]] for e in submitted] == [["A", "B"], ["C"], ["D", "E", "F"]]
    assert len(answers) == 6 and all(not g.error for g in answers.values())


def test_a_single_request_over_the_limit_is_refused_before_anything_is_sent(tmp_path):
    with FakeBatchServer() as server:
        with pytest.raises(ValueError) as err:
            run_batches(_calls("ABC"), _openai(server), lambda *a: None, tmp_path / "b.jsonl",
                        max_enqueued_tokens=25, poll_s=0.01, sleep=_Sleeps())
        assert server.created == []
    assert str(err.value) == ("request key-C holds about 30 prompt tokens, over the batch queue limit "
                              "max_enqueued_tokens=25: raise the limit or shorten the prompt")
    assert "\n" not in str(err.value)
    assert not (tmp_path / "b.jsonl").exists()  # nothing logged: the next run sends everything


def test_a_batch_failed_with_token_limit_exceeded_is_counted_and_retried_as_a_new_batch(tmp_path):
    """No client limit; the provider's queue limit is 10 words and [A B] holds 12: the batch fails at validation
    (status failed, errors.data[0].code token_limit_exceeded). Both requests are counted as failed answers
    carrying that code; once the limit is raised, the same call (the caller's retry of failed answers) sends them
    again as a new batch, which succeeds."""
    answers: dict = {}
    log = tmp_path / "batches.jsonl"
    with FakeBatchServer(enqueued_token_limit=10) as server:
        api = _openai(server)
        first = run_batches(_calls("AB"), api, lambda c, g, s: answers.__setitem__(c.key, g), log, poll_s=0.01,
                            sleep=_Sleeps())
        failed = server._batches[server.created[0]]
        assert failed["status"] == "failed" and failed["errors"]["data"][0]["code"] == "token_limit_exceeded"
        assert api.client.batches.retrieve(server.created[0]).errors.data[0].code == "token_limit_exceeded"
        assert first.missing == 2 and first.failed == 2 and first.succeeded == 0 and first.collected_calls == 2
        assert all(g.error.startswith(f"batch {server.created[0]} ended failed without a result for this "
                                      "request; token_limit_exceeded: Enqueued token limit reached for judge-model")
                   for g in answers.values())
        assert server.requests_seen == []  # nothing ran
        server.enqueued_token_limit = 12
        second = run_batches(_calls("AB"), api, lambda c, g, s: answers.__setitem__(c.key, g), log, poll_s=0.01,
                             sleep=_Sleeps())
        assert len(server.created) == 2 and second.skipped_in_flight == 0 and second.submitted_calls == 2
        assert second.succeeded == 2 and second.failed == 0
    assert sorted(server.requests_seen) == ["key-A", "key-B"]
    assert all(g.error is None and g.batch_id == server.created[1] for g in answers.values())
    collected = [e for e in _events(log) if e["event"] == "collected"]
    assert [(e["status"], e["missing"], e["succeeded"]) for e in collected] == [("failed", 2, 0), ("completed", 0, 2)]


class _AcceptThenFail:
    """A provider client whose submit is accepted by the provider and then raises (a timeout on the answer)."""

    def __init__(self, api) -> None:
        self.api = api
        self.name, self.max_requests, self.max_bytes = api.name, api.max_requests, api.max_bytes

    def submit(self, requests, *, tag):
        self.api.submit(requests, tag=tag)
        raise TimeoutError("the answer never came")

    def __getattr__(self, name):
        return getattr(self.api, name)


def test_the_room_left_comes_from_each_open_batchs_tokens_else_its_known_keys(tmp_path):
    """Limit 25; a batch already running holds D (5 tokens) and a call this run does not know (X: 0). New calls
    A and B (10 + 10 = 20) fit exactly in the 25 - 5 = 20 left, unless the batch's own record says more (6: then
    19 are left and they wait). A record from an older run has no ``tokens``: its known keys count; an adopted
    batch keeps its intent's estimate."""
    with FakeBatchServer(complete_after=3600) as server:
        api = _openai(server)
        d_only = [BatchRequest(c.key, c.messages, c.settings) for c in _calls("D")]
        running = api.submit(d_only, tag="t-old")
        keys = ["key-D", "key-X"]

        def run(name, records, names="ABD"):
            log = tmp_path / name
            log.write_text("".join(json.dumps(r) + "\n" for r in records))
            return run_batches(_calls(names), api, lambda *a: None, log, wait=False, max_enqueued_tokens=25)

        old = run("old.jsonl", [{"event": "submitted", "tag": "t-old", "batch_id": running, "keys": keys}])
        assert old.skipped_in_flight == 1 and old.submitted_calls == 2 and old.held_back_calls == 0
        # D + E + X = 5 + 5 + 0: 15 left, [A B] waits
        older = run("older.jsonl", [{"event": "submitted", "tag": "t-old", "batch_id": running,
                                     "keys": ["key-D", "key-E", "key-X"]}], names="ABDE")
        assert older.skipped_in_flight == 2 and older.submitted_calls == 0 and older.held_back_calls == 2
        # two open batches of 3 tokens each: 6 in all, 19 left
        other = api.submit(d_only, tag="t-other")
        two = run("two.jsonl", [{"event": "submitted", "tag": "t-old", "batch_id": running, "keys": keys, "tokens": 3},
                                {"event": "submitted", "tag": "t-other", "batch_id": other, "keys": keys, "tokens": 3}])
        assert two.submitted_calls == 0 and two.held_back_calls == 2
        said = run("said.jsonl", [{"event": "submitted", "tag": "t-old", "batch_id": running, "keys": keys,
                                   "tokens": 6}])
        assert said.submitted_calls == 0 and said.held_back_calls == 2
        api.submit(d_only, tag="t-intent")  # accepted; the run was killed before writing "submitted"
        adopted = run("adopt.jsonl", [{"event": "intent", "tag": "t-intent", "keys": keys, "tokens": 6}])
        assert len(adopted.adopted_batches) == 1 and adopted.submitted_calls == 0 and adopted.held_back_calls == 2
        assert [r.get("tokens") for r in _events(tmp_path / "adopt.jsonl") if r["event"] == "submitted"] == [6]
        assert len(server.created) == 4  # the run of "old.jsonl" sent [A B]; the others sent nothing


def test_a_batch_adopted_after_a_failed_submit_keeps_its_estimate(tmp_path):
    with FakeBatchServer(complete_after=3600) as server:
        log = tmp_path / "batches.jsonl"
        outcome = run_batches(_calls("AB"), _AcceptThenFail(_openai(server)), lambda *a: None, log, wait=False,
                              max_enqueued_tokens=25)
        assert len(server.created) == 1 and outcome.adopted_batches == server.created
    events = _events(log)
    assert [(e["event"], e.get("tokens")) for e in events] == [("intent", 20), ("submitted", 20)]
    assert events[1]["adopted"] is True

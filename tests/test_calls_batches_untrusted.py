"""Provider batch files and the batch log read as untrusted (surveyalign/calls/batches.py,
surveyalign/backends/batch_api.py), against the local batch stand-in through the official SDKs: a malformed result
line is its request's error and every other line is collected (lines lost: 0), a custom id answered twice keeps its
first answer, a batch id the provider answers 404 for and a ``submitted`` record without keys are one problem line
each and left behind (no traceback, not on a re-run either), and an open batch whose calls all have kept answers no
longer holds the batch queue (``max_enqueued_tokens``)."""

from __future__ import annotations

import json
import re
import time

import pytest

from surveyalign.backends import GenerationSettings, make_batch_api
from surveyalign.calls import BatchLog, run_batches
from surveyalign.testing import BatchCall, FakeBatchServer


def _calls(names: str = "ABCD") -> list[BatchCall]:
    return [BatchCall(f"key-{x}", [{"role": "user", "content": f"survey {x}"}], GenerationSettings(seed=1))
            for x in names]


def _api(server, provider: str):
    url = server.openai_url if provider == "openai" else server.anthropic_url
    return make_batch_api(provider, base_url=url, api_key="sk-test", model="judge-model")


def _fast(limit: int = 50):
    seen = []

    def sleep(seconds: float) -> None:
        seen.append(seconds)
        if len(seen) > limit:
            raise AssertionError("run_batches kept waiting")
        time.sleep(0.005)

    return {"poll_s": 0.01, "sleep": sleep}


def _tamper(lines: list[str]) -> list[str]:
    """Output lines of calls A, B, C, D (in that order) -> A, A again with another answer, B cut short (broken JSON,
    its custom id still readable), C, a line with no readable custom id in place of D."""
    by = {re.search(r'"custom_id": "key-(\w)"', x).group(1): x for x in lines}
    dup = by["A"].replace("The survey is fine.", "A second, planted answer.")
    return [by["A"], dup, by["B"][:-1], by["C"], "{{{ not json"]


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_malformed_or_duplicated_line_is_counted_and_every_other_answer_collected(tmp_path, provider):
    got: dict = {}
    with FakeBatchServer(tamper=_tamper) as server:
        api = _api(server, provider)
        out = run_batches(_calls(), api, lambda c, g, s: got.__setitem__(c.key, g), tmp_path / "batches.jsonl",
                          **_fast())
        assert (out.succeeded, out.errored, out.missing) == (2, 1, 1)
        assert (out.malformed_lines, out.duplicate_lines, out.collected_calls) == (2, 1, 4)
        assert got["key-A"].text == "The survey is fine.$$$-1$$$" and got["key-C"].error is None  # first kept
        assert "malformed" in got["key-B"].error and "line 3" in got["key-B"].error
        assert "without a result" in got["key-D"].error
        assert len(out.problems) == 3 and sum("answered more than once" in p for p in out.problems) == 1
        assert sum("counts as missing" in p for p in out.problems) == 1
        # the re-run sends only the two failed calls again (the stand-in now writes clean files) and raises nothing
        server.tamper = None
        again = run_batches(_calls("BD"), api, lambda c, g, s: got.__setitem__(c.key, g), tmp_path / "batches.jsonl",
                            **_fast())
        assert (again.submitted_calls, again.succeeded, again.problems) == (2, 2, [])
        assert len(server.created) == 2 and all(got[k].error is None for k in got)


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_batch_the_provider_does_not_know_is_left_behind_in_one_line(tmp_path, provider):
    log_path = tmp_path / "batches.jsonl"
    log_path.write_text(json.dumps({"event": "submitted", "tag": "t0", "batch_id": "batch_gone", "provider": provider,
                                    "keys": ["key-A", "key-B"], "epoch": time.time(), "tokens": 4}) + "\n",
                        encoding="utf-8")
    got: dict = {}
    with FakeBatchServer() as server:
        api = _api(server, provider)
        out = run_batches(_calls("AB"), api, lambda c, g, s: got.__setitem__(c.key, g), log_path, **_fast())
        assert out.left_batches == ["batch_gone"] and out.missing == 2 and out.failed == 2
        assert len(out.problems) == 1 and "batch_gone is unknown" in out.problems[0]
        assert "HTTP 404" in got["key-A"].error and server.created == []
        assert [json.loads(x)["event"] for x in log_path.read_text().splitlines()] == ["submitted", "left"]
        assert BatchLog(log_path).open_batches() == {}
        # the re-run (the usual retry of the failed answers) never polls the unknown batch again
        again = run_batches(_calls("AB"), api, lambda c, g, s: got.__setitem__(c.key, g), log_path, **_fast())
        assert (again.submitted_calls, again.succeeded, again.left_batches, again.problems) == (2, 2, [], [])


def test_a_submitted_record_without_keys_is_reported_and_left_behind(tmp_path):
    log_path = tmp_path / "batches.jsonl"
    log_path.write_text(json.dumps({"event": "intent", "tag": "t1", "keys": ["key-A"], "epoch": 1.0}) + "\n"
                        + json.dumps({"event": "submitted", "tag": "t1", "batch_id": "batch_old"}) + "\n",
                        encoding="utf-8")
    log = BatchLog(log_path)
    assert log.open_batches() == {} and log.dangling_intents() == []
    assert log.problems == [(f"{log_path} line 2: a submitted record (batch 'batch_old') without keys: left behind, "
                             "never polled")]
    got: dict = {}
    with FakeBatchServer() as server:
        out = run_batches(_calls("A"), _api(server, "openai"), lambda c, g, s: got.__setitem__(c.key, g), log_path,
                          **_fast())
    assert out.problems == log.problems and (out.submitted_calls, out.succeeded) == (1, 1)
    assert got["key-A"].error is None


def test_an_open_batch_whose_calls_are_all_kept_no_longer_holds_the_queue(tmp_path):
    log_path = tmp_path / "batches.jsonl"
    # "survey A" = 2 words = 8 characters: 2 + 4 = 6 estimated tokens; call C the same
    with FakeBatchServer(complete_after=3600) as server:
        api = _api(server, "openai")
        first = run_batches(_calls("A"), api, lambda c, g, s: None, log_path, wait=False)
        assert first.open_batches == server.created and len(server.created) == 1
        # its answer came another way (kept in the cache); the queue holds 10 tokens: C (6) does not fit beside A (6)
        held = run_batches(_calls("C"), api, lambda c, g, s: None, log_path, wait=False, max_enqueued_tokens=10)
        assert (held.submitted_calls, held.held_back_calls) == (0, 1)
        freed = run_batches(_calls("C"), api, lambda c, g, s: None, log_path, wait=False, max_enqueued_tokens=10,
                            settled=lambda key: key == "key-A")
        assert freed.settled_batches == server.created[:1] and (freed.submitted_calls, freed.held_back_calls) == (1, 0)
        assert len(server.created) == 2
    assert list(BatchLog(log_path).open_batches()) == [server.created[1]]
    assert json.loads(log_path.read_text().splitlines()[-3])["status"] == "settled"

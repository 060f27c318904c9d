"""The provider batch clients one method at a time (issue 27's mutation check of backends/batch_api.py), through
the official SDKs against the local stand-in (surveyalign.testing.batch_server): request bodies and their byte
sizes, the limits at their boundaries, status flags and batch-level errors, every result field and error text,
the Anthropic lookup's clock slack, and the provider choice. Token counts are the stand-in's words (counted by
hand below)."""

from __future__ import annotations

import json
import time

import pytest

from surveyalign.backends import (
    AnthropicBatchAPI,
    BatchRequest,
    GenerationSettings,
    make_batch_api,
    split_requests,
)
from surveyalign.backends.batch_api import OpenAIBatchAPI
from surveyalign.testing import FakeBatchServer

SYSTEM = {"role": "system", "content": "Rate the survey."}  # 3 words


def _req(cid: str, text: str = "survey one", sample: int = 0, **settings) -> BatchRequest:
    return BatchRequest(cid, [SYSTEM, {"role": "user", "content": text}],
                        GenerationSettings(max_new_tokens=64, seed=3, **settings), sample)


def test_openai_body_line_and_size():
    api = OpenAIBatchAPI(base_url="http://127.0.0.1:9/v1", api_key=None, model="m1", max_tokens_field="max_tokens")
    line = api._line(_req("k1", sample=2, temperature=0.5, top_p=0.8))
    assert line.endswith("\n")
    rec = json.loads(line)
    assert (rec["custom_id"], rec["method"], rec["url"]) == ("k1", "POST", "/v1/chat/completions")
    assert rec["body"] == {"model": "m1", "messages": [SYSTEM, {"role": "user", "content": "survey one"}],
                           "temperature": 0.5, "top_p": 0.8, "max_tokens": 64, "seed": 5, "n": 1}
    # a custom body keeps n = 1 whatever it says
    custom = OpenAIBatchAPI(base_url="http://127.0.0.1:9/v1", api_key="k", model="m1",
                            body=lambda m, s, k: {"model": "x", "n": 4, "k": k})
    assert json.loads(custom._line(_req("k2", sample=7)))["body"] == {"model": "x", "n": 1, "k": 7}
    default = OpenAIBatchAPI(base_url="http://127.0.0.1:9/v1", api_key="k", model="m1")  # OpenAI's current name
    assert json.loads(default._line(_req("k3")))["body"]["max_completion_tokens"] == 64
    assert default.client.timeout == 120.0 and default.client.max_retries == 4
    # UTF-8 bytes, not escaped: "é" is 2 bytes, "e" 1 (escaped it would be 6)
    assert api.request_size(_req("k1", "café")) - api.request_size(_req("k1", "cafe")) == 1
    assert api.request_size(_req("k1")) == len(line.replace('"temperature": 0.5', '"temperature": 0.0')
                                               .replace('"top_p": 0.8', '"top_p": 1.0')
                                               .replace('"seed": 5', '"seed": 3').encode())


def test_split_requests_boundaries():
    api = OpenAIBatchAPI(base_url="http://127.0.0.1:9/v1", api_key="k", model="m")
    reqs = [_req(f"k{i}") for i in range(5)]
    n = api.request_size(reqs[0])  # same size for all five (ids of one length)
    api.max_bytes = 2 * n  # exactly two fit
    assert [[r.custom_id for r in c] for c in split_requests(reqs, api)] == [["k0", "k1"], ["k2", "k3"], ["k4"]]
    api.max_bytes = n  # exactly one fits: allowed, one per batch
    assert [len(c) for c in split_requests(reqs, api)] == [1, 1, 1, 1, 1]
    api.max_bytes, api.max_requests = 10 * n, 2
    assert [len(c) for c in split_requests(reqs, api)] == [2, 2, 1]
    api.max_requests = 5
    assert [len(c) for c in split_requests(reqs, api)] == [5]
    assert split_requests([], api) == []
    api.max_bytes = n - 1
    with pytest.raises(ValueError, match=f"request k0 is {n} bytes, over the openai batch limit of {n - 1} bytes"):
        split_requests(reqs, api)


def test_openai_submit_find_status_results_cancel():
    def outcome(body, attempt):
        text = json.dumps(body["messages"])
        return "error" if "two" in text else "expire" if "three" in text else "ok"

    with FakeBatchServer(outcome=outcome, reply=lambda body: "Fine, four words here.") as server:
        api = make_batch_api("openai", base_url=server.openai_url, api_key="k", model="judge-model")
        reqs = [_req("a", "survey one"), _req("c", "survey three"), _req("b", "survey two")]  # expired line first
        api.max_requests = 2
        with pytest.raises(ValueError, match=r"3 requests / \d+ bytes exceed one OpenAI batch \(2 / "):
            api.submit(reqs, tag="t0")
        api.max_requests = 3
        api.max_bytes = sum(api.request_size(r) for r in reqs)  # exactly the file's size: accepted
        bid = api.submit(reqs, tag="t1")
        api.max_bytes = api.max_bytes - 1
        with pytest.raises(ValueError, match="exceed one OpenAI batch"):
            api.submit(reqs, tag="t2")
        assert server.created == [bid]
        assert api.find("t1") == bid and api.find("t9") is None
        st = api.status(bid)  # first read: validating -> in_progress -> finished (complete_after 0)
        assert (st.batch_id, st.status, st.ended, st.errors) == (bid, "expired", True, [])
        assert (st.counts["total"], st.counts["completed"], st.counts["failed"]) == (3, 1, 2)
        results = api.results(bid)
        assert [r.custom_id for r in results] == ["a", "c", "b"]  # output file, then the error file in its order
        res = {r.custom_id: r for r in results}
        a = res["a"]
        assert a.outcome == "succeeded" and a.generation.text == "Fine, four words here."
        assert (a.generation.finish_reason, a.generation.error, a.generation.batch_id) == ("stop", None, bid)
        # prompt = "Rate the survey." (3) + "survey one" (2); completion 4 words; cached 0
        assert (a.generation.prompt_tokens, a.generation.completion_tokens, a.generation.cached_tokens) == (5, 4, 0)
        assert res["b"].outcome == "errored"
        assert res["b"].generation.error == f"batch {bid}: HTTP 400: scripted per-request failure"
        assert res["b"].generation.batch_id == bid and res["b"].generation.text == ""
        assert res["c"].outcome == "expired" and res["c"].generation.batch_id == bid
        assert res["c"].generation.error == (f"batch {bid}: request expired before the 24h window ended (This "
                                             "request could not be executed before the completion window expired.)")
        # a completed batch, then one cancelled while running
        ok = api.submit([_req("d")], tag="t3")
        assert api.status(ok).status == "completed" and api.status(ok).ended
        server.complete_after = 1e9
        run = api.submit([_req("e")], tag="t4")
        st = api.status(run)
        assert (st.status, st.ended) == ("in_progress", False)
        st = api.cancel(run)
        assert (st.status, st.ended) == ("cancelled", True)
        assert api.results(run) == []  # never ran: no output or error file


def test_openai_error_lines_in_other_shapes():
    """Error-file lines the stand-in does not write itself (a body that is not an object, a request-level error
    without a response, a long body with no message, a 200 without choices): the batch's error file is replaced
    after it ended, and the SDK reads it back."""
    with FakeBatchServer(outcome=lambda body, attempt: "error") as server:
        api = make_batch_api("openai", base_url=server.openai_url, api_key="k", model="m")
        bid = api.submit([_req("a")], tag="t")
        assert api.status(bid).ended
        fid = api.client.batches.retrieve(bid).error_file_id
        long_body = {"detail": "x" * 400}
        lines = [
            {"custom_id": "s", "response": {"status_code": 500, "body": "upstream down"}, "error": None},
            {"custom_id": "n", "response": None, "error": {"code": "server_error", "message": "internal"}},
            {"custom_id": "l", "response": {"status_code": 502, "body": long_body}, "error": None},
            {"custom_id": "m", "response": {"status_code": 200, "body": {"choices": []}}, "error": None},
            {"custom_id": "e", "response": {"status_code": 400, "body": {"error": {"message": "bad"}}}, "error": None},
        ]
        server.files[fid]["bytes"] = "".join(json.dumps(x) + "\n" for x in lines).encode()
        res = api.results(bid)
        assert [(r.custom_id, r.outcome) for r in res] == [(c, "errored") for c in "snlme"]
        errors = [r.generation.error for r in res]
        assert errors[0] == f'batch {bid}: HTTP 500: "upstream down"'
        assert errors[1] == f"batch {bid}: HTTP None: internal"
        assert errors[2] == f"batch {bid}: HTTP 502: " + ('{"detail": "' + "x" * 400)[:300]
        assert len(errors[2]) == len(f"batch {bid}: HTTP 502: ") + 300
        assert errors[3] == f"batch {bid}: malformed reply: list index out of range"
        assert errors[4] == f"batch {bid}: HTTP 400: bad"
        assert all(r.generation.batch_id == bid and r.generation.text == "" for r in res)


def test_openai_output_lines_with_reasoning_refusal_logprobs_and_cache():
    """Output-file lines the stand-in does not write itself: reasoning, a refusal, token log-probs, cached prompt
    tokens, no usage at all, a message that is not an object; the batch's output file is replaced after it ended."""
    with FakeBatchServer() as server:
        api = make_batch_api("openai", base_url=server.openai_url, api_key="k", model="m")
        bid = api.submit([_req("a")], tag="t")
        assert api.status(bid).ended
        fid = api.client.batches.retrieve(bid).output_file_id

        def ok(cid, choice, usage=None):
            body = {"choices": [choice], **({"usage": usage} if usage is not None else {})}
            return {"custom_id": cid, "response": {"status_code": 200, "body": body}, "error": None}

        lines = [
            ok("r", {"message": {"content": "Fine.$$$1$$$", "reasoning_content": "hm"}, "finish_reason": "length",
                     "logprobs": {"content": [{"logprob": -0.5}, {"logprob": -1.5}]}},
               {"prompt_tokens": 10, "completion_tokens": 3, "prompt_tokens_details": {"cached_tokens": 8}}),
            ok("f", {"message": {"content": None, "refusal": "I can't"}, "finish_reason": "stop"}),
            ok("x", {"message": "plain text", "finish_reason": "stop"}),
            ok("k", {"message": {"content": "ok"}, "finish_reason": "stop"}, {"prompt_tokens": 2}),
        ]
        server.files[fid]["bytes"] = "".join(json.dumps(x) + "\n" for x in lines).encode()
        res = {r.custom_id: r for r in api.results(bid)}
        assert list(res) == ["r", "f", "x", "k"]
        r = res["r"].generation
        assert res["r"].outcome == "succeeded" and (r.text, r.reasoning, r.refusal) == ("Fine.$$$1$$$", "hm", None)
        assert (r.finish_reason, r.mean_logprob, r.batch_id) == ("length", -1.0, bid)
        assert (r.prompt_tokens, r.completion_tokens, r.cached_tokens) == (10, 3, 8)
        f = res["f"].generation
        assert res["f"].outcome == "succeeded" and (f.text, f.refusal, f.mean_logprob) == ("", "I can't", None)
        assert (f.prompt_tokens, f.completion_tokens, f.cached_tokens) == (None, None, None)
        assert res["x"].outcome == "errored"
        assert res["x"].generation.error == f"batch {bid}: malformed reply: message is a str, expected an object"
        k = res["k"].generation
        assert (k.text, k.prompt_tokens, k.completion_tokens, k.cached_tokens) == ("ok", 2, None, None)


def test_openai_failed_batch_lists_its_errors():
    with FakeBatchServer() as server:
        api = make_batch_api("openai", base_url=server.openai_url, api_key="k", model="m")
        bid = api.submit([_req("a"), _req("a")], tag="dup")  # a duplicate custom id: the provider fails the batch
        st = api.status(bid)
        assert (st.status, st.ended) == ("failed", True)
        assert st.errors == ["duplicate_custom_id: custom_id 'a' (line 2)"]


def test_openai_status_without_counts_and_error_without_line():
    """A batch object with ``request_counts`` null and a batch-level error that names no line (OpenAI's
    too-many-requests error has ``line: null``): the stand-in's batch record is edited to say so."""
    with FakeBatchServer(complete_after=1e9) as server:
        api = make_batch_api("openai", base_url=server.openai_url, api_key="k", model="m")
        bid = api.submit([_req("a")], tag="t")
        server._batches[bid].update(request_counts=None, errors={"object": "list", "data": [
            {"code": "too_many_requests", "message": "at most 50000 requests per batch", "line": None,
             "param": None}]})
        st = api.status(bid)
        assert st.counts == {} and st.errors == ["too_many_requests: at most 50000 requests per batch"]


def test_anthropic_params_and_url():
    api = AnthropicBatchAPI(base_url="https://api.anthropic.com/v1/", api_key=None, model="claude-x")
    assert str(api.client.base_url).rstrip("/") == "https://api.anthropic.com"
    two_systems = BatchRequest("k", [SYSTEM, {"role": "system", "content": "Be brief."},
                                     {"role": "user", "content": "hi"}],
                               GenerationSettings(max_new_tokens=32, temperature=1.5, top_p=1.0))
    marked = [{"role": "user", "content": [{"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}]}]
    assert api.params(two_systems) == {"model": "claude-x", "max_tokens": 32, "temperature": 1.0,
                                       "messages": marked,  # the whole prompt marked for the prompt cache
                                       "system": "Rate the survey.\n\nBe brief."}
    plain = BatchRequest("k", [{"role": "user", "content": "hi", "name": "x"}],
                         GenerationSettings(max_new_tokens=8, temperature=0.3, top_p=0.99))
    assert api.params(plain) == {"model": "claude-x", "max_tokens": 8, "temperature": 0.3,
                                 "messages": marked, "top_p": 0.99}
    expected = json.dumps({"custom_id": "k", "params": api.params(plain)})
    assert api.request_size(plain) == len(expected.encode())
    assert api.request_size(BatchRequest("k", [{"role": "user", "content": "é"}], plain.settings)) == \
        api.request_size(BatchRequest("k", [{"role": "user", "content": "e"}], plain.settings)) + 5  # "\u00e9"


def test_anthropic_submit_status_results_and_find_slack():
    def outcome(body, attempt):
        text = json.dumps(body["messages"])
        return "error" if "two" in text else "expire" if "three" in text else "ok"

    with FakeBatchServer(outcome=outcome, reply=lambda params: "Fine, four words here.",
                         complete_after=1e9) as server:
        api = make_batch_api("auto", base_url=server.anthropic_url, api_key="k", model="m")
        assert isinstance(api, OpenAIBatchAPI)  # not on anthropic.com: openai
        api = make_batch_api("anthropic", base_url=server.anthropic_url + "/v1", api_key="k", model="m")
        reqs = [_req("a", "survey one"), _req("b", "survey two"), _req("c", "survey three")]
        api.max_requests = 2
        with pytest.raises(ValueError, match=r"^3 requests exceed one Anthropic batch \(2\)$"):
            api.submit(reqs, tag="t")
        api.max_requests = 3
        since = time.time()
        bid = api.submit(reqs, tag="t")
        st = api.status(bid)
        assert (st.batch_id, st.status, st.ended, st.counts["processing"]) == (bid, "in_progress", False, 3)
        keys = ["a", "b", "c"]
        # created within the 5 minutes of slack before `since`: found; 6 minutes later: not searched
        assert api.find("t", keys=keys, since=since + 290) == bid
        assert api.find("t", keys=keys, since=since + 360) is None
        assert api.find("t", keys=[], since=since) is None
        created = api.client.messages.batches.retrieve(bid).created_at.timestamp()
        assert api.find("t", keys=keys, since=created + 300) == bid  # exactly at the slack's edge: still searched
        assert api.find("t", keys=keys, since=created + 300.5) is None
        time.sleep(0.05)
        newer = api.submit([_req("x")], tag="v")  # newer, one request: skipped, the search goes on
        assert api.find("t", keys=keys, since=since) == bid
        newer_s = api.client.messages.batches.retrieve(newer).created_at.timestamp()
        time.sleep(0.05)
        mine = api.submit([_req("y")], tag="w")
        # the slack's edge between the two one-request batches: the newest running one is the single candidate
        assert api.find("t", keys=["y"], since=newer_s + 300.02) == mine
        server.complete_after = 0.0
        st = api.status(bid)
        assert (st.status, st.ended) == ("ended", True)
        assert (st.counts["succeeded"], st.counts["errored"], st.counts["expired"]) == (1, 1, 1)
        assert api.find("t", keys=keys, since=since) == bid
        assert api.find("t", keys=["a", "b", "x"], since=since) is None  # ended: custom ids must be ours
        res = {r.custom_id: r for r in api.results(bid)}
        a = res["a"].generation
        assert res["a"].outcome == "succeeded" and a.text == "Fine, four words here." and a.error is None
        # prompt = user "survey one" (2) + system "Rate the survey." (3); cache reads 0
        assert (a.prompt_tokens, a.completion_tokens, a.cached_tokens) == (5, 4, 0)
        assert (a.finish_reason, a.reasoning, a.refusal, a.batch_id) == ("stop", None, None, bid)
        assert res["b"].outcome == "errored"
        assert res["b"].generation.error == f"batch {bid}: invalid_request_error: scripted per-request failure"
        assert res["c"].outcome == "expired"
        assert res["c"].generation.error == f"batch {bid}: request expired before the 24h window ended"
        server.complete_after = 1e9
        run = api.submit([_req("d")], tag="u")
        st = api.cancel(run)
        assert (st.status, st.ended) == ("ended", True)  # the stand-in ends a canceling batch at its next read
        (r,) = api.results(run)
        assert (r.custom_id, r.outcome, r.generation.error) == ("d", "canceled", f"batch {run}: request canceled")


def test_no_key_sends_the_placeholder_not_the_environment(monkeypatch):
    # the caller (OpenAIBackend) reads its own api_key_env; None means "no key", never the SDK's variable
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-from-env")
    assert make_batch_api("openai", base_url="http://127.0.0.1:9/v1", api_key=None, model="m").client.api_key == \
        "unused"
    assert make_batch_api("anthropic", base_url="http://127.0.0.1:9", api_key=None, model="m").client.api_key == \
        "unused"
    assert make_batch_api("openai", base_url="http://127.0.0.1:9/v1", api_key="sk-1", model="m").client.api_key == \
        "sk-1"


def test_anthropic_results_with_thinking_cache_and_stop_reasons():
    """Result items the stand-in does not write itself (thinking blocks, cache reads and writes, the other stop
    reasons, an error without details): the ended batch's results are replaced, and the SDK reads them back."""
    with FakeBatchServer() as server:
        api = make_batch_api("anthropic", base_url=server.anthropic_url, api_key="k", model="m")
        bid = api.submit([_req("a")], tag="t")
        assert api.status(bid).ended

        def msg(cid, content, stop, usage):
            return {"custom_id": cid, "result": {"type": "succeeded", "message": {
                "id": "msg_1", "type": "message", "role": "assistant", "model": "m", "content": content,
                "stop_reason": stop, "stop_sequence": None, "usage": usage}}}

        server._abatches[bid]["_results"] = [
            msg("t", [{"type": "thinking", "thinking": "first", "signature": "s"},
                      {"type": "thinking", "thinking": "", "signature": "s"},
                      {"type": "thinking", "thinking": "second", "signature": "s"},
                      {"type": "text", "text": "Fine."}, {"type": "text", "text": "$$$1$$$"}], "max_tokens",
                {"input_tokens": 4, "output_tokens": 6, "cache_read_input_tokens": 100,
                 "cache_creation_input_tokens": 20}),
            msg("r", [], "refusal", {"input_tokens": 0, "output_tokens": 0}),
            msg("p", [{"type": "text", "text": "x"}], "pause_turn", {"input_tokens": 1, "output_tokens": 1}),
            msg("s", [{"type": "text", "text": "y"}], "stop_sequence", {"input_tokens": 1, "output_tokens": 1}),
            {"custom_id": "e", "result": {"type": "errored", "error": {"type": "error", "error": {
                "type": "overloaded_error", "message": "busy"}}}},
        ]
        res = {r.custom_id: r for r in api.results(bid)}
        t = res["t"].generation
        assert (t.text, t.reasoning, t.finish_reason, t.refusal) == ("Fine.$$$1$$$", "first\n\nsecond", "length", None)
        # prompt = 4 uncached + 100 read from the cache + 20 written to it
        assert (t.prompt_tokens, t.completion_tokens, t.cached_tokens) == (124, 6, 100)
        r = res["r"].generation
        assert (r.text, r.reasoning, r.finish_reason, r.refusal) == ("", None, "refusal", "refused")
        assert (r.prompt_tokens, r.completion_tokens, r.cached_tokens) == (0, 0, 0)
        assert res["p"].generation.finish_reason == "pause_turn"  # not mapped: kept as the provider says
        assert res["s"].generation.finish_reason == "stop" and res["s"].generation.refusal is None
        assert res["e"].outcome == "errored"
        assert res["e"].generation.error == f"batch {bid}: overloaded_error: busy"


def test_make_batch_api_choices():
    auto = make_batch_api("auto", base_url="https://api.anthropic.com", api_key="k", model="m", timeout=7.0)
    assert isinstance(auto, AnthropicBatchAPI) and auto.client.timeout == 7.0
    oai = make_batch_api("openai", base_url="http://127.0.0.1:9/v1", api_key="k", model="m",
                         max_tokens_field="max_tokens", timeout=9.0, body=lambda m, s, k: {"b": k})
    assert isinstance(oai, OpenAIBatchAPI) and oai.client.timeout == 9.0 and oai.max_tokens_field == "max_tokens"
    assert json.loads(oai._line(_req("k", sample=4)))["body"] == {"b": 4, "n": 1}
    assert oai.client.max_retries == 4 and oai.model == "m"
    with pytest.raises(ValueError, match="batch provider must be openai, anthropic or auto, got 'gemini'"):
        make_batch_api("gemini", base_url="x", api_key="k", model="m")

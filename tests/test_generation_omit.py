"""``generation.omit`` and ``generation.thinking_budget``: what the API backends put in a request body.

The shipped GPT-5.2 config is run end to end (judge stage + RQS stage) against a real HTTP stand-in
(:class:`surveyalign.testing.FakeChatServer`), and the bodies it logged are read back.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from surveyalign.backends import BatchRequest, GenerationSettings, make_batch_api
from surveyalign.backends.base import local_engine_check
from surveyalign.backends.request_bodies import chat_body, messages_params
from surveyalign.evaluation import EvalConfig, EvalConfigError, run_evaluation
from surveyalign.testing import FakeBatchServer, FakeChatServer

REPO = Path(__file__).resolve().parents[1]
MESSAGES = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Rate the survey."}]


def _reply(body: dict) -> str:
    """A judge answer, or a consistency rating for the RQS stage's prompts."""
    text = json.dumps(body["messages"])
    return "Same points. <consistency>0.6</consistency>" if "<consistency>" in text else "Fine. $$$-1$$$"


def _run(config: str, dataset_dir: Path, out: Path, server: FakeChatServer, **more) -> tuple[list, list, dict]:
    """Run the shipped ``config`` on one unit per dimension with both stages pointed at ``server``; returns the
    judge bodies, the RQS bodies and run_config.json."""
    overrides = {"dataset": str(dataset_dir), "output_dir": str(out), "limit": 1, "progress": False, "bootstrap": 0,
                 "backend.options.base_url": server.base_url, "rqs.backend.options.base_url": server.base_url,
                 **more}
    result = run_evaluation(EvalConfig.from_yaml(REPO / config, overrides))
    assert result.counts["scored"] == 4
    assert result.metrics["rqs"] == pytest.approx(0.6)
    rqs = [b for b in server.requests if "<consistency>" in json.dumps(b["messages"])]
    judge = [b for b in server.requests if b not in rqs]
    return judge, rqs, json.loads((result.run_dir / "run_config.json").read_text())


def test_gpt52_config_sends_no_sampling_fields_in_judge_or_rqs_calls(dataset_dir, tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with FakeChatServer(replies=_reply) as server:
        judge, rqs, run_config = _run("configs/eval/gpt-5.2.yaml", dataset_dir, tmp_path / "omit", server)
    assert len(judge) == 4 and len(rqs) == 4
    for body in judge + rqs:
        assert "temperature" not in body and "top_p" not in body, body.keys()
    assert [b["max_completion_tokens"] for b in judge] == [1024] * 4
    assert [b["max_completion_tokens"] for b in rqs] == [512] * 4
    assert {b["seed"] for b in judge} == {0} and {b["model"] for b in judge + rqs} == {"gpt-5.2"}
    # the omission is recorded as configured: run config, generation block and the RQS stage
    assert run_config["config"]["generation"]["omit"] == ["temperature", "top_p"]
    assert run_config["generation"]["omit"] == ["temperature", "top_p"]
    assert run_config["rqs"]["generation"]["omit"] == ["temperature", "top_p"]
    assert run_config["config"]["rqs"]["generation"]["omit"] == ["temperature", "top_p"]
    assert run_config["identity"]["omitted_request_fields"] == ["temperature", "top_p"]


def test_a_config_without_omit_still_sends_temperature_and_top_p(dataset_dir, tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with FakeChatServer(replies=_reply) as server:
        judge, rqs, run_config = _run("configs/eval/gpt-5.2.yaml", dataset_dir, tmp_path / "sent", server,
                                      **{"generation.omit": [], "rqs.generation.omit": [],
                                         "generation.temperature": 0.3})
    assert [(b["temperature"], b["top_p"]) for b in judge] == [(0.3, 1.0)] * 4
    assert [(b["temperature"], b["top_p"]) for b in rqs] == [(0.0, 1.0)] * 4
    assert "omit" not in run_config["generation"]  # nothing omitted: the settings read as before the field existed
    assert "omitted_request_fields" not in run_config["identity"]


def test_claude_thinking_config_sends_the_budget_and_no_temperature(dataset_dir, tmp_path, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with FakeChatServer(replies=_reply) as server:
        judge, rqs, run_config = _run("configs/eval/claude-opus-4.5-thinking.yaml", dataset_dir, tmp_path, server)
    assert len(judge) == 4
    for body in judge:
        assert body["thinking"] == {"type": "enabled", "budget_tokens": 8192}
        assert "temperature" not in body and "top_p" not in body and "chat_template_kwargs" not in body
        assert body["max_tokens"] == 10240 and body["model"] == "claude-opus-4-5"
    assert all("thinking" not in b and "temperature" not in b for b in rqs)
    assert run_config["generation"]["thinking_budget"] == 8192


def test_chat_body_leaves_out_exactly_the_named_fields():
    full = chat_body("m", MESSAGES, GenerationSettings(temperature=0.7, top_p=0.9, max_new_tokens=64, seed=5), 2, 1,
                     "max_completion_tokens")
    assert full == {"model": "m", "messages": MESSAGES, "temperature": 0.7, "top_p": 0.9,
                    "max_completion_tokens": 64, "seed": 7, "n": 1}
    bare = chat_body("m", MESSAGES, GenerationSettings(omit=["seed", "max_new_tokens", "temperature", "top_p"]))
    assert bare == {"model": "m", "messages": MESSAGES, "n": 1}


def test_openai_batch_lines_omit_the_same_fields():
    api = make_batch_api("openai", base_url="http://127.0.0.1:9/v1", api_key=None, model="gpt-5.2")
    line = json.loads(api._line(BatchRequest("k0", MESSAGES, GenerationSettings(omit=["temperature", "top_p"]), 3)))
    assert line["body"] == {"model": "gpt-5.2", "messages": MESSAGES, "max_completion_tokens": 512, "seed": 3, "n": 1}


def test_anthropic_batch_params_carry_thinking_and_no_temperature():
    settings = GenerationSettings(omit=["temperature", "top_p"], top_p=0.5, thinking_budget=2048, max_new_tokens=4096)
    seen: list[dict] = []
    with FakeBatchServer(reply=lambda params: (seen.append(params), "Fine. $$$-1$$$")[1]) as server:
        api = make_batch_api("anthropic", base_url=server.anthropic_url, api_key="k", model="claude-opus-4-5")
        bid = api.submit([BatchRequest("k0", MESSAGES, settings, 0)], tag="t")
        assert api.status(bid).ended
        assert [r.generation.text for r in api.results(bid)] == ["Fine. $$$-1$$$"]
    assert seen == [{"model": "claude-opus-4-5", "max_tokens": 4096, "system": "Be brief.",
                     "messages": [{"role": "user", "content": [{"type": "text", "text": "Rate the survey.",
                                                                "cache_control": {"type": "ephemeral"}}]}],
                     "thinking": {"type": "enabled", "budget_tokens": 2048}}]
    plain = messages_params("c", MESSAGES, GenerationSettings(temperature=1.5, top_p=0.5))
    assert (plain["temperature"], plain["top_p"]) == (1.0, 0.5)  # unchanged without omit
    with pytest.raises(ValueError, match="cannot name max_new_tokens"):
        messages_params("c", MESSAGES, GenerationSettings(omit=["max_new_tokens"]))


def test_omit_names_are_checked_and_stored_sorted(tmp_path):
    assert GenerationSettings(omit=["top_p", "temperature", "top_p"]).omit == ("temperature", "top_p")
    assert GenerationSettings(omit=["temperature"]).greedy is False  # the server's own temperature: not greedy
    assert "omit" not in GenerationSettings().model_dump()  # unset fields stay out of dumps and cache keys
    bad = tmp_path / "bad.yaml"
    text = (REPO / "configs/eval/gpt-5.2.yaml").read_text().replace("omit: [temperature, top_p]\n  max_new_tokens: 1024",
                                                                    "omit: [temprature]\n  max_new_tokens: 1024")
    bad.write_text(text)
    with pytest.raises(EvalConfigError, match=r"bad\.yaml: generation\.omit: omit: unknown field\(s\) 'temprature'; "
                                              r"fields that can be left out: max_new_tokens, seed, temperature, top_p"):
        EvalConfig.from_yaml(bad)


def test_thinking_budget_rules():
    with pytest.raises(ValueError, match="thinking_budget needs omit: \\[temperature\\]"):
        GenerationSettings(thinking_budget=2048, max_new_tokens=4096)
    with pytest.raises(ValueError, match=r"thinking_budget \(4096\) must be below max_new_tokens \(4096\)"):
        GenerationSettings(thinking_budget=4096, max_new_tokens=4096, omit=["temperature"])
    with pytest.raises(ValueError, match="greater than or equal to 1024"):
        GenerationSettings(thinking_budget=512, max_new_tokens=4096, omit=["temperature"])


def test_local_engines_refuse_what_only_a_request_can_apply():
    local_engine_check(GenerationSettings(temperature=0.7), "engine")  # plain settings pass
    with pytest.raises(ValueError, match=r"engine: generation\.omit \(temperature\) applies to API requests only"):
        local_engine_check(GenerationSettings(omit=["temperature"]), "engine")
    with pytest.raises(ValueError, match="engine: generation.thinking_budget is Anthropic's extended thinking"):
        local_engine_check(GenerationSettings(omit=["temperature"], thinking_budget=1024, max_new_tokens=2048)
                           .model_copy(update={"omit": ()}), "engine")

"""Judge outputs that must fail loudly (issue 11): truncated answers, response shapes, settings on the wire, and the
API pre-flight. Real HTTP servers on 127.0.0.1 (a scripted one and our own `surveyalign serve`), real TRL-free
components, hand-written inputs."""

from __future__ import annotations

import socket
import sys
import time
import types

import pytest

from surveyalign.backends import (
    Generation,
    GenerationSettings,
    load_backend,
    preflight,
    serve_in_thread,
)
from surveyalign.backends.responses import normalise_message
from surveyalign.backends.simple import ScriptedBackend
from surveyalign.evaluation import EvalConfig, parse_rqs_rating, run_evaluation
from surveyalign.prompts import parse_generation
from surveyalign.testing import FakeChatServer
from surveyalign.training import choose_rejected

USER = [{"role": "user", "content": "Judge this survey."}]


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# ------------------------------------------------------------------------------------------- stop reason


def test_length_stop_is_truncated_even_with_a_score_marker():
    truncated = parse_generation(Generation("Clear and well organised.$$$1$$$", "length", -0.2))
    assert truncated.score is None
    assert truncated.error == ("truncated: the answer stopped at the token limit (finish_reason 'length'); it is not "
                               "read even if it already holds a complete score marker (raise max_new_tokens)")
    # the same text with a normal stop scores 1; the other servers' spellings of a length stop are truncated too
    assert parse_generation(Generation("Clear and well organised.$$$1$$$", "stop", -0.2)).score == 1
    for reason in ("max_tokens", "MAX_TOKENS", "max_output_tokens"):
        assert parse_generation({"text": "Fine.$$$2$$$", "finish_reason": reason}).error.startswith("truncated")
    # the RQS reader goes through the same gate
    rqs = parse_generation(Generation("Same points. <consistency>0.8</consistency>", "length", None),
                           parse=parse_rqs_rating)
    assert rqs.score is None and rqs.error.startswith("truncated: ") and "score marker" not in rqs.error
    assert parse_generation(Generation("Same. <consistency>0.8</consistency>", "stop", None),
                            parse=parse_rqs_rating).score == 0.8


def _config(dataset, out, **fields) -> EvalConfig:
    data = {"name": "t", "dataset": str(dataset), "output_dir": str(out), "progress": False, "bootstrap": 0,
            "limit": 1, "dimensions": ["readability", "structure"],
            "backend": {"kind": "constant", "options": {"score": -1}}}
    data.update(fields)
    return EvalConfig.from_dict(data)


def test_truncated_judge_answer_is_parse_failed_in_evaluation(dataset_dir, tmp_path):
    # readability's answer is cut at the token limit after its marker; structure's stopped normally
    def reply(messages, settings, index):
        cut = "Readability" in messages[-1]["content"]
        return Generation("Clear prose.$$$2$$$", "length" if cut else "stop", -0.1)

    result = run_evaluation(_config(dataset_dir, tmp_path), backend=ScriptedBackend(reply))
    by_dim = {p["dimension"]: p for p in result.predictions}
    assert by_dim["readability"]["status"] == "parse_failed" and by_dim["readability"]["prediction"] is None
    assert by_dim["readability"]["error"].startswith("truncated")
    assert by_dim["readability"]["samples"][0]["finish_reason"] == "length"
    assert by_dim["structure"]["status"] == "scored" and by_dim["structure"]["prediction"] == 2
    assert result.counts["parse_failed"] == 1 and result.counts["scored"] == 1


def test_truncated_consistency_answer_is_parse_failed_in_the_rqs_stage(dataset_dir, tmp_path):
    answers = [Generation("Same points. <consistency>1.0</consistency>", "length", None),
               Generation("Same points. <consistency>0.6</consistency>", "stop", None)]
    cfg = _config(dataset_dir, tmp_path, rqs={"backend": {"kind": "scripted", "options": {"replies": []}}})
    result = run_evaluation(cfg, rqs_backend=ScriptedBackend(answers))
    first, second = result.predictions
    assert first["consistency"] is None and first["consistency_error"].startswith("parse_failed: truncated")
    assert second["consistency"] == 0.6 and second["consistency_error"] is None


def test_truncated_sample_never_becomes_the_rejected_answer(tiny_model_dir, dataset_dir, tmp_path):
    gold = -1
    samples = [Generation("Weak survey.$$$-2$$$", "length", -0.3), Generation("Fine.$$$1$$$", "stop", -0.4)]
    assert choose_rejected(samples, gold, "v1.0") == (1, [None, 1])
    assert choose_rejected(samples[:1], gold, "v1.0") == (None, [None])

    # through make_dpo_pairs: every sample differs from gold but is cut off -> no pair, and the reason is recorded
    from surveyalign.training import make_dpo_pairs, read_pairs

    sampler = ScriptedBackend(lambda m, s, i: Generation("Hm.$$$2$$$" if i else "No.$$$-2$$$", "length", -0.5))
    adapter = tmp_path / "adapter"
    adapter.mkdir()
    out = tmp_path / "pairs.jsonl"
    summary = make_dpo_pairs(str(dataset_dir), str(adapter), out, k=2, model=str(tiny_model_dir), limit=2,
                             max_length=4096, sampler=sampler, use_knowledge=False)  # plain dataset, plain prompts
    assert (summary.n_paired, summary.n_no_pair) == (0, 2)
    records = read_pairs(out, paired_only=False)
    assert all(r["status"] == "no_pair" and r["sft_sample_scores"] == [None, None] for r in records)
    assert all(s["error"].startswith("truncated") for r in records for s in r["sft_samples"])


# ------------------------------------------------------------------------------------------- response shapes


SHAPES = {
    "string": ({"message": {"role": "assistant", "content": "Clear.$$$1$$$"}},
               ("Clear.$$$1$$$", None, None), 1, None),
    "typed parts": ({"message": {"role": "assistant", "content": [
        {"type": "thinking", "thinking": "Maybe $$$-2$$$?"},
        {"type": "text", "text": "Clear. "}, {"type": "text", "text": "$$$1$$$"}]}},
        ("Clear. $$$1$$$", "Maybe $$$-2$$$?", None), 1, None),
    "reasoning part holds the only marker": ({"message": {"role": "assistant", "content": [
        {"type": "reasoning", "text": "It reads well $$$2$$$"}, {"type": "text", "text": "Clear prose."}]}},
        ("Clear prose.", "It reads well $$$2$$$", None), None, "no score marker"),
    "empty content with reasoning_content": ({"message": {"role": "assistant", "content": None,
                                                          "reasoning_content": "Weak. $$$-2$$$"}},
                                             ("", "Weak. $$$-2$$$", None), None, "empty answer"),
    "empty content with refusal": ({"message": {"role": "assistant", "content": "",
                                                "refusal": "I cannot rate this document."}},
                                   ("", None, "I cannot rate this document."), None,
                                   "refused: I cannot rate this document."),
}


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_each_response_shape_from_a_scripted_server(shape):
    reply, (text, reasoning, refusal), score, error = SHAPES[shape]
    message = normalise_message(reply["message"])
    assert (message.text, message.reasoning, message.refusal) == (text, reasoning, refusal)
    with FakeChatServer(replies=[reply]) as server, load_backend(
            "openai", base_url=server.base_url, model="fake-judge", api_key_env=None) as backend:
        [[generation]] = backend.generate([USER])
    assert (generation.text, generation.reasoning, generation.refusal) == (text, reasoning, refusal)
    parsed = parse_generation(generation, "v1.0")
    assert parsed.score == score
    if error is not None:
        assert parsed.error.startswith(error)


def test_unknown_content_part_is_a_failed_generation_not_dropped():
    reply = {"message": {"role": "assistant", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}}
    with FakeChatServer(replies=[reply]) as server, load_backend(
            "openai", base_url=server.base_url, model="fake-judge", api_key_env=None, max_retries=0) as backend:
        [[generation]] = backend.generate([USER])
    assert generation.error is not None and "'image_url'" in generation.error


@pytest.fixture(scope="module")
def served(tiny_model_dir):
    with serve_in_thread(str(tiny_model_dir), device="cpu", batch_size=4) as handle:
        yield handle


def test_our_server_string_content_and_length_stop(served):
    with load_backend("openai", base_url=served.base_url, model=served.model, api_key_env=None,
                      max_retries=0) as backend:
        [[short], [long]] = backend.generate([USER, USER], GenerationSettings(max_new_tokens=1, seed=3))
    # one new token: the random tiny model cannot have ended its turn -> "length" -> truncated, never scored
    assert short.error is None and isinstance(short.text, str) and short.reasoning is None
    assert short.finish_reason == "length" and parse_generation(short).error.startswith("truncated")
    assert long.finish_reason == "length"


# ------------------------------------------------------------------------------------------- settings on the wire


SETTINGS = GenerationSettings(temperature=0.7, top_p=0.9, max_new_tokens=77, seed=5, enable_thinking=True,
                              want_logprobs=True)


def test_openai_backend_puts_every_recorded_setting_in_the_request():
    with FakeChatServer(replies=["Fine.$$$1$$$"]) as server, load_backend(
            "openai", base_url=server.base_url, model="fake-judge", api_key_env=None) as backend:
        backend.generate([USER], SETTINGS, n=2)
        described = backend.describe()
    first, second = sorted(server.requests, key=lambda body: body["seed"])  # concurrent: any arrival order
    assert (first["temperature"], first["top_p"], first["max_tokens"]) == (0.7, 0.9, 77)
    assert (first["seed"], second["seed"]) == (5, 6)
    assert first["logprobs"] is True and first["chat_template_kwargs"] == {"enable_thinking": True}
    assert set(SETTINGS.model_dump()) == {"temperature", "top_p", "max_new_tokens", "seed", "enable_thinking",
                                          "want_logprobs"}  # a new setting must get a line above
    assert described["send_chat_template_kwargs"] is True


def test_openai_backend_refuses_what_cannot_reach_the_server():
    hosted = load_backend("openai", base_url="https://api.openai.com/v1", model="gpt-x", api_key_env=None)
    assert hosted.send_chat_template_kwargs is False  # the OpenAI API rejects chat_template_kwargs
    with pytest.raises(ValueError, match="enable_thinking=true cannot reach the server"):
        hosted.check_settings(SETTINGS)
    hosted.check_settings(SETTINGS.model_copy(update={"enable_thinking": False}))
    no_logprobs = load_backend("openai", base_url="http://127.0.0.1:1/v1", model="m", api_key_env=None,
                               request_logprobs=False)
    with pytest.raises(ValueError, match="request_logprobs is false"):
        no_logprobs.check_settings(SETTINGS)


def test_our_server_applies_enable_thinking_in_its_template_call(served, monkeypatch):
    seen: list[bool] = []
    original = served.backend.render

    def recording(messages, settings):
        seen.append(settings.enable_thinking)
        return original(messages, settings)

    monkeypatch.setattr(served.backend, "render", recording)
    with load_backend("openai", base_url=served.base_url, model=served.model, api_key_env=None) as backend:
        for flag in (True, False):
            [[answer]] = backend.generate([USER], SETTINGS.model_copy(update={"enable_thinking": flag,
                                                                              "max_new_tokens": 3}))
            assert answer.error is None
    assert seen == [True, False]


def _record_template_calls(tokenizer, monkeypatch) -> list[dict]:
    calls: list[dict] = []
    original = tokenizer.apply_chat_template

    def recording(messages, **kwargs):
        calls.append(kwargs)
        return original(messages, **kwargs)

    monkeypatch.setattr(tokenizer, "apply_chat_template", recording)
    return calls


def test_transformers_backend_applies_every_setting(tiny_model_dir, monkeypatch):
    backend = load_backend("transformers", model=str(tiny_model_dir), device="cpu")
    calls = _record_template_calls(backend.tokenizer, monkeypatch)
    [[a, _]] = backend.generate_detailed([USER], SETTINGS.model_copy(update={"max_new_tokens": 4}), n=2)
    assert calls[-1]["enable_thinking"] is True  # enable_thinking reaches the chat template call
    # max_new_tokens caps the answer, the seed makes it reproducible, log-probs are always there
    assert len(a.token_ids) <= 4 and a.generation.mean_logprob is not None
    [[again, _]] = backend.generate_detailed([USER], SETTINGS.model_copy(update={"max_new_tokens": 4}), n=2)
    assert again.token_ids == a.token_ids
    # a template without the switch cannot apply enable_thinking=true: refused, not ignored
    backend.tokenizer.chat_template = "{% for m in messages %}{{ m['content'] }}{% endfor %}"
    with pytest.raises(ValueError, match="no enable_thinking switch"):
        backend.generate([USER], SETTINGS)
    backend.generate([USER], SETTINGS.model_copy(update={"enable_thinking": False, "max_new_tokens": 2}))
    backend.close()


def test_vllm_backend_passes_every_setting(tiny_model_dir, monkeypatch):
    """vLLM is not installed here: a recording stand-in for the ``vllm`` module checks what our backend hands it
    (engine kwargs, SamplingParams per sample, the template call of the real tiny tokenizer) and the token counts it
    records."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    calls = _record_template_calls(tokenizer, monkeypatch)
    seen: dict[str, list] = {"params": [], "llm": []}

    class SamplingParams:
        def __init__(self, **kwargs):
            self.kwargs = kwargs
            seen["params"].append(kwargs)

    class LLM:
        def __init__(self, **kwargs):
            seen["llm"].append(kwargs)

        def get_tokenizer(self):
            return tokenizer

        def generate(self, inputs, params, lora_request=None, use_tqdm=False):
            seen.setdefault("inputs", []).extend(inputs)
            done = types.SimpleNamespace(text="Fine.$$$1$$$", finish_reason="stop", token_ids=[1], logprobs=None,
                                         cumulative_logprob=-0.5)
            return [types.SimpleNamespace(outputs=[done] * p.kwargs["n"]) for p in params]

    monkeypatch.setitem(sys.modules, "vllm", types.SimpleNamespace(LLM=LLM, SamplingParams=SamplingParams,
                                                                   __version__="stand-in"))
    backend = load_backend("vllm", model=str(tiny_model_dir))
    (row,) = backend.generate([USER], SETTINGS, n=2)
    assert calls[-1]["enable_thinking"] is True
    # tokens recorded by the tokenizer (issue 22): the prompt once per prompt (its second sample reuses vLLM's prefix
    # cache), the completion's token ids per sample
    prompt_ids = seen["inputs"][0]["prompt_token_ids"]
    assert len(seen["inputs"]) == 2 and seen["inputs"][1]["prompt_token_ids"] == prompt_ids and len(prompt_ids) > 5
    assert [(g.prompt_tokens, g.completion_tokens) for g in row] == [(len(prompt_ids), 1), (0, 1)]
    assert [(p["temperature"], p["top_p"], p["max_tokens"], p["seed"], p["n"]) for p in seen["params"]] == [
        (0.7, 0.9, 77, 5, 1), (0.7, 0.9, 77, 6, 1)]
    assert all(p["logprobs"] == 0 for p in seen["params"])
    # quantised judges on small GPUs: vLLM's in-flight bitsandbytes 4-bit, recorded in describe() (run_config)
    assert "quantization" not in seen["llm"][-1]
    quantised = load_backend("vllm", model=str(tiny_model_dir), quantization="4bit")
    assert seen["llm"][-1]["quantization"] == "bitsandbytes"
    assert quantised.describe()["quantization"]["bits"] == 4
    with pytest.raises(ValueError, match="only 4-bit bitsandbytes"):
        load_backend("vllm", model=str(tiny_model_dir), quantization="8bit")


# ------------------------------------------------------------------------------------------- pre-flight


def test_api_preflight_stops_at_once_when_nothing_listens():
    port = _closed_port()
    backend = load_backend("openai", base_url=f"http://127.0.0.1:{port}/v1", model="m", api_key_env=None)
    started = time.monotonic()
    with pytest.raises(ConnectionError, match=f"no server answers at http://127.0.0.1:{port}/v1/models"):
        preflight([backend], GenerationSettings())
    assert time.monotonic() - started < 5
    with FakeChatServer() as server:  # a listening server passes
        preflight([load_backend("openai", base_url=server.base_url, model="fake-judge", api_key_env=None)],
                  GenerationSettings())

"""Local transformers backend on the tiny Qwen3 model: greedy determinism, per-sample seeds, batch
independence, stop/length handling, log-probs checked against a teacher-forced forward pass, PEFT adapters."""

from __future__ import annotations

import json
import math
import shutil
from dataclasses import replace

import pytest

torch = pytest.importorskip("torch", reason="PyTorch (a surveyalign dependency) is not installed: pip install -e .")

from surveyalign.backends import GenerationSettings, load_backend
from surveyalign.prompts import render_chat

P1 = [{"role": "user", "content": "Score the readability of this survey: it is clearly written."}]
P2 = [{"role": "user", "content": "short"}]


@pytest.fixture(scope="module")
def backend(tiny_model_dir):
    b = load_backend("transformers", model=str(tiny_model_dir), device="cpu", batch_size=4)
    yield b
    b.close()


def _teacher_forced(model, tokenizer, messages, new_token_ids, enable_thinking=False):
    """Per-token log-probs of ``new_token_ids`` after the rendered prompt, by one plain forward pass."""
    prompt = tokenizer(render_chat(tokenizer, messages, enable_thinking=enable_thinking),
                       add_special_tokens=False)["input_ids"]
    ids = torch.tensor([prompt + list(new_token_ids)])
    with torch.no_grad():
        logits = model(input_ids=ids).logits[0].float()
    logprobs = torch.log_softmax(logits, dim=-1)
    return [float(logprobs[len(prompt) - 1 + k, t]) for k, t in enumerate(new_token_ids)]


def test_greedy_is_deterministic_and_n_copies(backend):
    settings = GenerationSettings(max_new_tokens=6)
    first = backend.generate([P1, P2], settings, n=3)
    second = backend.generate([P2, P1], settings)
    assert [len(row) for row in first] == [3, 3]
    assert first[0][0] == second[1][0]
    assert first[1][0] == second[0][0]
    # one row ran per prompt: its copies are the same answer and count no prompt tokens (read once)
    n_prompt = len(backend.tokenizer(backend.render(P1, settings), add_special_tokens=False)["input_ids"])
    assert first[0][0].prompt_tokens == n_prompt > 0 and first[0][0].completion_tokens == 6
    assert first[0][1] == first[0][2] == replace(first[0][0], prompt_tokens=0)
    assert sum(g.prompt_tokens for g in first[0]) == n_prompt  # not 3 x the prompt
    assert first[0][0].finish_reason == "length" and first[0][0].error is None


def test_sampling_seeds_are_per_sample_and_batch_independent(backend):
    settings = GenerationSettings(temperature=1.0, top_p=0.95, max_new_tokens=8, seed=5)
    batched = backend.generate([P1, P2], settings, n=3)
    texts = [g.text for g in batched[1]]
    assert len(set(texts)) == 3  # distinct seeds 5, 6, 7 give distinct samples
    alone = backend.generate([P2], settings, n=3)
    assert [g.text for g in alone[0]] == texts  # same seeds, other batch company, same samples
    for got, want in zip(alone[0], batched[1]):
        assert got.mean_logprob == pytest.approx(want.mean_logprob, abs=1e-4)
    shifted = backend.generate([P2], settings.model_copy(update={"seed": 6}), n=1)
    assert shifted[0][0].text == texts[1]  # sample i uses seed + i
    other = backend.generate([P2], settings.model_copy(update={"seed": 99}), n=1)
    assert other[0][0].text not in texts
    # per-prompt base seeds (what the server uses to batch requests with different seeds)
    mixed = backend.generate_detailed([P1, P2], settings, n=2, seeds=[7, 99])
    assert [d.generation.text for d in mixed[1]] == [other[0][0].text, backend.generate(
        [P2], settings.model_copy(update={"seed": 100}))[0][0].text]
    assert mixed[0][0].generation.text == backend.generate([P1], settings.model_copy(update={"seed": 7}))[0][0].text
    with pytest.raises(ValueError, match="got 1 seeds for 2 prompts"):
        backend.generate_detailed([P1, P2], settings, seeds=[1])


def test_mean_logprob_matches_teacher_forced_forward(backend):
    for settings in (GenerationSettings(max_new_tokens=7), GenerationSettings(temperature=0.8, max_new_tokens=7, seed=1)):
        [[detail]] = backend.generate_detailed([P1], settings)
        assert len(detail.token_ids) == 7 and detail.generation.finish_reason == "length"
        expected = _teacher_forced(backend.model, backend.tokenizer, P1, detail.token_ids)
        assert detail.token_logprobs == pytest.approx(expected, abs=1e-4)
        assert detail.generation.mean_logprob == pytest.approx(sum(expected) / 7, abs=1e-4)
        assert detail.generation.text == backend.tokenizer.decode(detail.token_ids)


def test_stop_token_ends_generation(tiny_model_dir, tmp_path, backend):
    """Make the 4th sampled token an extra end-of-turn id: the same seeded sample must now stop there."""
    settings = GenerationSettings(temperature=1.0, max_new_tokens=10, seed=11)
    [[full]] = backend.generate_detailed([P2], settings)
    stop_at = next(k for k in range(3, 10) if full.token_ids[k] not in full.token_ids[:k])
    stop_id = full.token_ids[stop_at]
    model_dir = tmp_path / "tiny-stop"
    shutil.copytree(tiny_model_dir, model_dir)
    config_path = model_dir / "generation_config.json"
    config = json.loads(config_path.read_text())
    config["eos_token_id"] = [backend.tokenizer.eos_token_id, stop_id]
    config_path.write_text(json.dumps(config))
    stopping = load_backend("transformers", model=str(model_dir), device="cpu")
    [[short]] = stopping.generate_detailed([P2], settings)
    assert short.generation.finish_reason == "stop"
    assert short.token_ids == full.token_ids[:stop_at + 1]
    assert short.generation.text == backend.tokenizer.decode(full.token_ids[:stop_at])
    assert short.generation.mean_logprob == pytest.approx(sum(full.token_logprobs[:stop_at + 1]) / (stop_at + 1),
                                                          abs=1e-4)


def test_enable_thinking_changes_the_rendered_prompt(backend):
    off = backend.render(P2, GenerationSettings())
    on = backend.render(P2, GenerationSettings(enable_thinking=True))
    assert off == on + "<think>\n\n</think>\n\n"
    [[d_off]] = backend.generate_detailed([P2], GenerationSettings(max_new_tokens=2))
    [[d_on]] = backend.generate_detailed([P2], GenerationSettings(max_new_tokens=2, enable_thinking=True))
    think_tokens = len(backend.tokenizer("<think>\n\n</think>\n\n", add_special_tokens=False)["input_ids"])
    assert d_off.prompt_tokens - d_on.prompt_tokens == think_tokens


def test_prompt_longer_than_context_is_a_failed_generation(backend, tiny_model_dir, tmp_path):
    n_p1 = len(backend.tokenizer(backend.render(P1, GenerationSettings()), add_special_tokens=False)["input_ids"])
    n_p2 = len(backend.tokenizer(backend.render(P2, GenerationSettings()), add_special_tokens=False)["input_ids"])
    context = n_p1 + 5  # P1 + 10 new tokens does not fit, P2 + 10 does
    assert n_p2 + 10 <= context
    model_dir = tmp_path / "tiny-short-context"
    shutil.copytree(tiny_model_dir, model_dir)
    config = json.loads((model_dir / "config.json").read_text())
    config["max_position_embeddings"] = context
    (model_dir / "config.json").write_text(json.dumps(config))
    short = load_backend("transformers", model=str(model_dir), device="cpu")
    [[ok], [bad]] = short.generate([P2, P1], GenerationSettings(max_new_tokens=10))
    assert ok.error is None and ok.finish_reason == "length"
    assert bad.error == (
        f"prompt has {n_p1} tokens; with max_new_tokens=10 it exceeds the model context of {context}")


def test_describe_and_option_errors(backend, tiny_model_dir):
    d = backend.describe()
    assert d["backend"] == "transformers" and d["model"] == str(tiny_model_dir)
    assert (d["device"], d["dtype"], d["batch_size"], d["adapter"]) == ("cpu", "float32", 4, None)
    with pytest.raises(ValueError, match="dtype must be 'auto' or one of"):
        load_backend("transformers", model=str(tiny_model_dir), dtype="float8")
    with pytest.raises(ValueError, match="batch_size must be >= 1"):
        load_backend("transformers", model=str(tiny_model_dir), batch_size=0)


@pytest.fixture(scope="module")
def lora_adapter(tiny_model_dir, tmp_path_factory):
    """A LoRA adapter with random (non-zero) weights on the tiny model, saved to disk."""
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    torch.manual_seed(0)
    base = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    config = LoraConfig(r=4, lora_alpha=32, target_modules=["q_proj", "v_proj", "down_proj"],
                        init_lora_weights=False, task_type="CAUSAL_LM")
    peft_model = get_peft_model(base, config)
    out = tmp_path_factory.mktemp("adapter")
    peft_model.save_pretrained(out)
    return out


def test_peft_adapter_is_applied(backend, tiny_model_dir, lora_adapter):
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    settings = GenerationSettings(max_new_tokens=6)
    adapted = load_backend("transformers", model=str(tiny_model_dir), adapter=str(lora_adapter), device="cpu")
    unmerged = load_backend("transformers", model=str(tiny_model_dir), adapter=str(lora_adapter), device="cpu",
                            merge_adapter=False)
    [[d_base]] = backend.generate_detailed([P1], settings)
    [[d_adapted]] = adapted.generate_detailed([P1], settings)
    [[d_unmerged]] = unmerged.generate_detailed([P1], settings)
    assert d_adapted.token_logprobs != pytest.approx(d_base.token_logprobs, abs=1e-3)
    assert d_unmerged.token_ids == d_adapted.token_ids
    assert d_unmerged.token_logprobs == pytest.approx(d_adapted.token_logprobs, abs=1e-4)
    reference = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(tiny_model_dir), lora_adapter).eval()
    expected = _teacher_forced(reference, adapted.tokenizer, P1, d_adapted.token_ids)
    assert d_adapted.token_logprobs == pytest.approx(expected, abs=1e-4)
    assert adapted.describe()["adapter"] == str(lora_adapter)
    assert not math.isclose(d_adapted.generation.mean_logprob, d_base.generation.mean_logprob, abs_tol=1e-3)


def test_checkpoint_sampling_defaults_do_not_leak(tiny_model_dir, tmp_path, backend):
    """A checkpoint whose generation_config asks for sampling and a repetition penalty decodes exactly like
    the plain one: GenerationSettings alone defines decoding."""
    model_dir = tmp_path / "tiny-sampling-defaults"
    shutil.copytree(tiny_model_dir, model_dir)
    path = model_dir / "generation_config.json"
    config = json.loads(path.read_text())
    config.update(do_sample=True, temperature=0.6, top_k=20, top_p=0.95, repetition_penalty=1.3)
    path.write_text(json.dumps(config))
    other = load_backend("transformers", model=str(model_dir), device="cpu")
    for settings in (GenerationSettings(max_new_tokens=6), GenerationSettings(temperature=1.0, max_new_tokens=6)):
        [[want]] = backend.generate_detailed([P1], settings)
        [[got]] = other.generate_detailed([P1], settings)
        assert got.token_ids == want.token_ids
        assert got.token_logprobs == pytest.approx(want.token_logprobs, abs=1e-6)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs an NVIDIA GPU with CUDA; this machine has none")
def test_cuda_greedy_matches_cpu(tiny_model_dir, backend):
    gpu = load_backend("transformers", model=str(tiny_model_dir), device="cuda", dtype="float32")
    settings = GenerationSettings(max_new_tokens=6)
    [[want]] = backend.generate_detailed([P1], settings)
    [[got]] = gpu.generate_detailed([P1], settings)
    assert got.token_ids == want.token_ids
    assert got.token_logprobs == pytest.approx(want.token_logprobs, abs=1e-3)
    sampled = gpu.generate([P1, P2], GenerationSettings(temperature=1.0, max_new_tokens=6, seed=3), n=2)
    assert all(g.error is None and g.finish_reason == "length" for row in sampled for g in row)
    gpu.close()


def test_missing_local_model_or_adapter_folder_is_named(tiny_model_dir, tmp_path):
    with pytest.raises(FileNotFoundError, match="model /nonexistent/model: no such folder"):
        load_backend("transformers", model="/nonexistent/model", device="cpu")
    with pytest.raises(FileNotFoundError, match=f"adapter {tmp_path / 'nope'}: no such folder"):
        load_backend("transformers", model=str(tiny_model_dir), adapter=str(tmp_path / "nope"), device="cpu")

"""`surveyalign serve` with four adapters on one base (each its own model name), and vLLM's one-engine LoRA wiring."""

from __future__ import annotations

import sys
import textwrap

import httpx
import pytest
from tiny_adapters import ANSWERS

from surveyalign.backends import GenerationSettings, load_backend
from surveyalign.backends.cli import parse_adapter_args
from surveyalign.prompts import build_judge_prompt, format_target


def test_four_adapters_served_as_four_models(tiny_model_dir, tiny_adapters):
    from surveyalign.backends.server import serve_in_thread

    adapters = {dim: str(path) for dim, path in tiny_adapters.items()}
    with serve_in_thread(str(tiny_model_dir), device="cpu", adapters=adapters) as handle:
        assert handle.adapter_models == list(ANSWERS)
        listing = httpx.get(f"{handle.base_url}/models").json()["data"]
        assert [entry["id"] for entry in listing] == [handle.model, *ANSWERS]
        fingerprints = {entry["surveyalign"]["fingerprint"] for entry in listing}
        assert len(fingerprints) == 5  # base + four adapters: five cache identities
        for dim, (rationale, score) in ANSWERS.items():
            backend = load_backend("openai", model=dim, base_url=handle.base_url, api_key_env=None)
            [[answer]] = backend.generate([build_judge_prompt(dim, "A survey.").messages()],
                                          GenerationSettings(max_new_tokens=16))
            assert answer.text == format_target(rationale, score)
            assert backend.server_fingerprint() in fingerprints
            backend.close()
        missing = httpx.post(f"{handle.base_url}/chat/completions",
                             json={"model": "clarity", "messages": [{"role": "user", "content": "x"}]})
        assert missing.status_code == 404 and "readability" in missing.json()["error"]["message"]
        health = httpx.get(handle.base_url.removesuffix("/v1") + "/health").json()
        assert health["requests"]["served"] == 4
        assert {name: stats["served"] for name, stats in health["models"].items()} == {
            handle.model: 0, **{dim: 1 for dim in ANSWERS}}


def test_adapter_arguments():
    assert parse_adapter_args(None) == (None, {})
    assert parse_adapter_args(["runs/read"]) == ("runs/read", {})
    assert parse_adapter_args(["readability=runs/r", "structure=runs/s"]) == (
        None, {"readability": "runs/r", "structure": "runs/s"})
    with pytest.raises(ValueError, match="name them"):
        parse_adapter_args(["a", "b"])
    with pytest.raises(ValueError, match="NAME=DIR for every adapter"):
        parse_adapter_args(["readability=a", "b"])
    with pytest.raises(ValueError, match="given twice"):
        parse_adapter_args(["readability=a", "readability=b"])


@pytest.fixture
def recording_vllm(tmp_path, monkeypatch):
    """A minimal importable ``vllm`` package that records how the backend drives it (vLLM is not installed)."""
    for name in [m for m in sys.modules if m == "vllm" or m.startswith("vllm.")]:
        monkeypatch.delitem(sys.modules, name)  # an earlier test's recording package is not the real vllm
    try:
        import vllm
        pytest.skip("the real vLLM is installed: the GPU test drives it instead of this stand-in")
    except ImportError:
        pass
    package = tmp_path / "vllm"
    (package / "lora").mkdir(parents=True)
    (package / "__init__.py").write_text(textwrap.dedent('''
        __version__ = "recording"
        ENGINES = []

        class SamplingParams:
            def __init__(self, **kwargs):
                self.__dict__.update(kwargs)

        class _Tok:
            def __call__(self, text, add_special_tokens=False):
                return {"input_ids": [len(text)]}
            def apply_chat_template(self, messages, tokenize=False, add_generation_prompt=True, **kwargs):
                return messages[-1]["content"]

        class _Completion:
            def __init__(self, text):
                self.text, self.token_ids, self.logprobs = text, [1], [{1: type("L", (), {"logprob": -0.5})()}]
                self.finish_reason, self.cumulative_logprob = "stop", -0.5

        class LLM:
            def __init__(self, **kwargs):
                self.kwargs, self.calls = kwargs, []
                ENGINES.append(self)
            def get_tokenizer(self):
                return _Tok()
            def generate(self, prompts, params, lora_request=None, use_tqdm=False):
                self.calls.append((prompts, params, lora_request))
                name = lora_request.lora_name if lora_request else "base"
                return [type("O", (), {"outputs": [_Completion(name) for _ in range(p.n)]})() for p in params]
    '''))
    (package / "lora" / "__init__.py").write_text("")
    (package / "lora" / "request.py").write_text(textwrap.dedent('''
        class LoRARequest:
            def __init__(self, lora_name, lora_int_id, lora_path):
                self.lora_name, self.lora_int_id, self.lora_path = lora_name, lora_int_id, lora_path
    '''))
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in [m for m in sys.modules if m == "vllm" or m.startswith("vllm.")]:
        monkeypatch.delitem(sys.modules, name)
    import vllm

    return vllm


def test_vllm_one_engine_one_lora_request_per_dimension(recording_vllm, tiny_model_dir, tiny_adapters, monkeypatch):
    from surveyalign.backends import vllm_backend

    monkeypatch.setattr(vllm_backend.VLLMBackend, "check_settings", lambda self, settings: None)
    adapters = {dim: str(path) for dim, path in tiny_adapters.items()}
    backend = load_backend("vllm", model=str(tiny_model_dir), adapters=adapters, max_lora_rank=8)
    [engine] = recording_vllm.ENGINES
    assert engine.kwargs["enable_lora"] is True and engine.kwargs["max_loras"] == 4
    assert engine.kwargs["max_lora_rank"] == 8
    settings = GenerationSettings(temperature=0.7, seed=5)
    seen = {}
    for dim in ANSWERS:
        [row] = backend.adapter_view(dim).generate([[{"role": "user", "content": "survey"}]], settings, n=3)
        assert [g.text for g in row] == [dim] * 3
        _, params, lora = engine.calls[-1]
        assert [p.seed for p in params] == [5, 6, 7] and all(p.n == 1 for p in params)
        seen[dim] = (lora.lora_name, lora.lora_int_id, lora.lora_path)
    assert {name for name, _, _ in seen.values()} == set(ANSWERS)
    assert sorted(lora_id for _, lora_id, _ in seen.values()) == [1, 2, 3, 4]
    assert {dim: path for dim, (_, _, path) in seen.items()} == adapters
    [[base]] = backend.generate([[{"role": "user", "content": "survey"}]], settings)
    assert base.text == "base" and engine.calls[-1][2] is None
    view = backend.adapter_view("criticalness").describe()
    assert view["adapter_name"] == "criticalness" and view["adapter"] == adapters["criticalness"]
    with pytest.raises(KeyError, match="no adapter named"):
        backend.adapter_view("clarity")


@pytest.mark.gpu
def test_real_vllm_four_loras_one_engine(tiny_model_dir, tiny_adapters):
    pytest.importorskip("vllm", reason="vLLM is not installed: pip install surveyalign[gpu] (needs an NVIDIA GPU)")
    torch = pytest.importorskip("torch", reason="PyTorch (a surveyalign dependency) is not installed")
    if not torch.cuda.is_available():
        pytest.skip("needs an NVIDIA GPU with CUDA; this machine has none")
    adapters = {dim: str(path) for dim, path in tiny_adapters.items()}
    backend = load_backend("vllm", model=str(tiny_model_dir), adapters=adapters, max_lora_rank=8,
                           gpu_memory_utilization=0.3, enforce_eager=True)
    for dim in ANSWERS:
        [row] = backend.adapter_view(dim).generate([build_judge_prompt(dim, "A survey.").messages()],
                                                   GenerationSettings(temperature=0.7, max_new_tokens=16), n=5)
        assert len(row) == 5 and all(g.ok for g in row)


def test_vllm_lora_rank_derived_from_the_adapters_or_refused_before_loading(recording_vllm, tiny_model_dir,
                                                                            tiny_adapters, tmp_path, monkeypatch):
    """Issue 21: an adapter above the engine's max_lora_rank fails in vLLM only at its first request, after the
    base has loaded; the rank is read from adapter_config.json and the limit derived, or the config refused."""
    import json
    import shutil

    from surveyalign.backends import vllm_backend

    monkeypatch.setattr(vllm_backend.VLLMBackend, "check_settings", lambda self, settings: None)
    adapters = {dim: str(path) for dim, path in tiny_adapters.items()}
    load_backend("vllm", model=str(tiny_model_dir), adapters=adapters)  # r=8 adapters, no max_lora_rank given
    [engine] = recording_vllm.ENGINES
    assert (engine.kwargs["max_lora_rank"], engine.kwargs["max_loras"]) == (8, 4)
    wide = tmp_path / "wide"
    shutil.copytree(adapters["criticalness"], wide)
    config = json.loads((wide / "adapter_config.json").read_text())
    config.update(r=8, rank_pattern={"q_proj": 128})
    (wide / "adapter_config.json").write_text(json.dumps(config))
    assert vllm_backend.adapter_rank(str(wide)) == 128
    mixed = {**adapters, "criticalness": str(wide)}
    with pytest.raises(ValueError, match=r"adapter 'criticalness' \(.*wide\) has LoRA rank 128, above "
                                         r"max_lora_rank=64; remove max_lora_rank"):
        load_backend("vllm", model=str(tiny_model_dir), adapters=mixed, max_lora_rank=64)
    assert len(recording_vllm.ENGINES) == 1  # refused before any engine was built
    load_backend("vllm", model=str(tiny_model_dir), adapters=mixed)
    assert recording_vllm.ENGINES[-1].kwargs["max_lora_rank"] == 128
    assert vllm_backend.lora_engine_limits({"a": str(wide)}, None) == (128, 1)
    config.update(r=600, rank_pattern={})
    (wide / "adapter_config.json").write_text(json.dumps(config))
    with pytest.raises(ValueError, match=r"adapter 'a' .* has LoRA rank 600, above the largest rank vLLM serves"):
        vllm_backend.lora_engine_limits({"a": str(wide)}, None)

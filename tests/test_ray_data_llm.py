"""Ray's vLLM integration for GPU workers (backend kind ``ray``, ``engine: vllm-data``), what a CPU machine can
check: the one-line refusals without vllm or a GPU, the ``vLLMEngineProcessorConfig`` built from our settings
(with the real ``ray.data.llm`` class, and through a recording stand-in module), and one ``generate`` through a
stand-in processor: one row per sample with seed + k, the adapter folder as ``model``, answers put back in prompt
and sample order."""

from __future__ import annotations

import json
import sys
import types

import pytest

from surveyalign.backends import GenerationSettings, load_backend
from surveyalign.backends import ray_data_llm as rdl

pytest.importorskip("ray", reason="Ray is not installed: pip install -e .[ray]")


def _adapter(folder, rank: int):
    folder.mkdir(parents=True)
    (folder / "adapter_config.json").write_text(json.dumps({"r": rank, "base_model_name_or_path": "tiny"}))
    return folder


def test_refused_in_one_line_without_vllm_or_gpu(tiny_model_dir, monkeypatch):
    monkeypatch.setattr(rdl, "_has_vllm", lambda: False)
    with pytest.raises(ImportError) as err:
        load_backend("ray", model=str(tiny_model_dir), engine="vllm-data")
    assert str(err.value) == ("ray engine 'vllm-data' needs vllm (Ray's vLLM integration runs vLLM on GPU workers): "
                              "pip install vllm 'ray[llm]', or use engine: transformers on CPU")
    monkeypatch.setattr(rdl, "_has_vllm", lambda: True)
    monkeypatch.setattr(rdl, "_gpu_count", lambda: 0)
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    with pytest.raises(ValueError) as err:
        load_backend("ray", model=str(tiny_model_dir), engine="vllm-data",
                     engine_options={"tensor_parallel_size": 2})
    assert "\n" not in str(err.value)
    assert str(err.value).startswith("ray engine 'vllm-data' needs 2 GPU(s) per replica and this machine has 0")
    with pytest.raises(ValueError, match="ray engine must be transformers, vllm or vllm-data, got 'sglang'"):
        load_backend("ray", model=str(tiny_model_dir), engine="sglang")
    with pytest.raises(ValueError, match="quantization '4bit' is not supported"):
        load_backend("ray", model=str(tiny_model_dir), engine="vllm-data", quantization="4bit")


def test_processor_config_with_the_real_ray_data_llm_class(tmp_path):
    """Our settings map onto Ray's own config class (no GPU needed to build it)."""
    import ray.data.llm

    adapters = {"structure": str(_adapter(tmp_path / "s", 8)), "criticalness": str(_adapter(tmp_path / "c", 20))}
    config = rdl.processor_config("/models/Qwen3-32B", adapters, workers=4, batch_size=32,
                                  engine_options={"tensor_parallel_size": 2, "max_model_len": 17408,
                                                  "gpu_memory_utilization": 0.9, "llm_kwargs": {"seed": 0}},
                                  llm=ray.data.llm)
    assert isinstance(config, ray.data.llm.vLLMEngineProcessorConfig)
    assert (config.model_source, config.concurrency, config.batch_size) == ("/models/Qwen3-32B", 4, 32)
    kwargs = {k: v for k, v in config.engine_kwargs.items() if k != "task_type"}  # Ray adds the task type
    assert kwargs == {"tensor_parallel_size": 2, "max_model_len": 17408, "gpu_memory_utilization": 0.9,
                      "enable_lora": True, "max_lora_rank": 32, "max_loras": 2, "seed": 0}
    assert config.chat_template_stage in (False, None) or not config.chat_template_stage.enabled
    with pytest.raises(ValueError, match=r"engine_options: engine 'vllm-data' takes no option\(s\) \['device'\]"):
        rdl.processor_config("m", {}, workers=1, batch_size=1, engine_options={"device": "cpu"}, llm=ray.data.llm)
    with pytest.raises(ValueError, match="has LoRA rank 20, above max_lora_rank=16"):
        rdl.processor_config("m", adapters, workers=1, batch_size=1, engine_options={"max_lora_rank": 16},
                             llm=ray.data.llm)


def test_generate_through_a_recording_stand_in(tiny_model_dir, tmp_path, monkeypatch):
    seen: dict = {"configs": [], "rows": []}

    class Config:
        def __init__(self, **kwargs):
            seen["configs"].append(kwargs)

    class Done:
        def __init__(self, rows):
            self.rows = rows

        def take_all(self):
            out = []
            for row in reversed(self.rows):  # Ray Data keeps no order: the backend puts the answers back
                used = 3 if row["_p"] == 0 else row["sampling_params"]["max_tokens"]
                out.append({**row, "generated_text": f"answer {row['_p']}.{row['_k']} $$$1$$$",
                            "num_input_tokens": 40 + row["_p"], "num_generated_tokens": used,
                            "generated_tokens": [5, 6, 7][:used], "logprobs": [{5: {"logprob": -0.5}},
                                                                             {6: {"logprob": -1.0}},
                                                                             {7: {"logprob": -1.5}}][:used]})
            return out

    def build_processor(config):
        def run(rows):
            seen["rows"].append(rows)
            return Done(rows)
        return run

    stand_in = types.SimpleNamespace(vLLMEngineProcessorConfig=Config, build_processor=build_processor)
    monkeypatch.setitem(sys.modules, "ray.data.llm", stand_in)
    monkeypatch.setattr(rdl, "_has_vllm", lambda: True)
    monkeypatch.setattr(rdl, "_gpu_count", lambda: 1)
    import ray.data

    monkeypatch.setattr(ray.data, "from_items", lambda rows: rows)
    adapters = {"structure": str(_adapter(tmp_path / "s", 8))}
    backend = load_backend("ray", model=str(tiny_model_dir), adapters=adapters, engine="vllm-data", workers=2,
                           batch_size=16, engine_options={"dtype": "bfloat16", "max_model_len": 512})
    assert seen["configs"] == [{"model_source": str(tiny_model_dir), "concurrency": 2, "batch_size": 16,
                                "chat_template_stage": False,
                                "engine_kwargs": {"dtype": "bfloat16", "max_model_len": 512, "enable_lora": True,
                                                  "max_lora_rank": 8, "max_loras": 1}}]
    desc = backend.describe()
    assert desc["backend"] == "vllm" and desc["ray"]["workers"] == 2 and desc["shared_prefill"] is True
    settings = GenerationSettings(temperature=0.7, top_p=0.9, max_new_tokens=4, seed=3)
    prompts = [[{"role": "user", "content": "survey one"}], [{"role": "user", "content": "survey two"}]]
    out = backend.adapter_view("structure").generate(prompts, settings, n=2)
    rows = seen["rows"][-1]
    assert [(r["_p"], r["_k"], r["sampling_params"]["seed"]) for r in rows] == [(0, 0, 3), (0, 1, 4), (1, 0, 3),
                                                                                 (1, 1, 4)]
    assert all(r["model"] == adapters["structure"] for r in rows)
    assert rows[0]["sampling_params"] == {"n": 1, "seed": 3, "temperature": 0.7, "top_p": 0.9, "max_tokens": 4,
                                          "logprobs": 0}
    assert rows[0]["prompt"] == backend.render(prompts[0], settings) and "survey one" in rows[0]["prompt"]
    assert [[g.text for g in row] for row in out] == [["answer 0.0 $$$1$$$", "answer 0.1 $$$1$$$"],
                                                      ["answer 1.0 $$$1$$$", "answer 1.1 $$$1$$$"]]
    assert [[g.prompt_tokens for g in row] for row in out] == [[40, 0], [41, 0]]  # once per prompt
    assert [g.finish_reason for g in out[0]] == ["stop", "stop"] and out[1][0].finish_reason == "length"
    assert out[0][0].mean_logprob == pytest.approx(-1.0) and out[0][0].completion_tokens == 3
    base = backend.generate(prompts[:1], settings, n=1)
    assert "model" not in seen["rows"][-1][0] and base[0][0].text == "answer 0.0 $$$1$$$"


def _closed_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.parametrize("from_env", [False, True])
def test_a_cluster_address_is_joined_before_ray_data_runs_and_checked_first(tiny_model_dir, monkeypatch, from_env):
    """`address:` (or RAY_ADDRESS) is the cluster Ray Data runs on (it would otherwise start a local instance of its
    own, reading RAY_ADDRESS alone): joined when the backend is built, after one TCP try that stops at once."""
    import ray

    monkeypatch.setattr(rdl, "_has_vllm", lambda: True)
    monkeypatch.setattr(rdl, "_gpu_count", lambda: 0)  # the GPUs are the cluster's
    address = f"127.0.0.1:{_closed_port()}"
    options = {}
    if from_env:
        monkeypatch.setenv("RAY_ADDRESS", address)
    else:
        monkeypatch.delenv("RAY_ADDRESS", raising=False)
        options["address"] = address
    origin = "RAY_ADDRESS" if from_env else "backend option address"
    with pytest.raises(ValueError) as err:
        load_backend("ray", model=str(tiny_model_dir), engine="vllm-data", **options)
    assert str(err.value).startswith(f"ray backend: no Ray cluster answers at {address} ({origin}): ")
    assert not ray.is_initialized()

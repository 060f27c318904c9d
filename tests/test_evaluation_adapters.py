"""Evaluating a local adapter: the cache identity follows the adapter's content, and the adapter's training
record (surveyalign_training.json) must agree with the evaluation config."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from surveyalign.evaluation import EvalConfig, TrainingMismatchError, run_evaluation


@pytest.fixture(scope="module")
def lora_adapter(tiny_model_dir, tmp_path_factory) -> Path:
    """A LoRA adapter with random non-zero weights on the tiny model (no training), saved with PEFT."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    torch.manual_seed(0)
    base = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    config = LoraConfig(r=4, lora_alpha=32, target_modules=["q_proj", "v_proj"], init_lora_weights=False,
                        task_type="CAUSAL_LM")
    out = tmp_path_factory.mktemp("adapter")
    get_peft_model(base, config).save_pretrained(out)
    return out


def _config(dataset: Path, out: Path, model: Path, adapter: Path, **fields) -> EvalConfig:
    data = {"name": "adapter", "dataset": str(dataset), "output_dir": str(out), "progress": False, "bootstrap": 0,
            "dimensions": ["readability"], "limit": 2, "generation": {"max_new_tokens": 3},
            # keep the tiny model's unreadable answers on a re-run (issue 21 C would ask them again): these tests
            # are about the cache identity of adapters
            "retry_errors": False,
            "backend": {"kind": "transformers",
                        "options": {"model": str(model), "adapter": str(adapter), "device": "cpu"}}}
    data.update(fields)
    return EvalConfig.from_dict(data)


def _record(adapter: Path, **fields) -> None:
    from surveyalign.models import write_training_record

    record = {"stage": "sft", "dimension": "readability", "protocol": "v1.0", "enable_thinking": False,
              "use_knowledge": False, "base_model": "tiny", "data_hash": "ab" * 32, "n_train": 20}
    record.update(fields)
    write_training_record(adapter, record)


def test_retrained_adapter_in_the_same_folder_is_not_served_from_the_cache(tiny_model_dir, lora_adapter,
                                                                          dataset_dir, tmp_path):
    """Same folder, same adapter: all reused. Weights changed in place: every call is made again."""
    import torch
    from safetensors.torch import load_file, save_file

    adapter = tmp_path / "adapter"
    shutil.copytree(lora_adapter, adapter)
    # the tiny adapter's 3-token answers are truncated (parse_failed); keep them so that reuse is what is measured
    cfg = _config(dataset_dir, tmp_path / "runs", tiny_model_dir, adapter, retry_errors=False)
    first = run_evaluation(cfg)
    assert (first.calls["made"], first.calls["cached"]) == (2, 0)
    first_fp = json.loads((first.run_dir / "run_config.json").read_text())["backend"]["per_dimension"][
        "readability"]["fingerprints"]
    again = run_evaluation(cfg)
    assert (again.calls["made"], again.calls["cached"]) == (0, 2)

    weights = adapter / "adapter_model.safetensors"
    tensors = load_file(str(weights))
    save_file({k: v + 0.5 * torch.ones_like(v) for k, v in tensors.items()}, str(weights))  # "retrained"
    retrained = run_evaluation(cfg)
    assert (retrained.calls["made"], retrained.calls["cached"]) == (2, 0)

    described = json.loads((retrained.run_dir / "run_config.json").read_text())
    fingerprints = described["backend"]["per_dimension"]["readability"]["fingerprints"]
    assert fingerprints["adapter"]["files"] == ["adapter_config.json", "adapter_model.safetensors"]
    assert fingerprints["adapter"]["sha256"] != first_fp["adapter"]["sha256"]
    assert fingerprints["model"] == first_fp["model"] and fingerprints["tokenizer"] == first_fp["tokenizer"]
    from surveyalign.backends.fingerprint import adapter_fingerprint

    assert fingerprints["adapter"] == adapter_fingerprint(adapter)
    assert fingerprints["model"]["weights"] == "content"  # the tiny model is small enough to hash fully
    calls = [json.loads(line) for line in (retrained.run_dir / "calls.jsonl").read_text().splitlines()]
    assert len(calls) == 4 and len({c["key"] for c in calls}) == 4


def test_fingerprints_follow_content_and_large_weights_use_size_and_mtime(tmp_path):
    from surveyalign.backends.fingerprint import adapter_fingerprint, model_fingerprint

    adapter = tmp_path / "a"
    adapter.mkdir()
    (adapter / "adapter_config.json").write_text('{"r": 4}')
    (adapter / "adapter_model.safetensors").write_bytes(b"\x01" * 100)
    (adapter / "README.md").write_text("card")
    before = adapter_fingerprint(adapter)
    assert before["files"] == ["adapter_config.json", "adapter_model.safetensors"] and before["bytes"] == 108
    (adapter / "README.md").write_text("another card")  # not part of the identity
    assert adapter_fingerprint(adapter) == before
    (adapter / "adapter_model.safetensors").write_bytes(b"\x02" * 100)  # same size, other bytes
    assert adapter_fingerprint(adapter)["sha256"] != before["sha256"]
    assert adapter_fingerprint(tmp_path / "no-such-folder") == {"local": False}

    model = tmp_path / "m"
    model.mkdir()
    (model / "config.json").write_text('{"hidden_size": 64}')
    (model / "model.safetensors").write_bytes(b"\x00" * 1000)
    small = model_fingerprint(model)
    assert (small["weights"], small["weight_files"], small["weight_bytes"]) == ("content", 1, 1000)
    big = model_fingerprint(model, full_hash_max_bytes=10)  # above the cap: name + size + mtime only
    assert big["weights"] == "size+mtime" and big["sha256"] != small["sha256"]
    (model / "model.safetensors").write_bytes(b"\x07" * 1000)  # same size, new content and mtime
    os.utime(model / "model.safetensors", ns=(1, 1))
    assert model_fingerprint(model)["sha256"] != small["sha256"]
    assert model_fingerprint(model, full_hash_max_bytes=10)["sha256"] != big["sha256"]
    unchanged = model_fingerprint(model, full_hash_max_bytes=10)
    (model / "config.json").write_text('{"hidden_size": 128}')  # config bytes are always hashed
    assert model_fingerprint(model, full_hash_max_bytes=10)["sha256"] != unchanged["sha256"]


@pytest.mark.parametrize("field, value, config_fields, shown", [
    ("protocol", "v1.1", {}, ("protocol: trained with 'v1.1'", "uses 'v1.0'")),
    ("enable_thinking", True, {}, ("enable_thinking: trained with True", "uses False")),
    ("dimension", "criticalness", {}, ("dimension: trained with 'criticalness'", "uses 'readability'")),
])
def test_training_record_mismatch_is_refused_with_a_clear_error(tiny_model_dir, lora_adapter, dataset_dir,
                                                                  tmp_path, field, value, config_fields, shown):
    adapter = tmp_path / "adapter"
    shutil.copytree(lora_adapter, adapter)
    _record(adapter, **{field: value})
    with pytest.raises(TrainingMismatchError) as info:
        run_evaluation(_config(dataset_dir, tmp_path / "runs", tiny_model_dir, adapter, **config_fields))
    message = str(info.value)
    assert str(adapter) in message and "allow_training_mismatch: true" in message
    for fragment in shown:
        assert fragment in message
    assert not (tmp_path / "runs" / "adapter" / "calls.jsonl").exists()  # refused before any call


def test_use_knowledge_mismatch_only_counts_where_units_have_knowledge(tiny_model_dir, lora_adapter, dataset_dir,
                                                                      tmp_path, monkeypatch):
    """An adapter trained with knowledge text, evaluated without it on units that have some: refused.
    The same adapter on units without any knowledge text: the flag changes no prompt, so it runs."""
    from surveyalign.data import load_surveyreview
    from surveyalign.evaluation import units

    adapter = tmp_path / "adapter"
    shutil.copytree(lora_adapter, adapter)
    _record(adapter, use_knowledge=True)
    base = load_surveyreview(dataset_dir)
    with_ka = {name: base[name].add_column("knowledge", ["KA note"] * len(base[name])) for name in ("train", "test")}
    monkeypatch.setattr(units, "load_surveyreview", lambda path, dimension, split: with_ka[split])
    monkeypatch.setattr(units, "split_files", lambda path, split: None)  # through datasets
    with pytest.raises(TrainingMismatchError, match=r"use_knowledge: trained with True, this evaluation uses False "
                                                    r"\(config key: knowledge_dimensions\)"):
        run_evaluation(_config(dataset_dir, tmp_path / "runs", tiny_model_dir, adapter, knowledge_dimensions=[]))
    monkeypatch.setattr(units, "load_surveyreview", lambda path, dimension, split: base[split])
    monkeypatch.setattr(units, "split_files", lambda path, split: None)  # through datasets
    result = run_evaluation(_config(dataset_dir, tmp_path / "runs", tiny_model_dir, adapter, knowledge_dimensions=[],
                                    limit=1))
    entry = json.loads((result.run_dir / "run_config.json").read_text())["training_records"]["readability"]
    assert entry["mismatches"] == [] and entry["use_knowledge_checked"] is False


def test_allow_training_mismatch_runs_and_records_it(tiny_model_dir, lora_adapter, dataset_dir, tmp_path, capsys):
    adapter = tmp_path / "adapter"
    shutil.copytree(lora_adapter, adapter)
    _record(adapter, protocol="v1.1", data_version="2026.1")
    result = run_evaluation(_config(dataset_dir, tmp_path / "runs", tiny_model_dir, adapter, limit=1,
                                    allow_training_mismatch=True))
    assert result.calls["made"] == 1
    assert "allow_training_mismatch: evaluating despite" in capsys.readouterr().out
    cfg = json.loads((result.run_dir / "run_config.json").read_text())
    assert cfg["allow_training_mismatch"] is True and cfg["config"]["allow_training_mismatch"] is True
    entry = cfg["training_records"]["readability"]
    assert entry["adapter"] == str(adapter)
    assert entry["mismatches"] == [{"field": "protocol", "adapter": "v1.1", "evaluation": "v1.0"}]
    assert entry["record"] == {"stage": "sft", "dimension": "readability", "protocol": "v1.1",
                               "enable_thinking": False, "use_knowledge": False, "base_model": "tiny",
                               "data_hash": "ab" * 32, "data_version": "2026.1", "n_train": 20}


def test_matching_record_is_summarised_and_no_record_is_noted(tiny_model_dir, lora_adapter, dataset_dir, tmp_path):
    adapter = tmp_path / "adapter"
    shutil.copytree(lora_adapter, adapter)
    plain = run_evaluation(_config(dataset_dir, tmp_path / "runs", tiny_model_dir, adapter, limit=1))
    entry = json.loads((plain.run_dir / "run_config.json").read_text())["training_records"]["readability"]
    assert entry == {"adapter": str(adapter), "record": None, "mismatches": [], "use_knowledge_checked": False}
    _record(adapter)
    matched = run_evaluation(_config(dataset_dir, tmp_path / "runs", tiny_model_dir, adapter, limit=1))
    entry = json.loads((matched.run_dir / "run_config.json").read_text())["training_records"]["readability"]
    assert entry["mismatches"] == [] and entry["record"]["protocol"] == "v1.0"
    assert matched.calls["cached"] == 1  # the record file is not part of the adapter's identity

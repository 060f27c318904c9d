"""Adapters that must fail loudly (issue 11) and quantised bases (issue 16): the recorded base identity is checked
at load, every adapter tensor must attach, and a QLoRA adapter gets its 4-bit base by default. Real PEFT adapters
on tiny Qwen3 models built here."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from surveyalign.backends import load_backend
from surveyalign.cli import main
from surveyalign.evaluation import EvalConfig, run_evaluation
from surveyalign.models import (
    BaseMismatchError,
    base_identity,
    check_adapter_attached,
    compare_base,
    write_training_record,
)
from surveyalign.testing import TinyModelSpec, build_tiny_model

SEVEN = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


def _adapter(base: Path, out: Path, *, record: dict | None) -> Path:
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    torch.manual_seed(0)
    model = get_peft_model(AutoModelForCausalLM.from_pretrained(base), LoraConfig(r=8, lora_alpha=16,
                                                                                 target_modules=SEVEN))
    with torch.no_grad():
        for name, param in model.named_parameters():
            if "lora_B" in name:
                param.normal_(0, 0.02)  # a trained adapter: B is no longer zero
    model.save_pretrained(out)
    if record is not None:
        write_training_record(out, {"stage": "sft", "dimension": "readability", "protocol": "v1.0",
                                    "enable_thinking": False, "use_knowledge": False, **record})
    return out


@pytest.fixture(scope="module")
def bases(tmp_path_factory, tiny_model_dir) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("bases")
    other = build_tiny_model(root / "other", TinyModelSpec(seed=1))  # same architecture, other weights
    shallow = build_tiny_model(root / "shallow", TinyModelSpec(num_hidden_layers=1))
    copy = root / "copy"
    shutil.copytree(tiny_model_dir, copy)
    return {"base": Path(tiny_model_dir), "other": other, "shallow": shallow, "copy": copy}


@pytest.fixture(scope="module")
def adapter(bases, tmp_path_factory) -> Path:
    return _adapter(bases["base"], tmp_path_factory.mktemp("adapter") / "sft-readability",
                    record={"base": base_identity(bases["base"]), "quantization": None})


def test_base_identity_survives_a_copy_and_tells_checkpoints_apart(bases):
    ident = base_identity(bases["base"])
    assert len(ident["fingerprint"]) == 64 and ident["fingerprint_of"] == "content"
    assert base_identity(bases["copy"])["fingerprint"] == ident["fingerprint"]  # moved / copied: same base
    assert compare_base(ident, base_identity(bases["copy"])) == []
    other = compare_base(ident, base_identity(bases["other"]))
    assert len(other) == 1 and other[0].startswith("fingerprint: trained on ")
    hub = base_identity("Qwen/Qwen3-32B", revision="abc123")
    assert (hub["fingerprint"], hub["revision"]) == (None, "abc123")
    assert compare_base({"name": "Qwen/Qwen3-32B", "revision": "abc123"}, {**hub, "revision": "def456"}) == [
        "revision: trained on 'abc123', loading 'def456'"]


def test_adapter_loads_on_its_base_and_on_a_copy(bases, adapter):
    for name in ("base", "copy"):
        backend = load_backend("transformers", model=str(bases[name]), adapter=str(adapter), device="cpu")
        assert "base_mismatch" not in backend.describe()
        backend.close()


def test_other_base_is_refused_and_the_override_is_recorded(bases, adapter, dataset_dir, tmp_path, capsys):
    with pytest.raises(BaseMismatchError, match="was trained on another base than the one being loaded"):
        load_backend("transformers", model=str(bases["other"]), adapter=str(adapter), device="cpu")
    # serve stops before listening, with the reason on one line
    assert main(["serve", "--model", str(bases["other"]), "--adapter", str(adapter)]) == 2
    assert "trained on another base" in capsys.readouterr().err
    # evaluation with the explicit flag records the mismatch in run_config
    cfg = EvalConfig.from_dict({
        "name": "mismatch", "dataset": str(dataset_dir), "output_dir": str(tmp_path), "progress": False,
        "bootstrap": 0, "limit": 1, "dimensions": ["readability"], "generation": {"max_new_tokens": 2},
        "backend": {"kind": "transformers", "options": {"model": str(bases["other"]), "adapter": str(adapter),
                                                        "device": "cpu", "allow_base_mismatch": True}}})
    result = run_evaluation(cfg)
    run_config = json.loads((result.run_dir / "run_config.json").read_text())
    recorded = run_config["backend"]["per_dimension"]["readability"]["base_mismatch"]
    assert len(recorded) == 1 and recorded[0].startswith("fingerprint: trained on")


def test_every_adapter_tensor_must_attach(bases, adapter, tmp_path):
    unrecorded = tmp_path / "no-record"
    shutil.copytree(adapter, unrecorded)
    (unrecorded / "surveyalign_training.json").unlink()
    # a one-layer base: PEFT only warns about the second layer's 14 tensors; we stop
    with pytest.raises(RuntimeError, match=r"14 of 28 adapter tensors are not attached to a module"):
        load_backend("transformers", model=str(bases["shallow"]), adapter=str(unrecorded), device="cpu")
    # the check itself on a PEFT model whose weights differ from the file
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    model = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(bases["base"]), str(adapter))
    assert check_adapter_attached(model, adapter) == 28
    for name, param in model.named_parameters():
        if name.endswith("layers.0.self_attn.q_proj.lora_B.default.weight"):
            param.data.zero_()
    with pytest.raises(RuntimeError, match="1 of 28 adapter tensors"):
        check_adapter_attached(model, adapter)


def test_qlora_adapter_gets_its_4bit_base_by_default(bases, tmp_path):
    record = {"method": "bitsandbytes", "bits": 4, "quant_type": "nf4", "double_quant": True,
              "compute_dtype": "float32", "storage_dtype": "uint8"}
    qlora = _adapter(bases["base"], tmp_path / "qlora", record={"base": base_identity(bases["base"]),
                                                                "quantization": record})
    backend = load_backend("transformers", model=str(bases["base"]), adapter=str(qlora), device="cpu")
    import bitsandbytes as bnb

    q_proj = backend.model.base_model.model.model.layers[0].self_attn.q_proj.base_layer
    assert isinstance(q_proj, bnb.nn.Linear4bit)
    described = backend.describe()
    assert described["quantization"] == record and described["merge_adapter"] is False
    assert backend.generate([[{"role": "user", "content": "hi"}]])[0][0].error is None
    backend.close()
    with pytest.raises(BaseMismatchError, match="quantization: trained on a 4-bit nf4 base, loading it in full "
                                                "precision"):
        load_backend("transformers", model=str(bases["base"]), adapter=str(qlora), device="cpu",
                     quantization="none")
    forced = load_backend("transformers", model=str(bases["base"]), adapter=str(qlora), device="cpu",
                          quantization="none", allow_base_mismatch=True)
    expected = "quantization: trained on a 4-bit nf4 base, loading it in full precision"
    assert forced.describe()["base_mismatch"] == [expected]
    forced.close()


def test_plain_model_loads_in_4bit_and_8bit(bases):
    import bitsandbytes as bnb

    for option, kind in (("4bit", bnb.nn.Linear4bit), ("8bit", bnb.nn.Linear8bitLt)):
        backend = load_backend("transformers", model=str(bases["base"]), device="cpu", quantization=option)
        assert isinstance(backend.model.model.layers[0].mlp.down_proj, kind)
        assert backend.describe()["quantization"]["bits"] == int(option[0])
        backend.close()

"""QLoRA (issue 16): the shipped configs keep App. D's LoRA settings and state each deviation; the memory plan
matches a hand computation for the paper config and a QLoRA config."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from surveyalign.cli import main
from surveyalign.training import parse_recipe_yaml
from surveyalign.training.plan import plan_from_config

REPO = Path(__file__).resolve().parents[1]
QLORA_YAMLS = sorted(p.relative_to(REPO).as_posix() for folder in ("configs/sft", "configs/dpo")
                     for p in (REPO / folder).glob("qlora-*.yaml"))
SEVEN = {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}
#: What a QLoRA config may change from its paper config; every change is named in its header.
QLORA_MAY_CHANGE = {"dtype", "load_in_4bit", "bnb_4bit_quant_type", "use_bnb_nested_quant", "bnb_4bit_quant_storage",
                    "optim", "gradient_accumulation_steps", "fp16", "bf16", "output_dir", "run_name", "pairs_path",
                    "sft_adapter"}


def _paper(rel: str) -> Path:
    name = Path(rel).name.removeprefix("qlora-").removeprefix("zero3-")
    return REPO / Path(rel).parent / name


def test_every_dimension_and_dpo_have_a_qlora_config():
    names = {Path(p).name for p in QLORA_YAMLS}
    assert {f"qlora-{d}.yaml" for d in ("readability", "structure", "comprehensiveness", "criticalness")} <= names
    assert "qlora-criticalness.yaml" in {Path(p).name for p in QLORA_YAMLS if p.startswith("configs/dpo/")}
    assert "qlora-zero3-readability.yaml" in names


@pytest.mark.parametrize("rel", QLORA_YAMLS)
def test_qlora_yaml_is_app_d_lora_in_4bit_and_states_its_deviations(rel):
    script, train, model = parse_recipe_yaml(REPO / rel, check_device=False)
    paper_script, paper_train, _ = parse_recipe_yaml(_paper(rel), check_device=False)
    # App. D LoRA, schedule and length unchanged
    assert (model.lora_r, model.lora_alpha, model.lora_dropout, set(model.lora_target_modules)) == (8, 16, 0.0, SEVEN)
    for field in ("learning_rate", "lr_scheduler_type", "warmup_steps", "num_train_epochs", "max_length",
                  "per_device_train_batch_size", "activation_checkpointing", "seed"):
        assert getattr(train, field) == getattr(paper_train, field), field
    assert script.dimension == paper_script.dimension and model.attn_implementation == "flash_attention_2"
    # QLoRA: 4-bit NF4, double quantisation, bf16 compute, gradient checkpointing
    assert (model.load_in_4bit, model.bnb_4bit_quant_type, model.use_bnb_nested_quant) == (True, "nf4", True)
    assert (model.dtype, train.bf16, train.fp16, train.activation_checkpointing) == ("bfloat16", True, False, True)
    if "zero3" in rel:  # DeepSpeed shards the 4-bit weights stored in bf16 tensors; App. D's 8 x 16 batch
        assert model.bnb_4bit_quant_storage == "bfloat16" and train.gradient_accumulation_steps == 16
    else:  # one GPU: paged 8-bit optimizer, the global batch of 8 GPUs x 16
        assert train.optim.value == "paged_adamw_8bit" and train.gradient_accumulation_steps == 128
    # every changed key is allowed and named in a "# - " deviation line of the header
    mine, theirs = (yaml.safe_load(p.read_text()) for p in (REPO / rel, _paper(rel)))
    changed = {k for k in set(mine) | set(theirs) if mine.get(k, "<absent>") != theirs.get(k, "<absent>")}
    assert changed <= QLORA_MAY_CHANGE, sorted(changed - QLORA_MAY_CHANGE)
    header = " ".join(line for line in (REPO / rel).read_text().splitlines() if line.startswith("#"))
    assert "Deviations from App. D" in header
    for key in changed:
        assert key in header, key


# ---------------------------------------------------------------------------------------------- train plan

#: Qwen3-32B's architecture (config.json of the released model).
Q32 = {"vocab_size": 151936, "hidden_size": 5120, "intermediate_size": 25600, "num_hidden_layers": 64,
       "num_attention_heads": 64, "num_key_value_heads": 8, "head_dim": 128, "tie_word_embeddings": False}


@pytest.fixture(scope="module")
def qwen3_32b_config(tmp_path_factory) -> Path:
    from transformers import Qwen3Config

    out = tmp_path_factory.mktemp("qwen3-32b-config")
    Qwen3Config(**Q32, max_position_embeddings=40960).save_pretrained(out)  # config only, no weights
    return out


def _hand_counts() -> tuple[int, int, int]:
    """N (parameters), N_q (in quantised linear layers), P (LoRA r=8 on the seven projections), by hand."""
    V, H, I, L = Q32["vocab_size"], Q32["hidden_size"], Q32["intermediate_size"], Q32["num_hidden_layers"]
    a, kv, d, r = Q32["num_attention_heads"], Q32["num_key_value_heads"], Q32["head_dim"], 8
    linear = H * a * d + 2 * H * kv * d + a * d * H + 3 * H * I  # q, k, v, o, gate, up, down
    per_layer = linear + 2 * d + 2 * H  # + q_norm, k_norm, two RMSNorms
    # embeddings + untied output head + layers + final norm + the rotary buffers (inv_freq and original_inv_freq,
    # d/2 fp32 values each), which accelerate's estimator counts with the parameters
    n = 2 * V * H + L * per_layer + H + d
    lora = r * L * (2 * (H + a * d) + 2 * (H + kv * d) + 3 * (H + I))
    return n, L * linear, lora


def test_plan_of_the_paper_config_matches_a_hand_computation(qwen3_32b_config):
    n, _, lora = _hand_counts()
    assert n == 32_762_123_392 and lora == 67_108_864  # Qwen3-32B: 32.8B parameters; r=8 LoRA: 67.1M
    plan = plan_from_config(REPO / "configs/sft/readability.yaml", model=str(qwen3_32b_config),
                            accelerate_config=str(REPO / "configs/accelerate/zero3.yaml"))
    assert (plan.n_params, plan.n_lora, plan.world_size, plan.zero_stage) == (n, lora, 8, 3)
    S, H, L, V = 16384, Q32["hidden_size"], Q32["num_hidden_layers"], Q32["vocab_size"]
    assert plan.weights_bytes == pytest.approx(2 * n / 8)  # fp16, sharded over 8 GPUs
    assert plan.lora_bytes == pytest.approx((4 + 4 + 8) * lora / 8)  # fp32 weights, gradients, AdamW moments
    assert plan.activation_bytes == pytest.approx(L * S * H * 2 + 34 * S * H)  # gradient checkpointing
    assert plan.logits_bytes == pytest.approx(S * V * 6)
    assert plan.total_bytes / 2**30 == pytest.approx(34.32, abs=0.01)


def test_plan_of_a_qlora_config_matches_a_hand_computation(qwen3_32b_config):
    n, n_q, lora = _hand_counts()
    plan = plan_from_config(REPO / "configs/sft/qlora-readability.yaml", model=str(qwen3_32b_config))
    assert (plan.quantization, plan.world_size, plan.zero_stage, plan.n_quantized) == ("4bit-nf4-double", 1, 0, n_q)
    per_weight = 0.5 + 1 / 64 + 4 / (64 * 256)  # NF4 + 8-bit absmax per 64 + fp32 per 256 blocks
    assert plan.weights_bytes == pytest.approx(per_weight * n_q + 2 * (n - n_q))
    assert plan.lora_bytes == pytest.approx((4 + 4 + 2) * lora)  # paged 8-bit AdamW: 2 bytes of states
    assert plan.weights_bytes / 2**30 == pytest.approx(17.89, abs=0.01)
    assert plan.total_bytes < 48 * 2**30  # fits one 48 GiB GPU by this estimate; the paper config needs 8


def test_train_plan_json_stays_json_when_a_library_prints_at_import(qwen3_32b_config, tmp_path):
    # transformers prints "[INFO] Running in WANDB offline mode" on stdout when imported with WANDB_MODE=offline
    import json
    import os
    import subprocess
    import sys

    env = {**os.environ, "WANDB_MODE": "offline", "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    proc = subprocess.run([sys.executable, "-m", "surveyalign", "train", "plan", "--config",
                           "configs/sft/readability.yaml", "--model", str(qwen3_32b_config), "--json"],
                          capture_output=True, text=True, env=env, cwd=Path(__file__).resolve().parents[1],
                          timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    n, _, _ = _hand_counts()
    assert json.loads(proc.stdout)["n_params"] == n
    assert "Running in WANDB offline mode" in proc.stderr


def test_train_plan_cli_prints_the_parts(qwen3_32b_config, capsys):
    assert main(["train", "plan", "--config", "configs/dpo/qlora-criticalness.yaml", "--model",
                 str(qwen3_32b_config), "--json"]) == 0
    import json

    plan = json.loads(capsys.readouterr().out)
    _, _, lora = _hand_counts()
    # DPO: chosen + rejected through the model, the frozen reference adapter's fp32 weights on top
    assert plan["lora_bytes"] == pytest.approx((4 + 4 + 4 + 2) * lora)
    assert plan["logits_bytes"] == pytest.approx(2 * 16384 * Q32["vocab_size"] * 6)
    assert main(["train", "plan", "--config", "configs/sft/qlora-readability.yaml", "--model",
                 str(qwen3_32b_config)]) == 0
    out = capsys.readouterr().out
    assert "weights" in out and "17.89" in out and "total" in out
    n, _, _ = _hand_counts()
    assert main(["train", "plan", "--config", "configs/sft/readability.yaml", "--model", str(qwen3_32b_config)]) == 0
    out = " ".join(capsys.readouterr().out.split())  # rich may wrap the table's cells
    assert f"{n / 1e9:.2f}B in 16 bits, none quantised" in out and "quantised of" not in out

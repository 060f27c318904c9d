"""Slow training checks (``make test`` skips them): DeepSpeed ZeRO-3 on CPU in 1 and 2 processes, DPO under
ZeRO-3, wandb in offline mode, and ``surveyalign train dpo-pairs`` sampling from a real adapter.

ZeRO-3 can save a 40-byte adapter without tensors (trl issue 4416); every run here reloads the saved adapter and
checks rank-8, non-zero LoRA tensors on all seven projections. First ZeRO-3 run JIT-compiles a DeepSpeed op.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from test_training import ACCELERATE_1, REPO, check_adapter, lora_b_bound, run_recipe

pytestmark = pytest.mark.slow

ZERO3_CPU = [sys.executable, "-m", "accelerate.commands.launch", "--config_file", "configs/accelerate/zero3-cpu.yaml"]
TORCHRUN_2 = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_port", "29637"]


def _sft(launcher, tiny_model_dir, dataset_dir, out: Path, *extra: str) -> list[dict]:
    run_recipe([*launcher, "recipes/sft.py", "--config", "configs/sft/tiny-readability.yaml",
                "--model_name_or_path", str(tiny_model_dir), "--dataset_path", str(dataset_dir),
                "--output_dir", str(out), *extra], out.parent / f"{out.name}.log", timeout=900)
    return [e for e in json.loads((out / "trainer_state.json").read_text())["log_history"] if "loss" in e]


@pytest.fixture(scope="module")
def plain_sft(tmp_path_factory, tiny_model_dir, dataset_dir):
    out = tmp_path_factory.mktemp("plain") / "adapter"
    return out, _sft(ACCELERATE_1, tiny_model_dir, dataset_dir, out)


def test_zero3_one_process_saves_the_same_adapter_as_plain_training(plain_sft, tiny_model_dir, dataset_dir,
                                                                    tmp_path):
    import torch
    from safetensors.torch import load_file

    from surveyalign.models import read_training_record

    out = tmp_path / "zero3"
    log = _sft(ZERO3_CPU, tiny_model_dir, dataset_dir, out)
    report = check_adapter(out, tiny_model_dir)
    assert report.n_bytes > 10_000  # not the 40-byte empty file of trl issue 4416
    assert read_training_record(out)["hyperparameters"]["deepspeed"] is True
    plain_dir, plain_log = plain_sft
    assert [e["loss"] for e in log] == pytest.approx([e["loss"] for e in plain_log], abs=1e-3)
    plain, sharded = load_file(plain_dir / "adapter_model.safetensors"), load_file(out / "adapter_model.safetensors")
    assert plain.keys() == sharded.keys()
    for key in plain:
        torch.testing.assert_close(sharded[key], plain[key], atol=1e-6, rtol=0)  # B entries are ~7.5e-5


def test_zero3_two_processes_via_torchrun(tiny_model_dir, dataset_dir, tmp_path):
    """The trl-4416 setting: every LoRA tensor partitioned over 2 ranks, no 16-bit gather configured for saving."""
    from safetensors.torch import load_file

    from surveyalign.models import read_training_record

    ds_config = json.loads((REPO / "configs/accelerate/ds_zero3.json").read_text())
    ds_config["zero_optimization"]["stage3_param_persistence_threshold"] = 0  # tiny LoRA tensors would stay whole
    ds_config["zero_optimization"]["stage3_gather_16bit_weights_on_model_save"] = False
    ds_path = tmp_path / "ds_zero3_partitioned.json"
    ds_path.write_text(json.dumps(ds_config))
    out = tmp_path / "zero3-2"
    log = _sft(TORCHRUN_2, tiny_model_dir, dataset_dir, out, "--deepspeed", str(ds_path))
    report = check_adapter(out, tiny_model_dir)
    assert report.n_bytes > 10_000
    record = read_training_record(out)
    assert record["hyperparameters"]["world_size"] == 2 and record["hyperparameters"]["deepspeed"] is True
    assert [e["step"] for e in log] == [1, 2]
    # lora_B starts at 0; Adam moves each entry by lr_1 = 5e-5 at step 1 and at most lr_2 = 2.5e-5 more at step 2
    # (cosine, max_steps 2); the adapter saved is the best checkpoint by eval loss (test_training.lora_b_bound).
    # The largest entries move by about that much: the saved tensors are the trained ones, not the 40-byte file
    low, high = lora_b_bound(record["best_checkpoint"])
    largest = [float(t.abs().max()) for k, t in load_file(out / "adapter_model.safetensors").items() if "lora_B" in k]
    assert len(largest) == 14 and all(low < v <= high for v in largest)


def test_zero3_dpo_from_the_sft_adapter(plain_sft, tiny_model_dir, dataset_dir, tmp_path):
    from surveyalign.backends import load_backend
    from surveyalign.training import make_dpo_pairs

    sft_dir, _ = plain_sft
    record_path = sft_dir / "surveyalign_training.json"
    record = json.loads(record_path.read_text())
    pairs = tmp_path / "pairs.jsonl"
    sampler = load_backend("scripted", replies=lambda m, s, i: "Deep.$$$2$$$" if i else "Shallow.$$$-1$$$")
    summary = make_dpo_pairs(str(dataset_dir), str(sft_dir), pairs, k=2, limit=4, sampler=sampler,
                             max_new_tokens=64, max_length=2048)
    assert summary.n_paired == 4 and record["dimension"] == "readability"
    out = tmp_path / "dpo"
    run_recipe([*ZERO3_CPU, "recipes/dpo.py", "--config", "configs/dpo/tiny-criticalness.yaml",
                "--dimension", "readability", "--sft_adapter", str(sft_dir), "--pairs_path", str(pairs),
                "--output_dir", str(out)], tmp_path / "dpo.log", timeout=900)
    report = check_adapter(out, tiny_model_dir)
    assert report.n_bytes > 10_000 and not (out / "ref").exists()
    log = [e for e in json.loads((out / "trainer_state.json").read_text())["log_history"] if "loss" in e]
    assert log[0]["rewards/margins"] == 0.0 and log[0]["loss"] == pytest.approx(0.6931472, abs=1e-6)


def test_zero3_dpo_two_processes_via_torchrun(plain_sft, tiny_model_dir, dataset_dir, tmp_path):
    """DPO from the SFT adapter on 2 ranks, every LoRA tensor partitioned, no 16-bit gather on save (trl 4416)."""
    from surveyalign.backends import load_backend
    from surveyalign.models import read_training_record
    from surveyalign.training import make_dpo_pairs

    sft_dir, _ = plain_sft
    pairs = tmp_path / "pairs.jsonl"
    sampler = load_backend("scripted", replies=lambda m, s, i: "Deep.$$$2$$$" if i else "Shallow.$$$-1$$$")
    assert make_dpo_pairs(str(dataset_dir), str(sft_dir), pairs, k=2, limit=4, sampler=sampler, max_new_tokens=64,
                          max_length=2048).n_paired == 4
    ds_config = json.loads((REPO / "configs/accelerate/ds_zero3.json").read_text())
    ds_config["zero_optimization"]["stage3_param_persistence_threshold"] = 0
    ds_config["zero_optimization"]["stage3_gather_16bit_weights_on_model_save"] = False
    ds_path = tmp_path / "ds_zero3_partitioned.json"
    ds_path.write_text(json.dumps(ds_config))
    out = tmp_path / "dpo-2"
    run_recipe([*TORCHRUN_2, "recipes/dpo.py", "--config", "configs/dpo/tiny-criticalness.yaml",
                "--dimension", "readability", "--sft_adapter", str(sft_dir), "--pairs_path", str(pairs),
                "--output_dir", str(out), "--deepspeed", str(ds_path)], tmp_path / "dpo-2.log", timeout=900)
    report = check_adapter(out, tiny_model_dir)
    assert report.n_bytes > 10_000 and not (out / "ref").exists()
    record = read_training_record(out)
    assert record["hyperparameters"]["world_size"] == 2 and record["hyperparameters"]["deepspeed"] is True
    assert record["reference_check"]["n_tensors_checked"] == 28  # the frozen SFT copy, checked on each rank
    log = [e for e in json.loads((out / "trainer_state.json").read_text())["log_history"] if "loss" in e]
    # 4 pairs over 2 ranks: each step averages both ranks; step 1 precedes any update, so policy = reference
    assert [e["step"] for e in log] == [1, 2]
    assert log[0]["rewards/margins"] == 0.0 and log[0]["loss"] == pytest.approx(0.6931472, abs=1e-6)
    assert log[1]["rewards/margins"] != 0.0


def test_wandb_offline_run_is_written(tiny_model_dir, dataset_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_DIR", str(tmp_path))
    out = tmp_path / "wandb-sft"
    _sft(ACCELERATE_1, tiny_model_dir, dataset_dir, out, "--report_to", "wandb", "--run_name", "tiny-wandb",
         "--max_steps", "1")
    runs = list((tmp_path / "wandb").glob("offline-run-*"))
    assert len(runs) == 1 and any(runs[0].glob("*.wandb"))
    check_adapter(out, tiny_model_dir)


def test_dpo_pairs_cli_samples_from_the_adapter(plain_sft, dataset_dir, tmp_path):
    import subprocess

    sft_dir, _ = plain_sft
    out = tmp_path / "pairs.jsonl"
    cmd = [sys.executable, "-m", "surveyalign.cli", "train", "dpo-pairs", "--adapter", str(sft_dir), "--dataset",
           str(dataset_dir), "--out", str(out), "--k", "2", "--limit", "2", "--max-new-tokens", "8",
           "--max-length", "2048", "--device", "cpu", "--temperature", "1.0"]
    proc = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=600)
    # no unit got a pair (see below): no usable result, so exit 3 with the records kept (issue 21 B)
    assert proc.returncode == 3, proc.stderr[-3000:]
    assert "no unit got a pair (2 recorded without one" in proc.stderr
    from surveyalign.data import load_surveyreview

    records = [json.loads(line) for line in out.read_text().splitlines()]
    first_two = load_surveyreview(dataset_dir, "readability", split="train")["unit_id"][:2]
    assert [r["unit_id"] for r in records] == first_two
    for record in records:
        assert len(record["sft_sample_scores"]) == 2 and record["sampling"]["k"] == 2
        assert record["dimension"] == "readability" and record["chat_template_kwargs"] == {"enable_thinking": False}
        # the 2-step tiny adapter writes no valid score marker in 8 tokens: the unit is kept, without a pair
        assert record["status"] == "no_pair" and "differs from gold" in record["reason"]
    summary = json.loads(Path(f"{out}.summary.json").read_text())
    assert (summary["n_units"], summary["n_no_pair"], summary["n_paired"]) == (2, 2, 0)


def test_push_to_hub_flag_reaches_the_hub_after_the_card_is_written(tiny_model_dir, dataset_dir, tmp_path):
    import os
    import subprocess

    out = tmp_path / "push"
    cmd = [*ACCELERATE_1, "recipes/sft.py", "--config", "configs/sft/tiny-readability.yaml", "--model_name_or_path",
           str(tiny_model_dir), "--dataset_path", str(dataset_dir), "--output_dir", str(out), "--max_steps", "1",
           "--push_to_hub", "true", "--hub_model_id", "someone/surveyalign-tiny-readability"]
    env = dict(os.environ, HF_HUB_OFFLINE="1", WANDB_MODE="offline")
    proc = subprocess.run(cmd, check=False, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    # no network here: the adapter, record and card are written, then the Hub refuses the repository creation
    assert proc.returncode != 0
    assert "api/repos/create" in proc.stdout + proc.stderr and "OfflineModeIsEnabled" in proc.stdout + proc.stderr
    assert "adapter saved to" in proc.stdout
    assert (out / "README.md").read_text().startswith("---\nlibrary_name: peft\n")
    assert (out / "surveyalign_training.json").exists() and (out / "adapter_model.safetensors").exists()

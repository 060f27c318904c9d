"""QLoRA end to end on CPU (issue 16) and the recipes' loud failures (issue 11): real recipes under accelerate on
the tiny Qwen3 in 4-bit (bitsandbytes), their records, evaluation of the QLoRA adapter, usage and one-line errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from surveyalign.models import base_identity

REPO = Path(__file__).resolve().parents[1]
ACCELERATE_1 = [sys.executable, "-m", "accelerate.commands.launch", "--num_processes", "1", "--num_machines", "1",
                "--mixed_precision", "no", "--dynamo_backend", "no"]
FOUR_BIT = ["--load_in_4bit", "true", "--bnb_4bit_quant_type", "nf4", "--use_bnb_nested_quant", "true"]
RECORDED = {"method": "bitsandbytes", "bits": 4, "quant_type": "nf4", "double_quant": True,
            "compute_dtype": "float32", "storage_dtype": "uint8"}


def _run(cmd: list[str], log: Path, *, ok: bool = True) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONUNBUFFERED="1", HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", WANDB_MODE="offline",
               TOKENIZERS_PARALLELISM="false")
    env.pop("SURVEYALIGN_TRACEBACK", None)
    proc = subprocess.run(cmd, check=False, cwd=REPO, env=env, capture_output=True, text=True, timeout=900)
    log.write_text(proc.stdout + proc.stderr)
    if ok and proc.returncode != 0:
        pytest.fail(f"{' '.join(cmd)} failed ({proc.returncode}):\n{(proc.stdout + proc.stderr)[-4000:]}")
    return proc


@pytest.fixture(scope="module")
def qlora_sft(tmp_path_factory, tiny_model_dir, ka_dataset_dir) -> Path:
    """A Criticalness SFT adapter trained on the tiny model loaded in 4-bit NF4 (2 steps, CPU)."""
    out = tmp_path_factory.mktemp("qlora-sft") / "adapter"
    _run([*ACCELERATE_1, "recipes/sft.py", "--config", "configs/sft/tiny-criticalness.yaml", "--model_name_or_path",
          str(tiny_model_dir), "--dataset_path", str(ka_dataset_dir), "--output_dir", str(out), *FOUR_BIT],
         out.parent / "sft.log")
    return out


def test_qlora_sft_saves_a_full_adapter_whose_record_carries_the_quantisation(qlora_sft, tiny_model_dir):
    from surveyalign.models import read_training_record
    from surveyalign.training import inspect_adapter

    record = read_training_record(qlora_sft)
    assert record["quantization"] == RECORDED
    assert record["base"]["fingerprint"] == base_identity(tiny_model_dir)["fingerprint"]
    report = inspect_adapter(qlora_sft)
    assert report.n_tensors == 28 and report.n_nonzero_b == 14  # seven projections x two layers, all trained
    assert "4-bit NF4 (bitsandbytes, double quantisation" in (qlora_sft / "README.md").read_text()
    # training output: log lines in the file, rates over this run's 2 steps
    logged = [json.loads(line) for line in (qlora_sft / "training_log.jsonl").read_text().splitlines()]
    assert [e["step"] for e in logged if "loss" in e] == [1, 2]
    assert record["metrics"]["train_steps_this_run"] == 2


def test_evaluation_loads_the_qlora_base_in_4bit_and_refuses_full_precision(qlora_sft, tiny_model_dir,
                                                                           ka_dataset_dir, tmp_path, capsys):
    from surveyalign.cli import main
    from surveyalign.evaluation import EvalConfig, run_evaluation

    def config(**options) -> EvalConfig:
        return EvalConfig.from_dict({
            "name": "qlora", "dataset": str(ka_dataset_dir), "output_dir": str(tmp_path), "progress": False,
            "bootstrap": 0, "limit": 1, "dimensions": ["criticalness"], "generation": {"max_new_tokens": 2},
            "knowledge_dimensions": ["criticalness"],
            "backend": {"kind": "transformers", "options": {"model": str(tiny_model_dir), "adapter": str(qlora_sft),
                                                            "device": "cpu", **options}}})

    result = run_evaluation(config())
    judge = json.loads((result.run_dir / "run_config.json").read_text())["backend"]["per_dimension"]["criticalness"]
    assert judge["quantization"] == RECORDED and "base_mismatch" not in judge
    with pytest.raises(ValueError, match="trained on a 4-bit nf4 base, loading it in full precision"):
        run_evaluation(config(quantization="none").model_copy(update={"run_name": "fp"}))
    forced = run_evaluation(config(quantization="none", allow_base_mismatch=True).model_copy(
        update={"run_name": "forced"}))
    judge = json.loads((forced.run_dir / "run_config.json").read_text())["backend"]["per_dimension"]["criticalness"]
    assert judge["base_mismatch"] == ["quantization: trained on a 4-bit nf4 base, loading it in full precision"]
    assert "quantization" not in judge
    # the CLI: the flag without the override is a one-line error, exit 2
    import yaml

    path = tmp_path / "qlora.yaml"
    path.write_text(yaml.safe_dump(config().model_dump(mode="json")))
    assert main(["evaluate", "--config", str(path), "--quantization", "none", "--run-name", "cli"]) == 2
    assert "trained on another base" in capsys.readouterr().err


def test_qlora_dpo_on_the_qlora_sft_adapter(qlora_sft, tiny_model_dir, ka_dataset_dir, tmp_path):
    from surveyalign.backends import load_backend
    from surveyalign.models import read_training_record
    from surveyalign.training import (
        inspect_adapter,
        make_dpo_pairs,
    )

    sampler = load_backend("scripted", replies=lambda m, s, i: "Deep synthesis.$$$2$$$" if i else "Shallow.$$$-1$$$")
    pairs = tmp_path / "pairs.jsonl"
    assert make_dpo_pairs(str(ka_dataset_dir), str(qlora_sft), pairs, k=2, limit=4, max_new_tokens=64, max_length=2048,
                          sampler=sampler).n_paired == 4
    out = tmp_path / "dpo"
    _run([*ACCELERATE_1, "recipes/dpo.py", "--config", "configs/dpo/tiny-criticalness.yaml", "--sft_adapter",
          str(qlora_sft), "--pairs_path", str(pairs), "--output_dir", str(out), *FOUR_BIT], tmp_path / "dpo.log")
    record = read_training_record(out)
    assert record["quantization"] == RECORDED and record["stage"] == "dpo"
    assert record["base"]["fingerprint"] == base_identity(tiny_model_dir)["fingerprint"]
    assert inspect_adapter(out).n_tensors == 28
    # the same DPO without the 4-bit flags would train the SFT adapter on another base: one line, exit 2
    proc = _run([sys.executable, "-m", "surveyalign", "train", "dpo", "--config", "configs/dpo/tiny-criticalness.yaml",
                 "--", "--sft_adapter", str(qlora_sft), "--pairs_path", str(pairs), "--output_dir",
                 str(tmp_path / "dpo-fp")], tmp_path / "dpo-fp.log", ok=False)
    assert proc.returncode != 0
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("recipes/dpo.py: error: BaseMismatchError: recipes/dpo.py: adapter ")
    assert "quantization: trained on a 4-bit nf4 base, loading it in full precision" in last
    assert "Traceback" not in proc.stderr


def test_recipe_without_config_prints_usage_not_a_traceback(tmp_path):
    for recipe in ("recipes/sft.py", "recipes/dpo.py"):
        proc = _run([sys.executable, recipe], tmp_path / "usage.log", ok=False)
        assert proc.returncode == 2 and "Traceback" not in proc.stderr
        assert proc.stderr.startswith(f"usage: accelerate launch [ACCELERATE OPTIONS] {recipe} --config YAML")
        assert f"{recipe} --config configs/" in proc.stderr  # a copy-paste command


def test_recipe_value_error_is_one_line_through_accelerate(tiny_model_dir, dataset_dir, tmp_path):
    proc = _run([sys.executable, "-m", "surveyalign", "train", "sft", "--config", "configs/sft/tiny-readability.yaml",
                 "--", "--model_name_or_path", str(tiny_model_dir), "--dataset_path", str(dataset_dir),
                 "--dimension", "readability", "--max_train_samples", "1", "--dataset_train_split", "test",
                 "--eval_strategy", "no", "--load_best_model_at_end", "false", "--output_dir", str(tmp_path / "o"),
                 "--model_name_or_path", "runs/nowhere/model"], tmp_path / "err.log", ok=False)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    lines = [line for line in proc.stderr.strip().splitlines() if "error:" in line]
    expected = ("recipes/sft.py: error: FileNotFoundError: --model_name_or_path runs/nowhere/model: no such folder "
                "(a local path is never looked up on the Hugging Face Hub)")
    assert lines == [expected]

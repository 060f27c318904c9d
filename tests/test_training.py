"""Training recipes on CPU with the tiny Qwen3: configs, the length rule, DPO pairs, SFT and DPO end to end.

The end-to-end tests run the real recipes through ``accelerate launch`` (1 process) on the shipped sample
release; ZeRO-3 and multi-process runs are in test_training_slow.py (marked slow).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
RECIPE_YAMLS = sorted(p.relative_to(REPO).as_posix()
                      for folder in ("configs/sft", "configs/dpo") for p in (REPO / folder).glob("*.yaml"))
PAPER_YAMLS = [p for p in RECIPE_YAMLS if not Path(p).name.startswith(("tiny-", "demo", "qlora-"))]
SEVEN = {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}
ACCELERATE_1 = [sys.executable, "-m", "accelerate.commands.launch", "--num_processes", "1", "--num_machines", "1",
                "--mixed_precision", "no", "--dynamo_backend", "no"]


def run_recipe(cmd: list[str], log: Path, timeout: int = 600) -> None:
    """Run a recipe command from the repository root; fail with the log tail when it fails."""
    env = dict(os.environ, PYTHONUNBUFFERED="1", HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1",
               TOKENIZERS_PARALLELISM="false")
    env.setdefault("WANDB_MODE", "offline")
    with open(log, "w") as handle:
        proc = subprocess.run(cmd, check=False, cwd=REPO, env=env, stdout=handle, stderr=subprocess.STDOUT, timeout=timeout)
    if proc.returncode != 0:
        pytest.fail(f"{' '.join(cmd)} failed ({proc.returncode}):\n{log.read_text()[-4000:]}")


def check_adapter(adapter_dir: Path, base_dir: Path):
    """Reload the adapter on the base model; every one of the seven projections has rank-8, non-zero LoRA."""
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    from surveyalign.training import inspect_adapter

    report = inspect_adapter(adapter_dir)
    assert report.modules == SEVEN
    assert all(ranks == {8} for ranks in report.ranks.values())
    assert report.n_tensors == 2 * len(SEVEN) * 2  # A and B, seven modules, two layers
    assert report.n_nonzero_b == len(SEVEN) * 2  # lora_B starts at zero: every one moved in training
    model = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(base_dir), adapter_dir)
    seen = set()
    for name, module in model.named_modules():
        if hasattr(module, "lora_A") and "default" in module.lora_A:
            seen.add(name.rsplit(".", 1)[-1])
            assert module.lora_A["default"].weight.shape[0] == 8
            assert module.lora_B["default"].weight.shape[1] == 8
            assert torch.count_nonzero(module.lora_B["default"].weight) > 0
    assert seen == SEVEN
    return report


# --- configs --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("rel", RECIPE_YAMLS)
def test_recipe_yaml_parses_with_app_d_lora(rel):
    from surveyalign.training import parse_recipe_yaml

    _, train, model = parse_recipe_yaml(REPO / rel, check_device=False)  # bf16 QLoRA configs parse on CPU too
    expected = "DPO" if rel.startswith("configs/dpo/") else "SFT"
    assert type(train).__name__ == f"{expected}Config"
    assert (model.use_peft, model.lora_r, model.lora_alpha, model.lora_dropout) == (True, 8, 16, 0.0)
    assert set(model.lora_target_modules) == SEVEN and len(model.lora_target_modules) == 7
    assert train.max_length is not None  # TRL's default 1024 would cut the end: always explicit


@pytest.mark.parametrize("rel", [p for p in PAPER_YAMLS if p.startswith("configs/sft/")])
def test_paper_sft_yaml_is_app_d(rel):
    from surveyalign.training import parse_recipe_yaml

    script, train, model = parse_recipe_yaml(REPO / rel)
    assert script.dimension == Path(rel).stem
    assert script.use_knowledge == (script.dimension in ("comprehensiveness", "criticalness"))
    assert model.model_name_or_path == "Qwen/Qwen3-32B" and model.attn_implementation == "flash_attention_2"
    assert (train.learning_rate, train.lr_scheduler_type.value, train.warmup_steps) == (5e-5, "cosine", 20)
    assert (train.num_train_epochs, train.per_device_train_batch_size, train.gradient_accumulation_steps) == (15, 1, 16)
    assert (train.max_length, train.fp16, train.bf16, train.activation_checkpointing) == (16384, True, False, True)
    assert train.eval_strategy.value == "epoch" and script.dataset_eval_split == "validation"
    assert train.load_best_model_at_end and train.metric_for_best_model == "eval_loss"
    assert train.completion_only_loss is True


def test_paper_dpo_yaml_continues_the_criticalness_sft_adapter():
    from surveyalign.training import parse_recipe_yaml

    script, train, model = parse_recipe_yaml(REPO / "configs/dpo/criticalness.yaml")
    sft_script, sft_train, _ = parse_recipe_yaml(REPO / "configs/sft/criticalness.yaml")
    assert script.dimension == "criticalness" and script.sft_adapter == sft_train.output_dir
    assert model.model_name_or_path == "Qwen/Qwen3-32B" and train.max_length == sft_train.max_length == 16384
    assert (train.beta, train.loss_type, train.fp16, train.activation_checkpointing) == (0.1, ["sigmoid"], True, True)
    assert sft_script.use_knowledge  # Crit-KA inputs for both stages (SurveyAlign §5.2.3)


#: What a tiny CPU variant may change from its paper config (each is explained in the tiny YAML's header).
TINY_MAY_CHANGE = {
    "model_name_or_path", "dataset_path", "pairs_path", "sft_adapter", "output_dir",  # model and inputs
    "max_train_samples",  # data size
    "max_steps", "warmup_steps", "logging_steps",  # steps
    "max_length",  # lengths
    "use_cpu", "dtype", "fp16", "attn_implementation", "activation_checkpointing", "report_to", "run_name",  # CPU
}


@pytest.mark.parametrize("tiny", [p for p in RECIPE_YAMLS if Path(p).name.startswith("tiny-")])
def test_tiny_yaml_changes_only_model_data_steps_lengths_and_cpu(tiny):
    import yaml

    paper_path = REPO / Path(tiny).parent / Path(tiny).name.removeprefix("tiny-")
    tiny_cfg, paper = (yaml.safe_load((REPO / p).read_text()) for p in (tiny, paper_path))
    changed = {k for k in set(tiny_cfg) | set(paper) if tiny_cfg.get(k, "<absent>") != paper.get(k, "<absent>")}
    assert changed <= TINY_MAY_CHANGE, sorted(changed - TINY_MAY_CHANGE)
    assert (tiny_cfg["per_device_train_batch_size"], tiny_cfg["gradient_accumulation_steps"]) == (1, 16)
    header = [line for line in (REPO / tiny).read_text().splitlines() if line.startswith("# - ")]
    for key in ("warmup_steps", "max_length", "logging_steps"):  # every changed setting is explained
        assert any(key in line for line in header), key


def test_unknown_yaml_key_is_rejected(tmp_path):
    from surveyalign.training import parse_recipe_yaml

    bad = tmp_path / "sft" / "bad.yaml"
    bad.parent.mkdir()
    bad.write_text("dimension: readability\nmax_seq_length: 2048\n")  # the TRL<1 name, removed
    with pytest.raises(ValueError, match="max_seq_length"):
        parse_recipe_yaml(bad)
    bad.write_text("dimension: novelty\n")
    with pytest.raises(ValueError, match="novelty"):
        parse_recipe_yaml(bad)


# --- length rule ----------------------------------------------------------------------------------------


def _long_row(tiny_text_factor: int = 40) -> dict:
    body = "# A Survey of Methods\n\n## 1 Introduction\nWe review 120 studies [1]. " * tiny_text_factor
    return {"unit_id": "p1-r1::readability", "paper_id": "p1", "review_id": "p1-r1", "dimension": "readability",
            "score": -1, "rationales": ["Section transitions are abrupt and the taxonomy is hard to navigate."],
            "title": "A Survey of Methods", "text": body}


def test_over_long_survey_keeps_its_full_completion_in_the_labels(tiny_model_dir, tmp_path):
    from datasets import Dataset
    from transformers import AutoTokenizer
    from trl import SFTConfig, SFTTrainer

    from surveyalign.prompts import build_sft_example, count_chat_tokens
    from surveyalign.training import prepare_sft_dataset

    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    row = _long_row()
    raw = build_sft_example("readability", row["text"], row["rationales"], -1, title=row["title"])
    full = tokenizer.apply_chat_template(raw["prompt"] + raw["completion"], tokenize=True, return_dict=True,
                                         enable_thinking=False)["input_ids"]
    assert count_chat_tokens(tokenizer, raw["prompt"] + raw["completion"], enable_thinking=False) == len(full)
    n_prompt = count_chat_tokens(tokenizer, raw["prompt"], enable_thinking=False, add_generation_prompt=True)
    completion_ids = full[n_prompt:]
    max_length = len(full) - 300  # the survey must lose about 300 tokens
    assert len(completion_ids) > 10

    fitted, report = prepare_sft_dataset(Dataset.from_list([row]), tokenizer, dimension="readability",
                                         max_length=max_length, enable_thinking=False)
    assert (report.n_units, report.n_shortened, report.shortened_unit_ids) == (1, 1, [row["unit_id"]])
    assert 300 <= report.removed_tokens <= 310 and report.longest <= max_length
    assert fitted[0]["completion"] == raw["completion"]

    def trl_labels(dataset):
        args = SFTConfig(output_dir=str(tmp_path), use_cpu=True, bf16=False, max_length=max_length, report_to="none",
                         activation_checkpointing=False)
        trainer = SFTTrainer(model=str(tiny_model_dir), args=args, train_dataset=dataset, processing_class=tokenizer)
        return trainer.train_dataset

    prepared = trl_labels(fitted)[0]
    assert len(prepared["input_ids"]) <= max_length
    kept = [t for t in prepared["labels"] if t != -100]
    assert kept == completion_ids  # the whole rationale, the $$$-1$$$ marker and the end of turn
    assert "$$$-1$$$" in tokenizer.decode(kept)

    # the same example unfitted: TRL keeps the start, so the completion is gone and the unit is dropped
    unfitted = Dataset.from_list([{"prompt": raw["prompt"], "completion": raw["completion"],
                                   "chat_template_kwargs": {"enable_thinking": False}}])
    assert len(trl_labels(unfitted)) == 0


def test_fit_refuses_when_the_completion_alone_does_not_fit(tiny_model_dir):
    from datasets import Dataset
    from transformers import AutoTokenizer

    from surveyalign.training import prepare_sft_dataset

    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    with pytest.raises(ValueError, match=r"p1-r1::readability.*without any survey text"):
        prepare_sft_dataset(Dataset.from_list([_long_row()]), tokenizer, dimension="readability", max_length=200)


def test_fit_leaves_short_surveys_alone_and_counts_missing_text(tiny_model_dir):
    from datasets import Dataset
    from transformers import AutoTokenizer

    from surveyalign.training import prepare_sft_dataset

    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    short = dict(_long_row(1), unit_id="a")
    empty = dict(_long_row(1), unit_id="b", text="  ")
    fitted, report = prepare_sft_dataset(Dataset.from_list([short, empty]), tokenizer, dimension="readability",
                                         max_length=4096, enable_thinking=True)
    assert (report.n_units, report.n_shortened, report.n_missing_text) == (1, 0, 1)
    assert report.missing_text_unit_ids == ["b"] and fitted["unit_id"] == ["a"]
    assert fitted[0]["chat_template_kwargs"] == {"enable_thinking": True}
    assert short["text"] in fitted[0]["prompt"][0]["content"]


# --- DPO pairs ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("texts", "gold", "expected"), [
    (["Fine.$$$-1$$$", "Weak.$$$-2$$$"], -1, (1, [-1, -2])),     # second differs
    (["Good.$$$+1$$$", "Fine.$$$-1$$$"], -1, (0, [1, -1])),      # "+1" parses as 1
    (["cut off before the score", "Fine.$$$-1$$$"], -1, (None, [None, -1])),  # unparseable never rejected
    (["Fine.$$$-1$$$", "Fine.$$$ -1 $$$"], -1, (None, [-1, -1])),  # all agree with gold: no pair
    (["Odd.$$$0$$$", "Strong.$$$2$$$"], 1, (1, [None, 2])),      # 0 is not a valid score
])
def test_choose_rejected(texts, gold, expected):
    from surveyalign.backends import Generation
    from surveyalign.training import choose_rejected

    samples = [Generation(text=t, finish_reason="stop", mean_logprob=None) for t in texts]
    assert choose_rejected(samples, gold, "v1.0") == expected


def test_failed_generation_is_never_rejected():
    from surveyalign.backends import Generation
    from surveyalign.training import choose_rejected

    samples = [Generation.failed("timeout"), Generation(text="Deep.$$$2$$$", finish_reason="stop", mean_logprob=None)]
    assert choose_rejected(samples, -1, "v1.0") == (1, [None, 2])


# --- model card -----------------------------------------------------------------------------------------


def test_model_card_names_base_dimension_data_and_settings(tmp_path):
    from surveyalign.training import render_model_card, write_model_card

    record = {"stage": "sft", "dimension": "structure", "base_model": "Qwen/Qwen3-32B", "protocol": "v1.0",
              "enable_thinking": False, "data_hash": "ab" * 32, "data_version": "v1.1 release",
              "n_train": 1094, "n_eval": 122, "max_length": 16384, "length": {"n_shortened": 17},
              "lora": {"r": 8, "alpha": 16}, "hyperparameters": {"learning_rate": 5e-05},
              "metrics": {"eval_loss": 1.234567}, "command": "accelerate launch recipes/sft.py"}
    card = render_model_card(record)
    assert card.startswith("---\nlibrary_name: peft\nbase_model: Qwen/Qwen3-32B\n")
    for needle in ("SurveyAlign-Structure (sft)", "**structure**", "ab" * 32, "v1.1 release", "Training units: 1094",
                   "16384 tokens: 17", "r=8, alpha=16", "| learning_rate | 5e-05 |", "| eval_loss | 1.2346 |",
                   "`Reason$$$X$$$`", "enable_thinking=false"):
        assert needle in card, needle
    assert "No metrics were computed" in render_model_card({**record, "metrics": {}})
    bad = tmp_path / "card.md"
    bad.write_text("${base_model} ${no_such_field}")
    with pytest.raises(KeyError, match="no_such_field"):
        render_model_card(record, bad)
    assert (write_model_card(tmp_path, record)).read_text() == card


# --- end to end: SFT then DPO through accelerate --------------------------------------------------------


@pytest.fixture(scope="module")
def sft_adapter(tmp_path_factory, tiny_model_dir, ka_dataset_dir) -> Path:
    """A tiny Criticalness SFT adapter trained by recipes/sft.py under accelerate (1 process, 2 steps) on the KA
    dataset (Crit-KA in every prompt, as configs/sft/tiny-criticalness.yaml's use_knowledge asks)."""
    out = tmp_path_factory.mktemp("sft") / "adapter"
    run_recipe([*ACCELERATE_1, "recipes/sft.py", "--config", "configs/sft/tiny-criticalness.yaml",
                "--model_name_or_path", str(tiny_model_dir), "--dataset_path", str(ka_dataset_dir),
                "--output_dir", str(out)], out.parent / "sft.log")  # no --data_version: read from build_report
    return out


def lora_b_bound(best_checkpoint: str | None) -> tuple[float, float]:
    """(lower, upper) bound of max |lora_B| of the saved adapter, from the tiny configs' schedule.

    lora_B starts at 0; Adam's first update moves every entry with a non-zero gradient by exactly lr_1, the
    second by at most about lr_2. Cosine over max_steps 2 without warmup: lr_1 = 5e-5, lr_2 = 5e-5 * (1 + cos(pi/2))
    / 2 = 2.5e-5. Gradient accumulation (16) and clipping do not change these bounds (Adam is scale-free). The
    saved adapter is the best checkpoint by eval loss: after step 1 the largest entry is lr_1, after step 2 it is
    above lr_1 and at most lr_1 + lr_2.
    """
    if best_checkpoint is not None and best_checkpoint.endswith("checkpoint-1"):
        return 5e-5 * 0.999, 5e-5 * 1.001
    return 5e-5, 7.5e-5 * 1.001


def test_sft_recipe_saves_a_rank8_adapter_with_record_and_card(sft_adapter, tiny_model_dir, ka_dataset_dir):
    from safetensors.torch import load_file

    from surveyalign.data import load_surveyreview
    from surveyalign.models import read_training_record
    from surveyalign.training import data_hash

    check_adapter(sft_adapter, tiny_model_dir)
    record = read_training_record(sft_adapter)
    log = json.loads((sft_adapter / "trainer_state.json").read_text())["log_history"]
    # App. D's schedule on 16 units: batch 1 x accumulation 16 = one optimizer step per epoch, eval each epoch
    assert [e["step"] for e in log if "loss" in e] == [1, 2] and all(e["loss"] > 0 for e in log if "loss" in e)
    assert [e["learning_rate"] for e in log if "loss" in e] == pytest.approx([5e-5, 2.5e-5])
    assert [e["num_tokens"] for e in log if "loss" in e] == [16 * 640, 32 * 640]  # 16 fitted examples per step
    evals = {e["step"]: e["eval_loss"] for e in log if "eval_loss" in e and "train_runtime" not in e}
    assert sorted(evals) == [1, 2]
    best_step = min(evals, key=evals.get)
    assert record["best_checkpoint"].endswith(f"checkpoint-{best_step}")
    assert record["metrics"]["eval_loss"] == pytest.approx(evals[best_step])  # the best checkpoint was reloaded
    low, high = lora_b_bound(record["best_checkpoint"])
    largest = [float(t.abs().max()) for k, t in load_file(sft_adapter / "adapter_model.safetensors").items()
               if "lora_B" in k]
    assert len(largest) == 14 and all(low < v <= high for v in largest)

    train = load_surveyreview(ka_dataset_dir, "criticalness", split="train").select(range(16))
    assert (record["stage"], record["dimension"], record["protocol"], record["enable_thinking"],
            record["use_knowledge"]) == ("sft", "criticalness", "v1.0", False, True)
    assert record["data_hash"] == data_hash(train) and (record["n_train"], record["n_eval"]) == (16, 4)
    # every one of the 16 training rows has a Crit-KA text, so every prompt carries the block
    assert sum(bool(k) for k in train["knowledge"]) == 16
    assert (record["n_train_with_knowledge"], record["allow_missing_knowledge"]) == (16, False)
    assert record["length"]["train"]["longest"] <= record["max_length"] == 640
    assert record["adapter"]["ranks"] == [8] and record["adapter"]["modules"] == sorted(SEVEN)
    build = json.loads((ka_dataset_dir / "build_report.json").read_text())
    version = f"surveyreview@{build['input']['sha256'][:12]} seed 42 builder {build['surveyalign_version']}"
    assert record["data_version"] == version
    card = (sft_adapter / "README.md").read_text()
    assert f"base_model: {tiny_model_dir}" in card and record["data_hash"] in card
    assert f"data version: {version}" in card
    shortened = "shortened the survey body of 16/16 training examples"
    log_text = (sft_adapter.parent / "sft.log").read_text()
    assert shortened in log_text
    assert log_text.count("shortened the survey body") == 2  # once per split: train, then validation


def test_dataset_version_reads_the_build_report(dataset_dir, tmp_path):
    from surveyalign.training import dataset_version

    build = json.loads((dataset_dir / "build_report.json").read_text())
    assert dataset_version(dataset_dir) == (f"surveyreview@{build['input']['sha256'][:12]} seed {build['seed']} "
                                            f"builder {build['surveyalign_version']}")
    (tmp_path / "build_report.json").write_text(json.dumps({"seed": 7}))
    assert dataset_version(tmp_path) == "surveyreview@? seed 7 builder ?"
    assert dataset_version(tmp_path / "missing") is None and dataset_version(None) is None


def test_read_training_record_checks_the_keys_evaluation_needs(tmp_path):
    from surveyalign.models import (
        RECORD_KEYS,
        read_training_record,
        write_training_record,
    )

    good = {"protocol": "v1.1", "enable_thinking": True, "dimension": "structure", "use_knowledge": False,
            "stage": "sft"}
    write_training_record(tmp_path, good)
    assert read_training_record(tmp_path) == good and set(RECORD_KEYS) <= set(good)
    for key, bad, message in (("use_knowledge", None, "'use_knowledge' is None, expected a bool"),
                              ("dimension", "novelty", "'dimension' is 'novelty'"),
                              ("enable_thinking", "false", "'enable_thinking' is 'false', expected a bool")):
        write_training_record(tmp_path, {**good, key: bad})
        with pytest.raises(ValueError, match=message):
            read_training_record(tmp_path)
    write_training_record(tmp_path, {k: v for k, v in good.items() if k != "protocol"})
    with pytest.raises(ValueError, match=r"surveyalign_training.json: field 'protocol' is missing"):
        read_training_record(tmp_path)
    with pytest.raises(FileNotFoundError, match="not trained by a surveyalign recipe"):
        read_training_record(tmp_path / "elsewhere")


def test_dpo_pairs_then_dpo_recipe_from_the_sft_adapter(sft_adapter, tiny_model_dir, ka_dataset_dir, tmp_path):
    import torch
    from safetensors.torch import load_file

    from surveyalign.backends import load_backend
    from surveyalign.models import read_training_record
    from surveyalign.training import make_dpo_pairs, read_pairs

    # sample 0 agrees with a -1 gold, sample 1 says +2: units with gold -1 pair with sample 1, the others with 0
    sampler = load_backend("scripted", replies=lambda m, s, i: "Deep synthesis.$$$2$$$" if i else "Shallow.$$$-1$$$")
    pairs_file = tmp_path / "pairs.jsonl"
    summary = make_dpo_pairs(str(ka_dataset_dir), str(sft_adapter), pairs_file, k=2, limit=6, max_new_tokens=64,
                             max_length=2048, sampler=sampler)
    assert (summary.n_units, summary.n_paired, summary.origins) == (6, 6, {"sft_sample": 6})
    pairs = read_pairs(pairs_file)
    for pair in pairs:
        assert pair["rejected_score"] != pair["gold_score"] and pair["origin"] == "sft_sample"
        assert pair["chosen"][0]["content"].endswith(f"$$${pair['gold_score']}$$$")
        assert pair["sample_index"] == (1 if pair["gold_score"] == -1 else 0)
    again = make_dpo_pairs(str(ka_dataset_dir), str(sft_adapter), pairs_file, k=2, limit=6, sampler=sampler,
                           max_new_tokens=64, max_length=2048)
    assert (again.n_skipped_existing, again.n_paired) == (6, 0)  # resumed: nothing sampled twice
    assert (again.n_paired_in_file, again.origins_in_file) == (6, {"sft_sample": 6})

    out = tmp_path / "dpo"
    run_recipe([*ACCELERATE_1, "recipes/dpo.py", "--config", "configs/dpo/tiny-criticalness.yaml",
                "--sft_adapter", str(sft_adapter), "--pairs_path", str(pairs_file), "--output_dir", str(out),
                "--max_train_samples", "4"], tmp_path / "dpo.log")
    check_adapter(out, tiny_model_dir)
    assert not (out / "ref").exists()  # TRL's frozen reference copy is not part of the result
    log = [e for e in json.loads((out / "trainer_state.json").read_text())["log_history"] if "loss" in e]
    # step 1 is computed before any update: policy (SFT adapter) and reference (its frozen copy) agree
    assert [e["step"] for e in log] == [1, 2]
    assert log[0]["rewards/chosen"] == 0.0 and log[0]["rewards/rejected"] == 0.0
    assert log[0]["loss"] == pytest.approx(0.6931472, abs=1e-6)  # -log sigmoid(0)
    assert log[1]["rewards/margins"] != 0.0  # after one update they differ
    before, after = load_file(sft_adapter / "adapter_model.safetensors"), load_file(out / "adapter_model.safetensors")
    assert before.keys() == after.keys()
    assert any(not torch.equal(before[k], after[k]) for k in before)
    record = read_training_record(out)
    assert (record["stage"], record["sft_adapter"], record["pair_origins"]) == ("dpo", str(sft_adapter),
                                                                                {"sft_sample": 4})
    assert record["reference"] == "frozen copy of the SFT adapter" and record["use_knowledge"] is True
    # the 4 pairs trained on (max_train_samples) were made from the KA dataset: each prompt carries Crit-KA
    assert all(pair["with_knowledge"] and pair["dataset_path"] == str(ka_dataset_dir) for pair in pairs)
    assert (record["n_train"], record["n_train_with_knowledge"], record["allow_missing_knowledge"]) == (4, 4, False)
    assert record["reference_check"] == {"reference": "frozen copy of the SFT adapter", "adapter": "ref",
                                         "n_tensors_checked": 28}  # A and B x 7 modules x 2 layers
    # the step-0 agreement is informative: the adapter-disabled base model answers differently from the SFT
    # adapter, so a base-model reference would not have given rewards of exactly 0
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    ids = tokenizer.apply_chat_template(pairs[0]["prompt"] + pairs[0]["chosen"], tokenize=True, return_dict=True,
                                        return_tensors="pt", enable_thinking=False)["input_ids"]
    policy = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(tiny_model_dir), sft_adapter).eval()
    with torch.no_grad():
        with_sft = policy(input_ids=ids).logits
        with policy.disable_adapter():
            base = policy(input_ids=ids).logits
    assert not torch.equal(with_sft, base)


# --- CLI and small pieces -------------------------------------------------------------------------------


def test_train_cli_prints_the_launch_commands(capsys):
    from surveyalign.cli import main

    assert main(["train", "sft", "--config", "configs/sft/tiny-readability.yaml", "--dry-run", "--",
                 "--max_steps", "1"]) == 0
    line = capsys.readouterr().out.strip()
    assert "-m accelerate.commands.launch --num_processes 1 --num_machines 1 --mixed_precision no" in line
    assert line.endswith("recipes/sft.py --config configs/sft/tiny-readability.yaml --max_steps 1")
    assert main(["train", "dpo", "--config", "configs/dpo/tiny-criticalness.yaml", "--nproc", "2", "--dry-run"]) == 0
    assert "-m torch.distributed.run --nproc_per_node 2" in capsys.readouterr().out
    assert main(["train", "sft", "--config", "configs/sft/readability.yaml", "--accelerate-config",
                 "configs/accelerate/zero3.yaml", "--dry-run"]) == 0
    assert "launch --config_file configs/accelerate/zero3.yaml" in capsys.readouterr().out
    # a missing file is named before anything is launched
    assert main(["train", "sft", "--config", "c.yaml", "--dry-run"]) == 2
    assert "--config c.yaml: no such file" in capsys.readouterr().err


def test_read_pairs_names_file_and_line_of_a_bad_record(tmp_path):
    from surveyalign.training import read_pairs

    path = tmp_path / "pairs.jsonl"
    good = {"status": "paired", "prompt": [], "chosen": [], "rejected": [], "unit_id": "u1"}
    path.write_text(json.dumps(good) + "\n" + json.dumps({"status": "no_pair", "unit_id": "u2"}) + "\n")
    assert [r["unit_id"] for r in read_pairs(path)] == ["u1"]
    assert [r["unit_id"] for r in read_pairs(path, paired_only=False)] == ["u1", "u2"]
    path.write_text(json.dumps(good) + "\n" + json.dumps({**good, "rejected": "text"}) + "\n")
    with pytest.raises(ValueError, match=r"pairs.jsonl, line 2: field 'rejected'"):
        read_pairs(path)


def test_push_to_hub_is_wired_to_the_hub_client(tmp_path, monkeypatch):
    from huggingface_hub.errors import OfflineModeIsEnabled

    from surveyalign.training import push_adapter_to_hub

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    (tmp_path / "README.md").write_text("card")
    with pytest.raises(OfflineModeIsEnabled):  # no network here: the first Hub call refuses, nothing is faked
        push_adapter_to_hub(tmp_path, "someone/surveyalign-readability")


def _recipe(kind: str):
    """Import recipes/<kind>.py as a module (the recipes are scripts, not package modules)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"_recipe_{kind}", REPO / "recipes" / f"{kind}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("kind", ["sft", "dpo"])
def test_recipe_help_renders_with_our_fields(kind):
    from surveyalign.training import make_dpo_parser, make_sft_parser

    text = (make_sft_parser if kind == "sft" else make_dpo_parser)().format_help()
    ours = ("--dataset_path", "--enable_thinking", "--use_knowledge") if kind == "sft" else \
        ("--pairs_path", "--sft_adapter", "--beta")
    for flag in (*ours, "--max_length", "--lora_r", "--dimension"):
        assert flag in text, flag


@pytest.mark.parametrize("kind", ["sft", "dpo"])
def test_recipe_help_starts_with_the_docstring_usage_and_lists_config(kind):
    recipe = _recipe(kind)
    parser = recipe.make_parser()
    text = parser.format_help()
    assert text.startswith(f"usage: recipes/{kind}.py --config YAML [--FIELD VALUE ...]\n\n")
    tiny = f"accelerate launch --num_processes 1 recipes/{kind}.py --config configs/{kind}/tiny-"
    assert tiny in text and "```" not in text
    assert "\\\n    --model_name_or_path .cache/tiny-qwen3" in text  # the docstring's continued command lines
    first_ours = "--dataset_path" if kind == "sft" else "--pairs_path"
    assert text.index("--config YAML ") < text.index(first_ours) < text.index("--learning_rate")
    # --config is only for the help: parsing still gives the three dataclasses, the YAML under the flags
    parsed = parser.parse_args_and_config(["--config", f"configs/{kind}/tiny-criticalness.yaml", "--max_steps", "7"])
    assert len(parsed) == 3 and parsed[1].max_steps == 7 and parsed[0].dimension == "criticalness"


def _without_text(dataset_dir: Path, out: Path, split: str) -> Path:
    """A copy of the dataset folder whose criticalness ``split`` has an empty survey text in every row."""
    import shutil

    from surveyalign.data import load_surveyreview

    shutil.copytree(dataset_dir, out, copy_function=shutil.copy)  # new mtimes: the datasets cache key for local files
    rows = load_surveyreview(dataset_dir, "criticalness", split=split).map(lambda row: {"text": " \n"})
    rows.to_parquet(str(out / "data" / "criticalness" / f"{split}.parquet"))
    return out


@pytest.mark.parametrize(("split", "limit", "message"), [
    ("train", ["--max_train_samples", "1"],
     "no training examples for criticalness in {dir} (train split: 1 unit, 1 without survey text)"),
    ("validation", ["--max_eval_samples", "2"],
     ("no evaluation examples for criticalness in {dir} (validation split: 2 units, 2 without survey text); pass "
      "--eval_strategy no --load_best_model_at_end false")),
])
def test_sft_recipe_fails_early_without_examples(tiny_model_dir, ka_dataset_dir, tmp_path, split, limit, message):
    folder = _without_text(ka_dataset_dir, tmp_path / f"surveyreview-no-{split}-text", split)
    recipe = _recipe("sft")
    args = recipe.make_parser().parse_args_and_config([
        "--config", "configs/sft/tiny-criticalness.yaml", "--model_name_or_path", str(tiny_model_dir),
        "--dataset_path", str(folder), "--output_dir", str(tmp_path / "out"), *limit])
    with pytest.raises(ValueError) as caught:
        recipe.main(*args)
    assert str(caught.value).startswith(message.format(dir=folder))
    assert not (tmp_path / "out").exists()  # nothing was trained


def test_dpo_recipe_fails_early_without_pairs(tiny_model_dir, tmp_path):
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text("".join(json.dumps({"status": "no_pair", "unit_id": f"u{i}"}) + "\n" for i in range(2)))
    recipe = _recipe("dpo")
    args = recipe.make_parser().parse_args_and_config([
        "--config", "configs/dpo/tiny-criticalness.yaml", "--model_name_or_path", str(tiny_model_dir),
        "--pairs_path", str(pairs), "--output_dir", str(tmp_path / "out")])
    with pytest.raises(ValueError, match=r"^no DPO pairs for criticalness in .*pairs.jsonl \(2 records: 0 paired, "
                                         r"2 no_pair, max_train_samples=8\)"):
        recipe.main(*args)


@pytest.fixture()
def recorded_adapter(tmp_path, tiny_model_dir) -> Path:
    """An adapter folder holding only the training record (make_dpo_pairs reads its settings from it)."""
    adapter = tmp_path / "crit-adapter"
    adapter.mkdir()
    (adapter / "surveyalign_training.json").write_text(json.dumps(
        {"dimension": "criticalness", "protocol": "v1.0", "enable_thinking": False, "use_knowledge": True,
         "base_model": str(tiny_model_dir)}))
    return adapter


def test_no_pair_records_keep_sample_texts_and_the_summary_counts_the_file(recorded_adapter, ka_dataset_dir,
                                                                           tmp_path):
    from surveyalign.backends import load_backend
    from surveyalign.training import make_dpo_pairs, read_pairs

    rambling = "I think this survey is " + "quite long " * 40  # 463 characters, no score
    sampler = load_backend("scripted", replies=lambda m, s, i: rambling if i == 0 else "Fine.$$$7$$$")
    out = tmp_path / "pairs.jsonl"
    first = make_dpo_pairs(str(ka_dataset_dir), str(recorded_adapter), out, k=2, limit=2, max_new_tokens=64,
                           max_length=2048, sampler=sampler)
    second = make_dpo_pairs(str(ka_dataset_dir), str(recorded_adapter), out, k=2, limit=3, max_new_tokens=64,
                            max_length=2048, sampler=sampler)
    assert (first.n_no_pair, first.n_no_pair_in_file) == (2, 2)
    assert (second.n_no_pair, second.n_skipped_existing, second.n_no_pair_in_file, second.n_paired_in_file) == \
        (1, 2, 3, 0)
    assert second.describe().splitlines() == [
        "this run: 0 paired, 1 no_pair, 2 already in the file, 0 without survey text (of 3 units)",
        f"in {out}: 0 paired, 3 no_pair"]
    records = read_pairs(out, paired_only=False)
    assert [r["status"] for r in records] == ["no_pair"] * 3
    for record in records:
        assert "(2 of 2 unparseable or failed; see sft_samples" in record["reason"]
        kept, invalid = record["sft_samples"]
        assert kept["text"] == rambling[:300] and kept["text_chars"] == len(rambling) == 463
        assert kept["score"] is None and kept["error"] and kept["finish_reason"] == "stop"
        assert invalid["text"] == "Fine.$$$7$$$" and invalid["score"] is None and invalid["error"]
        assert record["zero_shot_samples"] is None


def test_dpo_pairs_setting_mismatch_is_a_one_line_error(recorded_adapter, dataset_dir, tmp_path, capsys):
    from surveyalign.cli import main

    code = main(["train", "dpo-pairs", "--adapter", str(recorded_adapter), "--dataset", str(dataset_dir),
                 "--out", str(tmp_path / "p.jsonl"), "--dimension", "Readability"])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    assert err.splitlines()[0] == (
        f"surveyalign train: error: ValueError: --dimension readability differs from the 'criticalness' the "
        f"adapter {recorded_adapter} was trained with (surveyalign_training.json); pairs must use the SFT setting: "
        "drop --dimension or give an adapter trained with it")
    assert not (tmp_path / "p.jsonl").exists()

"""Training options that must fail loudly (issue 11): packing that breaks one example per row is refused with a
reason, and the guard reads the rows TRL actually produced (real SFTTrainer on the tiny model)."""

from __future__ import annotations

import types

import pytest

from surveyalign.prompts import build_sft_example
from surveyalign.training.packing import check_packing, check_rows, check_trainer

SURVEY = "# A survey of graph learning\n\nWe review message passing, spectral methods and benchmarks." * 3


def _trainer(tiny_model_dir, tmp_path, **config):
    from datasets import Dataset
    from transformers import AutoTokenizer
    from trl import SFTConfig, SFTTrainer

    examples = [build_sft_example("readability", SURVEY, [f"Reason {i}."], score) for i, score in
                enumerate((-2, -1, 1, 2))]
    args = SFTConfig(output_dir=str(tmp_path / "sft"), use_cpu=True, bf16=False, max_length=4096, report_to=[],
                     completion_only_loss=True, **config)
    return SFTTrainer(model=str(tiny_model_dir), args=args, train_dataset=Dataset.from_list(examples),
                      processing_class=AutoTokenizer.from_pretrained(tiny_model_dir))


def test_default_rows_pass_the_guard(tiny_model_dir, tmp_path):
    trainer = _trainer(tiny_model_dir, tmp_path)
    check_trainer(trainer)  # one example per row, completion at the end
    assert len(trainer.train_dataset) == 4


def test_bfd_packing_on_sdpa_is_refused_and_its_rows_fail_the_guard(tiny_model_dir, tmp_path):
    trainer = _trainer(tiny_model_dir, tmp_path, packing=True)  # TRL's default strategy: bfd
    assert trainer.model.config._attn_implementation in ("sdpa", "eager")
    with pytest.raises(ValueError, match=r"--packing flattens several examples into one row, and "
                                         r"attn_implementation='(sdpa|eager)' has no per-example attention"):
        check_trainer(trainer)
    # the rows TRL produced: four examples in fewer rows, caught even without looking at the options
    assert len(trainer.train_dataset) < 4
    with pytest.raises(RuntimeError, match="TRL packed [2-4] sequences into one row"):
        check_rows(trainer.train_dataset, "train")


@pytest.mark.parametrize(("options", "message"), [
    ({"packing": True, "packing_strategy": "wrapped"}, "wraps them into each other"),
    ({"packing": True, "packing_strategy": "bfd_split"}, "splits examples longer than max_length"),
    ({"padding_free": True}, "--padding_free flattens several examples"),
])
def test_packing_options_are_refused_with_a_reason(options, message):
    args = types.SimpleNamespace(**{"packing": False, "packing_strategy": "bfd", "padding_free": False, **options})
    with pytest.raises(ValueError, match=message):
        check_packing(args, "sdpa")
    if options.get("packing_strategy") is None:  # flattening is fine where attention keeps examples apart
        check_packing(args, "flash_attention_2")


def test_guard_reads_completion_masks():
    check_rows([{"input_ids": [1, 2, 3, 4], "completion_mask": [0, 0, 1, 1]}], "train")
    with pytest.raises(RuntimeError, match="no completion token"):
        check_rows([{"input_ids": [1, 2], "completion_mask": [0, 0]}], "train")
    with pytest.raises(RuntimeError, match="not one block after the prompt"):
        check_rows([{"input_ids": [1, 2, 3, 4], "completion_mask": [0, 1, 0, 1]}], "train")
    with pytest.raises(RuntimeError, match="position_ids restart"):
        check_rows([{"input_ids": [1, 2, 3, 4], "position_ids": [0, 1, 0, 1], "labels": [-100, 5, -100, 7]}],
                   "train")


# ------------------------------------------------------------------------------------------ recipe entry / output


def _recipe_doc(name: str) -> str:
    import ast
    from pathlib import Path

    return ast.get_docstring(ast.parse((Path(__file__).resolve().parents[1] / "recipes" / name).read_text()))


def test_recipe_without_config_prints_usage_and_commands(capsys):
    from surveyalign.training import make_sft_parser
    from surveyalign.training.entry import run_recipe

    called = []
    assert run_recipe(lambda *a: called.append(a), make_sft_parser, prog="recipes/sft.py", doc=_recipe_doc("sft.py"),
                      argv=[]) == 2
    err = capsys.readouterr().err
    assert called == [] and "Traceback" not in err and "bf16" not in err
    assert err.startswith("usage: accelerate launch [ACCELERATE OPTIONS] recipes/sft.py --config YAML")
    assert "accelerate launch --config_file configs/accelerate/zero3.yaml recipes/sft.py" in err  # copy-paste
    assert run_recipe(lambda *a: None, make_sft_parser, prog="recipes/sft.py", doc="", argv=["--dimension",
                                                                                             "readability"]) == 2


def test_recipe_value_error_is_one_line(capsys, repo_root, monkeypatch):
    from surveyalign.training import make_sft_parser
    from surveyalign.training.entry import run_recipe

    def main(script_args, training_args, model_args):
        raise ValueError(f"no training examples for {script_args.dimension} in X\n(train split: 0 units)")

    monkeypatch.chdir(repo_root)
    code = run_recipe(main, make_sft_parser, prog="recipes/sft.py", doc="",
                      argv=["--config", "configs/sft/tiny-readability.yaml", "--output_dir", "/tmp/unused"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    expected = "recipes/sft.py: error: ValueError: no training examples for readability in X; (train split: 0 units)"
    assert err == [expected]
    monkeypatch.setenv("SURVEYALIGN_TRACEBACK", "1")
    with pytest.raises(ValueError, match="no training examples"):
        run_recipe(main, make_sft_parser, prog="recipes/sft.py", doc="",
                   argv=["--config", "configs/sft/tiny-readability.yaml"])


def test_training_logs_go_to_the_file_and_one_bar(tiny_model_dir, tmp_path, capsys):
    import json

    from surveyalign.training.progress import (
        LOG_FILE,
        rates_over_this_run,
        use_log_file,
    )

    trainer = _trainer(tiny_model_dir, tmp_path, max_steps=2, logging_steps=1, per_device_train_batch_size=2)
    path = use_log_file(trainer, tmp_path / "sft")
    result = trainer.train()
    captured = capsys.readouterr()
    assert "'loss'" not in captured.out + captured.err  # no printed log dicts
    entries = [json.loads(line) for line in (tmp_path / "sft" / LOG_FILE).read_text().splitlines()]
    assert path.name == LOG_FILE and [e["step"] for e in entries if "loss" in e] == [1, 2]
    # a resumed run counts only its own steps: 1 step of 2 sequences made in this run
    rates = rates_over_this_run({"train_runtime": 4.0, "train_samples_per_second": 99.0}, trainer.state, 1,
                                trainer.args)
    assert (rates["train_steps_this_run"], rates["train_samples_per_second"], rates["train_steps_per_second"]) == (
        1, 0.5, 0.25)
    assert result.global_step == 2


def test_recipe_field_error_names_the_flag_or_the_yaml(capsys, repo_root, monkeypatch, tmp_path):
    import yaml

    from surveyalign.training import make_sft_parser
    from surveyalign.training.entry import run_recipe

    monkeypatch.chdir(repo_root)
    argv = ["--config", "configs/sft/tiny-readability.yaml", "--dimension", "clarity"]
    assert run_recipe(lambda *a: None, make_sft_parser, prog="recipes/sft.py", doc="", argv=argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("recipes/sft.py: error: --dimension clarity: ValueError: unknown dimension 'clarity'")
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump({**yaml.safe_load((repo_root / "configs/sft/tiny-readability.yaml").read_text()),
                                   "dimension": "clarity"}))
    assert run_recipe(lambda *a: None, make_sft_parser, prog="recipes/sft.py", doc="", argv=["--config", str(bad)]) == 2
    assert capsys.readouterr().err.startswith(f"recipes/sft.py: error: {bad}: ValueError: unknown dimension")

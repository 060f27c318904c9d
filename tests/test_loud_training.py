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

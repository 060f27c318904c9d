"""DPO of the Criticalness judge on top of its SFT adapter (SurveyAlign §5.2.3; pairs: our choice).

# 1. make preference pairs from the SFT adapter (K sampled answers per training unit):
```bash
surveyalign train dpo-pairs --adapter runs/sft/criticalness --dataset data/surveyreview-ka \
    --out runs/dpo/criticalness-pairs.jsonl --k 4
```
# 2. train (the paper's scale; ZeRO-3):
```bash
accelerate launch --config_file configs/accelerate/zero3.yaml recipes/dpo.py \
    --config configs/dpo/criticalness.yaml
```
# Tiny CPU run:
```bash
accelerate launch --num_processes 1 recipes/dpo.py --config configs/dpo/tiny-criticalness.yaml \
    --model_name_or_path .cache/tiny-qwen3 --sft_adapter runs/tiny-sft --pairs_path pairs.jsonl \
    --output_dir runs/tiny-dpo
```

Reference model (SurveyAlign §5.2.3; TRL 1.16 + PEFT 0.21 behaviour checked in the code):
- With `sft_adapter` (the Criticalness recipe): the policy is the SFT adapter loaded trainable, and the reference
  is the SFT policy itself, i.e. a frozen copy of the SFT adapter on the same base (TRL adds it as a second
  adapter named `ref` when it receives a PeftModel and no `ref_model`). This is the conventional DPO reference
  (pi_ref = pi_SFT): the KL anchor keeps the judge close to what SFT taught. The adapter-disabled model would be
  base Qwen3, which never saw the task; using it would make the step-0 implicit rewards beta*log(pi_SFT/pi_base)
  instead of 0 and pull the policy back towards the base model. The recipe checks after building the trainer
  that the `ref` adapter exists and holds exactly the tensors of `sft_adapter/adapter_model.safetensors`, and
  stops otherwise (e.g. a PEFT version where TRL silently falls back to the base model); the record says so
  (`reference`, `reference_check`). `ref/` is removed from the output folder after saving.
- Without `sft_adapter`: a fresh LoRA adapter (lora_B = 0) is trained and the adapter-disabled base model is
  the reference, which is what the issue's "with PEFT, DPO uses the adapter-disabled model" describes; there
  the two coincide at step 0.
A `ref_model` is never passed together with a `peft_config` (TRL would load a second full model).
"""

from __future__ import annotations

import os
import sys

if __package__ in (None, ""):  # run as a script: make the repository importable without installing it
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main(script_args, training_args, model_args) -> dict:
    """Train, save and describe one DPO adapter (Criticalness stage 2; SurveyAlign §5.2.3, pairs: our choice).

    Args:
        script_args: :class:`surveyalign.training.DPOScriptArguments` (pairs file, optional evaluation pairs,
            ``sft_adapter``, dimension, sample limit, data version).
        training_args: ``trl.DPOConfig`` (``beta``, ``loss_type``, ``max_length`` in tokens of prompt + answer,
            optimisation, precision, DeepSpeed).
        model_args: ``trl.ModelConfig`` (base model; LoRA settings used only without ``sft_adapter``).

    Returns:
        The training record written to ``surveyalign_training.json`` (:func:`surveyalign.training.dpo_record`).

    Raises:
        ValueError: no pairs file or base model, no usable pair, a pair that disagrees with the SFT adapter or
            exceeds ``max_length``, an evaluation file without pairs (see :func:`surveyalign.training.read_dpo_inputs`).
        RuntimeError: TRL dropped pairs, packed rows, the reference is not the frozen SFT adapter, or the saved
            adapter is empty.
    """
    from transformers import AutoTokenizer, set_seed
    from trl import DPOTrainer

    from surveyalign.training import (
        check_packing,
        check_reference,
        dpo_datasets,
        dpo_policy,
        dpo_record,
        finalize_adapter,
        guard_output_dir,
        init_deepspeed_comm,
        quiet_library_bars,
        read_dpo_inputs,
        train_with_resume,
    )

    run_dir = guard_output_dir(script_args, training_args, model_args)  # another run's folder: refused
    inputs = read_dpo_inputs(script_args, model_args)  # pairs (only made ones; the others are counted) + SFT record
    init_deepspeed_comm(training_args)
    set_seed(training_args.seed)
    tokenizer = AutoTokenizer.from_pretrained(inputs.base_model, trust_remote_code=training_args.trust_remote_code)
    train_dataset, eval_dataset = dpo_datasets(inputs, script_args, training_args, tokenizer)

    # Policy: the SFT adapter, trainable; TRL copies it as the frozen reference (checked below). No ref_model.
    model, peft_config = dpo_policy(script_args, training_args, model_args, inputs.base_model)
    push_to_hub, training_args.push_to_hub = training_args.push_to_hub, False  # we push the finished folder
    with quiet_library_bars():  # one progress bar: the trainer's
        trainer = DPOTrainer(model=model, ref_model=None, args=training_args, train_dataset=train_dataset,
                             eval_dataset=eval_dataset, processing_class=tokenizer, peft_config=peft_config)
    if len(trainer.train_dataset) != len(train_dataset):
        raise RuntimeError(f"TRL kept {len(trainer.train_dataset)} of {len(train_dataset)} pairs")
    check_packing(training_args, trainer.model.config._attn_implementation)  # no flattened (padding-free) rows
    reference_check = check_reference(trainer.model, script_args.sft_adapter)
    print(f"DPO reference: {reference_check['reference']}", flush=True)

    run_dir.commit()  # this run's settings into output_dir (--overwrite: the old run deleted)
    metrics = train_with_resume(trainer, training_args, evaluate=eval_dataset is not None, resume=run_dir.resume)
    record = dpo_record(script_args, training_args, model_args, inputs, (train_dataset, eval_dataset),
                        reference_check, metrics, trainer.state.best_model_checkpoint)
    record["output_dir_check"] = run_dir.to_dict()  # resumed, with which changed settings, or overwritten
    finalize_adapter(trainer, training_args, record, script_args.model_card_template, push_to_hub=push_to_hub)
    return record


def make_parser():
    """The recipe's ``TrlParser`` over (DPOScriptArguments, DPOConfig, ModelConfig).

    Returns:
        ``trl.TrlParser``; ``parse_args_and_config()`` gives (script_args, training_args, model_args) for
        :func:`main`, the YAML of ``--config`` overridden by command-line flags.
    """
    from surveyalign.training import make_dpo_parser

    return make_dpo_parser(prog="recipes/dpo.py", description=__doc__)


if __name__ == "__main__":
    from surveyalign.training import run_recipe

    raise SystemExit(run_recipe(main, make_parser, prog="recipes/dpo.py", doc=__doc__))

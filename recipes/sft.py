"""Supervised fine-tuning of one SurveyAlign judge: a LoRA adapter per dimension (SurveyAlign §5.1-§5.2, App. D).

# The paper's run (Qwen3-32B, LoRA r=8, ZeRO-3, fp16, 16k tokens), one dimension:
```bash
accelerate launch --config_file configs/accelerate/zero3.yaml recipes/sft.py \
    --config configs/sft/readability.yaml --dataset_path data/surveyreview
```

# Tiny CPU run (the tests' and the demo's setting):
```bash
accelerate launch --num_processes 1 recipes/sft.py --config configs/sft/tiny-readability.yaml \
    --model_name_or_path .cache/tiny-qwen3 --dataset_path runs/demo/surveyreview --output_dir runs/tiny-sft
```

Any field of the YAML can be overridden on the command line (`--learning_rate 1e-4`). The adapter folder gets
`adapter_config.json`, `adapter_model.safetensors`, the tokenizer, `README.md` (model card) and
`surveyalign_training.json` (dimension, protocol, enable_thinking, use_knowledge, data version (default: from
the dataset folder's build_report.json) and hash, hyper-parameters, metrics).
A re-run with the same `output_dir` and settings resumes from its last checkpoint; a folder holding a run with
other settings is refused unless `--resume` (continue it, the changed fields recorded) or `--overwrite`.
"""

from __future__ import annotations

import os
import sys

if __package__ in (None, ""):  # run as a script: make the repository importable without installing it
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main(script_args, training_args, model_args) -> dict:
    """Train, save and describe one SFT adapter (one dimension; SurveyAlign §5.1-§5.2, SurveyReview App. D).

    Args:
        script_args: :class:`surveyalign.training.SFTScriptArguments` (dataset folder, dimension, protocol,
            ``enable_thinking``, ``use_knowledge``, sample limits, data version).
        training_args: ``trl.SFTConfig`` (``max_length`` in tokens of prompt + completion, optimisation,
            precision, evaluation and saving strategy, DeepSpeed).
        model_args: ``trl.ModelConfig`` (base model, dtype, attention kernel, LoRA r/alpha/dropout/targets).

    Returns:
        The training record written to ``surveyalign_training.json`` (:func:`surveyalign.training.sft_record`).

    Raises:
        ValueError: ``dataset_path`` or ``model_name_or_path`` missing, a split without examples, an example that
            does not fit ``max_length`` even without survey text (see :func:`surveyalign.training.load_sft_data`).
        RuntimeError: TRL dropped or cut an example, packed rows, or the saved adapter is empty.
    """
    from transformers import AutoTokenizer, set_seed
    from trl import SFTTrainer, get_peft_config, get_quantization_config

    from surveyalign.models import resolve_model_path
    from surveyalign.training import (
        check_prepared_lengths,
        check_sft_inputs,
        check_trainer,
        finalize_adapter,
        guard_output_dir,
        init_deepspeed_comm,
        load_sft_data,
        model_init_kwargs,
        quiet_library_bars,
        sft_record,
        train_with_resume,
    )

    if not script_args.dataset_path:
        raise ValueError("--dataset_path is required (a folder written by `surveyalign data build`)")
    if not model_args.model_name_or_path:
        raise ValueError("--model_name_or_path is required")
    check_sft_inputs(script_args)  # refused from the data alone, before any model or tokenizer is loaded
    model_args.model_name_or_path = resolve_model_path(model_args.model_name_or_path, "--model_name_or_path")
    run_dir = guard_output_dir(script_args, training_args, model_args)  # another run's folder: refused
    init_deepspeed_comm(training_args)
    set_seed(training_args.seed)

    # Data: one dimension, prompt-completion examples fitted to max_length (the completion is never cut)
    tokenizer = AutoTokenizer.from_pretrained(model_args.model_name_or_path, revision=model_args.model_revision,
                                              trust_remote_code=training_args.trust_remote_code)
    data = load_sft_data(script_args, training_args, tokenizer)

    # Model + trainer (LoRA from ModelConfig: App. D r=8, alpha=16, dropout 0, seven projections)
    training_args.model_init_kwargs = model_init_kwargs(model_args, training_args)
    push_to_hub, training_args.push_to_hub = training_args.push_to_hub, False  # we push the finished folder
    with quiet_library_bars():  # one progress bar: the trainer's (no data-preparation / weight-loading bars)
        trainer = SFTTrainer(model=model_args.model_name_or_path, args=training_args,
                             train_dataset=data.train_dataset, eval_dataset=data.eval_dataset,
                             processing_class=tokenizer, peft_config=get_peft_config(model_args),
                             quantization_config=get_quantization_config(model_args))
    check_trainer(trainer)  # packing refused; one example per row, completion at the end, in TRL's own rows
    check_prepared_lengths(trainer.train_dataset, len(data.train_dataset), training_args.max_length, "train")
    if data.eval_dataset is not None:
        check_prepared_lengths(trainer.eval_dataset, len(data.eval_dataset), training_args.max_length, "validation")

    # Train (resuming from the last checkpoint of output_dir), then save, record and describe the adapter
    run_dir.commit()  # this run's settings into output_dir (--overwrite: the old run deleted)
    metrics = train_with_resume(trainer, training_args, evaluate=data.eval_dataset is not None,
                                resume=run_dir.resume)
    record = sft_record(script_args, training_args, model_args, data, metrics, trainer.state.best_model_checkpoint)
    record["output_dir_check"] = run_dir.to_dict()  # resumed, with which changed settings, or overwritten
    finalize_adapter(trainer, training_args, record, script_args.model_card_template, push_to_hub=push_to_hub)
    return record


def make_parser():
    """The recipe's ``TrlParser`` over (SFTScriptArguments, SFTConfig, ModelConfig).

    Returns:
        ``trl.TrlParser``; ``parse_args_and_config()`` gives (script_args, training_args, model_args) for
        :func:`main`, the YAML of ``--config`` overridden by command-line flags.
    """
    from surveyalign.training import make_sft_parser

    return make_sft_parser(prog="recipes/sft.py", description=__doc__)


if __name__ == "__main__":
    from surveyalign.training import run_recipe

    raise SystemExit(run_recipe(main, make_parser, prog="recipes/sft.py", doc=__doc__))

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
A re-run with the same `output_dir` resumes from its last checkpoint.
"""

from __future__ import annotations

import os
import shlex
import sys

if __package__ in (None, ""):  # run as a script: make the repository importable without installing it
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main(script_args, training_args, model_args) -> dict:
    """Train, save and describe one SFT adapter (one dimension; SurveyAlign §5.1-§5.2, SurveyReview App. D).

    Reads the ``dimension`` rows of the dataset folder, builds prompt-completion examples with the shared
    protocol builder (survey body shortened to fit ``max_length`` tokens, completion never cut), trains LoRA
    with TRL's ``SFTTrainer`` (completion-only loss; resumes from the last checkpoint of ``output_dir``) and
    writes the adapter, ``surveyalign_training.json`` and the model card into ``output_dir``.

    Args:
        script_args: :class:`surveyalign.training.SFTScriptArguments` (dataset folder, dimension, protocol,
            ``enable_thinking``, ``use_knowledge``, sample limits, data version).
        training_args: ``trl.SFTConfig`` (``max_length`` in tokens of prompt + completion, optimisation,
            precision, evaluation and saving strategy, DeepSpeed).
        model_args: ``trl.ModelConfig`` (base model, dtype, attention kernel, LoRA r/alpha/dropout/targets).

    Returns:
        The training record written to ``surveyalign_training.json`` (keys ``stage``="sft", ``dimension``,
        ``protocol``, ``enable_thinking``, ``use_knowledge``, ``data_version``, ``data_hash`` (64 hex),
        ``n_train``/``n_eval`` (examples), ``length`` (:class:`LengthReport` dicts), ``lora``,
        ``hyperparameters``, ``metrics`` (train/eval loss, runtime in s, ``train_tokens``), ``adapter``...).

    Raises:
        ValueError: when ``dataset_path`` or ``model_name_or_path`` is missing, a row has another dimension,
            an example does not fit ``max_length`` even without survey text, or the training split (or, with
            evaluation on, the evaluation split) gives no example, e.g. every unit lacks survey text; the
            message names the dataset folder, dimension, split and counts.
        RuntimeError: when TRL dropped or cut an example, or the saved adapter is empty.
    """
    import torch
    import transformers
    import trl
    from transformers import AutoTokenizer, set_seed
    from transformers.trainer_utils import get_last_checkpoint
    from trl import SFTTrainer, get_peft_config, get_quantization_config

    from surveyalign import __version__
    from surveyalign.data import load_surveyreview
    from surveyalign.training import (
        check_prepared_lengths,
        check_trainer,
        data_hash,
        dataset_version,
        describe_split,
        finalize_adapter,
        hyperparameters,
        init_deepspeed_comm,
        prepare_sft_dataset,
        require_examples,
        template_hash,
    )

    if not script_args.dataset_path:
        raise ValueError("--dataset_path is required (a folder written by `surveyalign data build`)")
    if not model_args.model_name_or_path:
        raise ValueError("--model_name_or_path is required")
    init_deepspeed_comm(training_args)
    set_seed(training_args.seed)

    # Data: one dimension, prompt-completion examples fitted to max_length
    data = load_surveyreview(script_args.dataset_path, script_args.dimension)
    train_rows = data[script_args.dataset_train_split]
    if script_args.max_train_samples is not None:
        train_rows = train_rows.select(range(min(script_args.max_train_samples, len(train_rows))))
    eval_rows = None
    if training_args.eval_strategy != "no":
        eval_rows = data[script_args.dataset_eval_split]
        if script_args.max_eval_samples is not None:
            eval_rows = eval_rows.select(range(min(script_args.max_eval_samples, len(eval_rows))))

    tokenizer = AutoTokenizer.from_pretrained(
        model_args.model_name_or_path, revision=model_args.model_revision,
        trust_remote_code=training_args.trust_remote_code,
    )
    build = {"dimension": script_args.dimension, "protocol": script_args.protocol,
             "enable_thinking": script_args.enable_thinking, "max_length": training_args.max_length,
             "use_knowledge": script_args.use_knowledge}
    train_dataset, train_lengths = prepare_sft_dataset(train_rows, tokenizer, **build)
    eval_dataset, eval_lengths = (prepare_sft_dataset(eval_rows, tokenizer, **build) if eval_rows is not None
                                  else (None, None))
    # fail before TRL does (a bare StopIteration on an empty split); an empty evaluation split is an error too:
    # the App. D schedule picks the best checkpoint by eval loss, so we do not silently train without it
    where = {"dataset_path": script_args.dataset_path, "dimension": script_args.dimension}
    require_examples(train_lengths, len(train_rows), split=script_args.dataset_train_split, **where)
    print(describe_split(train_lengths, script_args.dataset_train_split), flush=True)
    if eval_lengths is not None:
        require_examples(eval_lengths, len(eval_rows), split=script_args.dataset_eval_split, what="evaluation",
                         hint="; pass --eval_strategy no --load_best_model_at_end false to train without "
                              "evaluation, or choose another --dataset_eval_split", **where)
        print(describe_split(eval_lengths, script_args.dataset_eval_split, what="evaluation"), flush=True)
    if script_args.use_knowledge:
        print(f"{train_lengths.n_with_knowledge}/{train_lengths.n_units} training examples carry a knowledge block"
              + ("" if "knowledge" in train_rows.column_names else " (the dataset has no `knowledge` column)"),
              flush=True)

    # Model + trainer (LoRA from ModelConfig: App. D r=8, alpha=16, dropout 0, seven projections)
    model_init_kwargs = {"revision": model_args.model_revision, "attn_implementation": model_args.attn_implementation,
                         "dtype": model_args.dtype}
    model_init_kwargs.update(training_args.model_init_kwargs or {})
    training_args.model_init_kwargs = model_init_kwargs
    push_to_hub, training_args.push_to_hub = training_args.push_to_hub, False  # we push the finished folder
    trainer = SFTTrainer(
        model=model_args.model_name_or_path,
        args=training_args,
        train_dataset=train_dataset,
        eval_dataset=eval_dataset,
        processing_class=tokenizer,
        peft_config=get_peft_config(model_args),
        quantization_config=get_quantization_config(model_args),
    )
    check_trainer(trainer)  # packing refused; one example per row, completion at the end, in TRL's own rows
    check_prepared_lengths(trainer.train_dataset, len(train_dataset), training_args.max_length, "train")
    if eval_dataset is not None:
        check_prepared_lengths(trainer.eval_dataset, len(eval_dataset), training_args.max_length, "validation")

    # Train (resuming from the last checkpoint of output_dir when there is one)
    checkpoint = training_args.resume_from_checkpoint
    if checkpoint is None and os.path.isdir(training_args.output_dir):
        checkpoint = get_last_checkpoint(training_args.output_dir)
    if checkpoint:
        print(f"resuming from {checkpoint}", flush=True)
    result = trainer.train(resume_from_checkpoint=checkpoint)
    metrics = {f"train_{k}" if not k.startswith("train") else k: v for k, v in result.metrics.items()}
    if eval_dataset is not None:
        metrics.update(trainer.evaluate())
    if torch.cuda.is_available():
        metrics["peak_gpu_memory_gib"] = round(torch.cuda.max_memory_allocated() / 2**30, 3)
    seen = [e["num_tokens"] for e in trainer.state.log_history if "num_tokens" in e]  # TRL's running count
    metrics["train_tokens"] = seen[-1] if seen else None

    record = {
        "stage": "sft",
        "dimension": script_args.dimension,
        "protocol": script_args.protocol,
        "template_hash": template_hash(script_args.dimension, script_args.protocol),
        "enable_thinking": script_args.enable_thinking,
        "use_knowledge": script_args.use_knowledge,
        "base_model": model_args.model_name_or_path,
        "dataset_path": script_args.dataset_path,
        "data_version": script_args.data_version or dataset_version(script_args.dataset_path),
        "data_hash": data_hash(train_rows),
        "n_train": len(train_dataset),
        "n_eval": len(eval_dataset) if eval_dataset is not None else 0,
        "max_length": training_args.max_length,
        "length": {"train": train_lengths.to_dict(), "eval": eval_lengths.to_dict() if eval_lengths else None,
                   "n_shortened": train_lengths.n_shortened},
        "lora": {"r": model_args.lora_r, "alpha": model_args.lora_alpha, "dropout": model_args.lora_dropout,
                 "target_modules": list(model_args.lora_target_modules or [])},
        "hyperparameters": hyperparameters(training_args),
        "metrics": metrics,
        "best_checkpoint": trainer.state.best_model_checkpoint,
        "command": shlex.join(["accelerate", "launch", *sys.argv]),
        "versions": {"surveyalign": __version__, "trl": trl.__version__, "transformers": transformers.__version__,
                     "torch": torch.__version__},
    }
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
    script_args, training_args, model_args = make_parser().parse_args_and_config()
    main(script_args, training_args, model_args)

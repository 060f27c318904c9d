"""DPO of the Criticalness judge on top of its SFT adapter (SurveyAlign §5.2.3; pairs: our choice).

# 1. make preference pairs from the SFT adapter (K sampled answers per training unit):
```bash
surveyalign train dpo-pairs --adapter runs/sft/criticalness --dataset data/surveyreview \
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
import shlex
import sys
from collections import Counter

if __package__ in (None, ""):  # run as a script: make the repository importable without installing it
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main(script_args, training_args, model_args) -> dict:
    """Train, save and describe one DPO adapter (Criticalness stage 2; SurveyAlign §5.2.3, pairs: our choice).

    Reads the pairs file (only ``status == "paired"`` records train; the others are counted), refuses a pair
    that would not fit ``max_length`` tokens (TRL would cut the answer), loads the SFT adapter as the trainable
    policy with a frozen copy of it as the reference (see the module docstring), trains with TRL's
    ``DPOTrainer`` (resuming from the last checkpoint of ``output_dir``) and writes the adapter,
    ``surveyalign_training.json`` and the model card into ``output_dir``.

    Args:
        script_args: :class:`surveyalign.training.DPOScriptArguments` (pairs file, optional evaluation pairs,
            ``sft_adapter``, dimension, sample limit, data version).
        training_args: ``trl.DPOConfig`` (``beta``, ``loss_type``, ``max_length`` in tokens of prompt + answer,
            optimisation, precision, DeepSpeed).
        model_args: ``trl.ModelConfig`` (base model; LoRA settings used only without ``sft_adapter``).

    Returns:
        The training record written to ``surveyalign_training.json`` (``stage``="dpo", ``dimension``,
        ``protocol``, ``enable_thinking``, ``use_knowledge``, ``reference``, ``reference_check``,
        ``pair_origins`` (origin -> count), ``n_train`` (pairs), ``hyperparameters``, ``metrics`` (DPO loss,
        rewards), ``adapter``...).

    Raises:
        ValueError: when ``pairs_path`` or the base model is missing, no pair is usable (the message counts the
            file's paired / no_pair records), ``eval_pairs_path`` holds no pair, a pair's dimension,
            protocol or thinking switch disagrees with the SFT adapter, or a pair exceeds ``max_length``.
        RuntimeError: when TRL dropped pairs, the reference is not the frozen SFT adapter, or the saved adapter
            is empty.
    """
    import json

    import torch
    import transformers
    import trl
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer, set_seed
    from transformers.trainer_utils import get_last_checkpoint
    from trl import DPOTrainer, get_peft_config

    from surveyalign import __version__
    from surveyalign.prompts import count_chat_tokens
    from surveyalign.training import (
        TRAINING_RECORD,
        check_packing,
        data_hash,
        finalize_adapter,
        hyperparameters,
        init_deepspeed_comm,
        read_pairs,
    )

    if not script_args.pairs_path:
        raise ValueError("--pairs_path is required (a file written by `surveyalign train dpo-pairs`)")
    init_deepspeed_comm(training_args)
    set_seed(training_args.seed)

    sft_record: dict = {}
    if script_args.sft_adapter:
        record_path = os.path.join(script_args.sft_adapter, TRAINING_RECORD)
        if os.path.isfile(record_path):
            with open(record_path) as handle:
                sft_record = json.load(handle)
    if sft_record.get("dimension", script_args.dimension) != script_args.dimension:
        raise ValueError(f"{script_args.sft_adapter} was trained for {sft_record['dimension']!r}, not "
                         f"{script_args.dimension!r}")
    base_model = model_args.model_name_or_path or sft_record.get("base_model")
    if not base_model:
        raise ValueError("--model_name_or_path is required (no base model recorded with the SFT adapter)")

    # Pairs (only made ones; units without a pair are counted)
    all_records = read_pairs(script_args.pairs_path, paired_only=False)
    pairs = [r for r in all_records if r["status"] == "paired"]
    if script_args.max_train_samples is not None:
        pairs = pairs[: script_args.max_train_samples]
    if not pairs:  # fail before TRL does (a bare StopIteration on an empty dataset)
        statuses = Counter(r["status"] for r in all_records)
        limit = (f", max_train_samples={script_args.max_train_samples}"
                 if script_args.max_train_samples is not None else "")
        raise ValueError(f"no DPO pairs for {script_args.dimension} in {script_args.pairs_path} "
                         f"({len(all_records)} records: {statuses['paired']} paired, {statuses['no_pair']} "
                         f"no_pair{limit}); see the no_pair records' reason and samples")
    for number, pair in enumerate(pairs, 1):
        if pair["dimension"] != script_args.dimension:
            raise ValueError(f"{script_args.pairs_path}: pair {number} ({pair['unit_id']}) has dimension "
                             f"{pair['dimension']!r}, expected {script_args.dimension!r}")
        for key in ("protocol", "enable_thinking"):
            value = pair["chat_template_kwargs"]["enable_thinking"] if key == "enable_thinking" else pair[key]
            if key in sft_record and sft_record[key] != value:
                raise ValueError(f"{script_args.pairs_path}: pair {number} has {key}={value!r} but the SFT "
                                 f"adapter was trained with {sft_record[key]!r}")
    # knowledge blocks: what dpo-pairs recorded, else what the SFT adapter was trained with
    use_knowledge = pairs[0].get("use_knowledge", sft_record.get("use_knowledge"))
    if use_knowledge is None:
        print("neither the pairs nor an SFT record say whether knowledge blocks were used; recording false",
              flush=True)
    use_knowledge = bool(use_knowledge)
    origins = Counter(p["origin"] for p in pairs)
    print(f"DPO on {len(pairs)} pairs ({dict(origins)}); {len(all_records) - len(pairs)} units of the file "
          "have no pair or are beyond max_train_samples", flush=True)

    tokenizer = AutoTokenizer.from_pretrained(base_model, trust_remote_code=training_args.trust_remote_code)
    # TRL cuts the end of a too-long pair (the answer): refuse instead, dpo-pairs fits the survey to max_length
    if training_args.max_length is not None:
        for pair in pairs:
            kwargs = pair["chat_template_kwargs"]
            longest = max(count_chat_tokens(tokenizer, pair["prompt"] + pair[side], **kwargs)
                          for side in ("chosen", "rejected"))
            if longest > training_args.max_length:
                raise ValueError(f"{script_args.pairs_path}: pair {pair['unit_id']} needs {longest} tokens > "
                                 f"max_length={training_args.max_length}; re-run dpo-pairs with --max-length "
                                 f"{training_args.max_length}")
    columns = ("prompt", "chosen", "rejected", "chat_template_kwargs")
    train_dataset = Dataset.from_list([{c: p[c] for c in columns} for p in pairs])
    eval_dataset = None
    if script_args.eval_pairs_path and training_args.eval_strategy != "no":
        eval_pairs = read_pairs(script_args.eval_pairs_path)
        if not eval_pairs:  # an error, not a silent run without evaluation (as in recipes/sft.py)
            total = len(read_pairs(script_args.eval_pairs_path, paired_only=False))
            raise ValueError(f"no evaluation pairs in {script_args.eval_pairs_path} ({total} records, none "
                             "paired); pass --eval_strategy no or drop --eval_pairs_path to train without "
                             "evaluation")
        eval_dataset = Dataset.from_list([{c: p[c] for c in columns} for p in eval_pairs])

    # Policy: the SFT adapter, trainable (TRL copies it as the frozen reference, checked below), or a fresh
    # LoRA adapter (reference: the adapter-disabled base model)
    model_init_kwargs = {"revision": model_args.model_revision, "attn_implementation": model_args.attn_implementation,
                         "dtype": model_args.dtype, "trust_remote_code": training_args.trust_remote_code}
    model_init_kwargs.update(training_args.model_init_kwargs or {})
    if script_args.sft_adapter:
        from peft import PeftModel

        base = AutoModelForCausalLM.from_pretrained(base_model, **model_init_kwargs)
        model = PeftModel.from_pretrained(base, script_args.sft_adapter, is_trainable=True)
        peft_config = None
    else:
        training_args.model_init_kwargs = model_init_kwargs
        model = base_model
        peft_config = get_peft_config(model_args)
    push_to_hub, training_args.push_to_hub = training_args.push_to_hub, False  # we push the finished folder
    trainer = DPOTrainer(
        model=model,
        ref_model=None,
        args=training_args,
        train_dataset=train_dataset,
        eval_dataset=eval_dataset,
        processing_class=tokenizer,
        peft_config=peft_config,
    )
    if len(trainer.train_dataset) != len(train_dataset):
        raise RuntimeError(f"TRL kept {len(trainer.train_dataset)} of {len(train_dataset)} pairs")
    check_packing(training_args, trainer.model.config._attn_implementation)  # no flattened (padding-free) rows
    reference_check = _check_reference(trainer.model, script_args.sft_adapter)
    print(f"DPO reference: {reference_check['reference']}", flush=True)

    checkpoint = training_args.resume_from_checkpoint
    if checkpoint is None and os.path.isdir(training_args.output_dir):
        checkpoint = get_last_checkpoint(training_args.output_dir)
    if checkpoint:
        print(f"resuming from {checkpoint}", flush=True)
    result = trainer.train(resume_from_checkpoint=checkpoint)
    metrics = {f"train_{k}" if not k.startswith("train") else k: v for k, v in result.metrics.items()}
    if eval_dataset is not None:
        metrics.update(trainer.evaluate())

    lora = sft_record.get("lora") or {"r": model_args.lora_r, "alpha": model_args.lora_alpha,
                                      "dropout": model_args.lora_dropout,
                                      "target_modules": list(model_args.lora_target_modules or [])}
    first_protocol = pairs[0]["protocol"]
    record = {
        "stage": "dpo",
        "dimension": script_args.dimension,
        "protocol": first_protocol,
        "template_hash": sft_record.get("template_hash"),
        "enable_thinking": bool(pairs[0]["chat_template_kwargs"]["enable_thinking"]),
        "use_knowledge": use_knowledge,
        "base_model": base_model,
        "sft_adapter": script_args.sft_adapter,
        "reference": reference_check["reference"],
        "reference_check": reference_check,
        "dataset_path": script_args.pairs_path,
        "data_version": script_args.data_version or sft_record.get("data_version"),
        "data_hash": data_hash(pairs, columns=("unit_id", "prompt", "chosen", "rejected")),
        "sft_data_hash": sft_record.get("data_hash"),
        "pair_origins": dict(origins),
        "n_train": len(train_dataset),
        "n_eval": len(eval_dataset) if eval_dataset is not None else 0,
        "max_length": training_args.max_length,
        "length": {"n_shortened": sum(1 for p in pairs if p.get("survey_tokens_removed"))},
        "lora": lora,
        "hyperparameters": hyperparameters(training_args, extra=("beta", "loss_type")),
        "metrics": metrics,
        "best_checkpoint": trainer.state.best_model_checkpoint,
        "command": shlex.join(["accelerate", "launch", *sys.argv]),
        "versions": {"surveyalign": __version__, "trl": trl.__version__, "transformers": transformers.__version__,
                     "torch": torch.__version__},
    }
    finalize_adapter(trainer, training_args, record, script_args.model_card_template, push_to_hub=push_to_hub)
    return record


def _check_reference(model, sft_adapter: str | None) -> dict:
    """Check which reference TRL's DPOTrainer will use for a PEFT policy, before training.

    Args:
        model: ``trainer.model`` (a ``peft.PeftModel``) right after the trainer was built.
        sft_adapter: the SFT adapter folder the policy was loaded from, or None (fresh adapter).

    Returns:
        ``{"reference": str, "adapter": "ref" | None, "n_tensors_checked": int}``; with ``sft_adapter`` every
        ``ref`` LoRA tensor was compared with the saved SFT tensor of the same module (exact equality after
        casting the saved tensor to the parameter's dtype; ZeRO-3-partitioned, zero-sized ones are skipped).

    Raises:
        RuntimeError: when there is an SFT adapter but no ``ref`` adapter (TRL would use the base model), or a
            ``ref`` tensor differs from the SFT adapter's.
    """
    import torch
    from safetensors.torch import load_file

    if not sft_adapter:
        if "ref" in getattr(model, "peft_config", {}):
            raise RuntimeError("a fresh adapter was given a 'ref' copy; expected the adapter-disabled reference")
        return {"reference": "base model (adapter disabled)", "adapter": None, "n_tensors_checked": 0}
    if "ref" not in getattr(model, "peft_config", {}):
        raise RuntimeError(f"TRL built no frozen 'ref' copy of {sft_adapter}: the DPO reference would be the base "
                           "model, not the SFT policy (check the TRL/PEFT versions)")
    saved = load_file(os.path.join(sft_adapter, "adapter_model.safetensors"))
    checked = 0
    for name, param in model.named_parameters():
        if ".ref." not in name or param.numel() == 0:
            continue
        if param.requires_grad:
            raise RuntimeError(f"reference tensor {name} is trainable; the reference must stay frozen")
        key = name.replace(".ref.", ".")
        if key not in saved:
            raise RuntimeError(f"reference tensor {name} has no counterpart {key} in {sft_adapter}")
        if not torch.equal(param.detach().cpu(), saved[key].to(param.dtype)):
            raise RuntimeError(f"reference tensor {name} differs from {key} of {sft_adapter}")
        checked += 1
    return {"reference": "frozen copy of the SFT adapter", "adapter": "ref", "n_tensors_checked": checked}


def make_parser():
    """The recipe's ``TrlParser`` over (DPOScriptArguments, DPOConfig, ModelConfig).

    Returns:
        ``trl.TrlParser``; ``parse_args_and_config()`` gives (script_args, training_args, model_args) for
        :func:`main`, the YAML of ``--config`` overridden by command-line flags.
    """
    from surveyalign.training import make_dpo_parser

    return make_dpo_parser(prog="recipes/dpo.py", description=__doc__)


if __name__ == "__main__":
    script_args, training_args, model_args = make_parser().parse_args_and_config()
    main(script_args, training_args, model_args)

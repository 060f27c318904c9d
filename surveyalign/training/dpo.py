"""The DPO recipe's inputs, policy, reference check and record (SurveyAlign §5.2.3): what ``recipes/dpo.py`` calls.

Pairs come from ``surveyalign train dpo-pairs`` (:func:`surveyalign.training.make_dpo_pairs`); only ``paired``
records train, the others are counted. The reference model is explained in ``recipes/dpo.py``'s docstring and
checked by :func:`check_reference`. torch, PEFT and safetensors are imported inside the functions (``train``
extra).
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from datasets import Dataset

from surveyalign.backends.fingerprint import adapter_fingerprint
from surveyalign.models import (
    base_record,
    check_adapter_attached,
    quantization_record,
    read_training_record,
    resolve_base,
    resolve_model_path,
)
from surveyalign.models.paths import from_hub, hub_folder
from surveyalign.prompts import count_chat_tokens
from surveyalign.training.adapter import hyperparameters
from surveyalign.training.data import data_hash, ka_build_command, ka_dataset_path
from surveyalign.training.pairs import read_pairs
from surveyalign.training.progress import quiet_library_bars
from surveyalign.training.steps import model_init_kwargs, provenance

__all__ = ["DPOInputs", "check_reference", "dpo_datasets", "dpo_policy", "dpo_record", "read_dpo_inputs"]

_COLUMNS = ("prompt", "chosen", "rejected", "chat_template_kwargs")


@dataclass
class DPOInputs:
    """What a DPO run trains on.

    Attributes:
        pairs: the ``paired`` records trained on (after ``max_train_samples``).
        n_records: records in the pairs file (paired or not).
        sft_record: the SFT adapter's training record (``{}`` without one).
        base_model: the base model (``--model_name_or_path``, else the SFT record's).
        use_knowledge: whether the prompts carry knowledge blocks (the pairs' record, else the SFT record's).
        origins: pair origin -> count.
        n_with_knowledge: pairs whose prompt carries a knowledge block (their ``with_knowledge``), or ``None``
            when the pairs file does not say (made before the field existed).
    """

    pairs: list[dict[str, Any]]
    n_records: int
    sft_record: dict[str, Any]
    base_model: str
    use_knowledge: bool
    origins: Counter = field(default_factory=Counter)
    n_with_knowledge: int | None = None


def read_dpo_inputs(script_args: Any, model_args: Any) -> DPOInputs:
    """Read the pairs and the SFT record and check that they agree (dimension, protocol, thinking switch).

    Args:
        script_args: :class:`surveyalign.training.DPOScriptArguments`.
        model_args: ``trl.ModelConfig``.

    Returns:
        The :class:`DPOInputs` (a line on the pairs is printed).

    Raises:
        ValueError: no pairs file, no base model, no usable pair (the message counts the file's paired / no_pair
            records), a pair's dimension, protocol or thinking switch that disagrees with the SFT adapter, a pair
            sampled from another adapter (its ``adapter_fingerprint``), or pairs
            made with ``use_knowledge`` none of whose prompts carries a knowledge block (a dataset without a
            ``knowledge`` column) unless ``allow_missing_knowledge``.
    """
    if not script_args.pairs_path:
        raise ValueError("--pairs_path is required (a file written by `surveyalign train dpo-pairs`)")
    if script_args.sft_adapter:
        script_args.sft_adapter = hub_folder(script_args.sft_adapter, "--sft_adapter")
    sft = read_training_record(script_args.sft_adapter, required=False) if script_args.sft_adapter else {}
    if sft.get("dimension", script_args.dimension) != script_args.dimension:
        raise ValueError(f"{script_args.sft_adapter} was trained for {sft['dimension']!r}, not "
                         f"{script_args.dimension!r}")
    base_model = model_args.model_name_or_path or sft.get("base_model")
    if not base_model:
        raise ValueError("--model_name_or_path is required (no base model recorded with the SFT adapter)")
    base_model = resolve_model_path(base_model, "--model_name_or_path")  # local-looking: never a Hub lookup
    records = read_pairs(script_args.pairs_path, paired_only=False)
    pairs = [r for r in records if r["status"] == "paired"][: script_args.max_train_samples]
    if not pairs:  # fail before TRL does (a bare StopIteration on an empty dataset)
        statuses = Counter(r["status"] for r in records)
        limit = (f", max_train_samples={script_args.max_train_samples}"
                 if script_args.max_train_samples is not None else "")
        raise ValueError(f"no DPO pairs for {script_args.dimension} in {script_args.pairs_path} "
                         f"({len(records)} records: {statuses['paired']} paired, {statuses['no_pair']} "
                         f"no_pair{limit}); see the no_pair records' reason and samples")
    made_by = adapter_fingerprint(script_args.sft_adapter).get("sha256") if script_args.sft_adapter else None
    for number, pair in enumerate(pairs, 1):
        if made_by and pair.get("adapter_fingerprint") not in (None, made_by):  # sampled from another adapter
            raise ValueError(f"{script_args.pairs_path}: pair {number} ({pair['unit_id']}) was sampled from another "
                             f"adapter than {script_args.sft_adapter} (adapter_fingerprint differs); re-make the "
                             f"pairs with `surveyalign train dpo-pairs --adapter {script_args.sft_adapter}`")
        if pair["dimension"] != script_args.dimension:
            raise ValueError(f"{script_args.pairs_path}: pair {number} ({pair['unit_id']}) has dimension "
                             f"{pair['dimension']!r}, expected {script_args.dimension!r}")
        for key in ("protocol", "enable_thinking"):
            value = pair["chat_template_kwargs"]["enable_thinking"] if key == "enable_thinking" else pair[key]
            if key in sft and sft[key] != value:
                raise ValueError(f"{script_args.pairs_path}: pair {number} has {key}={value!r} but the SFT "
                                 f"adapter was trained with {sft[key]!r}")
    use_knowledge = pairs[0].get("use_knowledge", sft.get("use_knowledge"))
    if use_knowledge is None:
        print("neither the pairs nor an SFT record say whether knowledge blocks were used; recording false",
              flush=True)
    n_with = sum(bool(p["with_knowledge"]) for p in pairs) if all("with_knowledge" in p for p in pairs) else None
    if use_knowledge and n_with == 0 and not script_args.allow_missing_knowledge:
        dataset = pairs[0].get("dataset_path") or "DATASET"
        raise ValueError(f"{script_args.pairs_path}: use_knowledge is true but none of the {len(pairs)} pairs' "
                         f"prompts carries a knowledge block (made from {dataset}, which has no `knowledge` text); "
                         f"build the KA dataset with `{ka_build_command(dataset)}` and re-make the pairs with "
                         f"`surveyalign train dpo-pairs --dataset {ka_dataset_path(dataset)}`, or set "
                         "allow_missing_knowledge: true to train without it (recorded)")
    origins = Counter(p["origin"] for p in pairs)
    print(f"DPO on {len(pairs)} pairs ({dict(origins)}); {len(records) - len(pairs)} units of the file "
          "have no pair or are beyond max_train_samples", flush=True)
    return DPOInputs(pairs, len(records), sft, base_model, bool(use_knowledge), origins, n_with)


def dpo_datasets(inputs: DPOInputs, script_args: Any, training_args: Any, tokenizer: Any) -> tuple[Any, Any]:
    """The training and evaluation datasets; a pair longer than ``max_length`` is refused (TRL would cut the answer;
    ``dpo-pairs`` fits the survey body to it).

    Args:
        inputs: from :func:`read_dpo_inputs`.
        script_args: :class:`surveyalign.training.DPOScriptArguments` (``eval_pairs_path``).
        training_args: ``trl.DPOConfig`` (``max_length``, ``eval_strategy``).
        tokenizer: the base model's tokenizer.

    Returns:
        ``(train_dataset, eval_dataset or None)``.

    Raises:
        ValueError: a pair exceeds ``max_length``, or ``eval_pairs_path`` holds no pair.
    """
    if training_args.max_length is not None:
        for pair in inputs.pairs:
            longest = max(count_chat_tokens(tokenizer, pair["prompt"] + pair[side], **pair["chat_template_kwargs"])
                          for side in ("chosen", "rejected"))
            if longest > training_args.max_length:
                raise ValueError(f"{script_args.pairs_path}: pair {pair['unit_id']} needs {longest} tokens > "
                                 f"max_length={training_args.max_length}; re-run dpo-pairs with --max-length "
                                 f"{training_args.max_length}")
    train = Dataset.from_list([{c: p[c] for c in _COLUMNS} for p in inputs.pairs])
    if not (script_args.eval_pairs_path and training_args.eval_strategy != "no"):
        return train, None
    eval_pairs = read_pairs(script_args.eval_pairs_path)
    if not eval_pairs:  # an error, not a silent run without evaluation (as in recipes/sft.py)
        total = len(read_pairs(script_args.eval_pairs_path, paired_only=False))
        raise ValueError(f"no evaluation pairs in {script_args.eval_pairs_path} ({total} records, none "
                         "paired); pass --eval_strategy no or drop --eval_pairs_path to train without "
                         "evaluation")
    return train, Dataset.from_list([{c: p[c] for c in _COLUMNS} for p in eval_pairs])


def dpo_policy(script_args: Any, training_args: Any, model_args: Any, base_model: str) -> tuple[Any, Any]:
    """The policy: the SFT adapter loaded trainable (TRL copies it as the frozen reference), or, without one, the
    base model with a fresh LoRA adapter from ``model_args`` (reference: the adapter-disabled base model).

    The base is loaded quantised when ``model_args`` says so (QLoRA); the SFT adapter must have been trained on the
    same base in the same quantisation (its record's ``base`` and ``quantization``), and every tensor of it must
    attach to a module of the base.

    Returns:
        ``(model or model name, peft_config or None)`` for ``trl.DPOTrainer``.

    Raises:
        BaseMismatchError: (a ``ValueError``) the base or its quantisation differs from the SFT adapter's record.
        RuntimeError: an SFT adapter tensor attaches to no module of the base.
    """
    from trl import get_peft_config, get_quantization_config

    init = model_init_kwargs(model_args, training_args, trust_remote_code=training_args.trust_remote_code)
    quantization = get_quantization_config(model_args)  # QLoRA: the 4-bit base the SFT adapter was trained on
    if quantization is not None:
        init["quantization_config"] = quantization
    if not script_args.sft_adapter:
        training_args.model_init_kwargs = init
        return base_model, get_peft_config(model_args)
    from peft import PeftModel, prepare_model_for_kbit_training
    from transformers import AutoModelForCausalLM

    # the SFT adapter continues on its own base, loaded the way it was trained (else BaseMismatchError)
    resolve_base(base_model, script_args.sft_adapter, quantization=quantization_record(model_args) or "none",
                 where="recipes/dpo.py")
    with quiet_library_bars():
        base = from_hub(AutoModelForCausalLM.from_pretrained, base_model, "model", **init)
    if quantization is not None:
        base = prepare_model_for_kbit_training(base, use_gradient_checkpointing=training_args.gradient_checkpointing)
    model = PeftModel.from_pretrained(base, script_args.sft_adapter, is_trainable=True)
    check_adapter_attached(model, script_args.sft_adapter)  # every SFT tensor in a module of this base
    return model, None


def check_reference(model: Any, sft_adapter: str | None) -> dict[str, Any]:
    """Check which reference TRL's DPOTrainer will use for a PEFT policy, before training.

    Args:
        model: ``trainer.model`` (a ``peft.PeftModel``) right after the trainer was built.
        sft_adapter: the SFT adapter folder the policy was loaded from, or None (fresh adapter).

    Returns:
        ``{"reference": str, "adapter": "ref" | None, "n_tensors_checked": int}``; with ``sft_adapter`` every
        ``ref`` tensor (LoRA, and whole modules of ``modules_to_save``) was compared with the saved SFT tensor of the
        same module (exact equality after casting the saved tensor to the parameter's dtype; ZeRO-3-partitioned,
        zero-sized ones are skipped).

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
        # LoRA tensors are saved as `<module>.lora_A.weight`; a module trained whole (PEFT modules_to_save, e.g.
        # the tiny profile's lm_head) is saved under the module's own name, `<module>.weight`
        key = name.replace(".modules_to_save.ref.", ".").replace(".ref.", ".")
        if key not in saved:
            raise RuntimeError(f"reference tensor {name} has no counterpart {key} in {sft_adapter}")
        if not torch.equal(param.detach().cpu(), saved[key].to(param.dtype)):
            raise RuntimeError(f"reference tensor {name} differs from {key} of {sft_adapter}")
        checked += 1
    return {"reference": "frozen copy of the SFT adapter", "adapter": "ref", "n_tensors_checked": checked}


def dpo_record(script_args: Any, training_args: Any, model_args: Any, inputs: DPOInputs, datasets: tuple[Any, Any],
               reference_check: dict[str, Any], metrics: dict[str, Any], best_checkpoint: str | None
               ) -> dict[str, Any]:
    """The training record of a DPO adapter (``surveyalign_training.json``; read back by evaluation).

    Returns:
        ``stage``="dpo", ``dimension``, ``protocol``, ``template_hash``, ``enable_thinking``, ``use_knowledge``,
        ``n_train_with_knowledge`` (pairs whose prompt carries a knowledge block; null for a pairs file that does
        not say), ``allow_missing_knowledge``, ``base_model``, ``sft_adapter``, ``reference``, ``reference_check``, ``data_hash``, ``pair_origins``,
        ``n_train``/``n_eval`` (pairs), ``max_length``, ``lora``, ``hyperparameters`` (with ``beta``,
        ``loss_type``), ``metrics``, ``best_checkpoint``, ``command``, ``versions``.
    """
    sft, pairs = inputs.sft_record, inputs.pairs
    train, evaluation = datasets
    lora = sft.get("lora") or {"r": model_args.lora_r, "alpha": model_args.lora_alpha,
                               "dropout": model_args.lora_dropout,
                               "target_modules": list(model_args.lora_target_modules or [])}
    return {
        "stage": "dpo",
        "dimension": script_args.dimension,
        "protocol": pairs[0]["protocol"],
        "template_hash": sft.get("template_hash"),
        "enable_thinking": bool(pairs[0]["chat_template_kwargs"]["enable_thinking"]),
        "use_knowledge": inputs.use_knowledge,
        "base_model": inputs.base_model,
        **base_record(model_args, model=inputs.base_model),  # base identity + quantisation, checked at evaluation
        "sft_adapter": script_args.sft_adapter,
        "reference": reference_check["reference"],
        "reference_check": reference_check,
        "dataset_path": script_args.pairs_path,
        "data_version": script_args.data_version or sft.get("data_version"),
        "data_hash": data_hash(pairs, columns=("unit_id", "prompt", "chosen", "rejected")),
        "sft_data_hash": sft.get("data_hash"),
        "pair_origins": dict(inputs.origins),
        "n_train": len(train),
        "n_train_with_knowledge": inputs.n_with_knowledge,  # evaluation compares it with its units
        "allow_missing_knowledge": bool(getattr(script_args, "allow_missing_knowledge", False)),
        "n_eval": len(evaluation) if evaluation is not None else 0,
        "max_length": training_args.max_length,
        "length": {"n_shortened": sum(1 for p in pairs if p.get("survey_tokens_removed"))},
        "lora": lora,
        "hyperparameters": hyperparameters(training_args, extra=("beta", "loss_type")),
        "metrics": metrics,
        "best_checkpoint": best_checkpoint,
        **provenance(),
    }

"""The SFT recipe's data and record (SurveyAlign §5.1-§5.2, App. D): what ``recipes/sft.py`` calls.

The examples come from :func:`surveyalign.training.prepare_sft_dataset` (the shared prompt builder and length
rule); the record is what :func:`surveyalign.models.write_training_record` writes next to the adapter.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from surveyalign.data import load_surveyreview
from surveyalign.models import base_record
from surveyalign.training.adapter import dataset_version, hyperparameters
from surveyalign.training.data import (
    LengthReport,
    data_hash,
    describe_split,
    prepare_sft_dataset,
    require_examples,
    require_knowledge,
    template_hash,
)
from surveyalign.training.steps import provenance

__all__ = ["SFTData", "check_sft_inputs", "load_sft_data", "sft_record"]


@dataclass
class SFTData:
    """The training (and evaluation) examples of one dimension.

    Attributes:
        train_rows: the dataset rows trained on (after ``max_train_samples``).
        train_dataset: TRL prompt-completion examples fitted to ``max_length``.
        train_lengths: what the length rule did to them.
        eval_dataset: the evaluation examples (``None`` with ``eval_strategy: no``).
        eval_lengths: their length report (``None`` likewise).
    """

    train_rows: Any
    train_dataset: Any
    train_lengths: LengthReport
    eval_dataset: Any = None
    eval_lengths: LengthReport | None = None


def _rows(data: Any, split: str, limit: int | None) -> Any:
    rows = data[split]
    return rows.select(range(min(limit, len(rows)))) if limit is not None else rows


def check_sft_inputs(script_args: Any) -> None:
    """What can be refused from the dataset alone, before the tokenizer or the model is loaded (a 32B base takes
    minutes): with ``use_knowledge`` on, training rows without any ``knowledge`` text
    (:func:`surveyalign.training.data.require_knowledge`, SurveyAlign §5.2.3).

    Args:
        script_args: :class:`surveyalign.training.SFTScriptArguments`.

    Raises:
        ValueError: one line naming the dataset folder and the ``surveyalign ka build`` command.
        FileNotFoundError: the dataset folder or the dimension's split does not exist.
    """
    if not script_args.use_knowledge:
        return
    data = load_surveyreview(script_args.dataset_path, script_args.dimension)
    train_rows = _rows(data, script_args.dataset_train_split, script_args.max_train_samples)
    require_knowledge(train_rows, dataset_path=script_args.dataset_path, dimension=script_args.dimension,
                      split=script_args.dataset_train_split, allow_missing=script_args.allow_missing_knowledge,
                      fix=_KNOWLEDGE_FIX)


_KNOWLEDGE_FIX = "set use_knowledge: false (plain prompts) or allow_missing_knowledge: true to train without it (recorded)"


def load_sft_data(script_args: Any, training_args: Any, tokenizer: Any) -> SFTData:
    """Read the dimension's splits and build its examples; print one line per split on what was shortened.

    Args:
        script_args: :class:`surveyalign.training.SFTScriptArguments`.
        training_args: ``trl.SFTConfig`` (``max_length``, ``eval_strategy``).
        tokenizer: the base model's tokenizer (its chat template renders the examples).

    Returns:
        The :class:`SFTData`.

    Raises:
        ValueError: ``use_knowledge`` is on but no training row carries a ``knowledge`` text and
            ``allow_missing_knowledge`` is off (:func:`surveyalign.training.data.require_knowledge`: the folder and
            the ``surveyalign ka build`` command are named), a split gives no example (the message names the
            folder, dimension, split and counts; an empty evaluation split is an error too: the App. D schedule
            picks the best checkpoint by eval loss), a row of another dimension, or an example that does not fit
            even without survey text.
    """
    data = load_surveyreview(script_args.dataset_path, script_args.dimension)
    train_rows = _rows(data, script_args.dataset_train_split, script_args.max_train_samples)
    if script_args.use_knowledge:  # KA prompts from rows without knowledge: refused before any example is built
        require_knowledge(train_rows, dataset_path=script_args.dataset_path, dimension=script_args.dimension,
                          split=script_args.dataset_train_split,
                          allow_missing=script_args.allow_missing_knowledge, fix=_KNOWLEDGE_FIX)
    build = {"dimension": script_args.dimension, "protocol": script_args.protocol,
             "enable_thinking": script_args.enable_thinking, "max_length": training_args.max_length,
             "use_knowledge": script_args.use_knowledge}
    where = {"dataset_path": script_args.dataset_path, "dimension": script_args.dimension}
    out = SFTData(train_rows, *prepare_sft_dataset(train_rows, tokenizer, **build))
    require_examples(out.train_lengths, len(train_rows), split=script_args.dataset_train_split, **where)
    print(describe_split(out.train_lengths, script_args.dataset_train_split), flush=True)
    if training_args.eval_strategy != "no":
        eval_rows = _rows(data, script_args.dataset_eval_split, script_args.max_eval_samples)
        out.eval_dataset, out.eval_lengths = prepare_sft_dataset(eval_rows, tokenizer, **build)
        require_examples(out.eval_lengths, len(eval_rows), split=script_args.dataset_eval_split, what="evaluation",
                         hint="; pass --eval_strategy no --load_best_model_at_end false to train without "
                              "evaluation, or choose another --dataset_eval_split", **where)
        print(describe_split(out.eval_lengths, script_args.dataset_eval_split, what="evaluation"), flush=True)
    if script_args.use_knowledge:
        print(f"{out.train_lengths.n_with_knowledge}/{out.train_lengths.n_units} training examples carry a "
              "knowledge block" + ("" if out.train_lengths.n_with_knowledge
                                   else " (allow_missing_knowledge: true; recorded)"), flush=True)
    return out


def sft_record(script_args: Any, training_args: Any, model_args: Any, data: SFTData, metrics: dict[str, Any],
               best_checkpoint: str | None) -> dict[str, Any]:
    """The training record of an SFT adapter (``surveyalign_training.json``; read back by evaluation).

    Args:
        script_args: :class:`surveyalign.training.SFTScriptArguments`.
        training_args: ``trl.SFTConfig``.
        model_args: ``trl.ModelConfig``.
        data: the examples trained on.
        metrics: from :func:`surveyalign.training.steps.train_with_resume`.
        best_checkpoint: ``trainer.state.best_model_checkpoint``.

    Returns:
        ``stage``="sft", ``dimension``, ``protocol``, ``template_hash``, ``enable_thinking``, ``use_knowledge``,
        ``n_train_with_knowledge`` (training examples whose prompt carries a knowledge block, in [0, n_train];
        0 without ``use_knowledge``), ``allow_missing_knowledge``,
        ``base_model``, ``dataset_path``, ``data_version``, ``data_hash`` (64 hex), ``n_train``/``n_eval``,
        ``max_length`` (the one place it is stored), ``length``, ``lora``, ``hyperparameters``, ``metrics``,
        ``best_checkpoint``, ``command``, ``versions``.
    """
    return {
        "stage": "sft",
        "dimension": script_args.dimension,
        "protocol": script_args.protocol,
        "template_hash": template_hash(script_args.dimension, script_args.protocol),
        "enable_thinking": script_args.enable_thinking,
        "use_knowledge": script_args.use_knowledge,
        "base_model": model_args.model_name_or_path,
        **base_record(model_args),  # base identity + quantisation: evaluation, serve and score check and reuse them
        "dataset_path": script_args.dataset_path,
        "data_version": script_args.data_version or dataset_version(script_args.dataset_path),
        "data_hash": data_hash(data.train_rows),
        "n_train": len(data.train_dataset),
        "n_train_with_knowledge": data.train_lengths.n_with_knowledge,  # evaluation compares it with its units
        "allow_missing_knowledge": bool(getattr(script_args, "allow_missing_knowledge", False)),
        "n_eval": len(data.eval_dataset) if data.eval_dataset is not None else 0,
        "max_length": training_args.max_length,
        "length": {"train": data.train_lengths.to_dict(),
                   "eval": data.eval_lengths.to_dict() if data.eval_lengths else None,
                   "n_shortened": data.train_lengths.n_shortened},
        "lora": {"r": model_args.lora_r, "alpha": model_args.lora_alpha, "dropout": model_args.lora_dropout,
                 "target_modules": list(model_args.lora_target_modules or [])},
        "hyperparameters": hyperparameters(training_args),
        "metrics": {"train_tokens": None, **metrics},
        "best_checkpoint": best_checkpoint,
        **provenance(),
    }

"""The steps both recipes share: model loading options, training with resume, and the record's provenance.

``recipes/sft.py`` and ``recipes/dpo.py`` read top to bottom as TRL's scripts do; what they have in common lives
here (SurveyAlign App. D schedule: resume from the last checkpoint, evaluation loss, best checkpoint). torch,
transformers and TRL are imported inside the functions: they come with the ``train`` extra only.
"""

from __future__ import annotations

import os
import shlex
import sys
from typing import Any

from surveyalign import __version__

__all__ = ["model_init_kwargs", "provenance", "train_with_resume"]


def model_init_kwargs(model_args: Any, training_args: Any, **extra: Any) -> dict[str, Any]:
    """Keyword arguments for ``from_pretrained`` of the base model: revision, attention kernel, dtype, plus
    ``training_args.model_init_kwargs`` (which win).

    Args:
        model_args: ``trl.ModelConfig``.
        training_args: ``trl.SFTConfig`` / ``trl.DPOConfig``.
        **extra: further keys (e.g. ``trust_remote_code``).

    Returns:
        The merged dict.
    """
    kwargs = {"revision": model_args.model_revision, "attn_implementation": model_args.attn_implementation,
              "dtype": model_args.dtype, **extra}
    kwargs.update(training_args.model_init_kwargs or {})
    return kwargs


def train_with_resume(trainer: Any, training_args: Any, evaluate: bool, resume: bool = True) -> dict[str, Any]:
    """Train (from the last checkpoint of ``output_dir`` when there is one and ``resume``), then evaluate.

    Log entries go to ``<output_dir>/training_log.jsonl`` with one progress bar on the terminal
    (:func:`surveyalign.training.progress.use_log_file`); the throughput figures count only the steps of this run.

    Args:
        trainer: a TRL trainer.
        training_args: its config (``resume_from_checkpoint``, ``output_dir``).
        evaluate: run ``trainer.evaluate()`` after training (there is an evaluation split).
        resume: look for a checkpoint in ``output_dir`` (:func:`surveyalign.training.rundir.guard_output_dir`
            decides: ``False`` for a fresh run).

    Returns:
        The metrics: ``train_*`` (loss, runtime in s, samples/s and steps/s over this run's
        ``train_steps_this_run`` steps, ...), the evaluation metrics, ``peak_gpu_memory_gib`` on a
        GPU and ``train_tokens`` (TRL's running count, when it logs one).
    """
    import torch
    from transformers.trainer_utils import get_last_checkpoint

    from surveyalign.training.progress import (
        checkpoint_step,
        rates_over_this_run,
        use_log_file,
    )

    log_file = use_log_file(trainer, training_args.output_dir)  # log lines to a file, one progress bar
    checkpoint = training_args.resume_from_checkpoint
    if checkpoint is None and resume and os.path.isdir(training_args.output_dir):
        checkpoint = get_last_checkpoint(training_args.output_dir)
    if checkpoint:
        print(f"resuming from {checkpoint}", flush=True)
    print(f"training log: {log_file}", flush=True)
    result = trainer.train(resume_from_checkpoint=checkpoint)
    run_metrics = rates_over_this_run(result.metrics, trainer.state, checkpoint_step(checkpoint), training_args)
    metrics = {f"train_{k}" if not k.startswith("train") else k: v for k, v in run_metrics.items()}
    if evaluate:
        metrics.update(trainer.evaluate())
    if torch.cuda.is_available():
        metrics["peak_gpu_memory_gib"] = round(torch.cuda.max_memory_allocated() / 2**30, 3)
    seen = [e["num_tokens"] for e in trainer.state.log_history if "num_tokens" in e]
    if seen:
        metrics["train_tokens"] = seen[-1]
    return metrics


def provenance() -> dict[str, Any]:
    """The record's ``command`` (the accelerate command line) and ``versions`` (surveyalign, trl, transformers,
    torch)."""
    import torch
    import transformers
    import trl

    return {"command": shlex.join(["accelerate", "launch", *sys.argv]),
            "versions": {"surveyalign": __version__, "trl": trl.__version__, "transformers": transformers.__version__,
                         "torch": torch.__version__}}

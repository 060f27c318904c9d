"""Training output: log lines to a file, one progress bar on the terminal, rates over the steps of this run.

transformers prints every log dict (``{'loss': ..., 'grad_norm': ...}``) through the progress bar and opens a
second bar for each evaluation; datasets and the weight loader add bars of their own. For a 15-epoch run that is
screens of dicts between bars. :func:`log_file_progress` replaces the trainer's progress callback: one bar for the
optimizer steps (with the last loss shown on it), every log entry appended as one JSON line to
``<output_dir>/training_log.jsonl`` (main process only), no evaluation bar. :func:`quiet_library_bars` turns off
the datasets and transformers bars while the trainer prepares its data and loads the model.

On resume the trainer divides the whole run's samples by the time of the resumed part only, which overstates
``train_samples_per_second``; :func:`rates_over_this_run` recomputes the rates over the steps this run made.
"""

from __future__ import annotations

import contextlib
import functools
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

__all__ = ["LOG_FILE", "checkpoint_step", "log_file_progress", "quiet_library_bars", "rates_over_this_run",
           "use_log_file"]

#: File (inside the output folder) that receives one JSON line per trainer log entry.
LOG_FILE = "training_log.jsonl"


@functools.cache
def _progress_class() -> type:
    """The callback class, built on first use so importing this module does not import transformers."""
    from transformers.trainer_callback import ProgressCallback

    class _LogFileProgress(ProgressCallback):
        def __init__(self, path: str | Path) -> None:
            super().__init__()
            self.path = Path(path)

        def on_log(self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None,
                   **kwargs: Any) -> None:
            if not state.is_world_process_zero or not logs:
                return
            entry = {"step": state.global_step, "epoch": state.epoch, "time": round(time.time(), 3),
                     **{k: v for k, v in logs.items() if k != "total_flos"}}
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a", encoding="utf-8") as handle:
                handle.write(json.dumps(entry, default=str) + "\n")
            if self.training_bar is not None:
                shown = {k: f"{v:.4g}" for k, v in logs.items() if k in ("loss", "eval_loss") and isinstance(v, float)}
                if shown:
                    self.training_bar.set_postfix(shown, refresh=False)

        def on_prediction_step(self, args: Any, state: Any, control: Any, eval_dataloader: Any = None,
                               **kwargs: Any) -> None:
            return  # no second bar for evaluation: its result is a log entry

    return _LogFileProgress


def log_file_progress(path: str | Path) -> Any:
    """The trainer's progress bar without its printed dicts: each log entry goes to a JSONL file instead.

    Args:
        path: the log file (appended to; its folder is created on the first entry).

    Returns:
        A ``transformers.ProgressCallback`` subclass instance: one bar for the optimizer steps (last loss shown on
        it), every log entry (+ ``step``, ``epoch``, ``time``) appended as a JSON line on the main process, no
        evaluation bar.
    """
    return _progress_class()(path)


def use_log_file(trainer: Any, output_dir: str | Path) -> Path:
    """Swap the trainer's progress/printer callbacks for :func:`log_file_progress` writing to ``output_dir``.

    Args:
        trainer: a ``transformers.Trainer`` (SFTTrainer, DPOTrainer).
        output_dir: the run's output folder.

    Returns:
        The log file path (``<output_dir>/training_log.jsonl``).
    """
    from transformers.trainer_callback import PrinterCallback, ProgressCallback

    for callback in (ProgressCallback, PrinterCallback):
        trainer.remove_callback(callback)
    path = Path(output_dir) / LOG_FILE
    trainer.add_callback(log_file_progress(path))
    return path


@contextlib.contextmanager
def quiet_library_bars() -> Iterator[None]:
    """Turn off the datasets and transformers progress bars inside the block (data preparation, model loading)."""
    import datasets
    import transformers

    datasets_on = datasets.utils.logging.is_progress_bar_enabled()
    transformers_on = transformers.utils.logging.is_progress_bar_enabled()
    datasets.utils.logging.disable_progress_bar()
    transformers.utils.logging.disable_progress_bar()
    try:
        yield
    finally:
        if datasets_on:
            datasets.utils.logging.enable_progress_bar()
        if transformers_on:
            transformers.utils.logging.enable_progress_bar()


def rates_over_this_run(metrics: dict[str, Any], state: Any, start_step: int, args: Any) -> dict[str, Any]:
    """Replace the trainer's throughput figures by rates over the optimizer steps this run made.

    Args:
        metrics: ``TrainOutput.metrics`` (``train_runtime`` in seconds, ``train_samples_per_second``...).
        state: the trainer state after training (``global_step``).
        start_step: the global step training resumed from (0 for a fresh run).
        args: the training arguments (``per_device_train_batch_size``, ``gradient_accumulation_steps``,
            ``world_size``).

    Returns:
        A copy of ``metrics`` with ``train_steps_this_run``, ``train_samples_per_second`` and
        ``train_steps_per_second`` over those steps (sequences = steps x batch x accumulation x processes).
    """
    out = dict(metrics)
    steps = max(0, int(state.global_step) - int(start_step))
    runtime = float(metrics.get("train_runtime") or 0.0)
    samples = steps * args.per_device_train_batch_size * args.gradient_accumulation_steps * args.world_size
    out["train_steps_this_run"] = steps
    if runtime > 0:
        out["train_samples_per_second"] = round(samples / runtime, 3)
        out["train_steps_per_second"] = round(steps / runtime, 3)
    return out


def checkpoint_step(checkpoint: str | None) -> int:
    """The global step a run resumes from: N of ``.../checkpoint-N`` (0 for a fresh run).

    Args:
        checkpoint: the checkpoint folder the trainer resumes from, or None.

    Returns:
        The step number, 0 when ``checkpoint`` is None or not named ``checkpoint-N``.
    """
    if not checkpoint:
        return 0
    name = Path(str(checkpoint)).name
    tail = name.rsplit("-", 1)[-1]
    return int(tail) if name.startswith("checkpoint-") and tail.isdigit() else 0

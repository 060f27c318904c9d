"""One run per training ``output_dir``: a folder holding another run's settings is refused (SFT and DPO recipes).

The recipes resume from the last checkpoint of their ``output_dir`` (SurveyAlign App. D schedule). A second run
with other settings into the same folder would resume the first one's checkpoint while its training record states
the new settings. :func:`guard_output_dir` writes the settings that define a run to
``<output_dir>/surveyalign_run_settings.json`` when it starts, and on a later run compares them:

Nothing is written or deleted until the run is about to train (:meth:`OutputDirCheck.commit`), so a run refused
for its data leaves the folder as it was.

* same settings: the run resumes, as before;
* other settings (or work in the folder whose settings were never written): refused with one line naming the
  folder and each changed field, unless ``--resume`` (continue the checkpoint with the new settings; the changed
  fields are recorded) or ``--overwrite`` (the folder's checkpoints and training record are deleted; a fresh run).

The settings compared: every field of the script arguments (dataset, dimension, protocol, pairs, SFT adapter,
sample limits, ...) and of ``trl.ModelConfig`` (base model, LoRA), and the training arguments in
:data:`TRAINING_FIELDS` (optimisation, lengths, seed, DPO ``beta`` / ``loss_type``); output, logging and Hub fields
are not part of a run's identity.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["RUN_SETTINGS", "TRAINING_FIELDS", "OutputDirCheck", "guard_output_dir", "run_settings"]

#: The settings file in ``output_dir``.
RUN_SETTINGS = "surveyalign_run_settings.json"
#: Training arguments that define a run (read when the config has them).
TRAINING_FIELDS = ("learning_rate", "lr_scheduler_type", "warmup_ratio", "warmup_steps", "weight_decay",
                   "num_train_epochs", "max_steps", "per_device_train_batch_size", "gradient_accumulation_steps",
                   "seed", "data_seed", "max_length", "max_prompt_length", "beta", "loss_type", "optim", "fp16",
                   "bf16", "packing", "completion_only_loss", "assistant_only_loss")
#: Script-argument fields that do not change what is trained.
_NOT_SETTINGS = {"resume", "overwrite", "model_card_template"}


@dataclass
class OutputDirCheck:
    """What :func:`guard_output_dir` decided.

    Attributes:
        resume: resume from the folder's last checkpoint (``False``: a fresh run, nothing of an earlier run used).
        changed: fields whose value differs from the run that left the checkpoint (only with ``--resume``).
        overwritten: ``--overwrite`` deletes an earlier run's checkpoints and record (at :meth:`commit`).
        folder, settings, main, earlier: the output folder, this run's settings, whether this is the main process,
            what an earlier run left there.
    """

    resume: bool
    changed: list[str] = field(default_factory=list)
    overwritten: bool = False
    folder: Path | None = None
    settings: dict[str, Any] = field(default_factory=dict)
    main: bool = True
    earlier: list[Path] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready copy (for the training record): ``resume``, ``changed``, ``overwritten``."""
        return {"resume": self.resume, "changed": list(self.changed), "overwritten": self.overwritten}

    def commit(self) -> None:
        """Right before training, on the main process: delete what ``--overwrite`` replaces, and write this run's
        settings to ``output_dir``."""
        if not self.main or self.folder is None:
            return
        if self.overwritten:
            for path in self.earlier:
                if path.is_dir():
                    shutil.rmtree(path)
                elif path.exists():
                    path.unlink()
        self.folder.mkdir(parents=True, exist_ok=True)
        tmp = self.folder / (RUN_SETTINGS + ".tmp")
        tmp.write_text(json.dumps(self.settings, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        os.replace(tmp, self.folder / RUN_SETTINGS)


def _plain(value: Any) -> Any:
    """A JSON value for a setting (enums and paths as strings, tuples as lists)."""
    return json.loads(json.dumps(value, default=str))


def run_settings(script_args: Any, training_args: Any, model_args: Any) -> dict[str, Any]:
    """The settings that define a run: ``{"script": {...}, "model": {...}, "training": {...}}`` (JSON values)."""
    def fields_of(obj: Any) -> dict[str, Any]:
        if obj is None or not dataclasses.is_dataclass(obj):
            return {}
        return {f.name: _plain(getattr(obj, f.name, None)) for f in dataclasses.fields(obj)
                if f.name not in _NOT_SETTINGS}

    training = {name: _plain(getattr(training_args, name)) for name in TRAINING_FIELDS
                if hasattr(training_args, name)}
    return {"script": fields_of(script_args), "model": fields_of(model_args), "training": training}


def _changes(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """``"group.field: old -> new"`` for every setting that differs (a field only one side has counts too)."""
    out = []
    for group in ("script", "model", "training"):
        a, b = old.get(group) or {}, new.get(group) or {}
        for name in sorted(set(a) | set(b)):
            if a.get(name) != b.get(name):
                out.append(f"{group}.{name}: {a.get(name)!r} -> {b.get(name)!r}")
    return out


def _earlier_work(folder: Path) -> list[Path]:
    """Checkpoints, training record and adapter weights an earlier run left in ``folder``."""
    if not folder.is_dir():
        return []
    names = ("surveyalign_training.json", "adapter_model.safetensors", "adapter_model.bin", RUN_SETTINGS)
    return sorted([p for p in folder.glob("checkpoint-*") if p.is_dir()] + [folder / n for n in names
                                                                             if (folder / n).exists()])


def guard_output_dir(script_args: Any, training_args: Any, model_args: Any) -> OutputDirCheck:
    """Refuse an ``output_dir`` that holds another run, unless ``--resume`` or ``--overwrite`` (module docstring).

    Nothing is written here: :meth:`OutputDirCheck.commit` (right before training; the main process,
    ``training_args.process_index == 0``, only) deletes and writes. Every process decides the same way.

    Args:
        script_args: the recipe's script arguments (``resume``, ``overwrite`` flags); training_args: its TRL
            config (``output_dir``); model_args: ``trl.ModelConfig``.

    Returns:
        :class:`OutputDirCheck`.

    Raises:
        ValueError: both ``--resume`` and ``--overwrite``, or a folder holding another run without either flag
            (one line naming the folder and the changed fields).
    """
    resume, overwrite = bool(getattr(script_args, "resume", False)), bool(getattr(script_args, "overwrite", False))
    if resume and overwrite:
        raise ValueError("--resume and --overwrite exclude each other: continue the run in output_dir, or start "
                         "it again")
    folder = Path(training_args.output_dir)
    main = int(getattr(training_args, "process_index", 0) or 0) == 0
    new = run_settings(script_args, training_args, model_args)
    work = _earlier_work(folder)
    where = {"folder": folder, "settings": new, "main": main, "earlier": work}
    check = OutputDirCheck(resume=bool(work), **where)
    if work and overwrite:
        check = OutputDirCheck(resume=False, overwritten=True, **where)
    elif work:
        path = folder / RUN_SETTINGS
        old = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None
        changed = ["the earlier run's settings were not recorded"] if old is None else _changes(old, new)
        if changed and not resume:
            shown = "; ".join(changed[:6]) + ("; ..." if len(changed) > 6 else "")
            raise ValueError(f"{folder} holds another run ({shown}); pass --resume to continue its checkpoint "
                             "with these settings, --overwrite to start again there, or another --output_dir")
        check = OutputDirCheck(resume=True, changed=changed, **where)
    return check

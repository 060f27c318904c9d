"""Saved-adapter checks, the training record and the model card of an adapter folder (SurveyAlign App. D).

An adapter folder written by ``recipes/sft.py`` or ``recipes/dpo.py`` holds the PEFT files
(``adapter_config.json``, ``adapter_model.safetensors``), the tokenizer, ``README.md`` (model card rendered
from ``hub_cards/model_card.md``) and ``surveyalign_training.json`` (the training record evaluation reads:
dimension, protocol, ``enable_thinking``, data hash, hyper-parameters, metrics; written and read by
:mod:`surveyalign.models.record`).
"""

from __future__ import annotations

import json
import logging
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from surveyalign.models import describe_quantization, write_training_record
from surveyalign.paths import resource_path

logger = logging.getLogger(__name__)

#: The model card template shipped with the package (``hub_cards/model_card.md``).
DEFAULT_CARD_TEMPLATE = resource_path("hub_cards", "model_card.md")
_LORA_KEY = re.compile(r"\.(?P<module>[A-Za-z0-9_]+)\.lora_(?P<ab>[AB])(?:\.[A-Za-z0-9_]+)?\.weight$")


@dataclass
class AdapterReport:
    """What a saved LoRA adapter file holds.

    Attributes:
        path: the ``adapter_model.safetensors`` file.
        n_bytes: file size in bytes (an empty ZeRO-3 save is about 40 bytes).
        n_tensors: number of LoRA tensors.
        ranks: module name -> set of LoRA ranks seen on it (rows of lora_A).
        modules: module names (``q_proj``...) carrying LoRA tensors.
        n_nonzero_b: how many lora_B tensors have a non-zero entry (zero right after initialisation).
        total_abs: sum of absolute values over all LoRA tensors (0.0 for an empty adapter).
    """

    path: str
    n_bytes: int
    n_tensors: int
    ranks: dict[str, set[int]] = field(default_factory=dict)
    modules: set[str] = field(default_factory=set)
    n_nonzero_b: int = 0
    total_abs: float = 0.0

    @property
    def empty(self) -> bool:
        """True when the file holds no LoRA tensor or only zero-sized ones."""
        return self.n_tensors == 0 or self.total_abs == 0.0


def inspect_adapter(adapter_dir: str | os.PathLike) -> AdapterReport:
    """Read ``adapter_model.safetensors`` of an adapter folder and summarise its LoRA tensors.

    Args:
        adapter_dir: folder written by ``save_pretrained`` of a PEFT model.

    Returns:
        :class:`AdapterReport`.

    Raises:
        FileNotFoundError: when the folder has no ``adapter_model.safetensors``.
    """
    from safetensors.torch import load_file

    path = Path(adapter_dir) / "adapter_model.safetensors"
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no adapter weights")
    tensors = load_file(str(path))
    report = AdapterReport(path=str(path), n_bytes=path.stat().st_size, n_tensors=0)
    for key, tensor in tensors.items():
        match = _LORA_KEY.search(key)
        if not match or tensor.numel() == 0:
            continue
        module, ab = match["module"], match["ab"]
        report.n_tensors += 1
        report.modules.add(module)
        rank = tensor.shape[0] if ab == "A" else tensor.shape[1]
        report.ranks.setdefault(module, set()).add(int(rank))
        report.total_abs += float(tensor.float().abs().sum())
        if ab == "B" and bool(tensor.ne(0).any()):
            report.n_nonzero_b += 1
    return report


def gather_and_save_adapter(trainer, output_dir: str) -> None:
    """Save the trainer's PEFT adapter with every ZeRO-3 shard gathered (work-around for trl#4416).

    Under DeepSpeed ZeRO-3 without ``stage3_gather_16bit_weights_on_model_save`` the trainer's save can write
    a 40-byte adapter file with no tensor. This gathers the trainable (LoRA) parameters on every rank and lets
    the main process write ``adapter_model.safetensors`` from the full tensors.

    Args:
        trainer: a ``transformers.Trainer`` (SFTTrainer/DPOTrainer) holding a PEFT model.
        output_dir: adapter folder.
    """
    model = trainer.accelerator.unwrap_model(trainer.model)
    params = [p for _, p in model.named_parameters() if p.requires_grad]
    if getattr(trainer, "is_deepspeed_enabled", False):
        import deepspeed

        with deepspeed.zero.GatheredParameters(params, modifier_rank=None):
            if trainer.accelerator.is_main_process:
                model.save_pretrained(output_dir, selected_adapters=["default"])
    elif trainer.accelerator.is_main_process:
        model.save_pretrained(output_dir, selected_adapters=["default"])
    trainer.accelerator.wait_for_everyone()


def dataset_version(dataset_path: str | os.PathLike | None) -> str | None:
    """Data version of a SurveyReview dataset folder, read from its ``build_report.json`` (``surveyalign/data/schema.py``).

    Args:
        dataset_path: folder written by ``surveyalign data build`` (None, a Hub id or a folder without a
            report give None).

    Returns:
        ``"surveyreview@<first 12 hex of the input sha256> seed <split seed> builder <surveyalign version>"``,
        e.g. ``"surveyreview@2409c0e94f69 seed 42 builder 0.1.0"``; a part the report lacks reads ``?``.
        None when there is no readable report.
    """
    if not dataset_path:
        return None
    path = Path(dataset_path) / "build_report.json"
    try:
        report = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(report, dict):
        return None
    sha = str((report.get("input") or {}).get("sha256") or "?")[:12]
    return f"surveyreview@{sha} seed {report.get('seed', '?')} builder {report.get('surveyalign_version', '?')}"


def _table(rows: dict[str, Any], header: str = "setting") -> str:
    lines = [f"| {header} | value |", "|---|---|"]
    lines += [f"| {k} | {v} |" for k, v in rows.items()]
    return "\n".join(lines)


def render_model_card(record: dict[str, Any], template: str | os.PathLike | None = None) -> str:
    """Render the model card of an adapter from its training record.

    The template (default ``hub_cards/model_card.md``) uses ``${name}`` placeholders (any other ``$`` is kept
    as is, e.g. ``Reason$$$X$$$``): ``${title}``,
    ``${base_model}``, ``${dimension}``, ``${stage}``, ``${protocol}``, ``${enable_thinking}``,
    ``${data_version}``, ``${data_hash}``, ``${dataset_path}``, ``${n_train}``, ``${n_eval}``,
    ``${n_shortened}``, ``${max_length}``, ``${lora}``, ``${quantization}`` (how the base was loaded),
    ``${hyperparameters}`` (markdown table),
    ``${metrics}`` (markdown table or a sentence saying none were computed), ``${command}``.

    Args:
        record: the training record (see ``recipes/sft.py``).
        template: template path; None: :data:`DEFAULT_CARD_TEMPLATE`.

    Returns:
        The card text (markdown with YAML front matter).

    Raises:
        FileNotFoundError: when an explicit ``template`` does not exist.
        KeyError: when the template uses a placeholder not listed above.
    """
    text = Path(template if template is not None else DEFAULT_CARD_TEMPLATE).read_text(encoding="utf-8")
    lora = record.get("lora", {})
    metrics = record.get("metrics") or {}
    length = record.get("length", {})
    values = {
        "title": f"SurveyAlign-{str(record.get('dimension', '?')).capitalize()} ({record.get('stage', 'sft')})",
        "base_model": record.get("base_model", "unknown"),
        "dimension": record.get("dimension", "unknown"),
        "stage": record.get("stage", "sft"),
        "protocol": record.get("protocol", "unknown"),
        "enable_thinking": str(record.get("enable_thinking", False)).lower(),
        "data_version": record.get("data_version") or "not given (no --data_version, no build_report.json)",
        "data_hash": record.get("data_hash", "unknown"),
        "dataset_path": record.get("dataset_path", "unknown"),
        "n_train": record.get("n_train", "unknown"),
        "n_eval": record.get("n_eval", 0),
        "n_shortened": length.get("n_shortened", 0),
        "max_length": record.get("max_length", "unknown"),
        "lora": ", ".join(f"{k}={v}" for k, v in lora.items()) or "none",
        "hyperparameters": _table(record.get("hyperparameters", {})),
        "metrics": _table({k: round(v, 4) if isinstance(v, float) else v for k, v in metrics.items()}, "metric")
        if metrics else "No metrics were computed for this run.",
        "command": record.get("command", ""),
        "quantization": describe_quantization(record.get("quantization")),
    }
    def fill(match: re.Match) -> str:
        name = match[1]
        if name not in values:
            raise KeyError(f"model card template uses an unknown placeholder ${{{name}}}")
        return str(values[name])

    return re.sub(r"\$\{(\w+)\}", fill, text)


def write_model_card(output_dir: str | os.PathLike, record: dict[str, Any],
                     template: str | os.PathLike | None = None) -> Path:
    """Write the model card of an adapter into ``README.md`` of its folder (Hub model card, SurveyReview App. D).

    Args:
        output_dir: the adapter folder (must exist); an existing ``README.md`` is replaced.
        record: the training record (see :func:`render_model_card` for the fields it reads).
        template: card template; None uses ``hub_cards/model_card.md`` (or a short built-in card when the
            repository template is missing).

    Returns:
        Path of the written ``README.md``.

    Raises:
        FileNotFoundError: when an explicit ``template`` does not exist.
        KeyError: when the template uses an unknown placeholder.
    """
    path = Path(output_dir) / "README.md"
    path.write_text(render_model_card(record, template), encoding="utf-8")
    return path


def push_adapter_to_hub(output_dir: str | os.PathLike, repo_id: str, *, private: bool | None = None,
                        token: str | None = None, revision: str | None = None) -> str:
    """Upload an adapter folder (weights, tokenizer, card, training record) to the Hugging Face Hub.

    Args:
        output_dir: the adapter folder.
        repo_id: ``owner/name`` of the model repository (created if missing).
        private: visibility of a newly created repository.
        token: Hub token (None: the logged-in token / ``HF_TOKEN``).
        revision: branch to push to.

    Returns:
        The URL of the upload commit.
    """
    from huggingface_hub import HfApi

    api = HfApi(token=token)
    api.create_repo(repo_id, private=private, exist_ok=True, repo_type="model")
    info = api.upload_folder(repo_id=repo_id, folder_path=str(output_dir), revision=revision,
                             commit_message="Upload SurveyAlign adapter",
                             ignore_patterns=["checkpoint-*", "checkpoint-*/**", "runs/**", "wandb/**"])
    return str(getattr(info, "commit_url", info))


def finalize_adapter(trainer, training_args, record: dict[str, Any], card_template: str | None = None,
                     push_to_hub: bool = False) -> AdapterReport:
    """Save the trained adapter, check it holds LoRA tensors, and write the record, the card and the Hub copy.

    Steps: ``trainer.save_model`` and ``save_state`` (``trainer_state.json`` with the log history); drop the
    frozen DPO reference copy (``ref/``) that TRL keeps next to a re-trained adapter; read the saved file back and,
    when it is empty (ZeRO-3, trl#4416), save again from gathered parameters; on the main process write
    ``surveyalign_training.json`` and ``README.md``, then upload the folder when ``push_to_hub``.

    Args:
        trainer: the SFTTrainer/DPOTrainer after ``train()``.
        training_args: its config (``output_dir``, ``hub_model_id``, ``hub_private_repo``, ``hub_token``,
            ``hub_revision``).
        record: training record; an ``adapter`` entry (tensor count, modules, ranks) is added.
        card_template: model card template (None: ``hub_cards/model_card.md``).
        push_to_hub: upload the folder to ``hub_model_id`` (default: the output folder's name).

    Returns:
        The :class:`AdapterReport` of the saved adapter.

    Raises:
        RuntimeError: when the saved adapter is still empty after the gathered re-save.
    """
    import shutil

    out = training_args.output_dir
    accelerator = trainer.accelerator
    trainer.save_model(out)
    trainer.save_state()
    accelerator.wait_for_everyone()
    if accelerator.is_main_process and (Path(out) / "ref" / "adapter_config.json").exists():
        shutil.rmtree(Path(out) / "ref")  # TRL's frozen reference copy of a re-trained adapter
    accelerator.wait_for_everyone()
    report = inspect_adapter(out)
    if report.empty:
        logger.warning("%s holds no LoRA tensor (%d bytes); saving again from gathered parameters",
                       report.path, report.n_bytes)
        gather_and_save_adapter(trainer, out)
        report = inspect_adapter(out)
        if report.empty:
            raise RuntimeError(f"{report.path}: the saved adapter is empty ({report.n_bytes} bytes)")
    record["adapter"] = {"n_tensors": report.n_tensors, "n_bytes": report.n_bytes,
                         "modules": sorted(report.modules),
                         "ranks": sorted({r for ranks in report.ranks.values() for r in ranks})}
    if accelerator.is_main_process:
        write_training_record(out, record)
        write_model_card(out, record, card_template)
        print(f"adapter saved to {out} ({report.n_tensors} LoRA tensors on {len(report.modules)} modules)",
              flush=True)
        if push_to_hub:
            repo_id = training_args.hub_model_id or Path(out).name
            url = push_adapter_to_hub(out, repo_id, private=training_args.hub_private_repo,
                                      token=training_args.hub_token, revision=training_args.hub_revision)
            print(f"pushed the adapter to {url}", flush=True)
    accelerator.wait_for_everyone()
    if hasattr(trainer, "end"):
        trainer.end()
    return report


def init_deepspeed_comm(training_args) -> None:
    """Make DeepSpeed's communication layer join the process group accelerate created (CPU multi-process runs).

    With ``use_cpu=True`` accelerate initialises ``torch.distributed`` (gloo) itself, but DeepSpeed's own
    ``deepspeed.comm`` stays uninitialised, so ``zero.Init`` sees a world size of 1 and rejects the batch
    settings of a 2-process ZeRO-3 run. Calling this before the model is built wraps the existing group. It does
    nothing without DeepSpeed, in a single process, or when DeepSpeed is already initialised (GPU launches).

    Args:
        training_args: the recipe's ``SFTConfig``/``DPOConfig``.
    """
    if not (training_args.deepspeed or getattr(training_args, "deepspeed_plugin", None)):
        return
    _ = training_args.device  # lets accelerate set up torch.distributed first
    import deepspeed
    import deepspeed.comm
    import torch.distributed

    if torch.distributed.is_initialized() and not deepspeed.comm.is_initialized():
        deepspeed.init_distributed(dist_backend=torch.distributed.get_backend())


#: Training settings copied from the trainer config into the training record and the model card.
HYPERPARAMETER_KEYS = ("learning_rate", "lr_scheduler_type", "warmup_steps", "num_train_epochs", "max_steps",
                       "per_device_train_batch_size", "gradient_accumulation_steps", "fp16", "bf16",
                       "gradient_checkpointing", "seed", "optim", "weight_decay", "eval_strategy",
                       "load_best_model_at_end", "metric_for_best_model")


def hyperparameters(training_args, extra: tuple[str, ...] = ()) -> dict[str, Any]:
    """Plain-value copy of the main settings of an ``SFTConfig``/``DPOConfig`` (enums as their values).

    Args:
        training_args: the trainer config.
        extra: more attribute names to copy (e.g. DPO's ``beta``, ``loss_type``).

    Returns:
        ``{name: value}`` plus ``world_size`` (processes) and ``deepspeed`` (bool).
    """
    from enum import Enum

    values = {}
    for key in (*HYPERPARAMETER_KEYS, *extra):
        value = getattr(training_args, key, None)
        values[key] = value.value if isinstance(value, Enum) else value
    values["world_size"] = training_args.world_size
    values["deepspeed"] = bool(getattr(training_args, "deepspeed_plugin", None)) or bool(training_args.deepspeed)
    return values

"""Memory plan of a training config: weights, LoRA state and activations per GPU (``surveyalign train plan``).

The model is built from its ``config.json`` on the meta device (``accelerate.init_empty_weights``: no weights are
read or allocated) and sized with accelerate's estimator (``accelerate.utils.calculate_maximum_sizes``); the LoRA
state uses accelerate's training-memory rule (``accelerate.commands.estimate.estimate_training_usage``) for the
trainable parameters. Formula, per GPU, in bytes (N base parameters, N_q of them in the quantised linear layers,
P LoRA parameters, W processes, L layers, S = max_length tokens, H hidden size, V vocabulary, b = 2 bytes for
16-bit compute):

* weights: 16-bit ``2 N``; 8-bit ``1 N_q + 2 (N - N_q)``; 4-bit NF4 ``(0.5 + 4/64) N_q + 2 (N - N_q)`` (one fp32
  absmax per 64-weight block), with double quantisation ``(0.5 + 1/64 + 4/(64*256)) N_q + 2 (N - N_q)`` (8-bit
  absmax, one fp32 constant per 256 blocks). Embeddings, norms and the output head are not quantised. Divided by W
  under ZeRO-3.
* LoRA state: ``P = sum over targeted linear layers of r (in + out)``; fp32 weights 4 P, gradients 4 P and AdamW's
  two fp32 moments 8 P (accelerate's rule for full precision), or 2 P for 8-bit (paged) optimizers. Divided by W
  under ZeRO-2/3 (optimizer and gradients) and ZeRO-3 (weights).
* activations for batch size B: with gradient checkpointing the input of each layer ``L S B H b`` plus one layer
  recomputed in the backward pass ``34 S B H``; without it ``L 34 S B H`` (Korthikanti et al., 2022, per-layer
  activations of a transformer layer with FlashAttention, which stores no ``S x S`` scores).
* logits: ``S B V (b + 4)`` (16-bit logits and their fp32 copy in the loss).
* DPO: chosen and rejected go through the model together (2 S B tokens for activations and logits), and the
  frozen reference copy of the SFT adapter adds its fp32 weights (4 P).

CUDA context, allocator fragmentation and communication buffers (several GiB) are not included.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from surveyalign.models.paths import from_hub
from surveyalign.yamlconfig import read_yaml_mapping

__all__ = ["GPU_MEMORY_GIB", "HEADROOM_GIB", "MemoryPlan", "gpu_fit", "plan_from_config", "plan_memory",
           "zero_stage"]

GIB = 2**30
#: Bytes per quantised weight: 4-bit NF4 (+ fp32 absmax per 64 weights), with double quantisation, 8-bit.
BYTES_4BIT = 0.5 + 4 / 64
BYTES_4BIT_DOUBLE = 0.5 + 1 / 64 + 4 / (64 * 256)
BYTES_8BIT = 1.0
#: Activation bytes per token, per hidden unit, of one transformer layer (16-bit, FlashAttention).
LAYER_ACTIVATION_FACTOR = 34
#: Memory of common data-centre GPUs in GiB, as ``nvidia-smi --query-gpu=memory.total`` reports it (MiB / 1024).
GPU_MEMORY_GIB = {"H200 141GB": 140.4, "A100 80GB": 80.0, "H100 80GB": 79.6, "L40S 48GB": 45.0,
                  "A100 40GB": 40.0, "A10G 24GB": 22.5}
#: GiB kept free per GPU beyond the plan: CUDA context, allocator fragmentation, NCCL buffers (our rule of thumb).
HEADROOM_GIB = 4.0


@dataclass(frozen=True)
class MemoryPlan:
    """Expected memory per GPU of one training config (see the module docstring for the formula).

    Attributes:
        n_params: base model parameters N (from its config, on the meta device; accelerate's estimator counts the
            fp32 buffers, e.g. rotary frequencies, too).
        n_quantized: parameters of the linear layers that get quantised (N_q; 0 without quantisation).
        n_lora: trainable LoRA parameters P.
        quantization: ``"4bit-nf4"``, ``"4bit-nf4-double"``, ``"8bit"`` or ``"none"``.
        world_size: processes W; zero_stage: DeepSpeed ZeRO stage (0 = none).
        max_length, batch_size: tokens per sequence S and sequences per device B (DPO: pairs, 2 sequences each).
        gradient_checkpointing: whether layer activations are recomputed.
        weights_bytes, lora_bytes, activation_bytes, logits_bytes, total_bytes: per GPU, in bytes.
    """

    model: str
    n_params: int
    n_quantized: int
    n_lora: int
    quantization: str
    world_size: int
    zero_stage: int
    max_length: int
    batch_size: int
    gradient_checkpointing: bool
    optimizer: str
    weights_bytes: float
    lora_bytes: float
    activation_bytes: float
    logits_bytes: float

    @property
    def total_bytes(self) -> float:
        """Sum of the four parts, per GPU."""
        return self.weights_bytes + self.lora_bytes + self.activation_bytes + self.logits_bytes

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready copy with the GiB figures added."""
        out = asdict(self)
        out["total_bytes"] = self.total_bytes
        for key in ("weights", "lora", "activation", "logits", "total"):
            out[f"{key}_gib"] = round(out[f"{key}_bytes"] / GIB, 2)
        return out


def gpu_fit(total_bytes: float, *, headroom_gib: float = HEADROOM_GIB) -> tuple[float, list[str], list[str]]:
    """Which GPUs of :data:`GPU_MEMORY_GIB` hold a plan's per-GPU total plus ``headroom_gib``.

    Args:
        total_bytes: :attr:`MemoryPlan.total_bytes` (bytes per GPU).
        headroom_gib: GiB added for what the plan leaves out (default :data:`HEADROOM_GIB`).

    Returns:
        ``(GiB needed per GPU, GPU names that fit, GPU names too small)``, each list largest memory first.
    """
    need = total_bytes / GIB + headroom_gib
    fits = [name for name, gib in GPU_MEMORY_GIB.items() if gib >= need]
    return need, fits, [name for name in GPU_MEMORY_GIB if name not in fits]


def _empty_model(model_dir: str, trust_remote_code: bool = False) -> Any:
    import torch
    from accelerate import init_empty_weights
    from transformers import AutoConfig, AutoModelForCausalLM

    config = from_hub(AutoConfig.from_pretrained, model_dir, "model", trust_remote_code=trust_remote_code)
    with init_empty_weights():
        return AutoModelForCausalLM.from_config(config, dtype=torch.float32, trust_remote_code=trust_remote_code)


def plan_memory(model_dir: str, *, max_length: int, lora_r: int, lora_targets: list[str] | None,
                quantization: str = "none", world_size: int = 1, zero_stage: int = 0, batch_size: int = 1,
                gradient_checkpointing: bool = True, optimizer: str = "adamw_torch", dpo: bool = False,
                trust_remote_code: bool = False) -> MemoryPlan:
    """Expected per-GPU memory of LoRA / QLoRA training of the model whose config is in ``model_dir``.

    Args:
        model_dir: folder (or cached Hub id) with the model's ``config.json``; no weights are read.
        max_length: tokens per sequence S (the recipe's ``max_length``).
        lora_r: LoRA rank r; lora_targets: module names (``q_proj``...); None or empty: every linear layer but
            the output head.
        quantization: ``"none"``, ``"8bit"``, ``"4bit-nf4"`` or ``"4bit-nf4-double"``.
        world_size: processes W; zero_stage: 0, 1, 2 or 3.
        batch_size: sequences per device B; gradient_checkpointing: recompute layer activations.
        optimizer: the trainer's ``optim`` (names with ``8bit`` count 2 bytes of states per parameter).
        dpo: a DPO run (chosen + rejected per example, a frozen reference adapter).
        trust_remote_code: forwarded to ``AutoConfig``.

    Returns:
        :class:`MemoryPlan`.

    Raises:
        ValueError: an unknown quantization, world_size < 1 or zero_stage outside 0-3.
        OSError: no ``config.json`` can be read for ``model_dir``.
    """
    import torch
    from accelerate.commands.estimate import estimate_training_usage
    from accelerate.utils import calculate_maximum_sizes

    per_weight = {"none": None, "8bit": BYTES_8BIT, "4bit-nf4": BYTES_4BIT, "4bit-nf4-double": BYTES_4BIT_DOUBLE}
    if quantization not in per_weight:
        raise ValueError(f"quantization must be one of {sorted(per_weight)}, got {quantization!r}")
    if world_size < 1 or zero_stage not in (0, 1, 2, 3):
        raise ValueError(f"world_size must be >= 1 and zero_stage 0-3, got {world_size} and {zero_stage}")
    model = _empty_model(model_dir, trust_remote_code)
    total_size, _ = calculate_maximum_sizes(model)  # accelerate's estimator: fp32 bytes of every parameter
    n_params = int(total_size // 4)
    output = model.get_output_embeddings()
    targets = set(lora_targets or [])
    n_quantized = n_lora = 0
    for name, module in model.named_modules():
        if not isinstance(module, torch.nn.Linear) or module is output:
            continue
        n_quantized += module.weight.numel()  # bitsandbytes replaces every linear layer but the output head
        if not targets or name.rsplit(".", 1)[-1] in targets:
            n_lora += lora_r * (module.in_features + module.out_features)
    if per_weight[quantization] is None:
        n_quantized = 0
        weights = 2.0 * n_params
    else:
        weights = per_weight[quantization] * n_quantized + 2.0 * (n_params - n_quantized)
    if zero_stage == 3:
        weights /= world_size
    usage = estimate_training_usage(4 * n_lora, "float32")  # fp32 LoRA weights, gradients, AdamW moments
    optimizer_bytes = 2.0 * n_lora if "8bit" in optimizer else float(usage["optimizer"])
    shard_state = world_size if zero_stage >= 2 else 1
    lora_weights = usage["model"] * (2 if dpo else 1)  # DPO: + the frozen reference copy of the adapter
    lora = (lora_weights / (world_size if zero_stage == 3 else 1) + usage["gradients"] / shard_state
            + optimizer_bytes / (world_size if zero_stage >= 1 else 1))
    config = model.config
    hidden = config.hidden_size
    layers = config.num_hidden_layers
    tokens = max_length * batch_size * (2 if dpo else 1)
    if gradient_checkpointing:
        activations = layers * tokens * hidden * 2.0 + LAYER_ACTIVATION_FACTOR * tokens * hidden
    else:
        activations = layers * LAYER_ACTIVATION_FACTOR * tokens * hidden
    logits = tokens * config.vocab_size * (2.0 + 4.0)
    return MemoryPlan(model=str(model_dir), n_params=n_params, n_quantized=n_quantized, n_lora=n_lora,
                      quantization=quantization, world_size=world_size, zero_stage=zero_stage, max_length=max_length,
                      batch_size=batch_size, gradient_checkpointing=gradient_checkpointing, optimizer=optimizer,
                      weights_bytes=weights, lora_bytes=float(lora), activation_bytes=activations,
                      logits_bytes=logits)


def zero_stage(training_args: Any, accelerate_config: str | os.PathLike | None = None) -> int:
    """The DeepSpeed ZeRO stage a run uses: from the recipe's ``deepspeed`` field or the accelerate config.

    Args:
        training_args: the parsed ``SFTConfig`` / ``DPOConfig``.
        accelerate_config: an accelerate YAML (``configs/accelerate/zero3.yaml``), or None.

    Returns:
        0 (no DeepSpeed) to 3.

    Raises:
        OSError: a named DeepSpeed JSON cannot be read.
    """
    source: Any = getattr(training_args, "deepspeed", None)
    if source is None and accelerate_config:
        acc = read_yaml_mapping(accelerate_config, "accelerate config")
        ds = acc.get("deepspeed_config") or {}
        source = ds.get("deepspeed_config_file") or ({"zero_optimization": {"stage": ds["zero_stage"]}}
                                                     if "zero_stage" in ds else None)
    if source is None:
        return 0
    if isinstance(source, (str, os.PathLike)):
        source = json.loads(Path(source).read_text(encoding="utf-8"))
    return int((source.get("zero_optimization") or {}).get("stage", 0))


def plan_from_config(config: str | os.PathLike, *, accelerate_config: str | None = None,
                     world_size: int | None = None, model: str | None = None,
                     max_length: int | None = None) -> MemoryPlan:
    """:func:`plan_memory` for a recipe YAML (parsed by the recipe's parser on any machine).

    Args:
        config: a recipe YAML (``configs/sft/*.yaml``, ``configs/dpo/*.yaml``).
        accelerate_config: the accelerate config the run uses (ZeRO stage and ``num_processes``).
        world_size: processes; default: ``num_processes`` of ``accelerate_config``, else 1.
        model: folder with the model's ``config.json``, replacing the YAML's ``model_name_or_path``.
        max_length: tokens per sequence, replacing the YAML's ``max_length`` (a run with ``--max_length``).

    Returns:
        The :class:`MemoryPlan`.

    Raises:
        ValueError: the YAML does not parse, or names no model.
        OSError: a config file cannot be read.
    """
    from surveyalign.models import quantization_label, resolve_model_path
    from surveyalign.training.arguments import parse_recipe_yaml

    _, train, model_args = parse_recipe_yaml(config, check_device=False)
    if world_size is None:
        acc = read_yaml_mapping(accelerate_config, "accelerate config") if accelerate_config else {}
        world_size = int(acc.get("num_processes", 1))
    name = model or model_args.model_name_or_path
    if not name:
        raise ValueError(f"{config}: no model_name_or_path; pass --model DIR (a folder with its config.json)")
    checkpointing = bool(getattr(train, "activation_checkpointing", False) or train.gradient_checkpointing)
    optim = getattr(train.optim, "value", train.optim)
    return plan_memory(resolve_model_path(name, "--model"), max_length=int(max_length or train.max_length),
                       lora_r=model_args.lora_r, lora_targets=list(model_args.lora_target_modules or []),
                       quantization=quantization_label(model_args), world_size=world_size,
                       zero_stage=zero_stage(train, accelerate_config), batch_size=train.per_device_train_batch_size,
                       gradient_checkpointing=checkpointing, optimizer=str(optim),
                       dpo=type(train).__name__ == "DPOConfig")

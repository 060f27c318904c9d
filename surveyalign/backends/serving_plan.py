"""What tensor and data parallel settings of a local judge cost in GPU memory (vLLM; the Ray engine's replicas).

For a model whose ``config.json`` is read (no weights), per GPU, in bytes (N parameters, L layers, h_kv key/value
heads, d head size, T = ``tensor_parallel_size``, D = ``data_parallel_size`` replicas, b = 2 bytes for 16-bit):

* weights: ``2 N / T`` (16-bit; each of the T GPUs holds a 1/T slice of every layer);
* KV cache per token: ``2 (K and V) x L x max(1, h_kv / T) x d x b`` (the key/value heads are split over the T
  GPUs; below one head per GPU they are replicated);
* KV budget: ``gpu_memory x gpu_memory_utilization - weights - OVERHEAD_GIB`` (activations of one forward pass,
  CUDA graphs; vLLM measures this at start, 2 GiB is our allowance);
* tokens in flight per replica = budget / KV per token; sequences of ``max_model_len`` per replica =
  tokens / max_model_len; the D replicas multiply it (data parallel costs the weights D times, tensor parallel
  divides them by T).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

__all__ = ["OVERHEAD_GIB", "ServingPlan", "serving_plan"]

GIB = 2**30
#: Per-GPU memory vLLM needs beyond weights and KV cache (activations, CUDA graphs), our allowance in GiB.
OVERHEAD_GIB = 2.0


@dataclass(frozen=True)
class ServingPlan:
    """Memory per GPU of one serving layout (see the module docstring).

    Attributes:
        n_params: model parameters N; tensor_parallel_size T; data_parallel_size D; gpus = T x D.
        weights_gib: weights per GPU; kv_bytes_per_token: KV cache per token per GPU (bytes).
        kv_budget_gib: memory left for the KV cache per GPU (negative: the weights do not fit).
        tokens_per_replica: tokens of KV cache one replica holds; sequences_per_replica: of ``max_model_len``.
        sequences_total: over the D replicas.
    """

    model: str
    n_params: int
    tensor_parallel_size: int
    data_parallel_size: int
    gpus: int
    gpu_gib: float
    gpu_memory_utilization: float
    max_model_len: int
    weights_gib: float
    kv_bytes_per_token: int
    kv_budget_gib: float
    tokens_per_replica: int
    sequences_per_replica: int
    sequences_total: int

    @property
    def fits(self) -> bool:
        """True when one sequence of ``max_model_len`` fits next to the weights."""
        return self.sequences_per_replica >= 1

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready copy with ``fits``."""
        return {**asdict(self), "fits": self.fits}


def serving_plan(model_dir: str, *, tensor_parallel_size: int = 1, data_parallel_size: int = 1,
                 gpu_gib: float = 80.0, gpu_memory_utilization: float = 0.9, max_model_len: int = 17408,
                 trust_remote_code: bool = False) -> ServingPlan:
    """Memory per GPU of serving the model of ``model_dir`` with T x D GPUs.

    Args:
        model_dir: folder (or cached Hub id) with the model's ``config.json``; no weights are read.
        tensor_parallel_size: T >= 1 GPUs per replica; data_parallel_size: D >= 1 replicas.
        gpu_gib: memory of one GPU in GiB (H100 80GB: 79.6, H200: 140.4).
        gpu_memory_utilization: vLLM's fraction of GPU memory, in (0, 1].
        max_model_len: tokens of one sequence (prompt + answer; SurveyAlign: 16,384 + 1,024).
        trust_remote_code: forwarded to ``AutoConfig``.

    Returns:
        :class:`ServingPlan`.

    Raises:
        ValueError: T or D < 1, utilisation outside (0, 1], max_model_len < 1.
        OSError: no ``config.json``.
    """
    if tensor_parallel_size < 1 or data_parallel_size < 1 or not 0 < gpu_memory_utilization <= 1 or max_model_len < 1:
        raise ValueError("tensor_parallel_size and data_parallel_size must be >= 1, gpu_memory_utilization in "
                         f"(0, 1], max_model_len >= 1; got {tensor_parallel_size}, {data_parallel_size}, "
                         f"{gpu_memory_utilization}, {max_model_len}")
    import torch
    from accelerate import init_empty_weights
    from accelerate.utils import calculate_maximum_sizes
    from transformers import AutoConfig, AutoModelForCausalLM

    config = AutoConfig.from_pretrained(model_dir, trust_remote_code=trust_remote_code)
    with init_empty_weights():
        model = AutoModelForCausalLM.from_config(config, dtype=torch.float32, trust_remote_code=trust_remote_code)
    n_params = int(calculate_maximum_sizes(model)[0] // 4)
    t = int(tensor_parallel_size)
    heads = config.num_attention_heads
    kv_heads = getattr(config, "num_key_value_heads", None) or heads
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // heads
    kv_per_token = 2 * config.num_hidden_layers * max(1, kv_heads // t) * head_dim * 2
    weights = 2.0 * n_params / t
    budget = gpu_gib * GIB * gpu_memory_utilization - weights - OVERHEAD_GIB * GIB
    tokens = max(0, int(budget // kv_per_token))
    per_replica = tokens // max_model_len
    return ServingPlan(model=str(model_dir), n_params=n_params, tensor_parallel_size=t,
                       data_parallel_size=int(data_parallel_size), gpus=t * int(data_parallel_size), gpu_gib=gpu_gib,
                       gpu_memory_utilization=gpu_memory_utilization, max_model_len=max_model_len,
                       weights_gib=round(weights / GIB, 2), kv_bytes_per_token=kv_per_token,
                       kv_budget_gib=round(budget / GIB, 2), tokens_per_replica=tokens,
                       sequences_per_replica=per_replica, sequences_total=per_replica * int(data_parallel_size))

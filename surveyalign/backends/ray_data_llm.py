"""The Ray engine on GPU workers through Ray's vLLM integration (``backend.kind: ray``, ``engine: vllm-data``).

Instead of actors that each build an in-process vLLM engine (``engine: vllm``), the calls go through Ray Data's LLM
batch processor: :func:`ray.data.llm.build_processor` (``build_llm_processor`` in Ray < 2.5x) over a
:class:`ray.data.llm.vLLMEngineProcessorConfig` built from our settings by :func:`processor_config`:

* ``model_source`` = the base model folder; ``concurrency`` = ``workers`` (vLLM replicas: data parallel);
  ``batch_size`` = prompts per replica batch;
* ``engine_kwargs`` = the vLLM engine options we pass in process (``dtype``, ``tensor_parallel_size``,
  ``gpu_memory_utilization``, ``max_model_len``, ``enforce_eager``, ``llm_kwargs``) and, with adapters,
  ``enable_lora`` with ``max_lora_rank`` / ``max_loras`` derived from the adapters' ranks
  (:func:`surveyalign.backends.vllm_backend.lora_engine_limits`);
* the chat template stage is off: prompts are rendered in the driver with the engine's tokenizer
  (``render_chat``, explicit ``enable_thinking``), the same rule as in process.

Each row is one sample: ``prompt``, ``sampling_params`` (``n=1``, ``seed = settings.seed + k``, temperature,
top_p, ``max_tokens``, ``logprobs=0``) and, for an adapter, ``model`` = the adapter folder (Ray's vLLM stage turns
a ``model`` other than the base into a ``LoRARequest``). The answers come back as :class:`Generation` with the
prompt's tokens counted on its first sample (its other samples reuse the prefix cache), ``finish_reason``
``"length"`` when the sample used all ``max_tokens`` (Ray's output carries no finish reason), and the mean
log-probability of the sampled tokens.

Refused with one line when ``vllm`` is not installed or no GPU is there (vLLM's engine needs one): use
``engine: transformers`` on CPU. ``ray`` and ``vllm`` are imported when the backend is built.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Mapping, Sequence
from typing import Any

from surveyalign.backends.base import (
    Backend,
    Generation,
    GenerationSettings,
    Messages,
    check_request,
    local_engine_check,
)

__all__ = ["ENGINE", "RayDataVLLMBackend", "processor_config", "require_vllm_and_gpu"]

#: The ``engine`` value of a ``ray`` backend that selects this path.
ENGINE = "vllm-data"
#: vLLM engine options taken from ``engine_options`` into ``engine_kwargs``.
ENGINE_KWARGS = ("dtype", "tensor_parallel_size", "gpu_memory_utilization", "max_model_len", "enforce_eager")


def _gpu_count() -> int:
    """GPUs this machine sees (``torch.cuda.device_count()``; 0 without torch / CUDA)."""
    try:
        import torch
    except ImportError:  # pragma: no cover - torch is a core dependency
        return 0
    return int(torch.cuda.device_count()) if torch.cuda.is_available() else 0


def _has_vllm() -> bool:
    import importlib.util
    import sys

    if "vllm" in sys.modules:
        return True
    try:
        return importlib.util.find_spec("vllm") is not None
    except (ImportError, ValueError):
        return False


def require_vllm_and_gpu(gpus_needed: int, address: str | None) -> None:
    """Refuse, in one line, a ``vllm-data`` engine that cannot run here.

    Args:
        gpus_needed: GPUs one replica needs (its ``tensor_parallel_size``).
        address: a Ray cluster address (its GPUs are counted by Ray, not here).

    Raises:
        ImportError: ``vllm`` is not installed.
        ValueError: no cluster address and fewer GPUs on this machine than one replica needs.
    """
    if not _has_vllm():
        raise ImportError(f"ray engine {ENGINE!r} needs vllm (Ray's vLLM integration runs vLLM on GPU workers): "
                          "pip install vllm 'ray[llm]', or use engine: transformers on CPU")
    if address is None and _gpu_count() < gpus_needed:
        raise ValueError(f"ray engine {ENGINE!r} needs {gpus_needed} GPU(s) per replica and this machine has "
                         f"{_gpu_count()}; give a Ray cluster address with GPUs, or use engine: transformers on CPU")


def _llm_module() -> Any:
    return importlib.import_module("ray.data.llm")


def processor_config(model: str, adapters: Mapping[str, str], *, workers: int, batch_size: int,
                     engine_options: Mapping[str, Any] | None = None, llm: Any = None) -> Any:
    """The :class:`ray.data.llm.vLLMEngineProcessorConfig` of our settings (see the module docstring).

    Args:
        model: the base model folder; adapters: adapter name -> folder (empty: the base alone).
        workers: vLLM replicas (>= 1); batch_size: prompts per replica batch (>= 1).
        engine_options: vLLM options (:data:`ENGINE_KWARGS`, ``max_lora_rank``, ``llm_kwargs``).
        llm: the ``ray.data.llm`` module (default: imported).

    Returns:
        The processor config.

    Raises:
        ValueError: an unknown engine option, or an adapter rank above ``max_lora_rank``.
    """
    from surveyalign.backends.vllm_backend import lora_engine_limits

    options = dict(engine_options or {})
    unknown = sorted(set(options) - {*ENGINE_KWARGS, "max_lora_rank", "llm_kwargs", "batch_size"})
    if unknown:
        raise ValueError(f"engine_options: engine {ENGINE!r} takes no option(s) {unknown}; valid: "
                         f"{sorted([*ENGINE_KWARGS, 'max_lora_rank', 'llm_kwargs', 'batch_size'])}")
    kwargs: dict[str, Any] = {k: options[k] for k in ENGINE_KWARGS if options.get(k) is not None}
    if adapters:
        rank, loras = lora_engine_limits(adapters, options.get("max_lora_rank"))
        kwargs.update(enable_lora=True, max_lora_rank=rank, max_loras=loras)
    kwargs.update(options.get("llm_kwargs") or {})
    llm = llm or _llm_module()
    return llm.vLLMEngineProcessorConfig(model_source=model, engine_kwargs=kwargs, concurrency=int(workers),
                                         batch_size=int(batch_size), chat_template_stage=False)


def _build(llm: Any, config: Any) -> Any:
    build = getattr(llm, "build_processor", None) or llm.build_llm_processor  # renamed in Ray 2.5x
    return build(config)


def _mean_logprob(row: Mapping[str, Any]) -> float | None:
    tokens, steps = list(row.get("generated_tokens") or []), row.get("logprobs")
    if not tokens or not steps:
        return None
    values = []
    for token, step in zip(tokens, steps):
        entry = (step or {}).get(token, (step or {}).get(str(token)))
        if entry is not None:
            values.append(float(entry["logprob"] if isinstance(entry, Mapping) else entry))
    return sum(values) / len(values) if values else None


class RayDataVLLMBackend(Backend):
    """Calls through Ray Data's vLLM processor (see the module docstring).

    Args:
        model: the base model folder; adapter: one LoRA folder; adapters: ``{name: folder}``.
        workers: vLLM replicas; address: a Ray cluster (default ``RAY_ADDRESS``, else Ray Data starts a local one).
        batch_size: prompts per replica batch (default 64); engine_options: vLLM options (see
            :func:`processor_config`).

    Raises:
        ImportError: ``ray`` or ``vllm`` is missing; ValueError: no GPU, or a bad option.
    """

    name = "ray"
    local_engine = True

    def __init__(self, model: str, adapter: str | None = None, adapters: dict[str, str] | None = None, *,
                 workers: int = 1, address: str | None = None, batch_size: int | None = None,
                 engine_options: dict[str, Any] | None = None) -> None:
        from surveyalign.backends.ray_cluster import cluster_address, connect_cluster
        from surveyalign.models.paths import resolve_model_path

        options = dict(engine_options or {})
        self.address = cluster_address(address)
        require_vllm_and_gpu(int(options.get("tensor_parallel_size") or 1), self.address)
        if self.address:  # Ray Data would start a local instance (or read RAY_ADDRESS alone) on first use
            connect_cluster(self.address, "backend option address" if address else "RAY_ADDRESS")
        self.model_path = resolve_model_path(model, "ray backend: model")
        self.adapter_paths = {str(k): resolve_model_path(v, f"ray backend: adapter {k!r}")
                              for k, v in (adapters or {}).items()}
        self.adapter = resolve_model_path(adapter, "ray backend: adapter") if adapter else None
        loras = dict(self.adapter_paths) or ({"adapter": self.adapter} if self.adapter else {})
        self.n_workers = int(workers)
        self.batch_size = int(batch_size or options.get("batch_size") or 64)
        self.config = processor_config(self.model_path, loras, workers=self.n_workers, batch_size=self.batch_size,
                                       engine_options=options)
        self.processor = _build(_llm_module(), self.config)
        from transformers import AutoTokenizer

        self.tokenizer = AutoTokenizer.from_pretrained(self.model_path)
        self.max_model_len = options.get("max_model_len")
        self.concurrency = self.batch_size * self.n_workers
        self._options = options
        from surveyalign.backends.fingerprint import (
            adapter_fingerprint,
            model_fingerprint,
        )

        self.adapter_fingerprints = {k: adapter_fingerprint(v) for k, v in self.adapter_paths.items()}
        self.fingerprints = {"model": model_fingerprint(self.model_path) if os.path.isdir(self.model_path) else None,
                             "adapter": adapter_fingerprint(self.adapter) if self.adapter else None}

    def describe(self) -> dict[str, Any]:
        """Model, adapters (content fingerprints: a retrained adapter gets new cache keys) and engine settings
        (``ray``: workers, address, processor; left out of cache keys)."""
        return {"backend": "vllm", "model": self.model_path, "adapter": self.adapter, "fingerprints": self.fingerprints,
                "adapters": dict(self.adapter_paths), "adapter_fingerprints": dict(self.adapter_fingerprints),
                **{k: self._options.get(k) for k in ENGINE_KWARGS}, "shared_prefill": True,
                "ray": {"workers": self.n_workers, "address": self.address or "local",
                        "processor": "ray.data.llm vLLMEngineProcessorConfig"}}

    def check_settings(self, settings: GenerationSettings) -> None:
        """Refuse ``omit`` and ``thinking_budget``: the engine decodes with every value (nothing is sent).

        Raises:
            ValueError: from :func:`~surveyalign.backends.base.local_engine_check`.
        """
        local_engine_check(settings, f"ray_data_llm backend ({self.model_path})")

    def render(self, messages: Messages, settings: GenerationSettings) -> str:
        """The chat rendering the rows carry (the engine's tokenizer, explicit ``enable_thinking``)."""
        from surveyalign.backends.chat import render_chat

        return render_chat(self.tokenizer, list(messages), enable_thinking=settings.enable_thinking)

    def adapter_view(self, name: str) -> Any:
        """The backend of adapter ``name`` (the rows carry its folder as ``model``).

        Raises:
            KeyError: no adapter of that name.
        """
        from surveyalign.backends.adapters import AdapterView

        if name not in self.adapter_paths:
            raise KeyError(f"ray backend: no adapter named {name!r}; loaded: {sorted(self.adapter_paths)}")
        return AdapterView(self, name)

    def rows(self, prompts: Sequence[Messages], settings: GenerationSettings, n: int,
             adapter_name: str | None = None) -> list[dict[str, Any]]:
        """One processor row per sample (``_p``: prompt index, ``_k``: sample index)."""
        lora = self.adapter_paths[adapter_name] if adapter_name is not None else self.adapter
        out = []
        for p, messages in enumerate(prompts):
            text = self.render(messages, settings)
            for k in range(n):
                row = {"_p": p, "_k": k, "prompt": text, "sampling_params": {
                    "n": 1, "seed": settings.seed + k, "temperature": settings.temperature,
                    "top_p": settings.top_p if not settings.greedy else 1.0, "max_tokens": settings.max_new_tokens,
                    "logprobs": 0}}
                if lora is not None:
                    row["model"] = lora
                out.append(row)
        return out

    def generate(self, prompts: Sequence[Messages], settings: GenerationSettings | None = None, n: int = 1,
                 adapter_name: str | None = None) -> list[list[Generation]]:
        """``n`` samples of each prompt through the processor (one Ray Data pass).

        Returns:
            P lists of ``n`` generations in prompt and sample order.

        Raises:
            ValueError: invalid prompts or ``n``; KeyError: an unknown adapter.
        """
        import ray.data

        settings = check_request(prompts, settings, n)
        if adapter_name is not None and adapter_name not in self.adapter_paths:
            raise KeyError(f"ray backend: no adapter named {adapter_name!r}; loaded: {sorted(self.adapter_paths)}")
        if not prompts:
            return []
        done = self.processor(ray.data.from_items(self.rows(prompts, settings, n, adapter_name))).take_all()
        out: list[list[Generation | None]] = [[None] * n for _ in prompts]
        for row in done:
            p, k = int(row["_p"]), int(row["_k"])
            used = int(row.get("num_generated_tokens") or 0)
            out[p][k] = Generation(text=str(row.get("generated_text") or ""),
                                   finish_reason="length" if used >= settings.max_new_tokens else "stop",
                                   mean_logprob=_mean_logprob(row),
                                   prompt_tokens=int(row.get("num_input_tokens") or 0) if k == 0 else 0,
                                   completion_tokens=used)
        missing = Generation.failed("ray.data.llm returned no row for this sample")
        return [[g if g is not None else missing for g in row] for row in out]

"""Local vLLM judge (optional extra ``surveyalign[gpu]``; ``vllm`` is imported only when this backend is built).

Prompts are rendered with the same :func:`surveyalign.backends.chat.render_chat` as the transformers backend and
training, tokenized without adding special tokens (the template already holds them), and sent to
``LLM.generate`` as ``{"prompt_token_ids": ...}`` with one ``SamplingParams`` per request. By default sample ``i`` of
a prompt is its own request with ``seed = settings.seed + i`` (like every other backend, so any subset of
samples can be regenerated alone; vLLM's prefix cache shares the prompt's KV cache between them); with
``n_per_request=True`` one request asks ``SamplingParams(n=n, seed=settings.seed)`` instead.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from surveyalign.backends.adapters import AdapterView
from surveyalign.backends.base import (
    Backend,
    Generation,
    GenerationSettings,
    Messages,
    check_request,
    local_engine_check,
    mean_or_none,
)
from surveyalign.backends.fingerprint import adapter_fingerprint

_INSTALL_HINT = "the 'vllm' backend needs vLLM: pip install surveyalign[gpu]  (or: pip install vllm)"


#: LoRA ranks a vLLM engine accepts as ``max_lora_rank`` (vLLM's LoRAConfig check).
VLLM_LORA_RANKS = (1, 8, 16, 32, 64, 128, 256, 320, 512)


def adapter_rank(path: str) -> int | None:
    """The LoRA rank of an adapter folder: the largest of ``r`` and the ``rank_pattern`` values in its
    ``adapter_config.json`` (``None`` when the file is missing or names no rank)."""
    config = Path(path) / "adapter_config.json"
    try:
        data = json.loads(config.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    ranks = [data.get("r")] + list((data.get("rank_pattern") or {}).values())
    ranks = [int(r) for r in ranks if isinstance(r, int | float) and r > 0]
    return max(ranks) if ranks else None


def lora_engine_limits(adapters: Mapping[str, str], max_lora_rank: int | None) -> tuple[int, int]:
    """``(max_lora_rank, max_loras)`` for one vLLM engine serving ``adapters``, checked before anything loads.

    vLLM accepts an adapter whose rank is above the engine's ``max_lora_rank`` and fails only at its first
    request, after the base model has loaded; here the ranks are read from the adapters' ``adapter_config.json``.

    Args:
        adapters: adapter name -> folder.
        max_lora_rank: the configured limit, or ``None`` to derive it (the smallest of :data:`VLLM_LORA_RANKS`
            that holds the largest adapter rank).

    Returns:
        The engine's ``max_lora_rank`` and ``max_loras`` (= the number of adapters, at least 1).

    Raises:
        ValueError: an adapter's rank is above the configured ``max_lora_rank`` (the message names the adapter,
            its rank and the limit), or above vLLM's largest supported rank.
    """
    ranks = {name: rank for name, path in adapters.items() if (rank := adapter_rank(path)) is not None}
    needed = max(ranks.values(), default=None)
    if max_lora_rank is not None:
        too_big = {name: rank for name, rank in ranks.items() if rank > max_lora_rank}
        if too_big:
            name, rank = max(too_big.items(), key=lambda item: item[1])
            raise ValueError(f"vllm backend: adapter {name!r} ({adapters[name]}) has LoRA rank {rank}, above "
                             f"max_lora_rank={max_lora_rank}; remove max_lora_rank from the config (it is then "
                             f"derived from the adapters) or set it to at least {rank}")
        return int(max_lora_rank), max(1, len(adapters))
    if needed is None:
        return 64, max(1, len(adapters))
    fitting = [value for value in VLLM_LORA_RANKS if value >= needed]
    if not fitting:
        name = max(ranks, key=ranks.get)
        raise ValueError(f"vllm backend: adapter {name!r} ({adapters[name]}) has LoRA rank {needed}, above the "
                         f"largest rank vLLM serves ({VLLM_LORA_RANKS[-1]})")
    return fitting[0], max(1, len(adapters))


def _import_vllm() -> Any:
    try:
        import vllm
    except ImportError as exc:
        raise ImportError(f"{_INSTALL_HINT} ({exc})") from exc
    return vllm


class VLLMBackend(Backend):
    """A local model served in-process by vLLM (``surveyalign/backends/base.py``, kind ``"vllm"``).

    Args:
        model: model folder or hub id.
        adapter: optional LoRA adapter folder (applied with ``vllm.lora.request.LoRARequest``, named after its
            folder).
        adapters: several LoRA adapters on the one engine, ``{name: folder}`` (the four SurveyAlign dimension
            adapters): one engine with ``enable_lora`` and ``max_loras = len(adapters)``, one ``LoRARequest`` per
            adapter with its own name and integer id (1, 2, ...), so vLLM keeps each adapter's prefix-cache blocks
            apart; :meth:`adapter_view` gives the backend of one adapter. Excludes ``adapter``.
        dtype: vLLM dtype (``"auto"``, ``"bfloat16"``...).
        tensor_parallel_size: GPUs per model.
        gpu_memory_utilization: fraction of GPU memory vLLM may take, in (0, 1].
        max_model_len: context length cap (``None``: the model's).
        max_lora_rank: largest LoRA rank to support when ``adapter``/``adapters`` is set; ``None`` (default)
            derives it from the adapters' ranks (:func:`lora_engine_limits`); a value below an adapter's rank is
            refused before the base loads, naming the adapter and its rank.
        n_per_request: ask for the ``n`` samples in one request (``SamplingParams(n=n, seed=seed)``)
            instead of one request per sample with seed ``seed + i``.
        enforce_eager: disable CUDA graphs (faster start, slower decode).
        llm_kwargs: further keyword arguments for ``vllm.LLM``.
        quantization: ``"auto"`` (default: the adapter's recorded quantisation, else none), ``"none"``, ``"4bit"``
            (vLLM's in-flight bitsandbytes 4-bit: ``quantization="bitsandbytes"``) or ``"8bit"`` (refused: vLLM's
            bitsandbytes path is 4-bit only). Recorded in ``describe()``.
        allow_base_mismatch: load an adapter onto a base other than the one in its training record (the
            differences are recorded in ``describe()["base_mismatch"]``).

    Raises:
        ImportError: vLLM is not installed (the message says ``pip install surveyalign[gpu]``).
        ValueError: 8-bit quantisation; BaseMismatchError when the base differs from the adapter's record.
    """

    name = "vllm"
    local_engine = score_judge = shares_prefill = True  # the n samples of a prompt share one prefill
    default_batch_size = 256  # vLLM schedules its own batches: hand it many prompts at once

    def __init__(
        self,
        model: str,
        adapter: str | None = None,
        dtype: str = "auto",
        tensor_parallel_size: int = 1,
        gpu_memory_utilization: float = 0.9,
        max_model_len: int | None = None,
        max_lora_rank: int | None = None,
        n_per_request: bool = False,
        enforce_eager: bool = False,
        llm_kwargs: dict[str, Any] | None = None,
        adapters: Mapping[str, str] | None = None,
        quantization: str | dict[str, Any] | None = "auto",
        allow_base_mismatch: bool = False,
    ) -> None:
        from surveyalign.models.paths import hub_folder, resolve_model_path

        if adapter and adapters:
            raise ValueError("vllm backend: give either adapter (one folder) or adapters ({name: folder})")
        self.model_path = resolve_model_path(model, "vllm backend: model")
        self.adapter_path = hub_folder(adapter, "vllm backend: adapter") if adapter else None
        self.adapter_paths = {str(k): hub_folder(v, f"vllm backend: adapter {k!r}")
                              for k, v in (adapters or {}).items()}
        from surveyalign.models import resolve_bases

        self.quantization, self.base_mismatch = resolve_bases(
            self.model_path, [self.adapter_path] if self.adapter_path else list(self.adapter_paths.values()),
            quantization=quantization, allow_base_mismatch=allow_base_mismatch,
            compute_dtype="bfloat16" if dtype == "auto" else dtype, where="vllm backend")
        if self.quantization is not None and self.quantization["bits"] != 4:
            raise ValueError("vllm backend: only 4-bit bitsandbytes quantisation is supported (quantization: 4bit)")
        lora_adapters = ({Path(self.adapter_path).name or "adapter": self.adapter_path} if self.adapter_path
                         else dict(self.adapter_paths))
        self.max_lora_rank, self.max_loras = lora_engine_limits(lora_adapters, max_lora_rank)
        vllm = _import_vllm()
        self.dtype = dtype
        self.tensor_parallel_size = int(tensor_parallel_size)
        self.gpu_memory_utilization = float(gpu_memory_utilization)
        self.max_model_len = max_model_len
        self.n_per_request = bool(n_per_request)
        self.llm_kwargs = dict(llm_kwargs or {})
        from surveyalign.backends.hf_setup import _fingerprints

        # content fingerprints, taken before loading: part of the cache identity (see backends.fingerprint)
        self.fingerprints = _fingerprints(self.model_path, self.adapter_path,
                                          str(self.llm_kwargs.get("tokenizer") or self.model_path))
        kwargs: dict[str, Any] = {"model": self.model_path, "dtype": dtype,
                                  "tensor_parallel_size": tensor_parallel_size,
                                  "gpu_memory_utilization": gpu_memory_utilization, "enforce_eager": enforce_eager}
        if max_model_len is not None:
            kwargs["max_model_len"] = max_model_len
        if self.adapter_path or self.adapter_paths:
            kwargs.update(enable_lora=True, max_lora_rank=self.max_lora_rank, max_loras=self.max_loras)
        if self.quantization is not None:
            kwargs["quantization"] = "bitsandbytes"  # in-flight 4-bit (NF4) quantisation of the base
        kwargs.update(self.llm_kwargs)
        self._vllm = vllm
        self.llm = vllm.LLM(**kwargs)
        self.tokenizer = self.llm.get_tokenizer()
        self.adapter_fingerprints = {name: adapter_fingerprint(path) for name, path in self.adapter_paths.items()}
        self._lora = None
        self._loras: dict[str, Any] = {}
        if self.adapter_path or self.adapter_paths:
            from vllm.lora.request import LoRARequest

            if self.adapter_path:
                self._lora = LoRARequest(Path(self.adapter_path).resolve().name or "adapter", 1, self.adapter_path)
            # one name and one id per adapter: vLLM caches adapters (and their KV blocks) by id
            self._loras = {name: LoRARequest(name, index, path)
                           for index, (name, path) in enumerate(self.adapter_paths.items(), start=1)}

    def describe(self) -> dict[str, Any]:
        """Return model/adapter paths, their content fingerprints and engine settings for ``run_config.json``.

        ``fingerprints`` are those of the transformers backend (:mod:`surveyalign.backends.fingerprint`), so a
        retrained adapter in the same folder gets a new evaluation cache identity. Never contains credentials.
        """
        return {
            "backend": self.name,
            "model": self.model_path,
            "adapter": self.adapter_path,
            "fingerprints": self.fingerprints,
            "dtype": self.dtype,
            "tensor_parallel_size": self.tensor_parallel_size,
            "gpu_memory_utilization": self.gpu_memory_utilization,
            "max_model_len": self.max_model_len,
            "n_per_request": self.n_per_request,
            "vllm_version": getattr(self._vllm, "__version__", None),
            **({"adapters": self.adapter_paths, "adapter_fingerprints": self.adapter_fingerprints}
               if self.adapter_paths else {}),
            **({"quantization": {**self.quantization, "vllm": "bitsandbytes"}} if self.quantization else {}),
            **({"base_mismatch": self.base_mismatch} if self.base_mismatch else {}),
        }

    def adapter_view(self, name: str) -> AdapterView:
        """The backend of one adapter of ``adapters`` (same engine; requests carry that adapter's ``LoRARequest``).

        Args:
            name: a key of ``adapters``.

        Returns:
            An :class:`~surveyalign.backends.adapters.AdapterView`.

        Raises:
            KeyError: ``name`` is not one of the adapters (the message lists them).
        """
        if name not in self._loras:
            raise KeyError(f"vllm backend: no adapter named {name!r}; loaded: {sorted(self._loras)}")
        return AdapterView(self, name)

    def check_settings(self, settings: GenerationSettings) -> None:
        """Refuse ``enable_thinking=True`` when the tokenizer's chat template has no such switch.

        Args:
            settings: the recorded generation settings (the others go into ``SamplingParams``).

        Raises:
            ValueError: the setting could not take effect (``omit`` / ``thinking_budget`` included:
                :func:`~surveyalign.backends.base.local_engine_check`).
        """
        from surveyalign.backends.chat import check_template_settings

        local_engine_check(settings, f"vllm backend ({self.model_path})")
        check_template_settings(self.tokenizer, enable_thinking=settings.enable_thinking,
                                where=f"vllm backend ({self.model_path})")

    def _params(self, settings: GenerationSettings, n: int, seed: int) -> Any:
        return self._vllm.SamplingParams(
            n=n,
            seed=seed,
            temperature=settings.temperature,
            top_p=settings.top_p if not settings.greedy else 1.0,
            max_tokens=settings.max_new_tokens,
            logprobs=0,  # the sampled token's log-prob only
        )

    def generate(self, prompts: Sequence[Messages], settings: GenerationSettings | None = None, n: int = 1,
                 adapter_name: str | None = None) -> list[list[Generation]]:
        """Generate ``n`` samples per prompt with vLLM (greedy: one request, copied ``n`` times).

        Args:
            prompts: P chat prompts, rendered with ``render_chat`` (explicit ``enable_thinking``).
            settings: sampling settings; sample ``i`` uses seed ``settings.seed + i``.
            n: samples per prompt, >= 1.
            adapter_name: with ``adapters``: the adapter whose ``LoRARequest`` the requests carry (``None``: the
                single ``adapter``, else the base model).

        Returns:
            P lists of ``n`` generations; finish_reason is vLLM's ("stop", "length", "abort").

        Raises:
            ValueError: invalid ``prompts`` or ``n`` (see :func:`~surveyalign.backends.base.check_request`), or an
                unknown ``adapter_name``.
        """
        if adapter_name is not None and adapter_name not in self._loras:
            raise ValueError(f"vllm backend: no adapter named {adapter_name!r}; loaded: {sorted(self._loras)}")
        lora = self._loras[adapter_name] if adapter_name is not None else self._lora
        from surveyalign.backends.chat import render_chat

        settings = check_request(prompts, settings, n)
        self.check_settings(settings)
        texts = [render_chat(self.tokenizer, list(m), enable_thinking=settings.enable_thinking) for m in prompts]
        inputs = [{"prompt_token_ids": self.tokenizer(text, add_special_tokens=False)["input_ids"]} for text in texts]
        distinct = 1 if settings.greedy else n
        requests: list[tuple[int, Any, Any]] = []
        for p, text in enumerate(inputs):
            if self.n_per_request or distinct == 1:
                requests.append((p, text, self._params(settings, distinct, settings.seed)))
            else:
                requests.extend((p, text, self._params(settings, 1, settings.seed + i)) for i in range(distinct))
        outputs = self.llm.generate([r[1] for r in requests], [r[2] for r in requests], lora_request=lora,
                                    use_tqdm=False)
        rows: list[list[Generation]] = [[] for _ in prompts]
        for (p, prompt, _), output in zip(requests, outputs):
            for completion in output.outputs:
                # the prompt's tokens count once per prompt: its later samples reuse the prefix cache
                first = not rows[p]
                rows[p].append(_to_generation(completion, len(prompt["prompt_token_ids"]) if first else 0))
        return [row * n if len(row) == 1 and n > 1 else row for row in rows]


def _to_generation(completion: Any, prompt_tokens: int | None = None) -> Generation:
    values: list[float] = []
    if completion.logprobs:
        for token_id, step in zip(completion.token_ids, completion.logprobs):
            entry = step.get(token_id) if isinstance(step, dict) else None
            if entry is not None:
                values.append(float(entry.logprob))
    mean = mean_or_none(values)
    if mean is None and getattr(completion, "cumulative_logprob", None) is not None and completion.token_ids:
        mean = float(completion.cumulative_logprob) / len(completion.token_ids)
    return Generation(text=completion.text, finish_reason=completion.finish_reason, mean_logprob=mean,
                      prompt_tokens=prompt_tokens, completion_tokens=len(completion.token_ids or ()))

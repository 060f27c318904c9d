"""Local transformers judge (+ optional PEFT adapter), CPU or GPU, batched left-padded generation.

Sampling is done per row with its own ``torch.Generator`` seeded ``settings.seed + sample_index`` (Gumbel-max
over the temperature-scaled, nucleus-truncated distribution), so a sample does not depend on which other
prompts share its batch: re-running one unit reproduces it. The mean token log-probability is taken from the
model's raw next-token distribution (before temperature / top-p; the checkpoint's own
``generation_config`` sampling defaults such as ``repetition_penalty`` are not applied), over the generated tokens including the
end-of-turn token when the answer stopped (SurveyReview App. E tie-break, SPEC §5).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from surveyalign.backends.base import (
    Backend,
    Generation,
    GenerationSettings,
    Messages,
    check_request,
    mean_or_none,
)


@dataclass
class DetailedGeneration:
    """A :class:`Generation` plus token-level detail (used by ``surveyalign serve``).

    Attributes:
        generation: the public result.
        token_ids: generated token ids (including the end-of-turn token when ``finish_reason == "stop"``).
        token_logprobs: natural-log probability of each of ``token_ids`` under the raw model distribution.
        prompt_tokens: number of prompt tokens.
    """

    generation: Generation
    token_ids: list[int] = field(default_factory=list)
    token_logprobs: list[float] = field(default_factory=list)
    prompt_tokens: int = 0


def _fingerprints(model: str, adapter: str | None, tokenizer: str) -> dict[str, Any]:
    """Content fingerprints of the model, adapter and tokenizer folders (shared with the vLLM backend)."""
    from surveyalign.backends.fingerprint import (
        adapter_fingerprint,
        model_fingerprint,
        tokenizer_fingerprint,
    )

    return {"model": model_fingerprint(model), "adapter": adapter_fingerprint(adapter) if adapter else None,
            "tokenizer": tokenizer_fingerprint(tokenizer)}


def _resolve_device(device: str) -> str:
    import torch

    if device != "auto":
        return device
    if torch.cuda.is_available():
        return "cuda"
    return "cpu"


def _resolve_dtype(dtype: str, device: str) -> Any:
    import torch

    if dtype == "auto":
        if device.startswith("cuda"):
            return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
        return torch.float32
    names = {"float32": torch.float32, "fp32": torch.float32, "bfloat16": torch.bfloat16, "bf16": torch.bfloat16,
             "float16": torch.float16, "fp16": torch.float16}
    if dtype not in names:
        raise ValueError(f"transformers backend: dtype must be 'auto' or one of {sorted(names)}, got {dtype!r}")
    return names[dtype]


def _make_sampler(seeds: list[int], temperature: float, top_p: float, device: Any) -> Any:
    """Build the logits processor that records raw log-probs and (when temperature > 0) samples per row."""
    import torch
    from transformers import LogitsProcessor

    class _SeededSampler(LogitsProcessor):
        def __init__(self) -> None:
            self.generators = None
            if temperature > 0:
                self.generators = [torch.Generator(device=device).manual_seed(int(seed)) for seed in seeds]
            self.previous: torch.Tensor | None = None
            self.chosen: list[torch.Tensor] = []

        def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
            logprobs = torch.log_softmax(scores.float(), dim=-1)
            if self.previous is not None:
                self.chosen.append(self.previous.gather(1, input_ids[:, -1:]).squeeze(1))
            self.previous = logprobs
            if self.generators is None:
                return scores
            scaled = logprobs / temperature
            if top_p < 1.0:
                sorted_scores, order = torch.sort(scaled, dim=-1, descending=True)
                probs = torch.softmax(sorted_scores, dim=-1)
                mass_before = torch.cumsum(probs, dim=-1) - probs
                drop_sorted = mass_before >= top_p  # the top token always survives (mass_before == 0)
                drop = torch.zeros_like(drop_sorted).scatter(1, order, drop_sorted)
                scaled = scaled.masked_fill(drop, float("-inf"))
            noise = torch.stack([
                torch.rand(scaled.shape[-1], generator=generator, device=scaled.device)
                for generator in self.generators
            ])
            gumbel = -torch.log(-torch.log(noise.clamp(min=1e-20, max=1.0 - 1e-7)))
            return scaled + gumbel  # argmax of this is a sample from softmax(scaled)

        def token_logprobs(self, new_tokens: torch.LongTensor) -> torch.Tensor:
            """(batch, steps) log-probs of the generated tokens, the last step included."""
            chosen = list(self.chosen)
            if self.previous is not None and new_tokens.shape[1] > len(chosen):
                last = new_tokens[:, len(chosen):len(chosen) + 1]
                chosen.append(self.previous.gather(1, last).squeeze(1))
            if not chosen:
                return torch.zeros((new_tokens.shape[0], 0))
            return torch.stack(chosen, dim=1).cpu()

    return _SeededSampler()


class TransformersBackend(Backend):
    """A local causal LM judge through ``transformers`` (contract 3, kind ``"transformers"``).

    Args:
        model: local folder (or cached hub id) of the base model and tokenizer.
        adapter: optional PEFT adapter folder (e.g. an SFT output dir), loaded with
            ``peft.PeftModel.from_pretrained``.
        device: ``"auto"`` (CUDA when available, else CPU), ``"cpu"``, ``"cuda"``, ``"cuda:1"``...
        dtype: ``"auto"`` (bf16/fp16 on GPU, fp32 on CPU), ``"float32"``, ``"bfloat16"`` or ``"float16"``.
        batch_size: rows (prompt x sample) per ``generate`` call, >= 1; shrunk automatically on GPU OOM.
        merge_adapter: merge the adapter into the base weights after loading (faster decoding).
        tokenizer: tokenizer folder when it differs from ``model`` (default: the adapter folder if it holds
            a tokenizer, else ``model``).
        trust_remote_code: forwarded to ``from_pretrained``.

    Raises:
        ValueError: bad option values; OSError from transformers when a folder is missing.
    """

    name = "transformers"

    def __init__(
        self,
        model: str,
        adapter: str | None = None,
        device: str = "auto",
        dtype: str = "auto",
        batch_size: int = 8,
        merge_adapter: bool = True,
        tokenizer: str | None = None,
        trust_remote_code: bool = False,
    ) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        if batch_size < 1:
            raise ValueError(f"transformers backend: batch_size must be >= 1, got {batch_size}")
        from surveyalign.models.paths import resolve_model_path

        # a local-looking path that does not exist is "no such folder" now, never a Hub lookup
        self.model_path = resolve_model_path(model, "transformers backend: model")
        self.adapter_path = resolve_model_path(adapter, "transformers backend: adapter") if adapter else None
        if tokenizer is not None:
            tokenizer = resolve_model_path(tokenizer, "transformers backend: tokenizer")
        self.device = _resolve_device(device)
        self.torch_dtype = _resolve_dtype(dtype, self.device)
        self.batch_size = int(batch_size)
        self.merge_adapter = bool(merge_adapter)
        tokenizer_path = tokenizer
        if tokenizer_path is None:
            has_own = self.adapter_path and (Path(self.adapter_path) / "tokenizer_config.json").exists()
            tokenizer_path = self.adapter_path if has_own else self.model_path
        self.tokenizer_path = str(tokenizer_path)
        # content fingerprints, taken before loading: part of the cache identity (see backends.fingerprint)
        self.fingerprints = _fingerprints(self.model_path, self.adapter_path, self.tokenizer_path)
        self.tokenizer = AutoTokenizer.from_pretrained(self.tokenizer_path, trust_remote_code=trust_remote_code)
        self.tokenizer.padding_side = "left"
        if self.tokenizer.pad_token_id is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        net = AutoModelForCausalLM.from_pretrained(self.model_path, dtype=self.torch_dtype,
                                                   trust_remote_code=trust_remote_code)
        if self.adapter_path:
            from peft import PeftModel

            net = PeftModel.from_pretrained(net, self.adapter_path)
            if self.merge_adapter:
                net = net.merge_and_unload()
        self.model = net.to(self.device).eval()
        eos = self.model.generation_config.eos_token_id
        eos_ids = set(eos if isinstance(eos, list) else ([eos] if eos is not None else []))
        if self.tokenizer.eos_token_id is not None:
            eos_ids.add(self.tokenizer.eos_token_id)
        self.eos_token_ids = sorted(eos_ids)
        # Decoding is fully defined by GenerationSettings: drop the checkpoint's sampling defaults (temperature,
        # top_k, repetition_penalty...), which transformers would otherwise merge into every generate() call.
        from transformers import GenerationConfig

        self.model.generation_config = GenerationConfig(eos_token_id=self.eos_token_ids,
                                                        pad_token_id=self.tokenizer.pad_token_id)
        self.max_positions = getattr(self.model.config, "max_position_embeddings", None)
        self._lock = threading.Lock()
        self._torch = torch

    # ------------------------------------------------------------------ public API
    def describe(self) -> dict[str, Any]:
        """Return model/adapter paths and content fingerprints, device, dtype and batching for ``run_config.json``.

        ``fingerprints`` (model: config + weight sizes/mtimes, adapter and tokenizer: full content; see
        :mod:`surveyalign.backends.fingerprint`) make the evaluation cache key change when an adapter is retrained
        into the same folder. No credentials are ever included.
        """
        return {
            "backend": self.name,
            "model": self.model_path,
            "adapter": self.adapter_path,
            "tokenizer": self.tokenizer_path,
            "fingerprints": self.fingerprints,
            "device": self.device,
            "dtype": str(self.torch_dtype).replace("torch.", ""),
            "batch_size": self.batch_size,
            "merge_adapter": self.merge_adapter,
            "sampling": "per-row seeded Gumbel-max; seed = settings.seed + sample index",
        }

    def check_settings(self, settings: GenerationSettings) -> None:
        """Refuse a setting this backend cannot apply: ``enable_thinking=True`` with a template lacking the switch.

        Temperature, top_p, max_new_tokens and seed drive the seeded sampler; ``want_logprobs`` needs nothing
        (log-probs are always computed); ``enable_thinking`` goes to the chat template call.

        Args:
            settings: the recorded generation settings.

        Raises:
            ValueError: the chat template of the tokenizer has no ``enable_thinking`` switch and it is true.
        """
        from surveyalign.prompts import check_template_settings

        check_template_settings(self.tokenizer, enable_thinking=settings.enable_thinking,
                                where=f"transformers backend ({self.tokenizer_path})")

    def render(self, messages: Messages, settings: GenerationSettings) -> str:
        """Render one chat prompt to text with the explicit ``enable_thinking`` switch (contract 2).

        Args:
            messages: one chat prompt (``{"role", "content"}`` dicts).
            settings: only ``settings.enable_thinking`` is used.

        Returns:
            The prompt text, generation prompt included, as the model sees it.

        Raises:
            jinja2 errors from the tokenizer's chat template (e.g. roles it does not accept).
        """
        from surveyalign.prompts import render_chat

        return render_chat(self.tokenizer, list(messages), enable_thinking=settings.enable_thinking)

    def generate(self, prompts: Sequence[Messages], settings: GenerationSettings | None = None, n: int = 1
                 ) -> list[list[Generation]]:
        """Generate ``n`` samples per prompt (greedy when ``temperature == 0``: the ``n`` samples are equal).

        Args:
            prompts: P chat prompts, rendered with the tokenizer's chat template.
            settings: sampling settings (temperature, top_p, max_new_tokens, seed, enable_thinking).
            n: samples per prompt; sample ``i`` uses seed ``settings.seed + i``.

        Returns:
            P lists of ``n`` generations with ``finish_reason`` "stop" (end-of-turn token) or "length", and the
            mean raw token log-prob. A prompt longer than the model's context gives a failed generation.

        Raises:
            ValueError: invalid ``prompts`` or ``n``. A batch that runs out of GPU memory is split in halves;
                a single row that still does not fit gives a failed generation, not an exception.
        """
        return [[d.generation for d in row] for row in self.generate_detailed(prompts, settings, n)]

    def generate_detailed(self, prompts: Sequence[Messages], settings: GenerationSettings | None = None,
                          n: int = 1, seeds: Sequence[int] | None = None) -> list[list[DetailedGeneration]]:
        """Like :meth:`generate`, with token ids, per-token log-probs and prompt length.

        Args:
            seeds: optional base seed per prompt, replacing ``settings.seed`` (sample ``i`` of prompt ``p`` uses
                ``seeds[p] + i``); lets the server batch requests that differ only in their seed.

        Returns:
            P lists of ``n`` :class:`DetailedGeneration` (generation, token ids, per-token natural-log
            probabilities, prompt length in tokens).

        Raises:
            ValueError: invalid ``prompts`` or ``n``, or ``len(seeds) != len(prompts)``.
        """
        settings = check_request(prompts, settings, n)
        self.check_settings(settings)
        if seeds is not None and len(seeds) != len(prompts):
            raise ValueError(f"got {len(seeds)} seeds for {len(prompts)} prompts")
        base = list(seeds) if seeds is not None else [settings.seed] * len(prompts)
        texts = [self.render(messages, settings) for messages in prompts]
        encoded = [self.tokenizer(text, add_special_tokens=False)["input_ids"] for text in texts]
        distinct = 1 if settings.greedy else n
        results: dict[tuple[int, int], DetailedGeneration] = {}
        jobs: list[tuple[int, int]] = []
        for p, ids in enumerate(encoded):
            too_long = self.max_positions is not None and len(ids) + settings.max_new_tokens > self.max_positions
            for i in range(distinct):
                if too_long:
                    results[(p, i)] = DetailedGeneration(Generation.failed(
                        f"prompt has {len(ids)} tokens; with max_new_tokens={settings.max_new_tokens} it exceeds "
                        f"the model context of {self.max_positions}"), prompt_tokens=len(ids))
                else:
                    jobs.append((p, i))
        jobs.sort(key=lambda job: -len(encoded[job[0]]))  # similar lengths together: less padding
        with self._lock:
            for start in range(0, len(jobs), self.batch_size):
                batch = jobs[start:start + self.batch_size]
                for job, detail in zip(batch, self._run_batch([encoded[p] for p, _ in batch],
                                                              [base[p] + i for p, i in batch], settings)):
                    results[job] = detail
        return [[results[(p, 0 if settings.greedy else i)] for i in range(n)] for p in range(len(prompts))]

    def close(self) -> None:
        """Drop the model and free accelerator memory."""
        self.__dict__.pop("model", None)
        if self.device.startswith("cuda"):
            self._torch.cuda.empty_cache()
        super().close()

    # ------------------------------------------------------------------ internals
    def _run_batch(self, rows: list[list[int]], seeds: list[int], settings: GenerationSettings
                   ) -> list[DetailedGeneration]:
        torch = self._torch
        try:
            return self._generate_rows(rows, seeds, settings)
        except torch.OutOfMemoryError as exc:
            if len(rows) == 1:
                torch.cuda.empty_cache()
                return [DetailedGeneration(Generation.failed(f"out of memory: {exc}"), prompt_tokens=len(rows[0]))]
            torch.cuda.empty_cache()
            half = len(rows) // 2
            return (self._run_batch(rows[:half], seeds[:half], settings)
                    + self._run_batch(rows[half:], seeds[half:], settings))

    def _generate_rows(self, rows: list[list[int]], seeds: list[int], settings: GenerationSettings
                       ) -> list[DetailedGeneration]:
        torch = self._torch
        from transformers import GenerationConfig, LogitsProcessorList

        width = max(len(ids) for ids in rows)
        pad = self.tokenizer.pad_token_id
        input_ids = torch.tensor([[pad] * (width - len(ids)) + ids for ids in rows], device=self.device)
        attention = torch.tensor([[0] * (width - len(ids)) + [1] * len(ids) for ids in rows], device=self.device)
        sampler = _make_sampler(seeds, settings.temperature, settings.top_p, self.device)
        config = GenerationConfig(
            max_new_tokens=settings.max_new_tokens,
            do_sample=False,  # sampling happens in the seeded processor (Gumbel-max), decoding stays argmax
            eos_token_id=self.eos_token_ids,
            pad_token_id=pad,
        )
        with torch.inference_mode():
            output = self.model.generate(input_ids=input_ids, attention_mask=attention, generation_config=config,
                                         logits_processor=LogitsProcessorList([sampler]))
        new_tokens = output[:, width:]
        logprobs = sampler.token_logprobs(new_tokens)
        eos = set(self.eos_token_ids)
        details = []
        for row, ids in enumerate(new_tokens.tolist()):
            stop = next((k for k, token in enumerate(ids) if token in eos), None)
            kept = ids if stop is None else ids[:stop + 1]
            text_ids = kept if stop is None else kept[:-1]
            row_logprobs = [float(x) for x in logprobs[row, :len(kept)].tolist()]
            text = self.tokenizer.decode(text_ids, skip_special_tokens=False)
            details.append(DetailedGeneration(
                Generation(text=text, finish_reason="length" if stop is None else "stop",
                           mean_logprob=mean_or_none(row_logprobs)),
                token_ids=kept, token_logprobs=row_logprobs, prompt_tokens=len(rows[row])))
        return details


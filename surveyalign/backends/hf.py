"""Local transformers judge (+ optional PEFT adapter), CPU or GPU, batched left-padded generation.

Sampling is done per row with its own ``torch.Generator`` seeded ``settings.seed + sample_index`` (Gumbel-max
over the temperature-scaled, nucleus-truncated distribution), so a sample does not depend on which other
prompts share its batch: re-running one unit reproduces it. The mean token log-probability is taken from the
model's raw next-token distribution (before temperature / top-p; the checkpoint's own
``generation_config`` sampling defaults such as ``repetition_penalty`` are not applied), over the generated tokens including the
end-of-turn token when the answer stopped (SurveyReview App. E tie-break).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from surveyalign.backends.adapters import AdapterView, adapter_scope, load_adapters
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
from surveyalign.backends.hf_setup import _fingerprints, _resolve_device, _resolve_dtype
from surveyalign.backends.prefill import _Job, _pack, shared_prefill
from surveyalign.backends.sampling import make_sampler
from surveyalign.backends.token_stream import (
    StreamedToken,
    cancel_criteria,
    make_streamer,
)
from surveyalign.models.paths import from_hub


@dataclass
class DetailedGeneration:
    """A :class:`Generation` plus token-level detail (used by ``surveyalign serve``).

    Attributes:
        generation: the public result.
        token_ids: generated token ids (including the end-of-turn token when ``finish_reason == "stop"``).
        token_logprobs: natural-log probability of each of ``token_ids`` under the raw model distribution.
        prompt_tokens: number of prompt tokens.
        top_logprobs: when asked for (``top_logprobs=k``), per generated token the ``k`` most likely
            ``(token id, natural-log probability)`` pairs of that step, most likely first; else empty.
    """

    generation: Generation
    token_ids: list[int] = field(default_factory=list)
    token_logprobs: list[float] = field(default_factory=list)
    prompt_tokens: int = 0
    top_logprobs: list[list[tuple[int, float]]] = field(default_factory=list)


class TransformersBackend(Backend):
    """A local causal LM judge through ``transformers`` (``surveyalign/backends/base.py``, kind ``"transformers"``).

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
        adapters: several PEFT adapters on the one base, ``{name: folder}`` (e.g. the four SurveyAlign dimension
            adapters): the base is loaded once, each adapter is loaded under its name and switched on per call
            (:meth:`adapter_view` gives the backend of one adapter); not merged. Excludes ``adapter``.
        shared_prefill: run the prompt once for its ``n`` samples and expand its KV cache to ``n`` rows
            (:mod:`surveyalign.backends.prefill`); ``False`` repeats the prompt per sample (for comparisons).
        quantization: how to load the base: ``"auto"`` (default: the adapter's recorded quantisation from its
            training record, else full precision), ``"none"``, ``"4bit"`` (NF4 + double quantisation, bitsandbytes)
            or ``"8bit"``. A quantised base is never merged with the adapter (merging would re-quantise it).
        allow_base_mismatch: load an adapter onto a base (or quantisation) other than the one in its training
            record; the differences go to ``describe()["base_mismatch"]`` (run_config) instead of an error.

    Raises:
        ValueError: bad option values, or both ``adapter`` and ``adapters``; BaseMismatchError (a ``ValueError``)
            when the base differs from an adapter's training record; FileNotFoundError for a missing local folder;
            RuntimeError when a tensor of an adapter file attaches to no module of the base.
    """

    name = "transformers"
    local_engine = score_judge = greedy_reads_prompt_once = True  # in-process weights; greedy samples are one row

    def __init__(
        self,
        model: str, adapter: str | None = None,
        device: str = "auto",
        dtype: str = "auto",
        batch_size: int = 8,
        merge_adapter: bool = True,
        tokenizer: str | None = None,
        trust_remote_code: bool = False,
        adapters: Mapping[str, str] | None = None,
        shared_prefill: bool = True,
        quantization: str | dict[str, Any] | None = "auto",
        allow_base_mismatch: bool = False,
    ) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        if batch_size < 1:
            raise ValueError(f"transformers backend: batch_size must be >= 1, got {batch_size}")
        from surveyalign.models.paths import hub_folder, resolve_model_path

        # a local-looking path that does not exist is "no such folder" now, never a Hub lookup; an adapter's Hub id
        # becomes its cached snapshot folder (uncached while offline: one line, before the base is loaded)
        self.model_path = resolve_model_path(model, "transformers backend: model")
        self.adapter_path = hub_folder(adapter, "transformers backend: adapter") if adapter else None
        self.adapter_paths = {str(k): hub_folder(v, f"transformers backend: adapter {k!r}")
                              for k, v in (adapters or {}).items()}
        if self.adapter_path and self.adapter_paths:
            raise ValueError("transformers backend: give either adapter (one folder) or adapters ({name: folder})")
        self.shared_prefill = bool(shared_prefill)
        if tokenizer is not None:
            tokenizer = resolve_model_path(tokenizer, "transformers backend: tokenizer")
        self.device = _resolve_device(device)
        self.torch_dtype = _resolve_dtype(dtype, self.device)
        self.batch_size = int(batch_size)
        from surveyalign.models import check_adapter_attached, resolve_bases

        # the base the adapter(s) were trained on, in the recorded quantisation (or an error / a recorded override)
        self.quantization, self.base_mismatch = resolve_bases(
            self.model_path, [self.adapter_path] if self.adapter_path else list(self.adapter_paths.values()),
            quantization=quantization, allow_base_mismatch=allow_base_mismatch,
            compute_dtype=str(self.torch_dtype).replace("torch.", ""), where="transformers backend")
        self.merge_adapter = bool(merge_adapter) and self.quantization is None
        tokenizer_path = tokenizer
        if tokenizer_path is None:
            has_own = self.adapter_path and (Path(self.adapter_path) / "tokenizer_config.json").exists()
            tokenizer_path = self.adapter_path if has_own else self.model_path
        self.tokenizer_path = str(tokenizer_path)
        # content fingerprints, taken before loading: part of the cache identity (see backends.fingerprint)
        self.fingerprints = _fingerprints(self.model_path, self.adapter_path, self.tokenizer_path)
        self.adapter_fingerprints = {name: adapter_fingerprint(path) for name, path in self.adapter_paths.items()}
        self.tokenizer = from_hub(AutoTokenizer.from_pretrained, self.tokenizer_path, "tokenizer",
                                  trust_remote_code=trust_remote_code)
        self.tokenizer.padding_side = "left"
        if self.tokenizer.pad_token_id is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        load: dict[str, Any] = {"dtype": self.torch_dtype, "trust_remote_code": trust_remote_code}
        if self.quantization is not None:
            from surveyalign.models import bnb_config

            load.update(quantization_config=bnb_config(self.quantization), device_map={"": self.device})
        net = from_hub(AutoModelForCausalLM.from_pretrained, self.model_path, "model", **load)
        if self.adapter_path:
            from peft import PeftModel

            net = PeftModel.from_pretrained(net, self.adapter_path)
            check_adapter_attached(net, self.adapter_path)  # every adapter tensor in a module, or an error
            if self.merge_adapter:
                net = net.merge_and_unload()
        elif self.adapter_paths:
            net = load_adapters(net, self.adapter_paths)
            for name, path in self.adapter_paths.items():
                check_adapter_attached(net, path, adapter_name=name)
        self.model = (net if self.quantization is not None else net.to(self.device)).eval()
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
            "shared_prefill": self.shared_prefill,
            **({"adapters": self.adapter_paths, "adapter_fingerprints": self.adapter_fingerprints}
               if self.adapter_paths else {}),
            # only when set, so full-precision runs keep their cache identity
            **({"quantization": self.quantization} if self.quantization is not None else {}),
            **({"base_mismatch": self.base_mismatch} if self.base_mismatch else {}),
        }

    def adapter_view(self, name: str) -> AdapterView:
        """The backend of one loaded adapter (shares this model; the adapter is switched on per call).

        Args:
            name: a key of ``adapters``.

        Returns:
            An :class:`~surveyalign.backends.adapters.AdapterView` whose ``describe()`` names that adapter and its
            fingerprint (its cache identity).

        Raises:
            KeyError: ``name`` is not a loaded adapter (the message lists them).
        """
        if name not in self.adapter_paths:
            raise KeyError(f"transformers backend: no adapter named {name!r}; loaded: {sorted(self.adapter_paths)}")
        return AdapterView(self, name)

    def check_settings(self, settings: GenerationSettings) -> None:
        """Refuse a setting this backend cannot apply: ``enable_thinking=True`` with a template lacking the switch.

        Temperature, top_p, max_new_tokens and seed drive the seeded sampler; ``want_logprobs`` needs nothing
        (log-probs are always computed); ``enable_thinking`` goes to the chat template call.

        Args:
            settings: the recorded generation settings.

        Raises:
            ValueError: no ``enable_thinking`` switch in the chat template while it is true; ``omit`` or ``thinking_budget`` set.
        """
        from surveyalign.backends.chat import check_template_settings

        local_engine_check(settings, f"transformers backend ({self.tokenizer_path})")
        check_template_settings(self.tokenizer, enable_thinking=settings.enable_thinking,
                                where=f"transformers backend ({self.tokenizer_path})")

    def render(self, messages: Messages, settings: GenerationSettings) -> str:
        """Render one chat prompt to text with the explicit ``enable_thinking`` switch (``surveyalign/backends/chat.py``).

        Args:
            messages: one chat prompt (``{"role", "content"}`` dicts).
            settings: only ``settings.enable_thinking`` is used.

        Returns:
            The prompt text, generation prompt included, as the model sees it.

        Raises:
            jinja2 errors from the tokenizer's chat template (e.g. roles it does not accept).
        """
        from surveyalign.backends.chat import render_chat

        return render_chat(self.tokenizer, list(messages), enable_thinking=settings.enable_thinking)

    def generate(self, prompts: Sequence[Messages], settings: GenerationSettings | None = None, n: int = 1,
                 adapter_name: str | None = None) -> list[list[Generation]]:
        """Generate ``n`` samples per prompt (greedy when ``temperature == 0``: the ``n`` samples are equal).

        Args:
            prompts: P chat prompts, rendered with the tokenizer's chat template.
            settings: sampling settings (temperature, top_p, max_new_tokens, seed, enable_thinking).
            n: samples per prompt; sample ``i`` uses seed ``settings.seed + i``; they share one prefill.
            adapter_name: with ``adapters``: the adapter to run (``None``: the base model).

        Returns:
            P lists of ``n`` generations with ``finish_reason`` "stop" (end-of-turn token) or "length", and the
            mean raw token log-prob. A prompt longer than the model's context gives a failed generation.

        Raises:
            ValueError: invalid ``prompts`` or ``n``. A batch that runs out of GPU memory is split in halves;
                a single row that still does not fit gives a failed generation, not an exception.
        """
        return [[d.generation for d in row]
                for row in self.generate_detailed(prompts, settings, n, adapter_name=adapter_name)]

    def generate_detailed(self, prompts: Sequence[Messages], settings: GenerationSettings | None = None,
                          n: int = 1, seeds: Sequence[int] | None = None, adapter_name: str | None = None,
                          top_logprobs: int = 0, on_token: Callable[[StreamedToken], None] | None = None,
                          cancelled: Callable[[int], bool] | None = None) -> list[list[DetailedGeneration]]:
        """Like :meth:`generate`, with token ids, per-token log-probs and prompt length.

        The ``n`` samples of a prompt share one prefill when ``shared_prefill`` is on. Token counts: a prompt's
        tokens are counted on its first sample only (``Generation.prompt_tokens`` 0 on the others, as an API's
        ``usage`` counts them once per request); at ``temperature == 0`` one row runs and its ``n - 1`` copies
        count no prompt tokens either.

        Args:
            seeds: optional base seed per prompt, replacing ``settings.seed`` (sample ``i`` of prompt ``p`` uses
                ``seeds[p] + i``); lets the server batch requests that differ only in their seed.
            adapter_name: with ``adapters``: the adapter to run (``None``: the base model, adapters off).
            top_logprobs: 0-20; when > 0 each generated token also gets the most likely alternatives of its step.
            on_token: called from this thread with each token as soon as its step has run (``stream=True`` of
                ``surveyalign serve``; :class:`~surveyalign.backends.token_stream.StreamedToken`).
            cancelled: ``prompt index -> True`` once nobody waits for its answers (a ``serve`` client left):
                asked after every step, its rows stop (cut short), the others go on.

        Returns:
            P lists of ``n`` :class:`DetailedGeneration` (generation, token ids, per-token natural-log
            probabilities, prompt length in tokens, top alternatives when asked).

        Raises:
            ValueError: invalid ``prompts`` or ``n``, ``len(seeds) != len(prompts)``, or ``top_logprobs`` out
                of 0-20.
        """
        if not 0 <= top_logprobs <= 20:
            raise ValueError(f"top_logprobs must be in 0-20, got {top_logprobs}")
        settings = check_request(prompts, settings, n)
        self.check_settings(settings)
        if seeds is not None and len(seeds) != len(prompts):
            raise ValueError(f"got {len(seeds)} seeds for {len(prompts)} prompts")
        base = list(seeds) if seeds is not None else [settings.seed] * len(prompts)
        texts = [self.render(messages, settings) for messages in prompts]
        encoded = [self.tokenizer(text, add_special_tokens=False)["input_ids"] for text in texts]
        distinct = 1 if settings.greedy else n
        if adapter_name is not None and adapter_name not in self.adapter_paths:
            raise ValueError(f"transformers backend: no adapter named {adapter_name!r}; loaded: "
                             f"{sorted(self.adapter_paths)}")
        results: dict[tuple[int, int], DetailedGeneration] = {}
        jobs: list[_Job] = []
        for p, ids in enumerate(encoded):
            if self.max_positions is not None and len(ids) + settings.max_new_tokens > self.max_positions:
                for i in range(distinct):
                    results[(p, i)] = DetailedGeneration(Generation.failed(
                        f"prompt has {len(ids)} tokens; with max_new_tokens={settings.max_new_tokens} it exceeds "
                        f"the model context of {self.max_positions}"), prompt_tokens=len(ids))
                continue
            # one job per prompt (its samples share a prefill), cut to at most batch_size rows
            jobs += [_Job(p, tuple(range(i, min(i + self.batch_size, distinct))))
                     for i in range(0, distinct, self.batch_size)]
        jobs.sort(key=lambda job: -len(encoded[job.prompt]))  # similar lengths together: less padding
        if on_token is not None and settings.greedy and n > 1:  # one row answers the n samples: each gets it
            stream, on_token = on_token, lambda t: [stream(replace(t, sample=i)) for i in range(n)]
        with self._lock, adapter_scope(self.model, adapter_name, bool(self.adapter_paths)):
            for batch in _pack(jobs, self.batch_size):
                for (p, i), detail in self._run_batch(batch, encoded, base, settings, top_logprobs, on_token,
                                                      cancelled):
                    results[(p, i)] = detail
        # greedy: one row ran per prompt; its copies count no prompt tokens (the prompt was read once)
        return [[results[(p, i)] if not settings.greedy else results[(p, 0)] if i == 0 else
                 replace(results[(p, 0)], generation=replace(results[(p, 0)].generation, prompt_tokens=0))
                 for i in range(n)] for p in range(len(prompts))]

    def close(self) -> None:
        """Drop the model and free accelerator memory."""
        self.__dict__.pop("model", None)
        if self.device.startswith("cuda"):
            self._torch.cuda.empty_cache()
        super().close()

    # ------------------------------------------------------------------ internals
    def _run_batch(self, jobs: list[_Job], encoded: list[list[int]], base: list[int], settings: GenerationSettings,
                   top_logprobs: int = 0, on_token: Any = None, cancelled: Any = None
                   ) -> list[tuple[tuple[int, int], DetailedGeneration]]:
        torch = self._torch
        keys = [(job.prompt, i) for job in jobs for i in job.samples]
        try:
            rows = self._generate_rows(jobs, encoded, base, settings, top_logprobs, on_token, cancelled)
            return list(zip(keys, rows))
        except torch.OutOfMemoryError as exc:
            torch.cuda.empty_cache()
            if len(keys) == 1:
                failed = DetailedGeneration(Generation.failed(f"out of memory: {exc}"),
                                            prompt_tokens=len(encoded[jobs[0].prompt]))
                return [(keys[0], failed)]
            if len(jobs) == 1:  # one prompt: halve its samples
                half = len(jobs[0].samples) // 2
                parts = [[_Job(jobs[0].prompt, jobs[0].samples[:half])], [_Job(jobs[0].prompt, jobs[0].samples[half:])]]
            else:
                parts = [jobs[:len(jobs) // 2], jobs[len(jobs) // 2:]]
            return [item for part in parts
                    for item in self._run_batch(part, encoded, base, settings, top_logprobs, on_token, cancelled)]

    def _generate_rows(self, jobs: list[_Job], encoded: list[list[int]], base: list[int],
                       settings: GenerationSettings, top_logprobs: int = 0, on_token: Any = None,
                       cancelled: Any = None) -> list[DetailedGeneration]:
        torch = self._torch
        from transformers import GenerationConfig, LogitsProcessorList

        prompt_rows = [encoded[job.prompt] for job in jobs]
        repeats = [len(job.samples) for job in jobs]
        rows = [ids for ids, r in zip(prompt_rows, repeats) for _ in range(r)]
        seeds = [base[job.prompt] + i for job in jobs for i in job.samples]
        width = max(len(ids) for ids in prompt_rows)
        pad = self.tokenizer.pad_token_id
        input_ids = torch.tensor([[pad] * (width - len(ids)) + ids for ids in prompt_rows], device=self.device)
        attention = torch.tensor([[0] * (width - len(ids)) + [1] * len(ids) for ids in prompt_rows],
                                 device=self.device)
        if self.shared_prefill:
            input_ids, attention, cache_kwargs = shared_prefill(self.model, input_ids, attention, repeats,
                                                                reserve=settings.max_new_tokens + 1)
        else:
            index = torch.repeat_interleave(torch.arange(len(jobs), device=self.device),
                                            torch.tensor(repeats, device=self.device))
            input_ids, attention, cache_kwargs = input_ids[index], attention[index], {}
        sampler = make_sampler(seeds, settings.temperature, settings.top_p, self.device, top_logprobs)
        config = GenerationConfig(
            max_new_tokens=settings.max_new_tokens,
            do_sample=False,  # sampling happens in the seeded processor (Gumbel-max), decoding stays argmax
            eos_token_id=self.eos_token_ids,
            pad_token_id=pad,
        )
        if on_token is not None:  # tokens handed out step by step (serve stream=True)
            cache_kwargs["streamer"] = make_streamer([(job.prompt, i) for job in jobs for i in job.samples],
                                                     self.eos_token_ids, sampler, on_token)
        if cancelled is not None:  # rows whose client left stop at the next step
            cache_kwargs["stopping_criteria"] = cancel_criteria([job.prompt for job in jobs for _ in job.samples],
                                                                cancelled)
        with torch.inference_mode():
            output = self.model.generate(input_ids=input_ids, attention_mask=attention, generation_config=config,
                                         logits_processor=LogitsProcessorList([sampler]), **cache_kwargs)
        new_tokens = output[:, width:]
        logprobs = sampler.token_logprobs(new_tokens)
        top = sampler.top_tokens()
        eos = set(self.eos_token_ids)
        # the prompt's tokens are counted once per job (its samples share one prefill), on the job's first row
        first_rows = {sum(repeats[:j]) for j in range(len(jobs))} if self.shared_prefill else set(range(len(rows)))
        details = []
        for row, ids in enumerate(new_tokens.tolist()):
            stop = next((k for k, token in enumerate(ids) if token in eos), None)
            kept = ids if stop is None else ids[:stop + 1]
            text_ids = kept if stop is None else kept[:-1]
            row_logprobs = [float(x) for x in logprobs[row, :len(kept)].tolist()]
            text = self.tokenizer.decode(text_ids, skip_special_tokens=False)
            alternatives = [] if top is None else [
                list(zip(top[1][row, k].tolist(), (float(v) for v in top[0][row, k].tolist())))
                for k in range(min(len(kept), top[0].shape[1]))]
            details.append(DetailedGeneration(
                Generation(text=text, finish_reason="length" if stop is None else "stop",
                           mean_logprob=mean_or_none(row_logprobs),
                           prompt_tokens=len(rows[row]) if row in first_rows else 0, completion_tokens=len(kept)),
                token_ids=kept, token_logprobs=row_logprobs, prompt_tokens=len(rows[row]),
                top_logprobs=alternatives))
        return details

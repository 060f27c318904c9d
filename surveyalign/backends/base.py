"""The one small interface every judge backend implements, and the shared value types.

A judge backend turns chat prompts into sampled answers. The evaluation harness (SurveyReview §6,
App. E test-time scaling) asks for ``n`` samples per prompt and needs, for each sample, the text, why the
generation stopped and the mean token log-probability (the tie-break of the majority vote).
"""

from __future__ import annotations

import asyncio
import math
import threading
from abc import ABC
from collections.abc import Coroutine, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Self, TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    field_validator,
    model_serializer,
    model_validator,
)

from surveyalign.redact import redact_secrets

Messages = list[dict[str, Any]]
"""One chat prompt: a list of ``{"role": ..., "content": ...}`` messages."""

_T = TypeVar("_T")
_RUNNER_LOCK = threading.Lock()


class GenerationSettings(BaseModel):
    """Sampling settings shared by every backend (``surveyalign/backends/base.py``).

    Attributes:
        temperature: softmax temperature, >= 0; 0 means greedy decoding (and ``n`` identical samples).
        top_p: nucleus sampling mass in (0, 1]; ignored when ``temperature == 0``.
        max_new_tokens: cap on generated tokens per sample, >= 1 (``max_tokens`` in the OpenAI API).
        seed: base seed; sample ``i`` of every prompt uses ``seed + i`` so the ``n`` samples differ and a
            re-run reproduces them where the backend honours seeds.
        enable_thinking: passed to the chat template (Qwen3-style ``enable_thinking``); off by default.
        want_logprobs: ask API backends for token log-probabilities (local backends always compute them);
            off by default because some hosted models reject the ``logprobs`` parameter.
        omit: request fields an API backend leaves out of every request body, named as the fields above: any of
            :data:`OMITTABLE` (``temperature``, ``top_p``, ``seed``, ``max_new_tokens``). The server then uses its
            own default. For models that refuse sampling parameters (the GPT-5 family: ``omit: [temperature,
            top_p]``) and for Anthropic's extended thinking (no ``temperature`` with ``thinking``). The omitted
            values are still recorded here (``run_config.json``) but never sent; a local engine (transformers,
            vLLM, Ray) sends nothing and refuses a non-empty ``omit``. Stored sorted, without repeats.
        thinking_budget: Anthropic extended thinking: sent as ``thinking: {type: enabled, budget_tokens: N}``
            (Messages API, Message Batches, and Anthropic's OpenAI-compatible endpoint); ``None`` (default): not
            sent. At least 1024 (Anthropic's minimum), below ``max_new_tokens`` (the thinking counts towards it),
            and only with ``temperature`` in ``omit``.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    temperature: float = Field(0.0, ge=0.0, description="Sampling temperature; 0 = greedy.")
    top_p: float = Field(1.0, gt=0.0, le=1.0, description="Nucleus sampling mass.")
    max_new_tokens: int = Field(512, ge=1, description="Maximum generated tokens per sample.")
    seed: int = Field(0, ge=0, description="Base seed; sample i uses seed + i.")
    enable_thinking: bool = Field(False, description="Chat-template enable_thinking flag.")
    want_logprobs: bool = Field(False, description="Request token log-probs from API backends.")
    omit: tuple[str, ...] = Field((), description="Request fields API backends leave out (temperature, top_p, seed, "
                                                  "max_new_tokens).")
    thinking_budget: int | None = Field(None, ge=1024, description="Anthropic extended thinking budget (tokens).")

    @field_validator("omit", mode="before")
    @classmethod
    def _known_omit(cls, value: Any) -> Any:
        """Refuse a name that is not an omittable field (naming it and the valid ones); sort, drop repeats."""
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, (list, tuple)):
            return value
        unknown = [v for v in value if v not in OMITTABLE]
        if unknown:
            raise ValueError(f"omit: unknown field(s) {', '.join(map(repr, unknown))}; "
                             f"fields that can be left out: {', '.join(OMITTABLE)}")
        return tuple(sorted(set(value)))

    @model_validator(mode="after")
    def _thinking_fits(self) -> GenerationSettings:
        """``thinking_budget`` below ``max_new_tokens`` and only with ``temperature`` omitted (Anthropic's rules)."""
        if self.thinking_budget is not None:
            if self.thinking_budget >= self.max_new_tokens:
                raise ValueError(f"thinking_budget ({self.thinking_budget}) must be below max_new_tokens "
                                 f"({self.max_new_tokens}): the thinking counts towards the answer's token cap")
            if "temperature" not in self.omit:
                raise ValueError("thinking_budget needs omit: [temperature] (Anthropic refuses a temperature with "
                                 "extended thinking)")
        return self

    @model_serializer(mode="wrap")
    def _dump(self, handler: Any) -> dict[str, Any]:
        """Leave ``omit`` and ``thinking_budget`` out of the dump while unset, so the settings of earlier runs (and
        the cache keys hashed from them, ``surveyalign.calls.call_key``) stay as they were."""
        data = handler(self)
        if not self.omit:
            data.pop("omit", None)
        if self.thinking_budget is None:
            data.pop("thinking_budget", None)
        return data

    @property
    def greedy(self) -> bool:
        """True when decoding is deterministic (temperature 0, and sent: an omitted temperature is the server's)."""
        return self.temperature == 0.0 and "temperature" not in self.omit

    def sent(self, name: str) -> bool:
        """Whether an API request carries the field ``name`` (one of :data:`OMITTABLE`): not in ``omit``."""
        return name not in self.omit


#: Fields of :class:`GenerationSettings` an API request may leave out (``generation.omit``).
OMITTABLE: tuple[str, ...] = ("max_new_tokens", "seed", "temperature", "top_p")


def local_engine_check(settings: GenerationSettings, where: str) -> None:
    """Refuse the settings that only an API request can apply, for an engine that decodes in this process.

    Args:
        settings: the run's generation settings.
        where: the engine, for the message (``"transformers backend (MODEL)"``).

    Raises:
        ValueError: ``omit`` is non-empty (nothing is sent, so nothing can be left out: the engine decodes with
            every value) or ``thinking_budget`` is set (an Anthropic request field).
    """
    if settings.omit:
        raise ValueError(f"{where}: generation.omit ({', '.join(settings.omit)}) applies to API requests only; this "
                         "engine decodes in-process with every setting: drop generation.omit")
    if settings.thinking_budget is not None:
        raise ValueError(f"{where}: generation.thinking_budget is Anthropic's extended thinking; this engine cannot "
                         "apply it: drop it (enable_thinking switches a chat template's thinking)")


@dataclass(frozen=True)
class Generation:
    """One sampled answer.

    Attributes:
        text: the generated text (``""`` when the request failed).
        finish_reason: ``"stop"`` (end of turn), ``"length"`` (hit ``max_new_tokens``), another
            server-reported reason, or ``None`` when unknown / failed.
        mean_logprob: mean natural-log probability of the generated tokens (<= 0), ``None`` when unavailable.
        error: ``None`` on success; otherwise a one-line description (the harness records ``api_error``), with
            every known secret replaced by ``[REDACTED]`` (:func:`surveyalign.redact.redact_secrets`) when the
            generation is made, so no key echoed by a server reaches a cache, a prediction file, a report or the
            console.
        reasoning: the model's reasoning when the server returned it apart from the answer (``reasoning_content``,
            thinking / reasoning parts); kept for inspection, never read for a score. ``None`` when absent.
        refusal: the server's refusal text when the model declined to answer (``message.refusal``); the answer is
            then a parse failure with this text as its reason. ``None`` when absent.
        prompt_tokens: prompt tokens of the request (the API's ``usage``; the tokenizer's count for local
            engines); ``None`` when unknown. For ``n`` samples of one prompt each sample carries the prompt's count.
        completion_tokens: tokens generated for this sample (reasoning included); ``None`` when unknown.
        cached_tokens: how many of ``prompt_tokens`` the provider read from its prompt cache (``None``: unknown).
        cache_write_tokens: how many of ``prompt_tokens`` the provider wrote to its prompt cache (Anthropic's
            ``cache_creation_input_tokens``, billed at the ``cache_write`` price); ``None``: unknown or none.
        batch_id: the provider batch that answered it (OpenAI Batch / Anthropic Message Batches); ``None`` for a
            direct call.
        served_model: the model id the server says answered (the reply's ``model``; an API may answer a request
            for "gpt-x" with a dated version), ``None`` when not returned.
        system_fingerprint: the server's configuration fingerprint of that answer (``system_fingerprint``), ``None``
            when not returned. Both are recorded per call and summarised in the run's judge identity.
    """

    text: str
    finish_reason: str | None
    mean_logprob: float | None
    error: str | None = None
    reasoning: str | None = None
    refusal: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cached_tokens: int | None = None
    batch_id: str | None = None
    served_model: str | None = None
    system_fingerprint: str | None = None
    cache_write_tokens: int | None = None

    def __post_init__(self) -> None:
        if self.error:
            object.__setattr__(self, "error", redact_secrets(self.error))

    @property
    def ok(self) -> bool:
        """True when the generation succeeded."""
        return self.error is None

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-serialisable dict with every field."""
        return asdict(self)

    @classmethod
    def failed(cls, error: str) -> Generation:
        """Return a failed generation carrying ``error``."""
        return cls(text="", finish_reason=None, mean_logprob=None, error=error)


def mean_or_none(values: Sequence[float]) -> float | None:
    """Mean of finite ``values``; ``None`` for an empty sequence."""
    if not values:
        return None
    total = math.fsum(values)
    return total / len(values)


class _LoopThread:
    """A private event loop running in a daemon thread, so sync callers can drive async backends.

    Keeping one loop alive across calls lets async backends keep their connection pool between
    ``generate`` calls instead of rebuilding it each time.
    """

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="surveyalign-backend-loop", daemon=True)
        self._thread.start()

    def run(self, coro: Coroutine[Any, Any, _T]) -> _T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    def stop(self) -> None:
        if self.loop.is_running():
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(timeout=5)
        if not self.loop.is_running():
            self.loop.close()


#: The capability attributes of :class:`Backend` (a wrapper such as an adapter view copies them from its parent).
CAPABILITIES: tuple[str, ...] = ("answers_from_model", "local_engine", "serves_adapters_by_name", "score_judge",
                                 "takes_protocol", "default_batch_size", "shares_prefill", "greedy_reads_prompt_once")


class Backend(ABC):
    """A judge backend: ``n`` sampled answers per chat prompt (style: prometheus-eval).

    Subclasses implement at least one of :meth:`generate` (sync) or :meth:`agenerate` (async); the base class
    derives the other. Per-request failures come back as :class:`Generation` with ``error`` set and are
    never raised; invalid arguments (bad settings, ``n < 1``) raise ``ValueError``.

    What a backend can do is said by class attributes (inspect_ai's ``ModelAPI`` style), each overridden by the
    backends that can; code outside ``surveyalign.backends`` asks them (of a built backend, or of a config's kind
    through :func:`~surveyalign.backends.registry.backend_capabilities`) and never compares a backend's name.

    Attributes:
        name: short backend kind, e.g. ``"openai"``.
        answers_from_model: whether answers come from a model (calls/s are meaningful); False for baselines.
        local_engine: loads the model's weights on this machine or its Ray workers and decodes there (GPUs counted,
            LoRA adapters read from folders, one base shared by per-dimension adapters): transformers, vLLM, Ray.
        serves_adapters_by_name: an adapter is a model id the server answers under (OpenAI / Anthropic-compatible
            servers): a judge names each dimension's adapter as that dimension's ``model``, not a folder.
        score_judge: a ``score`` judge (base + one adapter per dimension) may run on it (transformers, vLLM,
            OpenAI-compatible servers).
        takes_protocol: its options take the run's ``protocol`` (the constant baseline answers in it).
        default_batch_size: prompts per ``generate`` call when neither the run nor the backend sets ``batch_size``
            (8; vLLM schedules its own batches and takes 256).
        shares_prefill: the ``n`` samples of one prompt share one prefill, so the prompt is read once (vLLM).
        greedy_reads_prompt_once: a greedy run of ``n`` samples decodes one row, so the prompt is read once
            (transformers).
    """

    name: str = "backend"
    #: False for judges that answer without running a model (constant, scripted): no rate is shown for them.
    answers_from_model: bool = True
    local_engine: bool = False
    serves_adapters_by_name: bool = False
    score_judge: bool = False
    takes_protocol: bool = False
    default_batch_size: int = 8
    shares_prefill: bool = False
    greedy_reads_prompt_once: bool = False

    def prompt_cache(self) -> Any:
        """The provider prompt cache this backend's requests meet (a
        :class:`~surveyalign.backends.prompt_cache.PromptCacheRules`), or ``None`` (default: none it can rely on).
        The call stage orders calls for it and ``--plan`` predicts its reads and writes from it."""
        return None

    def generate(self, prompts: Sequence[Messages], settings: GenerationSettings | None = None, n: int = 1
                 ) -> list[list[Generation]]:
        """Generate ``n`` samples for each prompt.

        Args:
            prompts: P chat prompts, each a list of message dicts.
            settings: sampling settings; defaults to ``GenerationSettings()`` (greedy).
            n: samples per prompt, >= 1; sample ``i`` uses seed ``settings.seed + i``.

        Returns:
            A list of P lists, each of ``n`` :class:`Generation` objects, in prompt order.

        Raises:
            ValueError: ``n < 1`` or a prompt that is not a non-empty list of role/content dicts (a failing
                request is never raised: it comes back as a :class:`Generation` with ``error`` set).
            NotImplementedError: the subclass implements neither ``generate`` nor ``agenerate``.
        """
        if type(self).agenerate is Backend.agenerate:
            raise NotImplementedError(f"{type(self).__name__} implements neither generate nor agenerate")
        # Always drive the coroutine on a private loop thread: works inside a running loop (notebooks) too,
        # and keeps per-loop clients alive between calls.
        with _RUNNER_LOCK:
            runner = self.__dict__.get("_loop_thread")
            if runner is None:
                runner = _LoopThread()
                self.__dict__["_loop_thread"] = runner
        return runner.run(self.agenerate(prompts, settings, n))

    async def agenerate(self, prompts: Sequence[Messages], settings: GenerationSettings | None = None, n: int = 1
                        ) -> list[list[Generation]]:
        """Async :meth:`generate`; the default runs the sync version in a worker thread.

        API backends override this to keep up to ``concurrency`` requests in flight; the evaluation harness
        calls it once per (unit, sample) (SurveyReview App. E: K samples, sample ``k`` with seed ``seed + k``).

        Args:
            prompts: P chat prompts, each a list of ``{"role", "content"}`` dicts.
            settings: sampling settings; defaults to ``GenerationSettings()`` (greedy, 512 new tokens).
            n: samples per prompt, >= 1; sample ``i`` uses seed ``settings.seed + i``.

        Returns:
            A list of P lists, each of ``n`` :class:`Generation` objects, in prompt order.

        Raises:
            ValueError: ``n < 1`` or a prompt that is not a non-empty list of role/content dicts (a failing
                request is never raised: it comes back as a :class:`Generation` with ``error`` set).
            NotImplementedError: the subclass implements neither ``generate`` nor ``agenerate``.
        """
        if type(self).generate is Backend.generate:
            raise NotImplementedError(f"{type(self).__name__} implements neither generate nor agenerate")
        return await asyncio.to_thread(self.generate, prompts, settings, n)

    def describe(self) -> dict[str, Any]:
        """Return a JSON-serialisable description for ``run_config.json`` (never keys or headers)."""
        return {"backend": self.name}

    def check_settings(self, settings: GenerationSettings) -> None:
        """Refuse generation settings this backend cannot apply (every recorded setting must take effect).

        The default accepts everything; backends override it (e.g. ``enable_thinking`` without a way to pass it
        to the chat template). :meth:`generate` calls it, and :func:`preflight` before a run starts.

        Args:
            settings: the settings a run would record in ``run_config.json``.

        Raises:
            ValueError: naming the setting and what would make it apply.
        """

    def check_ready(self) -> None:
        """Check, before a run starts, that the backend can answer now (the default: nothing to check).

        Raises:
            OSError: the backend's server does not answer (API backends), with the URL and the error.
        """

    def close(self) -> None:
        """Release clients, threads and models held by the backend (idempotent)."""
        runner = self.__dict__.pop("_loop_thread", None)
        if runner is not None:
            runner.stop()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def check_request(prompts: Sequence[Messages], settings: GenerationSettings | None, n: int) -> GenerationSettings:
    """Validate the arguments of :meth:`Backend.generate` and return the effective settings.

    Args:
        prompts: P chat prompts, each a non-empty list of dicts with ``role`` and ``content``.
        settings: the requested settings, or ``None`` for the defaults.
        n: samples per prompt; must be an ``int`` >= 1.

    Returns:
        ``settings``, or ``GenerationSettings()`` when it is ``None``.

    Raises:
        ValueError: ``n < 1`` or a prompt that is not a non-empty list of role/content dicts.
    """
    if not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be a positive integer, got {n!r}")
    for index, messages in enumerate(prompts):
        if not isinstance(messages, (list, tuple)) or not messages:
            raise ValueError(f"prompt {index}: expected a non-empty list of messages, got {type(messages).__name__}")
        for j, message in enumerate(messages):
            if not isinstance(message, dict) or "role" not in message or "content" not in message:
                raise ValueError(f"prompt {index}, message {j}: expected a dict with 'role' and 'content'")
    return settings if settings is not None else GenerationSettings()


def preflight(backends: Sequence[Backend], settings: GenerationSettings, *, ready: bool = True) -> None:
    """Check every backend of a run before its first call: the settings apply, and the server answers.

    Args:
        backends: the run's backends (objects without ``check_settings`` / ``check_ready`` are skipped).
        settings: the generation settings the run records.
        ready: also ask each server whether it answers; ``False`` (``evaluate --plan``): the settings only, no request.

    Raises:
        ValueError: a backend cannot apply one of ``settings`` (:meth:`Backend.check_settings`).
        OSError: a backend's server does not answer (:meth:`Backend.check_ready`).
    """
    for backend in backends:
        check = getattr(backend, "check_settings", None)
        if callable(check):
            check(settings)
        answers = getattr(backend, "check_ready", None)
        if ready and callable(answers):
            answers()

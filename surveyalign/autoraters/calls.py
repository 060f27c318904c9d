"""Autorater LLM calls through the shared backends and the one cached caller of the call layer (runs resume).

Every call is keyed like the evaluation harness's calls (:func:`surveyalign.calls.call_key`: stage, unit, the
namespace ``"autorate.<stage>"`` (:func:`namespace`), messages hash, backend identity, settings) and made by
:func:`surveyalign.calls.cached_generate` (requests in flight for API backends, batches for local ones); each
answer is appended to ``calls.jsonl`` as it arrives, so a re-run with the same cache makes only the calls that are
missing or that failed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, ClassVar

from surveyalign.autoraters.length import FittedPrompt, fit_prompt
from surveyalign.autoraters.prompts import PROMPT_VERSION
from surveyalign.backends import Backend, Generation, GenerationSettings, ModelRole
from surveyalign.calls import (
    Call,
    CallCache,
    backend_identity,
    cached_generate,
    make_call,
)
from surveyalign.judge import CHARS_PER_TOKEN, TOO_LONG_TEXT, model_context
from surveyalign.models import check_max_length
from surveyalign.models.paths import from_hub
from surveyalign.prompts import answer_failure

__all__ = ["AutoraterJudge", "AutoraterRole", "CallAnswer", "PromptCall", "namespace"]


def namespace(stage: str) -> str:
    """The call-cache namespace of an autorater step, e.g. ``"autorate.litreview"`` for stage ``"litreview"``
    (keeps autorater calls apart from other callers' calls)."""
    return f"autorate.{stage}"


class AutoraterRole(ModelRole):
    """The autorater judge as a model role (``surveyalign autorate --judge ROLE.yaml``): ``backend`` +
    ``generation``, default ``max_new_tokens: 2048`` (greedy, seed 0, as PaperOrchestra's autoraters)."""

    generation_defaults: ClassVar[dict[str, Any]] = {"max_new_tokens": 2048}


@dataclass(frozen=True)
class PromptCall:
    """One autorater call.

    Attributes:
        stage: which autorater step, e.g. ``"sxs-litreview"`` or ``"partition"``.
        unit_id: what is judged, e.g. ``"0:a.md|b.md::AB"``; part of the cache key.
        messages: the chat messages.
        texts: the paper texts inside ``messages`` that the length rule may shorten (empty: none).
        build: texts -> messages (the builder with its other inputs bound), needed with ``texts``.
    """

    stage: str
    unit_id: str
    messages: list[dict[str, str]]
    texts: tuple[str, ...] = ()
    build: Callable[[Sequence[str]], list[dict[str, str]]] | None = None


@dataclass(frozen=True)
class CallAnswer:
    """The answer to one :class:`PromptCall`.

    Attributes:
        key: the cache key.
        text: the answer text (``""`` on failure).
        finish_reason: as reported by the backend (``"length"`` = cut off at the token cap).
        error: the backend error, ``None`` on success.
        cached: True when the answer came from ``calls.jsonl``.
        refusal: the server's refusal text, if any.
        length: what the length rule did (prompt tokens, tokens cut per paper), ``None`` when it was off.
    """

    key: str
    text: str
    finish_reason: str | None
    error: str | None
    cached: bool
    refusal: str | None = None
    length: dict[str, Any] | None = None

    @classmethod
    def of(cls, key: str, generation: Generation, cached: bool, length: FittedPrompt | None = None) -> CallAnswer:
        """The answer carried by ``generation`` under ``key``."""
        return cls(key, generation.text or "", generation.finish_reason, generation.error, cached, generation.refusal,
                   None if length is None else length.to_dict())

    @property
    def failure(self) -> str | None:
        """Why the answer must not be read (backend error, truncated at the token cap, refused), else ``None``."""
        if self.error is not None:
            return self.error if self.error.startswith(TOO_LONG_TEXT) else f"backend error: {self.error}"
        return answer_failure(self, "JSON object")

    @property
    def readable_text(self) -> str | None:
        """The text to parse, or ``None`` when :attr:`failure` is set."""
        return None if self.failure else self.text

    def to_dict(self) -> dict[str, Any]:
        """The fields as a JSON-serialisable dict (plus ``failure``)."""
        return {"key": self.key, "text": self.text, "finish_reason": self.finish_reason, "error": self.error,
                "refusal": self.refusal, "failure": self.failure, "cached": self.cached, "length": self.length}


class AutoraterJudge:
    """A backend, its generation settings and an optional call cache: what every autorater asks.

    Args:
        backend: any :class:`~surveyalign.backends.Backend` (API, local model, scripted judge).
        settings: generation settings (PaperOrchestra uses temperature 0 where the model allows it); default
            greedy with 2048 new tokens.
        cache: the run's ``calls.jsonl``; ``None`` = no caching.
        concurrency: requests in flight for API backends (default: the backend's own setting).
        batch_size: prompts per ``generate`` call for local backends (default: the backend's own, else 8).
        progress: show a progress bar.
        max_length: token budget of prompt + answer; longer prompts get the ends of their paper texts cut
            (:func:`~surveyalign.autoraters.length.fit_prompt`). ``None``: the model's context when the backend
            knows it (a local model's, an API server's ``max_model_len`` option or ``/v1/models`` entry: issue
            21 D): with a tokenizer the texts are cut by the same rule to fit it, without one a prompt whose
            characters / 4 estimate passes it is refused with the numbers (no call made); never sent whole past a
            known context. No known context: sent whole.
        tokenizer: the tokenizer counting tokens for ``max_length`` or the known context (object, folder or id;
            a folder or id is loaded when first needed); default: the backend's own ``tokenizer`` (local backends).

    Raises:
        ValueError: ``concurrency`` or ``batch_size`` below 1, ``max_length`` below
            :data:`surveyalign.models.MIN_MAX_LENGTH` or not above ``max_new_tokens``, or
            ``max_length`` without a tokenizer.
    """

    def __init__(self, backend: Backend, settings: GenerationSettings | None = None, cache: CallCache | None = None,
                 concurrency: int | None = None, batch_size: int | None = None, progress: bool = False,
                 max_length: int | None = None, tokenizer: Any = None) -> None:
        for name, value in (("concurrency", concurrency), ("batch_size", batch_size)):
            if value is not None and value < 1:
                raise ValueError(f"{name} must be >= 1, got {value}")
        settings = settings or GenerationSettings(temperature=0.0, max_new_tokens=2048)
        if max_length is not None:
            check_max_length(max_length, max_new_tokens=settings.max_new_tokens)  # the one floor, then > answer
            tokenizer = tokenizer if tokenizer is not None else getattr(backend, "tokenizer", None)
            if tokenizer is None:
                raise ValueError("max_length needs a tokenizer to count tokens (a folder or id; API backends have none)")
            if isinstance(tokenizer, str):
                from transformers import AutoTokenizer

                tokenizer = from_hub(AutoTokenizer.from_pretrained, tokenizer, "tokenizer")
        self.max_length = max_length
        self.tokenizer = tokenizer
        self.backend = backend
        self.settings = settings
        self.cache = cache
        self.concurrency = concurrency
        self.batch_size = batch_size
        self.progress = progress
        self._identity: dict[str, Any] | None = None
        self._context: int | None | bool = False  # False: not asked yet

    def describe(self) -> dict[str, Any]:
        """Backend description, settings and prompt version, for the output's provenance."""
        return {"backend": self.backend.describe(), "settings": self.settings.model_dump(),
                "prompt_version": PROMPT_VERSION, "max_length": self.max_length,
                "context": self.context() if self.max_length is None else None,
                "tokenizer": None if self.tokenizer is None else getattr(self.tokenizer, "name_or_path", None)}

    def _call(self, call: PromptCall) -> Call:
        if self._identity is None:
            self._identity = backend_identity(self.backend)
        return make_call(self.backend, self.settings, stage=f"autorate/{call.stage}", unit_id=call.unit_id,
                         namespace=namespace(call.stage), messages=call.messages, identity=self._identity)

    def key(self, call: PromptCall) -> str:
        """The cache key of ``call``."""
        return self._call(call).key

    def planned(self, calls: Sequence[PromptCall]) -> list[Call]:
        """The call-layer :class:`~surveyalign.calls.Call` of each prompt call, as sent when no length rule cuts
        it (for ``--plan`` estimates; nothing is sent and no server is asked)."""
        return [self._call(c) for c in calls]

    def ask(self, calls: Sequence[PromptCall], desc: str = "autorater calls",
            read: Callable[[PromptCall, CallAnswer], str | None] | None = None) -> list[CallAnswer]:
        """Answer ``calls`` in order, from the cache where possible; never raises for a failed call.

        Args:
            calls: the calls (identical ones are made once).
            desc: progress-bar label.
            read: the autorater's reader, ``(call, answer) -> reason | None``: a cached answer it cannot use
                (unreadable winner, invalid JSON, truncated) is asked again on a re-run, like an error (the call
                layer's rule; ``--keep-failed`` keeps it).

        Returns:
            One :class:`CallAnswer` per call, in order.
        """
        fitted = [self._fit(c) for c in calls]
        planned = [self._call(c if f is None or f.messages is None else replace(c, messages=f.messages))
                   for c, f in zip(calls, fitted, strict=True)]
        answers: dict[str, tuple[Generation, bool]] = {}
        sendable: list[Call] = []
        for call, fit in zip(planned, fitted, strict=True):
            if fit is not None and fit.messages is None:  # nothing to send: reported, never cached
                answers[call.key] = (Generation.failed(fit.reason or TOO_LONG_TEXT), False)
            else:
                sendable.append(call)
        by_key = {p.key: c for c, p in zip(calls, planned, strict=True)}

        def check(call: Call, generation: Generation) -> str | None:
            return read(by_key[call.key], CallAnswer.of(call.key, generation, True)) if read is not None else None

        got = cached_generate(sendable, self.cache, concurrency=self.concurrency, batch_size=self.batch_size,
                              progress=self.progress, desc=desc, check=check)
        for call, answer in zip(sendable, got, strict=True):
            answers[call.key] = (answer.generation, answer.cached)
        return [CallAnswer.of(call.key, *answers[call.key], fit) for call, fit in zip(planned, fitted, strict=True)]

    def context(self) -> int | None:
        """The model context in tokens (:func:`surveyalign.judge.model_context`, asked once), ``None`` when unknown
        or when the backend does not answer from a model (a scripted judge)."""
        if self._context is False:
            answers = getattr(self.backend, "answers_from_model", True)
            self._context = model_context(self.backend) if answers else None
        return self._context  # type: ignore[return-value]

    def _fit(self, call: PromptCall) -> FittedPrompt | None:
        """The length rule applied to ``call`` (``None`` when it is off: no ``max_length`` and no known context,
        or the call has no texts)."""
        if not call.texts or call.build is None:
            return None
        max_new = self.settings.max_new_tokens
        if self.max_length is not None:
            return fit_prompt(call.build, call.texts, self.tokenizer, self.max_length, max_new,
                              enable_thinking=self.settings.enable_thinking)
        context = self.context()
        if context is None:
            return None
        if isinstance(self.tokenizer, str):  # a folder or id given without max_length: loaded on first need
            from transformers import AutoTokenizer

            self.tokenizer = from_hub(AutoTokenizer.from_pretrained, self.tokenizer, "tokenizer")
        tokenizer = self.tokenizer if self.tokenizer is not None else getattr(self.backend, "tokenizer", None)
        if tokenizer is not None and not isinstance(tokenizer, str):
            return fit_prompt(call.build, call.texts, tokenizer, context, max_new,
                              enable_thinking=self.settings.enable_thinking, limit="context")
        chars = sum(len(m.get("content") or "") for m in call.messages)
        estimate = -(-chars // CHARS_PER_TOKEN)
        if estimate + max_new <= context:
            return FittedPrompt(call.messages, estimate, (0,) * len(call.texts), limit="context", counted="characters")
        return FittedPrompt(None, estimate, (), limit="context", counted="characters", reason=(
            f"{TOO_LONG_TEXT}: the prompt has {chars:,} characters (about {estimate:,} tokens at {CHARS_PER_TOKEN} "
            f"characters per token) + max_new_tokens={max_new} exceed the model context (max_model_len) of "
            f"{context:,} tokens; pass --tokenizer to cut the paper texts to it, or shorten them "
            "(no call made)"))

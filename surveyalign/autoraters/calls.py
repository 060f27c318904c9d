"""Autorater LLM calls through the shared backends and the evaluation call cache (runs resume).

Every call is keyed like the evaluation harness's calls (``surveyalign.judge.call_key``: stage, unit,
prompt hash, backend identity, settings), so a re-run with the same ``calls.jsonl`` makes only the calls that are
missing. Failed calls (backend errors) are reported and not cached, so the next run tries them again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tqdm.auto import tqdm

from surveyalign.autoraters.prompts import PROMPT_VERSION
from surveyalign.backends import Backend, Generation, GenerationSettings
from surveyalign.judge import CallCache, call_key, stable_hash
from surveyalign.prompts import answer_failure

__all__ = ["AutoraterJudge", "CallAnswer", "PromptCall"]


@dataclass(frozen=True)
class PromptCall:
    """One autorater call.

    Attributes:
        stage: which autorater step, e.g. ``"sxs-litreview"`` or ``"partition"``.
        unit_id: what is judged, e.g. ``"pair-0::AB"``; part of the cache key.
        messages: the chat messages.
    """

    stage: str
    unit_id: str
    messages: list[dict[str, str]]


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
    """

    key: str
    text: str
    finish_reason: str | None
    error: str | None
    cached: bool
    refusal: str | None = None

    @property
    def failure(self) -> str | None:
        """Why the answer must not be read (backend error, truncated at the token cap, refused), else ``None``."""
        if self.error is not None:
            return f"backend error: {self.error}"
        return answer_failure(self)

    @property
    def readable_text(self) -> str | None:
        """The text to parse, or ``None`` when :attr:`failure` is set."""
        return None if self.failure else self.text

    def to_dict(self) -> dict[str, Any]:
        """The fields as a JSON-serialisable dict (plus ``failure``)."""
        return {"key": self.key, "text": self.text, "finish_reason": self.finish_reason, "error": self.error,
                "refusal": self.refusal, "failure": self.failure, "cached": self.cached}


class AutoraterJudge:
    """A backend, its generation settings and an optional call cache: what every autorater asks.

    Args:
        backend: any :class:`~surveyalign.backends.Backend` (API, local model, scripted judge).
        settings: generation settings (PaperOrchestra uses temperature 0 where the model allows it).
        cache: the run's ``calls.jsonl``; ``None`` = no caching.
        batch_size: prompts per ``generate`` call (answers are cached after each batch).
        progress: show a progress bar.
    """

    def __init__(self, backend: Backend, settings: GenerationSettings | None = None, cache: CallCache | None = None,
                 batch_size: int = 8, progress: bool = False) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self.backend = backend
        self.settings = settings or GenerationSettings(temperature=0.0, max_new_tokens=2048)
        self.cache = cache
        self.batch_size = batch_size
        self.progress = progress

    def describe(self) -> dict[str, Any]:
        """Backend identity, settings and prompt version, for the output's provenance."""
        return {"backend": self.backend.describe(), "settings": self.settings.model_dump(),
                "prompt_version": PROMPT_VERSION}

    def key(self, call: PromptCall) -> str:
        """The cache key of ``call``."""
        return call_key(stage=f"autorate/{call.stage}", unit_id=call.unit_id, dimension="", sample=0,
                        messages_hash=stable_hash({"version": PROMPT_VERSION, "messages": call.messages}),
                        backend=self.backend.describe(), settings=self.settings.model_dump())

    def ask(self, calls: Sequence[PromptCall], desc: str = "autorater calls") -> list[CallAnswer]:
        """Answer ``calls`` in order, from the cache where possible; never raises for a failed call.

        Args:
            calls: the calls.
            desc: progress-bar label.

        Returns:
            One :class:`CallAnswer` per call, in order.
        """
        keys = [self.key(c) for c in calls]
        answers: dict[int, CallAnswer] = {}
        pending: list[int] = []
        for i, key in enumerate(keys):
            rec = self.cache.get(key) if self.cache is not None else None
            if rec is not None:
                answers[i] = CallAnswer(key, rec.get("text", ""), rec.get("finish_reason"), None, True,
                                        rec.get("refusal"))
            else:
                pending.append(i)
        bar = tqdm(total=len(pending), desc=desc, disable=not self.progress or not pending)
        for start in range(0, len(pending), self.batch_size):
            chunk = pending[start:start + self.batch_size]
            try:
                rows = self.backend.generate([calls[i].messages for i in chunk], self.settings, 1)
            except (ValueError, RuntimeError, OSError) as err:
                rows = [[Generation.failed(f"{type(err).__name__}: {err}")] for _ in chunk]
            for i, row in zip(chunk, rows, strict=True):
                gen = row[0]
                answers[i] = CallAnswer(keys[i], gen.text, gen.finish_reason, gen.error, False, gen.refusal)
                if gen.ok and self.cache is not None:
                    self.cache.append({"key": keys[i], "stage": calls[i].stage, "unit_id": calls[i].unit_id,
                                       "prompt_version": PROMPT_VERSION, "text": gen.text,
                                       "finish_reason": gen.finish_reason, "refusal": gen.refusal,
                                       "mean_logprob": gen.mean_logprob})
            bar.update(len(chunk))
        bar.close()
        return [answers[i] for i in range(len(calls))]

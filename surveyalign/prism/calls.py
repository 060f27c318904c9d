"""Extraction calls through a shared backend and the evaluation call cache (runs resume).

Every PRISM extraction call goes through :class:`Extractor`: its key hashes the stage, the unit, the exact
messages, the backend's identity and the generation settings (``surveyalign.judge.call_key``); answers are
appended to ``calls.jsonl`` as they arrive, so re-running the same command makes only the calls that are missing
or that failed. Failures never raise: they come back as failed :class:`~surveyalign.backends.Generation` objects
and are counted per stage.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from typing import Any

from tqdm.auto import tqdm

from surveyalign.backends import Backend, Generation, GenerationSettings, Messages
from surveyalign.judge import CallCache, call_key, stable_hash

__all__ = ["CallRequest", "Extractor"]

#: Optional fields of a cached answer brought back into its Generation (refusal, reasoning, ...).
_GENERATION_FIELDS = tuple(f.name for f in fields(Generation) if f.name not in ("text", "finish_reason",
                                                                               "mean_logprob", "error"))
#: The ``dimension`` part of every PRISM call key (keeps PRISM calls apart from survey-scoring calls).
_DIMENSION = "prism"


@dataclass(frozen=True)
class CallRequest:
    """One extraction call: its stage, the unit it is about (review id, flaw id, ...) and the messages."""

    stage: str
    unit_id: str
    messages: Messages


@dataclass
class Extractor:
    """Runs extraction calls on ``backend`` with ``settings``, through ``cache`` when given.

    Attributes:
        backend: any :class:`~surveyalign.backends.Backend` (API, transformers, vLLM, scripted).
        settings: generation settings of every call (greedy by default).
        cache: the run's ``calls.jsonl`` (None: no caching).
        batch_size: prompts per ``backend.generate`` call.
        progress: show a progress bar per batch of requests.
        counts: stage -> ``{"calls", "cached", "made", "api_error"}``.
    """

    backend: Backend
    settings: GenerationSettings = field(default_factory=GenerationSettings)
    cache: CallCache | None = None
    batch_size: int = 8
    progress: bool = False
    counts: dict[str, dict[str, int]] = field(default_factory=dict)

    def _key(self, request: CallRequest) -> str:
        return call_key(stage=f"prism:{request.stage}", unit_id=request.unit_id, dimension=_DIMENSION, sample=0,
                        messages_hash=stable_hash(request.messages), backend=self.backend.describe(),
                        settings=self.settings.model_dump())

    def _count(self, stage: str, what: str) -> None:
        entry = self.counts.setdefault(stage, {"calls": 0, "cached": 0, "made": 0, "api_error": 0})
        entry[what] += 1

    def run(self, requests: Sequence[CallRequest], desc: str = "prism") -> list[Generation]:
        """Answer every request (cached answers reused; failed cached answers asked again).

        Args:
            requests: the calls, any stages.
            desc: progress-bar label.

        Returns:
            One :class:`~surveyalign.backends.Generation` per request, in order (``error`` set on failure).
        """
        keys = [self._key(r) for r in requests]
        out: list[Generation | None] = [None] * len(requests)
        todo: list[int] = []
        for i, (request, key) in enumerate(zip(requests, keys, strict=True)):
            self._count(request.stage, "calls")
            record = self.cache.get(key) if self.cache is not None else None
            if record is not None and record.get("error") is None:
                out[i] = Generation(**{f: record.get(f) for f in _GENERATION_FIELDS if f in record},
                                    **{f: record.get(f) for f in ("text", "finish_reason", "mean_logprob")})
                self._count(request.stage, "cached")
            else:
                todo.append(i)
        bar = tqdm(total=len(todo), desc=desc, disable=not self.progress or not todo, leave=False)
        for start in range(0, len(todo), self.batch_size):
            chunk = todo[start:start + self.batch_size]
            answers = self.backend.generate([requests[i].messages for i in chunk], self.settings, 1)
            for i, row in zip(chunk, answers, strict=True):
                gen = row[0]
                out[i] = gen
                self._count(requests[i].stage, "made")
                if not gen.ok:
                    self._count(requests[i].stage, "api_error")
                if self.cache is not None:
                    self.cache.append(self._record(keys[i], requests[i], gen))
            bar.update(len(chunk))
        bar.close()
        return [g if g is not None else Generation.failed("no answer") for g in out]

    @staticmethod
    def _record(key: str, request: CallRequest, gen: Generation) -> dict[str, Any]:
        return {"key": key, "stage": f"prism:{request.stage}", "unit_id": request.unit_id,
                "messages_hash": stable_hash(request.messages), **gen.to_dict()}

"""Extraction calls through a shared backend and the call layer's cache (runs resume).

Every PRISM extraction call goes through :class:`Extractor`, which hands them to the one cached caller
(:func:`surveyalign.calls.cached_generate`): its key hashes the stage, the unit, the namespace :data:`NAMESPACE`,
the exact messages, the backend's identity and the generation settings (:func:`surveyalign.calls.call_key`);
answers are appended to ``calls.jsonl`` as they arrive (native-async API backends keep their ``concurrency``
requests in flight, the others get batches), so re-running the same command makes only the calls that are missing
or that failed. Failures never raise: they come back as failed :class:`~surveyalign.backends.Generation` objects
and are counted per stage.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from surveyalign.backends import Backend, Generation, GenerationSettings, Messages
from surveyalign.calls import (
    Call,
    CallCache,
    backend_identity,
    cached_generate,
    make_call,
)

__all__ = ["NAMESPACE", "CallRequest", "Extractor"]

#: The call-cache namespace of every PRISM extraction call (keeps them apart from other callers' calls).
NAMESPACE = "prism.extract"


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
        batch_size: prompts per ``backend.generate`` call for backends that are not natively async.
        concurrency: requests in flight for a native-async (API) backend (None: the backend's own setting).
        progress: show a progress bar per batch of requests.
        counts: stage -> ``{"calls", "cached", "made", "api_error"}``.
    """

    backend: Backend
    settings: GenerationSettings = field(default_factory=GenerationSettings)
    cache: CallCache | None = None
    batch_size: int = 8
    concurrency: int | None = None
    progress: bool = False
    counts: dict[str, dict[str, int]] = field(default_factory=dict)
    _identity: dict | None = field(default=None, init=False, repr=False)

    def _call(self, request: CallRequest) -> Call:
        if self._identity is None:
            self._identity = backend_identity(self.backend)
        return make_call(self.backend, self.settings, stage=f"prism:{request.stage}", unit_id=request.unit_id,
                         namespace=NAMESPACE, messages=request.messages, identity=self._identity)

    def _count(self, stage: str, what: str) -> None:
        entry = self.counts.setdefault(stage, {"calls": 0, "cached": 0, "made": 0, "api_error": 0})
        entry[what] += 1

    def run(self, requests: Sequence[CallRequest], desc: str = "prism",
            read: Callable[[CallRequest, Generation], str | None] | None = None) -> list[Generation]:
        """Answer every request (cached answers reused; failed cached answers asked again).

        Args:
            requests: the calls, any stages.
            desc: progress-bar label.
            read: the stage's reader, ``(request, generation) -> reason | None``: a cached answer it cannot use
                (unparseable, truncated) is asked again like an error (the call layer's rule; the cache's
                ``keep_failed`` keeps it).

        Returns:
            One :class:`~surveyalign.backends.Generation` per request, in order (``error`` set on failure).
        """
        calls = [self._call(r) for r in requests]
        by_key = {c.key: r for c, r in zip(calls, requests, strict=True)}

        def check(call: Call, generation: Generation) -> str | None:
            return read(by_key[call.key], generation) if read is not None else None

        answers = cached_generate(calls, self.cache, concurrency=self.concurrency, batch_size=self.batch_size,
                                  progress=self.progress, desc=desc, check=check)
        made: set[str] = set()
        for request, call, answer in zip(requests, calls, answers, strict=True):
            self._count(request.stage, "calls")
            if answer.cached:
                self._count(request.stage, "cached")
            elif call.key not in made:  # the same call asked twice in one batch is made once
                made.add(call.key)
                self._count(request.stage, "made")
                if not answer.generation.ok:
                    self._count(request.stage, "api_error")
        return [answer.generation for answer in answers]

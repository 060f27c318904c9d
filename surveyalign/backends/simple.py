"""Backends that need no model: the constant-score baseline and a scripted judge for tests."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

from surveyalign.backends.base import (
    Backend,
    Generation,
    GenerationSettings,
    Messages,
    check_request,
)
from surveyalign.constants import TARGET_TEMPLATES, VALID_SCORES


class ConstantBackend(Backend):
    """The constant-score baseline judge (our baseline; kind ``"constant"``).

    Every sample is the same well-formed judgement written with the protocol's answer template
    (``surveyalign.constants.TARGET_TEMPLATES``, the same one ``surveyalign.prompts.format_target`` uses)
    (e.g. ``"No specific comment.$$$-1$$$"`` under protocol v1.0), so a run with this judge measures how far
    always answering one score gets on the benchmark (66% of SurveyReview labels are -1).

    Args:
        score: the constant score, one of -2, -1, 1, 2.
        rationale: the constant rationale text.
        protocol: output protocol name, a key of ``surveyalign.constants.TARGET_TEMPLATES`` (``"v1.0"``,
            ``"v1.1"``).

    Raises:
        ValueError: ``score`` not in {-2, -1, 1, 2}, or an unknown ``protocol``.
    """

    name = "constant"
    answers_from_model = False
    takes_protocol = True

    def __init__(self, score: int = -1, rationale: str = "No specific comment.", protocol: str = "v1.0") -> None:
        if isinstance(score, bool) or score not in VALID_SCORES:
            raise ValueError(f"constant backend: score must be one of {VALID_SCORES}, got {score!r}")
        if protocol not in TARGET_TEMPLATES:
            raise ValueError(f"constant backend: unknown protocol {protocol!r}; expected one of "
                             f"{', '.join(TARGET_TEMPLATES)}")
        self.score = int(score)
        self.rationale = rationale
        self.protocol = protocol
        self.text = TARGET_TEMPLATES[protocol].format(rationale=rationale.strip(), score=self.score)

    def generate(self, prompts: Sequence[Messages], settings: GenerationSettings | None = None, n: int = 1
                 ) -> list[list[Generation]]:
        """Return ``n`` copies of the constant judgement per prompt (finish_reason "stop", no log-prob).

        Args:
            prompts: P chat prompts (not read).
            settings: ignored (the answer is fixed).
            n: samples per prompt, >= 1.

        Returns:
            P lists of ``n`` equal generations, the rationale and score in the protocol's answer format.

        Raises:
            ValueError: invalid ``prompts`` or ``n`` (see :func:`check_request`).
        """
        check_request(prompts, settings, n)
        return [[Generation(self.text, "stop", None) for _ in range(n)] for _ in prompts]

    def describe(self) -> dict[str, Any]:
        """Return the constant's score, rationale and protocol."""
        return {"backend": self.name, "score": self.score, "rationale": self.rationale, "protocol": self.protocol}


ScriptedReply = str | Generation | BaseException
ScriptedFn = Callable[[Messages, GenerationSettings, int], ScriptedReply]


class ScriptedBackend(Backend):
    """A judge that plays back prepared replies (kind ``"scripted"``), for tests and dry runs.

    Args:
        replies: either a list of replies handed out in call order (prompt-major, then sample index), or a
            callable ``(messages, settings, sample_index) -> reply``. A reply is a ``str`` (finish_reason
            "stop"), a ready :class:`Generation`, or an exception instance (turned into a failed generation,
            like an API error).
        cycle: when the list runs out, start again from the top instead of returning failed generations.
        mean_logprob: log-prob attached to string replies (``None``: unavailable).

    Attributes:
        calls: ``(messages, settings, sample_index)`` of every generation asked for, in order.
    """

    name = "scripted"
    answers_from_model = False

    def __init__(self, replies: Sequence[ScriptedReply] | ScriptedFn, cycle: bool = False,
                 mean_logprob: float | None = None) -> None:
        self._fn = replies if callable(replies) else None
        self._replies = [] if callable(replies) else list(replies)
        self.cycle = cycle
        self.mean_logprob = mean_logprob
        self.calls: list[tuple[Messages, GenerationSettings, int]] = []
        self._position = 0
        self._lock = threading.Lock()

    def _next(self, messages: Messages, settings: GenerationSettings, index: int) -> ScriptedReply:
        if self._fn is not None:
            return self._fn(messages, settings, index)
        with self._lock:
            if self._position >= len(self._replies):
                if not self.cycle or not self._replies:
                    return RuntimeError(f"scripted backend ran out of replies after {self._position}")
                self._position = 0
            reply = self._replies[self._position]
            self._position += 1
        return reply

    def generate(self, prompts: Sequence[Messages], settings: GenerationSettings | None = None, n: int = 1
                 ) -> list[list[Generation]]:
        """Return the next scripted replies, ``n`` per prompt.

        Args:
            prompts: P chat prompts (passed to a callable ``replies`` and recorded in :attr:`calls`).
            settings: sampling settings (passed to a callable ``replies``).
            n: samples per prompt, >= 1.

        Returns:
            P lists of ``n`` generations; an exception reply, a raising callable or an exhausted list (without
            ``cycle``) gives a failed generation instead of raising.

        Raises:
            ValueError: invalid ``prompts`` or ``n`` (see :func:`check_request`).
        """
        settings = check_request(prompts, settings, n)
        out: list[list[Generation]] = []
        for messages in prompts:
            row = []
            for index in range(n):
                self.calls.append((messages, settings, index))
                try:
                    reply = self._next(messages, settings, index)
                except Exception as exc:  # noqa: BLE001 - a raising callable is a per-request failure
                    reply = exc
                if isinstance(reply, Generation):
                    row.append(reply)
                elif isinstance(reply, BaseException):
                    row.append(Generation.failed(f"{type(reply).__name__}: {reply}"))
                else:
                    row.append(Generation(str(reply), "stop", self.mean_logprob))
            out.append(row)
        return out

    def describe(self) -> dict[str, Any]:
        """Return the kind and the number of prepared replies."""
        return {"backend": self.name, "replies": None if self._fn else len(self._replies), "cycle": self.cycle}

"""The one retry policy of every network call: the ``openai`` backend and the polite HTTP client.

A :class:`RetryPolicy` says how often a transient failure (429, 5xx, timeout, dropped connection: see
:data:`surveyalign.backends.transport.RETRY_STATUS`) is tried again and how long to wait in between: the server's
``Retry-After`` when it sends one (capped at ``max_retry_after``), otherwise an exponential backoff with jitter,
attempt ``k`` (1-based) waiting ``d / 2 + uniform(0, d / 2)`` seconds with ``d = min(max_wait, base_wait * 2**(k-1))``
(never less than half the step, so many clients that failed together spread out without hammering the server).

Services keep their own settings (:data:`OPENAI_RETRY` for chat-completions servers, :data:`HTTP_RETRY` for
scholarly APIs, whose rate limits ask for longer waits); their configs keep the option names they always had
(``max_retries`` = retries after the first try; ``max_attempts`` = tries in all; ``backoff_initial``,
``backoff_max``, ``max_retry_after``), read by :meth:`RetryPolicy.of`. It lives beside the backends (the lowest
layer that makes network calls) and is re-exported by :mod:`surveyalign.calls`.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields, replace
from typing import Any

from tenacity import (
    AsyncRetrying,
    RetryCallState,
    Retrying,
    retry_if_exception_type,
    stop_after_attempt,
)

__all__ = ["HTTP_RETRY", "OPENAI_RETRY", "RetryPolicy"]


@dataclass(frozen=True)
class RetryPolicy:
    """How a transient failure is retried (tries in all, backoff, Retry-After).

    Attributes:
        attempts: tries in all, >= 1 (1 = never retried).
        base_wait: seconds, >= 0: the scale of the exponential backoff (the first retry waits about this long).
        max_wait: seconds, >= 0: cap of one backoff step.
        max_retry_after: seconds, >= 0: cap on a server's ``Retry-After`` (a longer one is waited this long).
        honour_retry_after: wait what the server asks (``Retry-After``) instead of the backoff.

    Raises:
        ValueError: ``attempts < 1`` or a negative wait (the message names the field).
    """

    attempts: int = 7
    base_wait: float = 1.0
    max_wait: float = 60.0
    max_retry_after: float = 300.0
    honour_retry_after: bool = True

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ValueError(f"retry policy: attempts must be >= 1, got {self.attempts}")
        for name in ("base_wait", "max_wait", "max_retry_after"):
            if getattr(self, name) < 0:
                raise ValueError(f"retry policy: {name} must be >= 0 seconds, got {getattr(self, name)}")

    @property
    def retries(self) -> int:
        """Retries after the first try (``attempts - 1``)."""
        return self.attempts - 1

    @classmethod
    def of(cls, defaults: RetryPolicy, *, policy: RetryPolicy | Mapping[str, Any] | None = None,
           max_retries: int | None = None, max_attempts: int | None = None, backoff_initial: float | None = None,
           backoff_max: float | None = None, max_retry_after: float | None = None) -> RetryPolicy:
        """A service's policy from its config options (``None``: the service default in ``defaults``).

        Args:
            defaults: the service's policy (:data:`OPENAI_RETRY`, :data:`HTTP_RETRY`).
            policy: a whole policy, or some of its fields (a YAML ``retry: {attempts: 3}``) over ``defaults``;
                the options below override it.
            max_retries: retries after the first try, >= 0 (the ``openai`` backend option).
            max_attempts: tries in all, >= 1 (the HTTP client option); not together with ``max_retries``.
            backoff_initial: ``base_wait``.
            backoff_max: ``max_wait``.
            max_retry_after: ``max_retry_after``.

        Returns:
            The policy.

        Raises:
            ValueError: both ``max_retries`` and ``max_attempts``, ``max_retries < 0``, ``max_attempts < 1`` or a
                negative wait, an unknown field in ``policy`` (the message names the option).
        """
        if isinstance(policy, RetryPolicy):
            defaults = policy
        elif policy is not None:
            unknown = sorted(set(policy) - {f.name for f in fields(cls)})
            if unknown:
                raise ValueError(f"retry policy: unknown field(s) {unknown}; valid: {[f.name for f in fields(cls)]}")
            defaults = replace(defaults, **policy)
        changes: dict[str, Any] = {}
        if max_retries is not None and max_attempts is not None:
            raise ValueError("give max_retries (retries after the first try) or max_attempts (tries in all), "
                             "not both")
        if max_retries is not None:
            if max_retries < 0:
                raise ValueError(f"max_retries must be >= 0, got {max_retries}")
            changes["attempts"] = int(max_retries) + 1
        if max_attempts is not None:
            if max_attempts < 1:
                raise ValueError(f"max_attempts must be >= 1, got {max_attempts}")
            changes["attempts"] = int(max_attempts)
        for option, name in (("backoff_initial", "base_wait"), ("backoff_max", "max_wait"),
                             ("max_retry_after", "max_retry_after")):
            value = locals()[option]
            if value is not None:
                if value < 0:
                    raise ValueError(f"{option} must be >= 0 seconds, got {value}")
                changes[name] = float(value)
        return replace(defaults, **changes)

    def wait(self, attempt: int, retry_after: float | None = None) -> float:
        """Seconds to wait after failed try number ``attempt`` (1-based).

        Args:
            attempt: the try that failed, >= 1.
            retry_after: the server's ``Retry-After`` in seconds (``None``: none sent).

        Returns:
            ``min(retry_after, max_retry_after)`` when the server asked and the policy honours it, else the
            jittered backoff step (see the module docstring), in ``[d / 2, d]``.
        """
        if retry_after is not None and self.honour_retry_after:
            return min(retry_after, self.max_retry_after)
        step = min(self.max_wait, self.base_wait * 2 ** (max(1, attempt) - 1))
        return step / 2 + random.uniform(0.0, step / 2)

    def wait_after(self, state: RetryCallState) -> float:
        """:meth:`wait` for a tenacity retry state: its try number and its exception's ``retry_after``."""
        error = state.outcome.exception() if state.outcome else None
        return self.wait(state.attempt_number, getattr(error, "retry_after", None))

    def _tenacity(self, retry_on: type[BaseException] | tuple[type[BaseException], ...],
                  before_sleep: Callable[[RetryCallState], Any] | None,
                  wait: Callable[[RetryCallState], float] | None) -> dict[str, Any]:
        return {"stop": stop_after_attempt(self.attempts), "wait": wait or self.wait_after,
                "retry": retry_if_exception_type(retry_on), "before_sleep": before_sleep, "reraise": True}

    def retrying(self, retry_on: type[BaseException] | tuple[type[BaseException], ...], *,
                 before_sleep: Callable[[RetryCallState], Any] | None = None,
                 wait: Callable[[RetryCallState], float] | None = None) -> Retrying:
        """A ``tenacity.Retrying`` for this policy (call it with the function to try).

        Args:
            retry_on: the exception type(s) worth retrying; the exception's ``retry_after`` attribute (seconds,
                or ``None``) is the server's ``Retry-After``.
            before_sleep: called before each wait (counts retries).
            wait: replaces :meth:`wait_after` (e.g. no wait when another server can take the request).

        Returns:
            The retrying object; after the last try the last exception is raised.
        """
        return Retrying(**self._tenacity(retry_on, before_sleep, wait))

    def aretrying(self, retry_on: type[BaseException] | tuple[type[BaseException], ...], *,
                  before_sleep: Callable[[RetryCallState], Any] | None = None,
                  wait: Callable[[RetryCallState], float] | None = None) -> AsyncRetrying:
        """The ``tenacity.AsyncRetrying`` of :meth:`retrying` (same arguments), for ``async for attempt in ...``."""
        return AsyncRetrying(**self._tenacity(retry_on, before_sleep, wait))


#: Chat-completions servers (the ``openai`` backend): 7 tries (``max_retries=6``), 1 s .. 60 s backoff,
#: Retry-After honoured up to 300 s.
OPENAI_RETRY = RetryPolicy(attempts=7, base_wait=1.0, max_wait=60.0, max_retry_after=300.0)
#: Scholarly APIs (the polite HTTP client): 6 tries, 1 s .. 60 s backoff, Retry-After honoured up to 600 s (their
#: rate-limit windows are long).
HTTP_RETRY = RetryPolicy(attempts=6, base_wait=1.0, max_wait=60.0, max_retry_after=600.0)

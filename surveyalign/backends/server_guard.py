"""What keeps ``surveyalign serve`` safe to expose on a cluster: an API key, request limits, timeouts.

* **API key**: ``--api-key KEY`` or the environment variable ``SURVEYALIGN_API_KEY`` (as vLLM's ``--api-key`` /
  ``VLLM_API_KEY``). With a key set, ``/v1/*`` requests without ``Authorization: Bearer KEY`` get 401 (compared in
  constant time; the key is never echoed); ``/health`` stays open for load balancers. Binding an address other than
  loopback without a key prints a warning.
* **Limits**, checked in this order, each before the costlier step: the body size (``Content-Length`` first, then
  the bytes actually received; 413) before JSON parsing; JSON nesting depth (400, also for a body so deep that the
  parser itself gives up) before validation; the prompt's length in characters (400 ``context_length_exceeded``)
  before tokenising.
* **Timeouts**: a connection must send its complete request line and headers within ``header_timeout_s`` of its
  first byte (slow-header clients are disconnected; headers are also capped at 16 KB by h11); the body must keep
  arriving (no gap longer than ``body_timeout_s``: 408); an idle keep-alive connection is closed after
  ``keep_alive_s``.
"""

from __future__ import annotations

import asyncio
import hmac
import ipaddress
import os
from dataclasses import dataclass
from typing import Any

__all__ = ["API_KEY_ENV", "REFUSED_FIELDS", "ServerLimits", "http_protocol_class", "is_loopback", "json_depth", "read_body_limited",
           "read_json_object"]

#: Environment variable holding the server's API key (used when ``--api-key`` is not given).
API_KEY_ENV = "SURVEYALIGN_API_KEY"
#: Request fields accepted only at their default value (a non-default value is a 400), listed in ``serve --help``.
REFUSED_FIELDS = ("tools", "tool_choice", "functions", "frequency_penalty", "presence_penalty", "logit_bias",
                  "response_format (other than text)", "audio / image content parts")


@dataclass(frozen=True)
class ServerLimits:
    """Request limits of ``surveyalign serve``.

    Attributes:
        api_key: the key clients must send as ``Authorization: Bearer KEY``; ``None``: no authentication.
        max_body_bytes: largest request body in bytes (default 4 MiB); larger gets 413 before parsing.
        max_prompt_chars: largest total message text in characters (default 1,000,000, about 250k tokens);
            larger gets 400 before tokenising.
        max_json_depth: deepest JSON nesting accepted (default 32; a chat request needs 5).
        header_timeout_s: seconds a connection may take to send its request line and headers.
        body_timeout_s: longest gap, in seconds, between two parts of a request body.
        keep_alive_s: seconds an idle keep-alive connection stays open.
    """

    api_key: str | None = None
    max_body_bytes: int = 4 * 1024 * 1024
    max_prompt_chars: int = 1_000_000
    max_json_depth: int = 32
    header_timeout_s: float = 10.0
    body_timeout_s: float = 30.0
    keep_alive_s: float = 5.0

    def __post_init__(self) -> None:
        for name in ("max_body_bytes", "max_prompt_chars", "max_json_depth", "header_timeout_s", "body_timeout_s",
                     "keep_alive_s"):
            if getattr(self, name) <= 0:
                raise ValueError(f"server limit {name} must be positive, got {getattr(self, name)!r}")
        if self.api_key is not None and not self.api_key.strip():
            raise ValueError("the API key is empty")

    @classmethod
    def with_env_key(cls, api_key: str | None = None, **limits: Any) -> ServerLimits:
        """Limits whose key is ``api_key``, else ``$SURVEYALIGN_API_KEY`` when set and not empty, else none."""
        key = api_key if api_key is not None else (os.environ.get(API_KEY_ENV) or None)
        return cls(api_key=key, **limits)

    def authorized(self, authorization: str | None) -> bool:
        """True when no key is set or ``authorization`` is ``Bearer <the key>`` (constant-time comparison)."""
        if self.api_key is None:
            return True
        scheme, _, token = (authorization or "").strip().partition(" ")
        return scheme.lower() == "bearer" and hmac.compare_digest(token.strip().encode(), self.api_key.encode())


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback addresses (``127.0.0.0/8``, ``::1``); ``0.0.0.0`` and names are not."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def json_depth(value: Any, limit: int) -> int:
    """Nesting depth of a parsed JSON value (a scalar is 0), counted without recursion and stopping above ``limit``.

    Returns:
        The depth, or ``limit + 1`` as soon as the value is found to be deeper than ``limit``.
    """
    deepest, stack = 0, [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (dict, list)):
            depth += 1
            if depth > limit:
                return limit + 1
            deepest = max(deepest, depth)
            stack.extend((child, depth) for child in (item.values() if isinstance(item, dict) else item))
    return deepest


class BodyError(Exception):
    """The body broke a limit: ``status`` (413 too large, 408 too slow, 400 bad length) and a one-line message."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


async def read_body_limited(request: Any, limits: ServerLimits) -> bytes:
    """Read a Starlette request's body within ``max_body_bytes`` and ``body_timeout_s`` per part.

    Raises:
        BodyError: 413 when ``Content-Length`` or the bytes received exceed the cap (nothing more is read), 408
            when no part arrives within ``body_timeout_s``, 400 for a ``Content-Length`` that is not a number.
    """
    declared = request.headers.get("content-length")
    if declared is not None:
        try:
            size = int(declared)
        except ValueError:
            raise BodyError(400, f"Content-Length {declared[:40]!r} is not a number") from None
        if size > limits.max_body_bytes:
            raise BodyError(413, f"request body of {size:,} bytes exceeds the limit of {limits.max_body_bytes:,}")
    parts, total = [], 0
    stream = request.stream().__aiter__()
    while True:
        try:
            part = await asyncio.wait_for(stream.__anext__(), limits.body_timeout_s)
        except StopAsyncIteration:
            break
        except TimeoutError:
            raise BodyError(408, f"request body stalled for over {limits.body_timeout_s:g} s") from None
        total += len(part)
        if total > limits.max_body_bytes:
            raise BodyError(413, f"request body exceeds the limit of {limits.max_body_bytes:,} bytes")
        parts.append(part)
    return b"".join(parts)


async def read_json_object(request: Any, limits: ServerLimits, *, shape: str = "a JSON object") -> dict[str, Any]:
    """Read a request body within the limits (:func:`read_body_limited`) and parse it as one JSON object.

    Args:
        request: a Starlette request.
        limits: the server's limits (``max_body_bytes``, ``body_timeout_s``, ``max_json_depth``).
        shape: how the refusal of a body that is not an object names what is expected.

    Returns:
        The parsed object.

    Raises:
        BodyError: the body's own limits (413 / 408 / 400), or 400 for a body that is not JSON, is nested deeper than
            ``max_json_depth`` levels, or is not an object ("request body must be <shape>").
    """
    import json

    body = await read_body_limited(request, limits)
    too_deep = f"request body is nested deeper than {limits.max_json_depth} levels"
    try:
        payload = json.loads(body)
    except RecursionError:
        raise BodyError(400, too_deep) from None
    except ValueError:
        raise BodyError(400, "request body is not valid JSON") from None
    if not isinstance(payload, dict):
        raise BodyError(400, f"request body must be {shape}")
    if json_depth(payload, limits.max_json_depth) > limits.max_json_depth:
        raise BodyError(400, too_deep)
    return payload


def http_protocol_class(header_timeout_s: float) -> type:
    """uvicorn's h11 protocol with a header timeout: a connection that has sent part of a request but not its
    complete request line and headers within ``header_timeout_s`` (a slow-header client) is closed.

    Args:
        header_timeout_s: seconds, > 0.

    Returns:
        A subclass of ``uvicorn.protocols.http.h11_impl.H11Protocol`` to pass as ``uvicorn.Config(http=...)``.
    """
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class _HeaderTimeoutProtocol(H11Protocol):
        _header_timer: asyncio.TimerHandle | None = None

        def connection_made(self, transport: Any) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._arm()

        def _arm(self) -> None:
            if self._header_timer is None:
                self._header_timer = self.loop.call_later(header_timeout_s, self._expired)

        def _disarm(self) -> None:
            if self._header_timer is not None:
                self._header_timer.cancel()
                self._header_timer = None

        def _expired(self) -> None:
            self._header_timer = None
            if self.conn.their_state is h11.IDLE and self.transport is not None and not self.transport.is_closing():
                self.transport.close()  # headers still incomplete: a slow or stuck client

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            if self.conn.their_state is h11.IDLE:
                self._arm()
            else:
                self._disarm()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

    return _HeaderTimeoutProtocol

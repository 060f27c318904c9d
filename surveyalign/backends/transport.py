"""HTTP transports of the ``openai`` backend and the retry classification of its failures.

Two interchangeable async clients post one JSON body (encoded by the caller: bytes) and return ``(status, Retry-After header, text)``:
``aiohttp`` (the default when installed: about 0.5 ms CPU per call at 32 connections) and ``httpx``. Network
failures and the statuses in :data:`RETRY_STATUS` are :class:`RetryableError` (retried with backoff, honouring
``Retry-After``); other failures are :class:`FatalError`.
"""

from __future__ import annotations

import email.utils
import math
import time
from typing import Any

__all__ = ["RETRY_STATUS", "AiohttpTransport", "FatalError", "HttpxTransport", "RetryableError", "Transport",
           "default_transport", "parse_retry_after"]

#: HTTP status codes worth retrying: rate limit, request timeout, conflicts/locks and server errors.
RETRY_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 520, 521, 522, 523, 524, 529})


class RetryableError(Exception):
    """A transient failure; ``retry_after`` (seconds) is set when the server asked for a delay."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class FatalError(Exception):
    """A failure that retrying cannot fix (4xx other than the retryable ones, malformed reply)."""


def parse_retry_after(value: str | None, *, now: float | None = None) -> float | None:
    """Parse an HTTP ``Retry-After`` header (RFC 9110 §10.2.3).

    Args:
        value: the header value: delay seconds (``"3"``, ``"0.5"``) or an HTTP date; ``None`` when absent.
        now: current Unix time for the date form (defaults to ``time.time()``).

    Returns:
        The delay in seconds (>= 0), or ``None`` when absent or unparseable.

    Raises:
        Nothing: an unparseable value gives ``None``.
    """
    if value is None:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        if when is None:
            return None
        seconds = when.timestamp() - (time.time() if now is None else now)
    if math.isnan(seconds):
        return None
    return max(0.0, seconds)


class Transport:
    """Async HTTP client of the openai backend: POST JSON and return ``(status, retry_after_header, text)``; transient network failures raise
    :class:`RetryableError`."""

    async def post(self, url: str, body: bytes) -> tuple[int, str | None, str]:
        """POST ``body`` (JSON, already encoded; the session's headers say ``application/json``)."""
        raise NotImplementedError

    async def aclose(self) -> None:
        raise NotImplementedError


class AiohttpTransport(Transport):
    # aiohttp costs ~0.5 ms CPU per call at 32 connections; httpx's pool ~4 ms (its request-to-connection
    # assignment scans every queued request against every connection), which caps throughput below 160/s.
    def __init__(self, headers: dict[str, str], concurrency: int, timeout: float) -> None:
        import aiohttp

        self._aiohttp = aiohttp
        self.timeout = timeout
        self.session = aiohttp.ClientSession(
            headers=headers,
            connector=aiohttp.TCPConnector(limit=concurrency, limit_per_host=concurrency),
            timeout=aiohttp.ClientTimeout(total=timeout),
            # HTTP(S)_PROXY / NO_PROXY are honoured (like httpx), but looked up once per server below: with
            # trust_env=True aiohttp sends every request through two thread hops (proxy and .netrc look-ups),
            # a third of the client's CPU per call
            trust_env=False,
        )
        self._proxies: dict[str, tuple[Any, Any]] = {}

    def _proxy(self, url: str) -> tuple[Any, Any]:
        """``(proxy URL, proxy auth)`` from the environment for ``url``'s scheme and host (cached per server)."""
        origin = url.split("/", 3)
        origin = "/".join(origin[:3])
        found = self._proxies.get(origin)
        if found is None:
            from aiohttp.helpers import get_env_proxy_for_url
            from yarl import URL

            try:
                found = get_env_proxy_for_url(URL(url))
            except LookupError:
                found = (None, None)
            self._proxies[origin] = found
        return found

    async def post(self, url: str, body: bytes) -> tuple[int, str | None, str]:
        proxy, proxy_auth = self._proxy(url)
        try:
            async with self.session.post(url, data=body, proxy=proxy, proxy_auth=proxy_auth) as response:
                return response.status, response.headers.get("Retry-After"), await response.text()
        except TimeoutError as exc:
            raise RetryableError(f"timeout after {self.timeout:g} s") from exc
        except self._aiohttp.ClientError as exc:
            raise RetryableError(f"connection error: {type(exc).__name__}: {exc}") from exc

    async def aclose(self) -> None:
        await self.session.close()


class HttpxTransport(Transport):
    def __init__(self, headers: dict[str, str], concurrency: int, timeout: float) -> None:
        import httpx

        self._httpx = httpx
        self.timeout = timeout
        self.client = httpx.AsyncClient(
            timeout=httpx.Timeout(timeout),
            limits=httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency),
            headers=headers,
        )

    async def post(self, url: str, body: bytes) -> tuple[int, str | None, str]:
        httpx = self._httpx
        try:
            response = await self.client.post(url, content=body)
        except httpx.TimeoutException as exc:
            raise RetryableError(f"timeout after {self.timeout:g} s") from exc
        except httpx.TransportError as exc:
            raise RetryableError(f"connection error: {type(exc).__name__}: {exc}") from exc
        return response.status_code, response.headers.get("retry-after"), response.text

    async def aclose(self) -> None:
        await self.client.aclose()


def default_transport() -> str:
    try:
        import aiohttp  # noqa: F401
    except ImportError:
        return "httpx"
    return "aiohttp"

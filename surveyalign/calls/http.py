"""Polite HTTP for scholarly APIs: on-disk cache, rate limit, retries with jitter that honour Retry-After.

:class:`PoliteClient` wraps ``httpx`` with three layers, outermost first:

1. ``hishel``'s cache transport (SQLite file under ``cache_dir``): a successful GET is stored and served
   again without touching the network, whatever caching headers the server sends (the scholarly records we
   read change rarely; delete the file or pass ``cache_ttl`` to refresh). Secrets sent as query parameters
   are left out of the cache key.
2. a rate limit: at most ``requests_per_second`` requests *reach the network* (cache hits are free).
3. ``httpx``'s HTTP transport.

Retries cover the statuses of ``surveyalign.backends.transport.RETRY_STATUS`` (429, 5xx...) and transport
errors such as timeouts, with the one retry policy (:class:`~surveyalign.calls.RetryPolicy`, settings
:data:`~surveyalign.calls.HTTP_RETRY`): the wait is the server's ``Retry-After`` (seconds or an HTTP date) when it
sends one, otherwise an exponential backoff with jitter. A 404 raises :class:`NotFoundError` at once; other 4xx
raise :class:`HTTPStatusError` at once.
A connection that cannot be established at all (refused, unknown host) is tried once more after
:data:`UNREACHABLE_RETRY_S` and then raises :class:`UnreachableError`: a wrong API URL or no network fails in
about a second, and callers that loop over many records stop at the first one instead of repeating it.
API keys are read from environment variables named by the caller, never taken as arguments, and never
written to the cache key or to :meth:`PoliteClient.describe`.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Self
from urllib.parse import urlencode

import hishel
import httpx
from hishel.httpx import CacheTransport
from tenacity import RetryCallState

from surveyalign.backends.retry import HTTP_RETRY, RetryPolicy
from surveyalign.backends.transport import RETRY_STATUS, parse_retry_after
from surveyalign.redact import redact_secrets, register_secret_env

__all__ = [
    "UNREACHABLE_RETRY_S",
    "HTTPStatusError",
    "HttpStats",
    "NotFoundError",
    "PoliteClient",
    "UnreachableError",
]

UNREACHABLE_RETRY_S = 0.5
"""Seconds waited before the single retry of a connection that could not be established."""


class HTTPStatusError(RuntimeError):
    """A request failed for good: a non-retried 4xx, or a retried status / transport error after the last try.

    Attributes:
        status: the HTTP status (``None`` for a transport error such as a refused connection).
        url: the URL requested (without secret query parameters).
        attempts: how many times it was tried.
    """

    def __init__(self, message: str, *, status: int | None, url: str, attempts: int = 1) -> None:
        super().__init__(redact_secrets(message))  # a server may echo the key header in its error body
        self.status = status
        self.url = url
        self.attempts = attempts


class UnreachableError(RuntimeError):
    """The API cannot be reached at all: the connection was refused or the host name did not resolve.

    Not an :class:`HTTPStatusError` on purpose: code that records one failed request and goes on with the
    next record lets this one through, because every later request would fail the same way.

    Attributes:
        url: the URL requested (without secret query parameters).
        base_url: the API root that cannot be reached.
        attempts: how many times it was tried (at most 2).
    """

    def __init__(self, message: str, *, url: str, base_url: str, attempts: int) -> None:
        super().__init__(message)
        self.url = url
        self.base_url = base_url
        self.attempts = attempts


class NotFoundError(HTTPStatusError):
    """The server answered 404: the id does not exist there (a dangling id). Never retried."""


class _Retryable(Exception):
    """Internal signal: this attempt failed in a way worth retrying."""

    def __init__(self, status: int | None, retry_after: float | None, detail: str) -> None:
        super().__init__(detail)
        self.status = status
        self.retry_after = retry_after
        self.detail = detail


@dataclass
class HttpStats:
    """Counters of one client (all >= 0).

    Attributes:
        requests: calls made through the client (cache hits included).
        network: requests that reached the network (each retry counts).
        cache_hits: requests answered from the on-disk cache.
        retries: attempts repeated after a 429 / 5xx / transport error.
        failures: calls that raised (after their last attempt, or at once for a 4xx).
        waited_s: seconds slept by the rate limit and the backoff together.
    """

    requests: int = 0
    network: int = 0
    cache_hits: int = 0
    retries: int = 0
    failures: int = 0
    waited_s: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        """Return the counters as a dict."""
        return asdict(self)


class _RateLimitedTransport(httpx.BaseTransport):
    """The network transport behind the cache: spaces requests ``1 / rate`` seconds apart (thread-safe)."""

    def __init__(self, inner: httpx.BaseTransport, rate: float, stats: HttpStats) -> None:
        self.inner = inner
        self.interval = 1.0 / rate if rate > 0 else 0.0
        self.stats = stats
        self._lock = threading.Lock()
        self._next = 0.0

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        with self._lock:
            now = time.monotonic()
            wait = max(0.0, self._next - now)
            self._next = max(now, self._next) + self.interval
            self.stats.network += 1
        if wait:
            self.stats.waited_s += wait
            time.sleep(wait)
        return self.inner.handle_request(request)

    def close(self) -> None:
        self.inner.close()


class PoliteClient:
    """A cached, rate-limited, retrying JSON client for one API (SurveyReview §5.2 reference expansion).

    Args:
        base_url: the API root, e.g. ``"https://api.openalex.org"``; tests pass ``"http://127.0.0.1:PORT"``.
        cache_dir: folder of the SQLite cache file (``http_cache.db``); ``None`` disables caching.
        requests_per_second: network request rate, > 0 (cache hits do not count); ``0`` means unlimited.
        max_attempts: tries per request for retried statuses / transport errors, >= 1 (default 6).
        backoff_initial: scale of the exponential backoff in seconds (default 1; failed try k waits
            ``d / 2 + uniform(0, d / 2)`` with ``d = min(backoff_max, backoff_initial * 2**(k-1))``) when the server
            sends no Retry-After.
        backoff_max: cap of one backoff wait in seconds (default 60).
        max_retry_after: cap in seconds on a server's Retry-After (default 600; a longer one is waited this long).
        retry: the whole retry policy (a :class:`~surveyalign.calls.RetryPolicy` or its fields) over
            :data:`~surveyalign.calls.HTTP_RETRY`; the four options above override it.
        timeout: per-request timeout in seconds.
        headers: extra headers sent with every request (e.g. a ``User-Agent`` with a contact address).
        key_headers: header name -> name of the environment variable holding its secret value (e.g.
            ``{"x-api-key": "S2_API_KEY"}``); unset variables send nothing.
        key_params: query parameter -> environment variable (e.g. ``{"api_key": "OPENALEX_API_KEY"}``).
        cache_ttl: seconds a cached answer stays valid; ``None`` keeps it until the file is removed.
        transport: an ``httpx`` transport to use instead of the network one (tests, proxies).

    Raises:
        ValueError: a negative rate, ``max_attempts < 1``, a negative wait.
    """

    def __init__(
        self,
        base_url: str,
        *,
        cache_dir: str | os.PathLike | None = None,
        requests_per_second: float = 1.0,
        max_attempts: int | None = None,
        backoff_initial: float | None = None,
        backoff_max: float | None = None,
        max_retry_after: float | None = None,
        retry: RetryPolicy | dict[str, Any] | None = None,
        timeout: float = 30.0,
        headers: dict[str, str] | None = None,
        key_headers: dict[str, str] | None = None,
        key_params: dict[str, str] | None = None,
        cache_ttl: float | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        if requests_per_second < 0:
            raise ValueError(f"requests_per_second must be >= 0, got {requests_per_second}")
        self.retry = RetryPolicy.of(HTTP_RETRY, policy=retry, max_attempts=max_attempts,
                                    backoff_initial=backoff_initial, backoff_max=backoff_max,
                                    max_retry_after=max_retry_after)
        self.base_url = base_url.rstrip("/")
        self.stats = HttpStats()
        self.cache_dir = Path(cache_dir) if cache_dir is not None else None
        self._cache_ttl = cache_ttl
        secret_headers = {name: os.environ[env] for name, env in (key_headers or {}).items() if os.environ.get(env)}
        self._secret_params = {name: os.environ[env] for name, env in (key_params or {}).items()
                               if os.environ.get(env)}
        self._key_envs = sorted({*(key_headers or {}).values(), *(key_params or {}).values()})
        for name in self._key_envs:
            register_secret_env(name)
        network = _RateLimitedTransport(transport or httpx.HTTPTransport(), requests_per_second, self.stats)
        outer: httpx.BaseTransport = network
        if self.cache_dir is not None:
            self.cache_dir.mkdir(parents=True, exist_ok=True)
            storage = hishel.SqliteStorage(database_path=self.cache_dir / "http_cache.db")
            outer = CacheTransport(next_transport=network, storage=storage)
        self._client = httpx.Client(base_url=self.base_url, headers={**(headers or {}), **secret_headers},
                                    timeout=timeout, transport=outer, follow_redirects=True)

    def describe(self) -> dict[str, Any]:
        """What identifies this client in provenance records (base URL, cache folder, key variable *names*)."""
        return {"base_url": self.base_url, "cache_dir": str(self.cache_dir) if self.cache_dir else None,
                "key_env": self._key_envs, "keys_set": bool(self._secret_params) or None}

    def close(self) -> None:
        """Close connections and the cache file."""
        self._client.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def max_attempts(self) -> int:
        """Tries per request (the retry policy's ``attempts``)."""
        return self.retry.attempts

    def _count_retry(self, state: RetryCallState) -> None:
        # counted before the sleep, not in _wait: tenacity asks for the wait after the last attempt too
        self.stats.retries += 1
        self.stats.waited_s += state.next_action.sleep if state.next_action else 0.0

    def request(self, method: str, path: str, *, params: dict[str, Any] | None = None,
                json_body: Any = None, files: dict[str, Any] | None = None,
                data: dict[str, Any] | None = None) -> httpx.Response:
        """Send one request (with cache, rate limit and retries) and return the successful response.

        Args:
            method: ``"GET"`` or ``"POST"`` (only GET answers are cached).
            path: path relative to ``base_url`` (``"/works/W1"``) or an absolute URL.
            params: query parameters (``None`` values are left out).
            json_body: JSON body for POST.
            files: multipart files for POST (``{"input": ("paper.pdf", bytes, "application/pdf")}``).
            data: multipart / form fields sent with ``files``.

        Returns:
            The 2xx ``httpx.Response`` (its body already read).

        Raises:
            NotFoundError: 404.
            HTTPStatusError: another 4xx, or a retried status / transport error after ``max_attempts`` tries
                (the message names the URL, the status and the number of tries).
            UnreachableError: the connection could not be established (refused, unknown host) on two tries
                :data:`UNREACHABLE_RETRY_S` apart; the message names the URL.
        """
        self.stats.requests += 1
        query = {k: v for k, v in (params or {}).items() if v is not None}
        public_url = f"{self.base_url}{path}" + (f"?{urlencode(query)}" if query else "")
        key = hashlib.sha256(f"{method} {public_url}".encode()).hexdigest()
        caching: dict[str, Any] = {"key": key}
        if self._cache_ttl is not None:
            caching["ttl"] = self._cache_ttl

        def attempt() -> httpx.Response:
            try:
                response = self._client.request(method, path, params={**query, **self._secret_params},
                                                json=json_body, files=files, data=data,
                                                extensions={"caching": caching})
                response.read()
            except httpx.ConnectError:
                raise  # refused / unknown host: not worth the backoff (see _connect_or_fail)
            except httpx.TransportError as err:
                raise _Retryable(None, None, f"{type(err).__name__}: {err}") from err
            if response.status_code in RETRY_STATUS:
                raise _Retryable(response.status_code, parse_retry_after(response.headers.get("retry-after")),
                                 f"HTTP {response.status_code}")
            return response

        retrying = self.retry.retrying(_Retryable, before_sleep=self._count_retry)
        try:
            response = self._connect_or_fail(method, public_url, lambda: retrying(attempt))
        except _Retryable as err:
            self.stats.failures += 1
            raise HTTPStatusError(f"{method} {public_url} failed after {self.max_attempts} tries: {err.detail}",
                                  status=err.status, url=public_url, attempts=self.max_attempts) from None
        status = response.extensions.get("caching") or {}
        if status.get("from_cache"):
            self.stats.cache_hits += 1
        if response.status_code == 404:
            self.stats.failures += 1
            raise NotFoundError(f"{method} {public_url}: 404 not found", status=404, url=public_url)
        if response.status_code >= 400:
            self.stats.failures += 1
            raise HTTPStatusError(f"{method} {public_url}: HTTP {response.status_code}: {response.text[:200]}",
                                  status=response.status_code, url=public_url)
        return response

    def _connect_or_fail(self, method: str, public_url: str, send: Any) -> httpx.Response:
        """Run ``send``; a connection that cannot be established is tried once more, then UnreachableError."""
        tries = 2 if self.max_attempts > 1 else 1
        for n in range(1, tries + 1):
            try:
                return send()
            except httpx.ConnectError as err:
                if n < tries:
                    self.stats.retries += 1
                    self.stats.waited_s += UNREACHABLE_RETRY_S
                    time.sleep(UNREACHABLE_RETRY_S)
                    continue
                self.stats.failures += 1
                raise UnreachableError(f"cannot reach {self.base_url} ({method} {public_url}, {tries} tries: "
                                       f"ConnectError: {err}); check the API URL and the network",
                                       url=public_url, base_url=self.base_url, attempts=tries) from None
        raise RuntimeError("no try was made")  # max_attempts >= 1 is checked in __init__

    def get_json(self, path: str, params: dict[str, Any] | None = None) -> Any:
        """GET ``path`` and return the decoded JSON body.

        Args:
            path: path relative to ``base_url``.
            params: query parameters.

        Returns:
            The decoded JSON value.

        Raises:
            NotFoundError / HTTPStatusError: see :meth:`request`.
            ValueError: the body is not JSON (the message names the URL).
        """
        return self._decode(self.request("GET", path, params=params))

    def post_json(self, path: str, body: Any, params: dict[str, Any] | None = None) -> Any:
        """POST a JSON ``body`` to ``path`` and return the decoded JSON answer (POST answers are not cached).

        Args:
            path: path relative to ``base_url``.
            body: the JSON-serialisable request body.
            params: query parameters.

        Returns:
            The decoded JSON value.

        Raises:
            NotFoundError / HTTPStatusError: see :meth:`request`.
            ValueError: the body is not JSON.
        """
        return self._decode(self.request("POST", path, params=params, json_body=body))

    @staticmethod
    def _decode(response: httpx.Response) -> Any:
        try:
            return json.loads(response.content)
        except ValueError:
            raise ValueError(f"{response.request.url.copy_with(query=None)}: the answer is not JSON "
                             f"({response.text[:120]!r})") from None

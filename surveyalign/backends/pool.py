"""Several OpenAI-compatible servers behind one ``openai`` backend: least-outstanding-requests routing, dead
servers skipped, their calls retried on the others.

When one machine is not enough for "base + 4 adapters" judging (SurveyReview App. E: K samples per dimension),
several ``surveyalign serve`` or vLLM instances serving the same models can share the calls: each request goes to
the healthy server with the fewest requests in flight (ties: the one used longest ago); a server whose request
failed with a transient error (refused connection, timeout, 5xx, 429) is set aside for ``cooldown`` seconds and
the request is retried at once on another server, so a dead server costs no backoff while others answer.
"""

from __future__ import annotations

import itertools
import re
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ServerPool", "probe_models"]


@dataclass
class _Server:
    url: str
    outstanding: int = 0
    sent: int = 0
    failed: int = 0
    down_until: float = 0.0
    last_used: int = 0
    last_error: str | None = field(default=None)


class ServerPool:
    """Routes requests over ``urls`` by least outstanding requests (thread-safe; any event loop).

    Args:
        urls: API roots (``http://host:port/v1``), at least one, distinct.
        cooldown: seconds a server is skipped after a transient failure, >= 0.

    Raises:
        ValueError: no URL, duplicate URLs, or a negative cooldown.
    """

    def __init__(self, urls: Sequence[str], cooldown: float = 30.0) -> None:
        cleaned = [str(u).rstrip("/") for u in urls]
        if not cleaned:
            raise ValueError("openai backend: base_url needs at least one URL")
        if len(set(cleaned)) != len(cleaned):
            raise ValueError(f"openai backend: duplicate base URLs in {cleaned}")
        if cooldown < 0:
            raise ValueError(f"openai backend: server_cooldown must be >= 0 seconds, got {cooldown}")
        self.cooldown = float(cooldown)
        self._servers = {url: _Server(url) for url in cleaned}
        self._lock = threading.Lock()
        self._clock = itertools.count(1)

    @property
    def urls(self) -> list[str]:
        """The API roots, in the order given."""
        return list(self._servers)

    def acquire(self, exclude: Sequence[str] = ()) -> str:
        """Pick a server for one request and count it as outstanding (pair with :meth:`release`).

        Args:
            exclude: servers this request already failed on; avoided while any other server is left.

        Returns:
            The chosen API root: among healthy servers not in ``exclude`` the one with the fewest outstanding
            requests (ties: least recently used); when none is healthy, the one whose cooldown ends first.
        """
        now = time.monotonic()
        with self._lock:
            servers = list(self._servers.values())
            fresh = [s for s in servers if s.url not in exclude] or servers
            healthy = [s for s in fresh if s.down_until <= now]
            if healthy:
                chosen = min(healthy, key=lambda s: (s.outstanding, s.last_used))
            else:
                chosen = min(fresh, key=lambda s: (s.down_until, s.outstanding))
            chosen.outstanding += 1
            chosen.sent += 1
            chosen.last_used = next(self._clock)
            return chosen.url

    def release(self, url: str, error: str | None = None) -> None:
        """End one request on ``url``; a transient ``error`` sets the server aside for ``cooldown`` seconds.

        Args:
            url: the server :meth:`acquire` returned.
            error: ``None`` when the server answered (any HTTP status that is not transient), else the failure.
        """
        with self._lock:
            server = self._servers[url]
            server.outstanding = max(0, server.outstanding - 1)
            if error is not None:
                server.failed += 1
                server.last_error = error
                server.down_until = time.monotonic() + self.cooldown
            else:
                server.down_until = 0.0

    def has_alternative(self, exclude: Sequence[str]) -> bool:
        """True when a healthy server outside ``exclude`` exists (a retry there need not wait)."""
        now = time.monotonic()
        with self._lock:
            return any(s.url not in exclude and s.down_until <= now for s in self._servers.values())

    def stats(self) -> dict[str, dict[str, Any]]:
        """Per server: requests sent, failed, outstanding now, whether it is set aside, its last error."""
        now = time.monotonic()
        with self._lock:
            return {s.url: {"sent": s.sent, "failed": s.failed, "outstanding": s.outstanding,
                            "down": s.down_until > now, "last_error": s.last_error} for s in self._servers.values()}


def probe_models(urls: Sequence[str], model: str, headers: dict[str, str], timeout: float) -> dict[str, Any]:
    """One ``GET {url}/models`` per server until one answers: the pre-flight check and served fingerprint.

    Args:
        urls: API roots, tried in order.
        model: the model id whose ``surveyalign.fingerprint`` entry is read.
        headers: request headers (``Authorization`` when a key is set).
        timeout: seconds per request.

    Returns:
        ``{"url", "status", "error", "fingerprint", "max_model_len", "errors"}``: the first answering server's URL,
        HTTP status, fingerprint (64 hex characters or ``None``) and the model's listed ``max_model_len`` (vLLM,
        ``surveyalign serve``; ``None`` when not listed); ``error`` is set (and ``url`` is the last tried) only when no
        server answered; ``errors`` maps each server that did not answer to its error.
    """
    import httpx

    out: dict[str, Any] = {"url": None, "status": None, "error": None, "fingerprint": None, "max_model_len": None,
                           "errors": {}}
    for url in urls:
        out["url"] = url
        try:
            response = httpx.get(f"{url}/models", headers=headers, timeout=timeout, follow_redirects=False)
        except httpx.HTTPError as exc:  # refused, timed out, unknown host: nothing answers
            out["errors"][url] = out["error"] = f"{type(exc).__name__}: {exc}"
            continue
        out["status"], out["error"] = response.status_code, None
        try:
            entries = response.json().get("data") if response.status_code == 200 else None
        except Exception:  # noqa: BLE001 - an unreadable listing only means "no fingerprint"
            entries = None
        for entry in entries if isinstance(entries, list) else []:
            if isinstance(entry, dict) and entry.get("id") == model:
                extra = entry.get("surveyalign")
                value = extra.get("fingerprint") if isinstance(extra, dict) else None
                out["fingerprint"] = value if isinstance(value, str) and re.fullmatch(r"[0-9a-f]{64}", value) else None
                length = entry.get("max_model_len")
                out["max_model_len"] = length if isinstance(length, int) and not isinstance(length, bool) \
                    and length > 0 else None
        return out
    return out

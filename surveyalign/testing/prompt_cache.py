"""A provider prompt cache for the stand-in servers: a prefix seen within ``ttl_s`` seconds is a read.

Tokens are whitespace-separated words (the stand-ins' usage unit). :class:`StandInPromptCache` models both
documented kinds (:mod:`surveyalign.backends.prompt_cache`):

* :meth:`~StandInPromptCache.anthropic`: a Messages API request's ``system`` and ``messages`` as content blocks;
  the prefixes ending at a block marked ``cache_control`` are its breakpoints. The longest breakpoint prefix in the
  cache (seen within ``ttl_s``, at least ``min_tokens`` long) is read; the marked prefixes past it that reach
  ``min_tokens`` are written; the rest is ``input_tokens``. Every breakpoint the request holds is then fresh.
* :meth:`~StandInPromptCache.openai`: every prompt of ``min_tokens`` words or more is cached; a later prompt reads
  the longest of its prefixes of ``min_tokens + k * block`` words that was seen within ``ttl_s``.

Entries are visible from the moment a request arrives (a real provider makes them visible once the first answer
starts; with the executor's leader-first order the two agree).
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable
from typing import Any

__all__ = ["StandInPromptCache"]


def _blocks(content: Any) -> list[tuple[str, bool]]:
    """``[(text, marked)]`` of a message content (a string is one unmarked block)."""
    if isinstance(content, str):
        return [(content, False)]
    out = []
    for part in content or []:
        if isinstance(part, dict):
            out.append((str(part.get("text") or ""), bool(part.get("cache_control"))))
    return out


class StandInPromptCache:
    """A prompt cache keyed on word prefixes, with a lifetime.

    Args:
        ttl_s: seconds an entry lives after its last write or read (Anthropic and OpenAI: 300).
        min_tokens: shortest cacheable prefix in words (Anthropic 1,024-4,096 by model; OpenAI 1,024).
        block: OpenAI's read granularity in words past ``min_tokens`` (128).
        clock: the time source (default ``time.monotonic``; a test may pass its own).

    Attributes:
        reads, writes: words read from / written to the cache so far, over every request.
    """

    def __init__(self, *, ttl_s: float = 300.0, min_tokens: int = 1024, block: int = 128,
                 clock: Callable[[], float] | None = None) -> None:
        self.ttl_s = float(ttl_s)
        self.min_tokens = int(min_tokens)
        self.block = int(block)
        self.clock = clock or time.monotonic
        self.reads = 0
        self.writes = 0
        self._seen: dict[tuple[str, str], float] = {}
        self._lock = threading.Lock()

    def _fresh(self, key: tuple[str, str], now: float) -> bool:
        seen = self._seen.get(key)
        return seen is not None and now - seen <= self.ttl_s

    def anthropic(self, params: dict[str, Any]) -> dict[str, int]:
        """Usage of one Messages API request: ``{"input_tokens", "cache_read_input_tokens",
        "cache_creation_input_tokens"}`` (their sum is every prompt word)."""
        blocks: list[tuple[str, bool]] = _blocks(params.get("system")) if params.get("system") else []
        for message in params.get("messages") or []:
            blocks += _blocks(message.get("content"))
        digest = hashlib.sha256(str(params.get("model")).encode())
        total = 0
        marks: list[tuple[str, int]] = []  # (prefix hash, words) at each breakpoint
        for text, marked in blocks:
            words = text.split()
            digest.update((" ".join(words) + "\x00").encode())
            total += len(words)
            if marked:
                marks.append((digest.hexdigest(), total))
        now = self.clock()
        with self._lock:
            read = 0
            for key, n in marks:
                if n >= self.min_tokens and self._fresh(("a", key), now):
                    read = n
            written = 0
            for key, n in marks:
                if n >= self.min_tokens and n > read:
                    written = n - read
            for key, n in marks:
                if n >= self.min_tokens:
                    self._seen[("a", key)] = now
            self.reads += read
            self.writes += written
        return {"input_tokens": total - read - written, "cache_read_input_tokens": read,
                "cache_creation_input_tokens": written}

    def openai(self, messages: list[dict[str, Any]], model: str | None = None) -> int:
        """Cached tokens of one chat-completions prompt (``usage.prompt_tokens_details.cached_tokens``)."""
        words: list[str] = []
        for message in messages or []:
            words += [w for text, _ in _blocks(message.get("content")) for w in text.split()]
        now = self.clock()
        digest = hashlib.sha256(str(model).encode())
        keys: list[tuple[str, int]] = []
        at = 0
        cut = self.min_tokens
        while cut <= len(words) and self.min_tokens > 0:
            digest.update((" ".join(words[at:cut]) + " ").encode())
            at = cut
            keys.append((digest.hexdigest(), cut))
            cut += self.block
        with self._lock:
            read = 0
            for key, n in keys:
                if self._fresh(("o", key), now):
                    read = n
            for key, _ in keys:
                self._seen[("o", key)] = now
            self.reads += read
        return read

"""One chat-completions request on the wire, for :class:`~surveyalign.backends.openai_api.OpenAIBackend`.

``_ChatWire`` builds the request body (model, messages, sampling settings, ``seed + sample index``, logprobs,
``chat_template_kwargs``, extra body), encodes it (the messages JSON spliced in once per prompt), sends it to a
server of the pool with the retry policy's tries and waits, and reads the reply into :class:`Generation` rows
(normalised message, finish reason, mean token logprob, token usage shared out per choice by
:func:`usage_per_choice`; missing choices become failed rows). ``_LoopState`` is the per-event-loop HTTP session
and concurrency gate the backend keeps.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any

from surveyalign.backends.base import (
    Generation,
    GenerationSettings,
    Messages,
    mean_or_none,
)
from surveyalign.backends.request_bodies import chat_body
from surveyalign.backends.responses import normalise_message
from surveyalign.backends.transport import (
    RETRY_STATUS,
    FatalError,
    RetryableError,
    Transport,
    parse_retry_after,
)
from surveyalign.redact import redact_secrets


@dataclass
class _LoopState:
    transport: Transport
    semaphore: asyncio.Semaphore
    limit: int = 0  #: the concurrency this session was built for
    in_use: int = 0  #: requests of this session waiting or in flight


class _ChatWire:
    """Request building, sending with retries, and reply reading; mixed into ``OpenAIBackend``, whose
    ``model``, ``max_tokens_field``, ``request_logprobs``, ``send_chat_template_kwargs``, ``extra_body``, ``retry``,
    ``stats`` and ``_pool`` it reads."""

    #: The path under ``base_url`` a request is posted to.
    endpoint = "chat/completions"

    def batch_provider(self) -> str | None:
        """The provider batch API calls go through (``"openai"`` / ``"anthropic"``), ``None`` with ``batch`` off."""
        if self.batch == "auto":
            return "anthropic" if "anthropic.com" in self.base_url else "openai"
        return str(self.batch) if self.batch else None

    def prompt_cache(self) -> Any:
        """The provider prompt cache met (:mod:`surveyalign.backends.prompt_cache`): Anthropic's rules through Message
        Batches; ``None`` for direct calls to ``anthropic.com`` (its OpenAI-compatible endpoint does not cache);
        else OpenAI's automatic prefixes (vLLM and ``surveyalign serve`` cache prefixes alike, unpriced)."""
        from surveyalign.backends.prompt_cache import anthropic_rules, openai_rules

        if self.batch_provider() == "anthropic":
            return anthropic_rules(self.model, self.prompt_cache_min_tokens)
        if "anthropic.com" in self.base_url:
            return None
        return openai_rules(self.prompt_cache_min_tokens)

    def _body(self, messages: Messages, settings: GenerationSettings, sample_index: int, n: int = 1
              ) -> dict[str, Any]:
        body = chat_body(self.model, messages, settings, sample_index, n, self.max_tokens_field)
        if settings.want_logprobs if self.request_logprobs is None else self.request_logprobs:
            body["logprobs"] = True
        if self.send_chat_template_kwargs:
            body["chat_template_kwargs"] = {"enable_thinking": settings.enable_thinking}
        body.update(self.extra_body)
        return body

    @staticmethod
    def _encode(body: dict[str, Any], encoded_messages: str | None = None) -> bytes:
        """``body`` as JSON bytes; ``encoded_messages`` (``json.dumps(body["messages"])``) is spliced in as is, so
        the K samples of one prompt encode its messages once."""
        if encoded_messages is None:
            return json.dumps(body).encode()
        rest = json.dumps({k: v for k, v in body.items() if k != "messages"})
        return ('{"messages": ' + encoded_messages + (", " + rest[1:] if rest != "{}" else "}")).encode()

    async def _one(self, state: _LoopState, messages: Messages, settings: GenerationSettings,
                   sample_index: int, n: int = 1, encoded_messages: str | None = None) -> list[Generation]:
        body = self._body(messages, settings, sample_index, n)
        payload = self._encode(body, encoded_messages)
        tried: list[str] = []  # servers this request failed on: the next attempt goes elsewhere, without waiting
        # The policy's tries and waits (RetryPolicy.wait), in a plain loop: tenacity's per-request retrying object
        # cost about a quarter of the harness's CPU per call; the first try builds nothing.
        attempt = 0
        while True:
            attempt += 1
            try:
                return await self._post(state, body, payload, tried)
            except RetryableError as exc:
                if attempt >= self.retry.attempts:
                    self.stats["failed"] += n
                    return [Generation.failed(f"gave up after {self.retry.attempts} attempts: {exc}")] * n
                self.stats["retries"] += 1
                # another server can take the request at once: no wait
                wait = 0.0 if self._pool.has_alternative(tried) else self.retry.wait(attempt, exc.retry_after)
                await asyncio.sleep(wait)
            except FatalError as exc:
                self.stats["failed"] += n
                return [Generation.failed(str(exc))] * n

    async def _post(self, state: _LoopState, body: dict[str, Any], payload: bytes, tried: list[str]
                    ) -> list[Generation]:
        state.in_use += 1
        try:
            async with state.semaphore:
                self.stats["attempts"] += 1
                base = self._pool.acquire(tried)
                url = f"{base}/{self.endpoint}"
                try:
                    status, retry_after, text = await state.transport.post(url, payload)
                except RetryableError as exc:
                    self._pool.release(base, str(exc))
                    tried.append(base)
                    raise
                transient = status in RETRY_STATUS
                self._pool.release(base, f"HTTP {status}" if transient else None)
        finally:
            state.in_use -= 1
        if status != 200:
            detail = f"HTTP {status} from {url}: {redact_secrets(text[:2000])[:300]}"
            if transient:
                tried.append(base)
                raise RetryableError(detail, parse_retry_after(retry_after))
            raise FatalError(detail)
        return self._read(body, text, url)

    def _read(self, body: dict[str, Any], text: str, url: str) -> list[Generation]:
        """The generations of one 200 reply ``text`` to ``body`` (a failed row per choice asked and not answered).

        Raises:
            FatalError: a reply that cannot be read (the message quotes its start, secrets redacted).
        """
        try:
            reply = json.loads(text)
            choices = reply["choices"]
            served = reply.get("model") if isinstance(reply.get("model"), str) else None
            fingerprint = reply.get("system_fingerprint") if isinstance(reply.get("system_fingerprint"), str) else None
            messages = [normalise_message(choice.get("message")) for choice in choices]
            if not messages:
                raise IndexError("no choices")
        except (ValueError, KeyError, IndexError, TypeError, AttributeError) as exc:
            raise FatalError(f"malformed reply from {url}: {type(exc).__name__}: "
                             f"{redact_secrets(f'{exc}: {text[:2000]}')[:400]}") from exc
        usage = usage_per_choice(reply.get("usage"), len(choices))
        out = [Generation(text=m.text, finish_reason=c.get("finish_reason"), mean_logprob=_mean_logprob(c),
                          reasoning=m.reasoning, refusal=m.refusal, served_model=served,
                          system_fingerprint=fingerprint, **u)
               for c, m, u in zip(choices, messages, usage)]
        missing = body["n"] - len(out)
        if missing > 0:
            out += [Generation.failed(f"{url} returned {len(out)} of {body['n']} choices")] * missing
        return out


def usage_per_choice(usage: Any, n: int) -> list[dict[str, int | None]]:
    """Split a chat completion's ``usage`` over its ``n`` choices: the prompt (and its cached part) is billed once,
    so it goes to the first choice (0 on the others); completion tokens are shared out evenly (the remainder to the
    first choices).

    Args:
        usage: the reply's ``usage`` object (``prompt_tokens``, ``completion_tokens``,
            ``prompt_tokens_details.cached_tokens``), or ``None`` when the server sent none.
        n: choices in the reply (>= 1).

    Returns:
        ``n`` dicts with ``prompt_tokens``, ``completion_tokens``, ``cached_tokens`` (``None`` where unknown).
    """
    if not isinstance(usage, dict):
        return [{"prompt_tokens": None, "completion_tokens": None, "cached_tokens": None} for _ in range(n)]
    prompt, completion = usage.get("prompt_tokens"), usage.get("completion_tokens")
    cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens")
    out = []
    for i in range(n):
        share = None if completion is None else completion // n + (1 if i < completion % n else 0)
        out.append({"prompt_tokens": prompt if i == 0 else (None if prompt is None else 0),
                    "completion_tokens": share, "cached_tokens": cached if i == 0 else (None if cached is None else 0)})
    return out


def _mean_logprob(choice: dict[str, Any]) -> float | None:
    logprobs = choice.get("logprobs")
    if not isinstance(logprobs, dict):
        return None
    content = logprobs.get("content")
    if not isinstance(content, list):
        return None
    values = [float(item["logprob"]) for item in content if isinstance(item, dict) and item.get("logprob") is not None]
    return mean_or_none(values)

"""Judge backend for Anthropic's native Messages API (``POST {base_url}/messages``), with prompt caching.

Anthropic's OpenAI-compatible endpoint does not cache prompts, and the API has no ``n``: through it the K samples
of a unit send the same prompt K times at the full input price. This backend sends each sample as one Messages
API call whose parameters are built as the Message Batches requests are
(:func:`surveyalign.backends.request_bodies.messages_params`): system messages joined into ``system``, the last
user message marked ``cache_control: {type: ephemeral}`` (on the whole prompt, and on the shared survey block of
the ``shared`` layout), ``generation.omit`` honoured, ``thinking_budget`` sent as ``thinking: {type: enabled,
budget_tokens: N}``. A prefix written by one call is read by the next within Anthropic's 5-minute lifetime (the
executor sends a prefix group's first call before the others: :mod:`surveyalign.calls.executor`).

Usage's ``input_tokens`` + ``cache_read_input_tokens`` + ``cache_creation_input_tokens`` is recorded as
``prompt_tokens``, the last two as ``cached_tokens`` / ``cache_write_tokens`` (priced with ``cached_input`` /
``cache_write`` in ``configs/prices.yaml``). Transport, concurrency, server pool and the one retry policy
(:class:`~surveyalign.backends.retry.RetryPolicy`: 429, 529 "overloaded", 5xx, timeouts; ``Retry-After``
honoured) are the ``openai`` backend's.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import Any

from surveyalign.backends.base import Generation, GenerationSettings, Messages
from surveyalign.backends.openai_api import OpenAIBackend
from surveyalign.backends.prompt_cache import anthropic_rules
from surveyalign.backends.request_bodies import messages_params
from surveyalign.backends.retry import RetryPolicy
from surveyalign.backends.transport import FatalError
from surveyalign.redact import redact_secrets

__all__ = ["ANTHROPIC_VERSION", "AnthropicBackend", "read_message"]

#: The ``anthropic-version`` header every request carries.
ANTHROPIC_VERSION = "2023-06-01"
#: Anthropic's stop reasons as the chat-completions finish reasons the parser knows.
STOP_REASONS = {"end_turn": "stop", "stop_sequence": "stop", "max_tokens": "length", "refusal": "refusal"}


def read_message(reply: dict[str, Any]) -> Generation:
    """One Messages API reply as a :class:`Generation`.

    Args:
        reply: the JSON reply (``content`` blocks, ``stop_reason``, ``model``, ``usage``).

    Returns:
        The text blocks joined as ``text``, the thinking blocks as ``reasoning``, ``finish_reason`` mapped by
        :data:`STOP_REASONS`, ``prompt_tokens`` = ``input_tokens + cache_read_input_tokens +
        cache_creation_input_tokens``, ``cached_tokens`` = the read, ``cache_write_tokens`` = the creation,
        ``completion_tokens`` = ``output_tokens``.

    Raises:
        KeyError, TypeError, ValueError: a reply without ``content`` blocks or with malformed ``usage``.
    """
    blocks = reply["content"]
    if not isinstance(blocks, list):
        raise TypeError(f"content is {type(blocks).__name__}, not a list of blocks")
    texts = [str(b.get("text") or "") for b in blocks if b.get("type") == "text"]
    thinking = [str(b.get("thinking") or "") for b in blocks if b.get("type") == "thinking"]
    usage = reply.get("usage") or {}
    read = int(usage.get("cache_read_input_tokens") or 0)
    written = int(usage.get("cache_creation_input_tokens") or 0)
    fresh = usage.get("input_tokens")
    stop = reply.get("stop_reason")
    return Generation(
        text="".join(texts), finish_reason=STOP_REASONS.get(stop or "", stop), mean_logprob=None,
        reasoning="\n\n".join(t for t in thinking if t) or None,
        refusal="refused" if stop == "refusal" else None,
        served_model=reply.get("model") if isinstance(reply.get("model"), str) else None,
        prompt_tokens=None if fresh is None else int(fresh) + read + written,
        completion_tokens=None if usage.get("output_tokens") is None else int(usage["output_tokens"]),
        cached_tokens=None if fresh is None else read, cache_write_tokens=written or None)


class AnthropicBackend(OpenAIBackend):
    """Anthropic Messages API client (kind ``"anthropic"``): one ``POST {base_url}/messages`` per sample, the
    shared prefix marked for Anthropic's prompt cache.

    Args:
        model: the model id (``"claude-opus-4-5"``).
        base_url: the API root with its version, ``https://api.anthropic.com/v1`` (a list spreads the requests
            over several roots, as the ``openai`` backend does).
        api_key_env: the environment variable holding the key, sent as ``x-api-key`` (``None`` or empty: no key,
            for a local stand-in).
        cache_control: mark the last user message for the prompt cache (default); ``False`` sends plain text and
            :meth:`prompt_cache` is ``None`` (nothing is cached).
        batch: ``True`` / ``"auto"`` / ``"anthropic"``: the run's calls go through Message Batches instead
            (half price; the same request parameters); ``False`` (default): direct calls.
        concurrency, timeout, max_retries, backoff_initial, backoff_max, max_retry_after, retry, extra_body,
            transport, server_cooldown, max_model_len, batch_wait, batch_poll_s, prompt_cache_min_tokens: as
            :class:`~surveyalign.backends.openai_api.OpenAIBackend` takes them (``extra_body`` is merged into
            every call's parameters).

    Raises:
        ValueError: invalid option values (``batch: openai`` included: this is Anthropic's API).
    """

    name = "anthropic"
    score_judge = False  # serves no LoRA adapters of ours
    endpoint = "messages"

    def __init__(
        self,
        model: str,
        base_url: str | Sequence[str] = "https://api.anthropic.com/v1",
        api_key_env: str | None = "ANTHROPIC_API_KEY",
        concurrency: int = 16,
        timeout: float = 600.0,
        max_retries: int | None = None,
        backoff_initial: float | None = None,
        backoff_max: float | None = None,
        max_retry_after: float | None = None,
        retry: RetryPolicy | dict[str, Any] | None = None,
        extra_body: dict[str, Any] | None = None,
        transport: str = "auto",
        server_cooldown: float = 30.0,
        max_model_len: int | None = None,
        cache_control: bool = True,
        batch: bool | str = False,
        batch_wait: bool = True,
        batch_poll_s: float = 60.0,
        prompt_cache_min_tokens: int | None = None,
    ) -> None:
        if batch not in (True, False, "auto", "anthropic"):
            raise ValueError(f"anthropic backend: batch must be true, false, auto or anthropic, got {batch!r}")
        super().__init__(model, base_url=base_url, api_key_env=api_key_env, concurrency=concurrency,
                         timeout=timeout, max_retries=max_retries, backoff_initial=backoff_initial,
                         backoff_max=backoff_max, max_retry_after=max_retry_after, retry=retry,
                         send_chat_template_kwargs=False, extra_body=extra_body, request_logprobs=False,
                         transport=transport, n_per_request=False, server_cooldown=server_cooldown,
                         max_model_len=max_model_len, batch="anthropic" if batch else False, batch_wait=batch_wait,
                         batch_poll_s=batch_poll_s, prompt_cache_min_tokens=prompt_cache_min_tokens)
        self.cache_control = bool(cache_control)

    def describe(self) -> dict[str, Any]:
        """The ``openai`` backend's description (no key) with ``api: "messages"`` and ``cache_control``."""
        desc = super().describe()
        for name in ("max_tokens_field", "send_chat_template_kwargs", "request_logprobs", "n_per_request"):
            desc.pop(name, None)
        return {**desc, "api": "messages", "cache_control": self.cache_control}

    def batch_provider(self) -> str | None:
        """``"anthropic"`` with ``batch`` on, else ``None``."""
        return "anthropic" if self.batch else None

    def prompt_cache(self) -> Any:
        """Anthropic's rules for ``model`` (:func:`~surveyalign.backends.prompt_cache.anthropic_rules`; direct calls
        and Message Batches alike), ``None`` with ``cache_control: false``."""
        return anthropic_rules(self.model, self.prompt_cache_min_tokens) if self.cache_control else None

    def check_settings(self, settings: GenerationSettings) -> None:
        """Refuse what the Messages API cannot take.

        Raises:
            ValueError: ``enable_thinking=True`` (a chat-template switch; Anthropic's is ``thinking_budget``),
                ``generation.omit`` naming ``max_new_tokens`` (the API requires ``max_tokens``).
        """
        if settings.enable_thinking:
            raise ValueError("anthropic backend: enable_thinking is a chat-template switch the Messages API does not "
                             "take; set generation.thinking_budget (tokens) instead")
        if not settings.sent("max_new_tokens"):
            raise ValueError("anthropic backend: generation.omit cannot name max_new_tokens: the Messages API "
                             "requires max_tokens")

    def _auth_headers(self) -> dict[str, str]:
        key = os.environ.get(self.api_key_env) if self.api_key_env else None
        return {"anthropic-version": ANTHROPIC_VERSION, **({"x-api-key": key} if key else {})}

    def _body(self, messages: Messages, settings: GenerationSettings, sample_index: int, n: int = 1
              ) -> dict[str, Any]:
        body = messages_params(self.model, messages, settings, cache=self.cache_control)
        body.update(self.extra_body)
        return body

    @staticmethod
    def _encode(body: dict[str, Any], encoded_messages: str | None = None) -> bytes:
        return json.dumps(body).encode()  # the messages carry cache marks: never the chat-completions encoding

    def _read(self, body: dict[str, Any], text: str, url: str) -> list[Generation]:
        try:
            return [read_message(json.loads(text))]
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise FatalError(f"malformed reply from {url}: {type(exc).__name__}: "
                             f"{redact_secrets(f'{exc}: {text[:2000]}')[:400]}") from exc

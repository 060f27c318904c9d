"""The request bodies of the API paths, built in one place from :class:`GenerationSettings`.

:func:`chat_body`: an OpenAI-compatible ``/chat/completions`` body (direct calls and OpenAI Batch lines);
:func:`messages_params`: an Anthropic Messages API call (Message Batches). Both leave out every field named in
``settings.omit`` and carry ``settings.thinking_budget`` as ``thinking: {type: enabled, budget_tokens: N}``.
"""

from __future__ import annotations

from typing import Any

from surveyalign.backends.base import GenerationSettings, Messages
from surveyalign.backends.prompt_cache import anthropic_blocks, wire_messages

__all__ = ["chat_body", "messages_params"]


def chat_body(model: str, messages: Messages, settings: GenerationSettings, sample_index: int = 0, n: int = 1,
              max_tokens_field: str = "max_tokens") -> dict[str, Any]:
    """The sampling part of one chat-completions request body (direct calls and OpenAI Batch lines).

    Args:
        model: the model id.
        messages: the chat prompt.
        settings: the generation settings; a field named in ``settings.omit`` is left out of the body, and
            ``thinking_budget`` adds ``thinking: {type: enabled, budget_tokens: N}`` (Anthropic's
            OpenAI-compatible endpoint reads it).
        sample_index: k >= 0; ``seed`` is ``settings.seed + k``.
        n: choices asked for.
        max_tokens_field: the body field of the token cap (``max_tokens`` or ``max_completion_tokens``).

    Returns:
        ``{"model", "messages", "temperature", "top_p", max_tokens_field, "seed", "n"}`` less the omitted fields,
        plus ``thinking`` when a budget is set.
    """
    sampled = {"temperature": ("temperature", settings.temperature), "top_p": ("top_p", settings.top_p),
               "max_new_tokens": (max_tokens_field, settings.max_new_tokens),
               "seed": ("seed", settings.seed + sample_index)}
    body: dict[str, Any] = {"model": model, "messages": wire_messages(messages)}
    body.update(pair for name, pair in sampled.items() if settings.sent(name))
    body["n"] = n
    if settings.thinking_budget is not None:
        body["thinking"] = {"type": "enabled", "budget_tokens": settings.thinking_budget}
    return body


def messages_params(model: str, messages: Messages, settings: GenerationSettings, *, cache: bool = True
                    ) -> dict[str, Any]:
    """The parameters of one Anthropic Messages API call (a Message Batches request's ``params``).

    Args:
        model: the model id.
        messages: the chat prompt; system messages are joined into ``system``.
        cache: mark the last user message for Anthropic's prompt cache (``cache_control`` breakpoints on the whole
            prompt and on its declared shared prefix: :func:`surveyalign.backends.prompt_cache.anthropic_blocks`);
            False: plain string content.
        settings: ``max_new_tokens`` -> ``max_tokens``; ``temperature`` (capped at 1, Anthropic's range) unless
            omitted; ``top_p`` only when below 1 and not omitted; ``thinking_budget`` -> ``thinking: {type:
            enabled, budget_tokens: N}``. The API has no seed.

    Returns:
        ``{"model", "max_tokens", "messages", ["temperature"], ["system"], ["top_p"], ["thinking"]}``.

    Raises:
        ValueError: ``settings.omit`` names ``max_new_tokens`` (the API requires ``max_tokens``).
    """
    if not settings.sent("max_new_tokens"):
        raise ValueError("anthropic: generation.omit cannot name max_new_tokens: the Messages API requires max_tokens")
    system = "\n\n".join(str(m["content"]) for m in messages if m.get("role") == "system")
    params: dict[str, Any] = {
        "model": model, "max_tokens": settings.max_new_tokens,
        "messages": (anthropic_blocks(messages) if cache else
                     [{"role": m["role"], "content": m["content"]} for m in messages if m.get("role") != "system"]),
    }
    if settings.sent("temperature"):
        params["temperature"] = min(settings.temperature, 1.0)
    if system:
        params["system"] = system
    if settings.top_p < 1.0 and settings.sent("top_p"):
        params["top_p"] = settings.top_p
    if settings.thinking_budget is not None:
        params["thinking"] = {"type": "enabled", "budget_tokens": settings.thinking_budget}
    return params

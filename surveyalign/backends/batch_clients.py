"""``make_batch_api``: the batch client of a provider (OpenAI Batch or Anthropic Message Batches), named by the
``batch`` option of an API backend (``surveyalign/backends/batch_api.py``, ``surveyalign/backends/batch_anthropic.py``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from surveyalign.backends.base import GenerationSettings, Messages
from surveyalign.backends.batch_anthropic import AnthropicBatchAPI
from surveyalign.backends.batch_api import BatchAPI, OpenAIBatchAPI

__all__ = ["make_batch_api"]


def make_batch_api(provider: str, *, base_url: str, api_key: str | None, model: str,
                   body: Callable[[Messages, GenerationSettings, int], dict[str, Any]] | None = None,
                   max_tokens_field: str = "max_completion_tokens", timeout: float = 120.0) -> BatchAPI:
    """The batch client of ``provider``.

    Args:
        provider: ``"openai"``, ``"anthropic"``, or ``"auto"`` (anthropic when ``base_url`` is on
            ``anthropic.com``, else openai).
        base_url, api_key, model, body, max_tokens_field, timeout: as the clients take them.

    Returns:
        An :class:`OpenAIBatchAPI` or :class:`AnthropicBatchAPI`.

    Raises:
        ValueError: an unknown provider.
        ImportError: ``anthropic`` is not installed (``pip install anthropic``).
    """
    if provider == "auto":
        provider = "anthropic" if "anthropic.com" in base_url else "openai"
    if provider == "openai":
        return OpenAIBatchAPI(base_url=base_url, api_key=api_key, model=model, body=body,
                              max_tokens_field=max_tokens_field, timeout=timeout)
    if provider == "anthropic":
        return AnthropicBatchAPI(base_url=base_url, api_key=api_key, model=model, timeout=timeout)
    raise ValueError(f"batch provider must be openai, anthropic or auto, got {provider!r}")

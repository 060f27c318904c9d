"""What a provider's prompt cache does with a backend's prompts, and how a request marks what it may cache.

Two documented kinds of provider prompt cache (the rules as the providers publish them, read 2026-12-04):

* **marked** (Anthropic, Messages API and Message Batches; https://platform.claude.com/docs/en/build-with-claude/prompt-caching):
  only a prefix ending at a content block marked ``cache_control: {type: ephemeral}`` is cached (at most 4
  breakpoints a request); a prefix shorter than the model's minimum (4,096 tokens for Claude Opus 4.5 / 4.6 and
  Haiku 4.5, 1,024 for most others) is not cached; an entry lives 5 minutes, refreshed on every read. A write is
  billed at 1.25x the input price, a read at 0.1x; the Message Batches 50% discount applies on top. Anthropic's
  OpenAI-compatible endpoint does not cache (its compatibility page says prompt caching needs the native API).
* **automatic** (OpenAI, https://developers.openai.com/api/docs/guides/prompt-caching): every prompt of 1,024
  tokens or more is cached with no marking and no write fee; a later prompt with the same leading tokens reads
  them in blocks of 128 tokens (1,024, 1,152, ...); entries live 5-10 minutes of inactivity (at most an hour). A
  read is billed at the model's "cached input" price (``configs/prices.yaml``).

:class:`PromptCacheRules` holds these numbers; a backend says which rules apply to it with its
``prompt_cache()`` method (``None``: no provider cache it can rely on). :func:`prefix_chars` reads the shared
prefix a prompt declares (:data:`~surveyalign.constants.CACHE_PREFIX_KEY`), :func:`wire_messages` drops that
key before a request is sent, and :func:`anthropic_blocks` marks the breakpoints of an Anthropic request.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from surveyalign.constants import CACHE_PREFIX_KEY

__all__ = ["ANTHROPIC_MIN_TOKENS", "PromptCacheRules", "anthropic_blocks", "anthropic_rules", "openai_rules",
           "prefix_chars", "wire_messages"]

#: Anthropic's minimum cacheable prefix (tokens) of the models that need more than the usual 1,024.
ANTHROPIC_MIN_TOKENS: dict[str, int] = {"claude-opus-4-5": 4096, "claude-opus-4-6": 4096, "claude-haiku-4-5": 4096}


@dataclass(frozen=True)
class PromptCacheRules:
    """How a provider's prompt cache serves a backend's prompts.

    Attributes:
        provider: ``"anthropic"`` or ``"openai"``.
        marked: True when only prefixes ending at a marked breakpoint are cached (Anthropic); False when every
            prompt's prefix is (OpenAI).
        min_tokens: shortest cacheable prefix, tokens (>= 0).
        block_tokens: a read covers a multiple of this many tokens past ``min_tokens`` (OpenAI 128; 1: the whole
            marked prefix).
        ttl_s: seconds an entry lives without being read.
        write_fee: True when writing an entry is billed (Anthropic: ``cache_write`` price).
    """

    provider: str
    marked: bool
    min_tokens: int
    block_tokens: int
    ttl_s: float
    write_fee: bool

    def readable(self, tokens: int) -> int:
        """Tokens of a ``tokens``-long shared prefix a read can cover: 0 below ``min_tokens``, else rounded down to
        ``min_tokens + k * block_tokens``.

        Args:
            tokens: length of the prefix shared with an earlier prompt (>= 0).

        Returns:
            The cached tokens of such a read (0 <= result <= tokens).
        """
        if tokens < max(self.min_tokens, 1):
            return 0
        if self.block_tokens <= 1:
            return tokens
        return self.min_tokens + (tokens - self.min_tokens) // self.block_tokens * self.block_tokens

    def describe(self) -> dict[str, Any]:
        """The rules as a JSON-ready dict (``run_config.json``, ``--plan``)."""
        return {"provider": self.provider, "marked": self.marked, "min_tokens": self.min_tokens,
                "block_tokens": self.block_tokens, "ttl_s": self.ttl_s, "write_fee": self.write_fee}


def anthropic_rules(model: str, min_tokens: int | None = None) -> PromptCacheRules:
    """Anthropic's rules for ``model`` (its minimum from :data:`ANTHROPIC_MIN_TOKENS`, else 1,024; ``min_tokens``
    overrides it), 5-minute entries, billed writes."""
    name = model.rsplit("/", 1)[-1]
    found = next((v for k, v in ANTHROPIC_MIN_TOKENS.items() if name == k or name.startswith(k + "-")), 1024)
    return PromptCacheRules("anthropic", True, found if min_tokens is None else int(min_tokens), 1, 300.0, True)


def openai_rules(min_tokens: int | None = None) -> PromptCacheRules:
    """OpenAI's automatic prefix cache: 1,024 tokens and more (``min_tokens`` overrides it), 128-token blocks, entries
    kept at least 5 minutes, no write fee."""
    return PromptCacheRules("openai", False, 1024 if min_tokens is None else int(min_tokens), 128, 300.0, False)


def prefix_chars(messages: Sequence[dict[str, Any]]) -> int | None:
    """The shared-prefix length (characters of the last message's content) a prompt declares under
    :data:`~surveyalign.constants.CACHE_PREFIX_KEY`, or ``None`` when it declares none."""
    for message in reversed(list(messages)):
        value = message.get(CACHE_PREFIX_KEY)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
        return None
    return None


def wire_messages(messages: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """``messages`` as a request carries them: without :data:`~surveyalign.constants.CACHE_PREFIX_KEY` (the same
    list objects when no message has it)."""
    if not any(CACHE_PREFIX_KEY in m for m in messages):
        return list(messages)
    return [{k: v for k, v in m.items() if k != CACHE_PREFIX_KEY} for m in messages]


def anthropic_blocks(messages: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The non-system messages of an Anthropic request with cache breakpoints on the last user message.

    The last message's text becomes content blocks marked ``cache_control: {type: ephemeral}``: one block (the
    whole prompt: the K samples of a unit share it), or, when the message declares a shared prefix
    (:func:`prefix_chars`), two: the shared prefix (the survey block every dimension shares) and the rest. Other
    messages pass unchanged, without the prefix key.

    Args:
        messages: the chat prompt (system messages are left out: the caller puts them into ``system``).

    Returns:
        ``[{"role", "content"}, ...]``; the last one's content a list of text blocks when it was a string.
    """
    rest = [m for m in messages if m.get("role") != "system"]
    out = [{"role": m["role"], "content": m["content"]} for m in rest]
    if not out or not isinstance(out[-1]["content"], str) or not out[-1]["content"]:
        return out
    text = out[-1]["content"]
    cut = prefix_chars(rest[-1:])
    mark = {"type": "ephemeral"}
    if cut is not None and 0 < cut < len(text):
        out[-1]["content"] = [{"type": "text", "text": text[:cut], "cache_control": dict(mark)},
                              {"type": "text", "text": text[cut:], "cache_control": dict(mark)}]
    else:
        out[-1]["content"] = [{"type": "text", "text": text, "cache_control": dict(mark)}]
    return out

"""Calls that share a prompt prefix: grouped for a provider's prompt cache, and their cache reads and writes
predicted before the run (``--plan``).

A call's *prefix group* is the text its provider can serve from cache to the other calls of the group: the shared
survey block a ``shared``-layout prompt declares (:data:`~surveyalign.constants.CACHE_PREFIX_KEY`; the four
dimensions of a survey), else the whole prompt (the K samples of a unit). :func:`order_for_cache` puts the calls
of a group next to each other (first-seen order of groups, call order inside one), so a group's calls reach the
provider within its cache lifetime; the executor then sends a group's first call before the others
(:mod:`surveyalign.calls.executor`) and the batch path keeps a group in one batch.

:func:`predict_cache` walks the calls in that order and applies the backend's
:class:`~surveyalign.backends.prompt_cache.PromptCacheRules`: for each call, how many of its prompt tokens are a
cache read and how many a cache write, assuming every group is sent within the cache lifetime (the order makes it
so). Nothing here sends a request.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from surveyalign.backends.prompt_cache import prefix_chars

__all__ = ["CacheUse", "order_for_cache", "predict_cache", "prefix_group", "shared_text"]


def shared_text(messages: Sequence[dict[str, Any]]) -> str | None:
    """The shared prefix text a prompt declares (its last message's first ``CACHE_PREFIX_KEY`` characters), or
    ``None``."""
    cut = prefix_chars(messages)
    if cut is None or not messages:
        return None
    content = messages[-1].get("content")
    return content[:cut] if isinstance(content, str) else None


def prefix_group(call: Any) -> str:
    """The prefix group of ``call`` (anything with ``messages``, and ``messages_hash`` when it has one): ``"s:" +
    sha256`` of the declared shared prefix, else ``"m:" +`` the messages hash (the whole prompt; sha256 of the
    messages' JSON when the call carries no hash)."""
    text = shared_text(call.messages)
    if text is not None:
        return "s:" + hashlib.sha256(text.encode("utf-8")).hexdigest()
    digest = getattr(call, "messages_hash", None)
    if digest is None:
        digest = hashlib.sha256(json.dumps(list(call.messages), sort_keys=True).encode("utf-8")).hexdigest()
    return "m:" + str(digest)


def order_for_cache(calls: Sequence[Any]) -> list[Any]:
    """``calls`` with each prefix group's calls together: groups in first-seen order, calls in their order within
    a group (a stable sort on the group's first position).

    Args:
        calls: calls with ``messages`` and ``messages_hash``.

    Returns:
        A new list with the same calls.
    """
    first: dict[str, int] = {}
    keyed = []
    for i, call in enumerate(calls):
        group = prefix_group(call)
        first.setdefault(group, i)
        keyed.append((first[group], i, call))
    return [call for _, _, call in sorted(keyed, key=lambda t: (t[0], t[1]))]


@dataclass
class CacheUse:
    """Predicted prompt-cache use of one call.

    Attributes:
        read: prompt tokens served from the cache (billed at ``cached_input``).
        write: prompt tokens written to it (billed at ``cache_write`` where the provider bills writes).
    """

    read: int = 0
    write: int = 0


def predict_cache(calls: Sequence[Any], prompt_tokens: Callable[[Any], int], prefix_tokens: Callable[[Any], int],
                  rules_of: Callable[[Any], Any]) -> dict[str, CacheUse]:
    """Predicted cache reads and writes of ``calls`` sent in :func:`order_for_cache` order, each group within the
    cache lifetime.

    Rules (:class:`~surveyalign.backends.prompt_cache.PromptCacheRules`): a call whose exact prompt was sent before
    reads the prompt's readable part (``rules.readable``); else one whose declared shared prefix was sent before
    reads that prefix's readable part; the rest is fresh. With ``marked`` rules (Anthropic) a call writes the
    marked prefixes it does not read (the shared prefix, then the whole prompt) when they reach ``min_tokens``;
    automatic rules (OpenAI) write nothing billed.

    Args:
        calls: the calls (``messages``, ``messages_hash``, ``backend``), in any order.
        prompt_tokens: a call's prompt tokens (the whole prompt, whoever pays it).
        prefix_tokens: tokens of a call's declared shared prefix (0 when it declares none).
        rules_of: a call -> its backend's rules (``None``: no provider cache: no read, no write).

    Returns:
        ``{call.key: CacheUse}`` for every call.
    """
    seen: set[tuple[int, str]] = set()
    out: dict[str, CacheUse] = {}
    for call in order_for_cache(calls):
        rules = rules_of(call)
        use = CacheUse()
        out[call.key] = use
        if rules is None:
            continue
        scope = id(call.backend)
        total = prompt_tokens(call)
        whole = (scope, "m:" + str(call.messages_hash))
        shared = prefix_group(call)
        n_shared = prefix_tokens(call) if shared.startswith("s:") else 0
        if whole in seen:
            use.read = rules.readable(total)
        elif n_shared and (scope, shared) in seen:
            use.read = rules.readable(n_shared)
        if rules.marked and rules.write_fee:
            if n_shared and (scope, shared) not in seen and n_shared >= rules.min_tokens:
                use.write += n_shared
            if whole not in seen and total >= rules.min_tokens:
                use.write += total - use.read - use.write
        seen.add(whole)
        if n_shared:
            seen.add((scope, shared))
    return out

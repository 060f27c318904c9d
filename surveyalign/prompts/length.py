"""The length rule shared by SFT data, DPO pairs, the DPO recipe and evaluation (SurveyAlign §5.1, App. D).

When a rendered example (or prompt) is longer than its token budget, the end of the survey body is removed at a
token boundary until it fits; the instruction, the knowledge-augmentation block and the completion are never
cut. Tokens are counted on the text rendered with the model's chat template (:func:`count_chat_tokens`), the way
TRL renders training examples and the local backends render prompts.

A text is always cut at a character offset, never by decoding a prefix of its token ids: byte-level BPE tokens
end inside UTF-8 sequences (CJK, emoji, accented letters), and decoding such a prefix leaves U+FFFD in the
prompt. The cut is also moved back to a grapheme-cluster boundary, so an emoji sequence or a letter with its
combining marks is kept whole or dropped whole (:func:`truncate_to_tokens`).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import regex

__all__ = ["count_chat_tokens", "fit_survey_text", "truncate_to_tokens"]

#: Characters looked at on each side of a cut to find the grapheme-cluster boundary before it.
_GRAPHEME_WINDOW = 64


def count_chat_tokens(tokenizer: Any, messages: list[dict[str, Any]], *, enable_thinking: bool,
                      add_generation_prompt: bool = False) -> int:
    """Number of tokens of ``messages`` rendered with the tokenizer's chat template.

    Args:
        tokenizer: a ``PreTrainedTokenizerBase`` with a chat template.
        messages: chat messages (``[{"role": ..., "content": ...}, ...]``).
        enable_thinking: passed to the template (Qwen3's thinking switch).
        add_generation_prompt: append the assistant header (a prompt to be answered; False for a full
            prompt + completion example).

    Returns:
        The token count (special tokens of the template included, none added on top).
    """
    out = tokenizer.apply_chat_template(
        messages,
        tokenize=True,
        return_dict=True,
        add_generation_prompt=add_generation_prompt,
        enable_thinking=enable_thinking,
    )
    ids = out["input_ids"]
    return len(ids[0]) if ids and isinstance(ids[0], list) else len(ids)


def fit_survey_text(
    text: str,
    count_tokens: Callable[[str], int],
    max_length: int | None,
    tokenizer: Any,
) -> tuple[str, int, int]:
    """Cut the end of a survey body until the whole example renders to at most ``max_length`` tokens.

    Args:
        text: the survey body (markdown).
        count_tokens: maps a candidate survey body to the token count of the full rendered example
            (instruction + knowledge + survey, plus the completion for training examples).
        max_length: token budget; None disables fitting.
        tokenizer: tokenizer used to cut the body at token boundaries.

    Returns:
        (fitted text, rendered token count, survey tokens removed). The text is unchanged when it fits.

    Raises:
        ValueError: when the example does not fit even with an empty survey body (the instruction,
            knowledge block and completion alone exceed ``max_length``).
    """
    total = count_tokens(text)
    if max_length is None or total <= max_length:
        return text, total, 0
    ids, offsets = _token_spans(text, tokenizer)
    overhead = total - len(ids)
    keep = max_length - overhead
    while True:
        if keep <= 0:
            empty_total = count_tokens("")
            raise ValueError(
                f"the example needs {empty_total} tokens without any survey text, more than max_length="
                f"{max_length}; raise max_length (the completion is never cut)"
            )
        candidate = text[: _cut_point(text, tokenizer, ids, offsets, keep)]
        total = count_tokens(candidate)
        if total <= max_length:
            return candidate, total, len(ids) - len(_token_spans(candidate, tokenizer)[0])
        keep -= max(1, total - max_length)


def truncate_to_tokens(text: str, tokenizer: Any, limit: int) -> str:
    """The longest prefix of ``text`` of at most ``limit`` tokens that ends on a character (grapheme) boundary.

    Args:
        text: any text.
        tokenizer: a ``transformers`` tokenizer (fast tokenizers cut by their character offsets; others by the
            longest common prefix of the text and the decoded tokens).
        limit: most tokens kept (no special tokens counted), >= 0.

    Returns:
        ``text`` itself when it fits, else a prefix of it (a ``str`` slice: no U+FFFD, no split emoji sequence
        or combining mark) that tokenises to at most ``limit`` tokens.

    Raises:
        ValueError: ``limit`` < 0.
    """
    if limit < 0:
        raise ValueError(f"limit must be >= 0, got {limit}")
    ids, offsets = _token_spans(text, tokenizer)
    keep = limit
    while True:
        candidate = text[: _cut_point(text, tokenizer, ids, offsets, keep)]
        if keep <= 0 or len(_token_spans(candidate, tokenizer)[0]) <= limit:
            return candidate
        keep -= 1


def _token_spans(text: str, tokenizer: Any) -> tuple[list[int], list[tuple[int, int]] | None]:
    """Token ids of ``text`` (no special tokens) and their character spans (None without a fast tokenizer)."""
    try:
        enc = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    except (NotImplementedError, TypeError, ValueError):  # slow tokenizers have no offsets
        return list(tokenizer(text, add_special_tokens=False)["input_ids"]), None
    return list(enc["input_ids"]), [tuple(o) for o in enc["offset_mapping"]]


def _cut_point(text: str, tokenizer: Any, ids: list[int], offsets: list[tuple[int, int]] | None, keep: int) -> int:
    """Character offset that keeps at most the first ``keep`` tokens of ``text``, on a grapheme boundary."""
    if keep >= len(ids):
        return len(text)
    if keep <= 0:
        return 0
    if offsets is not None:
        cut = offsets[keep][0]  # where the first dropped token starts (a whole character, even mid-sequence)
    else:
        cut = len(os.path.commonprefix([tokenizer.decode(ids[:keep]), text]))
    # grapheme boundaries are read from a little before the cut: a scan starting inside a cluster misreads only
    # that first cluster; when no boundary is found in the window (a cluster longer than it), scan from the start
    for scan in dict.fromkeys((max(0, cut - _GRAPHEME_WINDOW), 0)):
        boundary = None
        for match in regex.finditer(r"\X", text, pos=scan, endpos=min(len(text), cut + _GRAPHEME_WINDOW)):
            if match.end() > cut:
                break
            boundary = match.end()
        if boundary is not None and (boundary > scan or scan == 0):
            return boundary
    return 0

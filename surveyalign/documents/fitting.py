"""The one token-fitting function: shorten the ends of texts until a rendered prompt fits a token budget.

A text is always cut at a character offset, never by decoding a prefix of its token ids: byte-level BPE tokens
end inside UTF-8 sequences (CJK, emoji, accented letters), and decoding such a prefix leaves U+FFFD in the
prompt. The cut is also moved back to a grapheme-cluster boundary, so an emoji sequence or a letter with its
combining marks is kept whole or dropped whole (:func:`truncate_to_tokens`).

:func:`fit_texts` is the rule every prompt builder calls (the SFT / DPO / evaluation length rule
:func:`surveyalign.prompts.fit_survey_text` with one text, the autoraters with one or two papers): the ends of
the texts are cut at token boundaries, the longest first down to the length of the next (water-filling), until
the whole rendered prompt is at most ``limit`` tokens; what is not one of the texts is never cut.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import regex

__all__ = ["FittedTexts", "fit_texts", "truncate_to_tokens"]

#: Characters looked at on each side of a cut to find the grapheme-cluster boundary before it.
_GRAPHEME_WINDOW = 64


@dataclass(frozen=True)
class FittedTexts:
    """What :func:`fit_texts` did.

    Attributes:
        texts: the (possibly shortened) texts, in the order given; ``None`` when they do not fit even empty.
        total: the rendered token count of ``texts`` (of the empty texts when they do not fit).
        cut_tokens: tokens removed from the end of each text, in text order (0 for an untouched text).
        reason: why nothing fits (``"... tokens without any text, N allowed"``), else ``None``.
    """

    texts: tuple[str, ...] | None
    total: int
    cut_tokens: tuple[int, ...]
    reason: str | None = None


def _cap(lengths: Sequence[int], available: int) -> int:
    """Largest cap c with sum(min(length, c)) <= available (water-filling)."""
    lo, hi = 0, max(lengths, default=0)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if sum(min(n, mid) for n in lengths) <= available:
            lo = mid
        else:
            hi = mid - 1
    return lo


def fit_texts(texts: Sequence[str], count: Callable[[Sequence[str]], int], tokenizer: Any,
              limit: int | None) -> FittedTexts:
    """Cut the ends of ``texts`` until ``count(texts)`` is at most ``limit`` tokens.

    The budget left for the texts is ``limit`` minus what the rest of the prompt costs (measured as the
    rendered count minus the texts' own tokens); it is shared by water-filling: every text is kept whole up to
    a common cap, so the longest is cut first, down to the next one, then all equally. Cuts fall on token and
    grapheme boundaries (:func:`truncate_to_tokens`); when the shortened prompt still renders a few tokens over
    (token merges across a cut), the budget is lowered by the excess and the texts cut again.

    Args:
        texts: the texts to shorten (one survey body, or the papers of an autorater prompt).
        count: texts -> token count of the whole rendered prompt holding them (chat template applied).
        tokenizer: a ``transformers`` tokenizer, used to cut at token boundaries.
        limit: token budget (> 0); ``None`` disables fitting.

    Returns:
        A :class:`FittedTexts`; ``texts`` is ``None`` with a ``reason`` when the prompt is over ``limit`` even
        with every text empty.
    """
    texts = list(texts)
    total = count(texts)
    if limit is None or total <= limit:
        return FittedTexts(tuple(texts), total, (0,) * len(texts))
    spans = [_token_spans(t, tokenizer) for t in texts]
    lengths = [len(ids) for ids, _ in spans]
    available = limit - (total - sum(lengths))
    while True:
        if available <= 0:  # the estimate leaves nothing: every text goes, if the rest fits at all
            empty = count([""] * len(texts))
            if empty <= limit:
                return FittedTexts(("",) * len(texts), empty, tuple(lengths))
            return FittedTexts(None, empty, (0,) * len(texts),
                               f"{empty} tokens without any text, {limit} allowed")
        cap = _cap(lengths, available)
        cut = [t if n <= cap else t[: _cut_point(t, tokenizer, ids, offsets, cap)]
               for t, n, (ids, offsets) in zip(texts, lengths, spans, strict=True)]
        total = count(cut)
        if total <= limit:
            removed = tuple(0 if c == t else n - len(_token_spans(c, tokenizer)[0])
                            for t, c, n in zip(texts, cut, lengths, strict=True))
            return FittedTexts(tuple(cut), total, removed)
        available -= max(1, total - limit)


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

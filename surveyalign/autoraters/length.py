"""The length rule for autorater prompts that hold one or two papers (PaperOrchestra App. F.3 inputs).

When a prompt rendered with the model's chat template, plus ``max_new_tokens``, is longer than ``max_length``, the
ends of the paper texts are cut with :func:`surveyalign.prompts.fit_survey_text` (the project's one length rule:
the end of the body goes, at a token boundary; the instructions and a reference list are never cut). With two
papers the cut is fair: the longer one is shortened first, down to the length of the other, then both equally
(water-filling), so a side-by-side comparison never sees one paper whole and the other cut to nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from surveyalign.judge import TOO_LONG_TEXT
from surveyalign.prompts import count_chat_tokens, fit_survey_text

__all__ = ["FittedPrompt", "fit_texts"]

Messages = list[dict[str, str]]


@dataclass(frozen=True)
class FittedPrompt:
    """A prompt after the length rule.

    Attributes:
        messages: the messages to send (``None`` when even empty texts do not fit).
        prompt_tokens: tokens of the rendered prompt (generation header included).
        cut_tokens: tokens removed from the end of each text, in text order.
        reason: why nothing can be sent, else ``None``.
    """

    messages: Messages | None
    prompt_tokens: int
    cut_tokens: tuple[int, ...]
    reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """``{"prompt_tokens", "cut_tokens", "reason"}``."""
        return {"prompt_tokens": self.prompt_tokens, "cut_tokens": list(self.cut_tokens), "reason": self.reason}


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


def fit_texts(build: Callable[[Sequence[str]], Messages], texts: Sequence[str], tokenizer: Any, max_length: int,
              max_new_tokens: int, *, enable_thinking: bool = False) -> FittedPrompt:
    """Shorten the ends of ``texts`` until ``build(texts)`` plus ``max_new_tokens`` fits ``max_length`` tokens.

    Args:
        build: texts -> chat messages (the autorater's prompt builder with its other inputs bound).
        texts: the paper texts the prompt holds (one or two).
        tokenizer: the judge model's tokenizer (with a chat template).
        max_length: token budget of prompt + answer, > ``max_new_tokens``.
        max_new_tokens: tokens kept free for the answer (the answer is never cut short by this rule).
        enable_thinking: passed to the chat template.

    Returns:
        A :class:`FittedPrompt`; ``messages`` is ``None`` with a ``reason`` when the prompt does not fit even with
        every text empty.
    """

    def count(candidate: Sequence[str]) -> int:
        return count_chat_tokens(tokenizer, build(candidate), enable_thinking=enable_thinking,
                                 add_generation_prompt=True)

    limit = max_length - max_new_tokens
    texts = list(texts)
    total = count(texts)
    if total <= limit:
        return FittedPrompt(build(texts), total, (0,) * len(texts))
    empty = count([""] * len(texts))
    if empty > limit:
        return FittedPrompt(None, empty, (0,) * len(texts),
                            f"{TOO_LONG_TEXT}: {empty} tokens without any paper text, "
                            f"{limit} allowed (max_length {max_length} - max_new_tokens {max_new_tokens})")
    lengths = [len(tokenizer(t, add_special_tokens=False)["input_ids"]) for t in texts]
    available = limit - empty
    cut = list(texts)
    for _ in range(8):  # token-boundary effects make the sum of parts differ from the whole by a few tokens
        cap = _cap(lengths, available)
        cut = [t if n <= cap else "" if cap <= 0 else
               fit_survey_text(t, lambda s: len(tokenizer(s, add_special_tokens=False)["input_ids"]), cap, tokenizer)[0]
               for t, n in zip(texts, lengths, strict=True)]
        total = count(cut)
        if total <= limit:
            break
        available -= total - limit
    else:
        return FittedPrompt(None, total, (0,) * len(texts), f"{TOO_LONG_TEXT}: could not fit it into {limit} tokens")
    kept = [len(tokenizer(t, add_special_tokens=False)["input_ids"]) for t in cut]
    return FittedPrompt(build(cut), total, tuple(max(0, n - k) for n, k in zip(lengths, kept, strict=True)))

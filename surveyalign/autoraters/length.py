"""The length rule for autorater prompts that hold one or two papers (PaperOrchestra App. F.3 inputs).

When a prompt rendered with the model's chat template, plus ``max_new_tokens``, is longer than ``max_length``, the
ends of the paper texts are cut with :func:`surveyalign.documents.fit_texts` (the project's one token fitter:
the end of each text goes, at a token boundary; the instructions and a reference list are never cut). With two
papers the cut is fair: the longer one is shortened first, down to the length of the other, then both equally
(water-filling), so a side-by-side comparison never sees one paper whole and the other cut to nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from surveyalign.documents import fit_texts
from surveyalign.judge import TOO_LONG_TEXT
from surveyalign.prompts import count_chat_tokens

__all__ = ["FittedPrompt", "fit_prompt"]

Messages = list[dict[str, str]]


@dataclass(frozen=True)
class FittedPrompt:
    """A prompt after the length rule.

    Attributes:
        messages: the messages to send (``None`` when even empty texts do not fit).
        prompt_tokens: tokens of the rendered prompt (generation header included).
        cut_tokens: tokens removed from the end of each text, in text order.
        reason: why nothing can be sent, else ``None``.
        limit: the budget that applied: ``"max_length"`` (``--max-length``) or ``"context"`` (the model's context,
            ``max_model_len``, when no ``--max-length`` was given).
        counted: ``"tokens"`` (a tokenizer counted them) or ``"characters"`` (no tokenizer: ``prompt_tokens`` is the
            characters / 4 estimate; nothing can be cut, a prompt over the context is refused).
    """

    messages: Messages | None
    prompt_tokens: int
    cut_tokens: tuple[int, ...]
    reason: str | None = None
    limit: str = "max_length"
    counted: str = "tokens"

    def to_dict(self) -> dict[str, Any]:
        """``{"prompt_tokens", "cut_tokens", "reason", "limit", "counted"}``."""
        return {"prompt_tokens": self.prompt_tokens, "cut_tokens": list(self.cut_tokens), "reason": self.reason,
                "limit": self.limit, "counted": self.counted}


def fit_prompt(build: Callable[[Sequence[str]], Messages], texts: Sequence[str], tokenizer: Any, max_length: int,
               max_new_tokens: int, *, enable_thinking: bool = False, limit: str = "max_length") -> FittedPrompt:
    """Shorten the ends of ``texts`` until ``build(texts)`` plus ``max_new_tokens`` fits ``max_length`` tokens.

    The cut is the one token fitter, :func:`surveyalign.documents.fit_texts` (water-filling over the texts).

    Args:
        build: texts -> chat messages (the autorater's prompt builder with its other inputs bound).
        texts: the paper texts the prompt holds (one or two).
        tokenizer: the judge model's tokenizer (with a chat template).
        max_length: token budget of prompt + answer, > ``max_new_tokens``.
        max_new_tokens: tokens kept free for the answer (the answer is never cut short by this rule).
        enable_thinking: passed to the chat template.
        limit: what ``max_length`` is (``"max_length"``, or ``"context"``: the model's context), recorded.

    Returns:
        A :class:`FittedPrompt`; ``messages`` is ``None`` with a ``reason`` when the prompt does not fit even with
        every text empty.
    """

    def count(candidate: Sequence[str]) -> int:
        return count_chat_tokens(tokenizer, build(candidate), enable_thinking=enable_thinking,
                                 add_generation_prompt=True)

    budget = max_length - max_new_tokens
    fitted = fit_texts(texts, count, tokenizer, budget)
    if fitted.texts is None:
        name = "max_length" if limit == "max_length" else "the model context"
        return FittedPrompt(None, fitted.total, fitted.cut_tokens,
                            f"{TOO_LONG_TEXT}: {fitted.total} tokens without any paper text, "
                            f"{budget} allowed ({name} {max_length} - max_new_tokens {max_new_tokens})", limit)
    return FittedPrompt(build(list(fitted.texts)), fitted.total, fitted.cut_tokens, limit=limit)

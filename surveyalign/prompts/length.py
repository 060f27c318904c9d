"""The length rule shared by SFT data, DPO pairs, the DPO recipe and evaluation (SurveyAlign §5.1, App. D).

When a rendered example (or prompt) is longer than its token budget, the end of the survey body is removed at a
token boundary until it fits; the instruction, the knowledge-augmentation block and the completion are never
cut. Tokens are counted on the text rendered with the model's chat template (:func:`count_chat_tokens`), the way
TRL renders training examples and the local backends render prompts.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["count_chat_tokens", "fit_survey_text"]


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
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    overhead = total - len(ids)
    keep = max_length - overhead
    while True:
        if keep <= 0:
            empty_total = count_tokens("")
            raise ValueError(
                f"the example needs {empty_total} tokens without any survey text, more than max_length="
                f"{max_length}; raise max_length (the completion is never cut)"
            )
        candidate = tokenizer.decode(ids[:keep])
        total = count_tokens(candidate)
        if total <= max_length:
            return candidate, total, len(ids) - keep
        keep -= max(1, total - max_length)

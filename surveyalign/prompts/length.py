"""The length rule shared by SFT data, DPO pairs, the DPO recipe and evaluation (SurveyAlign §5.1, App. D).

When a rendered example (or prompt) is longer than its token budget, the end of the survey body is removed at a
token boundary until it fits; the instruction, the knowledge-augmentation block and the completion are never
cut. Tokens are counted on the text rendered with the model's chat template (:func:`count_chat_tokens`), the way
TRL renders training examples and the local backends render prompts. The cutting itself is the one token fitter,
:func:`surveyalign.documents.fit_texts` (character-safe cuts at token and grapheme boundaries).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from surveyalign.documents import fit_texts

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
    fitted = fit_texts([text], lambda texts: count_tokens(texts[0]), tokenizer, max_length)
    if fitted.texts is None:
        raise ValueError(
            f"the example needs {fitted.total} tokens without any survey text, more than max_length="
            f"{max_length}; raise max_length (the completion is never cut)"
        )
    return fitted.texts[0], fitted.total, fitted.cut_tokens[0]

"""Offline stand-ins for LLM roles that ``make demo`` and ``surveyalign paper``'s tiny profile need: an RQS judge
(word overlap) and a Crit-KA summariser (the last words of each prompt). Neither is a model: every table that
uses them says so."""

from __future__ import annotations

from typing import Any

#: Name of the lexical RQS stand-in (word overlap, not an LLM) in tables and run records.
LEXICAL_RQS_NAME = "lexical stand-in"

_REF_HEAD = "Human reviewer's rationale (the reference):\n"
_PRED_HEAD = "\n\nMachine rationale (to be rated):\n"
_PRED_END = "\n\nRate the agreement"


def lexical_rqs_reply(messages: list[dict[str, str]], settings: Any = None, index: int = 0) -> str:
    """A lexical stand-in for the RQS consistency judge, for offline demos and tests (not an LLM).

    Reads the reference and predicted rationales out of the consistency prompt
    (``surveyalign.evaluation.rqs``), scores their word overlap with rapidfuzz's token-set ratio and
    answers it rounded to the nearest of {0.0, 0.2, ..., 1.0} as ``<consistency>X</consistency>``. The paper's
    RQS judge is an LLM (GPT-5.2, SurveyReview App. G): use an ``rqs`` block in an evaluation config for that.

    Args:
        messages: the consistency prompt as chat messages (one user message).

    Returns:
        The judge answer text; ``ValueError`` is raised when the prompt does not have the expected headings.
    """
    from rapidfuzz import fuzz

    content = messages[-1]["content"]
    try:
        reference = content.split(_REF_HEAD, 1)[1].split(_PRED_HEAD, 1)[0]
        prediction = content.split(_PRED_HEAD, 1)[1].split(_PRED_END, 1)[0]
    except IndexError:
        raise ValueError("consistency prompt without the expected rationale headings") from None
    ratio = fuzz.token_set_ratio(reference.lower(), prediction.lower()) / 100.0
    return f"Word overlap {ratio:.2f}. <consistency>{round(ratio * 5) / 5:.1f}</consistency>"


def extractive_summary_reply(messages: list[dict[str, str]], settings: Any = None, index: int = 0,
                             words: int = 48) -> str:
    """An extractive stand-in for the Crit-KA summariser (SurveyReview App. F.2), for the offline tiny profile.

    Args:
        messages: the summary or compression prompt as chat messages.
        settings, index: ignored (the scripted backend's reply signature).
        words: how many words of the prompt's last message are kept.

    Returns:
        The last ``words`` words of the last message's text, prefixed with ``"Extractive stand-in: "``: the
        block's own titles and years, so the Crit-KA text changes with the survey's references.
    """
    text = " ".join(str(messages[-1].get("content", "")).split())
    return "Extractive stand-in: " + " ".join(text.split()[-words:])

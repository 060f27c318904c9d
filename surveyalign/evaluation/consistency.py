"""Rationale-consistency prompt and parser for the Reason Quality Score (SurveyReview §3, App. G).

A judge model (the paper used GPT-5.2) sees the dimension, the paper title, the reference (human)
rationale and the predicted rationale, and answers one score from {0.0, 0.2, 0.4, 0.6, 0.8, 1.0}.
RQ_i is the mean over the units of dimension i and RQS the mean of RQ_i over dimensions (computed by
``surveyalign.scoring``). The prompt below is our own wording of that setup. A parsed 0.0 is a valid
score (the authors' script dropped it as a failure; we do not).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

__all__ = [
    "CONSISTENCY_LEVELS",
    "CONSISTENCY_TEMPLATE",
    "ConsistencyParse",
    "build_consistency_messages",
    "consistency_prompt_hash",
    "parse_consistency",
]

#: The six admissible consistency scores (App. G).
CONSISTENCY_LEVELS: tuple[float, ...] = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)

CONSISTENCY_TEMPLATE = """\
You are checking how well a machine-written review rationale agrees with the rationale a human expert \
reviewer gave for the same survey paper, on one review dimension.

Dimension: {dimension}
What this dimension covers: {definition}
Survey title: {title}

Human reviewer's rationale (the reference):
{reference}

Machine rationale (to be rated):
{prediction}

Rate the agreement in meaning between the two rationales: do they praise or criticise the same aspects \
of the survey, in the same direction and with similar weight? Wording, length and style do not matter; \
points the human made that the machine misses, and claims of the machine that contradict the human, \
lower the rating.

Use exactly one of these values:
1.0 - the same judgement and the same main points;
0.8 - the same judgement, most main points shared, minor gaps;
0.6 - broadly the same judgement, but several points missing or added;
0.4 - partly overlapping points, or the same points with a different overall direction;
0.2 - hardly any shared points;
0.0 - unrelated or opposite judgements.

Write one or two sentences explaining your rating, then end your answer with the rating inside tags, \
for example <consistency>0.6</consistency>."""

#: One-line descriptions of the dimensions for the consistency judge (SurveyReview §4).
_DEFINITIONS = {
    "readability": "how clear, well presented and easy to follow the writing is",
    "structure": "how well the sections are organised, ordered and connected",
    "comprehensiveness": "whether the references cover the key works, with no important omissions and "
    "no outdated or off-topic sources",
    "criticalness": "whether the survey goes beyond summary: critical perspective, insight, synthesis and "
    "original analysis",
}

_THINK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_OPEN_THINK = re.compile(r"<think>.*\Z", re.DOTALL | re.IGNORECASE)
_TAG = re.compile(r"<consistency>\s*([^<]*?)\s*</consistency>", re.IGNORECASE)


@dataclass(frozen=True)
class ConsistencyParse:
    """Result of :func:`parse_consistency`: ``score`` in :data:`CONSISTENCY_LEVELS` or ``None`` with ``error``."""

    score: float | None
    error: str | None = None


def build_consistency_messages(
    dimension: str, *, title: str, reference: str | list[str], prediction: str
) -> list[dict[str, str]]:
    """Chat messages asking the consistency judge to rate ``prediction`` against ``reference`` (App. G).

    Args:
        dimension: lower-case dimension name (one of ``surveyalign.constants.DIMENSIONS``).
        title: the survey's title ("" when unknown; shown as "(unknown)").
        reference: the human rationale, or its list of snippets (joined one per line).
        prediction: the judge's rationale for the same unit.

    Returns:
        ``[{"role": "user", "content": str}]``.

    Raises:
        KeyError: for an unknown dimension.
    """
    if isinstance(reference, (list, tuple)):
        reference = "\n".join(f"- {r.strip()}" for r in reference if str(r).strip())
    content = CONSISTENCY_TEMPLATE.format(
        dimension=dimension.capitalize(),
        definition=_DEFINITIONS[dimension],
        title=title.strip() or "(unknown)",
        reference=reference.strip() or "(empty)",
        prediction=prediction.strip() or "(empty)",
    )
    return [{"role": "user", "content": content}]


def consistency_prompt_hash() -> str:
    """sha256 hex of the consistency template and the dimension definitions (recorded in run_config.json)."""
    blob = CONSISTENCY_TEMPLATE + "\n" + "\n".join(f"{k}={v}" for k, v in sorted(_DEFINITIONS.items()))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def parse_consistency(text: str | None) -> ConsistencyParse:
    """Read the rating from a consistency judge's answer.

    The last ``<consistency>X</consistency>`` outside any ``<think>...</think>`` block counts. ``X`` must
    equal one of 0.0, 0.2, ..., 1.0 (written as "0", "0.0", ".2", "1", "1.00", ...). Anything else returns
    ``score=None`` with the reason; nothing is rounded or defaulted. 0.0 is a valid rating.

    Args:
        text: the judge's raw answer (``None`` counts as empty).

    Returns:
        :class:`ConsistencyParse`.
    """
    if not text or not text.strip():
        return ConsistencyParse(None, "empty answer")
    visible = _OPEN_THINK.sub("", _THINK.sub("", text))
    tags = _TAG.findall(visible)
    if not tags:
        return ConsistencyParse(None, "no <consistency>...</consistency> tag outside <think>")
    raw = tags[-1]
    try:
        value = float(raw)
    except ValueError:
        return ConsistencyParse(None, f"rating {raw!r} is not a number")
    for level in CONSISTENCY_LEVELS:
        if abs(value - level) < 1e-9:
            return ConsistencyParse(level, None)
    return ConsistencyParse(None, f"rating {raw!r} is not one of 0.0, 0.2, 0.4, 0.6, 0.8, 1.0")

"""Rationale synthesis after the vote (SurveyReview App. E): one rationale that agrees with the winning score.

After the K samples of a dimension are voted on, the rationales of the samples that voted for the winning score
are merged into one by one more generation, conditioned on the dimension's rubric and that score. The merged
answer is parsed like any judge answer and must carry the winning score; otherwise (no score, another score, a
failed call) the rationale of the best winning sample (highest mean log-probability) is kept and the reason is
recorded. With a single distinct winning rationale there is nothing to merge and no call is made.

The prompt is ours; it carries the rubric facts (definition, the criteria of the winning score, the scale
{-2, -1, 1, 2}) and the answer format of the protocol, so the merged answer reads like a judge answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from surveyalign.prompts import (
    DEFAULT_PROTOCOL,
    RUBRICS,
    format_target,
    get_protocol,
    parse_generation,
)
from surveyalign.prompts.templates import SCORE_LABELS

__all__ = ["SYNTHESIS_VERSION", "Synthesis", "build_synthesis_messages", "read_synthesis"]

#: Version of the synthesis prompt; part of its cache key (bump when the wording changes).
SYNTHESIS_VERSION = "surveyalign-synthesis-1"

_INSTRUCTION = (
    "You are the lead reviewer of a survey article. Several reviewers assessed its {label} and agreed on "
    "the score {score:+d} ({score_label}). Merge their notes below into one rationale of your own that keeps "
    "every distinct, substantiated point, drops repetitions, and justifies exactly this score. Do not "
    "change the score and do not add claims the notes do not make."
)
_RUBRIC = "## {label}\n{definition}\n\nA score of {score:+d} means: {criterion}"
_NOTES_HEADING = "## Reviewer notes"
_FORMAT_HEADING = "## Answer format"
_FORMAT_NOTE = "Write the merged rationale and the score {score} in this format:\n{format_text}\nExample: {example}"


@dataclass(frozen=True)
class Synthesis:
    """The final rationale of one dimension and how it was obtained.

    Attributes:
        rationale: the rationale reported with the winning score.
        source: ``"synthesized"`` (the merged answer carried the winning score), ``"single"`` (one distinct
            winning rationale: nothing to merge, no call), or ``"best_sample"`` (the merge failed; the best
            winning sample's rationale is used).
        error: why the merge was not used (``None`` unless ``source == "best_sample"``): the call error, the
            parse failure, or the other score the merged answer gave.
        text: the merged answer as generated (``""`` when no call was made).
        n_merged: number of rationales given to the merge (distinct, non-empty).
    """

    rationale: str
    source: str
    error: str | None = None
    text: str = ""
    n_merged: int = 0

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable fields."""
        return asdict(self)


def distinct_rationales(rationales: Sequence[str]) -> list[str]:
    """Non-empty rationales in order, each kept once (whitespace-normalised comparison)."""
    seen: set[str] = set()
    out = []
    for text in rationales:
        key = " ".join(str(text or "").split())
        if key and key not in seen:
            seen.add(key)
            out.append(str(text).strip())
    return out


def build_synthesis_messages(dimension: str, score: int, rationales: Sequence[str], *,
                             protocol: str = DEFAULT_PROTOCOL) -> list[dict[str, str]]:
    """The chat prompt that merges the winning rationales (SurveyReview App. E).

    Args:
        dimension: one of the four dimensions (lower case).
        score: the winning score, in {-2, -1, 1, 2}.
        rationales: the rationales of the samples that voted for ``score`` (empty ones are dropped, duplicates
            kept once).
        protocol: the judge protocol whose answer format the merged answer uses (``"v1.0"``, ``"v1.1"``).

    Returns:
        One user message (``[{"role": "user", "content": ...}]``).

    Raises:
        KeyError: unknown dimension; ValueError: a score outside {-2, -1, 1, 2} or an unknown protocol.
    """
    rubric = RUBRICS[dimension]
    proto = get_protocol(protocol)
    example = format_target("<merged rationale>", score, protocol=proto.name)
    notes = "\n".join(f"{i}. {' '.join(text.split())}" for i, text in enumerate(distinct_rationales(rationales), 1))
    content = "\n\n".join([
        _INSTRUCTION.format(label=rubric.label, score=score, score_label=SCORE_LABELS[score]),
        _RUBRIC.format(label=rubric.label, definition=rubric.definition, score=score,
                       criterion=rubric.criteria[score]),
        f"{_NOTES_HEADING}\n{notes}",
        f"{_FORMAT_HEADING}\n" + _FORMAT_NOTE.format(score=score, format_text=proto.format_text, example=example),
    ])
    return [{"role": "user", "content": content}]


def read_synthesis(generation: Any, score: int, fallback: str, *, protocol: str = DEFAULT_PROTOCOL,
                   n_merged: int = 0) -> Synthesis:
    """Accept the merged answer only when it parses to the winning score; else keep ``fallback``.

    Args:
        generation: the merge call's :class:`~surveyalign.backends.Generation` (or a cached call record with
            ``text``, ``finish_reason``, ``error``).
        score: the winning score.
        fallback: the best winning sample's rationale.
        protocol: protocol of the answer.
        n_merged: rationales that were merged (recorded).

    Returns:
        A :class:`Synthesis` with ``source`` ``"synthesized"`` or ``"best_sample"`` (with the reason).
    """
    text = (generation.get("text") if isinstance(generation, dict) else getattr(generation, "text", "")) or ""
    parsed = parse_generation(generation, protocol)  # the one reader: errors, truncation, refusals, then parse
    if parsed.score is None:
        return Synthesis(fallback, "best_sample", f"merge answer not usable: {parsed.error}", text, n_merged)
    if parsed.score != score or not parsed.rationale.strip():
        why = (f"merge answer gave score {parsed.score:+d}, not the winning {score:+d}" if parsed.score != score
               else "merge answer has no rationale")
        return Synthesis(fallback, "best_sample", why, text, n_merged)
    return Synthesis(parsed.rationale.strip(), "synthesized", None, text, n_merged)

"""Rationale synthesis after the vote (SurveyReview App. E): one rationale that agrees with the winning score.

After the K samples of a dimension are voted on, the rationales of the samples that voted for the winning score
are merged into one by one more generation, conditioned on the dimension's rubric and that score. The merged
answer is parsed like any judge answer and must carry the winning score; otherwise (no score, another score, a
failed call) the rationale of the best winning sample (highest mean log-probability) is kept and the reason is
recorded. With a single distinct winning rationale there is nothing to merge and no call is made.

With synthesis turned off (``score --no-synthesis``, ``evaluate --no-synthesis`` / ``synthesis: false``) the best
winning sample's rationale is kept: the winning-score sample with the highest mean log-probability, the sample the
vote's tie-break ranks first (:attr:`surveyalign.judge.Vote.best_index`).

The prompt is ours; it carries the rubric facts (definition, the criteria of the winning score, the scale
{-2, -1, 1, 2}) and the answer format of the protocol, so the merged answer reads like a judge answer.

Both users of the merge go through this module: ``surveyalign score`` (:class:`surveyalign.inference.SurveyAlignJudge`,
one dimension at a time: :func:`synthesize`) and ``surveyalign evaluate`` (every unit's merge call listed with
:func:`synthesis_call`, sent through the run's call stage, then read with :func:`consolidate`). Each merge is one call
of the judge itself (same backend, same identity, temperature 0) through the cached call layer (stage and namespace
``"synthesis"``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from surveyalign.calls import Call, CallCache, cached_generate, make_call
from surveyalign.constants import SCORED
from surveyalign.judge.records import Judgement
from surveyalign.prompts import (
    DEFAULT_PROTOCOL,
    RUBRICS,
    format_target,
    get_protocol,
    parse_generation,
)
from surveyalign.prompts.templates import SCORE_LABELS

__all__ = [
    "SYNTHESIS_OFF",
    "SYNTHESIS_VERSION",
    "Synthesis",
    "build_synthesis_messages",
    "consolidate",
    "distinct_rationales",
    "merge_check",
    "read_synthesis",
    "synthesis_call",
    "synthesize",
    "winning_rationales",
]

#: Version of the synthesis prompt; part of its cache key (bump when the wording changes).
SYNTHESIS_VERSION = "surveyalign-synthesis-1"
#: The ``error`` of a :class:`Synthesis` kept as the best sample because synthesis is turned off (not a failure).
SYNTHESIS_OFF = "synthesis turned off"

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


def winning_rationales(judgement: Judgement) -> list[str]:
    """The distinct, non-empty rationales of the samples that voted for the winning score, in sample order
    (``[]`` for a judgement that is not scored)."""
    if judgement.status != SCORED or judgement.vote is None:
        return []
    return distinct_rationales([judgement.samples[i].rationale for i in judgement.vote.winners])


def synthesis_call(judge: Any, judgement: Judgement, *, unit_id: str | None = None,
                   rationales: Sequence[str] | None = None) -> Call | None:
    """The call merging a scored judgement's winning rationales (SurveyReview App. E), made by the judge itself.

    Args:
        judge: the :class:`~surveyalign.judge.Judge` that judged (its backend for the dimension, its identity in the
            key, its settings at temperature 0, its protocol).
        judgement: the scored judgement of one unit.
        unit_id: the id in the call key (``evaluate``: the unit id); default ``"<messages hash>:<SYNTHESIS_VERSION>"``.
        rationales: stand-ins for rationales not written yet (``--plan`` bounds); default the winning rationales.

    Returns:
        The call (stage and namespace ``"synthesis"``), or ``None`` when the judgement is not scored or there are
        fewer than two distinct rationales to merge.
    """
    if judgement.status != SCORED or judgement.score is None:
        return None
    merged = distinct_rationales(rationales) if rationales is not None else winning_rationales(judgement)
    if len(merged) <= 1:
        return None
    dim = judgement.dimension
    messages = build_synthesis_messages(dim, judgement.score, merged, protocol=judge.protocol)
    settings = judge.settings.model_copy(update={"temperature": 0.0})
    return make_call(judge.backend_for(dim), settings, stage="synthesis",
                     unit_id=unit_id or f"{judgement.prompt.messages_hash}:{SYNTHESIS_VERSION}",
                     namespace="synthesis", messages=messages, identity=judge.identity(dim))


def consolidate(judgement: Judgement, generation: Any, *, protocol: str = DEFAULT_PROTOCOL,
                enabled: bool = True) -> Synthesis:
    """The rationale reported with a scored judgement's winning score (SurveyReview App. E).

    Args:
        judgement: the scored judgement (``judgement.rationale`` is the best winning sample's rationale: the
            winning-score sample with the highest mean log-probability).
        generation: the answer of its :func:`synthesis_call` (a ``Generation`` or a cached record); ``None`` when no
            call was made.
        protocol: the protocol of the merged answer.
        enabled: synthesis on; off: the best winning sample is kept (``error`` :data:`SYNTHESIS_OFF`).

    Returns:
        ``source`` ``"single"`` (one distinct winning rationale, no call), ``"synthesized"`` (the merged answer
        carried the winning score), or ``"best_sample"`` (turned off, or the merge failed: ``error`` says why).
    """
    merged = winning_rationales(judgement)
    best = judgement.rationale
    if len(merged) <= 1:
        return Synthesis(best, "single", None, "", len(merged))
    if not enabled:
        return Synthesis(best, "best_sample", SYNTHESIS_OFF, "", len(merged))
    if generation is None:
        return Synthesis(best, "best_sample", "merge call not made", "", len(merged))
    return read_synthesis(generation, int(judgement.score), best, protocol=protocol, n_merged=len(merged))


def merge_check(judgement: Judgement, protocol: str = DEFAULT_PROTOCOL) -> Any:
    """The call layer's reader (:data:`surveyalign.calls.Check`) of ``judgement``'s merge answer: why a cached merge
    answer is unusable (no score, another score, no rationale), so it is asked again on a re-run; ``None`` when it
    is usable."""
    def check(_call: Call, generation: Any) -> str | None:
        got = consolidate(judgement, generation, protocol=protocol)
        return got.error if got.source == "best_sample" else None

    return check


def synthesize(judge: Any, judgement: Judgement, cache: CallCache | None, *, enabled: bool = True,
               unit_id: str | None = None) -> tuple[Synthesis, Call | None]:
    """Merge one scored judgement's winning rationales now, through the cached call layer (``surveyalign score``).

    Args:
        judge: the :class:`~surveyalign.judge.Judge` that judged.
        judgement: the scored judgement.
        cache: the call cache (``None``: nothing kept).
        enabled: synthesis on (off: the best winning sample, no call).
        unit_id: see :func:`synthesis_call`.

    Returns:
        ``(synthesis, the merge call or None when none was made)``; a failed call gives ``"best_sample"`` with
        the reason, never an exception.
    """
    call = synthesis_call(judge, judgement, unit_id=unit_id) if enabled else None
    if call is None:
        return consolidate(judgement, None, protocol=judge.protocol, enabled=enabled), None
    answer = cached_generate([call], cache, check=merge_check(judgement, judge.protocol))[0]
    return consolidate(judgement, answer.generation, protocol=judge.protocol), call

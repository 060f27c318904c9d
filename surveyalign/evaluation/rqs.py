"""The RQS stage: a judge rates each predicted rationale against the reference one (SurveyReview §3, App. G).

A judge model (the paper used GPT-5.2) sees the dimension, the paper title, the reference (human)
rationale and the predicted rationale, and answers one score from {0.0, 0.2, 0.4, 0.6, 0.8, 1.0}.
RQ_i is the mean over the units of dimension i and RQS the mean of RQ_i over dimensions (computed by
``surveyalign.scoring``). The prompt below is our own wording of that setup. A parsed 0.0 is a valid
score (the authors' script dropped it as a failure; we do not).

The stage runs after the judge stage, for every ``scored`` unit: one call per unit (sample 0, cached in
``calls.jsonl`` under stage and namespace ``"rqs"``: :func:`surveyalign.calls.make_call`), then the rating is attached to the prediction (``consistency``, with
``consistency_error`` ``"parse_failed: ..."`` / ``"api_error: ..."`` when none was read).

The title, the reference and the predicted rationale are untrusted (the predicted rationale is model output
derived from the survey): their answer-format tokens, ``<consistency>`` ratings included, are neutralised before
the prompt (:func:`surveyalign.documents.untrusted.neutralise`), and a rating the judge quotes from them never
becomes the rating (:func:`parse_rqs_rating` with ``untrusted``; :func:`rqs_untrusted` reads them back from a
call's prompt).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from surveyalign.backends import Backend, GenerationSettings
from surveyalign.calls import Call, CallCache, backend_identity, make_call
from surveyalign.constants import SCORED
from surveyalign.documents.untrusted import mask_quoted, neutralise_text
from surveyalign.evaluation.units import Unit
from surveyalign.prompts import parse_generation

__all__ = [
    "RQS_LEVELS",
    "RQS_NAMESPACE",
    "RQS_TEMPLATE",
    "RQSRating",
    "attach_ratings",
    "build_rqs_messages",
    "parse_rqs_rating",
    "plan_rqs_calls",
    "rqs_calls",
    "rqs_counts",
    "rqs_judge_info",
    "rqs_template_hash",
    "rqs_unusable",
    "rqs_untrusted",
]

#: The six admissible consistency scores (App. G).
RQS_LEVELS: tuple[float, ...] = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)
#: The call-cache namespace of every rating call (keeps them apart from the judge's calls on the same unit).
RQS_NAMESPACE = "rqs"

RQS_TEMPLATE = """\
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
class RQSRating:
    """Result of :func:`parse_rqs_rating`: ``score`` in :data:`RQS_LEVELS` or ``None`` with ``error``;
    ``quoted``: the answer-format tokens the answer quoted from its input (not read)."""

    score: float | None
    error: str | None = None
    quoted: tuple[str, ...] = ()


def build_rqs_messages(
    dimension: str, *, title: str, reference: str | list[str], prediction: str
) -> list[dict[str, str]]:
    """Chat messages asking the consistency judge to rate ``prediction`` against ``reference`` (App. G).

    Args:
        dimension: lower-case dimension name (one of ``surveyalign.constants.DIMENSIONS``).
        title: the survey's title ("" when unknown; shown as "(unknown)").
        reference: the human rationale, or its list of snippets (joined one per line).
        prediction: the judge's rationale for the same unit.

    Returns:
        ``[{"role": "user", "content": str}]``; the title, the reference and the prediction have their
        answer-format tokens neutralised (same length; :func:`surveyalign.documents.untrusted.neutralise`).

    Raises:
        KeyError: for an unknown dimension.
    """
    if isinstance(reference, (list, tuple)):
        reference = "\n".join(f"- {r.strip()}" for r in reference if str(r).strip())
    content = RQS_TEMPLATE.format(
        dimension=dimension.capitalize(),
        definition=_DEFINITIONS[dimension],
        title=neutralise_text(title.strip()) or "(unknown)",
        reference=neutralise_text(reference.strip()) or "(empty)",
        prediction=neutralise_text(prediction.strip()) or "(empty)",
    )
    return [{"role": "user", "content": content}]


def rqs_template_hash() -> str:
    """sha256 hex of the consistency template and the dimension definitions (recorded in run_config.json)."""
    blob = RQS_TEMPLATE + "\n" + "\n".join(f"{k}={v}" for k, v in sorted(_DEFINITIONS.items()))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def parse_rqs_rating(text: str | None, *, untrusted: Sequence[str] | None = None) -> RQSRating:
    """Read the rating from a consistency judge's answer.

    The last ``<consistency>X</consistency>`` outside any ``<think>...</think>`` block counts. ``X`` must
    equal one of 0.0, 0.2, ..., 1.0 (written as "0", "0.0", ".2", "1", "1.00", ...). Anything else returns
    ``score=None`` with the reason; nothing is rounded or defaulted. 0.0 is a valid rating. A rating, a
    ``<think>`` tag or a lone ``<consistency>`` tag the answer quotes from ``untrusted`` (the title, the reference,
    the predicted rationale) is not read (:func:`surveyalign.documents.untrusted.mask_quoted`).

    Args:
        text: the judge's raw answer (``None`` counts as empty).
        untrusted: the input texts the judge read (:func:`rqs_untrusted`); ``None``: nothing counts as quoted.

    Returns:
        :class:`RQSRating` (``quoted``: the tokens left unread as quotes).
    """
    if not text or not text.strip():
        return RQSRating(None, "empty answer")
    text, quoted = mask_quoted(text, untrusted)
    visible = _OPEN_THINK.sub("", _THINK.sub("", text))
    tags = _TAG.findall(visible)
    if not tags:
        why = "no <consistency>...</consistency> tag outside <think>"
        return RQSRating(None, why + (f" (quoted from the input, not read: {', '.join(quoted)})" if quoted else ""),
                         quoted)
    raw = tags[-1]
    try:
        value = float(raw)
    except ValueError:
        return RQSRating(None, f"rating {raw!r} is not a number", quoted)
    for level in RQS_LEVELS:
        if abs(value - level) < 1e-9:
            return RQSRating(level, None, quoted)
    return RQSRating(None, f"rating {raw!r} is not one of 0.0, 0.2, 0.4, 0.6, 0.8, 1.0", quoted)


_INPUTS_START = "Survey title: "
_INPUTS_END = "\n\nRate the agreement in meaning"


def rqs_untrusted(messages: Sequence[Mapping[str, Any]] | None) -> tuple[str, ...]:
    """The untrusted part of a rating prompt (:func:`build_rqs_messages`): the text from the survey title to the
    end of the machine rationale (title, reference and prediction, as neutralised), the template's own text left
    out (its example rating is not a quote).

    Args:
        messages: the rating call's chat messages.

    Returns:
        ``(inputs,)``, or ``()`` when the messages are not a rating prompt.
    """
    for message in messages or ():
        content = str(message.get("content") or "")
        start, end = content.find(_INPUTS_START), content.rfind(_INPUTS_END)
        if message.get("role") == "user" and 0 <= start < end:
            return (content[start + len(_INPUTS_START):end],)
    return ()


def _parse_call(call: Call, generation: Any) -> RQSRating:
    untrusted = rqs_untrusted(call.messages)
    return parse_generation(generation, parse=lambda text: parse_rqs_rating(text, untrusted=untrusted))


def _messages(unit: Unit, prediction: dict[str, Any]) -> list[dict[str, str]]:
    return build_rqs_messages(unit.dimension, title=unit.row.get("title") or "",
                              reference=list(unit.row.get("rationales") or []), prediction=prediction["rationale"])


def _call(unit: Unit, prediction: dict[str, Any], backend: Backend, settings: GenerationSettings,
          identity: dict[str, Any] | None = None) -> Call:
    return make_call(backend, settings, stage="rqs", unit_id=unit.unit_id, namespace=RQS_NAMESPACE,
                     messages=_messages(unit, prediction), identity=identity)


def rqs_unusable(call: Call, generation: Any) -> str | None:
    """Why a cached rating answer gives no rating (truncated, refused, no valid ``<consistency>`` tag), else
    ``None``: the call layer's check (:meth:`surveyalign.calls.CallCache.missing`), so such an answer is asked
    again on a re-run like an error, not replayed. A rating quoted from the call's input is not read
    (:func:`rqs_untrusted`). Errors are the cache's own rule."""
    parsed = _parse_call(call, generation)
    return None if parsed.score is not None else f"parse_failed: {parsed.error}"


def rqs_calls(units: list[Unit], predictions: list[dict[str, Any]], backend: Backend, settings: GenerationSettings,
              cache: CallCache, *, retry_errors: bool = True) -> tuple[list[Call], int]:
    """The rating calls of every scored unit not yet usably answered in the cache: an answer that errored or
    gave no rating (:func:`rqs_unusable`) is asked again unless ``retry_errors`` is off or the cache keeps failed
    answers; counted in ``cache.counts`` (reused / retried / made).

    Args:
        units: the units, in prediction order.
        predictions: their prediction records.
        backend: the RQS judge.
        settings: its generation settings.
        cache: the run's call cache.
        retry_errors: ask failed ratings again (``evaluate``'s ``retry_errors``; default on).

    Returns:
        ``(calls to make, number answered from the cache)``.
    """
    identity = backend_identity(backend)
    return cache.missing([_call(unit, pred, backend, settings, identity)
                          for unit, pred in zip(units, predictions) if pred["status"] == SCORED],
                         retry_errors=retry_errors, check=rqs_unusable)


def plan_rqs_calls(units: list[Unit], predictions: list[dict[str, Any]], pending: set[str], backend: Backend,
                   settings: GenerationSettings) -> tuple[list[Call], set[str]]:
    """The rating calls the RQS stage will make, before the judge stage has run (``--plan``, ``--max-cost``).

    A unit whose judge answers are all in the cache gets its real rating call when it was scored (none when it
    was not; none when its rating is already cached). A unit whose judge calls are still to make (``pending``) is
    counted as if it will be scored: its call carries an empty machine rationale, and its key is returned so the
    caller adds the tokens the rationale is expected to take. The cache is not read here.

    Args:
        units: the units, in prediction order; predictions: :func:`assemble_predictions` of the cache as it is.
        pending: unit ids with judge calls still to make.
        backend: the RQS judge; settings: its generation settings.

    Returns:
        ``(calls, keys of the calls whose rationale is not written yet)``; ``calls`` holds the rating calls
        already answered in the cache too (what they cost counts as spent): ``cache.missing`` gives the rest.
    """
    identity = backend_identity(backend)
    exact, planned = [], []
    for unit, pred in zip(units, predictions):
        if unit.unit_id in pending:
            planned.append(_call(unit, {**pred, "rationale": ""}, backend, settings, identity))
        elif pred["status"] == SCORED:
            exact.append(_call(unit, pred, backend, settings, identity))
    return [*exact, *planned], {c.key for c in planned}


def attach_ratings(units: list[Unit], predictions: list[dict[str, Any]], backend: Backend,
                   settings: GenerationSettings, cache: CallCache) -> None:
    """Fill ``consistency`` (and ``consistency_error``) of the scored predictions from the cached ratings."""
    identity = backend_identity(backend)
    for unit, pred in zip(units, predictions):
        if pred["status"] != SCORED:
            continue
        call = _call(unit, pred, backend, settings, identity)
        answer = cache.generation(call.key)
        if answer.error:
            pred["consistency_error"] = f"api_error: {answer.error}"
        else:
            parsed = _parse_call(call, answer)  # truncated / refused: parse_failed
            pred["consistency"] = parsed.score
            pred["consistency_error"] = None if parsed.score is not None else f"parse_failed: {parsed.error}"


def rqs_judge_info(name: str | None, backend: Backend) -> dict[str, Any]:
    """The RQS judge as ``metrics.json`` / ``run_config.json`` record it (``rqs_judge``), for leaderboards to name
    it and to mark rows rated by another judge (:mod:`surveyalign.scoring.rqs_judge`).

    Args:
        name: the RQS config's ``name`` (``None``: the backend's model id, else its kind).
        backend: the RQS judge.

    Returns:
        ``{"name", "model", "backend"}`` (``model`` ``None`` for a backend without one, e.g. a scripted rater).
    """
    desc = backend.describe() if hasattr(backend, "describe") else {}
    model = desc.get("model")
    kind = desc.get("backend") or type(backend).__name__
    return {"name": name or (str(model) if model else str(kind)), "model": model, "backend": kind}


def rqs_counts(predictions: list[dict[str, Any]]) -> dict[str, int]:
    """``{"eligible", "scored", "parse_failed", "api_error"}`` of the RQS stage over the scored predictions."""
    scored = [p for p in predictions if p["status"] == SCORED]
    return {
        "eligible": len(scored),
        "scored": sum(p["consistency"] is not None for p in scored),
        "parse_failed": sum(str(p.get("consistency_error") or "").startswith("parse_failed") for p in scored),
        "api_error": sum(str(p.get("consistency_error") or "").startswith("api_error") for p in scored),
    }

"""The one reader of a generated answer: is it a final answer at all, and if so, what does it say.

Every place that turns a backend's :class:`~surveyalign.backends.Generation` (or its cached record) into a score
goes through :func:`parse_generation`: the evaluation harness (judge stage and RQS stage), DPO pair making and
anything built on them. Before the text is parsed, the answer must be final:

* ``finish_reason == "length"`` (the OpenAI API, vLLM, ``surveyalign serve``, the transformers backend) or the
  equivalents other servers use (``"max_tokens"``, ``"MAX_TOKENS"``, ``"max_output_tokens"``) mean the answer hit
  the token limit. Even when it already holds a score marker, it is a parse failure with reason "truncated": a
  cut-off answer may have been about to revise its score.
* A refusal (``Generation.refusal``, or ``finish_reason == "content_filter"``) is a parse failure whose reason is
  the refusal text.
* Reasoning returned apart from the answer (``Generation.reasoning``) is never read; only the answer text is
  parsed. An answer that is empty while reasoning was returned says so in its reason.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from surveyalign.prompts.parser import ParsedAnswer, parse_judgement

__all__ = ["LENGTH_FINISH_REASONS", "TRUNCATED", "answer_failure", "parse_generation"]

#: Reason (the first word of ``ParsedAnswer.error``) of an answer that stopped at the token limit.
TRUNCATED = "truncated"
#: ``finish_reason`` values meaning "stopped at the token limit" (OpenAI/vLLM/serve/transformers, Anthropic-style,
#: Gemini-style, Responses-API-style).
LENGTH_FINISH_REASONS = frozenset({"length", "max_tokens", "MAX_TOKENS", "max_output_tokens"})
#: ``finish_reason`` values meaning the provider withheld the answer.
FILTER_FINISH_REASONS = frozenset({"content_filter", "SAFETY", "refusal"})

_R = TypeVar("_R")


def _field(generation: Any, name: str) -> Any:
    if isinstance(generation, Mapping):
        return generation.get(name)
    return getattr(generation, name, None)


def answer_failure(generation: Any, expected: str | None = None) -> str | None:
    """Why ``generation`` is not a final answer that may be parsed, or ``None`` when it is one.

    Shared by every reader of generated answers: the judge's score markers (:func:`parse_generation`), the
    autoraters' and PRISM's JSON answers.

    Args:
        generation: a :class:`~surveyalign.backends.Generation` or a mapping with the same fields (a cached call
            record of ``calls.jsonl``: ``text``, ``finish_reason``, ``refusal``, ``reasoning``).
        expected: what the caller reads from the answer (e.g. ``"score marker"``, ``"JSON object"``), named in the
            message of a truncated answer; ``None`` keeps the message general.

    Returns:
        ``"truncated: ..."`` for a length stop, ``"refused: <text>"`` for a refusal or content filter, ``None``
        otherwise (request errors are not judged here: callers report them as API errors first).
    """
    finish = _field(generation, "finish_reason")
    refusal = _field(generation, "refusal")
    if finish in LENGTH_FINISH_REASONS:
        held = f"it already holds a complete {expected}" if expected else "its visible part looks complete"
        return (f"{TRUNCATED}: the answer stopped at the token limit (finish_reason {finish!r}); it is not read "
                f"even if {held} (raise max_new_tokens)")
    if refusal:
        return f"refused: {str(refusal).strip()}"
    if finish in FILTER_FINISH_REASONS:
        return f"refused: the provider withheld the answer (finish_reason {finish!r})"
    return None


def parse_generation(generation: Any, protocol: str = "auto", *,
                     parse: Callable[[str], _R] | None = None,
                     untrusted: Sequence[str] | None = None) -> ParsedAnswer | _R:
    """Parse one generated answer, refusing answers that are not final (SurveyReview App. C output format).

    Args:
        generation: a :class:`~surveyalign.backends.Generation` or a cached call record (mapping) with ``text``,
            ``finish_reason`` and optionally ``refusal`` / ``reasoning``. Its ``error`` (a failed request) must be
            handled by the caller; a generation with ``error`` set is refused here too.
        protocol: answer protocol for :func:`~surveyalign.prompts.parse_judgement` (``"v1.0"``, ``"v1.1"``,
            ``"auto"``).
        parse: another reader of the answer text (e.g. the RQS stage's ``parse_consistency``); its result must
            have ``score`` and ``error``. Default: ``parse_judgement(text, protocol, untrusted=untrusted)``.
        untrusted: the input texts the judge read (the survey, title, knowledge); what the answer quotes from
            them never decides (:func:`~surveyalign.prompts.parse_judgement`). Used by the default reader only.

    Returns:
        What ``parse`` returns for the answer text; for an answer that is not final (see :func:`answer_failure`),
        for a failed request, or for an empty answer beside returned reasoning, a ``ParsedAnswer`` with
        ``score=None`` and the reason in ``error`` (``"truncated: ..."``, ``"refused: ..."``, ...). The returned
        reasoning is never parsed.

    Raises:
        ValueError: an unknown ``protocol``.
    """
    reader = parse if parse is not None else (lambda text: parse_judgement(text, protocol=protocol,
                                                                          untrusted=untrusted))
    if protocol != "auto" and parse is None:
        from surveyalign.prompts.protocols import get_protocol

        get_protocol(protocol)  # an unknown protocol is a caller error, also for answers that are not parsed
    error = _field(generation, "error")
    if error:
        return ParsedAnswer(None, "", f"request failed: {error}")
    failure = answer_failure(generation, "score marker" if parse is None else None)
    if failure is not None:
        return ParsedAnswer(None, "", failure)
    text = _field(generation, "text") or ""
    if not str(text).strip() and _field(generation, "reasoning"):
        return ParsedAnswer(None, "", "empty answer: the server returned only reasoning (reasoning_content), no answer "
                                   "text; the reasoning is never parsed for a score")
    return reader(str(text))

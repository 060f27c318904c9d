"""What a judge call gives back: one parsed sample, one prepared prompt, one judgement (SurveyReview App. C, E).

:func:`read_sample` turns one backend answer into a sample record; it reads the answer with
:func:`surveyalign.prompts.parse_generation`, the one reader of generated answers (a truncated or refused answer
is never scored), so the evaluation runner, :class:`Judge` and everything built on them apply the same rules.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from surveyalign.backends import Generation
from surveyalign.constants import API_ERROR, PARSE_FAILED, SCORED
from surveyalign.prompts import parse_generation

__all__ = ["Judgement", "PreparedPrompt", "SampleRecord", "read_sample"]


@dataclass(frozen=True)
class SampleRecord:
    """One sampled judge answer and what was read from it.

    Attributes:
        sample: sample index k in [0, K).
        seed: the seed it was generated with (``settings.seed + k``), ``None`` when unknown.
        text: the raw answer (``""`` when the call failed).
        finish_reason: why generation stopped (``"stop"``, ``"length"``, ...), ``None`` when unknown.
        mean_logprob: mean token log-probability (<= 0), ``None`` when the backend gave none.
        score: the parsed score in {-2, -1, 1, 2}, ``None`` when none was read.
        rationale: the parsed rationale (``""`` when none).
        error: the backend's error text when the call failed (the sample is an ``api_error``).
        parse_error: why no score was read from a successful answer (the sample is ``parse_failed``).
        quoted: answer-format tokens the answer quoted from the survey, ignored by the parser (empty when none).
    """

    sample: int
    seed: int | None
    text: str
    finish_reason: str | None
    mean_logprob: float | None
    score: int | None
    rationale: str
    error: str | None = None
    parse_error: str | None = None
    quoted: tuple[str, ...] = ()

    @property
    def status(self) -> str:
        """``"scored"``, ``"parse_failed"`` or ``"api_error"`` (``surveyalign.constants``)."""
        if self.error:
            return API_ERROR
        return SCORED if self.score is not None else PARSE_FAILED

    def to_dict(self) -> dict[str, Any]:
        """The ``samples`` entry of a prediction record: score, text, finish_reason, mean_logprob, error."""
        return {"score": self.score, "text": self.text, "finish_reason": self.finish_reason,
                "mean_logprob": self.mean_logprob, "error": self.error}


def read_sample(generation: Generation, *, protocol: str, sample: int = 0, seed: int | None = None,
                untrusted: tuple[str, ...] = ()) -> SampleRecord:
    """Read one backend answer into a :class:`SampleRecord` (SurveyReview App. C answer formats).

    Args:
        generation: the backend's answer (``text``, ``finish_reason``, ``mean_logprob``, ``error``).
        protocol: answer protocol (``"v1.0"``, ``"v1.1"`` or ``"auto"``), as
            :func:`surveyalign.prompts.parse_judgement`.
        sample: sample index k.
        seed: the seed of that sample, when known.
        untrusted: the texts the judge read (survey, title, knowledge): what the answer quotes from them never
            decides the score (:func:`surveyalign.prompts.parse_judgement`).

    Returns:
        The record: ``error`` set (and nothing parsed) for a failed call; otherwise ``score`` and
        ``rationale`` from the parser, ``parse_error`` set when no score was read (``"truncated: ..."`` for an
        answer that stopped at the token limit, ``"refused: ..."`` for a refusal).

    Raises:
        ValueError: unknown ``protocol``.
    """
    text = generation.text or ""
    common = {"sample": sample, "seed": seed, "text": text, "finish_reason": generation.finish_reason,
              "mean_logprob": generation.mean_logprob}
    if generation.error:
        return SampleRecord(**common, score=None, rationale="", error=generation.error)
    parsed = parse_generation(generation, protocol=protocol, untrusted=untrusted)
    return SampleRecord(**common, score=parsed.score, rationale=parsed.rationale or "",
                        parse_error=None if parsed.score is not None else (parsed.error or "no score"),
                        quoted=getattr(parsed, "quoted", ()))


@dataclass(frozen=True)
class PreparedPrompt:
    """The judge prompt of one (survey, dimension) after the length rule.

    Attributes:
        dimension: canonical dimension name.
        messages: the chat to send; ``None`` when nothing is sent (see ``status``).
        messages_hash: ``stable_hash(messages)`` (part of the call key), ``None`` when nothing is sent.
        template_hash: ``JudgePrompt.template_hash`` (the template skeleton, not the survey).
        has_knowledge: whether a knowledge-augmentation block is in the prompt.
        prompt_tokens: rendered prompt length in tokens, when a tokenizer counted it.
        shortened_tokens: survey tokens removed by the length rule.
        status: ``None`` when the prompt is sent; ``"missing_text"`` (empty survey) or ``"prompt_too_long"``
            (it cannot fit the budget or the model context) otherwise.
        reason: why it is not sent (``None`` when it is).
        survey_chars: characters of the survey body given (the whole text).
        read_chars: characters of the survey body in the prompt (``survey_chars`` when nothing was cut; the body
            is cut at its end, so the judge read characters ``0 .. read_chars``); ``None`` when nothing is sent.
        survey_tokens: tokens of the whole survey body when a tokenizer counted them (read + cut), else ``None``.
        counted: how the length was checked: ``"tokens"`` (a tokenizer), ``"characters"`` (no tokenizer: a
            characters / 4 estimate against a known context) or ``"none"`` (no tokenizer, no known limit).
        untrusted: the texts the judge reads (survey, title, knowledge), given to the answer parser so that what
            an answer quotes from them never decides.
        neutralised: the answer-format tokens neutralised in those texts
            (:func:`surveyalign.documents.untrusted.neutralise`).
    """

    dimension: str
    messages: list[dict[str, str]] | None
    messages_hash: str | None
    template_hash: str | None
    has_knowledge: bool = False
    prompt_tokens: int | None = None
    shortened_tokens: int = 0
    status: str | None = None
    reason: str | None = None
    survey_chars: int = 0
    read_chars: int | None = None
    survey_tokens: int | None = None
    counted: str = "none"
    untrusted: tuple[str, ...] = ()
    neutralised: tuple[Any, ...] = ()

    def reading(self) -> dict[str, Any]:
        """How much of the survey the judge read, for the reports.

        Returns:
            ``{"chars_read", "chars_total", "tokens_read", "tokens_total", "cut", "cut_at_char", "counted"}``:
            ``cut`` is True when the end of the body was left out (the judge read characters ``0 ..
            cut_at_char``); token figures are ``None`` when no tokenizer counted them.
        """
        read = self.read_chars
        cut = read is not None and read < self.survey_chars
        tokens_read = None if self.survey_tokens is None else self.survey_tokens - self.shortened_tokens
        return {"chars_read": read, "chars_total": self.survey_chars, "tokens_read": tokens_read,
                "tokens_total": self.survey_tokens, "cut": cut, "cut_at_char": read if cut else None,
                "counted": self.counted}

    @property
    def sendable(self) -> bool:
        """True when the prompt is to be sent to the backend."""
        return self.status is None and self.messages is not None


@dataclass
class Judgement:
    """The judge's verdict on one (survey, dimension) (SurveyReview App. E: K samples, one vote).

    Attributes:
        dimension: canonical dimension name.
        score: the voted score in {-2, -1, 1, 2}, ``None`` unless ``status == "scored"``.
        rationale: the rationale of the chosen sample (``""`` when none).
        status: one of ``surveyalign.constants.STATUSES``.
        reason: the error text when ``status != "scored"`` (``None`` otherwise).
        samples: every sample, in sample order (empty when no call was made).
        vote: the vote over the samples (``surveyalign.judge.Vote``), ``None`` when no call was made.
        prompt: the prepared prompt the samples answer.
    """

    dimension: str
    score: int | None
    rationale: str
    status: str
    reason: str | None
    samples: list[SampleRecord] = field(default_factory=list)
    vote: Any = None
    prompt: PreparedPrompt | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable view: dimension, score, rationale, status, reason, samples (with seeds), vote."""
        out: dict[str, Any] = {"dimension": self.dimension, "score": self.score, "rationale": self.rationale,
                               "status": self.status, "reason": self.reason,
                               "samples": [{**s.to_dict(), "seed": s.seed} for s in self.samples]}
        if self.vote is not None:
            out["vote"] = self.vote.to_dict()
        return out

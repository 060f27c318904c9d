"""The single builder of judge prompts, SFT targets and SFT examples (SurveyReview App. C).

Zero-shot judging, fine-tuned judging, SFT data and DPO data all call :func:`build_judge_prompt`, so the
prompt a model is trained on is, byte for byte, the prompt it is evaluated with.

Template order (App. C): reviewer role for the dimension; knowledge-augmentation description (only with
knowledge); the dimension's definition; its criteria for -2/-1/+1/+2; output requirements; answer format
of the protocol; a separator; the knowledge-augmentation content (only with knowledge); the survey text;
a closing separator. The prompt is one user message (no system prompt).

The survey text, the title and the knowledge block are untrusted: their answer-format tokens (score markers,
think/reason/score tags, JSON keys) are neutralised into same-length look-alikes before they enter the prompt
(:func:`surveyalign.documents.untrusted.neutralise`); ``JudgePrompt.neutralised`` names each one.

The ``shared`` layout (opt-in, zero-shot judges only: adapters are trained on the App. C order) puts the survey
block first (survey heading, title line, survey text, separator) and everything App. C puts before it after that
block, the answer format last. The survey block is then the same for a survey's four dimensions, so a provider's
prompt cache can serve it to all of them; the user message carries its length under
:data:`~surveyalign.constants.CACHE_PREFIX_KEY`.
"""

from __future__ import annotations

import hashlib
import json
import numbers
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from surveyalign.constants import CACHE_PREFIX_KEY, DIMENSIONS, PROMPT_LAYOUTS, VALID_SCORES, Dimension
from surveyalign.documents.untrusted import NeutralisedSpan, neutralise
from surveyalign.prompts import templates as T
from surveyalign.prompts.protocols import DEFAULT_PROTOCOL, Protocol, get_protocol

__all__ = [
    "JudgePrompt",
    "build_judge_prompt",
    "build_sft_example",
    "format_target",
    "validate_score",
]

_KNOWLEDGE_SLOT = "\x00knowledge\x00"
_TITLE_SLOT = "\x00title\x00"


@dataclass(frozen=True)
class JudgePrompt:
    """A rendered judge prompt for one unit (SurveyReview App. C).

    Attributes:
        dimension: canonical dimension name.
        protocol: protocol name ("v1.0" or "v1.1").
        instruction: everything that precedes the survey text: role, KA description, definition,
            criteria, requirements, answer format, separator, KA content, title line, survey heading.
        input: the survey text with its answer-format tokens neutralised (same length; otherwise unchanged).
        suffix: what follows the survey text (a newline and the closing separator).
        has_knowledge: whether a knowledge-augmentation block is included.
        template_hash: sha256 hex digest (64 chars) of the template skeleton for this dimension, protocol, KA flag
            and title flag (and layout, for ``shared``); independent of the survey text, KA content and title, so
            an evaluation cache can key on it and a change in any template string invalidates it.
        layout: ``"app_c"`` (instruction before the survey) or ``"shared"`` (survey block first).
        shared_chars: with the ``shared`` layout, how many leading characters of :attr:`content` are the survey
            block every dimension of the survey shares (``None`` for ``app_c``).
        neutralised: the answer-format tokens neutralised in the survey text, the title and the knowledge block
            (in that order; offsets are into each text).
    """

    dimension: str
    protocol: str
    instruction: str
    input: str
    suffix: str
    has_knowledge: bool
    template_hash: str
    neutralised: tuple[NeutralisedSpan, ...] = ()
    layout: str = "app_c"
    shared_chars: int | None = None

    @property
    def content(self) -> str:
        """The full user message: ``instruction + input + suffix``."""
        return self.instruction + self.input + self.suffix

    def messages(self) -> list[dict[str, Any]]:
        """The prompt as a chat: ``[{"role": "user", "content": self.content}]`` (no system message); with the
        ``shared`` layout the message also carries ``CACHE_PREFIX_KEY: shared_chars`` (never sent as such)."""
        message: dict[str, Any] = {"role": "user", "content": self.content}
        if self.shared_chars is not None:
            message[CACHE_PREFIX_KEY] = self.shared_chars
        return [message]


def _render_parts(rubric: T.DimensionRubric, protocol: Protocol, knowledge: str | None, title: str | None,
                  layout: str = "app_c") -> tuple[str, str]:
    """Return ``(instruction, suffix)`` for one rubric/protocol; the survey goes between them."""
    if layout == "shared":
        return _render_shared(rubric, protocol, knowledge, title)
    label = rubric.label
    head: list[str] = [T.ROLE.format(label=label)]
    if knowledge is not None:
        head.append(rubric.ka_description.format(label=label))
    head.append(T.DEFINITION_HEADING.format(label=label) + "\n" + rubric.definition)
    criteria = "\n".join(
        f"{score:+d} ({T.SCORE_LABELS[score]}): {rubric.criteria[score]}" for score in VALID_SCORES
    )
    head.append(T.CRITERIA_HEADING.format(label=label) + "\n" + criteria)
    head.append(T.REQUIREMENTS)
    head.append(T.FORMAT_HEADING + "\n" + protocol.format_text)

    body: list[str] = [T.SEPARATOR]
    if knowledge is not None:
        body.append(rubric.ka_heading + "\n" + knowledge.strip() + "\n")
    survey_head = T.SURVEY_HEADING
    if title is not None:
        survey_head += "\n" + T.TITLE_LINE.format(title=title.strip())
    body.append(survey_head + "\n\n")
    instruction = "\n\n".join(head) + "\n\n" + "\n".join(body)
    return instruction, "\n" + T.SEPARATOR


def _survey_head(title: str | None) -> str:
    head = T.SURVEY_HEADING
    if title is not None:
        head += "\n" + T.TITLE_LINE.format(title=title.strip())
    return head + "\n\n"


def _render_shared(rubric: T.DimensionRubric, protocol: Protocol, knowledge: str | None, title: str | None
                   ) -> tuple[str, str]:
    """``(instruction, suffix)`` of the ``shared`` layout: the survey block first (heading, title, [survey],
    separator), then role, KA description, definition, criteria, requirements, KA content and the answer format."""
    label = rubric.label
    tail: list[str] = [T.SHARED_ROLE.format(label=label)]
    if knowledge is not None:
        tail.append(rubric.ka_description.format(label=label))
    criteria = "\n".join(
        f"{score:+d} ({T.SCORE_LABELS[score]}): {rubric.criteria[score]}" for score in VALID_SCORES
    )
    tail += [T.DEFINITION_HEADING.format(label=label) + "\n" + rubric.definition,
             T.CRITERIA_HEADING.format(label=label) + "\n" + criteria, T.REQUIREMENTS]
    if knowledge is not None:
        tail.append(rubric.ka_heading + "\n" + knowledge.strip())
    tail.append(T.FORMAT_HEADING + "\n" + protocol.format_text)
    return _survey_head(title), "\n" + T.SEPARATOR + "\n\n" + "\n\n".join(tail)


def _template_hash(rubric: T.DimensionRubric, protocol: Protocol, has_knowledge: bool, has_title: bool,
                   layout: str = "app_c") -> str:
    instruction, suffix = _render_parts(
        rubric, protocol, _KNOWLEDGE_SLOT if has_knowledge else None, _TITLE_SLOT if has_title else None, layout
    )
    payload = {
        "template_version": T.TEMPLATE_VERSION,
        "dimension": rubric.name,
        "protocol": protocol.name,
        "knowledge": has_knowledge,
        "title": has_title,
        "skeleton": instruction + "\x00survey\x00" + suffix,
    }
    if layout != "app_c":  # App. C hashes stay as they were (every cached answer keyed on them stays valid)
        payload["layout"] = layout
    return hashlib.sha256(json.dumps(payload, sort_keys=True, ensure_ascii=True).encode("utf-8")).hexdigest()


def _clean_optional(value: str | None, what: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a string or None, got {type(value).__name__}")
    return value if value.strip() else None


def build_judge_prompt(
    dimension: Dimension,
    text: str,
    *,
    protocol: str | Protocol = DEFAULT_PROTOCOL,
    knowledge: str | None = None,
    title: str | None = None,
    layout: str = "app_c",
) -> JudgePrompt:
    """Build the judge prompt of one unit (SurveyReview App. C; KA placement from App. F / §5.2).

    Args:
        dimension: one of readability, structure, comprehensiveness, criticalness (a parsed
            :data:`~surveyalign.constants.Dimension`: lower case).
        text: the survey text (markdown), placed after the survey heading with its answer-format tokens
            neutralised.
        protocol: protocol name ("v1.0" = ``Reason$$$X$$$``, "v1.1" = tags) or a :class:`Protocol`.
        knowledge: knowledge-augmentation content (Comp-KA or Crit-KA text). ``None`` or a blank string
            means no KA: neither the KA description nor the KA block appears.
        title: the survey's title, shown above the text when given (blank means none).
        layout: ``"app_c"`` (default: the App. C order, the one adapters are trained on) or ``"shared"`` (the
            survey block first, the dimension's instructions and the answer format after it; see the module).

    Returns:
        A :class:`JudgePrompt`; ``.messages()`` is the single user message to send.

    Raises:
        ValueError: unknown dimension, protocol or layout (the message names the bad value).
        TypeError: ``text``, ``knowledge`` or ``title`` is not a string.
    """
    if dimension not in T.RUBRICS:  # a Dimension is parsed at the edge; this names a wrong name in Python use
        raise ValueError(f"unknown dimension {dimension!r}; expected one of {', '.join(DIMENSIONS)}")
    dim = dimension
    proto = get_protocol(protocol)
    if not isinstance(text, str):
        raise TypeError(f"survey text must be a string, got {type(text).__name__}")
    knowledge = _clean_optional(knowledge, "knowledge")
    title = _clean_optional(title, "title")
    if layout not in PROMPT_LAYOUTS:
        raise ValueError(f"unknown prompt layout {layout!r}; expected one of {', '.join(PROMPT_LAYOUTS)}")
    rubric = T.RUBRICS[dim]
    body, head, block = neutralise(text), neutralise(title or ""), neutralise(knowledge or "")
    instruction, suffix = _render_parts(rubric, proto, block.text if knowledge is not None else None,
                                        head.text if title is not None else None, layout)
    shared = None if layout == "app_c" else len(instruction) + len(body.text) + len("\n" + T.SEPARATOR + "\n\n")
    return JudgePrompt(
        dimension=dim,
        protocol=proto.name,
        instruction=instruction,
        input=body.text,
        suffix=suffix,
        has_knowledge=knowledge is not None,
        template_hash=_template_hash(rubric, proto, knowledge is not None, title is not None, layout),
        neutralised=body.spans + head.spans + block.spans,
        layout=layout,
        shared_chars=shared,
    )


def validate_score(score: Any) -> int:
    """Return ``score`` as an int in {-2, -1, 1, 2}.

    Accepts ints, numpy integers and integral floats such as ``-1.0`` (the official release stores
    floats); bools are refused.

    Raises:
        ValueError: for anything else, naming the bad value.
    """
    if isinstance(score, bool) or not isinstance(score, numbers.Real):
        # A bad score is a bad value whatever its type (the Raises above: ValueError naming it).
        raise ValueError(f"score must be one of {VALID_SCORES}, got {score!r}")  # noqa: TRY004
    as_int = int(score) if float(score).is_integer() else None
    if as_int not in VALID_SCORES:
        raise ValueError(f"score must be one of {VALID_SCORES}, got {score!r}")
    return as_int


def _join_rationale(rationale: str | Sequence[str]) -> str:
    if isinstance(rationale, str):
        return rationale.strip()
    if not isinstance(rationale, Sequence):
        raise TypeError(f"rationale must be a string or a list of strings, got {type(rationale).__name__}")
    parts = []
    for i, snippet in enumerate(rationale):
        if not isinstance(snippet, str):
            raise TypeError(f"rationale snippet {i} must be a string, got {type(snippet).__name__}")
        if snippet.strip():
            parts.append(snippet.strip())
    return " ".join(parts)


def format_target(rationale: str | Sequence[str], score: int, protocol: str | Protocol = DEFAULT_PROTOCOL) -> str:
    """Write a rationale and score in the protocol's answer format (SurveyReview App. C, SFT output).

    Args:
        rationale: one string, or a list of rationale snippets (joined with single spaces after
            stripping; blank snippets add nothing).
        score: one of -2, -1, 1, 2 (see :func:`validate_score`).
        protocol: "v1.0" -> ``{rationale}$$${score}$$$``; "v1.1" -> ``<reason>{rationale}</reason>
            <score>{score}</score>``. Scores are written without a plus sign.

    Returns:
        The target string; ``parse_judgement(format_target(r, s, p), p)`` gives back ``s`` and ``r``.

    Raises:
        TypeError: ``rationale`` is neither a string nor a sequence of strings.
        ValueError: bad score (named), unknown protocol (named), or a v1.1 rationale containing a
            ``<reason>``/``</reason>``/``<score>`` tag, which would make the target ambiguous.
    """
    proto = get_protocol(protocol)
    value = validate_score(score)
    text = _join_rationale(rationale)
    if proto.reason_tags is not None:
        lowered = text.lower()
        for tag in (*proto.reason_tags, "<score>", "</score>"):
            if tag in lowered:
                raise ValueError(f"rationale contains the protocol tag {tag!r}; cannot format it under {proto.name}")
    return proto.render_target(text, value)


def build_sft_example(
    dimension: Dimension,
    text: str,
    rationales: str | Sequence[str],
    score: int,
    *,
    protocol: str | Protocol = DEFAULT_PROTOCOL,
    knowledge: str | None = None,
    title: str | None = None,
    enable_thinking: bool | None = False,
) -> dict[str, Any]:
    """One SFT example in TRL's conversational prompt-completion format (SurveyReview §5.1, App. C).

    The prompt is exactly ``build_judge_prompt(dimension, text, protocol=..., knowledge=...,
    title=...).messages()``: instruction = everything but the survey, input = the survey; the
    completion is the human rationale(s) plus the score marker (:func:`format_target`).

    Args:
        dimension, text, protocol, knowledge, title: as :func:`build_judge_prompt`.
        rationales: the human rationale snippets (or one string), joined as in :func:`format_target`.
        score: the human score, one of -2, -1, 1, 2.
        enable_thinking: thinking switch for the chat template, stored per example under
            ``chat_template_kwargs`` (TRL's SFTTrainer and DPOTrainer pass it to
            ``apply_chat_template``). The default False matches evaluation with thinking off: the
            rendered training prompt is then exactly ``render_chat(..., enable_thinking=False)``.
            None leaves the key out.

    Returns:
        ``{"prompt": [{"role": "user", "content": ...}], "completion": [{"role": "assistant",
        "content": target}], "chat_template_kwargs": {"enable_thinking": False}}``.

    Raises:
        ValueError: as :func:`build_judge_prompt` and :func:`format_target`.
    """
    prompt = build_judge_prompt(dimension, text, protocol=protocol, knowledge=knowledge, title=title)
    target = format_target(rationales, score, protocol)
    example: dict[str, Any] = {
        "prompt": prompt.messages(),
        "completion": [{"role": "assistant", "content": target}],
    }
    if enable_thinking is not None:
        example["chat_template_kwargs"] = {"enable_thinking": bool(enable_thinking)}
    return example

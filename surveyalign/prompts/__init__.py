"""Judge prompt protocol of SurveyReview App. C: templates, SFT examples and the answer parser.

Public surface::

    from surveyalign.prompts import (
        build_judge_prompt, format_target, build_sft_example, parse_judgement, parse_generation, render_chat,
        fit_survey_text, count_chat_tokens, ParsedAnswer, JudgePrompt, PROTOCOLS, Protocol, DEFAULT_PROTOCOL, RUBRICS,
    )

Training (SFT/DPO data) and evaluation both build prompts with :func:`build_judge_prompt`, so the two can
never drift apart; :func:`parse_judgement` is the only reader of judge answer texts and :func:`parse_generation`
the only reader of generated answers (a truncated or refused answer is never scored); :func:`fit_survey_text`
with :func:`count_chat_tokens` is the only length rule. :func:`read_json_answer` is the one reader of a JSON
object in an LLM answer (autoraters, PRISM extraction).
"""

from surveyalign.backends.chat import (  # chat-template rendering is a backend concern
    chat_template_variables,
    check_template_settings,
    render_chat,
)
from surveyalign.prompts.answers import TRUNCATED, answer_failure, parse_generation
from surveyalign.prompts.builder import (
    JudgePrompt,
    build_judge_prompt,
    build_sft_example,
    format_target,
    validate_score,
)
from surveyalign.prompts.json_answer import JsonAnswer, read_json_answer
from surveyalign.prompts.length import (
    count_chat_tokens,
    fit_survey_text,
)
from surveyalign.prompts.parser import ParsedAnswer, parse_judgement, strip_reasoning
from surveyalign.prompts.protocols import (
    DEFAULT_PROTOCOL,
    PROTOCOLS,
    Protocol,
    get_protocol,
)
from surveyalign.prompts.templates import RUBRICS, TEMPLATE_VERSION, DimensionRubric

__all__ = [
    "DEFAULT_PROTOCOL",
    "PROTOCOLS",
    "RUBRICS",
    "TEMPLATE_VERSION",
    "TRUNCATED",
    "DimensionRubric",
    "JsonAnswer",
    "JudgePrompt",
    "ParsedAnswer",
    "Protocol",
    "answer_failure",
    "build_judge_prompt",
    "build_sft_example",
    "chat_template_variables",
    "check_template_settings",
    "count_chat_tokens",
    "fit_survey_text",
    "format_target",
    "get_protocol",
    "parse_generation",
    "parse_judgement",
    "read_json_answer",
    "render_chat",
    "strip_reasoning",
    "validate_score",
]

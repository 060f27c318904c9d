"""Names and value sets shared by every sub-package (SurveyReview §4, App. A-B)."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any, Literal, get_args

#: A review dimension: one of the four canonical lower-case names (SurveyReview Table 2). A value of this type
#: is parsed once where it enters the program (see :func:`parse_dimension`) and trusted from then on.
Dimension = Literal["readability", "structure", "comprehensiveness", "criticalness"]

#: The four review dimensions, in the order the paper reports them (SurveyReview Table 2).
DIMENSIONS: tuple[Dimension, ...] = get_args(Dimension)

#: Benchmark score space; 0 (not mentioned) and -3 (unjudgeable) are excluded upstream.
VALID_SCORES: tuple[int, ...] = (-2, -1, 1, 2)

#: The judge's answer format per output protocol (SurveyReview App. C; v1.1 from the authors' later release):
#: ``str.format`` templates with ``{rationale}`` and ``{score}``. ``surveyalign.prompts`` builds its protocols
#: on these, and the constant-score backend writes its fixed answer with them.
TARGET_TEMPLATES: dict[str, str] = {
    "v1.0": "{rationale}$$${score}$$$",
    "v1.1": "<reason>{rationale}</reason> <score>{score}</score>",
}

#: Prompt layouts of the judge (:func:`surveyalign.prompts.build_judge_prompt`): ``"app_c"`` is the order printed
#: in SurveyReview App. C (instructions, then the survey; what every adapter is trained on); ``"shared"`` puts the
#: survey first and the dimension's instructions after it, so the prompts of one survey's four dimensions share a
#: prefix a provider's prompt cache (or vLLM's prefix cache) can reuse. Opt-in, for zero-shot judges only.
PROMPT_LAYOUTS: tuple[str, ...] = ("app_c", "shared")

#: Key of a chat message (beside ``role`` / ``content``) giving how many leading characters of its ``content`` are
#: shared with other prompts of the run (the survey block of the ``shared`` layout): an API backend that marks
#: cache breakpoints (Anthropic ``cache_control``) puts one there. Request bodies never carry the key itself.
CACHE_PREFIX_KEY = "cache_prefix_chars"

#: Review sources of SurveyReview (App. A); "unknown" when the release does not say.
SOURCES: tuple[str, ...] = ("f1000", "moprd", "openreview", "unknown")

#: Dataset splits, in release order (SurveyReview §4: paper-level, source-stratified split).
SPLITS: tuple[str, ...] = ("train", "validation", "test")

#: Unit status: a score was read from the judge's answer (after the K-sample vote).
SCORED = "scored"
#: Unit status: the judge answered but no valid score could be read from any sample.
PARSE_FAILED = "parse_failed"
#: Unit status: every call of the unit failed at the backend (transport, server or model error).
API_ERROR = "api_error"
#: Unit status: never sent, because the prompt cannot fit the token budget (``max_length``) or the model context
#: even with the survey body shortened by the length rule (``surveyalign.prompts.fit_survey_text``).
PROMPT_TOO_LONG = "prompt_too_long"
#: Unit status: never sent, because the unit has no survey text.
MISSING_TEXT = "missing_text"
#: Unit status of an imported run (``surveyalign import-scores``): the outside evaluator's output holds no score
#: for the unit's paper and dimension (SurveyReview App. H prior evaluators).
MISSING = "missing"
#: Every unit status, in report order (``predictions.jsonl`` ``status``; the strict convention scores none of the
#: failed ones; the authors' convention counts ``parse_failed`` as a prediction of 0 and drops the last four).
STATUSES: tuple[str, ...] = (SCORED, PARSE_FAILED, API_ERROR, PROMPT_TOO_LONG, MISSING_TEXT, MISSING)

#: Names of options, arguments and environment variables whose values are credentials (never written out).
SECRET_NAME = re.compile(r"(api[_-]?key|token|secret|password|authori[sz]ation|header|cookie)", re.IGNORECASE)

#: BibTeX of SurveyReview, cited by the evaluate modules in ``metrics/`` and the cards.
SURVEYREVIEW_CITATION = """\
@inproceedings{surveyreview2026,
  title     = {SurveyReview: A Reviewer-Aligned Benchmark for Survey Evaluators},
  booktitle = {Proceedings of the 32nd ACM SIGKDD Conference on Knowledge Discovery and Data Mining (KDD '26)},
  year      = {2026},
  doi       = {10.1145/3770855.3817505}
}
"""

#: Largest possible |score difference| on the benchmark scale (HAS Delta_s, §3).
DELTA_S: float = 4.0


def parse_dimension(name: object) -> Dimension:
    """Parse a dimension name given by a person into the typed :data:`Dimension` (the one normaliser).

    Called only by the three edge parsers, where a dimension enters the program:
    ``surveyalign.argtypes.dimension_value`` (command-line flags), ``surveyalign.yamlconfig.DimensionName``
    (YAML / pydantic configs and recipe YAMLs) and ``surveyalign.data.schema.row_dimension`` (dataset rows,
    prediction records, score columns). Everything inside takes a :data:`Dimension` and does not parse it again
    (``tests/test_dimension_edges.py`` counts the call sites).

    Args:
        name: a dimension name in any case and with surrounding spaces, e.g. "Readability" or " CRITICALNESS".

    Returns:
        One of :data:`DIMENSIONS`.

    Raises:
        ValueError: if ``name`` is not one of the four SurveyReview dimensions, in one line naming the value and
            the valid names (``unknown dimension 'novelty'; expected one of readability, ...``).
    """
    key = str(name).strip().lower()
    if key not in DIMENSIONS:
        raise ValueError(f"unknown dimension {name!r}; expected one of {', '.join(DIMENSIONS)}")
    return key  # type: ignore[return-value]  # checked against DIMENSIONS just above


def count_statuses(records: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """Count records per unit status.

    Args:
        records: prediction records, each with a ``status`` (one of :data:`STATUSES`).

    Returns:
        ``{status: n for every status in STATUSES} | {"total": number of records}``; a status outside
        :data:`STATUSES` is only in ``total``.
    """
    records = list(records)
    counter = Counter(r["status"] for r in records)
    counts = {s: counter.get(s, 0) for s in STATUSES}
    counts["total"] = len(records)
    return counts

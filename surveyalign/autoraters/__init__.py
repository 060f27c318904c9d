"""surveyalign.autoraters: the four PaperOrchestra autoraters (PaperOrchestra §5, App. F.3).

Public surface:

- :func:`citation_f1` (variants ``seed`` / ``official``, :data:`CITATION_F1_VARIANTS`) over P0/P1 partitions
  of resolved reference ids; :func:`rate_citation_f1` runs the partition prompts and resolution around it.
- :func:`sxs_outcome` (rules ``seed`` / ``official3`` / ``official5``, :data:`SXS_RULES`),
  :func:`position_flip_rate`; :func:`rate_sxs` runs the order-swapped side-by-side calls (paper or literature
  review).
- :func:`parse_litreview` / :func:`check_litreview` (pydantic validation, weighted-score recomputation, cap
  checks); :func:`rate_litreview` runs the six-axis literature-review quality prompt.
- :func:`parse_partition`, :func:`parse_sxs`, :func:`read_json_answer`: the strict answer readers.
- :func:`extract_review_sections`: Introduction + Related Work by heading similarity.
- the prompt builders and :data:`PROMPT_VERSION`; the rubric data in :mod:`surveyalign.autoraters.rubric`.

CLI: ``surveyalign autorate citation-f1|litreview|sxs-paper|sxs-litreview``.
"""

from surveyalign.autoraters.calls import (
    AutoraterJudge,
    AutoraterRole,
    CallAnswer,
    PromptCall,
)
from surveyalign.autoraters.citation_f1 import (
    CITATION_F1_VARIANTS,
    CitationF1,
    CitationScore,
    SideSummary,
    citation_f1,
    citation_f1_by_pair,
)
from surveyalign.autoraters.length import FittedPrompt, fit_prompt
from surveyalign.autoraters.litreview import (
    LitReviewCheck,
    LitReviewJudgement,
    LitReviewParse,
    Violation,
    check_litreview,
    parse_litreview,
)
from surveyalign.autoraters.parsing import (
    JsonAnswer,
    PartitionParse,
    SxSParse,
    parse_partition,
    parse_sxs,
    read_json_answer,
)
from surveyalign.autoraters.prompts import (
    PROMPT_VERSION,
    SXS_KEYS,
    build_litreview_messages,
    build_partition_messages,
    build_sxs_messages,
    litreview_system,
)
from surveyalign.autoraters.raters import (
    NumberedReference,
    PaperText,
    rate_citation_f1,
    rate_litreview,
    rate_sxs,
)
from surveyalign.autoraters.rubric import (
    AXES,
    AXIS_WEIGHTS,
    DEFAULT_AVERAGE_CITATIONS,
    VENUE_AVERAGE_CITATIONS,
)
from surveyalign.autoraters.sections import (
    SectionSelection,
    TakenSection,
    extract_review_sections,
)
from surveyalign.autoraters.sxs import (
    FAILED,
    OUTCOMES,
    SXS_RULES,
    FlipRate,
    SxSOutcome,
    position_flip_rate,
    sxs_outcome,
)

__all__ = [
    "AXES",
    "AXIS_WEIGHTS",
    "CITATION_F1_VARIANTS",
    "DEFAULT_AVERAGE_CITATIONS",
    "FAILED",
    "OUTCOMES",
    "PROMPT_VERSION",
    "SXS_KEYS",
    "SXS_RULES",
    "VENUE_AVERAGE_CITATIONS",
    "AutoraterJudge",
    "AutoraterRole",
    "CallAnswer",
    "CitationF1",
    "CitationScore",
    "FittedPrompt",
    "FlipRate",
    "JsonAnswer",
    "LitReviewCheck",
    "LitReviewJudgement",
    "LitReviewParse",
    "NumberedReference",
    "PaperText",
    "PartitionParse",
    "PromptCall",
    "SectionSelection",
    "SideSummary",
    "SxSOutcome",
    "SxSParse",
    "TakenSection",
    "Violation",
    "build_litreview_messages",
    "build_partition_messages",
    "build_sxs_messages",
    "check_litreview",
    "citation_f1",
    "citation_f1_by_pair",
    "extract_review_sections",
    "fit_prompt",
    "litreview_system",
    "parse_litreview",
    "parse_partition",
    "parse_sxs",
    "position_flip_rate",
    "rate_citation_f1",
    "rate_litreview",
    "rate_sxs",
    "read_json_answer",
    "sxs_outcome",
]

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

import lazy_loader

# Every submodule loads on first use (lazy_loader), so the CLI's `--help` imports none of them.
__getattr__ = lazy_loader.attach(
    __name__,
    submodules=["calls", "length", "litreview", "parsing", "prompts", "raters", "rubric",
                "sections", "sxs"],
    submod_attrs={
        "calls": ["AutoraterJudge", "AutoraterRole", "CallAnswer", "PromptCall"],
        "length": ["FittedPrompt", "fit_prompt"],
        "litreview": ["LitReviewCheck", "LitReviewJudgement", "LitReviewParse", "Violation",
                      "check_litreview", "parse_litreview"],
        "parsing": ["JsonAnswer", "PartitionParse", "SxSParse", "parse_partition", "parse_sxs",
                    "read_json_answer"],
        "prompts": ["PROMPT_VERSION", "SXS_KEYS", "build_litreview_messages", "build_partition_messages",
                    "build_sxs_messages", "litreview_system"],
        "raters": ["NumberedReference", "PaperText", "litreview_prompt_calls", "rate_citation_f1", "rate_litreview",
                   "rate_sxs", "sxs_prompt_calls"],
        "rubric": ["AXES", "AXIS_WEIGHTS", "DEFAULT_AVERAGE_CITATIONS", "VENUE_AVERAGE_CITATIONS"],
        "sections": ["SectionSelection", "TakenSection", "extract_review_sections"],
        "sxs": ["FAILED", "FlipRate", "OUTCOMES", "SXS_RULES", "SxSOutcome", "position_flip_rate",
                "sxs_outcome"],
    })[0]

# `citation_f1` names both a submodule and its function: importing the submodule (lazily, from anywhere) would
# rebind the package attribute to the module, so the function is bound here, once, after the submodule
# (a light module: standard library only). tests/test_lazy_faces.py holds this for every package.
from surveyalign.autoraters.citation_f1 import (
    CITATION_F1_VARIANTS,
    CitationF1,
    CitationScore,
    SideSummary,
    citation_f1,
    citation_f1_by_pair,
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
    "litreview_prompt_calls",
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
    "sxs_prompt_calls",
]

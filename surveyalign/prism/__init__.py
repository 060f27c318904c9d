"""surveyalign.prism: PRISM review-quality metrics (depth of analysis, novelty verification, flaw recall and
prioritisation, constructiveness), from extracted units to scores.

Public surface:

- units: :class:`ADU`, :class:`NoveltyClaim`, :class:`PairVerdict`, :class:`Flaw`, :class:`RankedCritique`,
  :class:`ReviewComment` and the label sets (:data:`ASPECTS`, :data:`STANCES`, :data:`SEVERITY_WEIGHTS`, ...);
- formulas: :func:`depth_of_analysis`, :func:`claim_score` / :data:`CLAIM_POLICIES`, :func:`novelty_scores`,
  :func:`flaw_recall`, :func:`ncps` / :func:`quote_position`, :func:`constructiveness`, and their column forms
  (``*_by_review``) behind ``metrics/prism``;
- inputs: :class:`Submission`, :class:`Review`, :func:`read_paper`, :func:`read_reviews` (OpenReview JSON, JATS
  referee reports, plain text);
- extraction: :class:`Extractor` (shared backends + call cache), :func:`extract_units`, :class:`ExtractionLog`,
  the prompts (:func:`build_messages`, :data:`GROUNDING_RUBRICS`) and strict parsers (``parse_*``);
- novelty retrieval: :class:`PriorWorkSearch` (prior-only filter, de-duplication, MMR, cache);
- a run: :class:`PrismConfig`, :func:`run_prism`, :func:`score_reviews`, :func:`comparison_rows`,
  :data:`REFERENCE_FIGURES`.

CLI: ``surveyalign prism PAPER REVIEWS... --judge CONFIG``.
"""

import lazy_loader

# Every submodule loads on first use (lazy_loader): ``surveyalign prism --help`` imports none of them (the
# extraction calls pull in httpx and the backends, the readers lxml, the prior-work retrieval scikit-learn).
__getattr__ = lazy_loader.attach(
    __name__,
    submodules=["calls", "columns", "depth", "flaws", "inputs", "novelty", "parsing",
                "pipeline", "prompts", "readers", "report", "retrieval", "run", "units"],
    submod_attrs={
        "calls": ["CallRequest", "Extractor"],
        "columns": ["constructiveness_by_review", "depth_by_review", "flaws_by_reviewer", "mean_over_reviews",
                    "novelty_by_review", "prioritisation_by_review"],
        "depth": ["depth_of_analysis", "harmonic_mean"],
        "flaws": ["FUZZY_MIN_RATIO", "cps", "flaw_recall", "ncps", "quote_position"],
        "inputs": ["PaperSection", "REVIEW_SOURCES", "Review", "Submission"],
        "novelty": ["CLAIM_POLICIES", "claim_score", "novelty_scores"],
        "parsing": ["Parsed", "parse_adus", "parse_claims", "parse_comments", "parse_flaws", "parse_groups",
                    "parse_json_object", "parse_validation", "parse_verdict"],
        "pipeline": ["ExtractionLog", "PaperUnits", "PriorPaper", "PriorWorkRetriever", "extract_units"],
        "prompts": ["GROUNDING_RUBRICS", "STAGES", "build_messages", "stage_of"],
        "readers": ["SECTION_ALIASES", "ReviewFile", "read_paper", "read_reviews", "split_review_sections"],
        "report": ["HEADLINE_METRICS", "REFERENCE_FIGURES", "comparison_rows", "format_comparison",
                   "hidden_records", "score_reviews", "write_run"],
        "retrieval": ["PriorWorkSearch", "is_prior", "mmr_select"],
        "run": ["NoveltyConfig", "PrismConfig", "PrismRun", "run_prism"],
        "units": ["ADU", "ASPECTS", "COMMENT_TYPES", "CONSTRUCTIVENESS_AXES", "Flaw", "GROUNDING_LEVELS",
                  "GROUNDING_MAX", "NoveltyClaim", "PairVerdict", "REVIEW_SECTIONS", "ROLES",
                  "RankedCritique", "ReviewComment", "SEVERITY_WEIGHTS", "STANCES", "VERDICT_SCORES"],
    })[0]

# `constructiveness` names both a submodule and its function: importing the submodule (lazily, from anywhere) would
# rebind the package attribute to the module, so the function is bound here, once, after the submodule
# (a light module: standard library only). tests/test_lazy_faces.py holds this for every package.
from surveyalign.prism.constructiveness import CONSTRUCTIVE_MIN_SCORE, constructiveness

__all__ = [
    "ADU",
    "ASPECTS",
    "CLAIM_POLICIES",
    "COMMENT_TYPES",
    "CONSTRUCTIVENESS_AXES",
    "CONSTRUCTIVE_MIN_SCORE",
    "FUZZY_MIN_RATIO",
    "GROUNDING_LEVELS",
    "GROUNDING_MAX",
    "GROUNDING_RUBRICS",
    "HEADLINE_METRICS",
    "REFERENCE_FIGURES",
    "REVIEW_SECTIONS",
    "REVIEW_SOURCES",
    "ROLES",
    "SECTION_ALIASES",
    "SEVERITY_WEIGHTS",
    "STAGES",
    "STANCES",
    "VERDICT_SCORES",
    "CallRequest",
    "ExtractionLog",
    "Extractor",
    "Flaw",
    "NoveltyClaim",
    "NoveltyConfig",
    "PairVerdict",
    "PaperSection",
    "PaperUnits",
    "Parsed",
    "PriorPaper",
    "PriorWorkRetriever",
    "PriorWorkSearch",
    "PrismConfig",
    "PrismRun",
    "RankedCritique",
    "Review",
    "ReviewComment",
    "ReviewFile",
    "Submission",
    "build_messages",
    "claim_score",
    "comparison_rows",
    "constructiveness",
    "constructiveness_by_review",
    "cps",
    "depth_by_review",
    "depth_of_analysis",
    "extract_units",
    "flaw_recall",
    "flaws_by_reviewer",
    "format_comparison",
    "hidden_records",
    "harmonic_mean",
    "is_prior",
    "mean_over_reviews",
    "mmr_select",
    "ncps",
    "novelty_by_review",
    "novelty_scores",
    "parse_adus",
    "parse_claims",
    "parse_comments",
    "parse_flaws",
    "parse_groups",
    "parse_json_object",
    "parse_validation",
    "parse_verdict",
    "prioritisation_by_review",
    "quote_position",
    "read_paper",
    "read_reviews",
    "run_prism",
    "score_reviews",
    "split_review_sections",
    "stage_of",
    "write_run",
]

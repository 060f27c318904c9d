"""surveyalign.prism: PRISM review-quality metrics (depth of analysis, novelty verification, flaw recall and
prioritisation, constructiveness), from extracted units to scores.

Public surface:

- units: :class:`ADU`, :class:`NoveltyClaim`, :class:`PairVerdict`, :class:`Flaw`, :class:`RankedCritique`,
  :class:`ReviewComment` and the label sets (:data:`ASPECTS`, :data:`STANCES`, :data:`SEVERITY_WEIGHTS`, ...);
- formulas: :func:`depth_of_analysis`, :func:`claim_score` / :data:`CLAIM_POLICIES`, :func:`novelty_scores`,
  :func:`flaw_recall`, :func:`ncps` / :func:`quote_position`, :func:`constructiveness`.
"""

from surveyalign.prism.columns import (
    constructiveness_by_review,
    depth_by_review,
    flaws_by_reviewer,
    mean_over_reviews,
    novelty_by_review,
    prioritisation_by_review,
)
from surveyalign.prism.constructiveness import CONSTRUCTIVE_MIN_SCORE, constructiveness
from surveyalign.prism.depth import depth_of_analysis, harmonic_mean
from surveyalign.prism.flaws import (
    FUZZY_MIN_RATIO,
    cps,
    flaw_recall,
    ncps,
    quote_position,
)
from surveyalign.prism.novelty import CLAIM_POLICIES, claim_score, novelty_scores
from surveyalign.prism.units import (
    ADU,
    ASPECTS,
    COMMENT_TYPES,
    CONSTRUCTIVENESS_AXES,
    GROUNDING_LEVELS,
    GROUNDING_MAX,
    REVIEW_SECTIONS,
    ROLES,
    SEVERITY_WEIGHTS,
    STANCES,
    VERDICT_SCORES,
    Flaw,
    NoveltyClaim,
    PairVerdict,
    RankedCritique,
    ReviewComment,
)

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
    "REVIEW_SECTIONS",
    "ROLES",
    "SEVERITY_WEIGHTS",
    "STANCES",
    "VERDICT_SCORES",
    "Flaw",
    "NoveltyClaim",
    "PairVerdict",
    "RankedCritique",
    "ReviewComment",
    "claim_score",
    "constructiveness",
    "constructiveness_by_review",
    "cps",
    "depth_by_review",
    "depth_of_analysis",
    "flaw_recall",
    "flaws_by_reviewer",
    "harmonic_mean",
    "mean_over_reviews",
    "ncps",
    "novelty_by_review",
    "novelty_scores",
    "prioritisation_by_review",
    "quote_position",
]

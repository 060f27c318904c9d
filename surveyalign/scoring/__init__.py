"""surveyalign.scoring: the metrics of SurveyReview (MSE/MAE, RQS, HAS; §3, §6.1, App. G) plus the
figures the paper leaves out (training-label baselines, chance-corrected agreement, paper-level
bootstrap intervals and paired tests), the human ceiling (``ceiling.py``: one review against the other reviews of
the same paper), juries and rankings across RQS judges (``jury.py``, App. I.4), the meta-evaluation of the RQS
judge (``metaeval.py``, App. I.2), drift between two runs of one judge (``drift.py``), run summaries and leaderboard tables (``surveyalign/scoring/summary.py``).
"""

from surveyalign.scoring.baselines import (
    baseline_metrics,
    check_train_scores,
    majority_label,
    score_distribution,
)
from surveyalign.scoring.bootstrap import (
    INSUFFICIENT_DATA,
    MIN_BOOTSTRAP_PAPERS,
    bootstrap_intervals,
    paired_bootstrap,
)
from surveyalign.scoring.calibration import expected_calibration_error, vote_summary
from surveyalign.scoring.ceiling import (
    CEILING_NAME,
    ceiling_reviews,
    compare_to_ceiling,
    human_ceiling,
)
from surveyalign.scoring.corpus import aggregate_over_papers
from surveyalign.scoring.drift import drift_statistics, identity_differences
from surveyalign.scoring.jury import (
    JURY_METHODS,
    combine_votes,
    kendall_tau,
    multi_judge_rankings,
)
from surveyalign.scoring.metaeval import (
    MIN_META_PAIRS,
    PAPER_META_EVAL,
    meta_evaluate,
    pearson,
    read_ratings,
    spearman,
)
from surveyalign.scoring.metrics import (
    agreement_statistics,
    alignment_errors,
    check_scores,
    human_aligned_score,
    krippendorff_alpha_interval,
    macro_mae,
    quadratic_weighted_kappa,
    reason_quality,
)
from surveyalign.scoring.records import validate_records
from surveyalign.scoring.registry import register_metrics
from surveyalign.scoring.report import (
    read_predictions,
    render_agreement,
    render_baselines,
    render_ceiling,
    render_ceiling_comparison,
    render_comparison,
    render_costs,
    render_failures,
    render_intervals,
    render_leaderboard,
    render_per_source,
    render_voting,
)
from surveyalign.scoring.summary import summarize_predictions

__all__ = [
    "CEILING_NAME",
    "INSUFFICIENT_DATA",
    "JURY_METHODS",
    "MIN_BOOTSTRAP_PAPERS",
    "MIN_META_PAIRS",
    "PAPER_META_EVAL",
    "aggregate_over_papers",
    "agreement_statistics",
    "alignment_errors",
    "baseline_metrics",
    "bootstrap_intervals",
    "ceiling_reviews",
    "check_scores",
    "check_train_scores",
    "combine_votes",
    "compare_to_ceiling",
    "drift_statistics",
    "expected_calibration_error",
    "human_aligned_score",
    "human_ceiling",
    "identity_differences",
    "kendall_tau",
    "krippendorff_alpha_interval",
    "macro_mae",
    "majority_label",
    "meta_evaluate",
    "multi_judge_rankings",
    "paired_bootstrap",
    "pearson",
    "quadratic_weighted_kappa",
    "read_predictions",
    "read_ratings",
    "reason_quality",
    "register_metrics",
    "render_agreement",
    "render_baselines",
    "render_ceiling",
    "render_ceiling_comparison",
    "render_comparison",
    "render_costs",
    "render_failures",
    "render_intervals",
    "render_leaderboard",
    "render_per_source",
    "render_voting",
    "score_distribution",
    "spearman",
    "summarize_predictions",
    "validate_records",
    "vote_summary",
]

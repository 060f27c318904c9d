"""surveyalign.scoring: the metrics of SurveyReview (MSE/MAE, RQS, HAS; §3, §6.1, App. G) plus the
figures the paper leaves out (training-label baselines, chance-corrected agreement, paper-level
bootstrap intervals and paired tests), the human ceiling (``ceiling.py``: one review against the other reviews of
the same paper), run summaries and leaderboard tables (``surveyalign/scoring/summary.py``).
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
    "MIN_BOOTSTRAP_PAPERS",
    "agreement_statistics",
    "alignment_errors",
    "baseline_metrics",
    "bootstrap_intervals",
    "ceiling_reviews",
    "check_scores",
    "check_train_scores",
    "compare_to_ceiling",
    "expected_calibration_error",
    "human_aligned_score",
    "human_ceiling",
    "krippendorff_alpha_interval",
    "macro_mae",
    "majority_label",
    "paired_bootstrap",
    "quadratic_weighted_kappa",
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
    "summarize_predictions",
    "validate_records",
    "vote_summary",
]

"""SurveyReview Human-aligned Score (HAS) as an `evaluate` metric.

A thin wrapper over :func:`surveyalign.scoring.summary.unit_has` (``alignment_errors``, ``reason_quality`` and
``human_aligned_score``; SurveyReview §3 Eq. 2-8). The authors' results table calls the same score SSR:
``evaluate.load("metrics/ssr")`` is this module under that name.
"""

import datasets
import evaluate

from surveyalign.constants import SURVEYREVIEW_CITATION
from surveyalign.scoring.summary import unit_has

_DESCRIPTION = """\
Human-aligned Score of SurveyReview. The mean errors over dimensions are turned into alignment scores
A_MSE = 1 - AVGMSE / delta_s^2 and A_MAE = 1 - AVGMAE / delta_s (delta_s = 4, the largest score gap on
{-2, -1, +1, +2}), combined as Align = alpha1 * A_MSE + alpha2 * A_MAE, and HAS = beta1 * Align +
beta2 * RQS, with the paper's defaults alpha = (0.4, 0.6) and beta = (0.75, 0.25). Without consistency
ratings there is no RQS: HAS is then None and has_note says so (Align is still given). Failed units
(prediction None) are counted and left out of MSE/MAE, never scored as 0.
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions (`list` of `int` or `None`): the judge's score of each unit; None for a failed unit.
    references (`list` of `int`): the human score of each unit.
    dimensions (`list` of `str`): the dimension of each unit (any case).
    consistency (`list` of `float` or `None`): rationale-consistency rating of each unit in [0, 1] (None where
        missing). A run without a consistency stage loads the config without it:
        `evaluate.load("has", "no_consistency")`.
    alpha (`tuple` of two `float`, optional): weights of (A_MSE, A_MAE); default (0.4, 0.6). Non-negative, sum 1.
    beta (`tuple` of two `float`, optional): weights of (Align, RQS); default (0.75, 0.25). Non-negative, sum 1.
    delta_s (`float`, optional): largest possible score difference; default 4.0.

Returns:
    has (`float` or `None`): the Human-aligned Score (<= 1); None without RQS (see has_note).
    has_note (`str` or `None`): why HAS is None.
    align, a_mse, a_mae (`float` or `None`): the alignment parts.
    rqs (`float` or `None`): Reason Quality Score in [0, 1].
    avg_mse, avg_mae (`float` or `None`): mean per-dimension errors.
    accuracy (`float` or `None`): share of scored units whose score equals the human score (mean over dimensions).
    n, n_scored, n_failed (`int`): units given, scored, failed.
    per_dimension (`dict`): the per-dimension entries of survey_alignment, plus rq.
    weights (`dict`): alpha, beta, delta_s used.

Examples:

    Load by path from the repository root (or by bare name after `surveyalign metrics register`):

    >>> import evaluate
    >>> has = evaluate.load("metrics/has")
    >>> results = has.compute(
    ...     predictions=[-1, 1, -1, -2],
    ...     references=[-1, -1, -1, -2],
    ...     dimensions=["readability", "readability", "structure", "structure"],
    ...     consistency=[0.6, 0.0, 0.8, 1.0],
    ... )
    >>> results["avg_mse"], results["avg_mae"], round(results["rqs"], 4)
    (1.0, 0.5, 0.6)
    >>> round(results["align"], 4), round(results["has"], 4)
    (0.9, 0.825)

    Weights are compute arguments (here Table 8's beta_RQS = 0.40):

    >>> round(has.compute(predictions=[-1, 1, -1, -2], references=[-1, -1, -1, -2],
    ...                   dimensions=["readability"] * 2 + ["structure"] * 2,
    ...                   consistency=[0.6, 0.0, 0.8, 1.0], beta=(0.6, 0.4))["has"], 4)
    0.78

    Without consistency ratings HAS is not invented:

    >>> plain = evaluate.load("metrics/has", "no_consistency").compute(
    ...     predictions=[-1, 1, None], references=[-1, -1, 1], dimensions=["readability"] * 3)
    >>> plain["has"] is None, round(plain["align"], 4), plain["n_failed"]
    (True, 0.8, 1)
    >>> plain["has_note"]
    'no rationale-consistency scores: RQS unavailable, so HAS is not computed (Align is)'
"""


_BASE_FEATURES = {
    "predictions": datasets.Value("float64"),  # float: NaN reaches the checks of surveyalign.scoring
    "references": datasets.Value("float64"),
    "dimensions": datasets.Value("string"),
}


#: Config names: ``"default"`` takes a ``consistency`` column (RQS and HAS), ``"no_consistency"`` does not (Align).
CONFIGS = ("default", "no_consistency")


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class HumanAlignedScore(evaluate.Metric):
    """SurveyReview HAS; ``evaluate.load("has", "no_consistency")`` for a run without rationale-consistency
    ratings (then HAS is None and Align is given)."""

    def _info(self):
        if self.config_name not in CONFIGS:
            raise ValueError(f"has: unknown config {self.config_name!r}; choose one of {', '.join(CONFIGS)}")
        features = {
            "predictions": datasets.Value("float64"),  # float: NaN reaches the checks of surveyalign.scoring
            "references": datasets.Value("float64"),
            "dimensions": datasets.Value("string"),
        }
        if self.config_name == "default":
            features["consistency"] = datasets.Value("float64")
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=SURVEYREVIEW_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features(features),
            reference_urls=["https://surveyreview.github.io"],
        )

    def _compute(self, predictions, references, dimensions, consistency=None, alpha=(0.4, 0.6), beta=(0.75, 0.25),
                 delta_s=4.0):
        return unit_has(predictions, references, dimensions, consistency, alpha=alpha, beta=beta, delta_s=delta_s)

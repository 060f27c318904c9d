"""SSR: the SurveyReview Human-aligned Score (HAS) under the name the authors' results table gives it.

The same score as the ``has`` module (:func:`surveyalign.scoring.summary.unit_has`, SurveyReview §3 Eq. 2-8); the
result also carries it under ``ssr``.
"""

import datasets
import evaluate

from surveyalign.constants import SURVEYREVIEW_CITATION
from surveyalign.scoring.summary import unit_has

_DESCRIPTION = """\
SSR is the name the SurveyReview authors' results table gives the Human-aligned Score (HAS): Align (from the
normalised AVGMSE and AVGMAE, weights alpha = (0.4, 0.6)) and RQS combined as HAS = beta1 * Align + beta2 * RQS
with beta = (0.75, 0.25). This module computes exactly what `has` computes and returns it as both `ssr` and
`has`. Without consistency ratings there is no RQS: SSR is then None and has_note says so.
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions (`list` of `int` or `None`): the judge's score of each unit; None for a failed unit.
    references (`list` of `int`): the human score of each unit.
    dimensions (`list` of `str`): the dimension of each unit (any case).
    consistency (`list` of `float` or `None`): rationale-consistency rating of each unit in [0, 1]; a run without
        a consistency stage loads `evaluate.load("ssr", "no_consistency")`.
    alpha, beta (`tuple` of two `float`, optional): HAS weights (non-negative, each pair summing to 1).
    delta_s (`float`, optional): largest possible score difference; default 4.0.

Returns:
    ssr (`float` or `None`): the score (= has); every other key of the `has` module (has, has_note, align, a_mse,
    a_mae, rqs, avg_mse, avg_mae, accuracy, n, n_scored, n_failed, per_dimension, weights).

Examples:

    >>> import evaluate
    >>> ssr = evaluate.load("metrics/ssr")
    >>> results = ssr.compute(
    ...     predictions=[-1, 1, -1, -2],
    ...     references=[-1, -1, -1, -2],
    ...     dimensions=["readability", "readability", "structure", "structure"],
    ...     consistency=[0.6, 0.0, 0.8, 1.0],
    ... )
    >>> round(results["ssr"], 4), results["ssr"] == results["has"]
    (0.825, True)
    >>> round(results["align"], 4), round(results["rqs"], 4), results["accuracy"]
    (0.9, 0.6, 0.75)

    Weights as compute arguments (Align and RQS weighted equally):

    >>> round(ssr.compute(predictions=[-1, 1, -1, -2], references=[-1, -1, -1, -2],
    ...                   dimensions=["readability"] * 2 + ["structure"] * 2,
    ...                   consistency=[0.6, 0.0, 0.8, 1.0], beta=(0.5, 0.5))["ssr"], 4)
    0.75
"""

CONFIGS = ("default", "no_consistency")


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class SurveyScoreSSR(evaluate.Metric):
    """SurveyReview HAS under its other name, SSR; ``evaluate.load("ssr", "no_consistency")`` without ratings."""

    def _info(self):
        if self.config_name not in CONFIGS:
            raise ValueError(f"ssr: unknown config {self.config_name!r}; choose one of {', '.join(CONFIGS)}")
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
        out = unit_has(predictions, references, dimensions, consistency, alpha=alpha, beta=beta, delta_s=delta_s)
        return {"ssr": out["has"], **out}

"""SurveyReview Reason Quality Score (RQ per dimension, RQS) as an `evaluate` metric.

A thin wrapper over :func:`surveyalign.scoring.reason_quality` (SurveyReview §3 Eq. 4-5, App. G).
"""

import datasets
import evaluate

from surveyalign.constants import SURVEYREVIEW_CITATION
from surveyalign.scoring import reason_quality

_DESCRIPTION = """\
Reason Quality Score of SurveyReview: a consistency judge (GPT-5.2 in the paper) rates how well each
predicted rationale agrees with the human rationale, on {0.0, 0.2, 0.4, 0.6, 0.8, 1.0}. RQ is the mean
rating within a dimension, RQS the unweighted mean of RQ over dimensions. The metric takes the ratings
(it does not call a judge). A rating of 0.0 is a valid, bad rating; None marks a unit without a rating
and is counted in n_failed. convention="authors" reproduces the authors' code, which drops 0.0
ratings, for comparison only.
"""

_KWARGS_DESCRIPTION = """
Args:
    consistency (`list` of `float` or `None`): the consistency rating of each unit, in [0, 1]; None
        when the unit has none.
    dimensions (`list` of `str`): the dimension of each unit (any case).
    convention (`str`, optional): "strict" (default) or "authors" (0.0 ratings are dropped).

Returns:
    rqs (`float` or `None`): mean over dimensions of RQ, in [0, 1]; None when no unit has a rating.
    rqs_dimensions (`list` of `str`): the dimensions averaged.
    per_dimension (`dict`): {dimension: {rq, n, n_scored, n_failed}}.

Examples:

    Load by path from the repository root (or by bare name after `surveyalign metrics register`):

    >>> import evaluate
    >>> rqs = evaluate.load("metrics/rqs")
    >>> results = rqs.compute(
    ...     consistency=[0.6, 0.0, 0.8, None],
    ...     dimensions=["readability", "readability", "structure", "structure"],
    ... )
    >>> round(results["per_dimension"]["readability"]["rq"], 4), results["per_dimension"]["structure"]["rq"]
    (0.3, 0.8)
    >>> results["per_dimension"]["structure"]["n_failed"], round(results["rqs"], 4)
    (1, 0.55)

    The authors' code drops the 0.0 rating (comparison only):

    >>> round(rqs.compute(consistency=[0.6, 0.0, 0.8, None], dimensions=["readability"] * 2 + ["structure"] * 2,
    ...                   convention="authors")["rqs"], 4)
    0.7
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class ReasonQualityScore(evaluate.Metric):
    """SurveyReview RQ per dimension and RQS."""

    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=SURVEYREVIEW_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features(
                {"consistency": datasets.Value("float64"), "dimensions": datasets.Value("string")}
            ),
            reference_urls=["https://surveyreview.github.io"],
        )

    def _compute(self, consistency, dimensions, convention="strict"):
        return reason_quality(consistency, dimensions, convention=convention)

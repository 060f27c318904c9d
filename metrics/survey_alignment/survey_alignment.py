"""SurveyReview score alignment (MSE/MAE per dimension, AVGMSE/AVGMAE) as an `evaluate` metric.

A thin wrapper over :func:`surveyalign.scoring.alignment_errors` (SurveyReview §3, Eq. 2-3).
"""

import datasets
import evaluate

from surveyalign.constants import SURVEYREVIEW_CITATION
from surveyalign.scoring import alignment_errors

_DESCRIPTION = """\
Score alignment between an LLM judge of survey papers and human reviewers on the SurveyReview scale
{-2, -1, +1, +2}: mean squared error and mean absolute error per review dimension (readability,
structure, comprehensiveness, criticalness) and their unweighted means over the dimensions (AVGMSE,
AVGMAE), as in the SurveyReview paper. Per dimension it also reports the macro MAE over the four score
classes, quadratic weighted kappa and Krippendorff's alpha (interval), because a judge that always
answers -1 is already close to the best published MSE/MAE. A prediction of None is a failed unit: it
is counted (n_failed) and left out, never scored as 0. convention="authors" reproduces the authors'
script (a failed answer counts as a prediction of 0) for comparison only.
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions (`list` of `int` or `None`): the judge's score of each unit; None for a failed unit.
    references (`list` of `int`): the human score of each unit.
    dimensions (`list` of `str`): the dimension of each unit (any case).
    convention (`str`, optional): "strict" (default) or "authors" (None counts as a prediction of 0).

Returns:
    avg_mse (`float` or `None`): mean over dimensions of the per-dimension MSE, in [0, 16].
    avg_mae (`float` or `None`): mean over dimensions of the per-dimension MAE, in [0, 4].
    avg_dimensions (`list` of `str`): the dimensions averaged.
    per_dimension (`dict`): {dimension: {n, n_scored, n_failed, mse, mae, macro_mae, qwk,
        krippendorff_alpha, notes}}; an undefined statistic is None and notes says why.
    convention (`str`): the convention used.

Examples:

    Load by path from the repository root (or by bare name after `surveyalign metrics register`):

    >>> import evaluate
    >>> metric = evaluate.load("metrics/survey_alignment")
    >>> results = metric.compute(
    ...     predictions=[-1, 1, None, -2, -1, 2],
    ...     references=[-1, -1, 1, -2, 1, 2],
    ...     dimensions=["readability"] * 3 + ["structure"] * 3,
    ... )
    >>> read = results["per_dimension"]["readability"]
    >>> read["n"], read["n_scored"], read["n_failed"], read["mse"], read["mae"]
    (3, 2, 1, 2.0, 1.0)
    >>> round(results["avg_mse"], 4), round(results["avg_mae"], 4)
    (1.6667, 0.8333)
    >>> round(results["per_dimension"]["structure"]["qwk"], 4)  # 26/29 on the category ranks
    0.8966

    The authors' convention scores the failed unit as a prediction of 0 (comparison only):

    >>> authors = metric.compute(
    ...     predictions=[-1, 1, None], references=[-1, -1, 1], dimensions=["readability"] * 3,
    ...     convention="authors",
    ... )
    >>> round(authors["avg_mse"], 4), authors["avg_mae"], authors["per_dimension"]["readability"]["n_zeroed"]
    (1.6667, 1.0, 1)
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class SurveyAlignment(evaluate.Metric):
    """SurveyReview MSE/MAE per dimension and their means over dimensions."""

    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=SURVEYREVIEW_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features(
                {
                    "predictions": datasets.Value("float64"),  # float: NaN reaches the checks of surveyalign.scoring
                    "references": datasets.Value("float64"),
                    "dimensions": datasets.Value("string"),
                }
            ),
            reference_urls=["https://surveyreview.github.io"],
        )

    def _compute(self, predictions, references, dimensions, convention="strict"):
        return alignment_errors(predictions, references, dimensions, convention=convention)

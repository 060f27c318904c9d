"""SurveyReview as a Hugging Face dataset: release readers, split policies, the release's leak check, card.

Public surface::

    from surveyalign.data import build_dataset, load_surveyreview, sample_release_dir

Heavy libraries (datasets, pyarrow) are imported inside the functions, so importing this package is cheap.
The leakage guard, the verbatim matchers, the JATS reader and the markdown helpers it applies live in
:mod:`surveyalign.documents`; this package keeps the release-specific checks (:mod:`~surveyalign.data.leakcheck`).
"""

from __future__ import annotations

from surveyalign.constants import SPLITS

from .build import BuildResult, build_dataset
from .load import load_surveyreview, load_train_scores, sample_release_dir
from .readers import read_release
from .schema import (
    ALL_CONFIG,
    COLUMNS,
    ReleaseFormatError,
    row_dimension,
    surveyreview_features,
)
from .split import (
    SPLIT_POLICIES,
    as_released_split,
    assign_splits,
    split_counts,
    split_papers,
)

__all__ = [
    "ALL_CONFIG",
    "COLUMNS",
    "SPLITS",
    "SPLIT_POLICIES",
    "BuildResult",
    "ReleaseFormatError",
    "as_released_split",
    "assign_splits",
    "build_dataset",
    "load_surveyreview",
    "load_train_scores",
    "read_release",
    "row_dimension",
    "sample_release_dir",
    "split_counts",
    "split_papers",
    "surveyreview_features",
]

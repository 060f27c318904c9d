"""SurveyReview as a Hugging Face dataset: release readers, paper-level split, leakage guard, card (contract 1).

Public surface::

    from surveyalign.data import build_dataset, load_surveyreview, sample_release_dir, parse_jats

Heavy libraries (datasets, pyarrow) are imported inside the functions, so importing this package is cheap.
"""

from __future__ import annotations

from .build import BuildResult, build_dataset
from .jats import JatsArticle, SubArticle, parse_jats
from .leakage import find_verbatim, strip_review_record
from .load import load_surveyreview, sample_release_dir
from .readers import read_release
from .schema import (
    ALL_CONFIG,
    COLUMNS,
    SPLITS,
    ReleaseFormatError,
    surveyreview_features,
)
from .split import split_papers

__all__ = [
    "ALL_CONFIG",
    "COLUMNS",
    "SPLITS",
    "BuildResult",
    "JatsArticle",
    "ReleaseFormatError",
    "SubArticle",
    "build_dataset",
    "find_verbatim",
    "load_surveyreview",
    "parse_jats",
    "read_release",
    "sample_release_dir",
    "split_papers",
    "strip_review_record",
    "surveyreview_features",
]

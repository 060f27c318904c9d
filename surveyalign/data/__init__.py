"""SurveyReview as a Hugging Face dataset: release readers, split policies, leakage guard, card.

Public surface::

    from surveyalign.data import build_dataset, load_surveyreview, sample_release_dir, parse_jats

Heavy libraries (datasets, pyarrow) are imported inside the functions, so importing this package is cheap.
"""

from __future__ import annotations

import lazy_loader

from surveyalign.constants import SPLITS

from .build import BuildResult, build_dataset
from .leakage import (
    RECORD_KINDS,
    LeakageEdit,
    strip_review_record,
    strip_running_headers,
)
from .load import load_surveyreview, load_train_scores, sample_release_dir
from .readers import read_release
from .schema import (
    ALL_CONFIG,
    COLUMNS,
    ReleaseFormatError,
    surveyreview_features,
)
from .split import split_papers
from .verbatim import (
    MIN_SNIPPET_CHARS,
    NEAR_VERBATIM_THRESHOLD,
    find_verbatim,
    layout_verbatim_hits,
    near_verbatim_hits,
    near_verbatim_scores,
    normalise_for_match,
    verbatim_hits,
)

# The JATS reader loads on first use (lazy_loader), so building the CLI parser does not import lxml.
__getattr__ = lazy_loader.attach(
    __name__,
    submodules=["jats"],
    submod_attrs={"jats": ["JatsArticle", "SubArticle", "parse_jats"]})[0]

__all__ = [
    "ALL_CONFIG",
    "COLUMNS",
    "MIN_SNIPPET_CHARS",
    "NEAR_VERBATIM_THRESHOLD",
    "RECORD_KINDS",
    "SPLITS",
    "BuildResult",
    "JatsArticle",
    "LeakageEdit",
    "ReleaseFormatError",
    "SubArticle",
    "build_dataset",
    "find_verbatim",
    "layout_verbatim_hits",
    "load_surveyreview",
    "load_train_scores",
    "near_verbatim_hits",
    "near_verbatim_scores",
    "normalise_for_match",
    "parse_jats",
    "read_release",
    "sample_release_dir",
    "split_papers",
    "strip_review_record",
    "strip_running_headers",
    "surveyreview_features",
    "verbatim_hits",
]

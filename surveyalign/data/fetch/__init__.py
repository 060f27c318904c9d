"""Fetch the survey texts of a SurveyReview release: resolve, download, convert, guard (SurveyReview §4, App. A).

Public surface::

    from surveyalign.data.fetch import fetch_texts, release_targets, EuropePMC, OpenReview

``surveyalign data fetch-texts --official DIR --out DIR`` runs :func:`fetch_texts`.
"""

from .apis import (
    EUROPEPMC_URL,
    OPENREVIEW_URL,
    OPENREVIEW_V1_URL,
    SOURCE_DOI_PREFIXES,
    Candidate,
    EuropePMC,
    OpenReview,
    doi_version,
)
from .identify import Identification, ReleasePaper, candidates_for, decide, expected_doi
from .pipeline import SHARD_PATTERN, STATUSES, FetchResult, fetch_texts
from .targets import PaperTarget, release_targets

__all__ = [
    "EUROPEPMC_URL",
    "OPENREVIEW_URL",
    "OPENREVIEW_V1_URL",
    "SHARD_PATTERN",
    "SOURCE_DOI_PREFIXES",
    "STATUSES",
    "Candidate",
    "EuropePMC",
    "FetchResult",
    "Identification",
    "OpenReview",
    "PaperTarget",
    "ReleasePaper",
    "candidates_for",
    "decide",
    "doi_version",
    "expected_doi",
    "fetch_texts",
    "release_targets",
]

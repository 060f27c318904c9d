"""Fetch the survey texts of a SurveyReview release: resolve, download, convert, guard (SurveyReview §4, App. A).

Public surface::

    from surveyalign.data.fetch import fetch_texts, release_targets, EuropePMC, OpenReview

``surveyalign data fetch-texts --official DIR --out DIR`` runs :func:`fetch_texts`.
"""

import lazy_loader

from .urls import EUROPEPMC_URL, OPENREVIEW_URL, OPENREVIEW_V1_URL

# The clients, the pipeline and the release readers load on first use (lazy_loader), so building the CLI
# parser does not import lxml or the knowledge clients.
__getattr__ = lazy_loader.attach(
    __name__,
    submodules=["apis", "identify", "pipeline", "targets"],
    submod_attrs={
    "apis": ["SOURCE_DOI_PREFIXES", "Candidate", "EuropePMC", "OpenReview", "doi_version"],
    "identify": ["Identification", "ReleasePaper", "candidates_for", "decide", "expected_doi"],
    "pipeline": ["SHARD_PATTERN", "STATUSES", "FetchResult", "fetch_texts"],
    "targets": ["PaperTarget", "release_targets"]})[0]

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

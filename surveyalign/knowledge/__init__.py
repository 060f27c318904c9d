"""surveyalign.knowledge: knowledge augmentation for the knowledge-intensive dimensions (SurveyReview §5.2, App. F).

Public surface (first part: what other packages reuse):

- :mod:`~surveyalign.knowledge.http`: :class:`PoliteClient` (on-disk cache, rate limit, Retry-After-aware
  retries, keys from the environment), :class:`HTTPStatusError`, :class:`NotFoundError`;
- :mod:`~surveyalign.knowledge.clients`: :class:`SemanticScholarClient`, :class:`OpenAlexClient`;
- :mod:`~surveyalign.knowledge.papers`: the typed :class:`Paper` record;
- :mod:`~surveyalign.knowledge.references`: :class:`Reference`, the reference-list readers and
  :func:`cited_keys`;
- :mod:`~surveyalign.knowledge.resolve`: the safe matching rule :func:`same_paper` and :class:`Resolver`;
- :mod:`~surveyalign.knowledge.testing`: :class:`FakeScholarServer`, a 127.0.0.1 server answering in the
  Semantic Scholar and OpenAlex shapes, for tests.
"""

from surveyalign.knowledge.clients import (
    OPENALEX_URL,
    S2_URL,
    OpenAlexClient,
    ScholarlyClient,
    SemanticScholarClient,
    openalex_work_to_paper,
    s2_paper_to_paper,
)
from surveyalign.knowledge.http import (
    HttpStats,
    HTTPStatusError,
    NotFoundError,
    PoliteClient,
)
from surveyalign.knowledge.papers import (
    REFERENCE_FORMATS,
    REFERENCE_STATUSES,
    Paper,
    Reference,
    ReferenceList,
    first_author_surname,
    normalise_arxiv,
    normalise_doi,
    year_in_text,
)
from surveyalign.knowledge.references import (
    cited_keys,
    parse_bibtex,
    parse_latex_bibliography,
    parse_markdown_references,
    parse_reference_text,
    parse_tei_references,
    read_references,
)
from surveyalign.knowledge.resolve import (
    DEFAULT_MIN_TITLE_SCORE,
    DEFAULT_YEAR_TOLERANCE,
    MIN_ABSTRACT_SCORE,
    MIN_ABSTRACT_WORDS,
    MatchDecision,
    Resolution,
    Resolver,
    normalise_surname,
    normalise_title,
    resolution_counts,
    resolve_by_search,
    same_paper,
)

__all__ = [
    "DEFAULT_MIN_TITLE_SCORE",
    "DEFAULT_YEAR_TOLERANCE",
    "MIN_ABSTRACT_SCORE",
    "MIN_ABSTRACT_WORDS",
    "OPENALEX_URL",
    "REFERENCE_FORMATS",
    "REFERENCE_STATUSES",
    "S2_URL",
    "HTTPStatusError",
    "HttpStats",
    "MatchDecision",
    "NotFoundError",
    "OpenAlexClient",
    "Paper",
    "PoliteClient",
    "Reference",
    "ReferenceList",
    "Resolution",
    "Resolver",
    "ScholarlyClient",
    "SemanticScholarClient",
    "cited_keys",
    "first_author_surname",
    "normalise_arxiv",
    "normalise_doi",
    "normalise_surname",
    "normalise_title",
    "openalex_work_to_paper",
    "parse_bibtex",
    "parse_latex_bibliography",
    "parse_markdown_references",
    "parse_reference_text",
    "parse_tei_references",
    "read_references",
    "resolution_counts",
    "resolve_by_search",
    "s2_paper_to_paper",
    "same_paper",
    "year_in_text",
]

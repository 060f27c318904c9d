"""surveyalign.knowledge: knowledge augmentation for the knowledge-intensive dimensions (SurveyReview §5.2, App. F).

Public surface (first part: what other packages reuse). The bibliographic records (:class:`Paper`,
:class:`Reference`), the reference-list readers and :func:`same_paper` live in :mod:`surveyalign.documents`.

- :mod:`~surveyalign.knowledge.clients`: :class:`SemanticScholarClient`, :class:`OpenAlexClient` (on the call
  layer's :class:`surveyalign.calls.PoliteClient`, which also holds the HTTP errors);
- :mod:`~surveyalign.knowledge.resolve`: :class:`Resolver`, the safe matching rule
  (:func:`surveyalign.documents.same_paper`) applied against a graph's papers;
- :mod:`~surveyalign.knowledge.grobid`: :class:`GrobidClient`, a GROBID server as a PDF reference reader;
  (the stand-in Semantic Scholar / OpenAlex server for tests is :class:`surveyalign.testing.FakeScholarServer`).

Knowledge augmentation (second part):

- :mod:`~surveyalign.knowledge.graph`: :class:`CitationGraph` (parquet / JSONL / saved-session loaders, CSR
  adjacency both ways);
- :mod:`~surveyalign.knowledge.ka`: :func:`neighbourhood` (R+, exclusions), :func:`comp_ka`,
  :func:`crit_candidates`, :func:`pack_blocks`; :mod:`~surveyalign.knowledge.summarise`: :class:`Summariser`,
  :class:`TokenCounter`;
- :mod:`~surveyalign.knowledge.config`: :class:`KAConfig`; :mod:`~surveyalign.knowledge.build`:
  :func:`build_ka_dataset` (what ``surveyalign ka build`` runs), :func:`read_ka_records`;
- :func:`~surveyalign.knowledge.fetch.fetch_graph`: a graph for a dataset's surveys from Semantic Scholar or
  OpenAlex (what ``surveyalign ka graph`` runs); :func:`~surveyalign.knowledge.fetch.resolve_references`: its
  reference resolution through an API (ids first, then a checked title search), also used by the autoraters;
- :func:`~surveyalign.knowledge.sample.sample_graph`: a made-up graph around a dataset's references (demo).
"""

import lazy_loader

# Every submodule loads on first use (lazy_loader), so ``surveyalign ka --help`` imports none of them (the HTTP
# clients pull in httpx and the call layer; graphs, KA, summaries and GROBID scipy, pyarrow and lxml).
__getattr__ = lazy_loader.attach(
    __name__,
    submodules=["build", "clients", "config", "fetch", "graph", "grobid", "ka", "resolve", "sample",
                "summarise"],
    submod_attrs={
        "build": ["KA_COLUMN", "KAReport", "SurveyKAInput", "build_ka_dataset", "read_ka_records"],
        "clients": ["OPENALEX_URL", "OpenAlexClient", "S2_URL", "ScholarlyClient", "SemanticScholarClient",
                    "openalex_work_to_paper", "s2_paper_to_paper"],
        "config": ["KAConfig", "KA_DIMENSIONS"],
        "fetch": ["FetchReport", "fetch_graph", "resolve_references"],
        "graph": ["CitationGraph", "GraphStats", "SessionSeed"],
        "grobid": ["GrobidClient"],
        "ka": ["CompKA", "CritCandidates", "Neighbourhood", "comp_ka", "crit_candidates", "neighbourhood",
               "pack_blocks"],
        "resolve": ["Resolution", "Resolver", "reason_class", "resolution_counts", "resolve_by_search"],
        "sample": ["sample_graph"],
        "summarise": ["CritKA", "Summariser", "TokenCounter"],
    })[0]

__all__ = [
    "KA_COLUMN",
    "KA_DIMENSIONS",
    "OPENALEX_URL",
    "S2_URL",
    "CitationGraph",
    "CompKA",
    "CritCandidates",
    "CritKA",
    "FetchReport",
    "GraphStats",
    "GrobidClient",
    "KAConfig",
    "KAReport",
    "Neighbourhood",
    "OpenAlexClient",
    "Resolution",
    "Resolver",
    "ScholarlyClient",
    "SemanticScholarClient",
    "SessionSeed",
    "Summariser",
    "SurveyKAInput",
    "TokenCounter",
    "build_ka_dataset",
    "comp_ka",
    "crit_candidates",
    "fetch_graph",
    "neighbourhood",
    "openalex_work_to_paper",
    "pack_blocks",
    "read_ka_records",
    "reason_class",
    "resolution_counts",
    "resolve_by_search",
    "resolve_references",
    "s2_paper_to_paper",
    "sample_graph",
]

"""surveyalign.documents: documents read into one type, and the text tools every reader of a document shares.

Public surface::

    from surveyalign.documents import (
        Document, read_document, read_documents, find_documents,   # markdown / LaTeX / PDF / JATS -> markdown
        Section, Heading, split_sections, find_headings,           # the one heading splitter (with offsets)
        strip_review_record, LeakageEdit,                          # the leakage guard (SurveyReview §4.1-4.2)
        Paper, Reference, ReferenceList, normalise_doi,            # bibliographic records
        read_references, parse_bibtex, parse_markdown_references,  # reference-list readers
        read_reference_value,                                      # a reference list given as a value
        same_paper, MatchDecision,                                 # the safe matching rule
        fit_texts, truncate_to_tokens,                             # the one token fitter
        extract_title, extract_abstract, extract_references,       # light markdown helpers
        verbatim_hits, near_verbatim_hits, normalise_for_match,    # verbatim / near-verbatim matchers
        VerbatimIndex, near_hits_in_text,                          # ... indexed once, one text at a time
        parse_jats, JatsArticle,                                   # JATS XML without its peer-review record
    )

What lives where:

- :mod:`~surveyalign.documents.readers`: :class:`Document` (markdown ``text``, title, bibliography, files read,
  leakage counts, warnings; ``sections`` with offsets into ``text``, ``references()``), :func:`read_document`,
  :func:`read_documents`, :func:`find_documents`; LaTeX projects in :mod:`~surveyalign.documents.latex` and
  :mod:`~surveyalign.documents.latex_flatten`, PDF text in :mod:`~surveyalign.documents.pdf`, JATS in
  :mod:`~surveyalign.documents.jats`; resource limits for
  untrusted files (LaTeX include fan-out, PDF bombs) in :mod:`~surveyalign.documents.limits`.
- :mod:`~surveyalign.documents.sections`: the one markdown / LaTeX heading splitter.
- :mod:`~surveyalign.documents.leakage`: the structure-based leakage guard; :mod:`~surveyalign.documents.verbatim`:
  layout-insensitive verbatim and near-verbatim matching of snippets in texts, on the indexes of
  :mod:`~surveyalign.documents.snippet_index` (snippets indexed once, texts scanned one at a time).
- :mod:`~surveyalign.documents.papers`: :class:`Paper` (the one bibliographic paper record: a graph node, a search
  hit) and :class:`Reference` (one entry of a reference list); :mod:`~surveyalign.documents.references` (BibTeX,
  ``\\bibitem``, JATS, by suffix), :mod:`~surveyalign.documents.ref_text` (free-text entries, markdown lists) and
  :mod:`~surveyalign.documents.tei`: the reference-list readers; :mod:`~surveyalign.documents.matching`:
  :func:`same_paper`.
- :mod:`~surveyalign.documents.fitting`: :func:`fit_texts`, the one token-fitting function (callers bring the
  prompt's token count; :func:`surveyalign.prompts.fit_survey_text` and the autoraters' prompt rule call it).
- :mod:`~surveyalign.documents.text`: title, abstract and reference-section entries of a markdown text.

Layer: a service (imports only the core, and a tokenizer passed in). Add a new document format as a reader in
:mod:`~surveyalign.documents.readers` (suffix in :data:`DOCUMENT_SUFFIXES`) returning a :class:`Document`.
"""

import lazy_loader

from surveyalign.documents.leakage import (
    RECORD_KINDS,
    LeakageEdit,
    strip_review_record,
    strip_running_headers,
)
from surveyalign.documents.matching import (
    DEFAULT_MIN_TITLE_SCORE,
    DEFAULT_YEAR_TOLERANCE,
    MIN_ABSTRACT_SCORE,
    MIN_ABSTRACT_WORDS,
    Citable,
    MatchDecision,
    normalise_surname,
    normalise_title,
    same_paper,
)
from surveyalign.documents.papers import (
    LIGATURES,
    REFERENCE_FORMATS,
    REFERENCE_STATUSES,
    Paper,
    Reference,
    ReferenceList,
    first_author_surname,
    fix_ligatures,
    normalise_arxiv,
    normalise_doi,
    year_in_text,
)
from surveyalign.documents.sections import (
    Heading,
    Section,
    find_headings,
    normalise_heading,
    split_sections,
)
from surveyalign.documents.text import (
    extract_abstract,
    extract_references,
    extract_title,
    fingerprint,
)

# Readers of LaTeX (pylatexenc), BibTeX (bibtexparser), TEI / JATS (lxml), the verbatim matchers and the token
# fitter load on first use (lazy_loader), so building the CLI parser does not import them.
__getattr__ = lazy_loader.attach(
    __name__,
    submodules=["fitting", "jats", "latex", "latex_flatten", "limits", "readers", "references", "snippet_index", "tei",
                "verbatim"],
    submod_attrs={
        "fitting": ["FittedTexts", "fit_texts", "truncate_to_tokens"],
        "jats": ["JatsArticle", "JatsError", "SubArticle", "parse_jats"],
        "latex": ["LatexConversion", "latex_to_markdown"],
        "latex_flatten": ["FlatLatex", "flatten_latex"],
        "limits": ["DOCUMENT_LIMITS_ENV", "DocumentLimitError", "DocumentLimits"],
        "readers": ["DOCUMENT_SUFFIXES", "PDF_EXTRACTORS", "Document", "find_documents", "read_document",
                    "read_documents"],
        "references": ["check_reference_count", "cited_keys", "decode_latex_accents", "highest_citation_number",
                       "parse_bibtex", "parse_jats_references", "parse_latex_bibliography",
                       "parse_markdown_references", "parse_reference_text", "read_reference_value",
                       "read_references"],
        "snippet_index": ["VerbatimIndex"],
        "tei": ["GROBID_URL_ENV", "parse_tei_references"],
        "verbatim": ["MIN_SNIPPET_CHARS", "NEAR_VERBATIM_THRESHOLD", "find_verbatim", "layout_verbatim_hits",
                     "near_hits_in_text", "near_verbatim_hits", "near_verbatim_scores", "normalise_for_match", "verbatim_hits"]})[0]

__all__ = [
    "DEFAULT_MIN_TITLE_SCORE",
    "DEFAULT_YEAR_TOLERANCE",
    "DOCUMENT_LIMITS_ENV",
    "DOCUMENT_SUFFIXES",
    "GROBID_URL_ENV",
    "LIGATURES",
    "MIN_ABSTRACT_SCORE",
    "MIN_ABSTRACT_WORDS",
    "MIN_SNIPPET_CHARS",
    "NEAR_VERBATIM_THRESHOLD",
    "PDF_EXTRACTORS",
    "RECORD_KINDS",
    "REFERENCE_FORMATS",
    "REFERENCE_STATUSES",
    "Citable",
    "Document",
    "DocumentLimitError",
    "DocumentLimits",
    "FittedTexts",
    "FlatLatex",
    "Heading",
    "JatsArticle",
    "JatsError",
    "LatexConversion",
    "LeakageEdit",
    "MatchDecision",
    "Paper",
    "Reference",
    "ReferenceList",
    "Section",
    "SubArticle",
    "VerbatimIndex",
    "check_reference_count",
    "cited_keys",
    "decode_latex_accents",
    "extract_abstract",
    "extract_references",
    "extract_title",
    "find_documents",
    "find_headings",
    "find_verbatim",
    "fingerprint",
    "first_author_surname",
    "fit_texts",
    "fix_ligatures",
    "flatten_latex",
    "highest_citation_number",
    "latex_to_markdown",
    "layout_verbatim_hits",
    "near_hits_in_text",
    "near_verbatim_hits",
    "near_verbatim_scores",
    "normalise_arxiv",
    "normalise_doi",
    "normalise_for_match",
    "normalise_heading",
    "normalise_surname",
    "normalise_title",
    "parse_bibtex",
    "parse_jats",
    "parse_jats_references",
    "parse_latex_bibliography",
    "parse_markdown_references",
    "parse_reference_text",
    "parse_tei_references",
    "read_document",
    "read_documents",
    "read_reference_value",
    "read_references",
    "same_paper",
    "split_sections",
    "strip_review_record",
    "strip_running_headers",
    "truncate_to_tokens",
    "verbatim_hits",
    "year_in_text",
]

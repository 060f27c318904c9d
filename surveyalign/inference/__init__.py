"""Judge new surveys: read a survey file (markdown, LaTeX, PDF) into the markdown the judge reads.

Public surface::

    from surveyalign.inference import Document, read_document, read_documents, find_documents
"""

from surveyalign.inference.latex import LatexConversion, latex_to_markdown
from surveyalign.inference.latex_flatten import FlatLatex, flatten_latex
from surveyalign.inference.readers import (
    DOCUMENT_SUFFIXES,
    PDF_EXTRACTORS,
    Document,
    find_documents,
    read_document,
    read_documents,
)

__all__ = [
    "DOCUMENT_SUFFIXES",
    "PDF_EXTRACTORS",
    "Document",
    "FlatLatex",
    "LatexConversion",
    "find_documents",
    "flatten_latex",
    "latex_to_markdown",
    "read_document",
    "read_documents",
]

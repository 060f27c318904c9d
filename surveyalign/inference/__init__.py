"""Review new surveys: read survey files, judge them with SurveyAlign as one judge, write reports.

Public surface::

    from surveyalign.inference import (
        Document, read_document, read_documents, find_documents,     # markdown / LaTeX / PDF -> markdown
        JudgeSpec, load_judge_spec, build_dimension_backends,        # base + dimension adapters + sampling
        SurveyAlignJudge,                                            # K samples, vote, merged rationale, KA
        FileKnowledge, GraphKnowledge, KnowledgeRecord,              # where KA texts come from
        write_survey_report, write_comparison, render_html, render_markdown,
    )

CLI: ``surveyalign score SURVEY... --judge CONFIG|DIR|HUB_ID --out DIR``.
"""

import lazy_loader

from surveyalign.inference.latex_flatten import FlatLatex, flatten_latex
from surveyalign.inference.report import (
    render_html,
    render_markdown,
    write_comparison,
    write_survey_report,
)
from surveyalign.inference.spec import (
    JudgeSpec,
    build_dimension_backends,
    load_judge_spec,
)
from surveyalign.inference.synthesis import (
    SYNTHESIS_VERSION,
    Synthesis,
    build_synthesis_messages,
)

# The readers (BibTeX / TEI via surveyalign.knowledge: lxml), the judge and its KA sources load on first use
# (lazy_loader), so building the CLI parser does not import them.
__getattr__ = lazy_loader.attach(
    __name__,
    submodules=["judge", "knowledge", "latex", "readers"],
    submod_attrs={
        "judge": ["KNOWLEDGE_REFUSED", "SurveyAlignJudge"],
        "knowledge": ["FileKnowledge", "GraphKnowledge", "KnowledgeRecord", "KnowledgeSource"],
        "latex": ["LatexConversion", "latex_to_markdown"],
        "readers": ["DOCUMENT_SUFFIXES", "PDF_EXTRACTORS", "Document", "find_documents", "read_document",
                    "read_documents"]})[0]

__all__ = [
    "DOCUMENT_SUFFIXES",
    "KNOWLEDGE_REFUSED",
    "PDF_EXTRACTORS",
    "SYNTHESIS_VERSION",
    "Document",
    "FileKnowledge",
    "FlatLatex",
    "GraphKnowledge",
    "JudgeSpec",
    "KnowledgeRecord",
    "KnowledgeSource",
    "LatexConversion",
    "SurveyAlignJudge",
    "Synthesis",
    "build_dimension_backends",
    "build_synthesis_messages",
    "find_documents",
    "flatten_latex",
    "latex_to_markdown",
    "load_judge_spec",
    "read_document",
    "read_documents",
    "render_html",
    "render_markdown",
    "write_comparison",
    "write_survey_report",
]

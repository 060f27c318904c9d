"""Review new surveys: read survey files, judge them with SurveyAlign as one judge, write reports.

Public surface::

    from surveyalign.inference import (
        JudgeSpec, load_judge_spec, build_dimension_backends,        # base + dimension adapters + sampling
        SurveyAlignJudge,                                            # K samples, vote, merged rationale, KA
        FileKnowledge, GraphKnowledge, KnowledgeRecord,              # where KA texts come from
        write_survey_report, write_comparison, render_html, render_markdown,
    )

The rationale merge (App. E) lives in :mod:`surveyalign.judge.synthesis` (``evaluate`` uses it too).

CLI: ``surveyalign score SURVEY... --judge CONFIG|DIR|HUB_ID --out DIR``. Surveys are read with
:func:`surveyalign.documents.read_document`.
"""

import lazy_loader

# The judge and its KA sources load on first use (lazy_loader), so building the CLI parser
# does not import them.
__getattr__ = lazy_loader.attach(
    __name__,
    submodules=["judge", "knowledge", "report", "spec"],
    submod_attrs={
        "judge": ["KNOWLEDGE_REFUSED", "SurveyAlignJudge"],
        "knowledge": ["FileKnowledge", "GraphKnowledge", "KnowledgeRecord", "KnowledgeSource"],
        "report": ["render_html", "render_markdown", "write_comparison", "write_survey_report"],
        "spec": ["JudgeSpec", "build_dimension_backends", "load_judge_spec"],
    })[0]

__all__ = [
    "KNOWLEDGE_REFUSED",
    "FileKnowledge",
    "GraphKnowledge",
    "JudgeSpec",
    "KnowledgeRecord",
    "KnowledgeSource",
    "SurveyAlignJudge",
    "build_dimension_backends",
    "load_judge_spec",
    "render_html",
    "render_markdown",
    "write_comparison",
    "write_survey_report",
]

"""surveyalign.annotation: extend SurveyReview with new surveys and reviews (SurveyReview §4.1-4.3, App. A, A.2).

Public surface::

    from surveyalign.annotation import (
        Candidate, read_candidates, identify_surveys, read_verification,      # §4.1 find the surveys
        verification_counts,                                                  # ... stage 3 per source
        read_fetched_candidates, read_fetched_texts,                          # ... with what fetch-texts resolved
        read_source, collect_reviews,                                         # collect the review reports
        build_annotation_messages, read_annotation, annotate_reviews,         # §4.3 / App. A LLM pre-annotation
        locate_snippet, SnippetMatch,                                         # snippets verified in their review
        labeling_config, export_tasks, import_export,                         # Label Studio round trip
        agreement_table, render_table, render_confusion, sample_units,        # App. A.2 / Table 5
        final_labels,                                                         # adjudication
        write_release,                                                        # the official release layout
    )

Sub-modules: ``records`` (record types, labels, uids, JSON lines), ``identify``, ``fetched`` (candidates from
``fetch-texts`` output), ``sources`` (F1000 JATS,
OpenReview, MOPRD / PeerJ, plain-text readers), ``collect``, ``prompt``, ``snippets``, ``annotate``,
``labelstudio``, ``agreement``, ``adjudicate``, ``release``, ``judge_config``, ``cli``
(``surveyalign data identify|collect|annotate|agreement|release``).
"""

from __future__ import annotations

import lazy_loader

# Every name loads its sub-module on first use, so `surveyalign --help` (which registers the data
# subcommands of annotation.cli) imports no numpy, rapidfuzz or backend code.
__getattr__, __dir__, _ = lazy_loader.attach(
    __name__,
    submod_attrs={
        "adjudicate": ["FINAL_RULES", "disagreements", "final_labels", "read_decisions"],
        "agreement": ["DEFAULT_SAMPLE", "agreement_table", "alpha", "pair_labels", "render_confusion", "render_table", "sample_units", "unit_labels"],
        "annotate": ["AnnotateResult", "annotate_reviews", "unique_reviews", "vote_label"],
        "collect": ["CollectResult", "collect_reviews"],
        "fetched": ["is_fetch_output", "read_fetched_candidates", "read_fetched_texts"],
        "identify": ["DEFAULT_KEYWORDS", "Candidate", "build_screen_messages", "identify_surveys", "keyword_hits", "read_candidates", "read_screen", "read_verification", "verification_counts"],
        "judge_config": ["AnnotationJudge"],
        "labelstudio": ["export_tasks", "import_export", "labeling_config", "write_project"],
        "prompt": ["PROMPT_VERSION", "build_annotation_messages", "read_annotation"],
        "records": ["EXCLUDED_LABELS", "GUIDELINE_VERSION", "LABELS", "ReviewRecord", "SurveyRecord", "label_name", "parse_label", "read_jsonl", "read_reviews", "read_surveys", "review_uid", "write_jsonl"],
        "release": ["annotator_line", "card_section", "source_counts", "write_release"],
        "snippets": ["SnippetMatch", "locate_snippet"],
        "sources": ["read_source"],
    },
)

__all__ = [
    "DEFAULT_KEYWORDS",
    "DEFAULT_SAMPLE",
    "EXCLUDED_LABELS",
    "FINAL_RULES",
    "GUIDELINE_VERSION",
    "LABELS",
    "PROMPT_VERSION",
    "AnnotateResult",
    "AnnotationJudge",
    "Candidate",
    "CollectResult",
    "ReviewRecord",
    "SnippetMatch",
    "SurveyRecord",
    "agreement_table",
    "alpha",
    "annotate_reviews",
    "annotator_line",
    "build_annotation_messages",
    "build_screen_messages",
    "card_section",
    "collect_reviews",
    "disagreements",
    "export_tasks",
    "final_labels",
    "identify_surveys",
    "import_export",
    "is_fetch_output",
    "keyword_hits",
    "label_name",
    "labeling_config",
    "locate_snippet",
    "pair_labels",
    "parse_label",
    "read_annotation",
    "read_candidates",
    "read_decisions",
    "read_fetched_candidates",
    "read_fetched_texts",
    "read_jsonl",
    "read_reviews",
    "read_screen",
    "read_source",
    "read_surveys",
    "read_verification",
    "render_confusion",
    "render_table",
    "review_uid",
    "sample_units",
    "source_counts",
    "unique_reviews",
    "unit_labels",
    "verification_counts",
    "vote_label",
    "write_jsonl",
    "write_project",
    "write_release",
]

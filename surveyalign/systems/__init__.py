"""surveyalign.systems: rank survey-writing systems on shared topics (``surveyalign systems``).

Public surface:

- :func:`~surveyalign.systems.run.run_systems` (read the corpus, run the measures through the project's judges and
  call cache, aggregate, write ``systems.json`` / ``.md`` / ``.html``) and
  :func:`~surveyalign.systems.run.plan_systems` (the calls still to make and their cost, nothing sent);
- :class:`~surveyalign.systems.config.SystemsConfig` (``configs/systems/*.yaml``);
- :func:`~surveyalign.systems.corpus.read_corpus` (``DIR/<system>/<topic>.*``, ``_reference/``, ``_topics.yaml``);
- :func:`~surveyalign.systems.aggregate.aggregate_systems` (topic-level bootstrap means, pairwise differences with a sign
  test, rankings and Kendall tau with intervals);
- :func:`~surveyalign.systems.citations.citation_scores` and its
  :class:`~surveyalign.systems.citations.ResolutionCache` (citation P / R / F1 on resolved paper ids).

CLI: ``surveyalign systems --corpus DIR --config configs/systems/NAME.yaml --out OUT [--plan]``.
"""

import lazy_loader

# Every submodule loads on first use (lazy_loader), so the CLI's `--help` imports none of them.
__getattr__ = lazy_loader.attach(
    __name__,
    submodules=["aggregate", "citations", "config", "corpus", "measures", "report", "run"],
    submod_attrs={
        "aggregate": ["aggregate_systems", "tau_between"],
        "citations": ["ResolutionCache", "citation_scores"],
        "config": ["MEASURE_KINDS", "MeasureConfig", "SystemsConfig"],
        "corpus": ["Corpus", "Topic", "read_corpus"],
        "measures": ["COVARIATES", "columns_of", "run_measure"],
        "report": ["ka_lines", "render_html", "render_markdown"],
        "run": ["plan_systems", "run_systems"],
    })[0]

__all__ = ["COVARIATES", "MEASURE_KINDS", "Corpus", "MeasureConfig", "ResolutionCache", "SystemsConfig", "Topic",
           "aggregate_systems", "citation_scores", "columns_of", "ka_lines", "plan_systems", "read_corpus", "render_html",
           "render_markdown", "run_measure", "run_systems", "tau_between"]

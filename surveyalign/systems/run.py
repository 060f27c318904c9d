"""``surveyalign systems``: rank survey writers on shared topics (reads the corpus, runs the measures, aggregates,
writes ``systems.json``, ``systems.md`` and ``systems.html``).

Outputs in ``OUT``: ``calls.jsonl`` (every LLM call: a re-run makes only the missing or failed ones),
``resolutions.jsonl`` (resolved references: a re-run asks the API only for new ones), ``surveys/<system>/<topic>.json``
(each survey's measures), and the three reports.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from surveyalign import __version__
from surveyalign.calls import CallCache
from surveyalign.documents import Document, read_document
from surveyalign.paths import safe_output_name
from surveyalign.systems.aggregate import aggregate_systems
from surveyalign.systems.config import SystemsConfig
from surveyalign.systems.corpus import Corpus, read_corpus
from surveyalign.systems.measures import columns_of, covariates, run_measure

__all__ = ["plan_systems", "run_systems"]


def _read(corpus: Corpus, pdf_extractor: str) -> tuple[dict[tuple[str, str], Document], dict[str, str]]:
    docs, unreadable = {}, {}
    for system, per in corpus.files.items():
        for topic, path in per.items():
            try:
                docs[(system, topic)] = read_document(path, pdf_extractor=pdf_extractor)
            except ValueError as err:  # unreadable, over a limit: named and counted, the rest goes on
                unreadable[f"{system}/{topic}"] = f"{path}: {err}"
    return docs, unreadable


def _topic_refs(corpus: Corpus, docs: Mapping[tuple[str, str], Document]) -> tuple[dict[str, Any], dict[str, str]]:
    """Each topic's reference list (``_topics.yaml``, else the human reference survey's own list) and its source."""
    from surveyalign.autoraters.references import paper_references

    refs, source = {}, {}
    for topic in corpus.topics:
        if topic.references is not None:
            refs[topic.name], source[topic.name] = topic.references, "_topics.yaml"
        elif (corpus.reference, topic.name) in docs:
            refs[topic.name] = [r for _, r in paper_references(docs[(corpus.reference, topic.name)]).numbered]
            source[topic.name] = f"{corpus.reference}/{topic.name} reference list"
        else:
            refs[topic.name], source[topic.name] = None, "none"
    return refs, source


def _resolver(out: Path, measure: Any, client: Any) -> Any:
    from surveyalign.systems.citations import ResolutionCache

    def factory() -> Any:
        if client is not None:
            return client
        from surveyalign.knowledge import (
            OPENALEX_URL,
            S2_URL,
            OpenAlexClient,
            SemanticScholarClient,
        )

        if measure.api == "openalex":
            return OpenAlexClient(measure.base_url or OPENALEX_URL, cache_dir=out / "http-cache",
                                  requests_per_second=measure.rate)
        return SemanticScholarClient(measure.base_url or S2_URL, cache_dir=out / "http-cache",
                                     requests_per_second=measure.rate)

    return ResolutionCache(out / "resolutions.jsonl", measure.api, factory, measure.search_limit)


def _applies(measure: Any, docs: Mapping[tuple[str, str], Document], corpus: Corpus, ref_source: Mapping[str, str]
             ) -> dict[tuple[str, str], Document]:
    """The surveys a measure is run on: the systems', and the reference's where the measure applies to it."""
    def keep(pair: tuple[str, str]) -> bool:
        if pair[0] != corpus.reference:
            return True
        if measure.kind == "sxs":
            return False
        return measure.kind != "citations" or ref_source.get(pair[1]) == "_topics.yaml"  # not scored on itself
    return {pair: doc for pair, doc in docs.items() if keep(pair)}


def _setup(corpus_dir: str | Path, config: SystemsConfig, out: Path, pdf_extractor: str) -> tuple[Any, ...]:
    corpus = read_corpus(corpus_dir, config.reference)
    docs, unreadable = _read(corpus, pdf_extractor)
    refs, ref_source = _topic_refs(corpus, docs)
    references = {t: d for (s, t), d in docs.items() if s == corpus.reference}
    return corpus, docs, unreadable, refs, ref_source, references


def plan_systems(corpus_dir: str | Path, config: SystemsConfig, out_dir: str | Path, *, prices: Any,
                 backends: Mapping[str, Any] | None = None, pdf_extractor: str = "pypdf") -> list[str]:
    """The calls a run would still make and their estimated cost; nothing is sent.

    Args:
        corpus_dir: the corpus.
        config: the systems config.
        out_dir: the run folder (its ``calls.jsonl`` and ``resolutions.jsonl`` say what is already done).
        prices: the price table (:func:`surveyalign.calls.cost.load_prices`).
        backends: ``{measure name: backend}`` already built (tests).
        pdf_extractor: the PDF extractor.

    Returns:
        The printable plan, one line per item.
    """
    from surveyalign.calls.spend import PromptCounter, plan_calls, unanswered

    out = Path(out_dir)
    corpus, docs, unreadable, refs, ref_source, references = _setup(corpus_dir, config, out, pdf_extractor)
    cache = CallCache.load(out / "calls.jsonl")  # read only: a plan appends nothing
    lines = [(f"{len(corpus.systems)} system(s) x {len(corpus.topics)} topic(s): {len(docs)} survey(s) read, "
              f"{len(corpus.missing)} missing pair(s), {len(unreadable)} unreadable")]
    for measure in config.measures:
        got = run_measure(measure, config, _applies(measure, docs, corpus, ref_source), references=references,
                          topic_refs=refs, cache=cache, backend=(backends or {}).get(measure.label),
                          resolver=_resolver(out, measure, None) if measure.kind == "citations" else None, plan=prices)
        if "plan" in got:
            lines += [f"{measure.label} (SurveyAlign judge):", *got["plan"]]
        elif "calls" in got:
            todo = unanswered(cache, got["calls"])
            plan, _ = plan_calls(todo, PromptCounter(lambda call: None, todo), cache, prices)
            lines += [f"{measure.label} ({measure.kind} autorater):",
                      *plan.lines(cached_calls=len({c.key for c in got["calls"]}) - len(todo))]
        else:
            lines.append(f"{measure.label} (citations): {got['unknown']} reference(s) to resolve through "
                         f"{measure.api} (no LLM call; at most one search request each)")
    return lines


def run_systems(corpus_dir: str | Path, config: SystemsConfig, out_dir: str | Path, *,
                backends: Mapping[str, Any] | None = None, scholar_client: Any = None,
                pdf_extractor: str = "pypdf", keep_failed: bool = False) -> dict[str, Any]:
    """Run every measure of ``config`` on the corpus, aggregate and write the reports (module docstring).

    Args:
        corpus_dir: the corpus (:mod:`surveyalign.systems.corpus`).
        config: the systems config.
        out_dir: the run folder.
        backends: ``{measure name: backend}`` already built (tests, a shared server); default: each measure's
            judge is built from its config.
        scholar_client: the scholarly API client of the citations measure (tests); default: built from the
            measure's ``api`` / ``base_url``.
        pdf_extractor: the PDF extractor of :func:`surveyalign.documents.read_document`.
        keep_failed: reuse cached answers that errored or could not be read.

    Returns:
        The ``systems.json`` content: ``{"systems", "reference", "topics", "missing", "unreadable", "columns",
        "values" ({column: {system: {topic: value}}}), "table", "pairwise", "rankings", "kendall", "sxs",
        "citations", "details", "calls", "files"}``.

    Raises:
        FileNotFoundError / ValueError: a bad corpus or judge config; RuntimeError: a judge that cannot be built.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    corpus, docs, unreadable, refs, ref_source, references = _setup(corpus_dir, config, out, pdf_extractor)
    cache = CallCache.load(out / "calls.jsonl", keep_failed=keep_failed)
    values: dict[str, dict[str, dict[str, float | None]]] = {}
    details: dict[tuple[str, str], dict[str, Any]] = {pair: {"covariates": covariates(doc), "source": str(doc.source),
                                                            "title": doc.title} for pair, doc in docs.items()}
    extra: dict[str, Any] = {"sxs": {}, "citations": {}, "judges": {}}
    dimensions: dict[str, list[str]] = {}
    try:
        for measure in config.measures:
            resolver = _resolver(out, measure, scholar_client) if measure.kind == "citations" else None
            got = run_measure(measure, config, _applies(measure, docs, corpus, ref_source), references=references,
                              topic_refs=refs, cache=cache, backend=(backends or {}).get(measure.label),
                              resolver=resolver)
            if "dimensions" in got:
                dimensions[measure.label] = list(got["dimensions"])
            for column, per in got["values"].items():
                for (system, topic), value in per.items():
                    values.setdefault(column, {}).setdefault(system, {})[topic] = value
            for pair, detail in got["details"].items():
                details[pair][measure.label] = detail
            if measure.kind == "sxs":
                extra["sxs"][measure.label] = {"rule": got["rule"], "systems": got["summary"]}
            if measure.kind == "citations":
                extra["citations"][measure.label] = {"reference_lists": ref_source, "api_errors": got["errors"],
                                                     "n_resolved_now": got["n_asked"]}
            if "judge" in got:
                extra["judges"][measure.label] = got["judge"]
    finally:
        cache.close()
    for key, label in (("words", "words"), ("references", "references")):
        for (system, topic), detail in details.items():
            values.setdefault(key, {}).setdefault(system, {})[topic] = detail["covariates"][label]
    columns = columns_of(config, dimensions)
    for column in columns:
        values.setdefault(column["key"], {})
    topics = [t.name for t in corpus.topics]
    reference = corpus.reference if corpus.has_reference else None
    agg = aggregate_systems(values, columns, corpus.systems, topics, reference, n_resamples=config.bootstrap.resamples,
                    seed=config.bootstrap.seed)
    for (system, topic), detail in details.items():
        path = out / "surveys" / safe_output_name(system) / f"{safe_output_name(topic)}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(detail, indent=2, default=str), encoding="utf-8")
    result = {
        "name": config.name, "corpus": str(corpus.root), "systems": corpus.systems, "reference": reference,
        "topics": [{"name": t.name, "title": t.title, "reference_list": ref_source.get(t.name)} for t in corpus.topics],
        "missing": [f"{s}/{t}" for s, t in corpus.missing], "n_missing": len(corpus.missing),
        "unreadable": unreadable, "columns": columns, "values": values, **agg, **extra,
        "details": {f"{s}/{t}": d for (s, t), d in sorted(details.items())},
        "calls": cache.summary(), "resamples": config.bootstrap.resamples, "seed": config.bootstrap.seed,
        "surveyalign_version": __version__,
    }
    from surveyalign.systems.report import render_html, render_markdown

    files = {"json": out / "systems.json", "md": out / "systems.md", "html": out / "systems.html"}
    files["json"].write_text(json.dumps(result, indent=2, default=str), encoding="utf-8")
    files["md"].write_text(render_markdown(result), encoding="utf-8")
    files["html"].write_text(render_html(result), encoding="utf-8")
    result["files"] = {k: str(v) for k, v in files.items()}
    return result

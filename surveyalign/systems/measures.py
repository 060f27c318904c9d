"""The measures of ``surveyalign systems``, each through the project's own judge code and the run's call cache.

- ``surveyalign``: SurveyAlign's four dimensions, K-sample vote and merged rationale
  (:class:`surveyalign.inference.SurveyAlignJudge`, as ``surveyalign score``); the per-topic value of a dimension
  is its voted score (-2..+2) and the headline the mean over the scored dimensions.
- ``litreview``: the PaperOrchestra literature-review autorater (:func:`surveyalign.autoraters.rate_litreview`),
  the judge's ``overall_score`` (0-100).
- ``sxs``: side-by-side of the survey against the topic's human reference with the order swapped
  (:func:`surveyalign.autoraters.rate_sxs`, literature-review kind): win / tie / loss from the survey's side,
  scored 1 / 0.5 / 0 (``official5``: leaning outcomes 0.75 / 0.25); a pair whose two answers are unreadable has no
  value.
- ``citations``: precision / recall / F1 against the topic's reference list (:mod:`surveyalign.systems.citations`).
- covariates (always): the survey's length in words and its reference count.

Every LLM call goes through ``OUT/calls.jsonl`` (keys per survey: adding a system or a topic leaves the other
answers valid), so a re-run makes only the calls that are missing or failed.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from surveyalign.autoraters import (
    AutoraterJudge,
    AutoraterRole,
    PaperText,
    litreview_prompt_calls,
    position_flip_rate,
    rate_litreview,
    rate_sxs,
    sxs_prompt_calls,
)
from surveyalign.autoraters.references import paper_references
from surveyalign.autoraters.rubric import DEFAULT_AVERAGE_CITATIONS
from surveyalign.calls import CallCache
from surveyalign.constants import DIMENSIONS
from surveyalign.documents import Document
from surveyalign.systems.config import MeasureConfig, SystemsConfig

__all__ = ["COVARIATES", "SXS_VALUES", "Column", "columns_of", "covariates", "run_measure"]

#: The covariate columns: (key, label).
COVARIATES = (("words", "length (words)"), ("references", "reference count"))
#: Per-topic value of a side-by-side outcome, from the survey's side.
SXS_VALUES = {"win": 1.0, "leaning_win": 0.75, "tie": 0.5, "leaning_loss": 0.25, "loss": 0.0}


class Column(dict):
    """One reported column: ``key``, ``label``, ``measure`` (its measure's name, or ``"covariate"``), ``kind``,
    ``headline`` (ranked and compared pairwise) and ``reference`` (applies to the human reference)."""


def columns_of(config: SystemsConfig, dimensions: Mapping[str, list[str]] | None = None) -> list[Column]:
    """The columns of the reports, in order: each measure's headline and its parts, then the covariates.

    Args:
        config: the systems config.
        dimensions: ``{surveyalign measure: its judge's dimensions}`` (default: all four).

    Returns:
        The :class:`Column` list.
    """
    out: list[Column] = []
    for m in config.measures:
        name = m.label
        if m.kind == "surveyalign":
            out.append(Column(key=name, label=f"{name} (mean of dimensions, -2..+2)", measure=name, kind=m.kind,
                              headline=True, reference=True))
            for dim in (dimensions or {}).get(name, list(DIMENSIONS)):
                out.append(Column(key=f"{name}.{dim}", label=f"{name} {dim}", measure=name, kind=m.kind,
                                  headline=False, reference=True))
        elif m.kind == "litreview":
            out.append(Column(key=name, label=f"{name} (overall, 0-100)", measure=name, kind=m.kind, headline=True,
                              reference=True))
        elif m.kind == "sxs":
            out.append(Column(key=name, label=f"{name} vs reference (win 1, tie 0.5, loss 0)", measure=name,
                              kind=m.kind, headline=True, reference=False))
        else:
            out.append(Column(key=name, label=f"{name} F1", measure=name, kind=m.kind, headline=True, reference=True))
            for part in ("precision", "recall"):
                out.append(Column(key=f"{name}.{part}", label=f"{name} {part}", measure=name, kind=m.kind,
                                  headline=False, reference=True))
    out += [Column(key=k, label=label, measure="covariate", kind="covariate", headline=False, reference=True)
            for k, label in COVARIATES]
    return out


def covariates(document: Document) -> dict[str, Any]:
    """The survey's length in words and its reference count (the numbered list the autoraters read)."""
    refs = paper_references(document)
    return {"words": len(document.text.split()), "references": len(refs.numbered),
            "reference_source": refs.source, "reference_problems": len(refs.problems)}


class SystemFolderKnowledge:
    """Prepared KA texts of a corpus: ``<folder>/<system>/<topic>.<dimension>.txt`` (the human references under
    ``<folder>/_reference/``), read by :class:`~surveyalign.inference.knowledge.FileKnowledge` in the survey's
    system folder, so two systems' surveys of one topic each get their own.

    Args:
        folder: the folder of per-system folders.

    Raises:
        NotADirectoryError: ``folder`` is not a folder.
    """

    name = "file"

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)
        if not self.folder.is_dir():
            raise NotADirectoryError(f"knowledge.folder {self.folder}: not a folder of <system>/<topic>.<dimension>.txt")

    def __call__(self, document: Document, dimension: str, *, references: Any = None) -> Any:
        """The KA record of ``document`` (``<corpus>/<system>/<topic>.*``) on ``dimension``."""
        from surveyalign.inference.knowledge import FileKnowledge, KnowledgeRecord

        sub = self.folder / document.source.parent.name
        if not sub.is_dir():
            return KnowledgeRecord(None, "file", note=f"no folder {sub} of KA texts for this system")
        return FileKnowledge(sub)(document, dimension)


def knowledge_of(config: SystemsConfig, model: str, cache: CallCache) -> Any:
    """The KA source of the config's ``knowledge:`` block (``None``: none): the graph source ``score --graph``
    builds (:func:`surveyalign.inference.knowledge.knowledge_source`), or :class:`SystemFolderKnowledge`.

    Args:
        config: the systems config.
        model: the judge's base model (its tokenizer counts KA tokens unless the KA config names one).
        cache: the run's call cache (the Crit-KA summariser's calls go there).

    Raises:
        ValueError / FileNotFoundError / NotADirectoryError: a bad block (as ``score --graph/--knowledge``).
    """
    block = config.knowledge
    if block.folder and not block.graph:
        if block.ka_config:
            raise ValueError("knowledge.ka_config needs knowledge.graph FILE (prepared texts take no KA settings)")
        return SystemFolderKnowledge(block.folder)
    return block.build(model, cache)


def _ka_used(review: Mapping[str, Any]) -> dict[str, Any]:
    """Per dimension that needs KA: whether the survey was judged with it, from where, and why not."""
    out = {}
    for dim, record in review["dimensions"].items():
        ka = record.get("knowledge") or {}
        if ka.get("required") or ka.get("used"):
            out[dim] = {"used": bool(ka.get("used")), "source": ka.get("source"), "note": ka.get("note"),
                        "n_resolved": (ka.get("details") or {}).get("n_resolved")}
    return out


def _surveyalign(measure: MeasureConfig, config: SystemsConfig, docs: Mapping[tuple[str, str], Document],
                 cache: CallCache, backend: Any, plan: Any) -> dict[str, Any]:
    from surveyalign.inference.judge import SurveyAlignJudge
    from surveyalign.inference.spec import load_judge_spec

    spec = load_judge_spec(config.judge_path(measure), samples=measure.samples)
    backends = None if backend is None else (backend, {d: backend for d in spec.dimensions})
    judge = SurveyAlignJudge(spec, cache=cache, knowledge=knowledge_of(config, spec.model, cache),
                             allow_no_knowledge=measure.allow_no_knowledge, backends=backends)
    judge.configure_hint = "knowledge.graph or knowledge.folder in the systems config"
    judge.allow_hint = f"allow_no_knowledge: true on the {measure.label} measure"
    try:
        if plan is not None:
            from surveyalign.inference.spend import plan_score

            return {"plan": plan_score(judge, list(docs.values()), cache, plan).lines(), "dimensions": spec.dimensions}
        values: dict[str, dict[tuple[str, str], float | None]] = {measure.label: {}}
        details = {}
        for pair, doc in docs.items():
            review = judge.review(doc, progress=False)
            scores = {d: r["score"] for d, r in review["dimensions"].items()}
            for dim, score in scores.items():
                values.setdefault(f"{measure.label}.{dim}", {})[pair] = score
            got = [s for s in scores.values() if s is not None]
            values[measure.label][pair] = sum(got) / len(got) if got else None
            details[pair] = {"dimensions": {d: {"score": r["score"], "status": r["status"], "reason": r.get("reason"),
                                                "rationale": r.get("rationale") or ""}
                                            for d, r in review["dimensions"].items()},
                             "knowledge": _ka_used(review), "warnings": review["warnings"]}
        return {"values": values, "details": details, "dimensions": spec.dimensions, "judge": judge.describe()}
    finally:
        judge.close()


def _autorater(measure: MeasureConfig, config: SystemsConfig, cache: CallCache, backend: Any) -> AutoraterJudge:
    role = AutoraterRole.from_yaml(config.judge_path(measure), "autorater judge config")
    return AutoraterJudge(backend if backend is not None else role.build(), role.generation, cache)


def _paper(pair: tuple[str, str], doc: Document) -> PaperText:
    return PaperText(f"{pair[0]}/{pair[1]}", doc.text)


def _litreview(measure: MeasureConfig, config: SystemsConfig, docs: Mapping[tuple[str, str], Document],
               cache: CallCache, backend: Any, plan: Any) -> dict[str, Any]:
    judge = _autorater(measure, config, cache, backend)
    avg = measure.avg_citations or DEFAULT_AVERAGE_CITATIONS
    try:
        if plan is not None:
            return {"calls": [c for pair, doc in docs.items()
                              for c in judge.planned(litreview_prompt_calls([_paper(pair, doc)], avg))]}
        values, details = {measure.label: {}}, {}
        for pair, doc in docs.items():
            [row] = rate_litreview([_paper(pair, doc)], judge, avg)["papers"]
            values[measure.label][pair] = row["overall_score"]
            judgement = row["judgement"] or {}
            details[pair] = {"overall_score": row["overall_score"], "recomputed_score": row["recomputed_score"],
                             "valid": row["valid"], "problems": row["call"]["problems"],
                             "summary": judgement.get("summary"),
                             "violations": [v["rule"] for v in (row["check"] or {}).get("violations", [])]}
        return {"values": values, "details": details, "judge": judge.describe()}
    finally:
        judge.backend.close()


def _sxs(measure: MeasureConfig, config: SystemsConfig, docs: Mapping[tuple[str, str], Document],
         references: Mapping[str, Document], cache: CallCache, backend: Any, plan: Any) -> dict[str, Any]:
    judge = _autorater(measure, config, cache, backend)
    pairs = {pair: doc for pair, doc in docs.items() if pair[1] in references}
    try:
        if plan is not None:
            return {"calls": [c for (s, t), doc in pairs.items() for c in judge.planned(sxs_prompt_calls(
                [(_paper((s, t), doc), _paper((config.reference, t), references[t]))])[0])]}
        values, details = {measure.label: {}}, {}
        by_system: dict[str, dict[str, Any]] = {}
        for (system, topic), doc in pairs.items():
            result = rate_sxs([(_paper((system, topic), doc), _paper((config.reference, topic), references[topic]))],
                              judge, kind="litreview", rule=measure.rule)
            [view] = result["pairs"]
            outcome = view["outcome"]["outcome"]
            values[measure.label][(system, topic)] = SXS_VALUES.get(outcome)
            winners = tuple(c["winner"] for c in view["calls"])
            details[(system, topic)] = {"outcome": outcome, "winners": list(winners),
                                        "justifications": [c.get("comparison_justification") for c in view["calls"]]}
            entry = by_system.setdefault(system, {"outcomes": {}, "winners": []})
            entry["outcomes"][outcome] = entry["outcomes"].get(outcome, 0) + 1
            entry["winners"].append(winners)
        summary = {}
        for system, entry in by_system.items():
            counts = entry["outcomes"]
            decided = sum(counts.values()) - counts.get("failed", 0)
            summary[system] = {"outcomes": counts, "n_pairs": sum(counts.values()), "n_failed": counts.get("failed", 0),
                               "win_rate": counts.get("win", 0) / decided if decided else None,
                               "flip_rate": position_flip_rate(entry["winners"]).to_dict()}
        return {"values": values, "details": details, "summary": summary, "rule": measure.rule,
                "judge": judge.describe()}
    finally:
        judge.backend.close()


def _citations(measure: MeasureConfig, docs: Mapping[tuple[str, str], Document], topic_refs: Mapping[str, Any],
               resolver: Any, plan: Any) -> dict[str, Any]:
    survey_refs = {pair: [r for _, r in paper_references(doc).numbered] for pair, doc in docs.items()}
    wanted = {pair: refs for pair, refs in survey_refs.items() if topic_refs.get(pair[1]) is not None}
    if plan is not None:
        todo = resolver.unknown([r for pair, refs in wanted.items() for r in [*refs, *topic_refs[pair[1]]]])
        return {"unknown": len(todo)}
    from surveyalign.systems.citations import citation_scores

    values: dict[str, dict[tuple[str, str], float | None]] = {measure.label: {}, f"{measure.label}.precision": {},
                                                                f"{measure.label}.recall": {}}
    details = {}
    for pair, refs in survey_refs.items():
        if pair not in wanted:
            details[pair] = {"note": f"topic {pair[1]}: no reference list (_topics.yaml or a human reference)"}
            for per in values.values():
                per[pair] = None
            continue
        got = citation_scores(refs, topic_refs[pair[1]], resolver)
        values[measure.label][pair] = got["f1"] if refs else None
        values[f"{measure.label}.precision"][pair] = got["precision"] if refs else None
        values[f"{measure.label}.recall"][pair] = got["recall"]
        details[pair] = got
    return {"values": values, "details": details, "errors": list(resolver.errors), "n_asked": resolver.n_asked}


def run_measure(measure: MeasureConfig, config: SystemsConfig, docs: Mapping[tuple[str, str], Document], *,
                references: Mapping[str, Document], topic_refs: Mapping[str, Any], cache: CallCache,
                backend: Any = None, resolver: Any = None, plan: Any = None) -> dict[str, Any]:
    """Run one measure over the surveys (module docstring).

    Args:
        measure: the measure.
        config: the systems config (judge paths, reference name).
        docs: ``{(system, topic): Document}`` of the surveys it applies to (the reference among them when the
            measure applies to it).
        references: ``{topic: Document}`` of the human references (side-by-side).
        topic_refs: ``{topic: [Reference] | None}`` (citations).
        cache: the run's call cache.
        backend: an already built backend for the measure's judge (tests); default: built from its config.
        resolver: the :class:`~surveyalign.systems.citations.ResolutionCache` (citations).
        plan: a price table: build the calls and estimate them without sending anything.

    Returns:
        ``{"values": {column: {(system, topic): value | None}}, "details": {(system, topic): {...}}, ...}``; under
        ``plan``: ``{"plan": lines}`` (surveyalign), ``{"calls": [Call]}`` (autoraters) or ``{"unknown": n}``.
    """
    if measure.kind == "surveyalign":
        return _surveyalign(measure, config, docs, cache, backend, plan)
    if measure.kind == "litreview":
        return _litreview(measure, config, docs, cache, backend, plan)
    if measure.kind == "sxs":
        return _sxs(measure, config, docs, references, cache, backend, plan)
    return _citations(measure, docs, topic_refs, resolver, plan)

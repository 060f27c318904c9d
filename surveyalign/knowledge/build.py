"""``surveyalign ka build``: add the ``knowledge`` column to a SurveyReview dataset folder (SurveyReview §5.2).

For every survey paper of the Comprehensiveness / Criticalness configs: read its reference list R (the
dataset's ``references`` column, else the reference section of its text), resolve each entry to a graph node
with the safe rule, expand to R+ without the survey, its citers and later papers, and build Comp-KA or Crit-KA.
One record per (paper, dimension) is appended to ``OUT/ka/records.jsonl`` as soon as it is made (a re-run
with the same config and graph skips what is there); Crit-KA's LLM calls are cached in ``OUT/ka/calls.jsonl``.
Then the dataset is written to ``OUT`` with a ``knowledge`` string column in every config ("" where a unit has
no KA: Readability and Structure, or a survey whose record says why it got none).
"""

from __future__ import annotations

import json
import os
import time
from collections import defaultdict
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
from tqdm import tqdm

from surveyalign.calls import CallCache, stable_hash
from surveyalign.documents import (
    Reference,
    highest_citation_number,
    parse_markdown_references,
    parse_reference_text,
)
from surveyalign.knowledge.config import KAConfig
from surveyalign.knowledge.dataset import write_knowledge_dataset
from surveyalign.knowledge.graph import CitationGraph
from surveyalign.knowledge.ka import (
    comp_ka,
    crit_candidates,
    neighbourhood,
    pack_blocks,
)
from surveyalign.knowledge.resolve import Resolver, resolution_counts
from surveyalign.knowledge.summarise import Summariser, TokenCounter
from surveyalign.paths import inside_folder

__all__ = ["KA_COLUMN", "KAReport", "SurveyKAInput", "build_ka_dataset", "build_survey_ka", "dataset_rows",
           "dataset_surveys", "read_ka_records", "survey_references"]

#: Name of the dataset column holding the KA text (read by the prompt builder, training and evaluation).
KA_COLUMN = "knowledge"


@dataclass
class SurveyKAInput:
    """What the builders need of one survey.

    Attributes:
        paper_id: the dataset's paper id.
        title: the survey's title (finds the survey's own node, which is excluded).
        references: the reference entries: raw text (the dataset's ``references`` column) or entries already
            read (:class:`~surveyalign.documents.Reference`, e.g. from BibTeX).
        text: the survey text (its reference section is read when ``references`` is empty).
        year: the survey's year when known (else the newest reference year is the cutoff).
    """

    paper_id: str
    title: str = ""
    references: tuple[Any, ...] = ()
    text: str = ""
    year: int | None = None

    def digest(self) -> str:
        """16 hex digits of what a KA record is built from (title, references, text, year): a record made from
        another survey under the same paper id (another dataset in the same ``--out``, an edited survey) is never
        reused."""
        refs = [r if isinstance(r, str) else asdict(r) for r in self.references]
        return stable_hash([self.title, refs, self.text, self.year])[:16]


@dataclass
class KAReport:
    """Totals of one ``ka build``.

    Attributes:
        out_dir: the dataset folder written.
        n_records: KA records (paper x dimension) in ``records.jsonl``.
        n_made: records made by this run (the rest came from an earlier run).
        n_empty: records with an empty KA text (each says why).
        n_units_with_knowledge: dataset units whose ``knowledge`` is non-empty.
        graph: the graph's :class:`~surveyalign.knowledge.graph.GraphStats` as a dict.
    """

    out_dir: Path
    n_records: int
    n_made: int
    n_empty: int
    n_units_with_knowledge: int
    graph: dict[str, int]


def survey_references(survey: SurveyKAInput) -> tuple[list[Any], str]:
    """A survey's reference list R: its ``references`` column entries, else its text's reference section.

    Args:
        survey: the survey.

    Returns:
        ``(references, source)`` with source ``"column"``, ``"text"`` or ``"none"``.
    """
    if survey.references:
        return [entry if isinstance(entry, Reference) else parse_reference_text(entry, str(i))
                for i, entry in enumerate(survey.references, start=1)], "column"
    found = parse_markdown_references(survey.text or "")
    return found.references, "text" if found.references else "none"


def build_survey_ka(graph: CitationGraph, resolver: Resolver, survey: SurveyKAInput, dimension: str,
                    config: KAConfig, *, summariser: Summariser | None = None,
                    counter: TokenCounter | None = None, plan: bool = False) -> dict[str, Any]:
    """Build one survey's KA record for ``dimension`` (Comp-KA or Crit-KA).

    Args:
        graph: the citation graph.
        resolver: a :class:`Resolver` over ``graph.papers`` (built once for all surveys).
        survey: the survey.
        dimension: ``"comprehensiveness"`` or ``"criticalness"``.
        config: the KA settings.
        summariser: required for Crit-KA.
        counter: the judge tokenizer (``tokens`` of the text are counted when given).
        plan: Crit-KA only: send nothing (:meth:`Summariser.plan`): the record holds ``planned_calls`` (the
            summariser's calls, answered or not) and ``stand_in`` (``text`` is a stand-in of ``length`` tokens
            because some call is not answered in the cache yet). For ``--plan`` and ``--max-cost``.

    Returns:
        The record: ``paper_id``, ``dimension``, ``text``, ``reason`` (why ``text`` is empty, else ``None``),
        ``n_references``, ``reference_source``, ``n_resolved``, ``n_resolved_incomplete`` (resolved references
        whose own reference list the graph has only in part or not at all: R+ misses their outgoing links),
        ``resolution`` (counts), ``unresolved`` (key, reason), ``cited_up_to`` / ``reference_shortfall`` (the highest
        ``[n]`` the text cites and how many entries the text's list lacks; ``None`` for the ``references`` column),
        ``n_neighbourhood`` (|R+| before exclusions), ``excluded``, ``cutoff_year``,
        ``cutoff_from``, ``n_candidates`` (|R+| after), ``n_kept``, ``tokens``, ``n_calls``, ``cache_hits``,
        ``errors`` and the dimension's own details (``comp`` or ``crit``).

    Raises:
        ValueError: Crit-KA without a summariser.
    """
    refs, ref_source = survey_references(survey)
    resolutions = resolver.resolve_all(refs)
    nodes = [graph.index[r.paper_id] for r in resolutions if r.resolved]
    survey_nodes = [graph.index[p.id] for p in resolver.similar_titles(survey.title)]
    year = survey.year
    if year is None:
        known = [graph.papers[i].year for i in survey_nodes if graph.papers[i].year is not None]
        year = min(known) if known else None
    hood = neighbourhood(graph, nodes, survey_nodes=survey_nodes, survey_year=year,
                         exclude_future=config.exclude_future)
    record: dict[str, Any] = {
        "paper_id": survey.paper_id, "dimension": dimension, "text": "", "reason": None,
        "n_references": len(refs), "reference_source": ref_source, "n_resolved": len(hood.references),
        "resolution": resolution_counts(resolutions),
        "unresolved": [{"key": r.key, "reason": r.reason} for r in resolutions if not r.resolved],
        "n_resolved_incomplete": sum(1 for i in hood.references
                                     if graph.papers[int(i)].references_status in ("incomplete", "partial")),
        "survey_nodes": graph.ids_of(survey_nodes), "n_neighbourhood": hood.n_neighbourhood,
        "excluded": hood.excluded, "cutoff_year": hood.cutoff_year, "cutoff_from": hood.cutoff_from,
        "n_unknown_year": hood.n_unknown_year, "n_candidates": int(hood.candidates.size), "n_kept": 0,
        "tokens": None, "n_calls": 0, "cache_hits": 0, "errors": [],
    }
    # a list read from the text with fewer entries than the highest [n] the text cites
    cited = highest_citation_number(survey.text or "") if ref_source == "text" else None
    record["cited_up_to"] = cited
    record["reference_shortfall"] = max(0, cited - len(refs)) if cited is not None else None
    if not refs:
        record["reason"] = "no reference list found (empty `references` column and no reference section)"
    elif not hood.references.size:
        record["reason"] = f"none of the {len(refs)} references resolved to a paper of the graph"
    elif dimension == "comprehensiveness":
        if config.comp_max_tokens is not None and counter is None:
            raise ValueError("comp_max_tokens is counted with the judge's tokenizer: set `tokenizer`")
        comp = comp_ka(graph, hood, top_factor=config.top_factor, max_tokens=config.comp_max_tokens,
                       count_tokens=counter)
        n_kept = len(comp.references) + len(comp.added) - comp.n_dropped_added - comp.n_dropped_references
        record.update(text=comp.text, n_kept=n_kept,
                      comp={"top": graph.ids_of(comp.top), "scores": comp.scores, "added": len(comp.added),
                            "n_top_in_references": comp.n_top_in_references, "n_untitled": comp.n_untitled,
                            "n_dropped_added": comp.n_dropped_added,
                            "n_dropped_references": comp.n_dropped_references})
    else:
        if summariser is None:
            raise ValueError("Crit-KA needs a summariser backend: set `summariser` in the KA config")
        cand = crit_candidates(graph, hood, alpha=config.alpha, beta=config.beta)
        blocks = pack_blocks(graph, cand.nodes, budget=config.block_tokens, count_tokens=summariser.counter)
        n_dropped = 0
        if config.max_blocks is not None and len(blocks) > config.max_blocks:
            n_dropped = len(blocks) - config.max_blocks
            blocks = blocks[n_dropped:]
        crit = summariser.plan(blocks) if plan else summariser.crit_ka(blocks)
        if plan:
            record.update(planned_calls=crit.planned_calls, stand_in=crit.stand_in)
        record.update(text=crit.text, n_kept=sum(len(b.nodes) for b in blocks), n_calls=crit.n_calls,
                      cache_hits=crit.cache_hits, errors=crit.errors,
                      crit={"tau_c": cand.tau_c, "tau_y": cand.tau_y, "n_C": len(cand.nodes),
                            "n_no_year": cand.n_no_year, "n_blocks": len(blocks), "n_blocks_dropped": n_dropped,
                            "n_cut": sum(b.n_cut for b in blocks), "blocks": crit.blocks,
                            "n_length_stops": crit.n_length_stops, "cut_to_length": crit.cut_to_length,
                            "neutralised": crit.neutralised,
                            "n_no_abstract": sum(1 for b in blocks for i in b.nodes
                                                 if not graph.papers[i].abstract.strip())})
        if not cand.nodes:
            record["reason"] = "no paper of R+ reaches the citation or year threshold"
        elif not crit.text:
            record["reason"] = "the summariser failed: " + "; ".join(crit.errors)
    if not record["text"] and record["reason"] is None:
        record["reason"] = "the references have no citation neighbourhood in the graph (R+ is empty)"
    if counter is not None and record["text"]:
        record["tokens"] = counter(record["text"])
    return record


def read_ka_records(ka_dir: str | os.PathLike) -> list[dict[str, Any]]:
    """Read ``ka/records.jsonl`` of a KA dataset folder (or the ``ka`` folder itself); torn lines are skipped.

    Args:
        ka_dir: the output folder of ``ka build`` or its ``ka`` sub-folder.

    Returns:
        The records, last one per (paper_id, dimension, config hash) kept, in file order.

    Raises:
        FileNotFoundError: no ``records.jsonl`` there.
    """
    folder = Path(ka_dir)
    path = folder / "records.jsonl" if (folder / "records.jsonl").is_file() else folder / "ka" / "records.jsonl"
    if not path.is_file():
        raise FileNotFoundError(f"no KA records in {folder} (expected ka/records.jsonl; run `surveyalign ka build`)")
    records: dict[tuple, dict[str, Any]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            continue
        records[(rec.get("paper_id"), rec.get("dimension"), rec.get("config_hash"))] = rec
    return list(records.values())


def dataset_surveys(rows: dict[str, dict[str, list[dict[str, Any]]]], dimensions: list[str],
                    survey_years: dict[str, int] | None = None
                    ) -> tuple[dict[str, dict[str, SurveyKAInput]], dict[tuple[str, str], list[str]]]:
    """The surveys of each dimension's units and the unit ids per (paper_id, dimension).

    Args:
        rows: dimension -> split -> rows (see :func:`dataset_rows`).
        dimensions: the dimensions to collect.
        survey_years: optional paper_id -> survey year.

    Returns:
        ``(surveys, units)``: dimension -> paper_id -> :class:`SurveyKAInput`, and (paper_id, dimension) ->
        sorted unit ids.

    Raises:
        ValueError: one paper_id carries two different surveys (its KA record would replace the other's).
    """
    surveys: dict[str, dict[str, SurveyKAInput]] = {}
    units: dict[tuple[str, str], list[str]] = defaultdict(list)
    for dim in dimensions:
        surveys[dim] = {}
        for split_rows in rows.get(dim, {}).values():
            for row in split_rows:
                pid = row["paper_id"]
                units[(pid, dim)].append(row["unit_id"])
                got = SurveyKAInput(pid, row.get("title") or "", tuple(row.get("references") or ()),
                                    row.get("text") or "", (survey_years or {}).get(pid))
                seen = surveys[dim].setdefault(pid, got)
                if (seen.title, seen.references, seen.text) != (got.title, got.references, got.text):
                    # one KA record per (paper_id, dimension): a second survey under the id would replace it
                    raise ValueError(f"{dim}: paper_id {pid!r} names two different surveys (unit {row['unit_id']} "
                                     f"differs in title, references or text); paper ids must be unique")
    return surveys, {key: sorted(ids) for key, ids in units.items()}


def dataset_rows(dataset_dir: Path) -> dict[str, dict[str, list[dict[str, Any]]]]:
    """dimension -> split -> rows, read straight from the folder's parquet files."""
    rows: dict[str, dict[str, list[dict[str, Any]]]] = defaultdict(dict)
    for path in inside_folder(dataset_dir, sorted((dataset_dir / "data").glob("*/*.parquet")), "dataset folder"):
        rows[path.parent.name][path.stem] = pq.read_table(path).to_pylist()
    if not rows:
        raise FileNotFoundError(f"{dataset_dir}: no data/<dimension>/<split>.parquet files (build the dataset "
                                "with `surveyalign data build` first)")
    return rows


def build_ka_dataset(dataset_dir: str | os.PathLike, graph: CitationGraph, out_dir: str | os.PathLike,
                     config: KAConfig, *, backend=None, progress: bool = True,
                     survey_years: dict[str, int] | None = None) -> KAReport:
    """Make the KA records of every survey and write the dataset with a ``knowledge`` column to ``out_dir``.

    Args:
        dataset_dir: a folder written by ``surveyalign data build``.
        graph: the citation graph.
        out_dir: the new dataset folder (must not be ``dataset_dir``); ``out_dir/ka`` holds the records, the
            call cache and ``ka_report.json``.
        config: the KA settings.
        backend: the summariser backend for Crit-KA (default: built from ``config.summariser``).
        progress: show a progress bar.
        survey_years: optional paper_id -> publication year of the survey (the future cutoff).

    Returns:
        The :class:`KAReport`.

    Raises:
        FileNotFoundError: ``dataset_dir`` is not a built dataset folder.
        ValueError: ``out_dir`` equals ``dataset_dir``; Crit-KA asked without summariser or tokenizer.
    """
    src, out = Path(dataset_dir).resolve(), Path(out_dir).resolve()
    if src == out:
        raise ValueError(f"--out must be a new folder, not the input dataset {src}")
    rows = dataset_rows(src)
    ka_dir = out / "ka"
    ka_dir.mkdir(parents=True, exist_ok=True)
    config_hash = stable_hash({"config": config.model_dump(), "graph": graph.stats.to_dict()})[:16]
    counter = TokenCounter(config.tokenizer) if config.tokenizer else None
    summariser = None
    if "criticalness" in config.dimensions:
        if counter is None:
            raise ValueError("Crit-KA counts its block budget B with the judge's tokenizer: set `tokenizer`")
        if backend is None and config.summariser is not None:
            backend = config.summariser.build()
        if backend is None:
            raise ValueError("Crit-KA needs a summariser backend: set `summariser` in the KA config")
        summariser = Summariser(backend, config, counter, CallCache.load(ka_dir / "calls.jsonl"))
    resolver = Resolver(graph.papers, min_title_score=config.min_title_score, year_tolerance=config.year_tolerance)
    surveys, units = dataset_surveys(rows, config.dimensions, survey_years)
    wanted = {(pid, dim): survey.digest() for dim in config.dimensions for pid, survey in surveys[dim].items()}
    # resumed: a record of the same config made from the same survey (not merely the same paper id)
    done = {(r["paper_id"], r["dimension"]) for r in _existing(ka_dir) if r.get("config_hash") == config_hash
            and r.get("survey_sha256") == wanted.get((r["paper_id"], r["dimension"]))}
    jobs = [(dim, surveys[dim][pid]) for dim in config.dimensions for pid in sorted(surveys[dim])
            if (pid, dim) not in done]
    n_made = 0
    with (ka_dir / "records.jsonl").open("a", encoding="utf-8") as fh:
        for dim, survey in tqdm(jobs, desc="knowledge augmentation", disable=not progress):
            t0 = time.perf_counter()
            record = build_survey_ka(graph, resolver, survey, dim, config, summariser=summariser, counter=counter)
            record.update(unit_ids=units[(survey.paper_id, dim)], config_hash=config_hash, survey_sha256=survey.digest(),
                          seconds=round(time.perf_counter() - t0, 4))
            fh.write(json.dumps(record, ensure_ascii=False) + "\n")
            fh.flush()
            n_made += 1
    if summariser is not None and summariser.cache is not None:
        summariser.cache.close()
    records = [r for r in read_ka_records(ka_dir) if r.get("config_hash") == config_hash
               and r.get("survey_sha256") == wanted.get((r["paper_id"], r["dimension"]))]  # this dataset's surveys
    n_units = write_knowledge_dataset(src, out, rows, {(r["paper_id"], r["dimension"]): r["text"] for r in records})
    report = KAReport(out, len(records), n_made, sum(1 for r in records if not r["text"]), n_units,
                      graph.stats.to_dict())
    (ka_dir / "ka_report.json").write_text(json.dumps({
        "dataset": str(src), "config": config.model_dump(), "config_hash": config_hash, "graph": report.graph,
        "n_records": report.n_records, "n_made": n_made, "n_empty": report.n_empty,
        "n_units_with_knowledge": n_units,
        "empty_reasons": _count(r["reason"] for r in records if not r["text"]),
        "n_graph_papers_without_abstract": sum(1 for p in graph.papers if not p.abstract.strip()),
        "n_crit_papers_without_abstract": sum((r.get("crit") or {}).get("n_no_abstract", 0) for r in records),
        "excluded": {k: sum(r["excluded"][k] for r in records) for k in ("survey", "citing_survey", "after_survey")},
        "n_reference_shortfall": len({r["paper_id"] for r in records if r.get("reference_shortfall")}),
        # the Crit-KA summariser's answers reused from / asked again / new to ka/calls.jsonl
        "answers": dict(summariser.cache.counts) if summariser is not None and summariser.cache is not None else None,
    }, indent=2, default=str))
    return report


def _existing(ka_dir: Path) -> list[dict[str, Any]]:
    try:
        return read_ka_records(ka_dir)
    except FileNotFoundError:
        return []


def _count(values) -> dict[str, int]:
    counts: dict[str, int] = defaultdict(int)
    for value in values:
        counts[str(value)] += 1
    return dict(sorted(counts.items()))


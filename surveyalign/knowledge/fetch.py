"""Fetch a citation graph for a dataset's surveys from Semantic Scholar or OpenAlex (SurveyReview §5.2.1).

The paper expands R over the AMiner graph; without a local graph, :func:`fetch_graph` asks a scholarly API:

1. each reference with a DOI / arXiv id is looked up by id (Semantic Scholar's batch endpoint; one OpenAlex
   filter per 50 ids), every other one through a title search; every answer goes through
   :func:`~surveyalign.documents.same_paper` (an id answer must carry the same id, a search hit must
   pass the title rule), so a search's top hit is never taken blindly;
2. each resolved reference's references and citing papers are fetched (the neighbourhood R+);
3. the survey itself is looked up by exact title, with the papers citing it, so ``ka build`` can leave them
   out of R+.

Records are appended to a JSONL graph file as each survey is done (the graph merges repeated ids), and
``<out>.state.json`` lists the surveys done, so a re-run resumes; the HTTP cache makes repeated calls free.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from tqdm import tqdm

from surveyalign.calls import HTTPStatusError
from surveyalign.documents import Paper, normalise_title, same_paper
from surveyalign.knowledge.build import SurveyKAInput, survey_references
from surveyalign.knowledge.clients import ScholarlyClient, SemanticScholarClient
from surveyalign.knowledge.resolve import Resolution, reason_class, resolve_by_search

__all__ = ["FetchReport", "fetch_graph", "resolve_references"]


@dataclass
class FetchReport:
    """What :func:`fetch_graph` did (counts >= 0).

    Attributes:
        out: the JSONL graph file.
        n_surveys: surveys done by this run (others were done before).
        n_references: references read.
        n_resolved: references resolved to an API paper.
        n_records: paper records written by this run.
        n_errors: API calls that failed for good (each listed in ``errors``; the reference stays unresolved or
            its neighbourhood incomplete).
        n_retry: surveys with at least one failed call: not marked done, so a re-run asks for them again.
        errors: one line per failure.
        unresolved_reasons: reason -> count.
        n_batch_missing: ids a Semantic Scholar batch answer left out (mapped by id; those references went on
            to the title search and count as unresolved unless it found them).
        n_without_abstract: paper records written without an abstract (``abstract: null`` at the source, also
            inside nested reference / citation objects); kept, with an empty abstract.
    """

    out: Path
    n_surveys: int = 0
    n_references: int = 0
    n_resolved: int = 0
    n_records: int = 0
    n_errors: int = 0
    n_retry: int = 0
    errors: list[str] = field(default_factory=list)
    unresolved_reasons: dict[str, int] = field(default_factory=dict)
    n_batch_missing: int = 0
    n_without_abstract: int = 0

    def to_dict(self) -> dict[str, Any]:
        """Return the report as a JSON-serialisable dict."""
        return {**asdict(self), "out": str(self.out)}


def _id_form(client: ScholarlyClient, doi: str | None, arxiv: str | None) -> str | None:
    if isinstance(client, SemanticScholarClient):
        return f"DOI:{doi}" if doi else (f"ARXIV:{arxiv}" if arxiv else None)
    return doi  # OpenAlex: the batch filter takes DOIs


def resolve_references(client: ScholarlyClient, refs: list[Any], *, search_limit: int = 5,
                       errors: list[str] | None = None) -> tuple[list[Resolution], dict[str, Paper]]:
    """Resolve references through a scholarly API: ids first (one batch), then a checked title search.

    Every answer goes through :func:`~surveyalign.documents.same_paper`, so a search's top hit is never
    taken blindly; a request that fails for good leaves its reference(s) unresolved.

    Args:
        client: a :class:`SemanticScholarClient` or :class:`OpenAlexClient`.
        refs: the references (:class:`~surveyalign.documents.papers.Reference` or anything with ``key``,
            ``title``, ``year``, ``doi``, ``arxiv_id``, ``first_author_surname``).
        search_limit: search hits checked per reference without an id match.
        errors: a list that receives one line per failed request (``None``: not collected).

    Returns:
        ``(resolutions, papers)``: one :class:`Resolution` per reference, in order, and the resolved papers by id.

    Raises:
        UnreachableError: the API cannot be reached at all (refused / unknown host): raised at the first
            request, not recorded per reference.
    """
    report = errors if errors is not None else []
    papers: dict[str, Paper] = {}
    out: list[Resolution | None] = [None] * len(refs)
    by_id = [(i, form) for i, ref in enumerate(refs) if (form := _id_form(client, ref.doi, ref.arxiv_id))]
    if by_id:
        try:
            answers = client.papers([form for _, form in by_id])
        except HTTPStatusError as err:
            report.append(f"batch lookup of {len(by_id)} ids: {err}")
            answers = [None] * len(by_id)
        for (i, _), paper in zip(by_id, answers, strict=True):
            decision = same_paper(refs[i], paper) if paper is not None else None
            if decision is not None and decision.same:
                papers[paper.id] = paper
                out[i] = Resolution(refs[i].key, paper.id, decision.method, decision.score, decision.reason, 1)
    for i, ref in enumerate(refs):
        if out[i] is not None:
            continue
        try:
            hits = client.search(ref.title, limit=search_limit) if ref.title else []
        except HTTPStatusError as err:
            report.append(f"search for reference {ref.key!r}: {err}")
            out[i] = Resolution(ref.key, None, "unresolved", 0.0, f"search failed: {err}")
            continue
        out[i] = resolve_by_search(ref, lambda _query, hits=hits: hits)
        if out[i].resolved:
            papers[out[i].paper_id] = next(p for p in hits if p.id == out[i].paper_id)
    return [r for r in out if r is not None], papers


def _survey_node(client: ScholarlyClient, title: str, search_limit: int) -> Paper | None:
    wanted = normalise_title(title)
    if not wanted:
        return None
    return next((p for p in client.search(title, limit=search_limit) if normalise_title(p.title) == wanted), None)


def fetch_graph(surveys: list[SurveyKAInput], client: ScholarlyClient, out: str | os.PathLike, *,
                search_limit: int = 5, max_citations: int = 200, progress: bool = True) -> FetchReport:
    """Resolve each survey's references through ``client`` and write their neighbourhood to a JSONL graph.

    Args:
        surveys: the surveys (e.g. from a dataset folder; see ``surveyalign ka graph``).
        client: a :class:`SemanticScholarClient` or :class:`OpenAlexClient`.
        out: the JSONL graph file (appended to; load it with ``CitationGraph.load``).
        search_limit: search hits checked per unresolved reference.
        max_citations: most citing papers fetched per resolved reference (and for the survey).
        progress: show a progress bar.

    Returns:
        The :class:`FetchReport` (also written to ``<out>.report.json``).

    Raises:
        UnreachableError: the API cannot be reached at all: raised at the first request (the surveys done so
            far stay in ``out`` and its state file, so a re-run goes on from there).
    """
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    state_path = out.with_suffix(out.suffix + ".state.json")
    done = set(json.loads(state_path.read_text())["done"]) if state_path.is_file() else set()
    report = FetchReport(out)
    reasons: dict[str, int] = {}
    with out.open("a", encoding="utf-8") as fh:
        for survey in tqdm([s for s in surveys if s.paper_id not in done], desc="fetching graph",
                           disable=not progress):
            errors_before = len(report.errors)
            refs, _ = survey_references(survey)
            resolutions, papers = resolve_references(client, refs, search_limit=search_limit, errors=report.errors)
            report.n_references += len(refs)
            report.n_resolved += sum(r.resolved for r in resolutions)
            for r in resolutions:
                if not r.resolved:
                    key = reason_class(r.reason)
                    reasons[key] = reasons.get(key, 0) + 1
            records: list[Paper] = []
            for pid, paper in papers.items():
                try:
                    cited = client.references(pid)
                    citing = client.citations(pid, limit=max_citations)
                except HTTPStatusError as err:
                    report.errors.append(f"neighbourhood of {pid}: {err}")
                    cited, citing = [], []
                paper.reference_ids = [p.id for p in cited] or paper.reference_ids
                paper.citing_ids = [p.id for p in citing]
                records += [paper, *cited, *citing]
            try:
                node = _survey_node(client, survey.title, search_limit)
                if node is not None:
                    citers = client.citations(node.id, limit=max_citations)
                    node.citing_ids = [p.id for p in citers]
                    records += [node, *citers]
            except HTTPStatusError as err:
                report.errors.append(f"survey {survey.paper_id} lookup: {err}")
            for paper in records:
                report.n_without_abstract += not paper.abstract.strip()
                fh.write(json.dumps(paper.to_dict(), ensure_ascii=False) + "\n")
            fh.flush()
            report.n_records += len(records)
            report.n_surveys += 1
            if len(report.errors) == errors_before:  # a survey with failed calls is asked again on a re-run
                done.add(survey.paper_id)
                state_path.write_text(json.dumps({"done": sorted(done)}))
            else:
                report.n_retry += 1
    report.n_batch_missing = getattr(client, "n_batch_missing", 0)
    report.errors.extend(getattr(client, "batch_problems", []))
    report.n_errors = len(report.errors)
    report.unresolved_reasons = dict(sorted(reasons.items()))
    out.with_suffix(out.suffix + ".report.json").write_text(json.dumps(report.to_dict(), indent=2))
    return report

"""The citation graph: paper records in columns plus compressed sparse adjacency both ways (SurveyReview §5.2.1).

:class:`CitationGraph` keeps one :class:`~surveyalign.documents.papers.Paper` per node (ids unique) and three
``scipy.sparse`` CSR matrices over node indices: ``cites[i, j] = 1`` when paper i cites paper j,
``cited_by`` (its transpose, as CSR), and ``linked`` (a citation either way, 0/1), the relation
``p <-> r`` of App. F. Edges come from both ``reference_ids`` and ``citing_ids`` of every record; ids that
name no node of the graph (dangling) and empty ids are counted, never guessed.

Loaders (:meth:`CitationGraph.load`): JSONL (one :class:`Paper` dict a line), parquet (the same columns;
what :meth:`CitationGraph.save` writes), and the saved-session JSON of LocalCitationNetwork (a list of
sessions with ``source``, ``input``, ``incomingSuggestions``, ``outgoingSuggestions`` records from OpenAlex,
Semantic Scholar or OpenCitations): empty titles and empty reference ids are kept and counted.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from scipy import sparse

from surveyalign.documents import Paper

__all__ = ["CitationGraph", "GraphStats", "SessionSeed", "papers_from_session"]

_SESSION_LISTS = ("input", "incomingSuggestions", "outgoingSuggestions")
_SESSION_SOURCES = {"OpenAlex": "openalex", "Semantic Scholar": "semanticscholar", "OpenCitations": "opencitations"}


@dataclass
class GraphStats:
    """What was loaded and what could not be linked (all counts >= 0).

    Attributes:
        n_papers: nodes.
        n_edges: distinct citation edges (i cites j, i != j).
        n_duplicate_ids: records whose id was already a node (merged into it: the first record's fields win,
            empty ones are filled from the later record, reference / citing ids are united).
        n_untitled: nodes with an empty title (kept).
        n_empty_reference_ids: empty strings in reference / citing lists (references the source left
            unresolved).
        n_dangling_ids: non-empty reference / citing ids that name no node of the graph.
        n_incomplete: nodes whose reference list is empty although the source reports references
            (``Paper.references_status == "incomplete"``).
        n_self_citations: edges from a paper to itself (dropped).
        n_missing_records: records the source had no id for (not nodes; listed in ``CitationGraph.missing``).
    """

    n_papers: int = 0
    n_edges: int = 0
    n_duplicate_ids: int = 0
    n_untitled: int = 0
    n_empty_reference_ids: int = 0
    n_dangling_ids: int = 0
    n_incomplete: int = 0
    n_self_citations: int = 0
    n_missing_records: int = 0

    def to_dict(self) -> dict[str, int]:
        """Return the counts as a dict."""
        return asdict(self)


@dataclass
class SessionSeed:
    """The seed paper of one saved LocalCitationNetwork session (its ``source`` record).

    Attributes:
        id: the seed's id in the graph.
        title: its title.
        year: its year (``None`` when unknown).
        reference_ids: its reference list R as ids (empty strings kept).
        api: the API the session used (``"OpenAlex"``, ``"Semantic Scholar"``, ``"OpenCitations"``).
    """

    id: str
    title: str
    year: int | None
    reference_ids: list[str] = field(default_factory=list)
    api: str = ""


def _session_paper(record: dict[str, Any], source: str) -> Paper:
    authors = [" ".join(p for p in (a.get("FN") or "", a.get("LN") or "") if p).strip()
               for a in record.get("authors") or [] if isinstance(a, dict)]
    rid = str(record.get("id") or "").strip()
    year = record.get("year")
    return Paper(
        id=rid, title=record.get("title") or "", year=int(year) if isinstance(year, int | float) else None,
        citation_count=record.get("citationsCount"), reference_count=record.get("referencesCount"),
        abstract=record.get("abstract") or "", authors=[a for a in authors if a], doi=record.get("doi"),
        openalex_id=rid if source == "openalex" else None, s2_id=rid if source == "semanticscholar" else None,
        reference_ids=[str(r or "") for r in record.get("references") or []], source=source,
    )


def papers_from_session(data: Any, *, path: str = "session"
                        ) -> tuple[list[Paper], list[SessionSeed], list[dict[str, str]]]:
    """Read saved LocalCitationNetwork sessions into paper records, their seed papers and the missing records.

    Args:
        data: the decoded JSON: one session object or a list of them.
        path: file name for error messages.

    Returns:
        ``(papers, seeds, missing)``: every record with an id (``source``, ``input``, suggestions; duplicates
        across lists and sessions included, the graph keeps the first), one :class:`SessionSeed` per session,
        and the records without an id (references the API could not find, e.g. ``"Missing: 10.5281/... (id
        not found in S2)"``) as ``{"where", "title"}``: kept for the report, not made nodes.

    Raises:
        ValueError: a session without a ``source`` object or whose source has no id (names file and session).
    """
    sessions = data if isinstance(data, list) else [data]
    papers: list[Paper] = []
    seeds: list[SessionSeed] = []
    missing: list[dict[str, str]] = []
    for s, session in enumerate(sessions):
        if not isinstance(session, dict) or not isinstance(session.get("source"), dict):
            raise ValueError(f"{path}: session {s} has no 'source' object")  # noqa: TRY004 (bad input file: a user error, exit 2)
        api = str(session.get("API") or "")
        source = _SESSION_SOURCES.get(api, api.lower() or "session")
        if not str(session["source"].get("id") or "").strip():
            raise ValueError(f"{path}: session {s}: the source record has no id")
        seed = _session_paper(session["source"], source)
        papers.append(seed)
        seeds.append(SessionSeed(seed.id, seed.title, seed.year, list(seed.reference_ids), api))
        for name in _SESSION_LISTS:
            for i, record in enumerate(session.get(name) or []):
                if str(record.get("id") or "").strip():
                    papers.append(_session_paper(record, source))
                else:
                    missing.append({"where": f"session {s} {name}[{i}]", "title": str(record.get("title") or "")})
    return papers, seeds, missing


def _merge(first: Paper, later: Paper) -> Paper:
    """One record from two with the same id: ``first`` wins, its empty fields are filled, id lists united."""
    values = {}
    for name in Paper.__dataclass_fields__:
        a, b = getattr(first, name), getattr(later, name)
        if name in ("reference_ids", "citing_ids"):
            seen = set(a)
            values[name] = [*a, *(x for x in b if x and x not in seen)]
        else:
            values[name] = a if a not in (None, "", []) else b
    return Paper(**values)


class CitationGraph:
    """Papers plus CSR adjacency in both directions (SurveyReview §5.2.1 reference expansion).

    Args:
        papers: the records; the first record of each id becomes a node, later records of the same id are
            merged into it and counted as duplicates.
        seeds: seed papers of saved sessions, when loaded from one (see :class:`SessionSeed`).
        missing: records without an id (``{"where", "title"}``), kept for reports.

    Attributes:
        papers: one :class:`Paper` per node, in node order.
        index: id -> node index.
        cites: CSR (n x n, int8): ``cites[i, j] == 1`` when node i cites node j.
        cited_by: CSR transpose of ``cites``.
        linked: CSR 0/1 matrix of a citation in either direction (symmetric).
        years: float array (n,), ``nan`` when unknown.
        citations: float array (n,) of citation counts, ``nan`` when unknown.
        stats: :class:`GraphStats`.
    """

    def __init__(self, papers: list[Paper], *, seeds: list[SessionSeed] | None = None,
                 missing: list[dict[str, str]] | None = None) -> None:
        self.papers: list[Paper] = []
        self.index: dict[str, int] = {}
        self.seeds = list(seeds or [])
        self.missing = list(missing or [])
        stats = GraphStats(n_missing_records=len(self.missing))
        for paper in papers:
            if paper.id in self.index:
                stats.n_duplicate_ids += 1
                i = self.index[paper.id]
                self.papers[i] = _merge(self.papers[i], paper)
                continue
            self.index[paper.id] = len(self.papers)
            self.papers.append(paper)
        src: list[int] = []
        dst: list[int] = []
        for i, paper in enumerate(self.papers):
            for targets, outgoing in ((paper.reference_ids, True), (paper.citing_ids, False)):
                for target in targets:
                    if not target:
                        stats.n_empty_reference_ids += 1
                        continue
                    j = self.index.get(target)
                    if j is None:
                        stats.n_dangling_ids += 1
                    elif j == i:
                        stats.n_self_citations += 1
                    elif outgoing:
                        src.append(i)
                        dst.append(j)
                    else:
                        src.append(j)
                        dst.append(i)
        self._set_edges(np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64))
        stats.n_papers = len(self.papers)
        stats.n_edges = int(self.cites.nnz)
        stats.n_untitled = sum(1 for p in self.papers if not p.title.strip())
        stats.n_incomplete = sum(1 for p in self.papers if p.references_status == "incomplete")
        self.stats = stats
        self.years = np.array([np.nan if p.year is None else p.year for p in self.papers], dtype=float)
        self.citations = np.array([np.nan if p.citation_count is None else p.citation_count for p in self.papers],
                                  dtype=float)

    def _set_edges(self, src: np.ndarray, dst: np.ndarray) -> None:
        n = len(self.papers)
        cites = sparse.csr_matrix((np.ones(len(src), dtype=np.int8), (src, dst)), shape=(n, n))
        cites.sum_duplicates()
        cites.data[:] = 1
        self.cites = cites
        self.cited_by = cites.T.tocsr()
        linked = (cites + self.cited_by).tocsr()
        linked.data[:] = 1
        self.linked = linked

    @classmethod
    def from_edges(cls, papers: list[Paper], src: np.ndarray, dst: np.ndarray) -> CitationGraph:
        """Build a graph from records plus edge arrays of node indices (fast path for large synthetic graphs).

        Args:
            papers: the nodes (ids unique; their ``reference_ids`` / ``citing_ids`` are ignored).
            src: int array (E,) of citing node indices in ``[0, len(papers))``.
            dst: int array (E,) of cited node indices.

        Returns:
            The graph (self-loops dropped and counted, repeated edges merged).

        Raises:
            ValueError: duplicate ids, arrays of different lengths or indices out of range.
        """
        graph = cls([])
        graph.papers = list(papers)
        graph.index = {p.id: i for i, p in enumerate(graph.papers)}
        if len(graph.index) != len(graph.papers):
            raise ValueError("from_edges: paper ids must be unique")
        src, dst = np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64)
        if src.shape != dst.shape or (len(src) and (min(src.min(), dst.min()) < 0 or
                                                     max(src.max(), dst.max()) >= len(papers))):
            raise ValueError("from_edges: src/dst must be equal-length arrays of node indices")
        keep = src != dst
        graph._set_edges(src[keep], dst[keep])
        graph.stats = GraphStats(n_papers=len(papers), n_edges=int(graph.cites.nnz),
                                 n_untitled=sum(1 for p in papers if not p.title.strip()),
                                 n_self_citations=int((~keep).sum()))
        graph.years = np.array([np.nan if p.year is None else p.year for p in papers], dtype=float)
        graph.citations = np.array([np.nan if p.citation_count is None else p.citation_count for p in papers],
                                   dtype=float)
        return graph

    def __len__(self) -> int:
        return len(self.papers)

    def ids_of(self, nodes: Any) -> list[str]:
        """Graph ids of node indices."""
        return [self.papers[int(i)].id for i in nodes]

    @classmethod
    def load(cls, path: str | os.PathLike) -> CitationGraph:
        """Load a graph from ``.jsonl``, ``.parquet`` or a saved-session ``.json`` file.

        Args:
            path: the file.

        Returns:
            The graph (``seeds`` filled for session files).

        Raises:
            OSError: the file cannot be read.
            ValueError: unknown suffix, a malformed line / record (names file, line and field).
        """
        path = Path(path)
        suffix = path.suffix.lower()
        if suffix == ".jsonl":
            papers = []
            with path.open(encoding="utf-8") as fh:
                for n, line in enumerate(fh, start=1):
                    if not line.strip():
                        continue
                    try:
                        row = json.loads(line)
                    except json.JSONDecodeError as err:
                        raise ValueError(f"{path} line {n}: not JSON ({err.msg})") from None
                    papers.append(Paper.from_dict(row, where=f"{path} line {n}"))
            return cls(papers)
        if suffix == ".parquet":
            rows = pq.read_table(path).to_pylist()
            return cls([Paper.from_dict(row, where=f"{path} row {n}") for n, row in enumerate(rows)])
        if suffix == ".json":
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except json.JSONDecodeError as err:
                raise ValueError(f"{path}: not JSON ({err.msg} at line {err.lineno})") from None
            papers, seeds, missing = papers_from_session(data, path=str(path))
            return cls(papers, seeds=seeds, missing=missing)
        raise ValueError(f"{path}: unknown graph format {suffix!r}; use .jsonl, .parquet or a saved-session .json")

    def save(self, path: str | os.PathLike) -> Path:
        """Write the records to ``.parquet`` (columns of :class:`Paper`) or ``.jsonl``.

        Args:
            path: the output file; its suffix picks the format.

        Returns:
            The path written. Edges are stored as each record's ``reference_ids`` / ``citing_ids``; loading the
            file rebuilds the same adjacency.

        Raises:
            ValueError: an unknown suffix.
        """
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        rows = [p.to_dict() for p in self.papers]
        if path.suffix.lower() == ".parquet":
            pq.write_table(pa.Table.from_pylist(rows), path, compression="zstd")
        elif path.suffix.lower() == ".jsonl":
            with path.open("w", encoding="utf-8") as fh:
                for row in rows:
                    fh.write(json.dumps(row, ensure_ascii=False) + "\n")
        else:
            raise ValueError(f"{path}: save as .parquet or .jsonl")
        return path

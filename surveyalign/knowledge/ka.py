"""Comp-KA and Crit-KA over a citation graph (SurveyReview §5.2.2, App. F.1 and F.2).

Both start from R (the survey's references resolved to graph nodes) and R+ (nodes with a citation link, either
direction, to some r in R). Before anything is ranked, R+ loses what would leak the answer or the future
(:func:`neighbourhood`): the survey's own node(s), papers citing the survey, and (by default) papers published
after it. Each exclusion is counted.

- Comp-KA (:func:`comp_ka`): score(p) = number of r in R linked to p; the top ``2n`` of R+ (n = |R|) by
  score, ties broken by citation count (higher first) then graph id (lexical), united with R and written as
  title, year and citation count per paper.
- Crit-KA candidates and blocks (:func:`crit_candidates`, :func:`pack_blocks`): tau_c / tau_y are the
  alpha-th / beta-th percentiles (numpy's linear interpolation) of R's citation counts / years; C = papers of
  R+ with citations >= tau_c or year >= tau_y, sorted by year (then citations, then id), packed into blocks of
  (title, abstract) under a token budget. The LLM stages live in :mod:`surveyalign.knowledge.summarise`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from surveyalign.knowledge.graph import CitationGraph

__all__ = [
    "Block",
    "CompKA",
    "CritCandidates",
    "Neighbourhood",
    "comp_ka",
    "crit_candidates",
    "format_paper_line",
    "neighbourhood",
    "pack_blocks",
]


@dataclass
class Neighbourhood:
    """R, the connectivity scores over R+, and what was excluded from R+.

    Attributes:
        references: node indices of R (distinct, in reference order).
        candidates: node indices of R+ after the exclusions (ascending).
        scores: int array aligned with ``candidates``: number of r in R linked to each candidate.
        n_neighbourhood: |R+| before the exclusions.
        excluded: ``{"survey": n, "citing_survey": n, "after_survey": n}`` (a paper is counted under the first
            reason that applies).
        cutoff_year: papers after this year were excluded (``None``: no year cut).
        cutoff_from: where the cutoff came from: ``"survey"`` (the survey's year), ``"references"`` (the
            newest year in R, the survey's year being unknown), or ``"none"``.
        n_unknown_year: candidates kept although their year is unknown.
    """

    references: np.ndarray
    candidates: np.ndarray
    scores: np.ndarray
    n_neighbourhood: int
    excluded: dict[str, int]
    cutoff_year: int | None
    cutoff_from: str
    n_unknown_year: int = 0


def neighbourhood(graph: CitationGraph, references: list[int], *, survey_nodes: list[int] | None = None,
                  survey_year: int | None = None, exclude_future: bool = True) -> Neighbourhood:
    """Score R+ against R and drop the survey, its citers and (by default) later papers.

    Args:
        graph: the citation graph.
        references: node indices of R (repeats are removed, order kept).
        survey_nodes: nodes standing for the survey itself (e.g. a node with the survey's title), if any.
        survey_year: the survey's publication year; when unknown the newest year in R is the cutoff.
        exclude_future: drop candidates published after the cutoff year.

    Returns:
        The :class:`Neighbourhood`. With R empty everything is empty.
    """
    refs = np.fromiter(dict.fromkeys(int(r) for r in references), dtype=np.int64)
    empty = np.zeros(0, dtype=np.int64)
    excluded = {"survey": 0, "citing_survey": 0, "after_survey": 0}
    if refs.size == 0:
        return Neighbourhood(refs, empty, empty, 0, excluded, None, "none")
    scores_all = np.asarray(graph.linked[refs].sum(axis=0)).ravel()
    cand = np.flatnonzero(scores_all)
    n_plus = int(cand.size)
    keep = np.ones(cand.size, dtype=bool)
    survey = np.asarray(sorted(set(survey_nodes or [])), dtype=np.int64)
    if survey.size:
        is_survey = np.isin(cand, survey)
        excluded["survey"] = int(is_survey.sum())
        keep &= ~is_survey
        citers = np.unique(graph.cited_by[survey].indices)
        is_citer = np.isin(cand, citers) & keep
        excluded["citing_survey"] = int(is_citer.sum())
        keep &= ~is_citer
    cutoff, cutoff_from = None, "none"
    if exclude_future:
        if survey_year is not None:
            cutoff, cutoff_from = int(survey_year), "survey"
        else:
            ref_years = graph.years[refs]
            if np.isfinite(ref_years).any():
                cutoff, cutoff_from = int(np.nanmax(ref_years)), "references"
    years = graph.years[cand]
    if cutoff is not None:
        later = (years > cutoff) & keep  # nan > x is False: unknown years are kept (and counted below)
        excluded["after_survey"] = int(later.sum())
        keep &= ~later
    n_unknown = int((~np.isfinite(years) & keep).sum())
    return Neighbourhood(refs, cand[keep], scores_all[cand[keep]].astype(np.int64), n_plus, excluded, cutoff,
                         cutoff_from, n_unknown)


def _id_rank(graph: CitationGraph) -> np.ndarray:
    """Rank of each node's id in lexical order (cached on the graph): the last tie-break."""
    rank = getattr(graph, "_id_rank", None)
    if rank is None or len(rank) != len(graph):
        order = np.argsort(np.asarray([p.id for p in graph.papers], dtype=object), kind="stable")
        rank = np.empty(len(graph), dtype=np.int64)
        rank[order] = np.arange(len(graph))
        graph._id_rank = rank
    return rank


def format_paper_line(graph: CitationGraph, node: int) -> str:
    """One Comp-KA entry (App. F.1 serialisation: title, year, citation count).

    Args:
        graph: the citation graph.
        node: a node index.

    Returns:
        ``"- Title (2019; 1,234 citations)"``; an unknown year or count is written ``year unknown`` /
        ``citations unknown`` and an empty title ``[untitled record <id>]``.
    """
    paper = graph.papers[int(node)]
    title = paper.title.strip() or f"[untitled record {paper.id}]"
    year = str(paper.year) if paper.year is not None else "year unknown"
    cites = f"{paper.citation_count:,} citations" if paper.citation_count is not None else "citations unknown"
    return f"- {title} ({year}; {cites})"


@dataclass
class CompKA:
    """A Comp-KA result.

    Attributes:
        text: the serialised content ("" when R is empty).
        references: node indices of R, in reference order.
        top: node indices of Top_2n(R+) in rank order.
        added: ``top`` minus R (the neighbourhood part written after R).
        scores: connectivity score of each node in ``top`` (aligned).
        n_top_in_references: members of ``top`` that are in R already (the union absorbs them).
        n_untitled: entries written without a title.
        n_dropped_added: neighbourhood entries left out to fit ``max_tokens`` (0 without a budget).
        n_dropped_references: references left out to fit ``max_tokens``.
    """

    text: str
    references: list[int]
    top: list[int]
    added: list[int]
    scores: list[int]
    n_top_in_references: int
    n_untitled: int
    n_dropped_added: int = 0
    n_dropped_references: int = 0


def _comp_text(graph: CitationGraph, refs: list[int], added: list[int], n_refs: int, n_added: int) -> str:
    """The Comp-KA text; a header says "k of n" when a token budget left entries out."""

    def count(kept: int, total: int) -> str:
        return str(total) if kept == total else f"{kept} of {total}"

    lines: list[str] = []
    if refs:
        lines.append(f"Cited by the survey ({count(len(refs), n_refs)}):")
        lines += [format_paper_line(graph, r) for r in refs]
    if added:
        lines.append(f"Connected to those references by citations, most connected first "
                     f"({count(len(added), n_added)}):")
        lines += [format_paper_line(graph, p) for p in added]
    return "\n".join(lines)


def _largest_fitting(n: int, fits: Callable[[int], bool]) -> int:
    """Largest k in [0, n] with ``fits(k)`` (``fits`` monotone: true up to some k, false after)."""
    lo, hi = 0, n
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid - 1)
    return lo


def comp_ka(graph: CitationGraph, hood: Neighbourhood, *, top_factor: int = 2, max_tokens: int | None = None,
            count_tokens: Callable[[str], int] | None = None) -> CompKA:
    """Comp-KA = R united with Top_{2n}(R+) (SurveyReview App. F.1), written as title / year / citations.

    Ranking: score(p) descending, then citation count descending (unknown = lowest), then graph id ascending
    (deterministic). R members that are linked to other references are candidates like any other paper
    (App. F.1 ranks all of R+); the union with R then absorbs them (counted in ``n_top_in_references``).

    Args:
        graph: the citation graph.
        hood: R and scored R+ from :func:`neighbourhood`.
        top_factor: keep ``top_factor * |R|`` papers of R+ (2 in the paper).
        max_tokens: optional budget of the text (not in the paper, whose judge had a long context): the
            lowest-ranked neighbourhood entries go first, then the last references, until the text fits.
        count_tokens: the judge tokenizer's counter; required with ``max_tokens``.

    Returns:
        The :class:`CompKA`.

    Raises:
        ValueError: ``max_tokens`` without ``count_tokens``.
    """
    if max_tokens is not None and count_tokens is None:
        raise ValueError("comp_ka: max_tokens needs count_tokens (the judge tokenizer)")
    refs = [int(r) for r in hood.references]
    k = top_factor * len(refs)
    if hood.candidates.size:
        cites = np.nan_to_num(graph.citations[hood.candidates], nan=-1.0)
        order = np.lexsort((_id_rank(graph)[hood.candidates], -cites, -hood.scores))[:k]
        top, scores = hood.candidates[order].tolist(), hood.scores[order].tolist()
    else:
        top, scores = [], []
    in_refs = set(refs)
    added = [p for p in top if p not in in_refs]
    kept_refs, kept_added = refs, added
    def fits(kept_r: list[int], kept_a: list[int]) -> bool:
        return count_tokens(_comp_text(graph, kept_r, kept_a, len(refs), len(added))) <= max_tokens

    if max_tokens is not None and not fits(refs, added):
        kept_added = added[:_largest_fitting(len(added), lambda n: fits(refs, added[:n]))]
        if not kept_added:
            kept_refs = refs[:_largest_fitting(len(refs), lambda n: fits(refs[:n], []))]
    untitled = sum(1 for p in kept_refs + kept_added if not graph.papers[p].title.strip())
    return CompKA(_comp_text(graph, kept_refs, kept_added, len(refs), len(added)), refs, top, added, scores, len(top) - len(added),
                  untitled, len(added) - len(kept_added), len(refs) - len(kept_refs))


@dataclass
class CritCandidates:
    """The Crit-KA candidate set C (App. F.2).

    Attributes:
        tau_c: alpha-th percentile of R's citation counts (``None`` when no reference has a count).
        tau_y: beta-th percentile of R's years (``None`` when no reference has a year).
        nodes: C sorted by year ascending (ties: citations descending, then id).
        n_no_year: papers that pass a threshold but have no year, so cannot be placed in time (left out).
    """

    tau_c: float | None
    tau_y: float | None
    nodes: list[int]
    n_no_year: int


def crit_candidates(graph: CitationGraph, hood: Neighbourhood, *, alpha: float, beta: float) -> CritCandidates:
    """C = {p in R+ : citations(p) >= tau_c or year(p) >= tau_y}, sorted chronologically (App. F.2).

    Args:
        graph: the citation graph.
        hood: from :func:`neighbourhood` (R+ after the exclusions).
        alpha: percentile in [0, 100] of R's citation counts.
        beta: percentile in [0, 100] of R's years.

    Returns:
        The :class:`CritCandidates`.
    """
    ref_cites = graph.citations[hood.references]
    ref_years = graph.years[hood.references]
    ref_cites, ref_years = ref_cites[np.isfinite(ref_cites)], ref_years[np.isfinite(ref_years)]
    tau_c = float(np.percentile(ref_cites, alpha)) if ref_cites.size else None
    tau_y = float(np.percentile(ref_years, beta)) if ref_years.size else None
    cand = hood.candidates
    cites, years = graph.citations[cand], graph.years[cand]
    passes = np.zeros(cand.size, dtype=bool)
    if tau_c is not None:
        passes |= np.nan_to_num(cites, nan=-np.inf) >= tau_c
    if tau_y is not None:
        passes |= np.nan_to_num(years, nan=-np.inf) >= tau_y
    dated = passes & np.isfinite(years)
    chosen = cand[dated]
    order = np.lexsort((_id_rank(graph)[chosen], -np.nan_to_num(graph.citations[chosen], nan=-1.0),
                        graph.years[chosen]))
    return CritCandidates(tau_c, tau_y, chosen[order].tolist(), int((passes & ~dated).sum()))


@dataclass
class Block:
    """One temporal block of Crit-KA.

    Attributes:
        nodes: the papers in it, in year order.
        first_year / last_year: its year interval [y_min, y_max].
        text: the packed ``Title (year): abstract`` lines.
        tokens: tokens of ``text`` counted with the judge tokenizer (<= the budget unless one paper alone
            exceeds it, in which case its abstract is cut: see ``n_cut``).
        n_cut: papers whose abstract was shortened to fit the budget alone (0 or 1).
    """

    nodes: list[int]
    first_year: int
    last_year: int
    text: str
    tokens: int
    n_cut: int = 0


def _entry(graph: CitationGraph, node: int) -> str:
    paper = graph.papers[node]
    title = paper.title.strip() or f"[untitled record {paper.id}]"
    abstract = " ".join(paper.abstract.split()) or "(no abstract)"
    return f"{title} ({paper.year}): {abstract}"


def pack_blocks(graph: CitationGraph, nodes: list[int], *, budget: int,
                count_tokens: Callable[[str], int]) -> list[Block]:
    """Pack (title, abstract) entries, in the given (chronological) order, into blocks of at most ``budget`` tokens.

    An entry is added to the current block while the block stays within the budget; otherwise a new block
    starts. An entry longer than the budget on its own gets a block of its own with the end of its abstract
    removed (word by word, then counted again) until it fits.

    Args:
        graph: the citation graph.
        nodes: C from :func:`crit_candidates` (year order).
        budget: B, the token budget of one block (> 0).
        count_tokens: counts tokens of a text with the judge's tokenizer.

    Returns:
        The blocks in order (empty for no nodes).
    """
    blocks: list[Block] = []
    current: list[tuple[int, str]] = []

    def flush() -> None:
        if current:
            text = "\n".join(e for _, e in current)
            ns = [n for n, _ in current]
            blocks.append(Block(ns, int(graph.years[ns[0]]), int(graph.years[ns[-1]]), text, count_tokens(text)))
            current.clear()

    for node in nodes:
        entry = _entry(graph, node)
        candidate = "\n".join([*(e for _, e in current), entry])
        if count_tokens(candidate) <= budget:
            current.append((node, entry))
            continue
        flush()
        if count_tokens(entry) <= budget:
            current.append((node, entry))
            continue
        words = entry.split()
        while len(words) > 1 and count_tokens(" ".join(words)) > budget:
            words = words[: max(1, int(len(words) * 0.9))]
        text = " ".join(words)
        blocks.append(Block([node], int(graph.years[node]), int(graph.years[node]), text, count_tokens(text), 1))
    flush()
    return blocks

"""Which published article is a release paper? Search, the safe matching rule, the version (SurveyReview App. A).

F1000Research and PeerJ (MOPRD) papers are searched in Europe PMC by title (as a phrase, then by its words
when the phrase finds nothing; MOPRD also by the DOI its uid suggests, ``10.7717/peerj.<paper>``), OpenReview papers in OpenReview. Every hit goes through the same rule as
knowledge augmentation, :func:`surveyalign.documents.same_paper` (close normalised title, confirmed by
another field); a hit from another journal than the source's is rejected before that. No hit is taken because
it came first.

Versions: F1000Research publishes every version under its own DOI (``...f1000research.N.V``); the version the
uid names is taken, else the first one (recorded). PeerJ publishes the accepted text only, so a MOPRD review of
an earlier version gets the published text (recorded). OpenReview serves the latest revision's PDF (recorded).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from surveyalign.documents import MatchDecision, same_paper

from .apis import SOURCE_DOI_PREFIXES, Candidate, EuropePMC, OpenReview
from .targets import PaperTarget

#: Sources whose texts come from Europe PMC JATS, and from OpenReview PDFs.
JATS_SOURCES = ("f1000", "moprd")
PDF_SOURCES = ("openreview",)
#: Candidates listed per target in the fetch report.
_LISTED = 5


@dataclass
class Identification:
    """Outcome of identifying one target.

    Attributes:
        status: "resolved" or "unresolved".
        reason: why (the accepted match's reason, or why nothing was accepted).
        candidate: the accepted hit, None when unresolved.
        method: the rule's method ("title+year", "doi", ...), "unresolved" otherwise.
        score: title similarity of the accepted (or best rejected) hit, 0-100.
        version: ``{"requested": int | None, "taken": int | str | None, "rule": str}``.
        candidates: the first hits with the rule's verdict, for the report.
        uid_doi_agrees: MOPRD only: whether the accepted DOI is the one the uid suggests (None otherwise).
    """

    status: str
    reason: str
    candidate: Candidate | None = None
    method: str = "unresolved"
    score: float = 0.0
    version: dict[str, Any] = field(default_factory=dict)
    candidates: list[dict[str, Any]] = field(default_factory=list)
    uid_doi_agrees: bool | None = None


@dataclass
class ReleasePaper:
    """A release paper as the matching rule reads it: title and abstract (the release has no year or authors).

    Attributes:
        key: the target key.
        title: paper title.
        abstract: paper abstract ("" when absent).
    """

    key: str
    title: str
    abstract: str = ""
    year: int | None = None
    doi: str | None = None
    arxiv_id: str | None = None
    first_author_surname: str | None = None


def _query(target: PaperTarget) -> ReleasePaper:
    return ReleasePaper(key=target.key, title=target.title, abstract=target.abstract)


def _journal_check(target: PaperTarget, cand: Candidate) -> MatchDecision | None:
    prefixes = SOURCE_DOI_PREFIXES.get(target.source)
    if prefixes and not (cand.paper.doi or "").startswith(prefixes):
        return MatchDecision(False, "rejected", 0.0, f"{cand.paper.doi or 'no DOI'} is not a {target.source} "
                                                     f"DOI ({', '.join(prefixes)})")
    return None


def expected_doi(target: PaperTarget) -> str | None:
    """The DOI a MOPRD uid suggests (``10.7717/peerj.<paper>``), None for other sources or non-numeric ids."""
    if target.source == "moprd" and target.paper_id and target.paper_id.isdigit():
        return f"10.7717/peerj.{target.paper_id}"
    return None


def candidates_for(target: PaperTarget, europepmc: EuropePMC, openreview: Sequence[OpenReview]) -> list[Candidate]:
    """Search hits for a target, deduplicated by id, in search order.

    Args:
        target: the paper.
        europepmc: client for F1000Research / PeerJ papers.
        openreview: clients for OpenReview papers (API 2, API 1), searched in order.

    Returns:
        The hits (possibly empty).

    Raises:
        surveyalign.calls.HTTPStatusError, ValueError: a search failed.
    """
    hits: list[Candidate] = []
    if target.source in JATS_SOURCES:
        doi = expected_doi(target)
        if doi:
            hits += europepmc.search(f'DOI:"{doi}"')
        titled = europepmc.search(EuropePMC.title_query(target.title))
        hits += titled or europepmc.search(EuropePMC.title_query(target.title, phrase=False))
    elif target.source in PDF_SOURCES:
        for client in openreview:
            hits += client.search(target.title)
    return list({c.paper.id: c for c in reversed(hits)}.values())[::-1]


def decide(target: PaperTarget, hits: list[Candidate]) -> Identification:
    """Apply the matching rule to every hit and choose the version.

    Args:
        target: the paper.
        hits: its search hits.

    Returns:
        The :class:`Identification` (unresolved with the reason when no hit passes).
    """
    query = _query(target)
    judged: list[tuple[Candidate, MatchDecision]] = []
    for cand in hits:
        judged.append((cand, _journal_check(target, cand) or same_paper(query, cand.paper)))
    listed = [{**c.to_dict(), "same": d.same, "method": d.method, "reason": d.reason} for c, d in judged[:_LISTED]]
    accepted = [(c, d) for c, d in judged if d.same]
    if not accepted:
        if not judged:
            reason = "no search hit"
        else:
            best = max((d for _, d in judged), key=lambda d: d.score)
            reason = f"{len(judged)} hit(s), none accepted; best: {best.reason}"
        return Identification("unresolved", reason, score=max((d.score for _, d in judged), default=0.0),
                              candidates=listed, version={"requested": target.version, "taken": None, "rule": ""})
    chosen, version, problem = _choose_version(target, accepted)
    if chosen is None:
        return Identification("unresolved", problem, candidates=listed, version=version)
    cand, decision = chosen
    doi = expected_doi(target)
    return Identification("resolved", decision.reason, candidate=cand, method=decision.method, score=decision.score,
                          version=version, candidates=listed,
                          uid_doi_agrees=(cand.paper.doi == doi) if doi else None)


def _choose_version(target: PaperTarget, accepted: list[tuple[Candidate, MatchDecision]]):
    """(chosen hit or None, version record, reason when none fits)."""
    best_first = sorted(accepted, key=lambda cd: -cd[1].score)
    if target.source == "f1000":
        versions = sorted({c.version for c, _ in accepted if c.version is not None})
        if target.version is not None:
            rule = f"version {target.version} named by the uid"
            match = next((cd for cd in best_first if cd[0].version == target.version), None)
            version = {"requested": target.version, "taken": target.version if match else None, "rule": rule}
            if match is None:
                return None, version, f"version {target.version} not found (found: {versions or 'none'})"
            return match, version, ""
        if versions:
            first = next(cd for cd in best_first if cd[0].version == versions[0])
            return first, {"requested": None, "taken": versions[0],
                           "rule": f"uid names no version: earliest version found taken (found: {versions})"}, ""
        return best_first[0], {"requested": None, "taken": None, "rule": "DOI names no version"}, ""
    if target.source == "moprd":
        rule = ("PeerJ publishes the accepted text only: published version taken"
                + (f" (the uid names reviewed version {target.version})" if target.version is not None else ""))
        return best_first[0], {"requested": target.version, "taken": "published", "rule": rule}, ""
    return best_first[0], {"requested": None, "taken": "latest",
                           "rule": "OpenReview /pdf serves the latest revision of the submission"}, ""

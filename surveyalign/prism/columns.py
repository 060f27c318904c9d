"""PRISM scores from column-shaped unit tables (one row per extracted unit), grouped by review.

These are the functions behind the ``evaluate`` module ``metrics/prism``: each takes parallel lists (one entry
per unit, the review it belongs to in ``review_ids``), groups the units by review in first-seen order, scores each
review with the pure formulas, and averages the per-review values (None values are left out of the mean and
counted).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from surveyalign.prism.constructiveness import constructiveness
from surveyalign.prism.depth import depth_of_analysis
from surveyalign.prism.flaws import flaw_recall, ncps
from surveyalign.prism.novelty import novelty_scores
from surveyalign.prism.units import (
    ADU,
    CONSTRUCTIVENESS_AXES,
    Flaw,
    NoveltyClaim,
    PairVerdict,
    RankedCritique,
    ReviewComment,
)

__all__ = [
    "constructiveness_by_review",
    "depth_by_review",
    "flaws_by_reviewer",
    "mean_over_reviews",
    "novelty_by_review",
    "prioritisation_by_review",
]


def _check_lengths(**columns: Sequence[Any]) -> int:
    lengths = {name: len(col) for name, col in columns.items()}
    if len(set(lengths.values())) > 1:
        raise ValueError(f"unit columns differ in length: {lengths}")
    return next(iter(lengths.values()), 0)


def _group(review_ids: Sequence[str], items: Sequence[Any]) -> dict[str, list[Any]]:
    groups: dict[str, list[Any]] = {}
    for rid, item in zip(review_ids, items, strict=True):
        groups.setdefault(str(rid), []).append(item)
    return groups


def mean_over_reviews(per_review: Mapping[str, Mapping[str, Any]], keys: Sequence[str]) -> dict[str, Any]:
    """Mean of each of ``keys`` over reviews, leaving out reviews where it is None.

    Args:
        per_review: review id -> that review's score dict.
        keys: the score names to average.

    Returns:
        ``{key: mean or None (no review has a value), f"n_{key}": reviews averaged}``.
    """
    out: dict[str, Any] = {}
    for key in keys:
        values = [r[key] for r in per_review.values() if r.get(key) is not None]
        out[key] = sum(values) / len(values) if values else None
        out[f"n_{key}"] = len(values)
    return out


def depth_by_review(review_ids: Sequence[str], roles: Sequence[str], aspects: Sequence[str],
                    grounding: Sequence[int | None]) -> dict[str, Any]:
    """DoA per review and its mean (PRISM §3.1), from one row per ADU.

    Args:
        review_ids: the review of each ADU.
        roles: ``"claim"`` or ``"premise"`` per ADU.
        aspects: one of ``prism.units.ASPECTS`` per ADU.
        grounding: 0 / 1 / 2 per premise, None for claims and ungraded premises.

    Returns:
        ``{"per_review": {id: depth_of_analysis(...)}, "doa", "r_premise", "s_depth", "n_reviews", ...}``.
    """
    _check_lengths(review_ids=review_ids, roles=roles, aspects=aspects, grounding=grounding)
    adus = [ADU("", r, a, g) for r, a, g in zip(roles, aspects, grounding, strict=True)]
    per = {rid: depth_of_analysis(units) for rid, units in _group(review_ids, adus).items()}
    return {"per_review": per, "n_reviews": len(per), **mean_over_reviews(per, ("doa", "r_premise", "s_depth"))}


def novelty_by_review(review_ids: Sequence[str], claim_ids: Sequence[str], scores: Sequence[int | None],
                      relevance: Sequence[float | None], policy: str = "top3_weighted") -> dict[str, Any]:
    """NS / SR / strict SR per review and their means, from one row per (claim, prior paper) pair.

    A row with ``scores`` None stands for a claim without any judged pair (its claim score is 0).

    Args:
        review_ids: the review of each pair row.
        claim_ids: the claim of each pair row (claims are grouped within their review).
        scores: the pair verdict score in -2..2, or None for a claim row without pairs.
        relevance: the pair's relevance >= 0, or None when the pair carries none (kept apart from 0: a claim whose
            pairs carry none is scored by PRISM's magnitude rule, see ``prism.novelty.claim_score``).
        policy: claim-score aggregation policy (``prism.novelty.CLAIM_POLICIES``).

    Returns:
        ``{"per_review": {id: novelty_scores(...)}, "ns", "sr", "strict_sr", "n_reviews", ...}``.
    """
    _check_lengths(review_ids=review_ids, claim_ids=claim_ids, scores=scores, relevance=relevance)
    claims: dict[str, dict[str, list[PairVerdict]]] = {}
    for rid, cid, score, rel in zip(review_ids, claim_ids, scores, relevance, strict=True):
        pairs = claims.setdefault(str(rid), {}).setdefault(str(cid), [])
        if score is not None:
            pairs.append(PairVerdict(int(score), None if rel is None else float(rel)))
    per = {rid: novelty_scores([NoveltyClaim(cid, pairs=p) for cid, p in by_claim.items()], policy)
           for rid, by_claim in claims.items()}
    return {"per_review": per, "n_reviews": len(per), **mean_over_reviews(per, ("ns", "sr", "strict_sr"))}


def flaws_by_reviewer(flaw_ids: Sequence[str], severities: Sequence[str], valid: Sequence[bool | None],
                      raised_by: Sequence[Sequence[str]], reviewer_ids: Sequence[str] | None = None,
                      consensus_reviewers: Sequence[str] | None = None) -> dict[str, Any]:
    """Critical / minor recall (plain and consensus-weighted) per reviewer, from one row per pooled flaw.

    Args:
        flaw_ids: the pooled flaw of each row.
        severities: ``"critical"``, ``"minor"`` or another label (not counted).
        valid: the validation outcome (only True counts).
        raised_by: the exact reviewer ids that raised each flaw.
        reviewer_ids: whom to score (default: every id in ``raised_by``, sorted).
        consensus_reviewers: the ids defining the consensus weight (default: every id in ``raised_by``).

    Returns:
        ``{"per_reviewer": {id: flaw_recall(...)}, "critical_recall", "minor_recall", ...}`` (means).
    """
    _check_lengths(flaw_ids=flaw_ids, severities=severities, valid=valid, raised_by=raised_by)
    flaws = [Flaw(str(f), severity=s, valid=v, raised_by=frozenset(r or ()))
             for f, s, v, r in zip(flaw_ids, severities, valid, raised_by, strict=True)]
    ids = list(reviewer_ids) if reviewer_ids is not None else sorted(set().union(*(f.raised_by for f in flaws)))
    per = {rid: flaw_recall(flaws, rid, consensus_reviewers) for rid in ids}
    keys = ("critical_recall", "minor_recall", "weighted_critical_recall", "weighted_minor_recall", "weighted_recall")
    return {"per_reviewer": per, "n_reviewers": len(per), **mean_over_reviews(per, keys)}


def prioritisation_by_review(review_ids: Sequence[str], sections: Sequence[str], severities: Sequence[str],
                             quotes: Sequence[str], review_texts: Mapping[str, str] | None = None
                             ) -> dict[str, Any]:
    """nCPS per review and its mean, from one row per critique (extractor order within each review).

    Args:
        review_ids: the review of each critique.
        sections: the review section of each critique.
        severities: ``"critical"`` (2), ``"minor"`` (1) or another label (0).
        quotes: the critique's span in the review ("" when none).
        review_texts: review id -> full text, to recover each critique's position from its quote; reviews
            without a text keep the row order.

    Returns:
        ``{"per_review": {id: ncps(...)}, "ncps", "n_ncps", "n_reviews"}``.
    """
    _check_lengths(review_ids=review_ids, sections=sections, severities=severities, quotes=quotes)
    crits = [RankedCritique(sev or "none", sec or "weaknesses", q or "")
             for sec, sev, q in zip(sections, severities, quotes, strict=True)]
    texts = review_texts or {}
    per = {rid: ncps(units, texts.get(rid)) for rid, units in _group(review_ids, crits).items()}
    return {"per_review": per, "n_reviews": len(per), **mean_over_reviews(per, ("ncps",))}


def constructiveness_by_review(review_ids: Sequence[str], kinds: Sequence[str],
                               **axes: Sequence[int]) -> dict[str, Any]:
    """MCS / AR / SD / CD per review and their means, from one row per atomic comment.

    Args:
        review_ids: the review of each comment.
        kinds: one of ``prism.units.COMMENT_TYPES`` per comment.
        **axes: one column per constructiveness axis (actionability, specificity, justification, solution, tone).

    Returns:
        ``{"per_review": {id: constructiveness(...)}, "mcs", "ar", "sd", "cd", "n_reviews", ...}``.

    Raises:
        ValueError: an axis column is missing or the columns differ in length.
    """
    missing = [a for a in CONSTRUCTIVENESS_AXES if a not in axes]
    if missing:
        raise ValueError(f"constructiveness columns missing: {missing}")
    _check_lengths(review_ids=review_ids, kinds=kinds, **{a: axes[a] for a in CONSTRUCTIVENESS_AXES})
    comments = [ReviewComment("", kinds[i], *(axes[a][i] for a in CONSTRUCTIVENESS_AXES))
                for i in range(len(review_ids))]
    per = {rid: constructiveness(units) for rid, units in _group(review_ids, comments).items()}
    return {"per_review": per, "n_reviews": len(per), **mean_over_reviews(per, ("mcs", "ar", "sd", "cd"))}

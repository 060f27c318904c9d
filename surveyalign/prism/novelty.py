"""Novelty assessment: claim scores from prior-work verdicts, NS, SR and strict SR (PRISM novelty).

Each novelty claim of a review is paired with retrieved prior papers; each pair gets a verdict score in
{+2 supported, +1 overstated, 0 ambiguous, -1 understated, -2 unsupported} and a relevance. The claim's
score aggregates its pairs (default: relevance-weighted mean of the 3 most relevant pairs; plain mean when
those weights sum to 0; when no pair carries a relevance value at all, PRISM's code takes the mean of the 3
verdicts of largest |score|; 0 when the claim has no pair). Per review, NS = clip((mean claim score + 2) / 4,
0, 1), SR = share of claims scoring >= 1, strict SR = share scoring >= 2; all three are None for a review
without novelty claims (nothing to verify).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from surveyalign.prism.units import NoveltyClaim, PairVerdict

__all__ = ["CLAIM_POLICIES", "claim_score", "novelty_scores"]


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)


def _rel(pair: PairVerdict) -> float:
    return 0.0 if pair.relevance is None else pair.relevance


def _weighted(pairs: Sequence[PairVerdict]) -> float:
    total = sum(_rel(p) for p in pairs)
    if total == 0:
        return _mean([p.score for p in pairs])
    return sum(p.score * _rel(p) for p in pairs) / total


def _by_relevance(pairs: Sequence[PairVerdict]) -> list[PairVerdict]:
    return sorted(pairs, key=lambda p: -_rel(p))  # stable: ties keep retrieval order


def _by_magnitude(pairs: Sequence[PairVerdict]) -> list[PairVerdict]:
    return sorted(pairs, key=lambda p: -abs(p.score))  # stable: ties keep retrieval order


def _top3_weighted(pairs: Sequence[PairVerdict]) -> float:
    """PRISM's rule: the relevance-weighted mean of the 3 most relevant pairs; when no pair carries a relevance
    value (all ``None``), the mean of the 3 verdicts of largest magnitude |score| (signs kept)."""
    if all(p.relevance is None for p in pairs):
        return _mean([p.score for p in _by_magnitude(pairs)[:3]])
    return _weighted(_by_relevance(pairs)[:3])


#: Claim-score aggregation policies by name; each maps a non-empty list of pairs to a score in [-2, 2].
CLAIM_POLICIES: dict[str, Callable[[Sequence[PairVerdict]], float]] = {
    "top3_weighted": _top3_weighted,
    "weighted": _weighted,
    "mean": lambda pairs: _mean([p.score for p in pairs]),
    "top1": lambda pairs: float(_by_relevance(pairs)[0].score),
    "top3_mean": lambda pairs: _mean([p.score for p in _by_relevance(pairs)[:3]]),
}


def claim_score(pairs: Sequence[PairVerdict], policy: str = "top3_weighted") -> float:
    """Score of one novelty claim from its judged prior-work pairs.

    Args:
        pairs: the claim's (claim, prior paper) verdicts, in retrieval order; may be empty.
        policy: a name of :data:`CLAIM_POLICIES`: ``"top3_weighted"`` (PRISM's rule: relevance-weighted mean
            of the 3 most relevant pairs; when no pair carries a relevance value, the mean of the 3 verdicts of
            largest |score|, signs kept; a relevance of 0 is a value, ``None`` is none), ``"weighted"`` (all
            pairs relevance-weighted), ``"mean"`` (all pairs), ``"top1"`` (the most relevant pair),
            ``"top3_mean"`` (plain mean of the 3 most relevant). Weighted policies fall back to the plain mean
            when the weights sum to 0.

    Returns:
        A score in [-2, 2]; 0.0 when ``pairs`` is empty.

    Raises:
        ValueError: unknown policy name.
    """
    if policy not in CLAIM_POLICIES:
        raise ValueError(f"unknown claim-score policy {policy!r}; choose one of {sorted(CLAIM_POLICIES)}")
    if not pairs:
        return 0.0
    return float(CLAIM_POLICIES[policy](list(pairs)))


def novelty_scores(claims: Sequence[NoveltyClaim], policy: str = "top3_weighted") -> dict[str, Any]:
    """Novelty score NS, support rate SR and strict SR of one review.

    Args:
        claims: the review's novelty claims with their pair verdicts; may be empty.
        policy: claim-score aggregation policy (see :func:`claim_score`).

    Returns:
        ``{"ns", "sr", "strict_sr", "mean_claim_score", "claim_scores", "n_claims", "n_without_pairs",
        "policy"}``: NS in [0, 1], SR and strict SR in [0, 1]; the first four are None when there is no claim.

    Raises:
        ValueError: unknown policy name.
    """
    scores = [claim_score(c.pairs, policy) for c in claims]
    mean = _mean(scores) if scores else None
    return {
        "ns": None if mean is None else min(1.0, max(0.0, (mean + 2) / 4)),
        "sr": sum(s >= 1 for s in scores) / len(scores) if scores else None,
        "strict_sr": sum(s >= 2 for s in scores) / len(scores) if scores else None,
        "mean_claim_score": mean,
        "claim_scores": scores,
        "n_claims": len(scores),
        "n_without_pairs": sum(not c.pairs for c in claims),
        "policy": policy,
    }

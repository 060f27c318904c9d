"""Aggregation of K sampled judgements into one score (SurveyReview §5.3, App. E).

The paper samples K=5 score-rationale pairs per dimension at temperature 0.7, takes the majority score,
and breaks a tie with the highest average generation log-probability. This module holds the pure vote
(:func:`majority_vote`) and the decision of one unit from its parsed samples (:func:`decide`): status, score,
rationale and reason. :class:`surveyalign.judge.Judge` takes the vote step as a plain function (:data:`VoteFn`),
so another aggregation plugs in without touching the status rules.

The second half of App. E (merging the K rationales into one, conditioned on the rubric and the winning
score) is not done here: the rationale of the best-scoring winning sample is kept; the merge is
:mod:`surveyalign.judge.synthesis` (used by ``surveyalign score`` and ``surveyalign evaluate``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from surveyalign.constants import API_ERROR, PARSE_FAILED, SCORED
from surveyalign.judge.records import Judgement, PreparedPrompt, SampleRecord

__all__ = ["Vote", "VoteFn", "decide", "majority_vote", "vote_samples"]


@dataclass(frozen=True)
class Vote:
    """Outcome of :func:`majority_vote`.

    Attributes:
        score: the winning score, or ``None`` when no sample carried a score.
        counts: votes per score over the samples that carried one, e.g. ``{-1: 3, 1: 2}``.
        winners: indices (into the input sequence) of the samples whose score equals ``score``, in input
            order; empty when ``score`` is ``None``.
        best_index: index of the winning sample with the highest mean log-probability (the first winning
            sample when none has a log-probability); ``None`` when ``score`` is ``None``. The harness takes
            the rationale of this sample.
        tie_break: ``None`` when one score had strictly the most votes; ``"logprob"`` when a tie was settled
            by mean log-probability; ``"first_seen"`` when the tied scores also tied (or lacked)
            log-probabilities and the score seen first in the input won.
        n_voted: number of samples that carried a score (``sum(counts.values())``).
    """

    score: int | None
    counts: dict[int, int] = field(default_factory=dict)
    winners: tuple[int, ...] = ()
    best_index: int | None = None
    tie_break: str | None = None
    n_voted: int = 0

    def to_dict(self) -> dict[str, Any]:
        """``{"counts": {score as str: votes}, "tie_break", "chosen_sample"}`` (a prediction's ``vote`` entry)."""
        return {"counts": {str(s): c for s, c in self.counts.items()}, "tie_break": self.tie_break,
                "chosen_sample": self.best_index}


def _mean_logprob(indices: Sequence[int], logprobs: Sequence[float | None]) -> float:
    """Average of the finite log-probabilities among ``indices``; ``-inf`` when there is none."""
    values = [logprobs[i] for i in indices if logprobs[i] is not None and math.isfinite(logprobs[i])]
    return sum(values) / len(values) if values else -math.inf


def majority_vote(
    scores: Sequence[int | None],
    logprobs: Sequence[float | None] | None = None,
) -> Vote:
    """Majority vote over K sampled scores with the paper's log-probability tie-break (SurveyReview App. E).

    Args:
        scores: the parsed score of each of the K samples (any ints, typically in {-2,-1,1,2}); ``None``
            marks a sample without a score (parse failure or API error) and takes no part in the vote.
        logprobs: per sample, the mean per-token log-probability of its generation (natural log, <= 0), or
            ``None`` when the backend gave none. Same length as ``scores``; ``None`` means no
            log-probabilities at all.

    Returns:
        A :class:`Vote`. The score with the most votes wins. When several scores tie, the one whose
        samples have the highest average of their mean log-probabilities wins (samples without one are
        ignored in that average; a score none of whose samples has one ranks lowest). If the tie persists,
        the tied score seen first in ``scores`` wins (``tie_break="first_seen"``), so the result is
        deterministic.

    Raises:
        ValueError: if ``logprobs`` is given with a different length from ``scores``.
    """
    if logprobs is None:
        logprobs = [None] * len(scores)
    if len(logprobs) != len(scores):
        raise ValueError(f"majority_vote: {len(scores)} scores but {len(logprobs)} log-probabilities")

    counts: dict[int, int] = {}
    first_seen: dict[int, int] = {}
    for index, score in enumerate(scores):
        if score is None:
            continue
        counts[score] = counts.get(score, 0) + 1
        first_seen.setdefault(score, index)
    if not counts:
        return Vote(score=None)

    top = max(counts.values())
    tied = sorted((s for s, c in counts.items() if c == top), key=lambda s: first_seen[s])
    tie_break: str | None = None
    if len(tied) == 1:
        winner = tied[0]
    else:
        means = {s: _mean_logprob([i for i, x in enumerate(scores) if x == s], logprobs) for s in tied}
        best = max(means.values())
        leaders = [s for s in tied if means[s] == best]
        winner = leaders[0]
        tie_break = "logprob" if len(leaders) == 1 else "first_seen"

    winners = tuple(i for i, s in enumerate(scores) if s == winner)
    best_index = winners[0]
    best_lp = -math.inf
    for i in winners:
        lp = logprobs[i]
        if lp is not None and math.isfinite(lp) and lp > best_lp:
            best_lp, best_index = lp, i
    return Vote(
        score=winner,
        counts=dict(sorted(counts.items())),
        winners=winners,
        best_index=best_index,
        tie_break=tie_break,
        n_voted=sum(counts.values()),
    )


#: The vote step: the parsed samples of one unit -> a :class:`Vote` (``best_index`` names the sample whose
#: rationale is kept).
VoteFn = Callable[[Sequence[SampleRecord]], Vote]


def vote_samples(samples: Sequence[SampleRecord]) -> Vote:
    """The default vote step: :func:`majority_vote` over the samples' scores and mean log-probabilities.

    Args:
        samples: the K parsed samples of one unit, in sample order.

    Returns:
        The :class:`Vote` (``score`` ``None`` when no sample carries a score).
    """
    return majority_vote([s.score for s in samples], [s.mean_logprob for s in samples])


def decide(prompt: PreparedPrompt, samples: Sequence[SampleRecord], *, vote: VoteFn = vote_samples) -> Judgement:
    """The judgement of one unit from its parsed samples (SurveyReview App. E; statuses of ``surveyalign.constants``).

    Args:
        prompt: the prepared prompt; when it was not sent (``missing_text``, ``prompt_too_long``) the judgement
            carries its status and reason, and ``samples`` must be empty.
        samples: the K parsed samples (:func:`surveyalign.judge.read_sample`), in sample order.
        vote: the vote step (default :func:`vote_samples`).

    Returns:
        ``scored`` when the vote found a score (rationale of ``vote.best_index``); ``api_error`` when every sample
        failed at the backend (reason: their distinct errors joined by ``"; "``); ``parse_failed`` otherwise
        (rationale: the first non-empty one; reason: the distinct parse errors / backend errors).
    """
    if not prompt.sendable:
        return Judgement(dimension=prompt.dimension, score=None, rationale="", status=prompt.status or API_ERROR,
                         reason=prompt.reason, samples=[], vote=None, prompt=prompt)
    outcome = vote(samples)
    reason: str | None
    if outcome.score is not None:
        status, rationale, reason = SCORED, samples[outcome.best_index].rationale, None
    elif samples and all(s.error for s in samples):
        status, rationale = API_ERROR, ""
        reason = "; ".join(dict.fromkeys(s.error for s in samples))
    else:
        status = PARSE_FAILED
        rationale = next((s.rationale for s in samples if s.rationale), "")
        reason = "; ".join(dict.fromkeys(s.parse_error or s.error or "no score" for s in samples))
    return Judgement(dimension=prompt.dimension, score=outcome.score, rationale=rationale, status=status,
                     reason=reason, samples=list(samples), vote=outcome, prompt=prompt)

"""The K-sample vote and the unit decision (SurveyReview App. E) on hand-worked cases: ties between groups with
different numbers of usable log-probabilities, which sample's rationale is kept on equal log-probabilities, and
the status / reason rules of one unit."""

from __future__ import annotations

import math

import pytest

from surveyalign.constants import (
    API_ERROR,
    MISSING_TEXT,
    PARSE_FAILED,
    PROMPT_TOO_LONG,
    SCORED,
)
from surveyalign.judge.records import PreparedPrompt, SampleRecord
from surveyalign.judge.voting import Vote, decide, majority_vote, vote_samples

SENT = PreparedPrompt(dimension="readability", messages=[{"role": "user", "content": "x"}], messages_hash="h",
                      template_hash="t")


def _sample(k, score=None, rationale="", lp=None, error=None, parse_error=None):
    return SampleRecord(sample=k, seed=k, text=rationale, finish_reason="stop", mean_logprob=lp, score=score,
                        rationale=rationale, error=error, parse_error=parse_error)


def test_tie_between_groups_with_different_numbers_of_usable_logprobs():
    # 2 vs 2 votes. Score 2: mean of -0.2 and -0.4 = -0.3. Score -1: only -0.35 is usable (the other -1 sample has
    # no log-prob), so its mean is -0.35, not -0.175 (a sum over the group size) -> 2 wins by log-prob. The
    # unscored sample's -0.01 takes no part.
    vote = majority_vote([2, -1, 2, -1, None], [-0.2, -0.35, -0.4, None, -0.01])
    assert (vote.score, vote.tie_break, vote.winners, vote.best_index) == (2, "logprob", (0, 2), 0)
    assert vote.counts == {-1: 2, 2: 2} and vote.n_voted == 4
    # a sum instead of a mean would pick -1 here: 2 sums to -0.6 over two samples, -1 to -0.5 over one
    vote = majority_vote([2, -1, 2, -1], [-0.25, -0.5, -0.35, None])
    assert (vote.score, vote.tie_break) == (2, "logprob")  # means -0.3 vs -0.5


def test_non_finite_logprobs_are_left_out_of_the_group_mean_and_the_sample_choice():
    # score 1: -inf is not a log-prob we can average -> mean -0.5; score -1: nan left out -> mean -0.6: 1 wins
    vote = majority_vote([1, 1, -1, -1], [-math.inf, -0.5, -0.6, math.nan])
    assert (vote.score, vote.tie_break, vote.best_index) == (1, "logprob", 1)
    # every sample of the winning score lacks a usable log-prob: the first winning sample is kept
    vote = majority_vote([-2, 1, -2], [math.nan, -0.1, None])
    assert (vote.score, vote.tie_break, vote.best_index) == (-2, None, 0)


def test_a_tied_score_without_any_usable_logprob_ranks_lowest():
    # 1's only sample has no log-prob, -2's has -3.0 (a poor one): -2 still wins the tie, by log-prob
    assert (majority_vote([1, -2], [None, -3.0]).score, majority_vote([1, -2], [None, -3.0]).tie_break) == (-2,
                                                                                                      "logprob")
    assert majority_vote([2, 2, -1, -1], [math.nan, None, -5.0, None]).score == -1


def test_equal_logprobs_keep_the_first_winning_sample():
    vote = majority_vote([2, -1, 2, 2], [-0.7, -0.1, -0.3, -0.3])
    assert (vote.score, vote.best_index, vote.winners) == (2, 2, (0, 2, 3))  # samples 2 and 3 tie at -0.3: 2
    assert majority_vote([1, 1], [-0.4, -0.4]).best_index == 0


def test_ties_that_survive_the_logprobs_go_to_the_score_seen_first():
    # -2 and 2 tie on votes and on mean log-prob (-0.2); 1 has the same votes but a lower mean: -2 came first
    vote = majority_vote([1, -2, 2], [-0.5, -0.2, -0.2])
    assert (vote.score, vote.tie_break, vote.best_index) == (-2, "first_seen", 1)
    assert list(vote.counts) == [-2, 1, 2]  # counts are listed by score
    # first seen, not smallest: 2 appears before -1
    assert (majority_vote([2, -1, -1, 2]).score, majority_vote([2, -1, -1, 2]).tie_break) == (2, "first_seen")
    assert majority_vote([2, -1, -1, 2]).best_index == 0


def test_clear_majority_ignores_logprobs_and_vote_record():
    vote = majority_vote([-1, 2, -1], [-0.9, -0.01, -0.8])
    assert (vote.score, vote.tie_break, vote.best_index) == (-1, None, 2)
    assert vote.to_dict() == {"counts": {"-1": 2, "2": 1}, "tie_break": None, "chosen_sample": 2}
    assert Vote(score=None).to_dict() == {"counts": {}, "tie_break": None, "chosen_sample": None}
    with pytest.raises(ValueError, match="3 scores but 2 log-probabilities"):
        majority_vote([1, 1, 1], [-0.1, -0.2])


def test_vote_samples_reads_scores_and_logprobs_of_the_records():
    samples = [_sample(0, 1, "a", -0.6), _sample(1, -1, "b", -0.2), _sample(2, None, "", -0.1, parse_error="x")]
    vote = vote_samples(samples)
    assert (vote.score, vote.tie_break, vote.best_index, vote.n_voted) == (-1, "logprob", 1, 2)


def test_decide_keeps_the_chosen_samples_rationale():
    samples = [_sample(0, 2, "Clear but thin.", -0.5), _sample(1, 2, "Clear.", -0.2), _sample(2, -1, "Weak.", -0.1)]
    judgement = decide(SENT, samples)
    assert (judgement.status, judgement.score, judgement.rationale, judgement.reason) == (SCORED, 2, "Clear.", None)
    assert judgement.samples == samples and judgement.vote.best_index == 1 and judgement.prompt is SENT


def test_decide_api_error_only_when_every_sample_failed_at_the_backend():
    failed = [_sample(0, error="HTTP 503"), _sample(1, error="timeout"), _sample(2, error="HTTP 503")]
    judgement = decide(SENT, failed)
    assert (judgement.status, judgement.score, judgement.rationale) == (API_ERROR, None, "")
    assert judgement.reason == "HTTP 503; timeout"  # distinct errors, first-seen order
    # one answer came back but could not be read: parse_failed, with its text kept as the rationale
    mixed = [_sample(0, error="HTTP 503"), _sample(1, rationale="", parse_error="no score marker found"),
             _sample(2, rationale="Rambling answer", parse_error="no score marker found"), _sample(3)]
    judgement = decide(SENT, mixed)
    assert (judgement.status, judgement.score, judgement.rationale) == (PARSE_FAILED, None, "Rambling answer")
    assert judgement.reason == "HTTP 503; no score marker found; no score"
    # no sample at all: nothing failed at the backend, nothing was scored
    empty = decide(SENT, [])
    assert (empty.status, empty.score, empty.rationale, empty.reason) == (PARSE_FAILED, None, "", "")


@pytest.mark.parametrize("status", [PROMPT_TOO_LONG, MISSING_TEXT])
def test_decide_passes_an_unsent_prompts_status_through(status):
    prompt = PreparedPrompt(dimension="structure", messages=None, messages_hash=None, template_hash="t",
                            status=status, reason="why not")
    judgement = decide(prompt, [])
    assert (judgement.dimension, judgement.status, judgement.reason, judgement.score) == ("structure", status,
                                                                                          "why not", None)
    assert judgement.vote is None and judgement.samples == [] and judgement.rationale == ""
    # no status but nothing to send either: an API error rather than a silent score
    blank = PreparedPrompt(dimension="structure", messages=None, messages_hash=None, template_hash="t")
    assert decide(blank, []).status == API_ERROR

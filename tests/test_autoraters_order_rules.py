"""Citation F1 and side-by-side order and tie rules (issue 27), hand-computed: an unresolved reference before
resolved ones, the official P0-wins rule with full per-side summaries, flag prefixes, the by-pair length and label
checks, and the flip rate's empty case."""

from __future__ import annotations

import re

import pytest

from surveyalign.autoraters import citation_f1, position_flip_rate, sxs_outcome
from surveyalign.autoraters.citation_f1 import (
    CitationScore,
    SideSummary,
    citation_f1_by_pair,
)
from surveyalign.autoraters.sxs import FlipRate

# ---------------------------------------------------------------- citation F1


def test_unresolved_reference_before_resolved_ones_is_skipped_not_a_stop():
    # reference 1 is unresolved on both sides; 2 and 3 after it must still count
    gt_ids, gt_labels = {"1": None, "2": "a", "3": "b"}, {"1": "P0", "2": "P0", "3": "P1"}
    gen_ids, gen_labels = {"1": "", "2": "a", "3": "c"}, {"1": "P0", "2": "P0", "3": "P1"}
    r = citation_f1(gt_ids, gen_ids, gt_labels, gen_labels)
    # P0: {a} vs {a}; P1: {b} vs {c}; overall: {a, b} vs {a, c} -> P = R = 1/2
    assert (r.p0.precision, r.p0.recall, r.p0.f1) == (1.0, 1.0, 1.0)
    assert (r.p1.precision, r.p1.recall, r.p1.f1) == (0.0, 0.0, 0.0)
    assert (r.overall.precision, r.overall.recall, r.overall.f1) == (0.5, 0.5, 0.5)
    assert r.ground_truth == SideSummary(n_references=3, n_resolved=2, unresolved=("1",), unlabelled=(),
                                         duplicate_ids=(), ids_in_both=(), p0_ids=("a",), p1_ids=("b",))
    assert (r.generated.n_resolved, r.generated.unresolved, r.generated.p1_ids) == (2, ("1",), ("c",))


def test_official_p0_wins_over_p1_with_full_scores_and_summaries():
    # "a" is labelled P1 by reference 1 and P0 by reference 2: P0 wins whatever the order; 4 is unresolved and
    # 5 unlabelled (official: counted as P1)
    gt_ids = {"1": "a", "2": "a", "3": "b", "4": None, "5": "c"}
    gt_labels = {"1": "P1", "2": "P0", "3": "P1"}
    gen_ids = {"1": "a", "2": "c", "3": "d", "4": None}
    r = citation_f1(gt_ids, gen_ids, gt_labels, variant="official")
    # GT P0 {a}, P1 {b, c}; generated {a, c, d}: overall 2 matched of 3 and 3 -> P = R = F1 = 2/3
    assert r.overall.precision == pytest.approx(2 / 3) and r.overall.recall == pytest.approx(2 / 3)
    assert r.overall.f1 == pytest.approx(2 / 3) and (r.overall.n_matched, r.overall.n_generated) == (2, 3)
    assert r.p0 == CitationScore(None, 1.0, None, 1, 3, 1, ())
    assert r.p1 == CitationScore(None, 0.5, None, 1, 3, 2, ())
    assert r.ground_truth == SideSummary(n_references=5, n_resolved=4, unresolved=("4",), unlabelled=("5",),
                                         duplicate_ids=("a",), ids_in_both=("a",), p0_ids=("a",), p1_ids=("b", "c"))
    assert r.generated == SideSummary(n_references=4, n_resolved=3, unresolved=("4",), unlabelled=(),
                                      duplicate_ids=(), ids_in_both=(), p0_ids=(), p1_ids=("a", "c", "d"))
    d = r.to_dict()
    assert (d["ground_truth"]["n_unresolved"], d["generated"]["n_unresolved"]) == (1, 1)
    assert d["p1"] == {"precision": None, "recall": 0.5, "f1": None, "n_matched": 1, "n_generated": 3,
                       "n_ground_truth": 2, "flags": ()}
    # the seed rule keeps "a" in both ground-truth sets, on the generated side as well
    seed = citation_f1({"1": "a", "2": "b"}, {"1": "a", "2": "a"}, {"1": "P0", "2": "P1"}, {"1": "P0", "2": "P1"})
    assert (seed.generated.p0_ids, seed.generated.p1_ids, seed.generated.ids_in_both) == (("a",), ("a",), ("a",))
    assert seed.p1 == CitationScore(0.0, 0.0, 0.0, 0, 1, 1, ("f1: precision + recall = 0",))


def test_flags_are_prefixed_with_their_score():
    r = citation_f1({"1": "a"}, {}, {"1": "P1"}, variant="official")
    assert r.flags == ("overall precision: no generated ids (denominator 0)", "overall f1: precision + recall = 0",
                       "P0 recall: no ground-truth ids (denominator 0)")


@pytest.mark.parametrize("kwargs, message", [
    ({"gen_labels": None}, "citation F1 variant 'seed' needs the generated paper's partition (gen_labels)"),
    ({"gt_labels": {"9": "P0"}},
     "ground truth: partition labels reference number(s) ['9'] that are not in its reference ids"),
    ({"gen_labels": {"1": "p0"}}, "generated: labels must be P0 or P1, got {'1': 'p0'}"),
    ({"gt_labels": {"1": "P2"}, "variant": "official"}, "ground truth: labels must be P0 or P1, got {'1': 'P2'}"),
])
def test_citation_f1_errors_name_the_side(kwargs, message):
    args = {"gt_ids": {"1": "a"}, "gen_ids": {"1": "a"}, "gt_labels": {"1": "P0"}, "gen_labels": {"1": "P0"}}
    args.update(kwargs)
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        citation_f1(**args)


def test_by_pair_length_and_label_checks_name_the_column_and_row():
    with pytest.raises(ValueError, match=re.escape("columns differ in length: pairs 2, sides 1, paper_ids 2, "
                                                   "labels 2")):
        citation_f1_by_pair(["p", "p"], ["ground_truth"], ["a", "a"], ["P0", "P0"])
    with pytest.raises(ValueError, match=re.escape("columns differ in length: pairs 2, sides 2, paper_ids 2, "
                                                   "labels 3")):
        citation_f1_by_pair(["p", "p"], ["ground_truth", "generated"], ["a", "a"], ["P0", "P0", "P1"])
    with pytest.raises(ValueError, match=re.escape("row 1: label must be P0, P1 or None, got 'p1'")):
        citation_f1_by_pair(["p", "p"], ["ground_truth", "generated"], ["a", "a"], ["P0", "p1"])
    # "" is "not labelled", not a bad label: the generated reference is left out of the seed sets
    ok = citation_f1_by_pair(["p", "p"], ["ground_truth", "generated"], ["a", "a"], ["P0", ""])
    assert ok["per_pair"]["p"]["generated"]["unlabelled"] == ("1",)
    assert ok["mean"]["overall"] == {"precision": 0.0, "recall": 0.0, "f1": 0.0} and ok["n_flagged_pairs"] == 1

# ---------------------------------------------------------------- side-by-side


def test_flip_rate_of_no_pairs_is_undefined_with_zero_counts():
    assert position_flip_rate([]) == FlipRate(None, 0, 0, 0, "no pair with two readable winners (denominator 0)")
    assert position_flip_rate([("tie", None)]).to_dict() == {
        "rate": None, "n_flips": 0, "n_counted": 0, "n_pairs": 1,
        "flag": "no pair with two readable winners (denominator 0)"}
    assert position_flip_rate([("paper_2", "paper_2"), ("tie", "tie")]).to_dict() == {
        "rate": 0.5, "n_flips": 1, "n_counted": 2, "n_pairs": 2, "flag": None}


def test_sxs_outcome_to_dict_a_wins_both_orders():
    # A shown first wins (paper_1), A shown second wins (paper_2): +1 and +1
    assert sxs_outcome("paper_1", "paper_2").to_dict() == {
        "rule": "seed", "outcome": "win", "score": 2, "vote_ab": 1, "vote_ba": 1, "position_flip": False,
        "unreadable": 0}

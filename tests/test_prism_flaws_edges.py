"""PRISM flaw recall and nCPS edges (issue 27): the fuzzy threshold at its boundary, the exact / fuzzy / unmatched
counts, the critique-text fallback, section defaults, zero-weight critiques and an empty consensus pool."""

from __future__ import annotations

import math

import pytest

from surveyalign.prism import Flaw, RankedCritique, flaw_recall, ncps, quote_position

REVIEW = ("Weaknesses: First, the proofs are incomplete. Second, there are typos in Table 2. "
          "Third, there is no comparison with strong baselines.")
TYPOS = REVIEW.index("typos")  # 63


def _log2(i: int) -> float:
    return math.log2(i)

# ---------------------------------------------------------------- quote_position


def test_fuzzy_threshold_is_inclusive_at_exactly_045():
    # 20-character quote; REVIEW has no "z", so the best 20-character window shares only the 9 characters
    # "typos in " with it, in order: similarity 2 * 9 / (20 + 20) = 0.45, exactly PRISM's threshold
    at_threshold = "typos in " + "z" * 11
    pos, how = quote_position(at_threshold, REVIEW)
    assert how == "fuzzy" and TYPOS - 11 <= pos <= TYPOS
    # one shared character fewer ("typos i"): 2 * 7 / 40 = 0.35, below it
    assert quote_position("typos i" + "z" * 13, REVIEW) == (None, "unmatched")
    # the same quote against a stricter threshold, and the 0.35 one at a threshold of exactly 0.35
    assert quote_position(at_threshold, REVIEW, min_ratio=0.46) == (None, "unmatched")
    assert quote_position("typos i" + "z" * 13, REVIEW, min_ratio=0.35)[1] == "fuzzy"


def test_quote_position_first_occurrence_offset_zero_and_case():
    twice = "Typos in Table 2 hide the main result; the appendix repeats the typos in Table 2."
    # an exact match at offset 0 is still exact, and the first of two occurrences wins
    assert quote_position("typos in table 2", twice) == (0, "exact")
    assert quote_position("the appendix", twice) == (twice.index("the appendix"), "exact")
    # the fuzzy match ignores case too: the upper-case quote lands where the lower-case one does
    lower = quote_position("the proof is incomplet", REVIEW)
    assert lower[1] == "fuzzy"
    assert quote_position("THE PROOF IS INCOMPLET", REVIEW) == lower
    # a missing quote is never placed, even in a text holding a placeholder
    assert quote_position(None, "Table XXXX is missing.") == (None, "unmatched")
    assert quote_position("  ", REVIEW) == (None, "unmatched")
    assert quote_position("typos", "") == (None, "unmatched")

# ---------------------------------------------------------------- nCPS


def test_ncps_position_counts_text_fallback_and_stable_unmatched_order():
    crits = [RankedCritique("minor", quote="typos in Table 2"),                      # exact at 63
             RankedCritique("critical", quote="zzqx wvvk", text="the proof is incomplet"),  # text, fuzzy at ~20
             # its quote is found (exact, 98): its text, found earlier (23), must not move it
             RankedCritique("critical", quote="no comparison with strong baselines",
                            text="the proofs are incomplete"),
             RankedCritique("minor", quote="qqq jjj"),                                # unmatched, goes last
             RankedCritique("critical", quote="vvv kkk", text="wwkk zzjj")]           # unmatched, after it
    out = ncps(crits, REVIEW)
    assert out["positions"] == {"exact": 2, "fuzzy": 1, "unmatched": 2, "not_recovered": 0}
    # order: proofs (2), typos (1), baselines (2), then the unmatched in extractor order: minor (1), critical (2)
    cps_ = 2 / _log2(2) + 1 / _log2(3) + 2 / _log2(4) + 1 / _log2(5) + 2 / _log2(6)  # 4.63576...
    icps = 2 / _log2(2) + 2 / _log2(3) + 2 / _log2(4) + 1 / _log2(5) + 1 / _log2(6)  # 4.88680...
    assert out["cps"] == pytest.approx(cps_) and out["icps"] == pytest.approx(icps)
    assert out["per_section"]["weaknesses"]["n"] == 5
    # without the review text nothing is recovered and the extractor order is kept
    assert ncps(crits)["positions"] == {"exact": 0, "fuzzy": 0, "unmatched": 0, "not_recovered": 5}


def test_ncps_min_ratio_reaches_quote_and_text_matching():
    crits = [RankedCritique("minor", quote="typos in Table 2"),
             RankedCritique("critical", quote="the proof is incomplet"),  # fuzzy, similarity ~0.82
             RankedCritique("critical", quote="zzqx", text="missing strong baselines")]  # text fuzzy, ~0.81
    loose = ncps(crits, REVIEW)
    assert loose["positions"] == {"exact": 1, "fuzzy": 2, "unmatched": 0, "not_recovered": 0}
    assert loose["cps"] == pytest.approx(2 + 1 / _log2(3) + 2 / _log2(4))  # proofs, typos, baselines
    strict = ncps(crits, REVIEW, min_ratio=0.9)
    assert strict["positions"] == {"exact": 1, "fuzzy": 0, "unmatched": 2, "not_recovered": 0}
    assert strict["cps"] == pytest.approx(1 + 2 / _log2(3) + 2 / _log2(4))  # typos, then the two in order


def test_ncps_blank_section_is_weaknesses_and_zero_weights_take_no_rank():
    crits = [RankedCritique("strength", "weaknesses"),  # weight 0: takes no rank in its section
             RankedCritique("critical", ""), RankedCritique("minor", "  "), RankedCritique("minor", "Questions ")]
    out = ncps(crits)
    assert set(out["per_section"]) == {"weaknesses", "questions"}
    assert out["per_section"]["weaknesses"] == pytest.approx({"cps": 2 + 1 / _log2(3), "icps": 2 + 1 / _log2(3),
                                                             "n": 2})
    assert out["per_section"]["questions"] == pytest.approx({"cps": 1.0, "icps": 1.0, "n": 1})
    assert out["ncps"] == 1.0
    # a zero-weight critique before the only counted one does not push it down
    assert ncps([RankedCritique("none"), RankedCritique("critical")])["cps"] == 2.0

# ---------------------------------------------------------------- flaw recall


def test_flaw_recall_keys_and_empty_consensus_pool():
    flaws = [Flaw("F1", severity="critical", raised_by={"R1", "R2"}), Flaw("F2", severity="minor", raised_by={"R2"})]
    out = flaw_recall(flaws, "R1", consensus_reviewers=[])
    assert set(out) == {"critical_recall", "minor_recall", "recall", "weighted_critical_recall",
                        "weighted_minor_recall", "weighted_recall", "n_critical", "n_minor", "detected_critical",
                        "detected_minor", "n_consensus"}
    # no consensus reviewer: every weight is 0, so the weighted recalls are undefined; the plain ones are not
    assert out["n_consensus"] == 0
    assert (out["critical_recall"], out["minor_recall"], out["recall"]) == (1.0, 0.0, 0.5)
    assert (out["weighted_critical_recall"], out["weighted_minor_recall"], out["weighted_recall"]) == (None,) * 3


def test_flaw_recall_type_error_names_the_type():
    with pytest.raises(TypeError, match="got tuple"):
        flaw_recall([], ("R1",))

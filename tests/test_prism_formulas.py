"""PRISM formulas with hand-computed values: DoA, claim scores / NS / SR, flaw recall, nCPS, constructiveness."""

from __future__ import annotations

import math

import pytest

from surveyalign.prism import (
    ADU,
    Flaw,
    NoveltyClaim,
    PairVerdict,
    RankedCritique,
    ReviewComment,
    claim_score,
    constructiveness,
    depth_of_analysis,
    flaw_recall,
    ncps,
    novelty_scores,
    quote_position,
)

# ---------------------------------------------------------------- depth of analysis


def test_doa_hand_computed():
    adus = [ADU("c1", "claim", "soundness"), ADU("c2", "claim", "clarity"),
            ADU("p1", "premise", "soundness", 2), ADU("p2", "premise", "contribution", 0),
            ADU("p3", "premise", "soundness", None)]
    out = depth_of_analysis(adus)
    assert out["r_premise"] == pytest.approx(3 / 5)
    assert out["s_depth"] == pytest.approx(1.0)  # (2 + 0) / 2 graded premises; the ungraded one is left out
    assert out["doa"] == pytest.approx(2 * 0.6 * 0.5 / (0.6 + 0.5))  # 0.545454...
    assert out["doa_product"] == pytest.approx(0.3)
    assert (out["n_adus"], out["n_premises"], out["n_graded"], out["n_defaulted"]) == (5, 3, 2, 0)
    assert out["aspect_share"] == pytest.approx({"soundness": 0.6, "clarity": 0.2, "contribution": 0.2, "other": 0.0})
    assert out["premise_aspect_share"] == pytest.approx(
        {"soundness": 2 / 3, "clarity": 0.0, "contribution": 1 / 3, "other": 0.0})


def test_doa_empty_and_claims_only_are_zero():
    empty = depth_of_analysis([])
    assert (empty["r_premise"], empty["s_depth"], empty["doa"], empty["n_adus"]) == (0.0, 0.0, 0.0, 0)
    assert empty["aspect_share"]["other"] == 0.0
    claims = depth_of_analysis([ADU("a"), ADU("b", defaulted=True)])
    assert (claims["r_premise"], claims["doa"], claims["n_defaulted"]) == (0.0, 0.0, 1)
    assert claims["aspect_share"]["other"] == 1.0
    # all premises vague: S_depth 0 but R_premise 1 -> harmonic mean 0
    vague = depth_of_analysis([ADU("p", "premise", "clarity", 0)])
    assert (vague["r_premise"], vague["s_depth"], vague["doa"]) == (1.0, 0.0, 0.0)
    top = depth_of_analysis([ADU("p", "premise", "clarity", 2)])
    assert top["doa"] == 1.0


def test_adu_rejects_bad_labels():
    with pytest.raises(ValueError, match="role"):
        ADU("x", role="evidence")
    with pytest.raises(ValueError, match="grounding"):
        ADU("x", role="premise", grounding=3)

# ---------------------------------------------------------------- novelty

PAIRS = [PairVerdict(2, 0.9), PairVerdict(-2, 0.1), PairVerdict(1, 0.5), PairVerdict(0, 0.8)]


@pytest.mark.parametrize(("policy", "expected"), [
    ("top3_weighted", (2 * 0.9 + 0 * 0.8 + 1 * 0.5) / (0.9 + 0.8 + 0.5)),  # 1.04545...
    ("weighted", (1.8 - 0.2 + 0.5 + 0.0) / 2.3),
    ("mean", 0.25),
    ("top1", 2.0),
    ("top3_mean", 1.0),
])
def test_claim_score_policies(policy, expected):
    assert claim_score(PAIRS, policy) == pytest.approx(expected)


def test_claim_score_zero_weights_no_pairs_unknown_policy():
    assert claim_score([PairVerdict(2, 0.0), PairVerdict(-1, 0.0)]) == pytest.approx(0.5)  # plain mean
    assert claim_score([]) == 0.0
    with pytest.raises(ValueError, match="top3_weighted"):
        claim_score(PAIRS, "median")


def test_novelty_scores_hand_computed_and_empty():
    claims = [NoveltyClaim("c1", "novel", PAIRS), NoveltyClaim("c2", "not novel", [PairVerdict(2, 0.3)]),
              NoveltyClaim("c3", "somewhat novel", [])]
    out = novelty_scores(claims)
    mean = (2.3 / 2.2 + 2.0 + 0.0) / 3
    assert out["mean_claim_score"] == pytest.approx(mean)
    assert out["ns"] == pytest.approx((mean + 2) / 4)  # 0.753787...
    assert out["sr"] == pytest.approx(2 / 3) and out["strict_sr"] == pytest.approx(1 / 3)
    assert (out["n_claims"], out["n_without_pairs"]) == (3, 1)
    low = novelty_scores([NoveltyClaim("c", pairs=[PairVerdict(-2, 1.0)])])
    assert (low["ns"], low["sr"], low["strict_sr"]) == (0.0, 0.0, 0.0)
    none = novelty_scores([])
    assert (none["ns"], none["sr"], none["strict_sr"], none["n_claims"]) == (None, None, None, 0)

# ---------------------------------------------------------------- flaw recall

FLAWS = [
    Flaw("F1", severity="critical", raised_by={"R1", "R2"}),
    Flaw("F2", severity="critical", raised_by={"R10"}),
    Flaw("F3", severity="Minor", raised_by={"R1", "R2", "R3"}),
    Flaw("F4", severity="minor", valid=False, raised_by={"R1"}),
    Flaw("F5", severity="none", raised_by={"R1"}),
    Flaw("F6", severity="critical", raised_by={"R2"}),
]


def test_flaw_recall_hand_computed():
    out = flaw_recall(FLAWS, "R1")
    assert out["n_consensus"] == 4  # R1, R2, R3, R10 raised counted flaws
    assert (out["n_critical"], out["detected_critical"], out["n_minor"], out["detected_minor"]) == (3, 1, 1, 1)
    assert out["critical_recall"] == pytest.approx(1 / 3) and out["minor_recall"] == 1.0
    assert out["recall"] == pytest.approx(2 / 4)
    # W = C/N: F1 2/4, F2 1/4, F6 1/4, F3 3/4
    assert out["weighted_critical_recall"] == pytest.approx(0.5 / 1.0)
    assert out["weighted_minor_recall"] == pytest.approx(1.0)
    assert out["weighted_recall"] == pytest.approx((0.5 + 0.75) / 1.75)


def test_flaw_recall_exact_ids_never_substrings():
    # "R1" is a substring of "R10" and of "R1 " spellings; only the whole id counts
    assert flaw_recall([Flaw("F2", severity="critical", raised_by={"R10"})], "R1")["critical_recall"] == 0.0
    assert flaw_recall(FLAWS, "R")["recall"] == 0.0
    assert flaw_recall(FLAWS, "R10")["critical_recall"] == pytest.approx(1 / 3)
    with pytest.raises(TypeError, match="raised_by"):
        Flaw("F", severity="critical", raised_by="R1,R2")
    with pytest.raises(TypeError, match="reviewer_id"):
        flaw_recall(FLAWS, ["R1"])


def test_flaw_recall_none_when_no_flaws_of_a_severity_and_explicit_consensus():
    minor_only = [f for f in FLAWS if f.severity != "critical"]
    out = flaw_recall(minor_only, "R1")
    assert out["critical_recall"] is None and out["weighted_critical_recall"] is None
    assert out["minor_recall"] == 1.0
    nothing = flaw_recall([], "R1")
    assert all(nothing[k] is None for k in ("critical_recall", "minor_recall", "recall", "weighted_recall"))
    # consensus among the three human reviewers only: F2 (raised by system R10) weighs 0
    humans = flaw_recall(FLAWS, "R10", consensus_reviewers={"R1", "R2", "R3"})
    assert humans["critical_recall"] == pytest.approx(1 / 3)
    assert humans["weighted_critical_recall"] == 0.0  # 0 / (2/3 + 0 + 1/3)

# ---------------------------------------------------------------- nCPS

REVIEW = ("Weaknesses: First, the proofs are incomplete. Second, there are typos in Table 2. "
          "Third, there is no comparison with strong baselines.")


def test_ncps_hand_computed_with_position_recovery():
    # extractor order is shuffled; the quotes put them back as proofs (2), typos (1), baselines (2)
    crits = [RankedCritique("minor", "weaknesses", "typos in Table 2"),
             RankedCritique("critical", "weaknesses", "no comparison with strong baselines"),
             RankedCritique("critical", "weaknesses", "THE PROOFS ARE INCOMPLETE")]
    out = ncps(crits, REVIEW)
    cps_ = 2 / math.log2(2) + 1 / math.log2(3) + 2 / math.log2(4)  # 3.63093
    icps = 2 / math.log2(2) + 2 / math.log2(3) + 1 / math.log2(4)  # 3.76186
    assert out["cps"] == pytest.approx(cps_) and out["icps"] == pytest.approx(icps)
    assert out["ncps"] == pytest.approx(cps_ / icps)  # 0.96520
    assert out["positions"]["exact"] == 3
    # without the review text the extractor order is kept: minor, critical, critical
    kept = ncps(crits)
    assert kept["cps"] == pytest.approx(1 + 2 / math.log2(3) + 1)


def test_ncps_single_correctly_ordered_section_is_one_and_empty_is_zero():
    ordered = [RankedCritique("critical", quote="proofs are incomplete"),
               RankedCritique("critical", quote="no comparison with strong baselines"),
               RankedCritique("minor", quote="typos in Table 2")]
    text = "proofs are incomplete; no comparison with strong baselines; typos in Table 2"
    assert ncps(ordered, text)["ncps"] == 1.0
    assert ncps([RankedCritique("critical")])["ncps"] == 1.0
    assert ncps([])["ncps"] == 0.0
    assert ncps([RankedCritique("none"), RankedCritique("strength")])["ncps"] == 0.0


def test_ncps_sections_are_ranked_separately():
    crits = [RankedCritique("minor", "weaknesses"), RankedCritique("critical", "weaknesses"),
             RankedCritique("minor", "questions"), RankedCritique("critical", "questions")]
    out = ncps(crits)
    section = 1 + 2 / math.log2(3)
    ideal = 2 + 1 / math.log2(3)
    assert out["per_section"]["weaknesses"] == pytest.approx({"cps": section, "icps": ideal, "n": 2})
    assert out["ncps"] == pytest.approx(2 * section / (2 * ideal))


def test_quote_position_exact_fuzzy_and_unmatched():
    assert quote_position("typos in table 2", REVIEW) == (REVIEW.index("typos"), "exact")
    pos, how = quote_position("the proof is incomplet", REVIEW)
    assert how == "fuzzy" and abs(pos - REVIEW.index("the proofs")) <= 2
    assert quote_position("zzqx wvvk", REVIEW) == (None, "unmatched")
    assert quote_position("", REVIEW) == (None, "unmatched")
    # an unmatched quote goes last, after the placed ones
    crits = [RankedCritique("minor", quote="zzqx wvvk"), RankedCritique("critical", quote="strong baselines")]
    out = ncps(crits, REVIEW)
    assert out["ncps"] == 1.0 and out["positions"]["unmatched"] == 1

# ---------------------------------------------------------------- constructiveness


def test_constructiveness_hand_computed_and_empty():
    comments = [ReviewComment("a", "weakness", 2, 2, 2, 2, 2),   # 1.0
                ReviewComment("b", "suggestion", 1, 1, 1, 0, 2),  # 0.5
                ReviewComment("c", "question", 0, 1, 1, 2, 2),    # 0.6
                ReviewComment("d", "strength", 1, 0, 0, 2, 1)]    # 0.4
    out = constructiveness(comments)
    assert out["mcs"] == pytest.approx(2.5 / 4)
    assert out["ar"] == pytest.approx(3 / 4)
    assert out["sd"] == pytest.approx(3 / 4)
    assert out["cd"] == pytest.approx(2 / 4)  # 1.0 and exactly 0.6
    assert out["kinds"]["weakness"] == 1 and out["n_comments"] == 4
    none = constructiveness([])
    assert (none["mcs"], none["ar"], none["sd"], none["cd"], none["n_comments"]) == (None, None, None, None, 0)
    with pytest.raises(ValueError, match="tone"):
        ReviewComment("x", tone=3)


def test_claim_score_without_relevance_values_follows_prism_magnitude_rule():
    """Issue 21: when no pair carries a relevance value, PRISM averages the 3 verdicts of largest |score| (not the
    first three); a relevance of 0 is a value and keeps the weighted rule's plain-mean fallback."""
    from surveyalign.prism.columns import novelty_by_review

    pairs = [PairVerdict(0), PairVerdict(1), PairVerdict(-2), PairVerdict(0), PairVerdict(2), PairVerdict(-1)]
    # largest |score|: -2, 2, then 1 (the first of the |1| ties in retrieval order): (-2 + 2 + 1) / 3
    assert claim_score(pairs) == pytest.approx(1 / 3)
    # the first three (the old rule) would give (0 + 1 - 2) / 3 = -1/3
    zero = [PairVerdict(p.score, 0.0) for p in pairs]
    # relevance 0 everywhere is a value: the 3 most relevant (stable: the first three), weights sum to 0 -> plain
    # mean (0 + 1 - 2) / 3
    assert claim_score(zero) == pytest.approx(-1 / 3)
    mixed = [PairVerdict(2, None), PairVerdict(-2, 0.5), PairVerdict(1, None)]
    assert claim_score(mixed) == pytest.approx(-2.0)  # one relevance given: the weighted rule (None weighs 0)
    got = novelty_by_review(["r"] * 4, ["c"] * 4, [0, 1, -2, 2], [None] * 4)
    assert got["per_review"]["r"]["claim_scores"] == [pytest.approx(1 / 3)]  # (-2 + 2 + 1) / 3
    got = novelty_by_review(["r"] * 4, ["c"] * 4, [0, 1, -2, 2], [0.0] * 4)
    assert got["per_review"]["r"]["claim_scores"] == [pytest.approx(-1 / 3)]  # (0 + 1 - 2) / 3

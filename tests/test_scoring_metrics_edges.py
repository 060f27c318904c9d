"""Edges of the pure metric functions (SurveyReview §3, Eq. 2-8) worked out by hand: the input checks of HAS and of
the score columns, the fixed label set of the weighted kappa, agreement on exactly two units, and the authors'
convention with failed units in the middle of a dimension (issue 27)."""

from __future__ import annotations

import numpy as np
import pytest

from surveyalign.scoring.metrics import (
    agreement_statistics,
    alignment_errors,
    check_scores,
    human_aligned_score,
    krippendorff_alpha_interval,
    macro_mae,
    mean_or_none,
    quadratic_weighted_kappa,
    reason_quality,
)


# ------------------------------------------------------------------------------------------------- HAS (Eq. 6-8)
def test_has_with_another_delta_s_and_the_range_ends():
    # delta_s = 1: A_MSE = 1 - 0.25 = 0.75, A_MAE = 1 - 0.5 = 0.5, Align = 0.4*0.75 + 0.6*0.5 = 0.6,
    # HAS = 0.75*0.6 + 0.25*0.5 = 0.575
    out = human_aligned_score(0.25, 0.5, 0.5, delta_s=1.0)
    assert (out["a_mse"], out["a_mae"]) == (0.75, 0.5)
    assert out["align"] == pytest.approx(0.6) and out["has"] == pytest.approx(0.575)
    assert out["weights"] == {"alpha": [0.4, 0.6], "beta": [0.75, 0.25], "delta_s": 1.0}
    # a perfect judge: 1 exactly; the ends of every range are allowed
    best = human_aligned_score(0, 0.0, 1)
    assert (best["a_mse"], best["a_mae"], best["align"], best["has"], best["rqs"]) == (1.0, 1.0, 1.0, 1.0, 1.0)
    assert human_aligned_score(np.float64(16.0), np.int64(4), 1.0)["has"] == 0.25
    # delta_s = 2 caps MSE at 4 and MAE at 2
    assert human_aligned_score(4.0, 2.0, 0.0, delta_s=2)["align"] == 0.0
    with pytest.raises(ValueError, match=r"avg_mse = 4.5 is outside \[0, 4\]"):
        human_aligned_score(4.5, 1.0, 0.5, delta_s=2)
    with pytest.raises(ValueError, match=r"avg_mae = 2.5 is outside \[0, 2\]"):
        human_aligned_score(1.0, 2.5, 0.5, delta_s=2)


def test_has_weights_by_hand():
    # alpha (1, 0): Align = A_MSE = 1 - 4/16 = 0.75; beta (0.5, 0.5): HAS = 0.5*0.75 + 0.5*0.2 = 0.475
    out = human_aligned_score(4.0, 2.0, 0.2, alpha=(1.0, 0.0), beta=(0.5, 0.5))
    assert out["align"] == 0.75 and out["has"] == pytest.approx(0.475)
    assert out["weights"] == {"alpha": [1.0, 0.0], "beta": [0.5, 0.5], "delta_s": 4.0}


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"delta_s": 0}, r"delta_s must be > 0, got 0"),
    ({"delta_s": -4}, r"delta_s must be > 0, got -4"),
    ({"alpha": (0.4, 0.3, 0.3)}, r"HAS weights alpha: expected two weights, got \(0.4, 0.3, 0.3\)"),
    ({"alpha": (1.0,)}, r"HAS weights alpha: expected two weights, got \(1.0,\)"),
    ({"beta": (0.75, 0.2, 0.05)}, r"HAS weights beta: expected two weights"),
    ({"beta": (1.0,)}, r"HAS weights beta: expected two weights"),
    ({"beta": (0.75, 0.75)}, r"HAS weights beta = \(0.75, 0.75\) sum to 1.5; they must sum to 1"),
    ({"alpha": (1.5, -0.5)}, r"HAS weights alpha: -0.5 is negative"),
])
def test_has_refuses_bad_weights_and_delta_s(kwargs, message):
    with pytest.raises(ValueError, match=message):
        human_aligned_score(1.0, 0.5, 0.5, **kwargs)


@pytest.mark.parametrize(("args", "message"), [
    ((True, 0.5, 0.5), r"avg_mse = True is not a number"),
    ((1.0, False, 0.5), r"avg_mae = False is not a number"),
    ((1.0, 0.5, "0.5"), r"rqs = '0.5' is not a number"),
    ((1.0, float("inf"), 0.5), r"avg_mae = inf is not finite"),
    ((1.0, 0.5, float("nan")), r"rqs = nan is not finite"),
    ((-0.1, 0.5, 0.5), r"avg_mse = -0.1 is outside \[0, 16\]"),
    ((1.0, 4.5, 0.5), r"avg_mae = 4.5 is outside \[0, 4\]"),
    ((1.0, 0.5, -0.2), r"rqs = -0.2 is outside \[0, 1\]"),
])
def test_has_refuses_bad_inputs(args, message):
    with pytest.raises(ValueError, match=message):
        human_aligned_score(*args)


def test_has_checks_rqs_even_when_mse_and_mae_are_missing():
    with pytest.raises(ValueError, match=r"rqs = 1.5 is outside \[0, 1\]"):
        human_aligned_score(None, None, 1.5)
    with pytest.raises(ValueError, match=r"rqs = 1.5 is outside \[0, 1\]"):
        human_aligned_score(1.0, None, 1.5)


def test_has_with_exactly_one_of_mse_and_mae_missing():
    only_mse = human_aligned_score(1.0, None, 0.5)
    assert (only_mse["a_mse"], only_mse["a_mae"], only_mse["align"], only_mse["has"]) == (0.9375, None, None, None)
    assert only_mse["has_note"] == "no scored units: MSE/MAE undefined, so Align and HAS are undefined"
    only_mae = human_aligned_score(None, 2.0, 0.5)
    assert (only_mae["a_mse"], only_mae["a_mae"], only_mae["align"], only_mae["has"]) == (None, 0.5, None, None)
    assert only_mae["rqs"] == 0.5
    no_rqs = human_aligned_score(1.0, 0.5, None)
    assert no_rqs["rqs"] is None and no_rqs["has_note"] == (
        "no rationale-consistency scores: RQS unavailable, so HAS is not computed (Align is)")


# ------------------------------------------------------------------------------------------------- score columns
def test_score_checks_refuse_bools_and_none_by_default():
    assert check_scores([np.int64(-2), np.float32(1.0), 2, -1.0], "x") == [-2.0, 1.0, 2.0, -1.0]
    assert check_scores([None, 1], "predictions", allow_none=True) == [None, 1.0]
    with pytest.raises(ValueError, match=r"^references\[1\] is None; references must all be numbers$"):
        check_scores([1, None], "references")
    with pytest.raises(ValueError, match=r"^x\[0\] = True is not a number$"):
        check_scores([True], "x")
    with pytest.raises(ValueError, match=r"^x\[0\] = True is not a number$"):
        check_scores([True], "x", allow_none=True)
    with pytest.raises(ValueError, match=r"^x\[0\] = '1' is not a number$"):
        check_scores(["1"], "x")
    # the hint about None only where None is allowed
    with pytest.raises(ValueError, match=r"^references\[0\] = inf is not finite$"):
        check_scores([float("inf")], "references")
    with pytest.raises(ValueError, match=r"^predictions\[0\] = -inf is not finite; use None for a failed unit$"):
        check_scores([float("-inf")], "predictions", allow_none=True)
    # the scored-pair statistics take no None at all
    with pytest.raises(ValueError, match=r"predictions\[0\] is None"):
        agreement_statistics([None, 1], [1, 1])
    with pytest.raises(ValueError, match=r"references\[1\] is None"):
        quadratic_weighted_kappa([1, 1], [1, None])
    with pytest.raises(ValueError, match=r"predictions\[0\] = True is not a number"):
        alignment_errors([True], [1], ["readability"])


# ------------------------------------------------------------------------------------------------- agreement
def test_weighted_kappa_uses_the_fixed_label_set():
    # present scores {-2, 1, 2}; on the fixed ranks -2:0, -1:1, 1:2, 2:3 (squared rank differences):
    # observed mean (4 + 0 + 0 + 1) / 4 = 1.25; expected (refs 1/4, 1/2, 1/4 at ranks 0, 2, 3; preds 1/2, 1/2 at 2, 3)
    # = 1/4*(4+9)/2 + 1/2*(0+1)/2 + 1/4*(1+0)/2 = 2.0 -> kappa = 1 - 1.25/2 = 3/8.
    # (Ranking only the scores present, 0, 1, 2, would give 1 - 0.5/1.0 = 1/2.)
    value, reason = quadratic_weighted_kappa([1, 1, 2, 2], [-2, 1, 2, 1])
    assert value == pytest.approx(3 / 8) and reason is None


def test_no_variation_and_non_finite_results_are_none_with_a_reason(monkeypatch):
    assert quadratic_weighted_kappa([2, 2], [2, 2]) == (
        None, "judge and humans give one and the same score everywhere: kappa undefined")
    assert krippendorff_alpha_interval([-1, -1], [-1, -1]) == (
        None, "every score is identical: alpha undefined (no variation)")
    # a library that gives NaN anyway: None with the reason, never a NaN in the report
    import krippendorff
    import sklearn.metrics

    monkeypatch.setattr(sklearn.metrics, "cohen_kappa_score", lambda *a, **k: float("nan"))
    monkeypatch.setattr(krippendorff, "alpha", lambda *a, **k: float("inf"))
    assert quadratic_weighted_kappa([1, 2], [2, 1]) == (None, "expected disagreement is 0: kappa undefined")
    assert krippendorff_alpha_interval([1, 2], [2, 1]) == (None, "expected disagreement is 0: alpha undefined")


def test_kappa_and_alpha_on_exactly_two_units():
    # two units, two coders, opposite extremes: kappa observed 9 vs expected 4.5 (ranks 0 and 3) -> -1;
    # alpha: D_o = 16, D_e = 2 * 2 * 2 * 16 / (4 * 3) = 32/3 -> 1 - 1.5 = -0.5
    assert quadratic_weighted_kappa([2, -2], [-2, 2]) == (-1.0, None)
    assert krippendorff_alpha_interval([2, -2], [-2, 2]) == (pytest.approx(-0.5), None)
    assert quadratic_weighted_kappa([-1, 1], [-1, 1]) == (1.0, None)
    assert krippendorff_alpha_interval([-1, 1], [-1, 1]) == (1.0, None)
    # one unit is too few, whatever it holds
    assert quadratic_weighted_kappa([1], [2]) == (None, "needs at least 2 scored units (got 1)")
    assert krippendorff_alpha_interval([], []) == (None, "needs at least 2 scored units (got 0)")
    stats = agreement_statistics([2, -2], [-2, 2])
    assert (stats["mse"], stats["mae"], stats["macro_mae"], stats["qwk"]) == (16.0, 4.0, 4.0, -1.0)
    assert stats["notes"] == {"macro_mae": "reference classes absent, averaged over the rest: [-1, 1]"}


def test_macro_mae_weighs_each_reference_class_once():
    # class -1: |1 - -1| = 2 and 0 -> 1; class 2: |2 - 2| = 0; class -2: 1; class 1: 3 -> (1 + 0 + 1 + 3) / 4
    value, reason = macro_mae([1, -1, 2, -1, -2], [-1, -1, 2, -2, 1])
    assert value == pytest.approx(1.25) and reason is None
    empty = agreement_statistics([], [])
    assert (empty["mse"], empty["mae"], empty["qwk"]) == (None, None, None)
    assert empty["notes"]["mse"] == empty["notes"]["mae"] == "no scored units"
    assert mean_or_none([]) is None and mean_or_none([1, 2]) == 1.5


# ------------------------------------------------------------------------------------------------- conventions
def test_authors_convention_keeps_the_units_after_a_dropped_one():
    preds = [None, -1, 2, None, None, 1, None]
    refs = [1, -1, 1, 2, -2, 1, 2]
    dims = ["readability"] * 4 + ["structure"] * 3
    statuses = ["api_error", "scored", "scored", "parse_failed", "prompt_too_long", "scored", "missing_text"]
    out = alignment_errors(preds, refs, dims, convention="authors", statuses=statuses)
    read, stru = out["per_dimension"]["readability"], out["per_dimension"]["structure"]
    # readability: the API error is dropped; (-1, -1), (2, 1), (0, 2) are used: squared 0, 1, 4; absolute 0, 1, 2
    assert read == {"n": 4, "n_used": 3, "n_zeroed": 1, "n_dropped": 1, "mse": pytest.approx(5 / 3), "mae": 1.0}
    # structure: prompt_too_long and missing_text are dropped, (1, 1) is used
    assert stru == {"n": 3, "n_used": 1, "n_zeroed": 0, "n_dropped": 2, "mse": 0.0, "mae": 0.0}
    assert out["avg_mse"] == pytest.approx(5 / 6) and out["avg_mae"] == 0.5 and out["convention"] == "authors"
    # without statuses every None counts as a 0 (unknown status)
    plain = alignment_errors(preds, refs, dims, convention="authors")
    assert plain["per_dimension"]["structure"]["n_zeroed"] == 2
    assert plain["per_dimension"]["structure"]["mse"] == pytest.approx((4 + 0 + 4) / 3)
    # only dropped units: the dimension is undefined and left out of the averages
    gone = alignment_errors([None, -1], [1, -1], ["criticalness", "structure"], convention="authors",
                            statuses=["api_error", "scored"])
    assert gone["per_dimension"]["criticalness"]["mse"] is None and gone["per_dimension"]["criticalness"]["mae"] is None
    assert gone["avg_dimensions"] == ["structure"]
    with pytest.raises(ValueError, match="differ in length"):
        alignment_errors([1, 1], [1, 1], ["structure"] * 2, convention="authors", statuses=["scored"])


@pytest.mark.parametrize("dims", [["readability"], ["readability"] * 3])
def test_a_dimension_column_of_another_length_is_refused(dims):
    with pytest.raises(ValueError, match=rf"inputs differ in length: .*'dimensions': {len(dims)}"):
        alignment_errors([1, 1], [1, 1], dims)


def test_strict_convention_orders_dimensions_as_the_paper():
    out = alignment_errors([2, -1, 1], [2, 1, 1], ["criticalness", "readability", "Structure"])
    assert list(out["per_dimension"]) == ["readability", "structure", "criticalness"]
    assert out["avg_dimensions"] == ["readability", "structure", "criticalness"]
    assert out["avg_mse"] == pytest.approx(4 / 3) and out["avg_mae"] == pytest.approx(2 / 3)
    assert out["per_dimension"]["readability"]["n_failed"] == 0


def test_reason_quality_ranges_and_the_authors_zero():
    # 0.0 and 1.0 are the ends of the range, both valid; the authors' code drops the 0.0
    out = reason_quality([0.0, 1.0, 0.6, None], ["structure", "structure", "criticalness", "criticalness"])
    assert out["per_dimension"]["structure"] == {"rq": 0.5, "n": 2, "n_scored": 2, "n_failed": 0}
    assert out["rqs"] == pytest.approx(0.55) and out["rqs_dimensions"] == ["structure", "criticalness"]
    authors = reason_quality([0.0, 1.0, 0.6, None], ["structure", "structure", "criticalness", "criticalness"],
                             convention="authors")
    assert authors["per_dimension"]["structure"] == {"rq": 1.0, "n": 2, "n_scored": 1, "n_failed": 1}
    assert authors["rqs"] == pytest.approx(0.8)
    with pytest.raises(ValueError, match=r"consistency\[1\] = -0.2 is outside \[0, 1\]"):
        reason_quality([0.2, -0.2], ["structure"] * 2)
    with pytest.raises(ValueError, match="unknown convention 'lenient'"):
        reason_quality([0.2], ["structure"], convention="lenient")
    with pytest.raises(ValueError, match="differ in length"):
        reason_quality([0.2], ["structure"] * 2)

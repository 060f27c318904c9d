"""The human ceiling's figures over resamples we choose (issue 27), every value by hand: intervals of MSE / MAE /
Align / alpha, a two-review group (alpha on n = 2), the counts, record defaults and errors, and the comparison's
p-value and verdicts.

Papers of type A score readability -1, -1, +1 and type B +2, +1, -1 (three reviews each). Per paper, the units'
mean squared differences to the other two reviews sum to 8 (A: 2 + 2 + 4) and 14 (B: 5 + 2.5 + 6.5); the mean
absolute ones to 4 (A: 1 + 1 + 2) and 6 (B: 2 + 1.5 + 2.5).
"""

from __future__ import annotations

import numpy as np
import pytest

import surveyalign.scoring.ceiling as ceiling_module
from surveyalign.scoring import ceiling_reviews, compare_to_ceiling, human_ceiling

A, B = (-1, -1, 1), (2, 1, -1)
TEN = {f"p{i}": (A if i < 5 else B) for i in range(10)}  # p0-p4 type A, p5-p9 type B
# three resamples of the 10 papers: every draw an A paper, each paper once, every draw a B paper
CHOSEN = np.array([[2.0] * 5 + [0.0] * 5, [1.0] * 10, [0.0] * 5 + [2.0] * 5])


def _rows(papers, dimension="readability"):
    return [{"paper_id": p, "review_id": f"{p}-r{k}", "dimension": dimension, "score": s}
            for p, scores in papers.items() for k, s in enumerate(scores, start=1)]


def _percentiles(values):
    """numpy's linear 2.5 / 97.5 percentiles of three values: positions 0.05 and 1.95 of the sorted list."""
    a, b, c = sorted(values)
    return [a + 0.05 * (b - a), b + 0.95 * (c - b)]


@pytest.fixture
def chosen(monkeypatch):
    monkeypatch.setattr(ceiling_module, "resample_weights", lambda n_papers, n_resamples, seed: CHOSEN)


def test_ceiling_intervals_over_chosen_resamples(chosen):
    c = human_ceiling(ceiling_reviews(_rows(TEN)), n_resamples=3)
    mse = [80 / 30, 110 / 30, 140 / 30]  # all A, half and half, all B
    mae = [40 / 30, 50 / 30, 60 / 30]
    align = [0.4 * (1 - m / 16) + 0.6 * (1 - a / 4) for m, a in zip(mse, mae, strict=True)]
    assert c["ci"] == {"avg_mse": pytest.approx(_percentiles(mse)), "avg_mae": pytest.approx(_percentiles(mae)),
                       "align": pytest.approx(_percentiles(align)), "n_papers": 10}
    e = c["per_dimension"]["readability"]
    assert e["ci"]["mse"] == pytest.approx(_percentiles(mse)) and e["ci"]["mae"] == pytest.approx(_percentiles(mae))
    # alpha (interval) of the pooled units: all A: values -1 x20, 1 x10 (n = 30): D_o = 80/30, D_e = 2*20*10*4/870
    # -> -0.45; all B the same -0.45; half and half: -1 x15, 1 x10, 2 x5: D_e = 2*(600 + 675 + 50)/870
    alphas = [-0.45, 1 - (110 / 30) / (2650 / 870), -0.45]
    assert e["ci"]["krippendorff_alpha"] == pytest.approx(_percentiles(alphas))
    assert e["krippendorff_alpha"] == pytest.approx(alphas[1])  # the point estimate is the half-and-half table
    assert set(e["ci"]) == {"mse", "mae", "qwk", "krippendorff_alpha"}
    assert (c["status"], c["insufficient"], c["resamples"], c["seed"]) == ("ok", None, 3, 0)
    assert c["method"] == "paper-level cluster bootstrap, percentile 95% interval"
    assert (c["n"], c["n_scored"], c["n_pairs"], c["n_groups"], c["n_papers"]) == (30, 30, 60, 10, 10)
    assert (e["n"], e["n_pairs"], e["n_groups"]) == (30, 60, 10)
    assert c["avg_mse"] == pytest.approx(11 / 3) and c["a_mse"] == pytest.approx(1 - 11 / 48)
    assert c["a_mae"] == pytest.approx(1 - 5 / 12) and c["align"] == pytest.approx(align[1])


def test_two_review_group_and_a_second_dimension():
    rows = _rows({"p": (2, 1)}) + _rows({"p": (1, 1, -1)}, "structure") + _rows({"q": (2,)})
    rows.append({"paper_id": "q", "review_id": "q-r2", "dimension": "readability", "score": 0})
    c = human_ceiling(ceiling_reviews(rows), n_resamples=0)
    read, struct = c["per_dimension"]["readability"], c["per_dimension"]["structure"]
    # readability: 2 vs 1, each predicting the other: MSE = MAE = 1; alpha on n = 2: D_o = 1, D_e = 2*1*1*1/2 -> 0
    assert (read["mse"], read["mae"], read["krippendorff_alpha"], read["n_groups"]) == (1.0, 1.0, 0.0, 1)
    # structure 1, 1, -1: units 2, 2, 4 (squared), 1, 1, 2 (absolute)
    assert struct["mse"] == pytest.approx(8 / 3) and struct["mae"] == pytest.approx(4 / 3)
    assert c["avg_mse"] == pytest.approx((1 + 8 / 3) / 2) and c["avg_mae"] == pytest.approx((1 + 4 / 3) / 2)
    assert c["a_mse"] == pytest.approx(1 - 11 / 96) and c["a_mae"] == pytest.approx(1 - 7 / 24)
    assert c["align"] == pytest.approx(0.4 * 85 / 96 + 0.6 * 17 / 24)
    assert (c["n_single"], c["n_excluded"], c["n_groups"]) == (1, 1, 2)
    assert (c["ci"], c["status"], c["insufficient"]) == (None, "ok", "no bootstrap (0 resamples)")
    same = human_ceiling(ceiling_reviews(_rows({"p": (1, 1)})), n_resamples=0)["per_dimension"]["readability"]
    assert same["krippendorff_alpha"] is None and same["qwk"] is None
    assert same["notes"] == {"qwk": "undefined: every review gives one and the same score",
                             "krippendorff_alpha": "undefined: every review gives one and the same score"}
    with pytest.raises(ValueError, match="^n_resamples must be >= 0, got -1$"):
        human_ceiling([], n_resamples=-1)
    few = human_ceiling(ceiling_reviews(_rows({"p": (2, 1)})), n_resamples=5)
    assert few["status"] == "insufficient data" and few["ci"] is None


def test_ceiling_reviews_defaults_and_errors():
    out = ceiling_reviews([{"paper_id": 7, "review_id": "r", "dimension": "readability", "score": 2.0},
                           {"paper_id": 7, "review_id": "s", "dimension": "readability", "score": 1,
                            "unit_id": "u-9", "source": "MOPRD"}])
    assert out == [{"paper_id": "7", "review_id": "r", "dimension": "readability", "score": 2, "unit_id": "r:readability",
                    "source": "unknown"},
                   {"paper_id": "7", "review_id": "s", "dimension": "readability", "score": 1, "unit_id": "u-9",
                    "source": "moprd"}]
    for bad in (True, "2", float("nan")):
        with pytest.raises(ValueError, match=f"^review record 0: field score = {bad!r} is not a number$"):
            ceiling_reviews([{"paper_id": "p", "review_id": "r", "dimension": "readability", "score": bad}])
    with pytest.raises(ValueError, match="^review record 0: field dimension: "):
        ceiling_reviews([{"paper_id": "p", "review_id": "r", "dimension": "elegance", "score": 1}])
    with pytest.raises(ValueError, match="repeats record 1$"):
        ceiling_reviews(_rows({"p": (1, 2)}) + _rows({"p": (1, 2)})[1:])


def _judge(papers, predict, status="scored"):
    return [{"unit_id": f"{r['review_id']}::readability", "paper_id": r["paper_id"], "review_id": r["review_id"],
             "dimension": "readability", "reference": r["score"], "status": status, "prediction": predict(r)}
            for r in _rows(papers)]


def test_compare_p_value_and_verdicts_over_chosen_resamples(chosen):
    reviews = ceiling_reviews(_rows(TEN))
    # a judge that always says +1: squared errors A 4, 4, 0 (sum 8), B 1, 0, 4 (sum 5); the ceiling's 8 and 14
    out = compare_to_ceiling(_judge(TEN, lambda r: 1) + _judge({"p0": A}, lambda r: None)
                             + _judge({"p1": A}, lambda r: 1, status="failed"), reviews, n_resamples=3)
    m = out["metrics"]["avg_mse"]
    assert (out["n_units"], out["n_papers"], out["n_unmatched"], out["resamples"], out["seed"]) == (30, 10, 0, 3, 0)
    assert m["judge"] == pytest.approx(65 / 30) and m["ceiling"] == pytest.approx(110 / 30)
    # differences judge - ceiling per resample: all A (80 - 80)/30 = 0, half (65 - 110)/30 = -1.5, all B -3
    d = [0.0, -1.5, -3.0]
    assert m["diff"] == pytest.approx(-1.5) and m["ci95"] == pytest.approx(_percentiles(d))
    # |d* - d| >= |d| = 1.5 for 0 and -3 (not for -1.5): (1 + 2) / (3 + 1)
    assert m["p_value"] == 0.75 and m["verdict"] == "beyond the ceiling" and m["insufficient"] is None
    assert out["verdict"] == "beyond the ceiling" and out["status"] == "ok"
    # absolute errors: A 2, 2, 0 (sum 4), B 1, 0, 2 (sum 3); the ceiling's 4 and 6: differences 0, -0.5, -1
    mae = out["metrics"]["avg_mae"]
    assert mae["judge"] == pytest.approx(35 / 30) and mae["ceiling"] == pytest.approx(50 / 30)
    assert mae["ci95"] == pytest.approx(_percentiles([0.0, -0.5, -1.0]))
    # a judge that says the opposite: squared errors (2s)^2, A 4, 4, 4 (sum 12), B 16, 4, 4 (sum 24), against the
    # ceiling's 8 and 14: differences 40/30, 70/30, 100/30, all above 0
    worse = compare_to_ceiling(_judge(TEN, lambda r: -r["score"]), reviews, n_resamples=3)
    assert worse["metrics"]["avg_mse"]["ci95"] == pytest.approx(_percentiles([4 / 3, 7 / 3, 10 / 3]))
    assert worse["metrics"]["avg_mse"]["verdict"] == "below the ceiling"
    with pytest.raises(ValueError, match="^n_resamples must be >= 1, got 0$"):
        compare_to_ceiling(_judge(TEN, lambda r: 1), reviews, n_resamples=0)


def test_compare_with_the_same_difference_in_every_resample(chosen):
    same = {f"p{i}": A for i in range(10)}
    out = compare_to_ceiling(_judge(same, lambda r: r["score"]), ceiling_reviews(_rows(same)), n_resamples=3)
    m = out["metrics"]["avg_mse"]
    assert m == {"judge": 0.0, "ceiling": pytest.approx(8 / 3), "diff": pytest.approx(-8 / 3), "ci95": None,
                 "p_value": None, "verdict": "insufficient data",
                 "insufficient": "insufficient data: the difference is the same in every resample"}
    assert out["status"] == "ok" and out["insufficient"] is None


def _cyclic_a(r):
    """A papers: each review predicted by the next one's score: squared errors 0, 4, 4 (the ceiling's sum, 8)."""
    k = int(r["review_id"][-1])
    return A[k % 3]


ALL_A, ALL_B = [2.0] * 5 + [0.0] * 5, [0.0] * 5 + [2.0] * 5


@pytest.mark.parametrize(("weights", "predict", "d_star", "verdict"), [
    # A as the ceiling (d = 0), B negated (errors 16, 4, 4: 24 vs 14, d = 10/3): the interval starts at exactly 0
    ([ALL_A, ALL_A, ALL_B], lambda r: _cyclic_a(r) if r["paper_id"] < "p5" else -r["score"], [0, 0, 10 / 3],
     "within the ceiling"),
    # B perfect (d = -14/3), A as the ceiling: the interval ends at exactly 0
    ([ALL_B, ALL_A, ALL_A], lambda r: _cyclic_a(r) if r["paper_id"] < "p5" else r["score"], [-14 / 3, 0, 0],
     "within the ceiling"),
    # A errors 4, 4, 1 (9 vs 8: d = 1/3), B negated: the interval starts at 1/3, above 0 but below 1
    ([ALL_A, ALL_A, ALL_B], lambda r: (1, 1, 2)[int(r["review_id"][-1]) - 1] if r["paper_id"] < "p5" else -r["score"],
     [1 / 3, 1 / 3, 10 / 3], "below the ceiling"),
])
def test_verdict_at_the_interval_ends(monkeypatch, weights, predict, d_star, verdict):
    monkeypatch.setattr(ceiling_module, "resample_weights", lambda n_papers, n_resamples, seed: np.array(weights))
    out = compare_to_ceiling(_judge(TEN, predict), ceiling_reviews(_rows(TEN)), n_resamples=3)
    m = out["metrics"]["avg_mse"]
    assert m["ci95"] == pytest.approx(_percentiles(d_star), abs=1e-12) and m["verdict"] == verdict


def test_compare_skips_unscored_and_unmatched_units_wherever_they_are():
    reviews = ceiling_reviews(_rows(TEN))
    lone = _judge({"zz": (1,)}, lambda r: 1) + _judge({"p0": A}, lambda r: 1, status="failed")
    lone += [{**r, "review_id": "p1-r9"} for r in _judge({"p1": (1,)}, lambda r: 1)]  # a review not in the set
    out = compare_to_ceiling(lone + _judge(TEN, lambda r: 1), reviews, n_resamples=1)
    assert (out["n_units"], out["n_unmatched"]) == (30, 2)
    assert out["method"] == "paired paper-level bootstrap on the judge's scored units that have another review"
    with pytest.raises(ValueError, match=r"^no unit scored by the judge has another review of the same paper and "
                                         r"dimension \(the ceiling needs two or more reviews per paper and dimension\)$"):
        compare_to_ceiling(lone, reviews, n_resamples=1)
    few = compare_to_ceiling(_judge({"p": A}, lambda r: 1), ceiling_reviews(_rows({"p": A})), n_resamples=5)
    assert few["status"] == "insufficient data"
    assert few["insufficient"] == "insufficient data: 1 papers, fewer than the minimum of 10"


def test_defaults_seed_0_and_1000_resamples():
    reviews = ceiling_reviews(_rows(TEN))
    judge = _judge(TEN, lambda r: 1)
    default = compare_to_ceiling(judge, reviews, n_resamples=50)
    assert default == compare_to_ceiling(judge, reviews, n_resamples=50, seed=0)
    assert default != compare_to_ceiling(judge, reviews, n_resamples=50, seed=1)
    assert compare_to_ceiling(judge, reviews)["resamples"] == 1000
    c = human_ceiling(reviews, n_resamples=50)
    assert c == human_ceiling(reviews, n_resamples=50, seed=0) and c != human_ceiling(reviews, n_resamples=50, seed=1)
    assert human_ceiling(reviews)["resamples"] == 1000


def test_no_data_in_full():
    c = human_ceiling(ceiling_reviews(_rows({"p": (1,), "q": (2,)})), n_resamples=0)
    assert {k: c[k] for k in ("per_dimension", "avg_mse", "avg_mae", "a_mse", "a_mae", "align", "ci", "status",
                              "insufficient", "n", "n_single")} == {
        "per_dimension": {}, "avg_mse": None, "avg_mae": None, "a_mse": None, "a_mae": None, "align": None,
        "ci": None, "status": "no data", "insufficient": "no paper has two or more reviews of the same dimension",
        "n": 0, "n_single": 2}

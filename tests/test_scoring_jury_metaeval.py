"""Juries of judges, App. I.4 rankings across RQS judges and the App. I.2 meta-evaluation, checked by hand
(``surveyalign/scoring/jury.py``, ``surveyalign/scoring/metaeval.py``)."""

from __future__ import annotations

import json
import math

import pytest

from surveyalign.scoring import (
    combine_votes,
    kendall_tau,
    meta_evaluate,
    multi_judge_rankings,
    read_ratings,
)


def test_combine_votes_by_hand():
    assert combine_votes([-1, 1, 1], method="majority") == (1, None)
    assert combine_votes([-1, 1, 1], method="median") == (1, None)  # cumulative 1, 2, 3 reaches 1.5 at +1
    assert combine_votes([-1, 1, 1], method="mean") == (1, None)  # 1/3 is nearest +1
    w = [3, 1, 1]
    assert combine_votes([-1, 1, 1], w, "majority") == (-1, None)  # weight 3 against 2
    assert combine_votes([-1, 1, 1], w, "median") == (-1, None)  # -1 alone reaches half of 5
    assert combine_votes([-1, 1, 1], w, "mean") == (-1, None)  # -1/5 is nearest -1
    # a tie between -2 and +2: the weighted mean 0 is as far from both, so the lower one
    assert combine_votes([-2, 2, None], method="majority") == (-2, None)
    # mean 0 sits between -1 and +1: the one nearer the lower weighted median (-2)
    assert combine_votes([-2, 2, None], method="mean") == (-1, None)
    assert combine_votes([0.2, 0.6, 1.0], [1, 1, 2], "mean", scale="ratings")[0] == pytest.approx(0.7)
    assert combine_votes([0.2, 0.6, 1.0], [1, 1, 2], "median", scale="ratings") == (0.6, None)
    assert combine_votes([0.2, 0.6, 1.0], [1, 1, 2], "majority", scale="ratings") == (1.0, None)
    assert combine_votes([None, None], method="mean") == (None, "no judge of the jury gave a vote")
    with pytest.raises(ValueError, match=r"votes\[1\] = 0 is outside the label space"):
        combine_votes([1, 0, 2])
    with pytest.raises(ValueError, match=r"weights\[0\] = -1 is not a positive number"):
        combine_votes([1, 1], [-1, 1])
    with pytest.raises(ValueError, match="unknown jury method 'vote'"):
        combine_votes([1], method="vote")


def test_kendall_tau_by_hand():
    # S1 > S3 > S2 against S1 > S2 > S3: two concordant pairs, one discordant -> 1/3
    assert kendall_tau([3, 1, 2], [3, 2, 1])[0] == pytest.approx(1 / 3)
    assert kendall_tau([1, 2], [2, 1])[0] == pytest.approx(-1)
    assert kendall_tau([1], [1])[0] is None
    assert kendall_tau([1, 1, 1], [1, 2, 3])[0] is None


def _records(system, preds, refs=(-1, -1), papers=("p1", "p2")):
    return [{"unit_id": f"u{i}", "paper_id": p, "dimension": "readability", "reference": r, "prediction": x,
             "status": "scored"} for i, (p, r, x) in enumerate(zip(papers, refs, preds))]


RECORDS = {"S1": _records("S1", (-1, -1)), "S2": _records("S2", (1, 1)), "S3": _records("S3", (-2, 1))}
J1 = {"S1": {"u0": 0.2, "u1": 0.4}, "S2": {"u0": 0.8, "u1": 1.0}, "S3": {"u0": 0.6, "u1": 0.6}}
J2 = {"S1": {"u0": 0.0, "u1": 0.0}, "S2": {"u0": 1.0, "u1": 1.0}, "S3": {"u0": 0.0, "u1": 0.2}}


def test_multi_judge_rankings_by_hand():
    res = multi_judge_rankings(RECORDS, {"J1": J1, "J2": J2, "J3": J1}, n_resamples=0)
    # Align: S1 1.0; S2 MSE 4 MAE 2 -> 0.4*0.75 + 0.6*0.5 = 0.6; S3 MSE 2.5 MAE 1.5 -> 0.4*0.84375 + 0.6*0.625
    assert res["align"] == {"S1": pytest.approx(1.0), "S2": pytest.approx(0.6), "S3": pytest.approx(0.7125)}
    assert res["rqs"]["S1"]["J1"] == pytest.approx(0.3) and res["rqs"]["S3"]["J2"] == pytest.approx(0.1)
    assert res["has"]["S1"]["J1"] == pytest.approx(0.825)  # 0.75 * 1 + 0.25 * 0.3
    assert res["has"]["S2"]["J1"] == pytest.approx(0.675)  # 0.75 * 0.6 + 0.25 * 0.9
    assert res["has"]["S3"]["J1"] == pytest.approx(0.684375)  # 0.75 * 0.7125 + 0.25 * 0.6
    assert res["has"]["S3"]["J2"] == pytest.approx(0.559375)
    assert res["ranking"] == {"J1": ["S1", "S3", "S2"], "J2": ["S1", "S2", "S3"], "J3": ["S1", "S3", "S2"]}
    assert res["same_top"] and res["top"]["J2"] == "S1"
    taus = {(k["a"], k["b"]): k["tau"] for k in res["kendall"]}
    assert taus == {("J1", "J2"): pytest.approx(1 / 3), ("J1", "J3"): pytest.approx(1.0),
                    ("J2", "J3"): pytest.approx(1 / 3)}
    assert res["mean_tau"] == pytest.approx(5 / 9)
    # alpha over 6 (system, unit) items x 3 judges, ratings x5: D_o = 38/18, D_e = 1013/153
    assert res["inter_judge_alpha"] == pytest.approx(1 - (38 / 18) / (1013 / 153))
    assert res["alpha_units"] == 6 and res["status"] == "insufficient data"


def test_multi_judge_tau_interval_on_twelve_papers():
    papers = [f"p{i:02d}" for i in range(12)]
    recs = {s: [{"unit_id": f"u{i}", "paper_id": p, "dimension": "structure", "reference": -1,
                 "prediction": pred, "status": "scored"} for i, p in enumerate(papers)]
            for s, pred in (("A", -1), ("B", 1), ("C", -2))}
    j1 = {s: {f"u{i}": v for i in range(12)} for s, v in (("A", 0.6), ("B", 0.2), ("C", 0.4))}
    j2 = {s: {f"u{i}": (v if i % 3 else 1.0) for i in range(12)} for s, v in (("A", 0.4), ("B", 0.4), ("C", 0.2))}
    res = multi_judge_rankings(recs, {"J1": j1, "J2": j2}, n_resamples=200)
    k = res["kendall"][0]
    assert k["tau"] == pytest.approx(1.0)  # A > C > B under both
    assert res["status"] == "ok" and (k["ci95"] is None or k["ci95"][0] <= 1.0 <= k["ci95"][1] + 1e-9)


# ratings x5: a 0 1 2 3 4, b 0 2 1 3 4, c 1 0 2 4 3; judge 0 2 1 4 3
HUMAN = {f"q{i}": {"a": a / 5, "b": b / 5, "c": c / 5}
         for i, (a, b, c) in enumerate(zip((0, 1, 2, 3, 4), (0, 2, 1, 3, 4), (1, 0, 2, 4, 3)))}
JUDGE = {f"q{i}": v / 5 for i, v in enumerate((0, 2, 1, 4, 3))}


def test_meta_evaluation_by_hand():
    res = meta_evaluate(HUMAN, JUDGE, n_resamples=0)
    pairs = {(p["a"], p["b"]): p["pearson"] for p in res["human_human"]["rater_pairs"]}
    # deviations a -2 -1 0 1 2, b -2 0 -1 1 2, c -1 -2 0 2 1: products 9, 8, 6 over 10
    assert pairs == {("a", "b"): pytest.approx(0.9), ("a", "c"): pytest.approx(0.8), ("b", "c"): pytest.approx(0.6)}
    assert res["human_human"]["mean_pearson"] == pytest.approx(2.3 / 3)
    # alpha: D_o = 14/15, D_e = 30/7
    assert res["human_human"]["krippendorff_alpha"] == pytest.approx(176 / 225)
    j = res["judge"]
    # mean human x15: 1 3 5 10 11 (deviations -5 -3 -1 4 5); judge deviations -2 0 -1 2 1: 24 / sqrt(10 * 76)
    assert j["pearson"] == pytest.approx(24 / math.sqrt(760))
    # ranks 1 3 2 5 4 against 1 2 3 4 5: sum d^2 = 4 -> 1 - 6*4 / (5*24)
    assert j["spearman"] == pytest.approx(0.8)
    assert j["n"] == 5 and j["pearson_ci"] is None and "insufficient data" in j["notes"]["pearson_ci"]
    assert res["paper"]["judge_pearson"] == 0.804


def test_meta_evaluation_intervals_and_missing():
    human = {f"{k}-{i}": cells for k in range(3) for i, cells in enumerate(HUMAN.values())}
    judge = {f"{k}-{i}": v for k in range(3) for i, v in enumerate(JUDGE.values())}
    judge.pop("0-0")
    judge["zz"] = 0.4
    res = meta_evaluate(human, judge, n_resamples=300, seed=2)
    j = res["judge"]
    assert (j["n"], j["n_without_judge"], j["n_without_human"]) == (14, 1, 1)
    lo, hi = j["pearson_ci"]
    assert lo <= j["pearson"] <= hi
    assert res["human_human"]["mean_pearson_ci"] is not None


def test_read_ratings_layouts_and_errors(tmp_path):
    long = tmp_path / "long.csv"
    long.write_text("pair_id,rater,rating\nq0,a,0.2\nq0,b,0.4\nq1,a,1\n", encoding="utf-8")
    assert read_ratings(long) == {"q0": {"a": 0.2, "b": 0.4}, "q1": {"a": 1.0}}
    wide = tmp_path / "wide.csv"
    wide.write_text("pair_id,dimension,a,b\nq0,readability,0.2,\nq1,structure,0.6,0.8\n", encoding="utf-8")
    assert read_ratings(wide) == {"q0": {"a": 0.2}, "q1": {"a": 0.6, "b": 0.8}}
    js = tmp_path / "r.json"
    js.write_text(json.dumps([{"pair_id": "q0", "rater": "a", "rating": 0.2}]), encoding="utf-8")
    assert read_ratings(js) == {"q0": {"a": 0.2}}
    bad = tmp_path / "bad.csv"
    bad.write_text("pair_id,rater,rating\nq0,a,high\n", encoding="utf-8")
    with pytest.raises(ValueError, match="bad.csv: row 2: rating 'high' of rater a is not a number"):
        read_ratings(bad)
    twice = tmp_path / "twice.csv"
    twice.write_text("pair_id,rater,rating\nq0,a,0.2\nq0,a,0.4\n", encoding="utf-8")
    with pytest.raises(ValueError, match="row 3: pair q0 is rated twice by a"):
        read_ratings(twice)

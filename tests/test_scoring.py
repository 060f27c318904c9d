"""Pure scoring functions: paper figures (Table 2, Table 8), hand-computed agreement statistics,
baselines, failure accounting, summaries and the paper-level bootstrap."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

from surveyalign.scoring import (
    agreement_statistics,
    alignment_errors,
    baseline_metrics,
    human_aligned_score,
    krippendorff_alpha_interval,
    macro_mae,
    majority_label,
    paired_bootstrap,
    quadratic_weighted_kappa,
    reason_quality,
    summarize_predictions,
)

# SurveyReview Table 2: (AVG MSE, AVG MAE, RQS) -> HAS, and Table 8's Align column where given.
TABLE2 = [
    ("SurveyAlign", 1.38, 0.69, 0.36, 0.74, 0.86),
    ("GPT-5.2", 2.28, 1.15, 0.42, 0.68, 0.77),
    ("Claude-Opus-4.5", 2.77, 1.25, 0.48, 0.68, 0.74),
    ("Qwen3-32B", 3.21, 1.51, 0.36, 0.61, None),
    ("Gemini-3-pro", 3.94, 1.53, 0.29, 0.58, 0.67),
    ("DeepSeek-v3.2", 3.97, 1.65, 0.37, 0.58, 0.65),
    ("GLM-4.7", 3.62, 1.56, 0.37, 0.60, 0.68),
]


@pytest.mark.parametrize("name,mse,mae,rqs,has,align", TABLE2, ids=[r[0] for r in TABLE2])
def test_table2_has_rows(name, mse, mae, rqs, has, align):
    out = human_aligned_score(mse, mae, rqs)
    assert out["has"] == pytest.approx(has, abs=0.006)
    if align is not None:  # Table 8 prints Align to two decimals
        assert out["align"] == pytest.approx(align, abs=0.006)
    assert out["has_note"] is None


def test_table8_rqs_weight_sensitivity():
    # Table 8, SurveyAlign row: beta_RQS = 0.25 / 0.40 / 0.60 / 0.75 -> 0.74 / 0.66 / 0.56 / 0.49
    for b2, expected in ((0.25, 0.74), (0.40, 0.66), (0.60, 0.56), (0.75, 0.49)):
        out = human_aligned_score(1.38, 0.69, 0.36, beta=(1 - b2, b2))
        assert out["has"] == pytest.approx(expected, abs=0.006)


def test_has_formula_by_hand_and_missing_rqs():
    out = human_aligned_score(1.0, 0.5, 0.6)
    assert out["a_mse"] == pytest.approx(1 - 1 / 16)
    assert out["a_mae"] == pytest.approx(1 - 0.5 / 4)
    assert out["align"] == pytest.approx(0.4 * 0.9375 + 0.6 * 0.875)
    assert out["has"] == pytest.approx(0.75 * 0.9 + 0.25 * 0.6)
    none = human_aligned_score(1.0, 0.5, None)
    assert none["has"] is None and "RQS" in none["has_note"] and none["align"] == pytest.approx(0.9)
    empty = human_aligned_score(None, None, 0.5)
    assert empty["align"] is None and empty["has"] is None and empty["has_note"]
    with pytest.raises(ValueError):
        human_aligned_score(1.0, 0.5, 0.5, delta_s=0)
    with pytest.raises(ValueError):
        human_aligned_score(float("nan"), 0.5, 0.5)


# refs/preds worked by hand: MSE 5/4, MAE 3/4, macro MAE 2/3, QWK 3/7, Krippendorff alpha 44/79
REFS = [-1, -1, 1, 2]
PREDS = [-1, 1, 1, 1]


def test_agreement_statistics_by_hand():
    stats = agreement_statistics(PREDS, REFS)
    assert stats["mse"] == pytest.approx(1.25)
    assert stats["mae"] == pytest.approx(0.75)
    assert stats["macro_mae"] == pytest.approx(2 / 3)
    assert stats["qwk"] == pytest.approx(3 / 7)
    assert stats["krippendorff_alpha"] == pytest.approx(44 / 79)
    assert "macro_mae" in stats["notes"]  # class -2 absent: said, not hidden


def test_agreement_degenerate_cases_give_none_with_reason():
    value, reason = quadratic_weighted_kappa([-1, -1], [-1, -1])
    assert value is None and "same score" in reason
    value, reason = krippendorff_alpha_interval([1], [1])
    assert value is None and "at least 2" in reason
    value, reason = krippendorff_alpha_interval([2, 2, 2], [2, 2, 2])
    assert value is None and "identical" in reason
    assert macro_mae([], []) == (None, "no scored units")
    # a constant judge has kappa exactly 0 (observed = expected disagreement)
    assert quadratic_weighted_kappa([-1] * 4, [-1, -1, 1, 2])[0] == pytest.approx(0.0)


def test_alignment_errors_counts_none_as_failure_never_zero():
    preds = [-1, 1, None, -2, None]
    refs = [-1, -1, 1, -2, 2]
    dims = ["Readability", "readability", "readability", "structure", "structure"]
    out = alignment_errors(preds, refs, dims)
    read, stru = out["per_dimension"]["readability"], out["per_dimension"]["structure"]
    assert (read["n"], read["n_scored"], read["n_failed"]) == (3, 2, 1)
    assert read["mse"] == pytest.approx(2.0) and read["mae"] == pytest.approx(1.0)  # None is not a 0
    assert (stru["n"], stru["n_scored"], stru["n_failed"]) == (2, 1, 1)
    assert stru["mse"] == 0.0 and stru["qwk"] is None and "at least 2" in stru["notes"]["qwk"]
    assert out["avg_mse"] == pytest.approx(1.0) and out["avg_mae"] == pytest.approx(0.5)
    assert out["avg_dimensions"] == ["readability", "structure"]
    authors = alignment_errors(preds, refs, dims, convention="authors",
                               statuses=["scored", "scored", "parse_failed", "scored", "api_error"])
    ra, sa = authors["per_dimension"]["readability"], authors["per_dimension"]["structure"]
    assert ra["mse"] == pytest.approx((0 + 4 + 1) / 3) and ra["n_zeroed"] == 1
    assert sa["mse"] == 0.0 and sa["n_dropped"] == 1 and sa["n_used"] == 1


def test_alignment_errors_all_failed_dimension_and_bad_input():
    out = alignment_errors([None, None, -1], [1, 2, -1], ["criticalness", "criticalness", "structure"])
    assert out["per_dimension"]["criticalness"]["mse"] is None
    assert out["avg_dimensions"] == ["structure"] and out["avg_mse"] == 0.0
    with pytest.raises(ValueError, match="differ in length"):
        alignment_errors([1], [1, 2], ["readability"])
    with pytest.raises(ValueError, match="unknown dimension"):
        alignment_errors([1], [1], ["clarity"])
    with pytest.raises(ValueError, match="not finite"):
        alignment_errors([float("nan")], [1], ["readability"])
    with pytest.raises(ValueError, match="convention"):
        alignment_errors([1], [1], ["readability"], convention="lenient")


def test_reason_quality_zero_is_a_score():
    out = reason_quality([0.0, 0.4, None, 1.0], ["readability", "readability", "structure", "structure"])
    assert out["per_dimension"]["readability"]["rq"] == pytest.approx(0.2)
    assert out["per_dimension"]["readability"]["n_scored"] == 2
    assert out["per_dimension"]["structure"] == {"rq": 1.0, "n": 2, "n_scored": 1, "n_failed": 1}
    assert out["rqs"] == pytest.approx(0.6)
    authors = reason_quality([0.0, 0.4, None, 1.0], ["readability"] * 2 + ["structure"] * 2, convention="authors")
    assert authors["rqs"] == pytest.approx((0.4 + 1.0) / 2)
    assert reason_quality([None], ["readability"])["rqs"] is None
    with pytest.raises(ValueError, match="outside"):
        reason_quality([1.2], ["readability"])


def test_majority_and_prior_baselines_by_hand():
    assert majority_label([-1, -1, -1, 1, 1, 2]) == -1
    assert majority_label([1, 1, -1, -1]) == -1 and majority_label([2, 2, 1, 1]) == 1
    out = baseline_metrics({"Readability": [-1, -1, -1, 1, 1, 2]}, [-1, 1, 2, -2], ["readability"] * 4)
    maj = out["majority"]["per_dimension"]["readability"]
    assert maj["label"] == -1 and maj["mse"] == pytest.approx(3.5) and maj["mae"] == pytest.approx(1.5)
    assert out["majority"]["align"] == pytest.approx(0.6875)
    prior = out["prior_sampling"]["per_dimension"]["readability"]
    assert prior["mse"] == pytest.approx(4.0) and prior["mae"] == pytest.approx(19 / 12)
    assert out["train_counts"]["readability"] == {"-2": 0, "-1": 3, "1": 2, "2": 1}
    missing = baseline_metrics({"readability": [-1]}, [1], ["structure"])
    assert missing["notes"] and missing["majority"]["avg_mse"] is None


def _records(seed: int = 1, papers: int = 40, noise: float = 0.5, fail: bool = True) -> list[dict]:
    rng = random.Random(seed)
    out = []
    dims = ["readability", "structure", "comprehensiveness", "criticalness"]
    for p in range(papers):
        src = ("f1000", "moprd", "openreview")[p % 3]
        for rv in range(1 + p % 2):
            for d in dims:
                ref = rng.choices([-2, -1, 1, 2], [5, 66, 25, 4])[0]
                status = rng.choices(["scored", "parse_failed", "api_error", "missing_text"],
                                     [90, 5, 3, 2] if fail else [1, 0, 0, 0])[0]
                pred = (ref if rng.random() > noise else rng.choice([-2, -1, 1, 2])) if status == "scored" else None
                out.append({"unit_id": f"p{p}r{rv}::{d}", "paper_id": f"p{p}", "review_id": f"p{p}r{rv}",
                            "source": src, "dimension": d, "reference": ref, "prediction": pred, "status": status,
                            "consistency": rng.choice([0.0, 0.2, 0.4, 0.6, 0.8, 1.0]) if status == "scored" else None})
    return out


TRAIN = {"readability": [-1] * 6 + [1] * 3 + [-2, 2], "structure": [-1] * 5 + [1] * 2,
         "comprehensiveness": [-1] * 4 + [1], "criticalness": [-1] * 3 + [1] * 2 + [2]}


def test_summarize_predictions_counts_and_convention():
    recs = [
        {"unit_id": "a::readability", "paper_id": "A", "source": "f1000", "dimension": "readability",
         "reference": -1, "prediction": -1, "status": "scored", "consistency": 0.0},
        {"unit_id": "b::readability", "paper_id": "B", "source": "moprd", "dimension": "readability",
         "reference": 1, "prediction": -1, "status": "scored", "consistency": 0.4},
        {"unit_id": "c::readability", "paper_id": "C", "source": "moprd", "dimension": "readability",
         "reference": 2, "prediction": None, "status": "parse_failed", "consistency": None},
        {"unit_id": "d::readability", "paper_id": "D", "source": None, "dimension": "readability",
         "reference": -2, "prediction": None, "status": "api_error", "consistency": None},
    ]
    s = summarize_predictions(recs, train_scores={"readability": [-1, -1, 1]}, bootstrap=50)
    json.dumps(s, allow_nan=False)
    d = s["per_dimension"]["readability"]
    assert (d["n"], d["n_scored"], d["n_parse_failed"], d["n_error"], d["n_missing_text"], d["n_failed"]) == (4, 2, 1, 1, 0, 2)
    assert d["mse"] == pytest.approx(2.0) and d["mae"] == pytest.approx(1.0)
    assert d["rq"] == pytest.approx(0.2) and s["rqs"] == pytest.approx(0.2)
    assert s["has"] == pytest.approx(0.75 * (0.4 * (1 - 2 / 16) + 0.6 * (1 - 1 / 4)) + 0.25 * 0.2)
    # the majority judge (-1) on the same scored references has MSE 2.0 too: skill 0
    assert d["skill_vs_majority"] == pytest.approx(0.0)
    assert s["status_counts"] == {"scored": 2, "parse_failed": 1, "api_error": 1, "prompt_too_long": 0,
                                   "missing_text": 0, "missing": 0, "total": 4}
    # authors: the unparseable unit is a 0 (error 2), the API error is dropped; RQS drops the 0.0
    a = s["authors_convention"]
    assert a["avg_mse"] == pytest.approx((0 + 4 + 4) / 3) and a["avg_mae"] == pytest.approx((0 + 2 + 2) / 3)
    assert a["rqs"] == pytest.approx(0.4)
    assert set(s["per_source"]) == {"f1000", "moprd", "unknown"}
    assert s["per_source"]["moprd"]["n_failed"] == 1 and s["per_source"]["moprd"]["avg_mse"] == pytest.approx(4.0)
    assert s["baselines"]["majority"]["per_dimension"]["readability"]["mse"] == pytest.approx((0 + 4 + 9 + 1) / 4)
    # no record carries a rationale field: nothing is known, nothing counted
    assert s["n_scored_without_rationale"] == 0 and d["n_scored_without_rationale"] == 0


def test_scored_units_without_rationale_are_counted():
    """A bare "**Score:** $$$-1$$$" is scored (it counts for MSE) but its blank rationale is counted; failed
    units and records without the field are not."""
    base = {"paper_id": "P", "dimension": "structure", "reference": -1, "prediction": -1, "status": "scored"}
    recs = [
        {**base, "unit_id": "a", "rationale": "Sections overlap."},
        {**base, "unit_id": "b", "rationale": ""},
        {**base, "unit_id": "c", "rationale": "  \n"},
        {**base, "unit_id": "d", "rationale": None},
        {**base, "unit_id": "e"},
        {**base, "unit_id": "f", "rationale": "", "prediction": None, "status": "parse_failed"},
        {**base, "unit_id": "g", "rationale": "", "dimension": "readability"},
    ]
    s = summarize_predictions(recs, bootstrap=0)
    assert s["n_scored_without_rationale"] == 4  # b, c, d, g
    assert s["per_dimension"]["structure"]["n_scored_without_rationale"] == 3
    assert s["per_dimension"]["readability"]["n_scored_without_rationale"] == 1
    assert s["per_dimension"]["structure"]["n_scored"] == 5 and s["per_dimension"]["structure"]["mse"] == 0.0


def test_summarize_without_consistency_or_train_scores():
    recs = _records(fail=False)
    for r in recs:
        r["consistency"] = None
    s = summarize_predictions(recs, bootstrap=0)
    assert s["rqs"] is None and s["has"] is None and "RQS" in s["has_note"] and s["align"] is not None
    assert s["baselines"] is None and "train_scores" in s["baselines_note"]
    assert s["skill_vs_majority"] is None and s["ci"] is None
    recs[0]["consistency"] = 0.5
    forced = summarize_predictions(recs, bootstrap=0, consistency_available=False)
    assert forced["rqs"] is None and forced["has"] is None


def test_summarize_degenerate_inputs_no_nan():
    same = [{"unit_id": f"u{i}", "paper_id": f"p{i}", "dimension": "structure", "reference": -1,
             "prediction": -1, "status": "scored"} for i in range(3)]
    s = summarize_predictions(same, train_scores={"structure": [-1]}, bootstrap=20)
    text = json.dumps(s, allow_nan=False)
    d = s["per_dimension"]["structure"]
    assert d["mse"] == 0.0 and d["qwk"] is None and d["krippendorff_alpha"] is None
    assert d["skill_vs_majority"] is None and "perfect" in d["notes"]["skill_vs_majority"]
    assert "NaN" not in text
    empty = summarize_predictions([], bootstrap=10)
    assert empty["n"] == 0 and empty["avg_mse"] is None and empty["has"] is None
    failed = summarize_predictions([{**same[0], "prediction": None, "status": "missing_text"}], bootstrap=10)
    assert failed["per_dimension"]["structure"]["n_missing_text"] == 1 and failed["avg_mse"] is None


@pytest.mark.parametrize("bad,match", [
    ({"status": "ok"}, "status"),
    ({"reference": 0}, "reference"),
    ({"prediction": None}, "scored"),
    ({"prediction": 1.5}, "prediction"),
    ({"consistency": 2.0}, "consistency"),
    ({"dimension": "style"}, "dimension"),
])
def test_invalid_records_name_record_and_field(bad, match):
    rec = {"unit_id": "x::readability", "paper_id": "x", "dimension": "readability", "reference": 1,
           "prediction": 1, "status": "scored", **bad}
    with pytest.raises(ValueError, match=match) as info:
        summarize_predictions([rec], bootstrap=0)
    assert "x::readability" in str(info.value)
    with pytest.raises(ValueError, match="missing field"):
        summarize_predictions([{"unit_id": "y"}], bootstrap=0)
    good = {"unit_id": "z", "paper_id": "z", "dimension": "readability", "reference": 1, "prediction": 1,
            "status": "scored"}
    with pytest.raises(ValueError, match="repeats"):
        summarize_predictions([good, dict(good)], bootstrap=0)


def test_vectorised_bootstrap_statistics_match_point_estimates():
    """The confusion-table formulas used in every resample equal sklearn / krippendorff on the data."""
    from surveyalign.scoring.bootstrap import build_tables, resample_stats

    recs = _records(seed=3)
    s = summarize_predictions(recs, train_scores=TRAIN, bootstrap=0)
    t = build_tables([{**r} for r in recs])
    maj = {d: majority_label(v) for d, v in TRAIN.items()}
    point = resample_stats(t, np.ones((1, len(t.papers))), majority=maj, alpha_w=(0.4, 0.6),
                            beta_w=(0.75, 0.25), delta_s=4.0)
    for d, entry in s["per_dimension"].items():
        for key in ("mse", "mae", "macro_mae", "qwk", "krippendorff_alpha", "skill_vs_majority", "rq"):
            assert point["per_dimension"][d][key][0] == pytest.approx(entry[key], abs=1e-12), (d, key)
    assert point["has"][0] == pytest.approx(s["has"]) and point["align"][0] == pytest.approx(s["align"])
    assert point["skill_vs_majority"][0] == pytest.approx(s["skill_vs_majority"])


def test_bootstrap_intervals_resample_papers_deterministically():
    recs = _records(seed=5)
    a = summarize_predictions(recs, train_scores=TRAIN, bootstrap=300, seed=7)
    b = summarize_predictions(recs, train_scores=TRAIN, bootstrap=300, seed=7)
    assert a["ci"] == b["ci"]
    assert a["ci"]["n_papers"] == 40 and a["ci"]["resamples"] == 300
    for key in ("avg_mse", "avg_mae", "align", "rqs", "has"):
        lo, hi = a["ci"][key]
        assert lo <= a[key] <= hi, key
    lo, hi = a["ci"]["per_dimension"]["readability"]["qwk"]
    assert lo < a["per_dimension"]["readability"]["qwk"] < hi
    # one paper only: every resample is that paper: no interval, "insufficient data"
    one = [r for r in recs if r["paper_id"] == "p1"]
    s1 = summarize_predictions(one, bootstrap=30)
    assert s1["ci"]["avg_mse"] is None and s1["ci"]["status"] == "insufficient data"


def test_paper_weights_keep_papers_whole():
    from surveyalign.scoring.bootstrap import resample_weights

    W = resample_weights(12, 50, seed=0)
    assert W.shape == (50, 12) and np.all(W.sum(axis=1) == 12) and np.all(W == np.round(W))


def test_paired_bootstrap():
    recs = _records(seed=2, noise=0.9)
    perfect = [{**r, "prediction": r["reference"], "status": "scored"} for r in recs]
    out = paired_bootstrap(perfect, recs, n_resamples=300)
    n_scored = sum(r["status"] == "scored" for r in recs)
    assert out["n_shared"] == len(recs) and out["n_both_scored"] == n_scored
    mse = out["metrics"]["avg_mse"]
    assert mse["a"] == 0.0 and mse["diff"] < 0 and mse["better"] == "a" and mse["p_value"] < 0.01
    assert mse["ci95"][1] < 0
    same = paired_bootstrap(recs, recs, n_resamples=100)  # every resampled difference is 0: nothing to test
    assert same["metrics"]["avg_mse"]["diff"] == 0.0 and same["metrics"]["avg_mse"]["better"] is None
    assert same["metrics"]["avg_mse"]["p_value"] is None and same["metrics"]["avg_mse"]["ci95"] is None
    assert same["status"] == "insufficient data"
    assert same["metrics"]["avg_mse"]["insufficient"] == "insufficient data: the difference is the same in every resample"
    with pytest.raises(ValueError, match="reference"):
        paired_bootstrap(recs, [{**r, "reference": -r["reference"]} for r in recs])
    with pytest.raises(ValueError, match="share no unit"):
        paired_bootstrap(recs[:1], [{**recs[0], "unit_id": "other"}])


def test_overall_skill_is_defined_when_one_dimension_has_a_perfect_majority():
    recs = [{"unit_id": f"s{i}", "paper_id": f"p{i}", "dimension": "structure", "reference": -1, "prediction": -1,
             "status": "scored"} for i in range(2)]
    recs += [{"unit_id": "r0", "paper_id": "p0", "dimension": "readability", "reference": 1, "prediction": 1,
              "status": "scored"},
             {"unit_id": "r1", "paper_id": "p1", "dimension": "readability", "reference": -1, "prediction": 1,
              "status": "scored"}]
    s = summarize_predictions(recs, train_scores={"structure": [-1], "readability": [-1]}, bootstrap=0)
    assert s["per_dimension"]["structure"]["skill_vs_majority"] is None
    # AVG MSE = (0 + 2) / 2 = 1; majority (-1) MSE on the same units = (0 + (4 + 0) / 2) / 2 = 1 -> skill 0
    assert s["avg_mse"] == pytest.approx(1.0) and s["skill_vs_majority"] == pytest.approx(0.0)

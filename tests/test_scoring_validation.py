"""Metric entry points reject impossible input (outside {-2,-1,1,2}, NaN, unequal lengths) with a clear error,
in the pure functions and the evaluate modules built on them; the bootstrap says "insufficient data" instead of
an interval, a p-value and a winner when there are too few papers or no spread."""

from __future__ import annotations

import math

import evaluate
import pytest

from surveyalign.scoring import (
    INSUFFICIENT_DATA,
    MIN_BOOTSTRAP_PAPERS,
    agreement_statistics,
    alignment_errors,
    baseline_metrics,
    bootstrap_intervals,
    human_aligned_score,
    krippendorff_alpha_interval,
    macro_mae,
    majority_label,
    paired_bootstrap,
    quadratic_weighted_kappa,
    reason_quality,
    render_comparison,
    render_intervals,
    summarize_predictions,
)

NAN = float("nan")
DIMS = ["readability", "readability"]


@pytest.mark.parametrize(("call", "message"), [
    (lambda: alignment_errors([7, -1], [-1, -1], DIMS), r"predictions\[0\] = 7 is outside the label space"),
    (lambda: alignment_errors([0, -1], [-1, -1], DIMS), r"predictions\[0\] = 0 is outside the label space"),
    (lambda: alignment_errors([NAN, -1], [-1, -1], DIMS), r"predictions\[0\] = nan is not finite; use None"),
    (lambda: alignment_errors([-1, -1], [-1, 3], DIMS), r"references\[1\] = 3 is outside the label space"),
    (lambda: alignment_errors([-1], [-1, -1], DIMS), r"inputs differ in length"),
    (lambda: alignment_errors([None, 1.5], [-1, -1], DIMS), r"predictions\[1\] = 1.5 is outside"),
    (lambda: agreement_statistics([-1, 5], [-1, -1]), r"predictions\[1\] = 5 is outside"),
    (lambda: quadratic_weighted_kappa([-1, 1], [-1, NAN]), r"references\[1\] = nan is not finite"),
    (lambda: krippendorff_alpha_interval([-1, 1, 2], [-1, 1]), r"inputs differ in length"),
    (lambda: macro_mae([-3, 1], [-1, 1]), r"predictions\[0\] = -3 is outside"),
    (lambda: reason_quality([NAN], ["readability"]), r"consistency\[0\] = nan is not finite"),
    (lambda: reason_quality([1.2], ["readability"]), r"consistency\[0\] = 1.2 is outside \[0, 1\]"),
    (lambda: human_aligned_score(17.0, 1.0, 0.5), r"avg_mse = 17.0 is outside \[0, 16\]"),
    (lambda: human_aligned_score(1.0, -0.5, 0.5), r"avg_mae = -0.5 is outside \[0, 4\]"),
    (lambda: human_aligned_score(1.0, 1.0, 1.5), r"rqs = 1.5 is outside \[0, 1\]"),
    (lambda: human_aligned_score(NAN, 1.0, 0.5), r"avg_mse = nan is not finite"),
    (lambda: majority_label([-1, 7]), r"scores\[1\] = 7 is outside"),
    (lambda: baseline_metrics({"readability": [-1, 0]}, [-1], ["readability"]),
     r"train_scores\['readability'\]\[1\] = 0 is outside"),
    (lambda: summarize_predictions([{"unit_id": "u", "paper_id": "p", "dimension": "readability", "reference": -1,
                                     "prediction": 7, "status": "scored"}], bootstrap=0),
     r"record 0 \(unit_id='u'\): field prediction = 7; expected one of \(-2, -1, 1, 2\) or null"),
])
def test_pure_functions_reject_impossible_values(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_valid_input_still_gives_the_hand_computed_values():
    err = alignment_errors([-1, 1, None], [-1, -1, 1], ["readability"] * 3)
    assert err["avg_mse"] == 2.0 and err["avg_mae"] == 1.0  # (0 + 4) / 2, (0 + 2) / 2
    assert human_aligned_score(16.0, 4.0, 0.0)["has"] == 0.0  # the worst possible judge: HAS exactly 0, never below


@pytest.mark.parametrize(("module", "kwargs", "message"), [
    ("has", {"predictions": [7, -1], "references": [-1, -1], "dimensions": DIMS, "consistency": [0.2, 0.4]},
     "predictions\\[0\\] = 7.0 is outside"),
    ("has", {"predictions": [NAN, -1], "references": [-1, -1], "dimensions": DIMS, "consistency": [None, None]},
     "predictions\\[0\\] = nan is not finite"),
    ("has", {"predictions": [-1], "references": [-1, -1], "dimensions": DIMS, "consistency": [None]},
     "Mismatch in the number"),
    ("survey_alignment", {"predictions": [1], "references": [3], "dimensions": ["structure"]},
     "references\\[0\\] = 3.0 is outside"),
    ("rqs", {"consistency": [NAN], "dimensions": ["structure"]}, "consistency\\[0\\] = nan is not finite"),
])
def test_evaluate_modules_inherit_the_checks(repo_root, module, kwargs, message):
    metric = evaluate.load(str(repo_root / "metrics" / module))
    with pytest.raises(ValueError, match=message):
        metric.compute(**kwargs)


def _records(papers: int, *, judge_offset: int = 0) -> list[dict]:
    """Two units per paper: references -1 and 1; the judge misses the second by ``judge_offset`` steps."""
    out = []
    for p in range(papers):
        for k, ref in enumerate((-1, 1)):
            pred = ref if (k == 0 or judge_offset == 0 or p % 2) else 2
            out.append({"unit_id": f"p{p}-{k}", "paper_id": f"p{p}", "dimension": "readability", "reference": ref,
                        "prediction": pred, "status": "scored"})
    return out


def test_bootstrap_needs_the_minimum_number_of_papers():
    assert MIN_BOOTSTRAP_PAPERS == 10
    few = bootstrap_intervals(_records(MIN_BOOTSTRAP_PAPERS - 1, judge_offset=1), n_resamples=200)
    assert few["status"] == INSUFFICIENT_DATA and few["avg_mse"] is None
    assert few["insufficient"] == "insufficient data: 9 papers, fewer than the minimum of 10"
    enough = bootstrap_intervals(_records(MIN_BOOTSTRAP_PAPERS, judge_offset=1), n_resamples=200)
    assert enough["status"] == "ok" and enough["insufficient"] is None
    lo, hi = enough["avg_mse"]
    assert lo < 0.25 < hi  # point estimate: 5 of the 10 papers have one unit off by 1: MSE = 5 / 20 units
    # a perfect judge: every resample gives MSE 0, no spread to estimate an interval from
    perfect = bootstrap_intervals(_records(30), n_resamples=100)
    assert perfect["avg_mse"] is None and perfect["status"] == "ok"


def test_paired_test_declares_no_winner_from_too_few_papers(capsys):
    a, b = _records(5), _records(5, judge_offset=1)
    out = paired_bootstrap(a, b, n_resamples=200)
    mse = out["metrics"]["avg_mse"]
    assert out["status"] == INSUFFICIENT_DATA and out["n_papers"] == 5
    # B misses one unit by 1 in papers 0, 2 and 4: MSE 3 / 10 units
    assert mse["a"] == 0.0 and mse["b"] == pytest.approx(0.3) and mse["diff"] == pytest.approx(-0.3)
    assert (mse["ci95"], mse["p_value"], mse["better"]) == (None, None, None)
    from rich.console import Console

    console = Console(width=200)
    console.print(render_comparison(out, "A", "B"))
    printed = capsys.readouterr().out
    assert "insufficient data" in printed and "no difference at 95%" not in printed
    assert "5 papers, fewer than the minimum of 10" in printed
    many = paired_bootstrap(_records(40), _records(40, judge_offset=1), n_resamples=300)
    assert many["status"] == "ok" and many["metrics"]["avg_mse"]["better"] == "a"
    assert many["metrics"]["avg_mse"]["p_value"] < 0.05


def test_interval_table_prints_insufficient_data(capsys):
    from rich.console import Console

    summary = summarize_predictions(_records(4, judge_offset=1), bootstrap=100)
    Console(width=200).print(render_intervals({"judge": summary}))
    printed = capsys.readouterr().out
    assert "insufficient data" in printed and "[" not in printed.split("Judge")[1].split("\n", 2)[2]
    assert math.isclose(summary["avg_mse"], 0.25)

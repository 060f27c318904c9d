"""Vote agreement and vote-share calibration (ECE, reliability table) computed by hand."""

from __future__ import annotations

import pytest

from surveyalign.scoring import (
    expected_calibration_error,
    summarize_predictions,
    vote_summary,
)
from surveyalign.scoring.calibration import vote_share


def _record(uid, dim, reference, prediction, scores, tie=None):
    return {"unit_id": uid, "paper_id": f"p{uid}", "review_id": "r", "source": "f1000", "dimension": dim,
            "reference": reference, "prediction": prediction, "status": "scored" if prediction is not None
            else "parse_failed", "consistency": None, "rationale": "x",
            "samples": [{"score": s} for s in scores], "vote": {"tie_break": tie}}


def test_vote_share():
    assert vote_share([1, 1, -1, None, 1]) == (1, 0.75, 4)
    assert vote_share([None, None]) == (None, None, 0)
    assert vote_share([2]) == (2, 1.0, 1)


def test_ece_by_hand():
    ece, table = expected_calibration_error([1.0, 1.0, 0.6, 0.6, 0.4], [True, False, True, True, False], bins=5)
    # bins: (0.8,1] 2 units acc 0.5 -> 0.5*2/5; (0.4,0.6] 2 units acc 1 -> 0.4*2/5; (0.2,0.4] acc 0 -> 0.4*1/5
    assert ece == pytest.approx(0.2 + 0.16 + 0.08)
    assert [row["n"] for row in table] == [0, 1, 2, 0, 2]
    assert table[4] == {"low": 0.8, "high": 1.0, "n": 2, "mean_confidence": 1.0, "accuracy": 0.5}
    assert table[0]["accuracy"] is None
    assert expected_calibration_error([], [], bins=1) == (None, [{"low": 0.0, "high": 1.0, "n": 0,
                                                                  "mean_confidence": None, "accuracy": None}])
    with pytest.raises(ValueError, match="outside"):
        expected_calibration_error([1.5], [True])


def test_vote_summary_per_dimension_and_in_metrics():
    records = [
        _record(1, "readability", 1, 1, [1, 1, 1, 1, 1]),             # unanimous, correct
        _record(2, "readability", -1, 1, [1, 1, -1, None, 1]),        # share 3/4, wrong, one unparsed
        _record(3, "readability", -2, -2, [-2, -2, 1, 1, None], "logprob"),  # tie 2-2 broken: share 0.5, correct
        _record(4, "structure", -1, None, [None, None, None, None, None]),   # nobody voted: not counted
        _record(5, "structure", -1, -1, [-1]),                         # one sample: not a vote
    ]
    summary = vote_summary(records)
    read = summary["per_dimension"]["readability"]
    assert read["n_units"] == 3 and read["n_labelled"] == 3
    assert read["mean_vote_share"] == pytest.approx((1 + 0.75 + 0.5) / 3)
    assert read["unanimous"] == pytest.approx(1 / 3)
    assert read["n_unparsed_samples"] == 2 and read["n_tie_break"] == 1
    assert read["accuracy"] == pytest.approx(2 / 3)
    # bins: 1.0 -> acc 1 (gap 0); 0.75 -> (0.6,0.8] acc 0 (gap 0.75); 0.5 -> (0.4,0.6] acc 1 (gap 0.5)
    assert read["ece"] == pytest.approx((0.75 + 0.5) / 3)
    assert "structure" not in summary["per_dimension"] and summary["all"]["n_units"] == 3
    assert vote_summary([_record(9, "readability", 1, 1, [1])]) is None
    metrics = summarize_predictions(records, bootstrap=0)
    assert metrics["voting"]["per_dimension"]["readability"]["ece"] == pytest.approx((0.75 + 0.5) / 3)


def test_report_prints_the_voting_table():
    from rich.console import Console

    from surveyalign.scoring import render_voting

    records = [_record(1, "readability", 1, 1, [1, 1, 1, 1, 1]), _record(2, "readability", -1, 1, [1, 1, -1, None, 1])]
    summaries = {"judge-a": summarize_predictions(records, bootstrap=0),
                 "single": summarize_predictions([_record(3, "structure", 1, 1, [1])], bootstrap=0)}
    console = Console(record=True, width=160)
    console.print(render_voting(summaries))
    text = console.export_text()
    assert "Vote agreement" in text and "judge-a" in text and "single" not in text
    assert "0.88" in text  # mean share (1 + 0.75) / 2
    assert render_voting({"single": summaries["single"]}) is None


def test_html_report_has_the_voting_section(tmp_path):
    import json
    import re

    from surveyalign.cli import main

    run = tmp_path / "run"
    run.mkdir()
    records = [_record(1, "readability", 1, 1, [1, 1, 1, 1, 1]), _record(2, "readability", -1, 1, [1, 1, -1, None, 1])]
    (run / "predictions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    (run / "run_config.json").write_text(json.dumps({"name": "voter"}))
    out = tmp_path / "report.html"
    assert main(["report", str(run), "--html", str(out), "--bootstrap", "0"]) == 0
    page = out.read_text(encoding="utf-8")
    assert 'id="voting-section"' in page
    row = re.search(r'<tr data-dimension="readability">(.*?)</tr>', page).group(1)
    cells = re.findall(r"<td>(.*?)</td>", row)
    # units, mean share (1 + 0.75) / 2, unanimous 1/2, one unparsed sample, no tie, accuracy 1/2, ECE (0 + 0.75) / 2
    assert cells == ["readability", "2", "0.875", "0.500", "1", "0", "0.500", "0.375"]

"""HAS weights as configured (eval config ``has:``, ``report --has-weights``), exact-match accuracy, and Table 8
(SurveyReview App. I.3) from finished run folders, with figures worked out by hand."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from surveyalign.cli import main
from surveyalign.evaluation import EvalConfig, EvalConfigError, run_evaluation
from surveyalign.scoring import (
    has_sensitivity,
    human_aligned_score,
    parse_has_weights,
    render_table8_markdown,
    summarize_predictions,
    table8_rows,
)

# Table 2 figures (AVG MSE, AVG MAE, RQS) and Table 8's HAS at beta_RQS = 0.25 / 0.40 / 0.60 / 0.75.
TABLE8 = [
    ("SurveyAlign", 1.38, 0.69, 0.36, (0.74, 0.66, 0.56, 0.49)),
    ("GPT-5.2", 2.28, 1.15, 0.42, (0.68, 0.63, 0.56, 0.51)),
    ("Gemini-3-pro", 3.94, 1.53, 0.29, (0.58, 0.52, 0.44, 0.39)),
    ("DeepSeek-v3.2", 3.97, 1.65, 0.37, (0.58, 0.54, 0.48, 0.44)),
    ("GLM-4.7", 3.62, 1.56, 0.37, (0.60, 0.55, 0.49, 0.45)),
    ("Claude-Opus-4.5", 2.77, 1.25, 0.48, (0.68, 0.64, 0.59, 0.55)),
]


@pytest.mark.parametrize("name,mse,mae,rqs,expected", TABLE8, ids=[r[0] for r in TABLE8])
def test_table8_rows_from_table2_figures(name, mse, mae, rqs, expected):
    align = human_aligned_score(mse, mae, rqs)["align"]
    got = has_sensitivity(align, rqs)
    assert list(got) == [0.25, 0.40, 0.60, 0.75]
    assert tuple(round(v, 2) for v in got.values()) == expected


def test_table8_from_the_printed_align_and_rqs():
    # Table 8 prints Align and RQS to two decimals; HAS from those is within 0.005 (input rounding) + 0.005
    # (output rounding) of the printed HAS.
    printed = {(0.86, 0.36): (0.74, 0.66, 0.56, 0.49), (0.77, 0.42): (0.68, 0.63, 0.56, 0.51),
               (0.74, 0.48): (0.68, 0.64, 0.59, 0.55)}
    for (align, rqs), expected in printed.items():
        for got, want in zip(has_sensitivity(align, rqs).values(), expected):
            assert abs(got - want) <= 0.01 + 1e-12
    # by hand: GPT-5.2 at beta 0.40 = 0.6 * 0.77 + 0.4 * 0.42 = 0.462 + 0.168; Claude at 0.60 = 0.296 + 0.288
    assert has_sensitivity(0.77, 0.42)[0.40] == pytest.approx(0.63)
    assert has_sensitivity(0.74, 0.48)[0.60] == pytest.approx(0.584)  # the table's 0.59 uses Align 0.74325
    with pytest.raises(ValueError, match="beta = 1.5 is outside"):
        has_sensitivity(0.8, 0.4, [1.5])
    with pytest.raises(ValueError, match="rqs = 1.2 is outside"):
        has_sensitivity(0.8, 1.2)


# Hand-made records. readability: refs -1, -1, 2; preds -1, 1, 2 -> MSE 4/3, MAE 2/3, accuracy 2/3, RQ 0.6.
# structure: refs 1, -2, -1; preds 1, -1, (parse_failed) -> MSE 1/2, MAE 1/2, accuracy 1/2, RQ (0.4+0.8)/2 = 0.6.
# AVG MSE 11/12, AVG MAE 7/12, accuracy 7/12, RQS 0.6; A_MSE = 1 - 11/192 = 181/192, A_MAE = 1 - 7/48 = 41/48.
A_MSE, A_MAE = 181 / 192, 41 / 48
ALIGN_55 = 0.5 * A_MSE + 0.5 * A_MAE  # 345/384 = 0.8984375
HAS_55 = 0.5 * ALIGN_55 + 0.5 * 0.6  # 0.74921875
HAS_PAPER = 0.75 * (0.4 * A_MSE + 0.6 * A_MAE) + 0.25 * 0.6  # 0.8171875


def _records() -> list[dict]:
    rows = [("readability", -1, -1, 0.6), ("readability", -1, 1, 0.2), ("readability", 2, 2, 1.0),
            ("structure", 1, 1, 0.4), ("structure", -2, -1, 0.8), ("structure", -1, None, None)]
    return [{"unit_id": f"u{i}", "paper_id": f"p{i}", "review_id": f"r{i}", "source": "openreview", "dimension": d,
             "reference": ref, "prediction": pred, "status": "scored" if pred is not None else "parse_failed",
             "consistency": c, "rationale": "why"} for i, (d, ref, pred, c) in enumerate(rows)]


@pytest.fixture
def hand_run(tmp_path) -> Path:
    run = tmp_path / "hand"
    run.mkdir()
    recs = _records()
    (run / "predictions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    (run / "run_config.json").write_text(json.dumps({"name": "hand", "config": {
        "name": "hand", "has": {"alpha": [0.5, 0.5], "beta": [0.5, 0.5]}}}))
    metrics = summarize_predictions(recs, bootstrap=0, alpha=(0.5, 0.5), beta=(0.5, 0.5))
    (run / "metrics.json").write_text(json.dumps(metrics))
    return run


def test_summary_weights_and_accuracy_by_hand():
    m = summarize_predictions(_records(), bootstrap=0, alpha=(0.5, 0.5), beta=(0.5, 0.5))
    assert (m["avg_mse"], m["avg_mae"], m["rqs"]) == (pytest.approx(11 / 12), pytest.approx(7 / 12), pytest.approx(0.6))
    assert m["per_dimension"]["readability"]["accuracy"] == pytest.approx(2 / 3)
    assert m["per_dimension"]["structure"]["accuracy"] == 0.5  # the parse_failed unit is not counted
    assert m["accuracy"] == pytest.approx(7 / 12)
    assert m["align"] == pytest.approx(ALIGN_55) and m["has"] == pytest.approx(HAS_55)
    assert m["weights"] == {"alpha": [0.5, 0.5], "beta": [0.5, 0.5], "delta_s": 4.0}
    rows = table8_rows({"hand": m})
    assert rows[0]["has"] == {"0.25": pytest.approx(0.75 * ALIGN_55 + 0.25 * 0.6),
                              "0.4": pytest.approx(0.6 * ALIGN_55 + 0.4 * 0.6),
                              "0.6": pytest.approx(0.4 * ALIGN_55 + 0.6 * 0.6),
                              "0.75": pytest.approx(0.25 * ALIGN_55 + 0.75 * 0.6)}
    # 0.8984 / 0.6 -> 0.8238, 0.7791, 0.7194, 0.6746
    assert "| hand | 0.90 | 0.60 | 0.82 | 0.78 | 0.72 | 0.67 |" in render_table8_markdown(rows)
    no_rqs = table8_rows({"plain": {**m, "rqs": None}})[0]
    assert set(no_rqs["has"].values()) == {None} and "no RQS" in no_rqs["note"]


def test_report_uses_recorded_weights_prints_table8_and_accuracy(hand_run, tmp_path, capsys):
    out = tmp_path / "t8"
    assert main(["report", str(hand_run), "--bootstrap", "0", "--width", "250", "--json", str(tmp_path / "r.json"),
                 "--table8", str(out), "--html", str(tmp_path / "r.html")]) == 0
    text = capsys.readouterr().out
    summary = json.loads((tmp_path / "r.json").read_text())["summaries"]["hand"]
    assert summary["weights"]["alpha"] == [0.5, 0.5] and summary["has"] == pytest.approx(HAS_55)
    assert summary["accuracy"] == pytest.approx(7 / 12)
    assert "HAS weights: Align = 0.5 A_MSE + 0.5 A_MAE, HAS = 0.5 Align + 0.5 RQS" in " ".join(text.split())
    assert " Acc " in text and "0.58" in text
    table8 = json.loads((out / "table8.json").read_text())
    assert table8["betas"] == [0.25, 0.4, 0.6, 0.75]
    assert table8["rows"][0]["align"] == pytest.approx(ALIGN_55)
    assert table8["rows"][0]["has"]["0.75"] == pytest.approx(0.25 * ALIGN_55 + 0.75 * 0.6)
    assert "| hand | 0.90 | 0.60 | 0.82 | 0.78 | 0.72 | 0.67 |" in (out / "table8.md").read_text()
    assert "| hand | 0.90 | 0.60 | 0.82 | 0.78 | 0.72 | 0.67 |" in text
    html = (tmp_path / "r.html").read_text()
    assert '<td data-key="accuracy">0.583' in html and "0.5 Align + 0.5 RQS" in html
    # the flag overrides the recorded weights
    assert main(["report", str(hand_run), "--bootstrap", "0", "--has-weights", "0.4,0.6,0.75,0.25",
                 "--json", str(tmp_path / "p.json")]) == 0
    paper = json.loads((tmp_path / "p.json").read_text())["summaries"]["hand"]
    assert paper["has"] == pytest.approx(HAS_PAPER) and paper["weights"]["beta"] == [0.75, 0.25]


def test_report_weights_on_a_metrics_only_folder_and_bad_flags(hand_run, tmp_path, capsys):
    (hand_run / "predictions.jsonl").unlink()
    assert main(["report", str(hand_run), "--has-weights", "0.4,0.6,0.75,0.25", "--json", str(tmp_path / "m.json")]) == 0
    summary = json.loads((tmp_path / "m.json").read_text())["summaries"]["hand"]
    assert summary["has"] == pytest.approx(HAS_PAPER) and summary["align"] == pytest.approx(0.4 * A_MSE + 0.6 * A_MAE)
    capsys.readouterr()
    assert main(["report", str(hand_run), "--has-weights", "0.5,0.6,0.75,0.25"]) == 2
    assert "error: --has-weights: HAS weights alpha = (0.5, 0.6) sum to 1.1; they must sum to 1" in capsys.readouterr().err
    assert main(["report", str(hand_run), "--ssr-weights", "0.4,0.6"]) == 2  # SSR: the same score, the same flag
    assert "expected four numbers a1,a2,b1,b2, got 2" in capsys.readouterr().err
    assert parse_has_weights(" 1, 0, 0.5,0.5") == ((1.0, 0.0), (0.5, 0.5))


def test_eval_config_has_block_reaches_metrics_json(dataset_dir, tmp_path):
    base = {"name": "t", "dataset": str(dataset_dir), "output_dir": str(tmp_path), "progress": False, "bootstrap": 0,
            "limit": 1, "backend": {"kind": "constant", "options": {"score": -1}},
            "rqs": {"backend": {"kind": "scripted", "options": {"replies": ["<consistency>0.4</consistency>"],
                                                                "cycle": True}}},
            "has": {"alpha": [0.5, 0.5], "beta": [0.5, 0.5]}}
    result = run_evaluation(EvalConfig.from_dict(base))
    m = json.loads((result.run_dir / "metrics.json").read_text())
    assert m["weights"] == {"alpha": [0.5, 0.5], "beta": [0.5, 0.5], "delta_s": 4.0}
    a_mse, a_mae = 1 - m["avg_mse"] / 16, 1 - m["avg_mae"] / 4
    assert m["align"] == pytest.approx(0.5 * a_mse + 0.5 * a_mae)
    assert m["has"] == pytest.approx(0.5 * m["align"] + 0.5 * 0.4)
    assert json.loads((result.run_dir / "run_config.json").read_text())["config"]["has"] == base["has"]
    with pytest.raises(EvalConfigError, match=r"<dict>: has: HAS weights beta = \(0.8, 0.4\) sum to 1.2"):
        EvalConfig.from_dict({**base, "has": {"beta": [0.8, 0.4]}})
    with pytest.raises(EvalConfigError, match=r"has: HAS weights alpha: -0.1 is negative"):
        EvalConfig.from_dict({**base, "has": {"alpha": [1.1, -0.1]}})
    assert EvalConfig.from_dict({k: v for k, v in base.items() if k != "has"}).has.beta == (0.75, 0.25)

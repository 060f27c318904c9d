"""Leaderboards name each row's RQS judge and mark the rows whose RQS judge differs from the others' (SurveyReview
§3, App. G: RQS depends on the consistency judge, so RQS/HAS are not comparable across judges): ``evaluate`` records
the judge in metrics.json and run_config.json (``rqs_judge``), ``surveyalign report`` shows it on the console and in
the HTML page, and the demo names its offline word-overlap rater "lexical stand-in"."""

from __future__ import annotations

import json
from html import unescape

from surveyalign.backends.simple import ScriptedBackend
from surveyalign.cli import main
from surveyalign.evaluation import EvalConfig, run_evaluation
from surveyalign.scoring import render_leaderboard
from surveyalign.scoring.rqs_judge import rqs_judge_marks
from surveyalign.testing import LEXICAL_RQS_NAME

NOTE = ("‡ RQS judge differs from the other rows' (RQS judges: gpt-5.2, lexical stand-in): RQS and HAS are not "
        "comparable across those rows")


def _run(dataset, out, name: str, rqs_name: str | None, rating: str):
    cfg = EvalConfig.from_dict({
        "name": name, "dataset": str(dataset), "output_dir": str(out), "progress": False, "bootstrap": 0,
        "limit": 1, "dimensions": ["readability"], "backend": {"kind": "constant", "options": {"score": -1}},
        "rqs": {"backend": {"kind": "scripted", "options": {"replies": []}}, "name": rqs_name}})
    return run_evaluation(cfg, rqs_backend=ScriptedBackend([f"ok <consistency>{rating}</consistency>"], cycle=True))


def test_rows_rated_by_another_rqs_judge_are_named_and_marked(dataset_dir, tmp_path, capsys):
    a = _run(dataset_dir, tmp_path, "judge-a", "gpt-5.2", "0.6")
    b = _run(dataset_dir, tmp_path, "judge-b", None, "0.4")  # no name: the backend's model id, else its kind
    c = _run(dataset_dir, tmp_path, "judge-c", LEXICAL_RQS_NAME, "0.2")
    d = _run(dataset_dir, tmp_path, "judge-d", "gpt-5.2", "0.8")
    for result in (a, b, c, d):
        run_config = json.loads((result.run_dir / "run_config.json").read_text())
        assert result.metrics["rqs_judge"] == run_config["rqs_judge"]
    assert a.metrics["rqs_judge"] == {"name": "gpt-5.2", "model": None, "backend": "scripted"}
    assert b.metrics["rqs_judge"] == {"name": "scripted", "model": None, "backend": "scripted"}
    assert c.metrics["rqs_judge"]["name"] == "lexical stand-in"
    assert (a.metrics["rqs"], c.metrics["rqs"], d.metrics["rqs"]) == (0.6, 0.2, 0.8)

    # a, c, d: gpt-5.2 rates two rows, the lexical stand-in one: that row is marked
    html = tmp_path / "report.html"
    assert main(["report", str(a.run_dir), str(c.run_dir), str(d.run_dir), "--html", str(html)]) == 0
    out = capsys.readouterr().out
    text = " ".join(out.split())
    assert "RQS judge" in out and NOTE in text
    rows = {line.split()[0]: line for line in out.splitlines() if line.startswith("judge-")}
    assert "lexical" in rows["judge-c"]  # "lexical stand-in ‡" folds over lines in its narrow column
    assert "gpt-5.2" in rows["judge-a"] and "‡" not in rows["judge-a"] and "‡" not in rows["judge-d"]
    assert text.count("‡") == 2  # judge-c's cell and the note
    page = unescape(html.read_text())
    assert '<td data-key="rqs_judge">lexical stand-in ‡</td>' in page
    assert '<td data-key="rqs_judge">gpt-5.2</td>' in page and NOTE in page

    # one RQS judge for every row: named, no mark, no note
    assert main(["report", str(a.run_dir), str(d.run_dir)]) == 0
    out = capsys.readouterr().out
    assert "RQS judge" in out and "‡" not in out and "not comparable" not in out


def test_marks_without_a_shared_judge_mark_every_row_and_rows_without_rqs_show_a_dash():
    summaries = {"x": {"rqs": 0.5, "rqs_judge": {"name": "gpt-5.2"}}, "y": {"rqs": 0.4, "rqs_judge": "claude"},
                 "z": {"rqs": None}}
    cells, notes = rqs_judge_marks(summaries)
    assert cells == {"x": "gpt-5.2 ‡", "y": "claude ‡", "z": "–"}
    assert notes == [("‡ RQS judge differs from the other rows' (RQS judges: claude, gpt-5.2): RQS and HAS are not "
                     "comparable across those rows")]
    table = render_leaderboard({"x": {**summaries["x"], "avg_mse": 1.0, "avg_mae": 1.0, "align": 0.8,
                                      "n": 2, "n_scored": 2}})
    assert [c.header for c in table.columns][:6] == ["Judge", "MSE", "MAE", "RQS", "Align", "RQS judge"]
    assert list(table.columns[5].cells) == ["gpt-5.2"] and not (table.caption or "").count("‡")

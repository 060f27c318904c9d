"""App. I.4 as one command with three scripted RQS judges of known votes, a jury of scoring judges, and the
rating sheet / scoring of the RQS meta-evaluation (``surveyalign/evaluation/studies.py``, ``study_cli.py``)."""

from __future__ import annotations

import csv
import json
import re

import pytest

from surveyalign.backends import load_backend
from surveyalign.cli import main
from surveyalign.evaluation import JuryConfig, RQSJudgesConfig, run_jury, run_rqs_judges

REFS = (-1, -1)
PREDS = {"S1": (-1, -1), "S2": (1, 1), "S3": (-2, 1)}
# ratings of each judge: {system: (unit u0, unit u1)}
VOTES = {"J1": {"S1": (0.2, 0.4), "S2": (0.8, 1.0), "S3": (0.6, 0.6)},
         "J2": {"S1": (0.0, 0.0), "S2": (1.0, 1.0), "S3": (0.0, 0.2)}}
VOTES["J3"] = VOTES["J1"]


def _write_run(folder, system, preds):
    folder.mkdir(parents=True)
    recs = [{"unit_id": f"u{i}", "paper_id": f"p{i}", "review_id": f"r{i}", "source": "f1000",
             "dimension": "readability", "reference": REFS[i], "reference_rationales": [f"human point {i}"],
             "prediction": p, "status": "scored", "rationale": f"system {system} unit u{i}", "consistency": None}
            for i, p in enumerate(preds)]
    (folder / "predictions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs), encoding="utf-8")
    (folder / "run_config.json").write_text(json.dumps({"name": system}), encoding="utf-8")
    return folder


def _scripted(judge):
    def reply(messages, settings, index):
        text = messages[-1]["content"]
        system, unit = re.search(r"system (S\d) unit u(\d)", text).groups()
        return f"Rated. <consistency>{VOTES[judge][system][int(unit)]}</consistency>"

    return load_backend("scripted", replies=reply)


def _config(tmp_path, jury="mean"):
    systems = {s: str(_write_run(tmp_path / "runs" / s, s, p)) for s, p in PREDS.items()}
    return RQSJudgesConfig.model_validate({
        "systems": systems, "output_dir": str(tmp_path / "study"), "bootstrap": 0,
        "judges": [{"name": j, "backend": {"kind": "scripted", "options": {"replies": ["unused"]}},
                    "generation": {"temperature": 0.0, "max_new_tokens": 64}} for j in ("J1", "J2", "J3")],
        "jury": {"method": jury}})


def test_rqs_judges_three_scripted_judges(tmp_path):
    config = _config(tmp_path)
    backends = {j: _scripted(j) for j in ("J1", "J2", "J3")}
    res = run_rqs_judges(config, backends=backends)
    assert res["rqs"]["S1"]["J1"] == pytest.approx(0.3) and res["rqs"]["S2"]["J2"] == pytest.approx(1.0)
    assert res["has"]["S3"]["J1"] == pytest.approx(0.684375) and res["has"]["S3"]["J2"] == pytest.approx(0.559375)
    # the jury column: mean of the three judges, S1 units (0.2 + 0 + 0.2)/3 and (0.4 + 0 + 0.4)/3 -> RQS 0.2
    assert res["jury"]["name"] == "jury (mean)" and res["rqs"]["S1"]["jury (mean)"] == pytest.approx(0.2)
    taus = {(k["a"], k["b"]): k["tau"] for k in res["kendall"]}
    assert taus[("J1", "J2")] == pytest.approx(1 / 3) and taus[("J1", "J3")] == pytest.approx(1.0)
    assert res["top"]["J1"] == "S1" and res["same_top"]
    assert res["counts"]["J2"]["S3"] == {"rated": 2, "failed": 0}
    assert all(len(b.calls) == 6 for b in backends.values())  # 3 systems x 2 units each
    assert json.loads((tmp_path / "study" / "rqs_judges.json").read_text())["ranking"]["J2"] == ["S1", "S2", "S3"]
    # resumable: a second run answers every rating from OUT/calls.jsonl
    again = {j: _scripted(j) for j in ("J1", "J2", "J3")}
    res2 = run_rqs_judges(config, backends=again)
    assert all(not b.calls for b in again.values()) and res2["has"] == res["has"]


def test_rqs_judges_config_errors_are_one_line(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("systems: {A: runs/a}\njudges:\n  - name: J\n    backend: {kind: nope}\n", encoding="utf-8")
    assert main(["rqs-judges", "--config", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "judges.0.backend" in err and "unknown backend kind 'nope'" in err


def test_jury_of_three_scoring_judges(tmp_path, capsys):
    runs = {"A": (-1, 1), "B": (-1, 2), "C": (1, 2)}
    for name, preds in runs.items():
        _write_run(tmp_path / name, name, preds)
    yaml = tmp_path / "jury.yaml"
    yaml.write_text(f"name: jury\nmethod: majority\nmembers:\n  - {{run: {tmp_path / 'A'}, weight: 3}}\n"
                    f"  - {{run: {tmp_path / 'B'}}}\n  - {{run: {tmp_path / 'C'}}}\noutput_dir: {tmp_path / 'out'}\n"
                    f"bootstrap: 0\n", encoding="utf-8")
    assert main(["jury", "--config", str(yaml)]) == 0
    recs = [json.loads(line) for line in (tmp_path / "out" / "jury" / "predictions.jsonl").read_text().splitlines()]
    # u0: -1 (weight 3 + 1) against +1 -> -1; u1: +1 (weight 3) against +2 (weight 2) -> +1
    assert [r["prediction"] for r in recs] == [-1, 1] and recs[1]["votes"] == {"A": 1, "B": 2, "C": 2}
    assert "2/2 units scored" in capsys.readouterr().out
    config = JuryConfig.from_yaml(yaml).model_copy(update={"method": "mean"})
    _, metrics = run_jury(config)
    # mean u0: (-3 - 1 + 1)/5 = -0.6 -> -1; u1: (3 + 2 + 2)/5 = 1.4 -> +1: errors 0 and 2 -> MSE 2, MAE 1
    assert metrics["avg_mse"] == pytest.approx(2.0) and metrics["avg_mae"] == pytest.approx(1.0)
    one = tmp_path / "one.yaml"
    one.write_text(f"name: j\nmembers:\n  - {{run: {tmp_path / 'A'}}}\n", encoding="utf-8")
    assert main(["jury", "--config", str(one)]) == 2
    assert "members" in capsys.readouterr().err


def test_meta_eval_export_and_score(tmp_path, capsys):
    run = _write_run(tmp_path / "run", "S1", (-1, -1))
    sheet = tmp_path / "sheet.csv"
    assert main(["meta-eval", "export", str(run), "--out", str(sheet)]) == 0
    assert "wrote 2 pairs" in capsys.readouterr().out
    rows = list(csv.DictReader(sheet.open(encoding="utf-8")))  # a cell starting with "-" is escaped (OWASP)
    assert [r["pair_id"] for r in rows] == ["u0", "u1"] and rows[0]["reference_rationale"] == "'- human point 0"
    assert rows[0]["predicted_rationale"] == "system S1 unit u0" and rows[0]["rating"] == ""
    human = tmp_path / "human.csv"
    human.write_text("pair_id,a,b,c\n" + "".join(f"q{i},{a / 5},{b / 5},{c / 5}\n" for i, (a, b, c) in enumerate(
        zip((0, 1, 2, 3, 4), (0, 2, 1, 3, 4), (1, 0, 2, 4, 3)))), encoding="utf-8")
    judge = tmp_path / "judge.csv"
    judge.write_text("pair_id,rater,rating\n" + "".join(f"q{i},gpt,{v / 5}\n" for i, v in enumerate((0, 2, 1, 4, 3))),
                     encoding="utf-8")
    out = tmp_path / "m.json"
    assert main(["meta-eval", "score", "--ratings", str(human), "--judge-ratings", str(judge), "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "mean pairwise Pearson 0.767" in text and "Spearman 0.800" in text and "insufficient data" in text
    assert json.loads(out.read_text())["judge"]["pearson"] == pytest.approx(24 / 760 ** 0.5)
    assert main(["meta-eval", "score", "--ratings", str(human)]) == 2
    assert "exactly one of --run" in capsys.readouterr().err


def test_meta_eval_label_studio_round_trip(tmp_path, capsys):
    run = _write_run(tmp_path / "run", "S1", (-1, -1))
    project = tmp_path / "ls"
    assert main(["meta-eval", "export", str(run), "--out", str(tmp_path / "s.csv"), "--label-studio", str(project)]) == 0
    assert "Label Studio project" in capsys.readouterr().out
    config = (project / "labeling_config.xml").read_text()
    assert '<Choices name="rating"' in config and '<Choice value="0.6"/>' in config
    tasks = json.loads((project / "tasks.json").read_text())
    assert [t["data"]["pair_id"] for t in tasks] == ["u0", "u1"] and "rating" not in tasks[0]["data"]
    assert tasks[1]["data"]["predicted_rationale"] == "system S1 unit u1"
    # what Label Studio exports after three people rated 5 pairs (ratings x5 as in the hand-computed sheet)
    ratings = {"a": (0, 1, 2, 3, 4), "b": (0, 2, 1, 3, 4), "c": (1, 0, 2, 4, 3)}
    export = [{"id": i, "data": {"pair_id": f"q{i}"}, "annotations": [
        {"completed_by": {"email": f"{who}@lab"}, "was_cancelled": False,
         "result": [{"from_name": "rating", "to_name": "predicted", "type": "choices",
                     "value": {"choices": [f"{vals[i] / 5:.1f}"]}}]} for who, vals in ratings.items()]
               + [{"completed_by": 9, "was_cancelled": True, "result": []}]} for i in range(5)]
    (tmp_path / "export.json").write_text(json.dumps(export), encoding="utf-8")
    judge = tmp_path / "judge.csv"
    judge.write_text("pair_id,rater,rating\n" + "".join(f"q{i},gpt,{v / 5}\n" for i, v in enumerate((0, 2, 1, 4, 3))),
                     encoding="utf-8")
    out = tmp_path / "m.json"
    assert main(["meta-eval", "score", "--ratings", str(tmp_path / "export.json"), "--judge-ratings", str(judge),
                 "--json", str(out)]) == 0
    res = json.loads(out.read_text())
    assert res["raters"] == ["a@lab", "b@lab", "c@lab"]
    assert res["human_human"]["mean_pearson"] == pytest.approx(2.3 / 3) and res["judge"]["spearman"] == pytest.approx(0.8)


def test_rqs_judges_rerun_asks_unreadable_ratings_again_and_counts(tmp_path):
    """Issue 21 C: a rating without a valid <consistency> tag was replayed from OUT/<judge>/calls.jsonl for ever."""
    config = _config(tmp_path).model_copy(update={"jury": None})
    state = {"fixed": False}

    def judges():
        def make(name):
            def reply(messages, settings, index):
                if not state["fixed"]:
                    return "I cannot rate this."
                system, unit = re.search(r"system (S\d) unit u(\d)", messages[-1]["content"]).groups()
                return f"Rated. <consistency>{VOTES[name][system][int(unit)]}</consistency>"
            return load_backend("scripted", replies=reply)
        return {j: make(j) for j in ("J1", "J2", "J3")}

    with pytest.raises(ValueError, match="no RQS judge rated any unit"):
        run_rqs_judges(config, backends=judges())
    state["fixed"] = True  # the judges were fixed: the same judges, the same keys
    fixed = judges()
    res = run_rqs_judges(config, backends=fixed)
    assert all(len(b.calls) == 6 for b in fixed.values())  # every unreadable rating asked again
    assert res["answers"] == {j: {"reused": 0, "retried": 6, "made": 0} for j in ("J1", "J2", "J3")}
    assert res["rqs"]["S1"]["J1"] == pytest.approx(0.3)
    again = judges()
    assert run_rqs_judges(config, backends=again)["answers"]["J2"] == {"reused": 6, "retried": 0, "made": 0}
    assert not any(b.calls for b in again.values())


def test_rqs_judges_mark_systems_judged_on_fewer_dimensions(tmp_path, capsys):
    """Issue 21 B: a system run on Readability alone and one on Readability + Structure shared unmarked RQS / HAS
    columns; the smaller set is marked and named."""
    import yaml

    from surveyalign.scoring.report import PARTIAL_AVG_MARK

    one = _write_run(tmp_path / "runs" / "one", "one", (-1, 1))
    two = _write_run(tmp_path / "runs" / "two", "two", (-1, 1))
    recs = [json.loads(line) for line in (two / "predictions.jsonl").read_text().splitlines()]
    recs.append({**recs[0], "unit_id": "u9", "dimension": "structure", "rationale": "system two unit u9"})
    (two / "predictions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs), encoding="utf-8")
    config = {"systems": {"one": str(one), "two": str(two)}, "output_dir": str(tmp_path / "study"), "bootstrap": 0,
              "judges": [{"name": "J", "backend": {"kind": "scripted", "options": {
                  "replies": ["Rated. <consistency>0.4</consistency>"], "cycle": True}},
                  "generation": {"temperature": 0.0, "max_new_tokens": 64}}]}
    path = tmp_path / "rqs.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    assert main(["rqs-judges", "--config", str(path), "--no-progress"]) == 0
    res = json.loads((tmp_path / "study" / "rqs_judges.json").read_text())
    assert res["dimensions"] == {"one": ["readability"], "two": ["readability", "structure"]}
    assert res["scope_marks"] == {"one": PARTIAL_AVG_MARK, "two": ""}
    assert res["scope_notes"] == [(f"{PARTIAL_AVG_MARK} one: averages over 1 of 2 dimensions (Read); not "
                                   "comparable with the other rows' averages")]
    out = " ".join(capsys.readouterr().out.split())
    assert f"0.40 {PARTIAL_AVG_MARK}" in out and "one: averages over 1 of 2 dimensions" in out

"""Prior evaluators' scores as run folders (SurveyReview §6.1 "Prior Work", App. H): the closest-category mapping
by hand, and ``surveyalign import-scores`` over the sample release's test split (8 papers; units per dimension:
readability 11, structure 12, comprehensiveness 12, criticalness 12) with MSE/MAE worked out below."""

from __future__ import annotations

import json

import pytest

from surveyalign.cli import main
from surveyalign.evaluation.prior import import_scores
from surveyalign.evaluation.prior_map import (
    PROFILES,
    closest_category,
    criterion_key,
    map_score,
    mapping_table,
    rescale,
)
from surveyalign.evaluation.prior_records import read_tool_records


# ---------------------------------------------------------------------------------------------- the mapping alone
def test_one_to_five_scale_by_hand():
    assert rescale(2, (1, 5)) == -1.0 and rescale(3, (1, 5)) == 0.0 and rescale(5, (1, 5)) == 2.0
    got = [map_score(v, (1, 5)) for v in (1, 2, 3, 4, 5)]
    assert [m.category for m in got] == [-2, -1, -1, 1, 2]  # 3 is halfway between -1 and +1: toward -1
    assert [m.tie for m in got] == [False, False, True, False, False]
    assert map_score(3, (1, 5), "higher").category == 1 and map_score(3, (1, 5), "lower").category == -1


def test_zero_to_ten_scale_by_hand():
    values = (0, 1, 1.25, 2, 5, 6, 8.75, 9, 10)
    # rescaled: -2, -1.6, -1.5, -1.2, 0, 0.4, 1.5, 1.6, 2
    assert [map_score(v, (0, 10)).rescaled for v in values] == pytest.approx([-2, -1.6, -1.5, -1.2, 0, 0.4, 1.5,
                                                                              1.6, 2])
    assert [map_score(v, (0, 10)).category for v in values] == [-2, -2, -1, -1, -1, 1, 1, 2, 2]
    assert [map_score(v, (0, 10), "lower").category for v in (1.25, 5, 8.75)] == [-2, -1, 1]
    assert [map_score(v, (0, 10), "higher").category for v in (1.25, 5, 8.75)] == [-1, 1, 2]


def test_llmxmapreduce_twenty_to_hundred_and_ties():
    assert [map_score(v, (20, 100)).category for v in (20, 40, 60, 80, 100)] == [-2, -1, -1, 1, 2]
    assert closest_category(-1.5) == (-1, True) and closest_category(1.5) == (1, True)
    assert closest_category(-1.50001) == (-2, False) and closest_category(0.0001) == (1, False)


@pytest.mark.parametrize(("call", "message"), [
    (lambda: rescale(11, (0, 10)), "outside the scale"),
    (lambda: rescale(float("nan"), (0, 10)), "not a finite number"),
    (lambda: rescale(3, (5, 5)), "MIN < MAX"),
    (lambda: closest_category(2.5), "outside"),
    (lambda: closest_category(0.0, "nearest"), "unknown tie rule"),
])
def test_mapping_refuses_bad_values(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_mapping_tables():
    assert criterion_key(" Critical Analysis") == "critical_analysis" and criterion_key("language-score") == \
        "language_score"
    dr = mapping_table(PROFILES["drbench"])
    assert {k: c.dimension for k, c in dr.items()} == {"comprehensiveness": "comprehensiveness",
                                                       "insight": "criticalness", "readability": "readability"}
    assert dr["insight"].scale == (0.0, 10.0)
    only = mapping_table(PROFILES["drbench"], {"comprehensiveness": None, "readability": None})
    assert list(only) == ["insight"]
    sx = mapping_table(PROFILES["surveyx"], {"Coverage": "comprehensiveness"})
    assert {k: c.dimension for k, c in sx.items()} == {"structure": "structure", "critical_analysis": "criticalness",
                                                       "coverage": "comprehensiveness"}
    mr = mapping_table(PROFILES["llmxmapreduce"])
    assert (mr["language_score"].scale, mr["structure"].scale) == ((0.0, 100.0), (20.0, 100.0))
    gen = mapping_table(PROFILES["generic"], {"depth": "criticalness"}, {None: (1, 10)})
    assert gen["depth"].scale == (1.0, 10.0)
    with pytest.raises(ValueError, match="no known scale"):
        mapping_table(PROFILES["generic"], {"depth": "criticalness"})
    with pytest.raises(ValueError, match="both map to criticalness"):
        mapping_table(PROFILES["surveyx"], {"synthesis": "criticalness"})
    with pytest.raises(ValueError, match="no criterion"):
        mapping_table(PROFILES["generic"])


# ------------------------------------------------------------------------------------------ imports of real files
def _dr_records(tmp_path):
    lines = [
        # by paper_id: comp 2.0 -> -1.2 -> -1; insight 5.0 -> 0 (tie) -> -1; readability 9.0 -> 1.6 -> +2
        {"id": "sr0005", "comprehensiveness": 2.0, "insight": 5.0, "instruction_following": 7, "readability": 9.0},
        # by title (case and punctuation differ): comp = (6*0.5 + 4*0.5) = 5.0 -> -1 (tie); insight 8.75 -> +1
        # (tie); readability 1.25 -> -1 (tie)
        {"id": "reinforcement learning for robotic grasping - a survey",
         "comprehensiveness": [{"criterion": "breadth", "analysis": "Covers the main families.", "target_score": 6,
                                "weight": 0.5},
                               {"criterion": "gaps", "analysis": "Misses benchmarks.", "target_score": 4,
                                "weight": 0.5}],
         "insight": 8.75, "readability": 1.25},
        {"id": "sr0001", "insight": 3},  # a train paper
        {"id": "sr9999", "insight": 3},  # no such paper
    ]
    path = tmp_path / "race_pointwise.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


def test_drbench_import_metrics_and_counts_by_hand(dataset_dir, tmp_path):
    scores = _dr_records(tmp_path)
    out = tmp_path / "prior-drbench"
    res = import_scores(scores, dataset_dir, out, tool="drbench", mapping=mapping_table(PROFILES["drbench"]),
                        model="GPT-5.2", bootstrap=0)
    assert sorted(p.name for p in out.iterdir()) == [".lock", "metrics.json", "predictions.jsonl", "run_config.json"]
    m = json.loads((out / "metrics.json").read_text())
    d = m["per_dimension"]
    # readability: sr0005-r2 (ref -1, +2: error 3), sr0011-r1 and -r2 (ref -1, -1: 0); 8 units missing
    assert (d["readability"]["n"], d["readability"]["n_scored"], d["readability"]["n_missing"]) == (11, 3, 8)
    assert d["readability"]["mse"] == pytest.approx(9 / 3) and d["readability"]["mae"] == pytest.approx(3 / 3)
    # comprehensiveness: sr0005-r1 (ref -2, -1: 1), sr0005-r2 (-1, -1), sr0011-r2 (-1, -1); 9 missing
    assert (d["comprehensiveness"]["n_scored"], d["comprehensiveness"]["n_missing"]) == (3, 9)
    assert d["comprehensiveness"]["mse"] == pytest.approx(1 / 3) and d["comprehensiveness"]["mae"] == pytest.approx(1 / 3)
    # criticalness: sr0005-r2 (ref -2, -1: 1), sr0011-r1 and -r2 (ref +1, +1: 0)
    assert d["criticalness"]["mse"] == pytest.approx(1 / 3) and d["criticalness"]["mae"] == pytest.approx(1 / 3)
    assert "structure" not in d
    assert m["avg_mse"] == pytest.approx((3 + 1 / 3 + 1 / 3) / 3) and m["avg_mae"] == pytest.approx((1 + 2 / 3) / 3)
    assert m["status_counts"]["scored"] == 9 and m["status_counts"]["missing"] == 26 and m["n"] == 35
    # the authors' convention drops missing papers: same averages over the 9 scored units
    assert m["authors_convention"]["avg_mse"] == pytest.approx(m["avg_mse"])

    cfg = json.loads((out / "run_config.json").read_text())
    assert cfg["name"] == "DeepResearch Bench (GPT-5.2)" and cfg["source"]["tool"] == "drbench"
    assert cfg["source"]["records"] == 4 and cfg["tie_rule"] == "majority"
    assert cfg["mapping"]["insight"] == {"dimension": "criticalness", "scale": [0.0, 10.0],
                                         "note": "RACE insight/depth, point-wise 0-10 (App. H)"}
    assert cfg["not_mapped"] == ["instruction_following"] and cfg["dimensions_left_out"] == {"structure": 12}
    assert cfg["papers"]["matched"] == 2 and cfg["papers"]["matched_by_title"] == 1
    assert cfg["papers"]["missing"] == ["sr0013", "sr0014", "sr0016", "sr0020", "sr0026", "sr0029"]
    assert [(u["key"], u["found_in"]) for u in cfg["unmatched_records"]] == [("sr0001", "train"),
                                                                            ("sr9999", "not in dataset")]

    preds = {p["unit_id"]: p for p in res.predictions}
    tie = preds["sr0011-r1::readability"]
    assert (tie["prediction"], tie["status"], tie["rationale"]) == (-1, "scored", "")
    assert tie["imported"] | {"record": None} == {
        "tool": "drbench", "criterion": "readability", "raw_score": 1.25, "raw_scale": [0.0, 10.0],
        "rescaled": pytest.approx(-1.5), "category": -1, "tie": True, "record": None,
        "key": "reinforcement learning for robotic grasping - a survey", "matched_by": "title",
        "rationale_from": "none"}
    comp = preds["sr0011-r2::comprehensiveness"]
    assert comp["imported"]["raw_score"] == 5.0 and comp["prediction"] == -1
    assert comp["rationale"] == "breadth: Covers the main families.\ngaps: Misses benchmarks."
    gone = preds["sr0013-r1::criticalness"]
    assert (gone["status"], gone["prediction"]) == ("missing", None) and "paper sr0013 is not in" in gone["error"]
    # both review units of sr0005 comprehensiveness carry the paper's one score
    assert preds["sr0005-r1::comprehensiveness"]["prediction"] == preds["sr0005-r2::comprehensiveness"]["prediction"] == -1


def test_llmxmapreduce_csv_by_title(dataset_dir, tmp_path):
    csv = tmp_path / "result.csv"
    csv.write_text(
        "name,language_score,critical_score,structure,relevance,claim_precision\n"
        "Multilingual Hate Speech Detection: A Survey,80,30,100,60,85\n"
        '"Speech Emotion Recognition: A Review of Features, Models and Corpora",12.5,,40,20,70\n')
    res = import_scores(csv, dataset_dir, tmp_path / "run", tool="llmxmapreduce",
                        mapping=mapping_table(PROFILES["llmxmapreduce"]), bootstrap=0)
    d = res.metrics["per_dimension"]
    # read: sr0029 80 -> 1.2 -> +1 (refs +1, -1), sr0016 12.5 -> -1.5 tie -> -1 (ref -1): errors 0, 2, 0
    assert d["readability"]["mse"] == pytest.approx(4 / 3) and d["readability"]["mae"] == pytest.approx(2 / 3)
    # crit: sr0029 30 -> -0.8 -> -1 (refs -1, +2): errors 0, 3; sr0016's empty cell is missing
    assert (d["criticalness"]["n_scored"], d["criticalness"]["n_missing"]) == (2, 10)
    assert d["criticalness"]["mse"] == pytest.approx(4.5) and d["criticalness"]["mae"] == pytest.approx(1.5)
    # stru: sr0029 100 -> +2 (refs -1, -1), sr0016 40 -> -1 (ref +2): errors 3, 3, 3
    assert d["structure"]["mse"] == pytest.approx(9.0) and d["structure"]["mae"] == pytest.approx(3.0)
    # comp (relevance): sr0029 60 -> 0 tie -> -1 (ref -1), sr0016 20 -> -2 (refs -1, -2): errors 0, 1, 0
    assert d["comprehensiveness"]["mse"] == pytest.approx(1 / 3)
    assert res.metrics["avg_mse"] == pytest.approx(91 / 24) and res.metrics["avg_mae"] == pytest.approx(5.5 / 4)
    empty = next(p for p in res.predictions if p["unit_id"] == "sr0016-r1::criticalness")
    assert empty["status"] == "missing" and "has no value for criterion critical_score" in empty["error"]
    assert res.run_config["source"]["format"] == "csv" and res.run_config["dimensions_left_out"] == {}
    assert res.run_config["not_mapped"] == ["claim_precision"]


def test_cli_surveyx_then_report(dataset_dir, tmp_path, capsys):
    scores = tmp_path / "surveyx.json"
    scores.write_text(json.dumps({"sr0026": {"Structure": {"score": 4, "reason": "Clear sections."},
                                             "Critical Analysis": {"score": 3, "reason": "Some comparison."},
                                             "Coverage": 5}}))
    out = tmp_path / "prior-surveyx"
    code = main(["import-scores", "--from", "surveyx", "--scores", str(scores), "--dataset", str(dataset_dir),
                 "--split", "test", "--out", str(out), "--model", "GPT-5.2", "--tie", "higher", "--bootstrap", "0"])
    assert code == 0
    printed = capsys.readouterr().out
    assert "left out (no criterion maps): readability (11 units), comprehensiveness (12 units)" in printed
    preds = {p["unit_id"]: p for p in map(json.loads, (out / "predictions.jsonl").read_text().splitlines())}
    # structure 4 -> +1 (sr0026-r1 ref -1: error 2); critical analysis 3 -> 0, tie "higher" -> +1 (refs -1, +1)
    assert preds["sr0026-r1::structure"]["rationale"] == "Clear sections."
    assert preds["sr0026-r1::structure"]["imported"]["rationale_from"] == "tool"
    assert [preds[f"sr0026-r{i}::criticalness"]["prediction"] for i in (1, 2)] == [1, 1]
    m = json.loads((out / "metrics.json").read_text())
    assert m["per_dimension"]["structure"]["mse"] == pytest.approx(4.0)
    assert m["per_dimension"]["criticalness"]["mse"] == pytest.approx(2.0)  # errors 2 and 0
    assert m["per_dimension"]["criticalness"]["n_missing"] == 10

    assert main(["report", str(out), "--bootstrap", "0", "--json", str(tmp_path / "report.json")]) == 0
    assert "Failures" in capsys.readouterr().out
    summary = json.loads((tmp_path / "report.json").read_text())["summaries"]["SurveyX (GPT-5.2)"]
    # 10 crit + 11 stru units without a score; AVG over the two mapped dimensions
    assert summary["status_counts"]["missing"] == 21 and summary["n_scored"] == 3
    assert summary["avg_mse"] == pytest.approx(3.0) and summary["avg_dimensions"] == ["structure", "criticalness"]


@pytest.mark.parametrize(("lines", "message"), [
    ([{"id": 1, "prompt": "t", "insight": 0.37, "overall_score": 0.38}], r"race\.jsonl:1: field overall_score"),
    ([{"id": "sr0005", "insight": 11}], r"race\.jsonl:1: field insight: score 11 is outside the scale \[0, 10\]"),
    ([{"id": "sr0005", "insight": "high"}], r"race\.jsonl:1: field insight = 'high' is not a number"),
    ([{"id": "sr0005", "insight": [{"criterion": "c", "target_score": 5, "article_2_score": 6}]}],
     r"field insight\[0\]\.article_2_score"),
    ([{"id": "sr0005", "insight": 3}, {"title": "Large Language Models for Code Generation: A Survey", "insight": 4}],
     r"race\.jsonl:2: a second record for paper sr0005"),
    ([{"score": 3}], r"race\.jsonl:1: no field names the survey"),
])
def test_bad_records_name_file_record_and_field(dataset_dir, tmp_path, lines, message):
    path = tmp_path / "race.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    with pytest.raises(ValueError, match=message):
        import_scores(path, dataset_dir, tmp_path / "run", tool="drbench",
                      mapping=mapping_table(PROFILES["drbench"]), bootstrap=0)
    assert not (tmp_path / "run" / "predictions.jsonl").exists()


def test_cli_errors(dataset_dir, tmp_path, capsys):
    scores = tmp_path / "mine.json"
    scores.write_text(json.dumps([{"paper_id": "sr0005", "depth": 7}]))
    base = ["import-scores", "--from", "generic", "--scores", str(scores), "--dataset", str(dataset_dir),
            "--out", str(tmp_path / "run")]
    assert main([*base, "--map", "depth=criticalness"]) == 2
    assert "criterion 'depth' (generic) has no known scale" in capsys.readouterr().err
    assert main([*base, "--map", "depth=criticalness", "--scale", "1,10", "--bootstrap", "0"]) == 0
    rec = json.loads((tmp_path / "run" / "predictions.jsonl").read_text().splitlines()[0])
    # 7 on 1-10 -> -2 + 4 * 6/9 = 0.667 -> +1
    assert rec["imported"]["rescaled"] == pytest.approx(2 / 3) and rec["prediction"] == 1
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "calls.jsonl").write_text("")
    assert main([*base[:-1], str(tmp_path / "busy"), "--map", "depth=criticalness", "--scale", "1,10"]) == 1
    assert "holds an evaluate run" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main([*base, "--map", "depth=novelty"])


def test_read_tool_records_shapes(tmp_path):
    keyed = tmp_path / "k.json"
    keyed.write_text(json.dumps({"sr0005": {"scores": {"Critical Analysis": 4}}}))
    recs, fmt = read_tool_records(keyed)
    assert fmt == "json-keyed" and recs[0].key == "sr0005" and recs[0].fields["critical_analysis"] == 4
    bad = tmp_path / "x.txt"
    bad.write_text("{}")
    with pytest.raises(ValueError, match="unknown file type .txt"):
        read_tool_records(bad)

"""``surveyalign paper``: configs, stage skipping, --from / --until, the plan, and Tables 2, 3, 4, 7, 8 by hand."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from surveyalign.paper import PaperConfig, plan_paper, run_paper
from surveyalign.scoring import has_sensitivity, summarize_predictions

REPO = Path(__file__).resolve().parents[1]


class _Console:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def print(self, *args, **_kw) -> None:
        self.lines.append(" ".join(str(a) for a in args))


def _tiny(tmp_path: Path, **overrides) -> PaperConfig:
    return PaperConfig.from_yaml(REPO / "configs/paper/tiny.yaml",
                                 {"workdir": str(tmp_path / "run"), "cache_dir": str(tmp_path / "cache"), **overrides})


@pytest.mark.parametrize("name", ["tiny", "qlora", "paper"])
def test_shipped_profiles_parse_and_train_every_adapter_once(name):
    cfg = PaperConfig.from_yaml(REPO / "configs/paper" / f"{name}.yaml")
    # 4 dimensions + the plain Comp / Crit SFT of Tables 3-4, then DPO on the plain and the KA Criticalness SFT
    assert cfg.trainings() == [
        ("readability", False, False), ("structure", False, False), ("comprehensiveness", False, False),
        ("comprehensiveness", True, False), ("criticalness", False, False), ("criticalness", True, False),
        ("criticalness", False, True), ("criticalness", True, True)]
    assert cfg.main_adapters()["criticalness"] == ("criticalness", True, True)
    assert cfg.main_adapters()["readability"] == ("readability", False, False)
    for recipe in {*cfg.sft.values(), cfg.dpo.config, cfg.knowledge.config}:
        assert cfg.resolve(recipe).is_file(), recipe


def test_config_errors_name_the_key(tmp_path):
    with pytest.raises(ValueError, match=r"has\.beta: .*sum to 1"):
        _tiny(tmp_path, **{"has.beta": [0.5, 0.6]})
    with pytest.raises(ValueError, match="rqs.backend"):
        _tiny(tmp_path, **{"rqs.judge": "model"})
    with pytest.raises(ValueError, match="evaluate.sampels_per_unit"):
        _tiny(tmp_path, **{"evaluate.sampels_per_unit": 3})


def test_has_at_gives_table8_of_the_paper():
    # SurveyReview Table 8 (Align, RQS -> HAS at RQS weight 0.25, 0.40, 0.60, 0.75); the paper computes from unrounded
    # Align and RQS, so the two-decimal inputs can move a figure by up to 0.005 before its own rounding
    table8 = {"SurveyAlign": (0.86, 0.36, [0.74, 0.66, 0.56, 0.49]), "GPT-5.2": (0.77, 0.42, [0.68, 0.63, 0.56, 0.51]),
              "Claude-Opus-4.5": (0.74, 0.48, [0.68, 0.64, 0.59, 0.55])}
    for align, rqs, expected in table8.values():
        got = list(has_sensitivity(align, rqs, (0.25, 0.40, 0.60, 0.75)).values())
        assert got == pytest.approx(expected, abs=0.0101)
    assert has_sensitivity(0.86, 0.36, (0.40,))[0.40] == pytest.approx(0.6 * 0.86 + 0.4 * 0.36)


def test_table2_accuracy_is_per_dimension_then_averaged():
    # the accuracy Table 2 shows is the one of surveyalign.scoring (exact score match over scored units)
    recs = [{"dimension": "readability", "status": "scored", "prediction": -1, "reference": -1},
            {"dimension": "readability", "status": "scored", "prediction": 1, "reference": -1},
            {"dimension": "readability", "status": "parse_failed", "prediction": None, "reference": -1},
            {"dimension": "structure", "status": "scored", "prediction": 2, "reference": 2}]
    recs = [{**r, "unit_id": f"u{i}", "paper_id": f"p{i}", "consistency": None} for i, r in enumerate(recs)]
    acc = summarize_predictions(recs, bootstrap=0)
    assert {d: e["accuracy"] for d, e in acc["per_dimension"].items()} == {"readability": 0.5, "structure": 1.0}
    assert acc["accuracy"] == 0.75


def _record(i: int, dim: str, ref: int, pred: int | None, consistency: float | None, source: str) -> dict:
    return {"unit_id": f"{dim}-{i}", "paper_id": f"p{i}", "review_id": f"r{i}", "source": source, "dimension": dim,
            "reference": ref, "prediction": pred, "status": "scored" if pred is not None else "parse_failed",
            "consistency": consistency, "rationale": "r"}


def _hand_run(tmp_path: Path, name: str, rows: list[dict]) -> str:
    run_dir = tmp_path / "eval" / name
    run_dir.mkdir(parents=True)
    (run_dir / "predictions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(run_dir)


def test_tables_from_finished_runs_equal_the_formula_by_hand(tmp_path):
    from surveyalign.paper._stages import PaperRun, StageRecord
    from surveyalign.paper._tables import write_tables

    cfg = _tiny(tmp_path, **{"has.alpha": [0.5, 0.5], "has.beta": [0.5, 0.5], "evaluate.bootstrap": 50})
    # judge A: readability refs (-1, -1, 2) preds (-1, 1, 2): errors 0, 2, 0 -> MSE 4/3, MAE 2/3; RQS 0.6, 0.2, 1.0
    #          structure refs (1, -2) preds (1, -1): errors 0, 1 -> MSE 0.5, MAE 0.5; RQS 0.4, 0.8
    a = [_record(0, "readability", -1, -1, 0.6, "F1000"), _record(1, "readability", -1, 1, 0.2, "MOPRD"),
         _record(2, "readability", 2, 2, 1.0, "F1000"), _record(3, "structure", 1, 1, 0.4, "F1000"),
         _record(4, "structure", -2, -1, 0.8, "MOPRD")]
    # constant -1: readability errors 0, 0, 3 -> MSE 3, MAE 1; structure errors 2, 1 -> MSE 2.5, MAE 1.5; RQS 0
    b = [{**r, "prediction": -1, "status": "scored", "consistency": 0.0} for r in a]
    work = Path(cfg.workdir)
    work.mkdir(parents=True)
    run = PaperRun(cfg, _Console())
    run.record = StageRecord(work)
    run.record.save("evaluate", {"runs": {
        "surveyalign": {"run_dir": _hand_run(tmp_path, "a", a), "kind": "surveyalign", "variant": None, "name": "A",
                        "rqs_judge": "judge-x"},
        "constant-minus1": {"run_dir": _hand_run(tmp_path, "b", b), "kind": "baseline", "variant": None,
                            "name": "constant -1", "rqs_judge": "judge-y"}}})
    write_tables(run)

    avg_mse_a, avg_mae_a = (4 / 3 + 0.5) / 2, (2 / 3 + 0.5) / 2
    rqs_a = ((0.6 + 0.2 + 1.0) / 3 + (0.4 + 0.8) / 2) / 2
    align_a = 0.5 * (1 - avg_mse_a / 16) + 0.5 * (1 - avg_mae_a / 4)
    t2 = json.loads((work / "table2.json").read_text())
    row = t2["data"]["rows"][0]
    assert row["avg_mse"] == pytest.approx(avg_mse_a)
    assert row["avg_mae"] == pytest.approx(avg_mae_a)
    assert row["rqs"] == pytest.approx(rqs_a)
    assert row["has"] == pytest.approx(0.5 * align_a + 0.5 * rqs_a)
    assert row["accuracy"] == pytest.approx((2 / 3 + 1 / 2) / 2)
    # the two rows have different RQS judges: both said and the rows marked
    assert t2["data"]["rows"][1]["rqs_judge_differs"] is True
    assert any("RQS judges differ" in n for n in t2["notes"])
    assert "†" in (work / "table2.md").read_text()

    t8 = json.loads((work / "table8.json").read_text())
    assert t8["data"]["rows"][0]["align"] == pytest.approx(align_a)
    assert t8["data"]["rows"][0]["has"]["0.40"] == pytest.approx(0.6 * align_a + 0.4 * rqs_a)
    align_b = 0.5 * (1 - 2.75 / 16) + 0.5 * (1 - 1.25 / 4)
    assert t8["data"]["rows"][1]["has"]["0.75"] == pytest.approx(0.25 * align_b + 0.75 * 0.0)

    # Table 7: per source; F1000 units of A: readability 0, 2 (errors 0, 0), structure 3 (error 0), RQS
    t7 = json.loads((work / "table7.json").read_text())
    f1000 = t7["data"]["rows"][0]["per_source"]["f1000"]
    rqs_f = ((0.6 + 1.0) / 2 + 0.4) / 2
    assert f1000["has"] == pytest.approx(0.5 * 1.0 + 0.5 * rqs_f)
    # Tables 3 / 4: the variants' rows exist; no variant run was recorded, so SurveyAlign's own units are used
    assert (work / "table3.md").exists() and (work / "table4.md").exists()
    html = (work / "paper.html").read_text()
    assert html.count("<h2>Table") == 5


def test_stages_are_skipped_when_nothing_changed_and_rerun_when_the_seed_does(tmp_path):
    cfg = _tiny(tmp_path)
    out = run_paper(cfg, console=_Console(), until_stage="ka")
    assert out["stages"] == {"data": "ran", "ka": "ran", "sft": "not selected", "dpo-pairs": "not selected",
                             "dpo": "not selected", "evaluate": "not selected", "tables": "not selected"}
    ka = Path(cfg.workdir) / "data" / "surveyreview-ka"
    assert (ka / "data").is_dir()
    again = run_paper(cfg, console=_Console(), until_stage="ka")
    assert again["stages"]["data"] == "skipped" and again["stages"]["ka"] == "skipped"
    changed = run_paper(_tiny(tmp_path, seed=7), console=_Console(), until_stage="ka")
    assert changed["stages"]["data"] == "ran" and changed["stages"]["ka"] == "ran"

    # --from a stage whose inputs never finished is refused, naming them
    with pytest.raises(ValueError, match="reads the output of sft"):
        run_paper(cfg, console=_Console(), from_stage="dpo-pairs", until_stage="dpo-pairs")

    # the plan needs no server: constant baselines, known units
    console = _Console()
    assert run_paper(cfg, console=_Console(), until_stage="ka")["stages"]["data"] == "ran"  # back to seed 42
    plan = plan_paper(cfg, console=console)
    states = {row["stage"]: row["state"] for row in plan["stages"]}
    assert states["data"] == "up to date (skipped)" and states["sft"] == "will run"
    runs = {e["run"]: e for e in plan["evaluation"]}
    # the 47 test units of the sample release and one RQS rating each
    assert {d: v["calls"] for d, v in runs["constant-minus1"]["plan"]["by_dimension"].items()} == {
        "readability": 11, "structure": 12, "comprehensiveness": 12, "criticalness": 12, "rqs": 47}
    assert runs["surveyalign"]["summary"].startswith("local adapters not trained yet")
    assert plan["gpu_hours"] is not None and plan["gpu_hours"] < 0.01


@pytest.mark.slow
def test_tiny_profile_end_to_end_then_every_stage_skipped(tmp_path):
    """The tiny profile as `make demo` runs it (fewer steps, units and variants): four adapters, KA counts in the
    training records, the eval run naming exactly those adapters, scored units in every dimension, RQS and HAS for
    SurveyAlign and the baselines, the tables; a failed training keeps the adapters it finished; a second run skips
    every stage."""
    import time

    from surveyalign.paper import StageFailed

    cfg = _tiny(tmp_path, **{"sft_overrides": ["--max_steps", "40"], "dpo.pairs.limit": 8, "evaluate.limit": 4,
                             "evaluate.bootstrap": 20,
                             "variants": [{"name": "comp-sft", "table": 3, "label": "SFT",
                                           "dimension": "comprehensiveness", "knowledge": False},
                                          {"name": "comp-sft-ka", "table": 3, "label": "SFT + Comp-KA",
                                           "dimension": "comprehensiveness", "knowledge": True}]})
    # a recipe that fails on the second adapter: the stage stops, the first adapter is kept for the next run
    bad = tmp_path / "bad-sft.yaml"
    bad.write_text((REPO / "configs/sft/demo-paper.yaml").read_text() + "not_a_recipe_key: 1\n")
    broken = cfg.model_copy(update={"sft": {**cfg.sft, "structure": str(bad)}})
    with pytest.raises(StageFailed, match=r"stage sft: .*sft-structure\.log"):
        run_paper(broken, console=_Console())
    work = Path(cfg.workdir)
    assert (work / "adapters" / "sft-readability" / "adapter_config.json").is_file()
    assert "sft" not in json.loads((work / "stages.json").read_text())  # the stage did not finish

    console = _Console()
    out = run_paper(cfg, console=console)
    assert out["stages"] == {"data": "skipped", "ka": "skipped", "sft": "ran", "dpo-pairs": "ran", "dpo": "ran",
                             "evaluate": "ran", "tables": "ran"}
    assert "sft-readability: up to date" in "\n".join(console.lines)
    records = {p.parent.name: json.loads(p.read_text()) for p in (work / "adapters").glob("*/surveyalign_training.json")}
    assert sorted(records) == ["dpo-criticalness-ka", "sft-comprehensiveness", "sft-comprehensiveness-ka",
                               "sft-criticalness-ka", "sft-readability", "sft-structure"]
    for name in ("sft-comprehensiveness-ka", "sft-criticalness-ka"):
        assert records[name]["n_train_with_knowledge"] > 0 and records[name]["use_knowledge"] is True
    assert records["sft-readability"]["n_train_with_knowledge"] == 0

    run_config = json.loads((work / "eval" / "surveyalign" / "run_config.json").read_text())
    named = json.dumps(run_config)
    for dim, folder in {"readability": "sft-readability", "structure": "sft-structure",
                        "comprehensiveness": "sft-comprehensiveness-ka", "criticalness": "dpo-criticalness-ka"}.items():
        assert str(work / "adapters" / folder) in named, dim
    t2 = json.loads((work / "table2.json").read_text())
    rows = {r["run"]: r for r in t2["data"]["rows"]}
    assert set(rows) == {"surveyalign", "constant-minus1", "constant-plus1"}
    assert all(rows["surveyalign"]["per_dimension"][d]["n_scored"] > 0 for d in rows["surveyalign"]["per_dimension"])
    assert len(rows["surveyalign"]["per_dimension"]) == 4
    for row in rows.values():
        assert row["rqs"] is not None and row["has"] is not None and row["rqs_judge"] == "lexical stand-in"
    for n in (2, 3, 4, 7, 8):
        assert (work / f"table{n}.md").is_file() and (work / f"table{n}.json").is_file()

    started = time.time()
    again = run_paper(cfg, console=_Console())
    assert set(again["stages"].values()) == {"skipped"}
    assert time.time() - started < 30


def test_slurm_launcher_runs_each_training_as_the_shipped_sbatch_script(tmp_path):
    from surveyalign.paper._stages import PaperRun

    cfg = PaperConfig.from_yaml(REPO / "configs/paper/paper.yaml",
                                {"workdir": str(tmp_path / "run"), "launcher.kind": "slurm", "launcher.nodes": 2})
    run = PaperRun(cfg, _Console())
    cmd = run.sft_command("criticalness", True)
    # slurm/train.slurm RECIPE CONFIG [ACCELERATE_CONFIG] -- RECIPE FLAGS, waited for
    assert cmd[:4] == ["sbatch", "--wait", "--nodes=2", "--gres=gpu:8"]
    assert cmd[4].endswith("slurm/train.slurm") and cmd[5] == "sft"
    assert cmd[6].endswith("configs/sft/criticalness.yaml") and cmd[7].endswith("configs/accelerate/zero3.yaml")
    assert cmd[8] == "--"
    flags = dict(zip(cmd[9::2], cmd[10::2]))
    assert flags["--dataset_path"] == str(tmp_path / "run" / "data" / "surveyreview-ka")
    assert flags["--output_dir"] == str(tmp_path / "run" / "adapters" / "sft-criticalness-ka")
    assert flags["--use_knowledge"] == "true" and flags["--model_name_or_path"] == "Qwen/Qwen3-32B"
    dpo = run.dpo_command("criticalness", True)
    assert dpo[5] == "dpo" and dict(zip(dpo[9::2], dpo[10::2]))["--sft_adapter"].endswith("adapters/sft-criticalness-ka")


def test_a_prior_evaluator_is_imported_as_a_table2_row_with_the_closest_category(tmp_path):
    from surveyalign.paper._config import PriorImport
    from surveyalign.paper._evaluate import import_prior
    from surveyalign.paper._stages import PaperRun, StageRecord
    from surveyalign.paper._tables import write_tables

    cfg = _tiny(tmp_path)
    run_paper(cfg, console=_Console(), until_stage="ka")
    scores = tmp_path / "drbench.jsonl"
    # DeepResearch Bench scores on 0-10: comprehensiveness 2.0 -> -1.2 -> -1; insight 5.0 -> 0 (tie, to the majority
    # -1); readability 9.0 -> +1.6 -> +2 (App. H: the closest of {-2, -1, +1, +2})
    scores.write_text(json.dumps({"id": "sr0005", "comprehensiveness": 2.0, "insight": 5.0, "readability": 9.0}) + "\n")
    run = PaperRun(cfg, _Console())
    run.record = StageRecord(Path(cfg.workdir))
    entry = import_prior(run, PriorImport(tool="drbench", scores=str(scores), model="GPT-5.2"))
    preds = [json.loads(x) for x in (Path(entry["run_dir"]) / "predictions.jsonl").read_text().splitlines()]
    mine = [p for p in preds if p["paper_id"] == "sr0005"]
    assert mine and {p["dimension"]: p["prediction"] for p in mine} == {
        "comprehensiveness": -1, "criticalness": -1, "readability": 2}
    assert entry["n_scored"] == len(mine) and entry["n"] == len(preds) > len(mine)  # the other papers: missing
    assert all(p["status"] == "missing" for p in preds if p["paper_id"] != "sr0005")

    run.record.save("evaluate", {"runs": {"prior-drbench": entry}})
    write_tables(run)
    row = json.loads((Path(cfg.workdir) / "table2.json").read_text())["data"]["rows"][0]
    assert row["rqs"] is None and row["has"] is None and row["rqs_judge"] is None
    t8 = json.loads((Path(cfg.workdir) / "table8.json").read_text())["data"]["rows"][0]
    assert set(t8["has"].values()) == {None}  # no RQS: no HAS under any weight
    assert "| Prior work |" in (Path(cfg.workdir) / "table2.md").read_text()

"""The KA demo (`surveyalign demo --config configs/demo-ka.yaml`) end to end at tiny sizes: ka build, SFT with
the `knowledge` column in the prompts, evaluation that reads it (SurveyReview §5.2.3)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]


def test_demo_ka_trains_and_evaluates_with_knowledge(tmp_path, tiny_model_dir):
    config = yaml.safe_load((REPO / "configs" / "demo-ka.yaml").read_text())
    config.update(workdir=str(tmp_path / "run"), model=str(tiny_model_dir), train_overrides=["--max_steps", "3"])
    config["eval"]["generation"].update(max_new_tokens=8)
    config["eval"].update(limit=4)
    (tmp_path / "demo-ka.yaml").write_text(yaml.safe_dump(config))
    argv = [str(Path(sys.executable).parent / "surveyalign"), "demo", "--config", str(tmp_path / "demo-ka.yaml")]
    proc = subprocess.run(argv, check=False, cwd=REPO, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    work = tmp_path / "run"
    assert "knowledge augmentation: 29 KA records (0 empty)" in " ".join(proc.stdout.split())
    records = [json.loads(line) for line in (work / "surveyreview-ka" / "ka" / "records.jsonl").read_text().splitlines()]
    assert {r["dimension"] for r in records} == {"comprehensiveness"} and all(r["text"] for r in records)
    training = json.loads((work / "adapter-comprehensiveness" / "surveyalign_training.json").read_text())
    assert training["use_knowledge"] is True and training["dataset_path"].endswith("surveyreview-ka")
    assert training["length"]["train"]["n_with_knowledge"] == 22  # every Comprehensiveness training unit
    board = json.loads((work / "leaderboard.json").read_text())
    adapter_run = Path(board["runs"]["surveyalign-comprehensiveness (tiny LoRA)"])
    run_config = json.loads((adapter_run / "run_config.json").read_text())
    assert run_config["data"]["knowledge_column"] is True
    assert run_config["training_records"]["comprehensiveness"]["use_knowledge_checked"] is True
    preds = [json.loads(line) for line in (adapter_run / "predictions.jsonl").read_text().splitlines()]
    assert len(preds) == 4 and {p["dimension"] for p in preds} == {"comprehensiveness"}

"""End to end: the main job (`surveyalign demo`) on the shipped sample, tiny sizes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from surveyalign.constants import STATUSES

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory, tiny_model_dir):
    work = tmp_path_factory.mktemp("demo")
    cfg_file = work / "demo.yaml"
    cfg_file.write_text(
        "workdir: {w}\nmodel: {m}\nsft_config: configs/sft/demo.yaml\n"
        "train_overrides: ['--max_steps', '4']\neval:\n  generation:\n    max_new_tokens: 16\n  limit: 6\n".format(
            w=work / "run", m=tiny_model_dir)
    )
    argv = [str(Path(sys.executable).parent / "surveyalign"), "demo", "--config", str(cfg_file)]
    proc = subprocess.run(argv, check=False, cwd=REPO, capture_output=True, text=True, timeout=600)
    return work / "run", proc


def test_demo_exits_zero_and_prints_leaderboard(demo_run):
    work, proc = demo_run
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "surveyalign-readability" in proc.stdout
    assert "constant -1" in proc.stdout
    assert str(work) in proc.stdout.replace("\n", "")


def test_demo_writes_run_folders(demo_run):
    work, proc = demo_run
    assert proc.returncode == 0
    board = json.loads((work / "leaderboard.json").read_text())
    assert len(board["runs"]) == 2
    for run in board["runs"].values():
        run = Path(run)
        preds = [json.loads(line) for line in (run / "predictions.jsonl").read_text().splitlines()]
        assert len(preds) == 6  # limit: 6 units, none dropped
        assert {p["dimension"] for p in preds} == {"readability"}
        assert all(p["status"] in set(STATUSES) for p in preds)
        metrics = json.loads((run / "metrics.json").read_text())
        dim = metrics["per_dimension"]["readability"]
        assert dim["n"] == 6
        assert json.loads((run / "run_config.json").read_text())
    const = json.loads((Path(board["runs"]["constant -1"]) / "metrics.json").read_text())
    refs = [json.loads(line)["reference"]
            for line in (Path(board["runs"]["constant -1"]) / "predictions.jsonl").read_text().splitlines()]
    # the constant judge always answers -1 through the protocol and the parser: every unit is scored
    assert const["per_dimension"]["readability"]["n_scored"] == 6
    expected_mse = sum((-1 - r) ** 2 for r in refs) / len(refs)
    assert const["per_dimension"]["readability"]["mse"] == pytest.approx(expected_mse)
    assert (work / "adapter-readability" / "adapter_config.json").exists()
    assert json.loads((work / "run_config.json").read_text())["dataset"].endswith("surveyreview")


def test_demo_metrics_through_evaluate_modules_match_harness(demo_run):
    work, proc = demo_run
    assert proc.returncode == 0
    board = json.loads((work / "leaderboard.json").read_text())
    const = board["evaluate_modules"]["constant -1"]
    harness = board["metrics"]["constant -1"]
    assert const["n_scored"] == const["n"] == 6
    assert const["avg_mse"] == pytest.approx(harness["avg_mse"])
    assert const["avg_mae"] == pytest.approx(harness["avg_mae"])
    # the lexical stand-in RQS judge rated every scored unit, so HAS is defined and follows its formula
    assert const["rqs"] is not None and 0.0 <= const["rqs"] <= 1.0
    a_mse, a_mae = 1 - const["avg_mse"] / 16, 1 - const["avg_mae"] / 4
    assert const["align"] == pytest.approx(0.4 * a_mse + 0.6 * a_mae)
    assert const["has"] == pytest.approx(0.75 * const["align"] + 0.25 * const["rqs"])


def test_lexical_consistency_judge_reads_the_real_prompt():
    from surveyalign.evaluation.rqs import (
        build_rqs_messages,
        parse_rqs_rating,
    )
    from surveyalign.testing import lexical_rqs_reply

    same = build_rqs_messages("readability", title="T", reference=["The prose is clear."],
                                      prediction="The prose is clear.")
    other = build_rqs_messages("readability", title="T", reference=["The prose is clear."],
                                       prediction="zzz qqq")
    assert parse_rqs_rating(lexical_rqs_reply(same)).score == 1.0
    assert parse_rqs_rating(lexical_rqs_reply(other)).score == 0.0
    with pytest.raises(ValueError):
        lexical_rqs_reply([{"role": "user", "content": "no headings here"}])

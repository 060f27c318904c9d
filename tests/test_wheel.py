"""A wheel built from the repository works outside the checkout: metrics register, evaluate.load("has") and
data build on the shipped sample release find their files in the installed package (slow: builds the wheel)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_wheel_outside_the_checkout(tmp_path):
    wheels, target, work = tmp_path / "wheels", tmp_path / "site", tmp_path / "work"
    work.mkdir()
    pip = [sys.executable, "-m", "pip"]
    subprocess.run([*pip, "wheel", str(REPO), "--no-deps", "--no-build-isolation", "-q", "-w", str(wheels)],
                   check=True, cwd=tmp_path)
    (wheel,) = wheels.glob("surveyalign-*.whl")
    subprocess.run([*pip, "install", "-q", "--no-deps", "--target", str(target), str(wheel)], check=True)
    env = {**os.environ, "PYTHONPATH": str(target), "HF_MODULES_CACHE": str(tmp_path / "modules"),
           "HF_HOME": str(tmp_path / "hf"), "HF_EVALUATE_OFFLINE": "1", "HF_HUB_OFFLINE": "1"}

    def run(*args: str) -> str:
        out = subprocess.run([sys.executable, *args], cwd=work, env=env, capture_output=True, text=True, check=False)
        assert out.returncode == 0, out.stderr[-2000:]
        return out.stdout

    assert run("-c", "import surveyalign; print(surveyalign.__file__)").startswith(str(target))
    assert "registered has" in run("-m", "surveyalign", "metrics", "register")
    got = json.loads(run("-c", "import evaluate, json; has = evaluate.load('has'); print(json.dumps(has.compute("
                         "predictions=[-1, 1, -1, -2], references=[-1, -1, -1, -2], dimensions=['readability'] * 2 "
                         "+ ['structure'] * 2, consistency=[0.6, 0.0, 0.8, 1.0])))").splitlines()[-1])
    assert round(got["has"], 4) == 0.825 and got["avg_mse"] == 1.0
    release = run("-c", "from surveyalign.data import sample_release_dir as s; print(s())").strip()
    assert release.startswith(str(target))
    run("-m", "surveyalign", "data", "build", "--official", release, "--out", str(work / "surveyreview"))
    card = (work / "surveyreview" / "README.md").read_text()
    assert card.startswith("---") and "SurveyReview" in card and (work / "surveyreview" / "build_report.json").is_file()

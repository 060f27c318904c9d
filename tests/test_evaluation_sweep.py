"""Ablation sweeps (SurveyReview §6.3): knowledge augmentation on / off for Comprehensiveness on the shipped sample
with the tiny judge (a tiny LoRA adapter that always answers "Broad refs.$$$2$$$"), and the paired table's
"insufficient data" rule (``surveyalign/evaluation/sweep.py``)."""

from __future__ import annotations

import json

import pytest
import yaml

from surveyalign.backends import load_backend
from surveyalign.cli import main
from surveyalign.evaluation import EvalConfigError, SweepConfig


@pytest.fixture(scope="module")
def ka_dataset(dataset_dir, tmp_path_factory):
    from surveyalign.knowledge import KAConfig, build_ka_dataset, sample_graph

    out = tmp_path_factory.mktemp("ka") / "surveyreview-ka"
    build_ka_dataset(dataset_dir, sample_graph(dataset_dir), out,
                     KAConfig(tokenizer="whitespace", dimensions=["comprehensiveness"], comp_max_tokens=60),
                     backend=load_backend("scripted", replies=["unused"]), progress=False)
    return out


@pytest.fixture(scope="module")
def comp_adapter(tiny_model_dir, tmp_path_factory):
    """Only the Comprehensiveness tiny adapter (``tests/tiny_adapters.py``): answers "Broad refs.$$$2$$$"."""
    from tiny_adapters import train_constant_adapter

    return train_constant_adapter(tiny_model_dir, tmp_path_factory.mktemp("comp-adapter") / "comp",
                                  "comprehensiveness", seed=2)


def _sweep(tmp_path, dataset, tiny_model_dir, adapter, **extra):
    base = {"name": "tiny comp", "dataset": str(dataset), "split": "test", "dimensions": ["comprehensiveness"],
            "knowledge_dimensions": ["comprehensiveness"], "protocol": "v1.0",
            "backend": {"kind": "transformers", "options": {"model": str(tiny_model_dir), "adapter": str(adapter),
                                                            "device": "cpu"}},
            "generation": {"temperature": 0.0, "max_new_tokens": 12, "seed": 0}, "limit": 4, "progress": False,
            "bootstrap": 0, "allow_training_mismatch": True}
    (tmp_path / "eval.yaml").write_text(yaml.safe_dump(base), encoding="utf-8")
    sweep = {"name": "ka on-off", "base": "eval.yaml", "variants": {"no-ka": {"knowledge_dimensions": []}},
             "output_dir": str(tmp_path / "sweeps"), "bootstrap": 200, **extra}
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(sweep), encoding="utf-8")
    return path


def test_ka_on_off_sweep_with_the_tiny_judge(tmp_path, ka_dataset, tiny_model_dir, comp_adapter, capsys):
    path = _sweep(tmp_path, ka_dataset, tiny_model_dir, comp_adapter)
    assert main(["sweep", "--config", str(path)]) == 0
    printed = capsys.readouterr().out
    out = json.loads((tmp_path / "sweeps" / "ka-on-off" / "sweep.json").read_text())
    base = [json.loads(x) for x in (tmp_path / "sweeps" / "ka-on-off" / "base" / "predictions.jsonl").read_text().splitlines()]
    no_ka = [json.loads(x) for x in (tmp_path / "sweeps" / "ka-on-off" / "no-ka" / "predictions.jsonl").read_text().splitlines()]
    assert [r["unit_id"] for r in base] == [r["unit_id"] for r in no_ka] and len(base) == 4
    # the knowledge block makes the base prompts longer, unit by unit
    assert all(b["prompt_tokens"] > n["prompt_tokens"] for b, n in zip(base, no_ka))
    scored = [b for b in base if b["status"] == "scored"]
    assert scored and all(b["prediction"] == 2 for b in scored)  # the adapter's fixed answer
    expected = sum((2 - b["reference"]) ** 2 for b in scored) / len(scored)  # MSE of always +2, by hand
    assert out["runs"]["base"]["avg_mse"] == pytest.approx(expected)
    comp = out["comparisons"]["no-ka"]
    m = comp["metrics"]["avg_mse"]
    # same answer with and without KA: difference 0, and too few papers for an interval anyway
    assert m["diff"] == pytest.approx(0.0) and m["ci95"] is None and m["p_value"] is None
    assert m["insufficient"].startswith("insufficient data")
    assert "no-ka" in printed and "insufficient data" in printed
    # every run says how many answers it reused, retried and made (issue 21 C): 4 units, 1 sample each, all new
    assert out["runs"]["base"]["answers"] == out["runs"]["no-ka"]["answers"] == {"reused": 0, "retried": 0, "made": 4}
    assert "base: answers: 0 reused, 0 retried (their cached answer had failed), 4 made" in printed
    # each variant is an evaluation run folder with its own call cache (a re-run resumes from it)
    for name in ("base", "no-ka"):
        assert (tmp_path / "sweeps" / "ka-on-off" / name / "calls.jsonl").stat().st_size > 0


def test_sweep_config_errors(tmp_path, dataset_dir, tiny_model_dir, capsys):
    path = _sweep(tmp_path, dataset_dir, tiny_model_dir, tmp_path / "none", variants={})
    with pytest.raises(EvalConfigError, match="needs `variants` or `vary`"):
        SweepConfig.from_yaml(path)
    path = _sweep(tmp_path, dataset_dir, tiny_model_dir, tmp_path / "none",
                  variants={"bad": {"generation.temprature": 1}})
    assert main(["sweep", "--config", str(path)]) == 2
    err = capsys.readouterr().err
    assert "variant bad" in err and "generation.temprature" in err
    path = _sweep(tmp_path, dataset_dir, tiny_model_dir, tmp_path / "none", variants={},
                  vary={"samples_per_unit": [1, 3]})
    assert list(SweepConfig.from_yaml(path).runs()) == ["base", "samples_per_unit-1", "samples_per_unit-3"]

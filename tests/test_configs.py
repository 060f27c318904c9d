"""Every YAML under configs/ parses through the real parser of the component that reads it."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
ALL_YAML = sorted(p.relative_to(REPO).as_posix() for p in (REPO / "configs").rglob("*.yaml"))


def _parse(rel: str):
    path = REPO / rel
    if rel in ("configs/demo.yaml", "configs/demo-ka.yaml"):
        from surveyalign.demo import DemoConfig

        return DemoConfig.from_yaml(path)
    if rel.startswith("configs/paper/"):
        from surveyalign.paper import PaperConfig

        return PaperConfig.from_yaml(path)
    if rel.startswith("configs/ka/"):
        from surveyalign.knowledge import KAConfig

        return KAConfig.from_yaml(path)
    if rel.startswith(("configs/sft/", "configs/dpo/")):
        from surveyalign.training import parse_recipe_yaml

        return parse_recipe_yaml(path, check_device=False)  # bf16 (QLoRA) configs parse on a CPU machine too
    if rel.startswith("configs/eval/"):
        from surveyalign.evaluation import EvalConfig

        return EvalConfig.from_yaml(path)
    if rel.startswith("configs/prism/"):
        from surveyalign.prism import PrismConfig

        return PrismConfig.from_yaml(path)
    if rel.startswith("configs/annotation/"):
        from surveyalign.annotation import AnnotationJudge

        return AnnotationJudge.from_yaml(path)
    if rel.startswith("configs/judge/"):
        from surveyalign.inference import load_judge_spec

        return load_judge_spec(path)
    if rel.startswith("configs/autorate/"):
        from surveyalign.autoraters import AutoraterRole

        return AutoraterRole.from_yaml(path, "autorater judge config")
    if rel.startswith("configs/studies/"):
        from surveyalign.evaluation import JuryConfig, RQSJudgesConfig, SweepConfig

        kinds = {"rqs-judges": RQSJudgesConfig, "jury": JuryConfig, "sweep": SweepConfig}
        return next(cls for prefix, cls in kinds.items() if path.stem.startswith(prefix)).from_yaml(path)
    if rel.startswith("configs/systems/"):
        from surveyalign.systems import SystemsConfig

        return SystemsConfig.from_yaml(path)
    if rel.startswith("configs/accelerate/"):
        from accelerate.commands.config.config_args import load_config_from_file

        return load_config_from_file(str(path))
    if rel.startswith("configs/rewards/"):
        from surveyalign.rewards import RewardConfig

        return RewardConfig.from_yaml(path)
    if rel.startswith("configs/grpo/"):
        import importlib.util
        import sys
        from unittest import mock

        from surveyalign.yamlconfig import read_yaml_mapping

        spec = importlib.util.spec_from_file_location("_recipe_grpo", REPO / "recipes" / "grpo.py")
        recipe = sys.modules["_recipe_grpo"] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(recipe)
        config = read_yaml_mapping(path, "recipe config")
        for key in ("dataset_path", "reward_config"):  # shipped files the recipe reads (the paper's prompts aside)
            assert config[key].startswith("data/") or (REPO / config[key]).is_file(), f"{rel}: {key}"
        with mock.patch("transformers.training_args.is_torch_bf16_gpu_available", return_value=True):
            return recipe.make_parser().parse_dict(config, allow_extra_keys=False)
    if rel.startswith("configs/stress/"):
        from surveyalign.stress import StressConfig

        return StressConfig.from_yaml(path)
    if rel == "configs/prices.yaml":
        from surveyalign.calls.cost import load_prices

        return load_prices(path)
    raise AssertionError(f"{rel}: no parser is known for this folder; add one to tests/test_configs.py")


def test_configs_exist():
    assert "configs/demo.yaml" in ALL_YAML
    assert any(p.startswith("configs/sft/") for p in ALL_YAML)
    assert any(p.startswith("configs/eval/") for p in ALL_YAML)


@pytest.mark.parametrize("rel", ALL_YAML)
def test_every_yaml_parses(rel):
    assert _parse(rel) is not None


def test_demo_config_rejects_unknown_key(tmp_path):
    from surveyalign.demo import DemoConfig

    bad = tmp_path / "demo.yaml"
    bad.write_text("workdir: x\nnot_a_key: 1\n")
    with pytest.raises(ValueError, match="not_a_key"):
        DemoConfig.from_yaml(bad)


def test_demo_config_rejects_unknown_dimension(tmp_path):
    from surveyalign.demo import DemoConfig

    bad = tmp_path / "demo.yaml"
    bad.write_text("dimension: novelty\n")
    with pytest.raises(ValueError, match="novelty"):
        DemoConfig.from_yaml(bad)

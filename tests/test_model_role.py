"""One model-role YAML shape (issue 20): the same `backend:` + `generation:` block loads in each of the five
consumers (evaluation + RQS judge, score judge, KA summariser, PRISM extractor, autorater judge), and the old
flat shapes are refused with a one-line hint naming the new one."""

from __future__ import annotations

import json

import pytest
import yaml
from test_autoraters_runs import LITREVIEW, MD

from surveyalign.autoraters import AutoraterRole
from surveyalign.backends import (
    ROLE_SHAPE,
    BackendConfig,
    GenerationSettings,
    ModelRole,
)
from surveyalign.cli import main
from surveyalign.evaluation import EvalConfig
from surveyalign.inference import load_judge_spec
from surveyalign.knowledge import KAConfig
from surveyalign.prism import PrismConfig

ROLE = """\
backend:
  kind: openai
  options: {model: judge-model, base_url: "http://127.0.0.1:9/v1", api_key_env: null, concurrency: 4}
generation: {temperature: 0.0, max_new_tokens: 64, seed: 3}
"""
BLOCK = yaml.safe_load(ROLE)
OPTIONS = {"model": "judge-model", "base_url": "http://127.0.0.1:9/v1", "api_key_env": None, "concurrency": 4}


def _same_role(role: ModelRole) -> None:
    assert role.backend == BackendConfig(kind="openai", options=OPTIONS)
    gen = role.generation
    assert isinstance(gen, GenerationSettings)
    assert (gen.temperature, gen.max_new_tokens, gen.seed) == (0.0, 64, 3)


def _indented(text: str, spaces: int = 2) -> str:
    return "".join(" " * spaces + line + "\n" for line in text.splitlines())


def test_the_same_role_block_loads_in_every_consumer(tmp_path):
    evaluation = tmp_path / "eval.yaml"
    evaluation.write_text(f"name: j\ndataset: {tmp_path}\n{ROLE}rqs:\n{_indented(ROLE)}", encoding="utf-8")
    config = EvalConfig.from_yaml(evaluation)
    _same_role(config)
    _same_role(config.rqs)

    judge = tmp_path / "judge.yaml"
    judge.write_text(ROLE + "samples: 3\n", encoding="utf-8")
    spec = load_judge_spec(judge)
    _same_role(spec)
    assert spec.samples == 3 and spec.generation.want_logprobs is True  # the judge's own default stays

    ka = tmp_path / "ka.yaml"
    ka.write_text(f"summariser:\n{_indented(ROLE)}", encoding="utf-8")
    _same_role(KAConfig.from_yaml(ka).summariser)

    prism = tmp_path / "prism.yaml"
    prism.write_text(ROLE, encoding="utf-8")
    _same_role(PrismConfig.from_yaml(prism))

    role = tmp_path / "role.yaml"
    role.write_text(ROLE, encoding="utf-8")
    _same_role(AutoraterRole.from_yaml(role))
    _same_role(ModelRole.model_validate(BLOCK))


def test_role_defaults_merge_under_the_given_generation_keys():
    partial = {"backend": BLOCK["backend"], "generation": {"max_new_tokens": 99}}
    assert AutoraterRole.model_validate({"backend": BLOCK["backend"]}).generation.max_new_tokens == 2048
    rqs = EvalConfig.model_validate({"name": "j", "dataset": "d", **partial, "rqs": {"backend": BLOCK["backend"]}}).rqs
    assert rqs.generation.max_new_tokens == 256
    prism = PrismConfig.model_validate(partial)
    assert (prism.generation.max_new_tokens, prism.generation.temperature) == (99, 0.0)


def test_old_flat_judge_yaml_is_refused_with_the_new_shape(tmp_path):
    old = tmp_path / "judge.yaml"
    old.write_text("backend: transformers\nmodel: Qwen/Qwen3-32B\nadapters: {readability: runs/sft/readability}\n"
                   "samples: 5\ntemperature: 0.7\n", encoding="utf-8")
    with pytest.raises(ValueError) as err:
        load_judge_spec(old)
    message = str(err.value)
    assert "\n" not in message and message.startswith(f"{old}: field (top level): old flat model-role key(s) ")
    assert "adapters, model, temperature" in message and message.endswith(ROLE_SHAPE)


def test_old_shapes_are_refused_by_every_consumer(tmp_path):
    ka = tmp_path / "ka.yaml"
    ka.write_text("summariser: {kind: openai, options: {model: m}, temperature: 0.0}\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"summariser: old flat model-role key\(s\) kind, options, temperature: "
                                         r"a model role is now backend: "):
        KAConfig.from_yaml(ka)
    evaluation = {"name": "j", "dataset": "d", **BLOCK, "temperature": 0.7}
    with pytest.raises(ValueError, match="old flat model-role key\\(s\\) temperature: a model role is now"):
        EvalConfig.from_dict(evaluation)
    with pytest.raises(ValueError, match="key\\(s\\) backend: a model role is now"):
        PrismConfig.model_validate({"backend": "openai"})
    role = tmp_path / "role.yaml"
    role.write_text("kind: openai\nmodel: m\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"role\.yaml: invalid autorater judge config: \(top level\): old flat model-role key\(s\) "
                                         r"kind, model"):
        AutoraterRole.from_yaml(role, "autorater judge config")
    role.write_text(ROLE.replace("seed: 3", "sede: 3"), encoding="utf-8")
    with pytest.raises(ValueError, match=r"invalid model role: generation\.sede: Extra inputs are not permitted"):
        ModelRole.from_yaml(role)


def test_score_judge_adapters_live_in_per_dimension(tmp_path):
    judge = tmp_path / "judge.yaml"
    judge.write_text("backend:\n  kind: transformers\n  options: {model: base}\n"
                     "  per_dimension: {readability: {adapter: a1}, structure: {adapter: a2}}\n", encoding="utf-8")
    spec = load_judge_spec(judge)
    assert (spec.model, spec.adapters) == ("base", {"readability": "a1", "structure": "a2"})
    judge.write_text("backend:\n  kind: transformers\n  options: {model: base}\n"
                     "  per_dimension: {readability: {adapter: a1, dtype: float32}}\n", encoding="utf-8")
    with pytest.raises(ValueError, match="per_dimension.readability: a transformers judge takes only `adapter:`"):
        load_judge_spec(judge)
    judge.write_text("backend: {kind: constant}\n", encoding="utf-8")
    with pytest.raises(ValueError, match="a score judge runs on transformers, vllm, openai, not 'constant'"):
        load_judge_spec(judge)


def test_autorate_reads_its_judge_from_a_role_file_and_flags_override(tmp_path):
    role = tmp_path / "role.yaml"
    role.write_text(yaml.safe_dump({"backend": {"kind": "scripted", "options": {"replies": [json.dumps(LITREVIEW)]}},
                                    "generation": {"temperature": 0.0, "max_new_tokens": 300, "seed": 4}}),
                    encoding="utf-8")
    out = tmp_path / "l"
    assert main(["autorate", "litreview", str(MD), "--venue", "ICLR 2025", "--judge", str(role),
                 "--seed", "5", "--output-dir", str(out), "--no-progress"]) == 0
    result = json.loads((out / "result.json").read_text())
    settings = result["judge"]["settings"]
    assert (settings["seed"], settings["max_new_tokens"], settings["temperature"]) == (5, 300, 0.0)
    assert result["judge"]["backend"]["backend"] == "scripted" and result["n_valid"] == 1

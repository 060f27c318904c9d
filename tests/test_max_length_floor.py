"""One lower bound for ``max_length`` (issue 20): the evaluate / score / autorate flags, the evaluation YAML, the
judge spec YAML, the autorater judge and the training record all refuse 1 and accept 2 (MIN_MAX_LENGTH); one
origin rule (config, else the adapter's training record) decides where a budget comes from."""

from __future__ import annotations

import pytest
import yaml

from surveyalign.autoraters import AutoraterJudge
from surveyalign.backends import GenerationSettings, load_backend
from surveyalign.cli import build_parser
from surveyalign.evaluation import EvalConfig
from surveyalign.inference import load_judge_spec
from surveyalign.models import (
    MIN_MAX_LENGTH,
    check_max_length,
    read_training_record,
    resolve_max_length,
    write_training_record,
)

RECORD = {"stage": "sft", "dimension": "readability", "protocol": "v1.0", "enable_thinking": False,
          "use_knowledge": False}


def test_the_floor_is_two_tokens():
    assert MIN_MAX_LENGTH == 2  # one prompt token + one answer token


@pytest.mark.parametrize("argv", [
    ["evaluate", "--config", "x.yaml"],
    ["score", "survey.md", "--judge", "judge.yaml", "--out", "out"],
    ["autorate", "litreview", "a.md", "--model", "judge"],
    ["autorate", "sxs-paper", "a.md", "b.md", "--model", "judge"],
])
def test_every_max_length_flag_has_the_same_floor(argv, capsys):
    parser = build_parser()
    assert parser.parse_args([*argv, "--max-length", "2"]).max_length == 2
    with pytest.raises(SystemExit) as exit_info:
        parser.parse_args([*argv, "--max-length", "1"])
    assert exit_info.value.code == 2
    assert "argument --max-length: expected an integer >= 2, got '1'" in capsys.readouterr().err


def test_evaluation_yaml_and_judge_spec_yaml_have_the_same_floor(tmp_path, dataset_dir):
    base = {"name": "c", "dataset": str(dataset_dir), "output_dir": str(tmp_path / "runs"),
            "backend": {"kind": "constant", "options": {"score": -1}}}
    assert EvalConfig.from_dict({**base, "max_length": 2}).max_length == 2
    with pytest.raises(ValueError, match="max_length.*greater than or equal to 2"):
        EvalConfig.from_dict({**base, "max_length": 1})
    judge = tmp_path / "judge.yaml"
    judge.write_text(yaml.safe_dump({"backend": {"kind": "openai", "options": {"model": "base"}}, "max_length": 2}))
    assert load_judge_spec(judge).max_length == 2
    judge.write_text(yaml.safe_dump({"backend": {"kind": "openai", "options": {"model": "base"}}, "max_length": 15}))
    assert load_judge_spec(judge).max_length == 15  # the judge's old floor of 16 is gone
    judge.write_text(yaml.safe_dump({"backend": {"kind": "openai", "options": {"model": "base"}}, "max_length": 1}))
    with pytest.raises(ValueError, match=rf"{judge}: field max_length: Input should be greater than or equal to 2"):
        load_judge_spec(judge)


def test_autorater_judge_has_the_same_floor_and_keeps_the_answer_relation():
    backend = load_backend("scripted", replies=["never asked"])
    tokenizer = object()  # not a str: used as given (never called here)
    one = GenerationSettings(max_new_tokens=1)
    assert AutoraterJudge(backend, one, max_length=2, tokenizer=tokenizer).max_length == 2
    with pytest.raises(ValueError, match=r"^max_length is 1, expected an integer >= 2$"):
        AutoraterJudge(backend, GenerationSettings(max_new_tokens=1), max_length=1, tokenizer=tokenizer)
    with pytest.raises(ValueError, match=r"^max_length 100 must exceed max_new_tokens 100$"):
        AutoraterJudge(backend, GenerationSettings(max_new_tokens=100), max_length=100, tokenizer=tokenizer)
    with pytest.raises(ValueError, match=r"^max_length is True, expected an integer >= 2$"):
        check_max_length(True)


def test_training_record_has_the_same_floor_and_the_origin_rule(tmp_path):
    adapter = tmp_path / "adapter"
    adapter.mkdir()
    write_training_record(adapter, {**RECORD, "max_length": 2})
    assert read_training_record(adapter)["max_length"] == 2
    assert resolve_max_length(None, adapter) == (2, f"training record of {adapter}")
    assert resolve_max_length(600, adapter) == (600, "config")  # the config wins
    assert resolve_max_length(None, None) == (None, None)
    assert resolve_max_length(None, "Qwen/some-adapter") == (None, None)  # a Hub id: no local record
    write_training_record(adapter, {**RECORD, "max_length": None})
    assert resolve_max_length(None, adapter) == (None, None)  # trained without a budget: no cut
    write_training_record(adapter, {**RECORD, "max_length": 1})
    message = rf"{adapter / 'surveyalign_training.json'}: field 'max_length' is 1, expected an integer >= 2"
    with pytest.raises(ValueError, match=message):
        read_training_record(adapter)
    with pytest.raises(ValueError, match=message):
        resolve_max_length(None, adapter)

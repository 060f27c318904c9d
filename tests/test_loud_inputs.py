"""Inputs that must fail loudly and at once (issue 11): local-looking paths never sent to the Hub, offline by
default, command-line flags named as flags."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
import yaml

from surveyalign.cli import main
from surveyalign.models import looks_local, resolve_model_path


@pytest.fixture()
def in_tmp(tmp_path, monkeypatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "runs").mkdir()
    (tmp_path / "models" / "base").mkdir(parents=True)
    return tmp_path


def test_local_looking_paths_are_no_such_folder(in_tmp):
    for name in ("./x", "runs/x", "../nowhere/x", "a/b/c", ".cache/tiny", "~/surely-not-here-42"):
        assert looks_local(name), name
        with pytest.raises(FileNotFoundError, match="no such folder"):
            resolve_model_path(name, "--model")
    # hub ids stay hub ids; an existing folder is used as is
    for hub_id in ("Qwen/Qwen3-32B", "gpt2", "org/x"):
        assert not looks_local(hub_id) and resolve_model_path(hub_id) == hub_id
    assert resolve_model_path("models/base") == "models/base"
    (in_tmp / "weights.bin").write_text("x")
    with pytest.raises(FileNotFoundError, match="not a folder"):
        resolve_model_path("weights.bin", "--adapter")


def test_missing_local_model_or_adapter_stops_at_once_in_every_command(in_tmp, tiny_model_dir, dataset_dir,
                                                                       capsys):
    from surveyalign.backends import load_backend

    started = time.monotonic()
    with pytest.raises(FileNotFoundError, match="model runs/x: no such folder"):
        load_backend("transformers", model="runs/x")
    with pytest.raises(FileNotFoundError, match="adapter runs/sft-readability: no such folder"):
        load_backend("transformers", model=str(tiny_model_dir), adapter="runs/sft-readability")
    assert time.monotonic() - started < 5  # no Hub round trip, no retries

    assert main(["serve", "--model", "runs/x"]) == 2
    assert "runs/x: no such folder" in capsys.readouterr().err
    assert main(["train", "dpo-pairs", "--adapter", "runs/sft", "--dataset", str(dataset_dir),
                 "--out", "pairs.jsonl"]) == 2
    assert "--adapter runs/sft: no such folder" in capsys.readouterr().err


def test_the_cli_is_offline_unless_told_otherwise(monkeypatch):
    for name in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "HF_EVALUATE_OFFLINE"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(SystemExit):
        main(["evaluate", "--help"])
    assert os.environ["HF_HUB_OFFLINE"] == "1" and os.environ["HF_DATASETS_OFFLINE"] == "1"
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")  # the documented way online
    with pytest.raises(SystemExit):
        main(["evaluate", "--help"])
    assert os.environ["HF_HUB_OFFLINE"] == "0"


def _eval_yaml(tmp_path: Path, dataset_dir: Path) -> Path:
    path = tmp_path / "judge.yaml"
    path.write_text(yaml.safe_dump({"name": "c", "dataset": str(dataset_dir), "output_dir": str(tmp_path / "runs"),
                                    "progress": False, "bootstrap": 0,
                                    "backend": {"kind": "constant", "options": {"score": -1}}}))
    return path


@pytest.mark.parametrize(("argv", "message"), [
    (["--limit", "0"], "argument --limit: expected an integer >= 1, got '0'"),
    (["--samples", "-2"], "argument --samples: expected an integer >= 1, got '-2'"),
    (["--dimensions", "readability,clarity"], "argument --dimensions: unknown dimension 'clarity'"),
    (["--max-length", "1"], "argument --max-length: expected an integer >= 2, got '1'"),
])
def test_evaluate_flag_errors_name_the_flag(tmp_path, dataset_dir, capsys, argv, message):
    cfg = _eval_yaml(tmp_path, dataset_dir)
    with pytest.raises(SystemExit) as exit_info:
        main(["evaluate", "--config", str(cfg), *argv])
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


def test_set_and_config_errors_name_their_origin(tmp_path, dataset_dir, capsys):
    cfg = _eval_yaml(tmp_path, dataset_dir)
    assert main(["evaluate", "--config", str(cfg), "--set", "generation.top_p=2"]) == 2
    err = capsys.readouterr().err
    assert "--set generation.top_p=2: Input should be less than or equal to 1" in err
    assert f"{cfg}: generation.top_p" not in err
    # the same mistake written in the YAML is reported as the file's key
    data = yaml.safe_load(cfg.read_text())
    data["generation"] = {"top_p": 2}
    cfg.write_text(yaml.safe_dump(data))
    assert main(["evaluate", "--config", str(cfg)]) == 2
    assert f"{cfg}: generation.top_p: Input should be less than or equal to 1" in capsys.readouterr().err


@pytest.mark.parametrize(("argv", "message"), [
    (["--k", "0"], "argument --k: expected an integer >= 1, got '0'"),
    (["--top-p", "1.5"], "argument --top-p: expected a number in (0, 1], got '1.5'"),
    (["--dimension", "clarity"], "argument --dimension: unknown dimension 'clarity'"),
    (["--enable-thinking", "yes"], "argument --enable-thinking: expected true or false, got 'yes'"),
])
def test_dpo_pairs_flag_errors_name_the_flag(capsys, argv, message):
    with pytest.raises(SystemExit) as exit_info:
        main(["train", "dpo-pairs", "--adapter", "a", "--dataset", "d", "--out", "o", *argv])
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize(("argv", "message"), [
    (["data", "build", "--official", "x", "--out", "y", "--test-fraction", "2"],
     "argument --test-fraction: expected a number in [0, 1], got '2'"),
    (["data", "build", "--official", "x", "--out", "y", "--seed", "-1"],
     "argument --seed: expected an integer >= 0, got '-1'"),
    (["report", "runs/x", "--bootstrap", "-1"], "argument --bootstrap: expected an integer >= 0, got '-1'"),
    (["report", "runs/x", "--width", "0"], "argument --width: expected an integer >= 1, got '0'"),
    (["serve", "--model", "m", "--batch-size", "0"], "argument --batch-size: expected an integer >= 1, got '0'"),
    (["train", "plan", "--config", "c.yaml", "--num-processes", "0"],
     "argument --num-processes: expected an integer >= 1, got '0'"),
])
def test_other_commands_name_the_flag(capsys, argv, message):
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


def test_score_flags_are_named_and_base_options_only_for_local_judges(tmp_path, capsys):
    survey = tmp_path / "survey.md"
    survey.write_text("# A survey\n\nText.")
    judge = tmp_path / "judge.yaml"
    judge.write_text("backend: {kind: openai, options: {model: fake, base_url: 'http://127.0.0.1:9/v1'}}\n")
    with pytest.raises(SystemExit) as exit_info:
        main(["score", str(survey), "--judge", str(judge), "--out", str(tmp_path / "o"), "--samples", "0"])
    assert exit_info.value.code == 2
    assert "argument --samples: expected an integer >= 1, got '0'" in capsys.readouterr().err
    assert main(["score", str(survey), "--judge", str(judge), "--out", str(tmp_path / "o"),
                 "--quantization", "4bit"]) == 2
    assert "--quantization: only for local judges (transformers, vllm)" in capsys.readouterr().err

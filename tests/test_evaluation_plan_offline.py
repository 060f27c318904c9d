"""``surveyalign evaluate --plan`` needs no server: against a base_url where nothing listens it prints the plan and
says where its context figure came from (the backend option max_model_len, max_length, or none: the
4-characters-per-token estimate), and the figure decides which prompts are planned."""

from __future__ import annotations

from pathlib import Path

import yaml

from surveyalign.cli import main

NOWHERE = "http://127.0.0.1:9/v1"  # the discard port: nothing listens


def _config(dataset: Path, out: Path) -> Path:
    path = out / "offline.yaml"
    path.write_text(yaml.safe_dump({
        "name": "offline", "dataset": str(dataset), "output_dir": str(out), "progress": False, "limit": 1,
        "backend": {"kind": "openai", "options": {"model": "gpt-5.2", "base_url": NOWHERE, "api_key_env": None}},
        "generation": {"max_new_tokens": 512}}))
    return path


def _plan(capsys, *argv: str) -> tuple[list[str], str]:
    """The plan's lines and its whole text with the console's line wrapping undone."""
    assert main(["evaluate", *argv, "--plan"]) == 0
    out = capsys.readouterr().out
    return out.splitlines(), " ".join(out.split())


def test_plan_needs_no_server_and_names_its_context_source(dataset_dir, tmp_path, capsys):
    config = str(_config(dataset_dir, tmp_path))
    # without a server, a max_model_len option, max_length or tokenizer: no context, 4 characters per token
    out, text = _plan(capsys, "--config", config)
    assert "plan: 4 call(s) to make (0 already answered in the run folder)" in out
    lines = {line.split(":")[0].strip(): line for line in out if line.startswith("  ") and " call(s), " in line}
    # prompt tokens per unit: ceil(characters / 4) of the prompt, e.g. readability 1,069 (+ 512 max_new_tokens)
    assert lines["readability"].startswith("  readability: 1 call(s), 1,069 + 512 tokens")
    assert lines["structure"].startswith("  structure: 1 call(s), 1,038 + 512 tokens")
    assert ("context (no server asked): readability, structure, comprehensiveness, criticalness: none known "
            "without a server (no max_model_len option, max_length or tokenizer): prompt tokens estimated at 4 "
            "characters per token, no prompt refused for its length") in text

    # the backend option: 1,560 tokens refuse readability (1,069 + 512 = 1,581 > 1,560) and keep structure
    # (1,038 + 512 = 1,550), comprehensiveness (1,041 + 512) and criticalness (1,044 + 512)
    out, text = _plan(capsys, "--config", config, "--set", "backend.options.max_model_len=1560")
    assert "plan: 3 call(s) to make (0 already answered in the run folder)" in out
    assert not any(line.startswith("  readability: ") for line in out)
    assert ("context (no server asked): readability, structure, comprehensiveness, criticalness: 1,560 tokens "
            "from backend option max_model_len") in text

    # max_length from the command line is the context figure when the backend has no option
    out, text = _plan(capsys, "--config", config, "--max-length", "1560")
    assert "plan: 3 call(s) to make (0 already answered in the run folder)" in out
    assert ("context (no server asked): readability, structure, comprehensiveness, criticalness: 1,560 tokens "
            "from max_length (config)") in text


def test_the_run_itself_still_asks_the_server(dataset_dir, tmp_path, capsys):
    assert main(["evaluate", "--config", str(_config(dataset_dir, tmp_path))]) == 2
    assert f"no server answers at {NOWHERE}/models" in capsys.readouterr().err

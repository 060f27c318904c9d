"""The top-level `surveyalign` command: subcommand registry, exit codes, one-line errors."""

from __future__ import annotations

import pytest

from surveyalign.cli import build_parser, main


def test_every_subcommand_group_is_registered():
    import argparse

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    assert {"demo", "data", "prompts", "evaluate", "report", "metrics", "serve", "train"} <= set(sub.choices)


def test_no_command_prints_help_and_exits_zero(capsys):
    assert main([]) == 0
    assert "usage: surveyalign" in capsys.readouterr().out


def test_user_error_is_one_line_with_exit_2(capsys, tmp_path):
    bad = tmp_path / "demo.yaml"
    bad.write_text("dimension: novelty\n")
    assert main(["demo", "--config", str(bad)]) == 2
    err = capsys.readouterr().err
    assert f"surveyalign demo: error: ValueError: {bad}: invalid demo config: dimension: unknown dimension 'novelty'" in err
    assert "Traceback" not in err


def test_traceback_flag_reraises(tmp_path):
    bad = tmp_path / "demo.yaml"
    bad.write_text("dimension: novelty\n")
    with pytest.raises(ValueError, match="novelty"):
        main(["--traceback", "demo", "--config", str(bad)])

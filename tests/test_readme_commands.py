"""Every command shown in README.md exists: `--help` exits 0 for each, and `make` targets are defined."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def _readme_commands() -> list[str]:
    """Shell lines inside ```bash / ```sh / ```console blocks of README.md (prompt '$ ' stripped)."""
    text = (REPO / "README.md").read_text()
    lines: list[str] = []
    for block in re.findall(r"```(?:bash|sh|console|shell)\n(.*?)```", text, flags=re.DOTALL):
        for line in block.splitlines():
            line = line.strip()
            line = line.removeprefix("$ ")
            if line and not line.startswith("#"):
                lines.append(line.split(" #")[0].strip())
    return lines


COMMANDS = _readme_commands()


def _subcommand_words(words: list[str]) -> list[str]:
    """The leading words of ``words`` that name (nested) subcommands of the real ``surveyalign`` parser."""
    import argparse

    from surveyalign.cli import build_parser

    parser, chain = build_parser(), []
    for word in words:
        actions = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if not actions or word not in actions[0].choices:
            break
        chain.append(word)
        parser = actions[0].choices[word]
    return chain


def _help_argv(cmd: str) -> list[str] | None:
    """The argv that checks ``cmd`` exists, or None for lines that are not our commands."""
    argv = shlex.split(cmd)
    while argv and "=" in argv[0] and not argv[0].startswith("-"):  # VAR=value prefixes
        argv = argv[1:]
    if not argv:
        return None
    head = argv[0]
    if head == "surveyalign":
        return [str(BIN / "surveyalign"), *_subcommand_words(argv[1:]), "--help"]
    if head == "accelerate" and len(argv) > 1 and argv[1] == "launch":
        script = next(a for a in argv[2:] if a.endswith(".py"))
        return [sys.executable, str(REPO / script), "--help"]
    if head == "python" and len(argv) > 1 and argv[1].endswith(".py"):
        return [sys.executable, str(REPO / argv[1]), "--help"]
    if head == "make":
        return ["make", "-n", *argv[1:2]]
    return None


def test_readme_has_the_two_commands():
    assert "make demo" in COMMANDS
    assert "make test" in COMMANDS


@pytest.mark.parametrize("cmd", [c for c in COMMANDS if _help_argv(c)])
def test_readme_command_exists(cmd):
    argv = _help_argv(cmd)
    proc = subprocess.run(argv, check=False, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"{cmd!r} -> {argv}: exit {proc.returncode}\n{proc.stderr[-2000:]}"
    if argv[-1] == "--help":
        assert "usage" in proc.stdout.lower()


def test_every_repository_path_in_readme_exists():
    text = (REPO / "README.md").read_text()
    paths = set(re.findall(r"(?<![\w/])((?:configs|recipes|metrics|benchmarks|hub_cards|surveyalign)/[\w./-]+\w)", text))
    paths = {p for p in paths if "NAME" not in p}
    assert "configs/sft/readability.yaml" in paths
    missing = sorted(p for p in paths if not (REPO / p).exists())
    assert not missing, f"README.md names paths that do not exist: {missing}"

"""The code and docs say what is; the history of a change lives in git.

No "issue N" reference in the package, the recipes, the metric scripts, the configs, the README or the Hub cards,
and no re-export kept only under an earlier name (a ``# noqa: F401`` import of a ``surveyalign`` name).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FOLDERS = ("surveyalign", "recipes", "metrics", "configs", "hub_cards")
ISSUE = re.compile(r"issue [0-9]+")
SUFFIXES = {".py", ".yaml", ".yml", ".md", ".txt", ".json", ".j2", ".toml"}


def _files() -> list[Path]:
    found = [REPO / "README.md"]
    for folder in FOLDERS:
        for root, dirs, names in os.walk(REPO / folder):  # links (resources/ -> hub_cards/) not followed
            dirs[:] = [d for d in dirs if d != "__pycache__"]
            found += [Path(root, n) for n in names if Path(n).suffix in SUFFIXES]
    return sorted(found)


def _issue_lines(path: Path) -> list[str]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return [f"{path.relative_to(REPO)}:{i}" for i, line in enumerate(lines, 1) if ISSUE.search(line)]


def test_no_issue_numbers_in_code_configs_or_docs():
    files = _files()
    assert len(files) > 300  # every folder was read: 266 modules, 57 configs, the cards, the README
    assert [where for path in files for where in _issue_lines(path)] == []


def test_the_scan_would_see_one(tmp_path):
    (tmp_path / "x.py").write_text('"""Reads the file (ok).\n\nFixed in issue 21 A."""\n', encoding="utf-8")
    path = tmp_path / "x.py"
    assert [ISSUE.search(line) is not None for line in path.read_text().splitlines()] == [False, False, True]
    assert not ISSUE.search("trl#4416, https://github.com/huggingface/trl/issues/4416")


def test_no_noqa_reexport_of_a_package_name():
    """``# noqa: F401`` marks only an availability check (``import aiohttp``), never a name kept importable from a
    second module."""
    found = []
    for path in sorted((REPO / "surveyalign").rglob("*.py")):
        for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if "noqa: F401" in line and not line.lstrip().startswith("import "):
                found.append(f"{path.relative_to(REPO)}:{i}: {line.strip()}")
    assert found == []

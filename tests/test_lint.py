"""`ruff check` is clean with the rules configured in pyproject.toml, over every Python folder of the project."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def test_ruff_is_clean_with_the_configured_rules():
    ruff = shutil.which("ruff") or str(Path(sys.executable).parent / "ruff")
    if not Path(ruff).exists():
        pytest.skip("ruff is not installed (it comes with the dev extra: pip install -e '.[dev]')")
    proc = subprocess.run([ruff, "check", "--no-cache", "surveyalign", "recipes", "metrics", "tests", "benchmarks"],
                          cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]

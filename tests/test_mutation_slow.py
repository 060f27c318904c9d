"""CI's mutation check (issue 27, slow): mutmut on ``surveyalign/autoraters/sxs.py`` (160 mutants, 1 equivalent
ignored) with its covering tests must keep a score >= 95%.

sxs.py is the smallest of the issue's modules whose covering tests are quick (about 97 s for the whole run with two
workers on a 2-core machine at load 6); the run stages its copy under the test's tmp folder.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.slow


def test_sxs_mutation_score_at_least_95(tmp_path):
    pytest.importorskip("mutmut", reason="mutmut (dev extra) is not installed: pip install -e .[dev]")
    start = time.monotonic()
    out = subprocess.run([sys.executable, str(REPO / "benchmarks" / "mutation.py"), "--module",
                          "surveyalign/autoraters/sxs.py", "--max-children", "2", "--min-score", "95",
                          "--stage-dir", str(tmp_path)], cwd=REPO, capture_output=True, text=True, check=False,
                         timeout=600)
    elapsed = time.monotonic() - start
    assert out.returncode == 0, f"{out.stdout[-3000:]}\n{out.stderr[-3000:]}"
    assert "module surveyalign/autoraters/sxs.py:" in out.stdout and "score " in out.stdout
    # ~97 s measured with 2 workers on a 2-core machine at load 6; 300 s leaves a 3x margin for slower CI
    assert elapsed < 300, f"mutation check took {elapsed:.0f} s"

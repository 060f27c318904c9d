"""``.ci/run`` exits with the test command's status, whatever the background Label Studio preparation did.

The script is run for real with ``make`` and ``python3`` replaced on PATH by small shell stubs (the real ones
would install the project and run this suite), ``CI=true`` so that the background preparation starts, and
``chromium`` / ``chromedriver`` stubs so that apt-get is not called. Stop 29's CI exited 1 after 1551 tests
passed: the preparation had already finished, ``kill`` failed in the EXIT trap, and ``set -e`` made that the
script's exit status.
"""

from __future__ import annotations

import shutil
import stat
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _stub(folder: Path, name: str, body: str) -> None:
    path = folder / name
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


def _run_ci(tmp_path: Path, make_body: str, prepare_body: str) -> subprocess.CompletedProcess:
    if shutil.which("bash") is None:
        pytest.skip("bash is not installed: .ci/run is a bash script (apt-get install bash)")
    repo = tmp_path / "repo"
    (repo / ".ci").mkdir(parents=True)
    shutil.copy(ROOT / ".ci" / "run", repo / ".ci" / "run")
    stubs = tmp_path / "bin"
    stubs.mkdir()
    _stub(stubs, "make", make_body)
    _stub(stubs, "python3", prepare_body)
    _stub(stubs, "chromium", "exit 0")
    _stub(stubs, "chromedriver", "exit 0")
    env = {
        "PATH": f"{stubs}:/usr/bin:/bin",
        "HOME": str(tmp_path / "home"),
        "CI": "true",
        "SURVEYALIGN_CACHE": str(tmp_path / "cache"),
    }
    return subprocess.run(
        ["bash", str(repo / ".ci" / "run")], env=env, capture_output=True, text=True, timeout=60, check=False
    )


def test_ci_passes_when_the_preparation_finished_before_the_tests(tmp_path):
    # the preparation ends at once; the "tests" take longer and pass: the EXIT trap's kill finds no process
    done = _run_ci(tmp_path, make_body="sleep 1; echo tests-ran; exit 0", prepare_body="exit 0")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "tests-ran" in done.stdout


def test_ci_passes_and_stops_a_preparation_still_running(tmp_path):
    marker = tmp_path / "prepare-ended"
    done = _run_ci(tmp_path, make_body="exit 0", prepare_body=f"sleep 30; touch {marker}")
    assert done.returncode == 0, done.stdout + done.stderr
    assert not marker.exists()


@pytest.mark.parametrize("status", [1, 2])
def test_ci_exits_with_the_test_commands_status(tmp_path, status):
    done = _run_ci(tmp_path, make_body=f"sleep 1; exit {status}", prepare_body="exit 0")
    assert done.returncode == status, done.stdout + done.stderr

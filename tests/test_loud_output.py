"""Output that stays readable and honest (issue 11): tables keep their width when piped, rates only over real
work."""

from __future__ import annotations

import io
import json

import yaml

from surveyalign.cli import main
from surveyalign.console import PIPED_WIDTH, make_console
from surveyalign.testing import FakeChatServer


def test_piped_console_is_not_80_columns(monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)
    assert make_console(file=io.StringIO()).width == PIPED_WIDTH == 200
    monkeypatch.setenv("COLUMNS", "150")
    assert make_console(file=io.StringIO()).width == 150
    assert make_console(97, file=io.StringIO()).width == 97


def _yaml(tmp_path, dataset_dir, backend) -> str:
    path = tmp_path / "judge.yaml"
    path.write_text(yaml.safe_dump({"name": "judge with a rather long name for the leaderboard",
                                    "dataset": str(dataset_dir), "output_dir": str(tmp_path / "runs"),
                                    "progress": False, "bootstrap": 0, "limit": 2, "backend": backend}))
    return str(path)


def test_evaluate_tables_are_not_wrapped_when_piped_and_baselines_show_no_rate(tmp_path, dataset_dir, capsys,
                                                                               monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)
    cfg = _yaml(tmp_path, dataset_dir, {"kind": "constant", "options": {"score": -1}})
    assert main(["evaluate", "--config", cfg]) == 0
    out = capsys.readouterr().out  # captured: not a terminal
    status_rows = [line for line in out.splitlines() if "readability" in line and "│" in line]
    # each table row is on one line (an 80-column console splits the judge's name and the columns over lines)
    assert status_rows and max(len(line) for line in out.splitlines()) > 80
    assert "judge with a rather long name for the leaderboard" in out
    # a constant judge does no work: no calls/s figure (it would read ~20000 calls/s)
    assert "calls/s" not in out
    metrics = json.loads((tmp_path / "runs" / "judge-with-a-rather-long-name-for-the-leaderboard" /
                          "metrics.json").read_text())
    assert metrics["harness"]["calls"]["calls_per_s"] is None


def test_rate_counts_only_the_calls_made(tmp_path, dataset_dir, capsys):
    with FakeChatServer(delay=0.2, replies=["Fine.$$$-1$$$"]) as server:
        cfg = _yaml(tmp_path, dataset_dir, {"kind": "openai", "options": {
            "base_url": server.base_url, "model": "fake-judge", "api_key_env": None, "concurrency": 1}})
        assert main(["evaluate", "--config", cfg]) == 0
        capsys.readouterr()
        run = tmp_path / "runs" / "judge-with-a-rather-long-name-for-the-leaderboard"
        lines = (run / "calls.jsonl").read_text().splitlines()
        (run / "calls.jsonl").write_text("\n".join(lines[:-1]) + "\n")  # one call to make again
        assert main(["evaluate", "--config", cfg]) == 0
    out = capsys.readouterr().out
    calls = json.loads((run / "metrics.json").read_text())["harness"]["calls"]
    assert (calls["made"], calls["cached"]) == (1, len(lines) - 1)
    # one call of 0.2 s: at most 5 calls/s; the cached calls would have made it thousands
    assert 0 < calls["calls_per_s"] <= 5.0
    assert f"[{calls['calls_per_s']:.1f} calls/s over the 1 made]" in out

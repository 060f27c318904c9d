"""`surveyalign data build|stats|push` through the real console entry point (in-process)."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

from surveyalign.cli import main
from surveyalign.data.stats import dataset_stats, render_stats

FIXTURES = Path(__file__).parent / "fixtures" / "data"


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("cli") / "surveyreview"
    assert main(["data", "build", "--official", str(FIXTURES / "per_dimension"), "--out", str(out), "--seed", "42"]) == 0
    return out


def test_build_prints_summary(built, capsys, tmp_path):
    out = tmp_path / "again"
    assert main(["data", "build", "--official", str(FIXTURES / "per_dimension"), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "5 papers, 7 reviews, 19 units" in printed
    assert "excluded: score 0 7, score -3 2; missing texts: 1 (3 units)" in printed
    # e5 has no text in the fixture; its three kept units (readability, structure, criticalness) are listed
    assert "  articles without text: e5\n" in printed
    assert "  units without text: e5-r1::criticalness, e5-r1::readability, e5-r1::structure\n" in printed
    assert ("1 texts cleaned (0 top boxes, 1 appended review records, 0 running headers); gold snippets still in "
            "the inputs: 0 verbatim, 0 near-verbatim (before guard: 2 / 2)") in printed


def test_missing_ids_are_cut_after_five():
    from surveyalign.data.cli import first_ids

    ids = [f"p{i}" for i in range(7)]
    assert first_ids(ids, 7) == "p0, p1, p2, p3, p4 ... 2 more, see build_report.json"
    assert first_ids(ids[:2], 2) == "p0, p1"
    # the report lists at most 200 ids: the count of the rest comes from the total, not the list
    assert first_ids(ids, 250).endswith("... 245 more, see build_report.json")


def test_build_flags_are_recorded(tmp_path):
    out = tmp_path / "out"
    code = main(["data", "build", "--official", str(FIXTURES / "per_dimension"), "--out", str(out),
                 "--no-leakage-guard", "--seed", "3", "--drop-missing-text"])
    assert code == 0
    report = json.loads((out / "build_report.json").read_text())
    assert report["seed"] == 3 and report["leakage_guard"]["enabled"] is False
    assert report["missing_text"]["policy"] == "dropped from data files"


def test_build_error_exit_code(tmp_path, capsys):
    bad = tmp_path / "bad"
    (bad / "testset").mkdir(parents=True)
    (bad / "testset" / "readability.json").write_text(json.dumps([{"uid": "x", "score": 7, "reasons": []}]))
    assert main(["data", "build", "--official", str(bad), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "readability.json, record 0 (0-based, uid x), field 'score'" in err


def test_stats_numbers(built):
    stats = dataset_stats(built)
    read = stats["dimensions"]["readability"]
    # readability scores -1 (a1), +1 (b2), -1 (c3), -1 (e5), -1 (f6): mean -0.6, population std 0.8
    assert read["n"] == 5 and read["distribution"] == {"-2": 0, "-1": 4, "1": 1, "2": 0}
    assert read["mean"] == pytest.approx(-0.6) and read["std"] == pytest.approx(0.8)
    assert read["avg_rationales"] == pytest.approx(1.0)
    crit = stats["dimensions"]["criticalness"]
    # +2, -1, -1, +1, -2: mean -0.2, variance 10.8 / 5; rationale counts 1, 1, 3, 1, 1
    assert crit["mean"] == pytest.approx(-0.2) and crit["std"] == pytest.approx(math.sqrt(2.16))
    assert crit["avg_rationales"] == pytest.approx(1.4)
    comp = stats["dimensions"]["comprehensiveness"]
    assert comp["mean"] == pytest.approx(-0.75) and comp["avg_rationales"] == pytest.approx(1.25)
    assert stats["overall"]["n"] == 19
    assert stats["per_source"] == {
        "f1000": {"papers": 2, "reviews": 3, "units": 8},
        "moprd": {"papers": 1, "reviews": 2, "units": 6},
        "openreview": {"papers": 1, "reviews": 1, "units": 3},
        "unknown": {"papers": 1, "reviews": 1, "units": 2},
    }
    assert sum(read["per_split"].values()) == 5
    # e5 has no article text: its readability, structure and criticalness units are kept with text == ""
    assert {d: v["n_without_text"] for d, v in stats["dimensions"].items()} == {
        "readability": 1, "structure": 1, "comprehensiveness": 0, "criticalness": 1}
    assert stats["overall"]["n_without_text"] == 3


def test_stats_cli(built, capsys):
    assert main(["data", "stats", str(built), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["overall"]["n"] == 19
    assert main(["data", "stats", str(built)]) == 0
    table = capsys.readouterr().out
    assert "readability" in table and "openreview" in table
    from rich.console import Console

    console = Console(width=80, record=True)
    console.print(render_stats(dataset_stats(built)))
    text = console.export_text()
    assert "comprehensiveness" in text and "tr/va/te" in text and "…" not in text
    assert re.search(r"readability\s+5\s+0\s+4\s+1\s+0\s+-0\.60\s+0\.80\s+1\.00\s", text)
    assert "3 units have no survey text" in " ".join(text.split())
    assert main(["data", "stats", str(FIXTURES)]) == 2


def test_push_dry_run_and_validation(built, capsys, monkeypatch):
    assert main(["data", "push", str(built), "--repo-id", "my-org/surveyreview", "--dry-run"]) == 0
    listing = capsys.readouterr().out.splitlines()
    # 11 data files (comprehensiveness has no unit in one of validation/test) + README.md + build_report.json
    assert listing[0] == "dry run: would upload 13 files to datasets/my-org/surveyreview:"
    assert "  README.md" in listing and "  data/readability/train.parquet" in listing
    assert main(["data", "push", str(built), "--repo-id", "not a repo id", "--dry-run"]) == 2
    assert "ORG/NAME" in capsys.readouterr().err
    assert main(["data", "push", str(FIXTURES), "--repo-id", "org/x", "--dry-run"]) == 2
    assert "no README.md" in capsys.readouterr().err
    monkeypatch.delenv("SURVEYALIGN_TEST_NO_TOKEN", raising=False)
    assert main(["data", "push", str(built), "--repo-id", "org/x", "--token-env", "SURVEYALIGN_TEST_NO_TOKEN"]) == 2
    assert "no Hugging Face token in $SURVEYALIGN_TEST_NO_TOKEN" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [["data", "--help"], ["data", "build", "--help"], ["data", "stats", "--help"],
                                  ["data", "push", "--help"]])
def test_help(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 0
    assert "usage: surveyalign data" in capsys.readouterr().out


def test_importing_the_package_stays_light():
    import subprocess
    import sys

    code = ("import sys, surveyalign.data, surveyalign.data.cli; "
            "print(sorted(m for m in ('datasets', 'numpy', 'pyarrow', 'huggingface_hub') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"

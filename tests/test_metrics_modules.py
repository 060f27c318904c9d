"""The `evaluate` modules in metrics/: load by path offline, doctests, None handling, bare-name registration."""

from __future__ import annotations

import doctest
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

evaluate = pytest.importorskip("evaluate", reason="the `evaluate` package (a surveyalign dependency) is not installed: pip install -e .")

NAMES = ("survey_alignment", "rqs", "has", "ssr", "prism", "citation_f1")


@pytest.fixture
def at_repo_root(repo_root, monkeypatch):
    monkeypatch.chdir(repo_root)
    return repo_root


@pytest.mark.parametrize("name", NAMES)
def test_module_doctests(name, at_repo_root):
    """Every example in each module's _KWARGS_DESCRIPTION runs and gives the exact printed result."""
    metric = evaluate.load(f"metrics/{name}")
    module = sys.modules[type(metric).__module__]
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE, verbose=False)
    assert result.attempted >= 5, f"{name}: too few doctest examples ({result.attempted})"
    assert result.failed == 0, f"{name}: {result.failed} doctest example(s) failed"


@pytest.mark.parametrize("name", NAMES)
def test_module_card_and_info(name, repo_root, at_repo_root):
    card = (repo_root / "metrics" / name / "README.md").read_text()
    assert card.startswith("---\n")
    assert f'evaluate.load("metrics/{name}")' in card and f'evaluate.load("{name}")' in card
    assert "surveyalign metrics register" in card and "a wheel install has them too" in " ".join(card.split())
    requirements = (repo_root / "metrics" / name / "requirements.txt").read_text().split()
    assert "surveyalign" in requirements and any(r.startswith("evaluate") for r in requirements)
    info = evaluate.load(f"metrics/{name}").info
    assert info.citation.lstrip().startswith("@") and info.description.strip() and info.inputs_description.strip()


def test_has_module_matches_pure_function_and_batches_with_none(at_repo_root):
    from surveyalign.scoring import (
        alignment_errors,
        human_aligned_score,
        reason_quality,
    )

    preds = [-1, 1, None, 2, -1, None]
    refs = [-1, -1, 1, 2, 1, -2]
    dims = ["readability", "readability", "structure", "structure", "criticalness", "criticalness"]
    cons = [0.4, 0.0, None, 1.0, 0.2, None]
    has = evaluate.load("metrics/has")
    for i in range(0, len(preds), 2):  # batches containing None predictions and None consistency
        has.add_batch(predictions=preds[i:i + 2], references=refs[i:i + 2], dimensions=dims[i:i + 2],
                      consistency=cons[i:i + 2])
    got = has.compute()
    err = alignment_errors(preds, refs, dims)
    expected = human_aligned_score(err["avg_mse"], err["avg_mae"], reason_quality(cons, dims)["rqs"])
    assert got["has"] == pytest.approx(expected["has"])
    assert (got["n"], got["n_scored"], got["n_failed"]) == (6, 4, 2)
    assert got["per_dimension"]["structure"]["n_failed"] == 1
    # a run without consistency ratings: the no_consistency config; HAS is None with a reason, Align is there
    without = evaluate.load("metrics/has", "no_consistency")
    plain = without.compute(predictions=preds, references=refs, dimensions=dims)
    assert plain["has"] is None and "RQS" in plain["has_note"] and plain["align"] == pytest.approx(expected["align"])
    without.add(prediction=None, reference=1, dimensions="readability")
    assert without.compute()["n_failed"] == 1
    with pytest.raises(ValueError, match="inputs are missing: \\['consistency'\\]"):
        has.compute(predictions=preds, references=refs, dimensions=dims)  # the default config needs the column
    with pytest.raises(ValueError, match="unknown config 'rqs'"):
        evaluate.load("metrics/has", "rqs")


def test_survey_alignment_keeps_none_as_failure(at_repo_root):
    metric = evaluate.load("metrics/survey_alignment")
    out = metric.compute(predictions=[None, None, -1], references=[1, 2, -1],
                         dimensions=["structure", "structure", "readability"])
    assert out["per_dimension"]["structure"]["n_failed"] == 2
    assert out["per_dimension"]["structure"]["mse"] is None
    assert out["avg_mse"] == 0.0 and out["avg_dimensions"] == ["readability"]


def _run_python(code: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=180, check=False)


def test_register_makes_bare_names_load_offline(tmp_path):
    """In a fresh process with a clean HF_MODULES_CACHE and no metrics/ folder in its cwd, a bare
    `evaluate.load("has")` fails; after `surveyalign metrics register` (default cache = $HF_MODULES_CACHE)
    the real evaluate loader resolves all three bare names offline."""
    cache = tmp_path / "modules"
    env = {**os.environ, "HF_MODULES_CACHE": str(cache), "HF_EVALUATE_OFFLINE": "1", "HF_HUB_OFFLINE": "1",
           "HF_DATASETS_OFFLINE": "1"}
    code = """
        import json, time, evaluate
        try:
            evaluate.load("has")
            before = "loaded"
        except FileNotFoundError:
            before = "FileNotFoundError"
        from surveyalign.cli import main
        assert main(["metrics", "register"]) == 0
        t = time.time()
        has = evaluate.load("has")
        load_s = time.time() - t
        out = has.compute(predictions=[-1, 1, -1, -2], references=[-1, -1, -1, -2],
                          dimensions=["readability"] * 2 + ["structure"] * 2, consistency=[0.6, 0.0, 0.8, 1.0])
        rqs = evaluate.load("rqs").compute(consistency=[0.2, 0.4], dimensions=["criticalness"] * 2)
        sa = evaluate.load("survey_alignment").compute(predictions=[1], references=[-1], dimensions=["structure"])
        print(json.dumps({"before": before, "has": out["has"], "rqs": rqs["rqs"], "mse": sa["avg_mse"],
                          "load_s": load_s, "module": type(has).__module__}))
    """
    proc = _run_python(code, tmp_path, env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["before"] == "FileNotFoundError"
    assert got["has"] == pytest.approx(0.825) and got["rqs"] == pytest.approx(0.3) and got["mse"] == 4.0
    assert got["module"].startswith("evaluate_modules.metrics.evaluate-metric--has.")
    for name in NAMES:
        assert list((cache / "evaluate_modules" / "metrics" / f"evaluate-metric--{name}").glob(f"*/{name}.py"))


def test_register_reports_missing_source(tmp_path, capsys):
    from surveyalign.cli import main

    assert main(["metrics", "register", "--cache", str(tmp_path / "c"), "--source", str(tmp_path)]) == 2
    assert "metric module not found" in capsys.readouterr().err
    assert main(["metrics", "register", "--cache", str(tmp_path / "c"), "--source", str(tmp_path / "nope")]) == 2
    assert "is not a folder" in capsys.readouterr().err


def test_modules_are_package_data_and_register_without_source(tmp_path, capsys):
    """The modules ship inside the package (surveyalign/resources/metrics, copied into a wheel), so registering
    needs no checkout: every module and its card are found there."""
    from surveyalign.cli import main
    from surveyalign.paths import resource_path
    from surveyalign.scoring import registry

    shipped = resource_path("metrics")
    assert registry.default_metrics_dir() == shipped
    for name in NAMES:
        assert (shipped / name / f"{name}.py").is_file() and (shipped / name / "requirements.txt").is_file()
    assert main(["metrics", "register", "--cache", str(tmp_path / "c")]) == 0
    printed = capsys.readouterr().out
    assert [line.split(":")[0] for line in printed.splitlines()[:len(NAMES)]] == [f"registered {n}" for n in NAMES]


def test_register_help_mentions_source(capsys):
    from surveyalign.cli import main

    with pytest.raises(SystemExit):
        main(["metrics", "register", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "ship with the package" in text and "also in a wheel" in text and "--source DIR" in text


def test_prism_module_configs_match_column_functions_with_batches(at_repo_root):
    from surveyalign.prism import depth_by_review, flaws_by_reviewer, novelty_by_review

    depth = evaluate.load("metrics/prism", "depth")
    rows = {"review_ids": ["a", "a", "b", "b", "b"], "roles": ["claim", "premise", "premise", "premise", "claim"],
            "aspects": ["soundness", "clarity", "other", "soundness", "clarity"], "grounding": [None, 2, 0, None, None]}
    for i in range(0, 5, 2):
        depth.add_batch(**{k: v[i:i + 2] for k, v in rows.items()})
    got = depth.compute()
    want = depth_by_review(rows["review_ids"], rows["roles"], rows["aspects"], rows["grounding"])
    assert got["doa"] == pytest.approx(want["doa"]) and got["per_review"]["b"]["n_graded"] == 1
    novelty = evaluate.load("metrics/prism", "novelty")
    out = novelty.compute(review_ids=["a", "b"], claim_ids=["c", "c"], scores=[2, None], relevance=[0.5, None],
                          policy="top1")
    assert out == novelty_by_review(["a", "b"], ["c", "c"], [2, None], [0.5, None], policy="top1")
    assert out["per_review"]["b"]["claim_scores"] == [0.0] and out["ns"] == pytest.approx((1.0 + 0.5) / 2)
    flaws = evaluate.load("metrics/prism", "flaws")
    out = flaws.compute(flaw_ids=["F1", "F2"], severities=["minor", "minor"], valid=[True, None],
                        raised_by=[["R1"], ["R10"]], reviewer_ids=["R1", "R10"])
    assert out["per_reviewer"]["R1"]["minor_recall"] == 1.0 and out["critical_recall"] is None
    assert out == flaws_by_reviewer(["F1", "F2"], ["minor", "minor"], [True, None], [["R1"], ["R10"]], ["R1", "R10"])
    with pytest.raises(ValueError, match="unknown config"):
        evaluate.load("metrics/prism", "novel")

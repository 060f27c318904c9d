"""Reproducible judge identities and drift: two scripted runs of "the same" API judge on the same units
(``surveyalign/scoring/drift.py``, ``surveyalign/evaluation/identity.py``, ``report --drift``, ``--check-drift``)."""

from __future__ import annotations

import itertools
import json

import pytest

from surveyalign.backends import load_backend
from surveyalign.backends.base import Generation
from surveyalign.cli import main
from surveyalign.evaluation import EvalConfig, run_evaluation
from surveyalign.scoring import drift_statistics


def _judge(scores, fingerprint="fp_a", served="judge-2026-01"):
    """A scripted API judge: the i-th call answers scores[i] (then -1), with the server's identity fields."""
    counter = itertools.count()

    def reply(messages, settings, index):
        i = next(counter)
        score = scores[i] if i < len(scores) else -1
        return Generation(f"Reason {i}.$$${score}$$$", "stop", None, served_model=served, system_fingerprint=fingerprint)

    return load_backend("scripted", replies=reply)


def _run(tmp_path, dataset_dir, name, backend, **kw):
    config = EvalConfig.model_validate({
        "name": "api judge", "dataset": str(dataset_dir), "split": "test", "dimensions": ["readability"],
        "backend": {"kind": "openai", "options": {"model": "judge", "base_url": "http://127.0.0.1:9/v1"}},
        "generation": {"temperature": 0.0, "max_new_tokens": 32}, "output_dir": str(tmp_path), "run_name": name,
        "progress": False, "bootstrap": 0})
    return run_evaluation(config, backend=backend, **kw)


def test_two_scripted_runs_drift(tmp_path, dataset_dir, capsys):
    a = _run(tmp_path, dataset_dir, "a", _judge([]))
    b = _run(tmp_path, dataset_dir, "b", _judge([1, 1]))  # the first two units now answer +1
    c = _run(tmp_path, dataset_dir, "c", _judge([], fingerprint="fp_c", served="judge-2026-03"))
    run_config = json.loads((a.run_dir / "run_config.json").read_text())
    ident = run_config["identity"]
    n = len(a.predictions)
    assert ident["model"] == "judge" and ident["served_models"] == {"judge-2026-01": n}
    assert ident["system_fingerprints"] == {"fp_a": n} and ident["package_version"] == run_config["surveyalign_version"]
    assert ident["prompt_version"]["protocol"] == "v1.0" and ident["price_table_date"] == "2026-12-01"
    refs = [p["reference"] for p in a.predictions[:2]]
    # by hand: only the first two units change (-1 -> +1); the MSE shift is their change in squared error over n
    shift = sum((1 - r) ** 2 - (-1 - r) ** 2 for r in refs) / n
    res = drift_statistics(a.predictions, b.predictions,
                           identity_a=ident, identity_b=json.loads((b.run_dir / "run_config.json").read_text())["identity"])
    assert (res["n_both_scored"], res["n_changed"]) == (n, 2) and res["share_changed"] == pytest.approx(2 / n)
    assert res["changes"] == {"-1->+1": 2} and res["mse_shift"] == pytest.approx(shift)
    assert res["identity_differs"] is False and res["verdict"] == "drift: same recorded identity, scores changed"
    assert res["insufficient"].startswith("insufficient data")  # the sample's test split has fewer than 10 papers
    assert main(["report", str(a.run_dir), str(c.run_dir), "--drift", "--json", str(tmp_path / "d.json")]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "different judge identity" in out and "system_fingerprints.fp_a: " in out
    d = json.loads((tmp_path / "d.json").read_text())["drift"]
    assert d["n_changed"] == 0 and d["identity_differs"] is True
    fields = {x["field"] for x in d["identity_differences"]}
    assert {"served_models.judge-2026-01", "served_models.judge-2026-03", "system_fingerprints.fp_c"} <= fields
    assert main(["report", str(a.run_dir), "--drift"]) == 2
    assert "exactly two RUN_DIRs" in capsys.readouterr().err


def test_check_drift_rejudges_stored_units(tmp_path, dataset_dir):
    _run(tmp_path, dataset_dir, "a", _judge([]))
    # the same folder again, the judge now answers +1 to the first three calls: 3 of the 4 re-judged units changed
    again = _run(tmp_path, dataset_dir, "a", _judge([1, 1, 1]), check_drift=4)
    drift = json.loads((again.run_dir / "run_config.json").read_text())["check_drift"]
    assert (drift["n_rejudged"], drift["n_changed"], drift["n_failed"]) == (4, 3, 0)
    assert [c["now"] for c in drift["changed"]] == [1, 1, 1] and all(c["stored"] == -1 for c in drift["changed"])
    # the run itself still reads the stored answers (the re-judged ones are not cached)
    assert all(p["prediction"] == -1 for p in again.predictions if p["status"] == "scored")
    first = _run(tmp_path, dataset_dir, "fresh", _judge([]), check_drift=2)
    assert json.loads((first.run_dir / "run_config.json").read_text())["check_drift"]["n_rejudged"] == 0

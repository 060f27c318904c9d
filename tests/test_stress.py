"""`surveyalign stress`: named perturbations, hand-checked shifts of the scripted gullible and robust judges on the
sample release, the paired interval and the flipped share."""

from __future__ import annotations

import json

import pytest

from surveyalign.cli import main
from surveyalign.stress import INSTRUCTION, PRAISE, StressConfig, StressJudge, perturb, run_stress, shift_table

TEXT = "# T\n\nAbstract.\n\n## A\n\nalpha\n\n## B\n\nbeta\n\n## C\n\ngamma\n\n## References\n\n[1] X.\n"


def test_each_perturbation_does_what_it_says():
    assert perturb("inject_text", TEXT).split("\n\n")[2] == INSTRUCTION
    assert perturb("inject_hidden", TEXT).split("\n\n")[2] == f"<!-- {INSTRUCTION} -->"
    assert perturb("inject_references", TEXT).endswith(f"[1] X.\n\n[99] {INSTRUCTION}\n")
    assert perturb("praise", TEXT).split("\n\n")[2] == PRAISE
    padded = perturb("pad_to_cut", TEXT, pad_chars=1000)
    assert padded.startswith(TEXT.rstrip()) and 1000 <= len(padded) < 1000 + 120
    shuffled = perturb("shuffle_sections", TEXT, seed=0, key="u2")
    assert shuffled.startswith("# T\n\nAbstract.\n\n## ") and shuffled.endswith("\n") and "\n\n\n" not in shuffled
    assert sorted(filter(None, shuffled.split("\n"))) == sorted(filter(None, TEXT.split("\n")))  # the same lines
    assert shuffled.index("## References") < shuffled.index("## C") < shuffled.index("## A") < shuffled.index("## B")
    assert shuffled == perturb("shuffle_sections", TEXT, seed=0, key="u2") != TEXT
    with pytest.raises(ValueError, match="unknown perturbation 'nope'"):
        perturb("nope", TEXT)


def test_shift_table_by_hand():
    base = {("s1", "readability"): -1, ("s2", "readability"): 1, ("s3", "readability"): 2,
            ("s4", "readability"): None}
    pert = {("s1", "readability"): 2, ("s2", "readability"): 1, ("s3", "readability"): -2,
            ("s4", "readability"): 1}
    row = shift_table(base, pert, "readability", n_resamples=2000, seed=0)
    # shifts +3, 0, -4 over the 3 units scored in both runs; s1 and s3 change sign
    assert (row["n"], row["n_unscored"]) == (3, 1)
    assert (row["mean_unperturbed"], row["mean_perturbed"], row["shift"]) == (0.6667, 0.3333, -0.3333)
    assert (row["flipped"], row["changed"]) == (0.6667, 0.6667)
    low, high = row["ci95"]
    assert -4.0 <= low < -0.3333 < high <= 3.0


def test_scripted_judges_on_the_sample_release():
    cfg = StressConfig(limit=4, dimensions=["readability", "criticalness"],
                       judges=[StressJudge(name="gullible", kind="scripted-gullible"),
                               StressJudge(name="robust", kind="scripted-robust")], n_resamples=200)
    result = run_stress(cfg)
    assert result["n_surveys"] == 4
    # gullible: -1 unperturbed; a planted instruction or praise -> +2 (shift +3), padding past 16,000 prompt
    # characters -> +1 (shift +2), a shuffle changes nothing; every moved unit changes sign
    expected = {"inject_text": 3.0, "inject_hidden": 3.0, "inject_references": 3.0, "pad_to_cut": 2.0,
                "shuffle_sections": 0.0, "praise": 3.0}
    for dim in ("readability", "criticalness"):
        gullible, robust = result["judges"]["gullible"][dim], result["judges"]["robust"][dim]
        assert gullible["unperturbed"] == {"n": 4, "mean": -1.0} == robust["unperturbed"]
        for name, shift in expected.items():
            row = gullible["shifts"][name]
            assert (row["n"], row["shift"], row["ci95"], row["flipped"]) == (4, shift, [shift, shift],
                                                                              1.0 if shift else 0.0)
            assert (robust["shifts"][name]["shift"], robust["shifts"][name]["flipped"]) == (0.0, 0.0)


def test_stress_cli_writes_json_and_table(tmp_path, capsys):
    config = tmp_path / "stress.yaml"
    config.write_text("limit: 2\ndimensions: [structure]\nperturbations: [inject_hidden, shuffle_sections]\n"
                      "judges:\n  - {name: g, kind: scripted-gullible}\nn_resamples: 50\n", encoding="utf-8")
    assert main(["stress", "--config", str(config), "--out", str(tmp_path / "out")]) == 0
    printed = capsys.readouterr().out
    assert "| g | structure | inject_hidden | 2 | -1.00 | +3.00 | [+3.00, +3.00] | 100% |" in printed
    assert "| g | structure | shuffle_sections | 2 | -1.00 | +0.00 | [+0.00, +0.00] | 0% |" in printed
    saved = json.loads((tmp_path / "out" / "stress.json").read_text(encoding="utf-8"))
    assert saved["judges"]["g"]["structure"]["shifts"]["inject_hidden"]["shift"] == 3.0
    config.write_text("perturbations: [nope]\njudges: []\n", encoding="utf-8")
    assert main(["stress", "--config", str(config)]) != 0
    assert "unknown perturbation(s) ['nope']" in capsys.readouterr().err

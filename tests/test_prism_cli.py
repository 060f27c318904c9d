"""`surveyalign prism` from the command line: --help, bad input as one line, and a whole run through
`surveyalign serve` with the tiny model (its answers are not JSON: every one is counted, the run completes)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from surveyalign.cli import main

FIXTURES = Path(__file__).parent / "fixtures" / "prism"


def test_prism_help(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["prism", "--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert "--judge" in out and "NAME=PATH" in out and "comparison.md" in out


def test_prism_bad_submission_date_names_the_flag(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["prism", "p.json", "r.json", "--judge", "j.yaml", "--submission-date", "27/09/2024"])
    assert exc.value.code == 2 and "--submission-date: expected YYYY-MM-DD" in capsys.readouterr().err


def test_prism_bad_inputs_are_one_line_errors(tmp_path, capsys):
    judge = tmp_path / "judge.yaml"
    judge.write_text("backend: {kind: scripted, options: {replies: []}}\nnot_a_key: 1\n")
    assert main(["prism", str(FIXTURES / "iclr_paper.json"), str(FIXTURES / "iclr_reviews.json"),
                 "--judge", str(judge)]) == 2
    assert "not_a_key" in capsys.readouterr().err
    judge.write_text("backend: {kind: scripted, options: {replies: []}}\nnovelty: {enabled: false}\n")
    bad = tmp_path / "reviews.json"
    bad.write_text(json.dumps([{"reviewer_id": "R1", "source": "robot", "summary": "fine"}]))
    assert main(["prism", str(FIXTURES / "iclr_paper.json"), str(bad), "--judge", str(judge),
                 "--out", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert str(bad) in err and "record 0 (R1)" in err and "source" in err


def test_prism_through_serve_with_the_tiny_model(tiny_model_dir, tmp_path, capsys):
    from surveyalign.backends.server import serve_in_thread

    with serve_in_thread(model=str(tiny_model_dir), device="cpu") as server:
        judge = tmp_path / "judge.yaml"
        judge.write_text(yaml.safe_dump({
            "backend": {"kind": "openai", "options": {"base_url": server.base_url, "model": server.model,
                                                      "api_key_env": None, "max_retries": 0}},
            "generation": {"max_new_tokens": 16}, "novelty": {"enabled": False}}))
        argv = ["prism", str(FIXTURES / "iclr_paper.json"), str(FIXTURES / "iclr_reviews.json"),
                f"ToyReviewer={FIXTURES / 'toy_system_review.txt'}", "--judge", str(judge),
                "--out", str(tmp_path / "run"), "--no-progress"]
        # 11+ of 12 answers unreadable: at least three stages have no usable extraction -> exit 3 (issue 21)
        assert main(argv) == 3
        first = capsys.readouterr()
        assert main(argv) == 3  # resumed
        second = capsys.readouterr().out
    run = tmp_path / "run"
    extraction = json.loads((run / "extraction.json").read_text())
    counts = extraction["counts"]
    answers = sum(c["answers"] for c in counts.values())
    assert answers == 12  # 4 steps x 3 reviews; no flaw parsed, so nothing to merge or validate
    failed = sum(c["parse_failed"] + c["api_error"] for c in counts.values())
    parsed = sum(c["parsed"] for c in counts.values())
    assert failed + parsed == answers and len(extraction["failures"]) == failed
    assert failed >= 11  # random weights never write a full JSON object in 16 tokens
    assert all(f["reason"] for f in extraction["failures"])
    paper = json.loads((run / "paper.json").read_text())
    assert paper["n_failed_extractions"] == failed and paper["n_reviews"] == 3 and paper["n_human"] == 2
    for name in ("Reviewer_aB1", "Reviewer_cD2", "toy_system_review"):
        review = json.loads((run / "reviews" / f"{name}.json").read_text())
        assert review["ns"] is None and review["errors"]["novelty"]  # truncated claims, or novelty off
    assert f"unparseable or failed extractions: {failed}" in first.out
    assert "ToyReviewer (Δ vs human)" in first.out and "skipped" in first.err  # the meta-review note
    # resumed: the parsed answers come from calls.jsonl, the failed ones are asked again (issue 21 C)
    assert f"calls: {failed} made, {parsed} cached" in second
    assert f"answers: {parsed} reused, {failed} retried" in second
    config = json.loads((run / "run_config.json").read_text())
    assert config["judge"]["backend"]["kind"] == "openai" and config["grounding_rubric"]["name"] == "seed"

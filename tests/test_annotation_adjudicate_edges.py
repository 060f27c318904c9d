"""Adjudication edges (issue 27), every figure by hand: each rule of a final label (agreed, single annotator, third
decision, unresolved, LLM unverified, not annotated) with its snippets and annotators, human labels before the LLM's,
the report's counts and order, and the decisions file: its columns, blank / zero / bad finals, row numbers, names
trimmed and lower-cased (SurveyReview §4.3, App. A.2)."""

from __future__ import annotations

import csv

import pytest

from surveyalign.annotation import disagreements, final_labels, read_decisions
from surveyalign.annotation.adjudicate import write_disagreements


def _dim(label, *snippets):
    return {"label": label, "snippets": [{"text": s} for s in snippets]}


def _human(review_id, annotator, **dims):
    rec = {"review_id": review_id, "dimensions": dims}
    if annotator is not None:
        rec["annotator"] = annotator
    return rec


HUMAN = [
    # given out of annotator order: units list their annotators sorted by name
    _human("r1", "c", readability=_dim(1, "clear prose", "easy"), structure=_dim(-1, "odd order"),
           comprehensiveness=_dim(2, "broad"), criticalness=_dim(None)),
    _human("r1", "a", readability=_dim(1, "easy", "well written"), structure=_dim(-2, "chaotic"),
           comprehensiveness=_dim(-1, "gaps")),
    _human("r2", "b", readability=_dim(-3), structure=_dim(0)),
    _human("r3", None, criticalness=_dim(-1)),  # no annotator recorded: "?"
]


def test_disagreements_sorted_units_and_label_names():
    assert disagreements(HUMAN) == [
        {"review_id": "r1", "dimension": "comprehensiveness", "final": "", "note": "", "labels": "a=-1; c=+2"},
        {"review_id": "r1", "dimension": "structure", "final": "", "note": "", "labels": "a=-2; c=-1"}]


def test_every_rule_with_its_snippets_and_the_report():
    llm = [
        {"review_id": "r1", "annotator": "llm", "dimensions": {"readability": {"label": -2, "snippets": []}}},
        {"review_id": "r4", "annotator": "llm", "dimensions": {
            "readability": {"label": 2, "snippets": [
                {"text": "Very  clear.", "span": "Very clear.", "verbatim": True},
                {"text": "Not in the review.", "verbatim": False, "span": None},
                {"text": "Lucid", "verbatim": True}, {"text": "no flag"}]},
            "structure": {"label": 1, "snippets": []}, "criticalness": {"label": None, "snippets": []}}},
    ]
    decisions = {("r1", "structure"): 0, ("r1", "readability"): -2, ("r9", "structure"): 1}
    finals, report = final_labels(HUMAN, llm, decisions=decisions, allow_llm=True)
    assert finals == {
        # both gave +1: agreed (the decision for it is ignored); snippets of both, each once, annotator order
        ("r1", "readability"): {"label": 1, "rule": "agreed", "snippets": ["easy", "well written", "clear prose"],
                                "annotators": ["a", "c"]},
        # the third person chose a label neither gave: no annotator's snippet supports it
        ("r1", "structure"): {"label": 0, "rule": "third_decision", "snippets": [], "annotators": ["a", "c"]},
        ("r1", "comprehensiveness"): {"label": None, "rule": "unresolved", "snippets": [], "annotators": ["a", "c"]},
        ("r2", "readability"): {"label": -3, "rule": "single_annotator", "snippets": [], "annotators": ["b"]},
        ("r2", "structure"): {"label": 0, "rule": "single_annotator", "snippets": [], "annotators": ["b"]},
        ("r3", "criticalness"): {"label": -1, "rule": "single_annotator", "snippets": [], "annotators": ["?"]},
        # only the snippets verified verbatim, as the review's own span when there is one
        ("r4", "readability"): {"label": 2, "rule": "llm_unverified", "snippets": ["Very clear.", "Lucid"],
                                "annotators": ["llm"]},
        ("r4", "structure"): {"label": 1, "rule": "llm_unverified", "snippets": [], "annotators": ["llm"]},
    }
    assert report == {
        "units": 8,
        "rules": {"agreed": 1, "single_annotator": 3, "third_decision": 1, "llm_unverified": 2, "unresolved": 1,
                  "not_annotated": 0},
        "released_labels": {"+1": 2, "+2": 1, "-1": 1, "-3": 1, "0": 2},
        "llm_snippets_dropped_not_verbatim": 2,
        # r3 criticalness -1 and r4 structure +1 have no snippet; 0 and -3 need none
        "released_nonzero_without_snippet": 2,
    }
    assert list(report["rules"]) == ["agreed", "single_annotator", "third_decision", "llm_unverified", "unresolved",
                                     "not_annotated"]
    assert list(report["released_labels"]) == ["+1", "+2", "-1", "-3", "0"]


def test_llm_units_without_permission_are_not_annotated():
    llm = [{"review_id": "r4", "dimensions": {"readability": {"label": 2, "snippets": [
        {"text": "x", "verbatim": False}]}}}]
    finals, report = final_labels([], llm)
    assert finals == {("r4", "readability"): {"label": None, "rule": "not_annotated", "snippets": [],
                                              "annotators": []}}
    assert report["rules"]["not_annotated"] == 1 and report["llm_snippets_dropped_not_verbatim"] == 0
    assert (report["released_labels"], report["released_nonzero_without_snippet"]) == ({}, 0)
    assert final_labels([], []) == ({}, {"units": 0, "rules": dict.fromkeys(
        ("agreed", "single_annotator", "third_decision", "llm_unverified", "unresolved", "not_annotated"), 0),
        "released_labels": {}, "llm_snippets_dropped_not_verbatim": 0, "released_nonzero_without_snippet": 0})


def test_three_annotators_two_against_one_take_the_decided_labels_snippets():
    human = [_human("r1", name, structure=_dim(label, f"{name}'s span")) for name, label in
             (("z", 1), ("x", 1), ("y", -1))]
    finals, report = final_labels(human, decisions={("r1", "structure"): 1})
    assert finals[("r1", "structure")] == {"label": 1, "rule": "third_decision",
                                           "snippets": ["x's span", "z's span"], "annotators": ["x", "y", "z"]}
    assert report["released_nonzero_without_snippet"] == 0


def test_records_without_snippets_and_an_annotator_twice():
    # a record may carry no snippet list at all; one person may have annotated a task twice: counted once, the
    # first labelling kept (as the agreement table counts them)
    human = [_human("r1", "a", readability={"label": 1}), _human("r1", "a", readability=_dim(1, "second look"))]
    llm = [{"review_id": "r2", "dimensions": {"structure": {"label": -1}}}]
    finals, report = final_labels(human, llm, allow_llm=True)
    assert finals == {("r1", "readability"): {"label": 1, "rule": "single_annotator", "snippets": [],
                                              "annotators": ["a"]},
                      ("r2", "structure"): {"label": -1, "rule": "llm_unverified", "snippets": [],
                                            "annotators": ["llm"]}}
    # r1 (the first labelling has no snippet) and r2 (the LLM's)
    assert (report["released_nonzero_without_snippet"], report["llm_snippets_dropped_not_verbatim"]) == (2, 0)


def _write(path, text):
    path.write_text(text, encoding="utf-8")
    return path


def test_read_decisions_rows_names_and_errors(tmp_path, ascii_locale):
    path = _write(tmp_path / "d.csv", "review_id,dimension,labels,final,note\n"
                                      "r1,readability,a=+1; b=-1,+1,\n"
                                      "r1,structure,a=0; b=-1,,undecided\n"
                                      " r2 ,  Structure ,a=0; b=-1,0,\n"
                                      "r3,criticalness,a=-2; b=-1,  ,\n"
                                      "r4,comprehensiveness,a=-3; b=-1, -2 ,\n"
                                      "r5,criticalness,zoë=+1; b=-1,-1,décidé\n")
    assert read_decisions(path) == {("r1", "readability"): 1, ("r2", "structure"): 0,
                                    ("r4", "comprehensiveness"): -2, ("r5", "criticalness"): -1}
    assert read_decisions(_write(tmp_path / "empty.csv", "")) == {}
    assert read_decisions(_write(tmp_path / "header.csv", "review_id,dimension,final\n")) == {}
    with pytest.raises(ValueError, match=r"needs the columns review_id, dimension, final"):
        read_decisions(_write(tmp_path / "cols.csv", "review_id,final\nr1,+1\n"))
    bad = _write(tmp_path / "bad.csv", "review_id,dimension,final\nr1,readability,+1\nr2,structure,+3\n")
    with pytest.raises(ValueError) as err:
        read_decisions(bad)
    assert str(err.value) == (f"{bad}: row 3 (r2, structure): field final '+3' is not one of -3, -2, -1, 0, +1, +2")
    with pytest.raises(FileNotFoundError):
        read_decisions(tmp_path / "none.csv")


def test_write_disagreements_columns_and_round_trip(tmp_path, ascii_locale):
    path = tmp_path / "disagreements.csv"
    zoe = [_human("r0", "zoë", structure=_dim(1)), _human("r0", "b", structure=_dim(-1))]
    write_disagreements(path, [*disagreements(HUMAN + zoe), {"review_id": "r9", "dimension": "structure"}])
    text = path.read_text(encoding="utf-8")
    assert text.splitlines()[0] == "review_id,dimension,labels,final,note"
    rows = list(csv.DictReader(text.splitlines()))
    assert rows[-1] == {"review_id": "r9", "dimension": "structure", "labels": "", "final": "", "note": ""}
    assert [r["labels"] for r in rows[:2]] == ["b=-1; zoë=+1", "a=-1; c=+2"]
    assert read_decisions(path) == {}  # nothing decided yet

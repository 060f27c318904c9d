"""A re-run keeps what a person wrote, and the agreement report says what it compares (issues 21 A, 24).

Every figure by hand: the person's cells of ``verification.csv`` (``data identify``) and of ``disagreements.csv``
(``data agreement``) survive a re-run, filled rows of candidates / units no longer listed are kept and counted;
plain-text reports take their candidate's source; the LLM-vs-human table names the units it compares and those it
leaves out, with the reason; the overall row says it pools the dimensions (SurveyReview §4.1, §4.3, App. A.2)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from annotation_fixtures import write_inputs

from surveyalign.cli import main


def _rows(path: Path) -> list[dict[str, str]]:
    return list(csv.DictReader(path.read_text(encoding="utf-8").splitlines()))


def _write_rows(path: Path, rows: list[dict[str, str]], columns: list[str]) -> None:
    with path.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)


def test_identify_rerun_keeps_the_persons_cells_and_rows_no_longer_listed(tmp_path, capsys):
    inputs = write_inputs(tmp_path)
    out = tmp_path / "identified"
    assert main(["data", "identify", "--candidates", str(inputs["candidates"]), "--out", str(out)]) == 0
    verification = out / "verification.csv"
    rows = _rows(verification)
    assert [r["id"] for r in rows] == ["5501", "fOr3st", "8120", "lit2024", "9999", "7777"]
    assert rows[0]["keyword_match"] == "yes"  # "systematic", "review"
    filled = {"5501": ("yes", "yes", "two referee reports", "ana"), "lit2024": ("y", "yes", "", "ana"),
              "7777": ("no", "", "not a survey", "bo")}
    for row in rows:
        row["confirmed"], row["substantive_reviews"], row["note"], row["checked_by"] = filled.get(row["id"],
                                                                                                  ("", "", "", ""))
    _write_rows(verification, rows, [*rows[0]])
    # the re-run: another keyword list (the machine columns change) and 7777 no longer a candidate
    lines = inputs["candidates"].read_text(encoding="utf-8").splitlines()
    fewer = tmp_path / "fewer.csv"
    fewer.write_text("\n".join(line for line in lines if not line.startswith("7777,")) + "\n", encoding="utf-8")
    capsys.readouterr()
    assert main(["data", "identify", "--candidates", str(fewer), "--keywords", "survey", "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert (f"{verification}: carried over the person's cells of 2 row(s); kept 1 filled row(s) of candidates no "
            "longer listed (at the end of the file)") in err
    again = {r["id"]: r for r in _rows(verification)}
    assert list(again) == ["5501", "fOr3st", "8120", "lit2024", "9999", "7777"]
    assert [*again["5501"]][-1] == "checked_by"  # the person's own column is kept, after ours
    assert (again["5501"]["confirmed"], again["5501"]["substantive_reviews"], again["5501"]["note"],
            again["5501"]["checked_by"]) == ("yes", "yes", "two referee reports", "ana")
    assert again["5501"]["keyword_match"] == "no" and again["fOr3st"]["keyword_match"] == "yes"  # updated
    assert (again["lit2024"]["confirmed"], again["lit2024"]["checked_by"]) == ("y", "ana")
    assert (again["7777"]["confirmed"], again["7777"]["note"], again["7777"]["checked_by"]) == ("no", "not a survey",
                                                                                                "bo")
    assert all(again[k]["confirmed"] == "" for k in ("fOr3st", "8120", "9999"))
    report = json.loads((out / "identify_report.json").read_text())
    assert report["verification_carried_over"] == {"rows_with_person_cells": 2, "kept_not_listed": 1}
    # collect still finds the person's 2 confirmed papers: 5501's 2 referee reports and lit2024's one
    assert main(["data", "collect", str(inputs["reviews"]), "--verification", str(verification),
                 "--out", str(tmp_path / "collected")]) == 0
    collected = json.loads((tmp_path / "collected" / "collect_report.json").read_text())
    assert (collected["surveys"], collected["reviews"]) == (2, 3)
    assert collected["verification"]["total"] == {"rows": 6, "confirmed": 2, "rejected": 1, "unchecked": 3,
                                                  "no_substantive_reviews": 0}


def test_identify_refuses_a_verification_file_without_ids(tmp_path, capsys):
    inputs = write_inputs(tmp_path)
    out = tmp_path / "identified"
    out.mkdir()
    (out / "verification.csv").write_text("paper,confirmed\n5501,yes\n", encoding="utf-8")
    assert main(["data", "identify", "--candidates", str(inputs["candidates"]), "--out", str(out)]) == 2
    assert f"{out / 'verification.csv'}: has no 'id' column" in capsys.readouterr().err
    assert (out / "verification.csv").read_text(encoding="utf-8") == "paper,confirmed\n5501,yes\n"  # untouched


def test_plain_text_reports_take_their_candidates_source(tmp_path):
    reviews = tmp_path / "reviews"
    for paper in ("p1", "p4", "q9"):
        (reviews / paper).mkdir(parents=True)
        (reviews / paper / "referee.txt").write_text(f"The survey {paper} covers the field well but misses two "
                                                     "recent benchmarks.\n", encoding="utf-8")
    candidates = tmp_path / "candidates.csv"
    candidates.write_text("id,title,source\np1,A survey of sleep,f1000\np4,Bats: a review,moprd\n"
                          "q9,Graphs: a survey,\n", encoding="utf-8")
    out = tmp_path / "identified"
    assert main(["data", "identify", "--candidates", str(candidates), "--out", str(out)]) == 0
    rows = _rows(out / "verification.csv")
    for row in rows:
        row["confirmed"] = row["substantive_reviews"] = "yes"
    _write_rows(out / "verification.csv", rows, [*rows[0]])
    # --text-source is only the fallback of a paper whose candidate names no source (q9)
    assert main(["data", "collect", str(reviews), "--verification", str(out / "verification.csv"), "--text-source",
                 "openreview", "--out", str(tmp_path / "c1")]) == 0
    got = [json.loads(x) for x in (tmp_path / "c1" / "reviews.jsonl").read_text().splitlines()]
    assert [(r["review_id"], r["source"], r["paper_id"]) for r in got] == [
        ("f1000-p1-1-r1", "f1000", "f1000-p1"), ("moprd-p4-1-r1", "moprd", "moprd-p4"),
        ("openreview-q9-1-r1", "openreview", "openreview-q9")]
    report = json.loads((tmp_path / "c1" / "collect_report.json").read_text())
    assert report["plain_text_reports_source_from"] == {"candidate": 2, "text_source": 1, "unknown": 0}
    assert {s: c["surveys"] for s, c in report["per_source"].items()} == {"f1000": 1, "moprd": 1, "openreview": 1}
    surveys = [json.loads(x) for x in (tmp_path / "c1" / "surveys.jsonl").read_text().splitlines()]
    assert [(s["paper_id"], s["source"], s["title"]) for s in surveys] == [
        ("f1000-p1", "f1000", "A survey of sleep"), ("moprd-p4", "moprd", "Bats: a review"),
        ("openreview-q9", "openreview", "Graphs: a survey")]
    # without candidates.jsonl the verification file's source column is enough; no fallback: unknown
    (out / "candidates.jsonl").unlink()
    assert main(["data", "collect", str(reviews), "--verification", str(out / "verification.csv"),
                 "--out", str(tmp_path / "c2")]) == 0
    got = [json.loads(x)["review_id"] for x in (tmp_path / "c2" / "reviews.jsonl").read_text().splitlines()]
    assert got == ["f1000-p1-1-r1", "moprd-p4-1-r1", "unknown-q9-1-r1"]
    report = json.loads((tmp_path / "c2" / "collect_report.json").read_text())
    assert report["plain_text_reports_source_from"] == {"candidate": 2, "text_source": 0, "unknown": 1}


def _human(path: Path, labels: dict[tuple[str, str], dict[str, int]]) -> Path:
    records: dict[tuple[str, str], dict] = {}
    for (rid, dim), by in labels.items():
        for who, label in by.items():
            rec = records.setdefault((rid, who), {"review_id": rid, "annotator": who, "dimensions": {}})
            rec["dimensions"][dim] = {"label": label, "snippets": []}
    path.write_text("".join(json.dumps(r) + "\n" for r in records.values()), encoding="utf-8")
    return path


def test_agreement_rerun_keeps_notes_and_says_which_units_the_llm_is_compared_on(tmp_path, capsys):
    llm = tmp_path / "annotated"
    llm.mkdir()
    machine = {("r1", "structure"): 1, ("r1", "readability"): 2, ("r2", "structure"): -2, ("r2", "readability"): -1,
               ("r3", "structure"): 1}
    by_review: dict[str, dict] = {}
    for (rid, dim), label in machine.items():
        by_review.setdefault(rid, {"review_id": rid, "dimensions": {}})["dimensions"][dim] = {"label": label}
    (llm / "annotations.jsonl").write_text("".join(json.dumps(r) + "\n" for r in by_review.values()))
    labels = {("r1", "structure"): {"A": 1, "B": -1}, ("r1", "readability"): {"A": 2, "B": 2},
              ("r2", "structure"): {"A": -1, "B": -2}, ("r2", "readability"): {"A": 1, "B": 1},
              ("r3", "readability"): {"A": 1}}
    human = _human(tmp_path / "people.jsonl", labels)
    out = tmp_path / "agreement"
    cmd = ["data", "agreement", "--human", str(human), "--llm", str(llm), "--bootstrap", "0", "--out", str(out)]
    assert main(cmd) == 0
    rep = json.loads((out / "agreement.json").read_text())
    lh = rep["tables"]["LLM vs human"]
    # compared: r1 readability (2, 2) and r2 readability (-1, +1); the two disagreements wait for a third person
    assert lh["scope"]["units_compared"] == 2 and list(lh["rows"]) == ["readability", "overall"]
    assert (lh["rows"]["readability"]["units"], lh["rows"]["readability"]["disagreements"]) == (2, 1)
    assert lh["scope"]["left_out"] == {"annotators_disagree_no_third_decision": 2, "no_human_label": 1,
                                       "no_llm_label": 1}
    assert lh["scope"]["left_out_units"] == {
        "annotators_disagree_no_third_decision": [["r1", "structure"], ["r2", "structure"]],
        "no_human_label": [["r3", "structure"]], "no_llm_label": [["r3", "readability"]]}
    assert rep["llm_vs_human_scope"] == lh["scope"]
    md = (out / "agreement.md").read_text()
    assert ("Compares the LLM's label against the final human label (annotators agreed, a single annotator, or a "
            "third decision): 2 units; left out: 2 annotators disagree no third decision, 1 no human label, 1 no llm "
            "label.") in md
    hh = rep["tables"]["human vs human"]
    assert hh["overall_is"].startswith("pooled over dimensions")
    assert [(d, r["units"], r["disagreements"]) for d, r in hh["rows"].items()] == [
        ("readability", 2, 0), ("structure", 2, 2), ("overall", 4, 2)]
    assert "| Overall (pooled over dimensions) | 4 | 2 | 50.00%" in md and "| Overall |" not in md
    # the third person decides one unit, notes both, and adds a column of their own
    rows = _rows(out / "disagreements.csv")
    assert [(r["review_id"], r["dimension"], r["labels"]) for r in rows] == [
        ("r1", "structure", "A=+1; B=-1"), ("r2", "structure", "A=-1; B=-2")]
    rows[0].update(final="+1", note="the order is praised twice", decided_by="cam")
    rows[1].update(note="ask the editor", decided_by="cam")
    _write_rows(out / "disagreements.csv", rows, [*rows[0]])
    capsys.readouterr()
    assert main(cmd) == 0
    assert (f"{out / 'disagreements.csv'}: carried over the person's cells of 2 row(s); kept 0 filled row(s)"
            in capsys.readouterr().err)
    again = _rows(out / "disagreements.csv")
    assert [(r["review_id"], r["final"], r["note"], r["decided_by"]) for r in again] == [
        ("r1", "+1", "the order is praised twice", "cam"), ("r2", "", "ask the editor", "cam")]
    lh = json.loads((out / "agreement.json").read_text())["tables"]["LLM vs human"]
    assert lh["scope"]["units_compared"] == 3 and lh["scope"]["left_out"] == {
        "annotators_disagree_no_third_decision": 1, "no_human_label": 1, "no_llm_label": 1}
    assert (lh["rows"]["structure"]["units"], lh["rows"]["structure"]["disagreements"]) == (1, 0)  # +1 vs +1
    # B changes their mind on r2 structure: no longer a disagreement, but the filled row stays (counted)
    _human(human, {**labels, ("r2", "structure"): {"A": -1, "B": -1}})
    assert main(cmd) == 0
    assert ("carried over the person's cells of 1 row(s); kept 1 filled row(s) of units no longer in disagreement"
            in capsys.readouterr().err)
    again = _rows(out / "disagreements.csv")
    assert [(r["review_id"], r["labels"], r["final"], r["note"]) for r in again] == [
        ("r1", "A=+1; B=-1", "+1", "the order is praised twice"), ("r2", "A=-1; B=-2", "", "ask the editor")]

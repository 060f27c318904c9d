"""Agreement as in SurveyReview Table 5 (App. A.2) on a made-up double annotation, with every figure computed by
hand here; the Label Studio format round trip (labeling config, tasks with the LLM answer as predictions, export
read back with several annotators); adjudication rules."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

from surveyalign.annotation import (
    ReviewRecord,
    agreement_table,
    alpha,
    disagreements,
    export_tasks,
    final_labels,
    import_export,
    labeling_config,
    pair_labels,
    render_table,
    sample_units,
    unit_labels,
)

# Two annotators A and B. Readability: 4 units; Structure: 5 units (one with -3).
PAIRS = {
    "readability": [(1, 1), (1, -1), (-1, -1), (-2, -2)],
    "structure": [(-1, -1), (-1, -2), (2, 1), (0, -1), (-3, -1)],
}


def test_alpha_by_hand():
    # Readability, interval: pooled values {1: 3, -1: 3, -2: 2}, n = 8. D_o = (2 ordered pairs x 2^2) / 8 = 1.
    # D_e = (3*3*4*2 + 3*2*9*2 + 3*2*1*2) / (8*7) = 192/56. alpha = 1 - 56/192 = 17/24.
    assert alpha(PAIRS["readability"], "interval") == pytest.approx(17 / 24, abs=1e-6)
    # ordinal over -2,-1,0,1,2 with n_-2=2, n_-1=3, n_0=0, n_1=3: delta(-1,1)=(3+0+3-3)^2=9, delta(-2,1)=(8-2.5)^2,
    # delta(-2,-1)=(5-2.5)^2. D_o = 2*9/8 = 2.25; D_e = (3*3*9 + 2*3*30.25 + 2*3*6.25)*2/56 = 600/56 -> 1 - 0.21.
    assert alpha(PAIRS["readability"], "ordinal") == pytest.approx(0.79, abs=1e-6)
    # Structure, interval: -3 is missing, so 4 pairable units: values {-1: 4, -2: 1, 2: 1, 1: 1, 0: 1}, n = 8.
    # D_o = 2*(1 + 1 + 1)/8 = 0.75 (-1/-2, 2/1, 0/-1 differ by one each).
    # D_e: sum over value pairs of n_c n_k (c-k)^2, both orders: -1/-2 4*1*1, -1/2 4*1*9, -1/1 4*1*4, -1/0 4*1*1,
    # -2/2 16, -2/1 9, -2/0 4, 2/1 1, 2/0 4, 1/0 1 -> 4+36+16+4+16+9+4+1+4+1 = 95, x2 = 190; / 56.
    assert alpha(PAIRS["structure"], "interval") == pytest.approx(1 - 0.75 / (190 / 56), abs=1e-6)
    assert alpha([(1, 1), (1, 1)], "interval") is None  # one value only: undefined, not 1 or 0
    assert alpha([(-3, 1)], "ordinal") is None


def test_table_counts_by_hand():
    table = agreement_table(PAIRS, n_boot=200, seed=1)
    rows = table["rows"]
    assert (rows["readability"]["units"], rows["readability"]["disagreements"], rows["readability"]["rate"]) == (4, 1, 0.25)
    assert (rows["structure"]["units"], rows["structure"]["disagreements"], rows["structure"]["rate"]) == (5, 4, 0.8)
    assert rows["overall"]["units"] == 9 and rows["overall"]["disagreements"] == 5
    assert rows["overall"]["rate"] == pytest.approx(5 / 9, abs=1e-6)
    # readability 1 vs -1 is one level (-2<-1<+1<+2); structure: -1/-2 one, 2/1 one, 0/-1 with 0, -3/-1 with -3
    assert rows["readability"]["distance"] == {"one_level": 1, "two_levels": 0, "three_levels": 0,
                                               "with_not_mentioned": 0, "with_unjudgeable": 0}
    assert rows["structure"]["distance"] == {"one_level": 2, "two_levels": 0, "three_levels": 0,
                                             "with_not_mentioned": 1, "with_unjudgeable": 1}
    # the numeric reading: readability 1 vs -1 differs by 2; structure -1/-2 and 2/1 by 1 (0 and -3 left out)
    assert rows["readability"]["score_difference"] == {"1": 0, "2": 1, "3": 0, "4": 0}
    assert rows["structure"]["score_difference"] == {"1": 2, "2": 0, "3": 0, "4": 0}
    assert rows["overall"]["score_difference"] == {"1": 2, "2": 1, "3": 0, "4": 0}
    assert agreement_table({"criticalness": [(-2, 2), (2, -1), (-2, 1)]}, n_boot=0)["rows"]["criticalness"][
        "score_difference"] == {"1": 0, "2": 0, "3": 2, "4": 1}
    assert rows["structure"]["confusion"]["-3"]["-1"] == 1 and rows["structure"]["confusion"]["+2"]["+1"] == 1
    assert sum(sum(r.values()) for r in rows["overall"]["confusion"].values()) == 9
    lo, hi = rows["overall"]["ci"]["rate"]
    assert 0 <= lo <= 5 / 9 <= hi <= 1
    assert rows["readability"]["alpha_interval"] == pytest.approx(17 / 24, abs=1e-6)
    md = render_table(table, "A vs B")
    assert "| Readability | 4 | 1 | 25.00%" in md and "| Overall (pooled over dimensions) | 9 | 5 | 55.56%" in md
    with pytest.raises(ValueError, match="structure: unit 0: labels \\(3, 1\\)"):
        agreement_table({"structure": [(3, 1)]}, n_boot=0)


def test_sample_units_is_seeded_per_dimension():
    units = [(f"r{i}", d) for i in range(100) for d in ("readability", "structure")]
    a = sample_units(units, n=70, seed=3)
    assert len(a) == 140 and a == sample_units(units, n=70, seed=3)
    assert sum(u[1] == "structure" for u in a) == 70
    assert a != sample_units(units, n=70, seed=4)
    assert len(sample_units(units[:10], n=70)) == 10  # fewer than n: all of them


def _llm_record(review_id: str, text: str) -> dict:
    start = text.index("hard to read")
    return {"review_id": review_id, "paper_id": "p", "source": "f1000", "annotator": "llm", "dimensions": {
        "readability": {"label": -1, "snippets": [
            {"text": "hard to read", "status": "exact", "start": start, "end": start + 12, "score": 100.0,
             "verbatim": True, "span": "hard to read"},
            {"text": "never said", "status": "missing", "start": None, "end": None, "score": 20.0, "verbatim": False,
             "span": None}]},
        "structure": {"label": 0, "snippets": []},
        "comprehensiveness": {"label": None, "snippets": []},
        "criticalness": {"label": 2, "snippets": []}}}


def test_label_studio_format_round_trip():
    config = ET.fromstring(labeling_config())
    choices = config.findall("Choices")
    assert [c.get("name") for c in choices] == ["readability", "structure", "comprehensiveness", "criticalness"]
    assert all([x.get("value") for x in c] == ["-3", "-2", "-1", "0", "+1", "+2"] for c in choices)
    assert [x.get("value") for x in config.find("Labels")] == ["readability", "structure", "comprehensiveness",
                                                               "criticalness"]
    text = "The prose is hard to read. Good structure."
    reviews = [ReviewRecord("f1000-1-1-r1", "f1000-1", "f1000", text), ReviewRecord("f1000-1-1-r2", "f1000-1", "f1000", "x")]
    tasks = export_tasks(reviews, [_llm_record("f1000-1-1-r1", text)], titles={"f1000-1": "A survey"})
    assert "predictions" not in tasks[1]
    result = tasks[0]["predictions"][0]["result"]
    spans = [r for r in result if r["type"] == "labels"]
    assert spans == [{"id": "readability-span-0", "from_name": "rationale", "to_name": "review", "type": "labels",
                      "value": {"start": 13, "end": 25, "text": "hard to read", "labels": ["readability"]},
                      "meta": {"text": ["LLM snippet exact (score 100.0)"]}}]
    assert tasks[0]["data"]["llm_unplaced"] == "readability: never said"  # shown to the person, never a span
    assert {r["from_name"]: r["value"]["choices"] for r in result if r["type"] == "choices"} == {
        "readability": ["-1"], "structure": ["0"], "criticalness": ["+2"]}
    # the export Label Studio writes back: two annotators, one changes readability and drops the span
    second = [r for r in json.loads(json.dumps(result)) if r["type"] == "choices"]
    second[0]["value"]["choices"] = ["-2"]
    second.append({"from_name": "rationale", "to_name": "review", "type": "labels",
                   "value": {"start": 0, "end": 3, "text": "XYZ", "labels": ["structure"]}})  # text not at offsets
    export = [{"id": 1, "data": tasks[0]["data"], "annotations": [
        {"id": 1, "completed_by": 7, "result": result},
        {"id": 2, "completed_by": {"email": "b@x.org"}, "result": second},
        {"id": 3, "completed_by": 9, "result": [], "was_cancelled": True}]}]
    records, report = import_export(export)
    assert report["annotators"] == ["7", "b@x.org"] and report["cancelled"] == 1 and report["bad_spans"] == 1
    assert report["dimensions_without_choice"] == 2  # comprehensiveness of both annotators
    first = records[0]["dimensions"]
    assert first["readability"]["label"] == -1 and first["criticalness"]["label"] == 2
    assert first["readability"]["snippets"][0] | {} == {"text": "hard to read", "start": 13, "end": 25,
                                                        "status": "exact", "score": 100.0, "verbatim": True}
    assert records[1]["dimensions"]["readability"]["label"] == -2 and records[1]["dimensions"]["structure"]["snippets"] == []
    labels = unit_labels(records)
    assert labels[("f1000-1-1-r1", "readability")] == {"7": -1, "b@x.org": -2}
    a = {u: v["7"] for u, v in labels.items()}
    b = {u: v["b@x.org"] for u, v in labels.items()}
    assert pair_labels(a, b) == {"criticalness": [(2, 2)], "readability": [(-1, -2)], "structure": [(0, 0)]}
    # adjudication: the disagreement is listed; a third decision settles it; the rule is recorded
    assert disagreements(records) == [{"review_id": "f1000-1-1-r1", "dimension": "readability", "final": "",
                                       "note": "", "labels": "7=-1; b@x.org=-2"}]
    finals, rep = final_labels(records, decisions={("f1000-1-1-r1", "readability"): -1})
    assert finals[("f1000-1-1-r1", "readability")] == {"label": -1, "rule": "third_decision",
                                                       "snippets": ["hard to read"], "annotators": ["7", "b@x.org"]}
    assert finals[("f1000-1-1-r1", "structure")]["rule"] == "agreed"
    finals, rep = final_labels(records)
    assert finals[("f1000-1-1-r1", "readability")]["label"] is None and rep["rules"]["unresolved"] == 1
    with pytest.raises(ValueError, match="task 0 .*data.review or data.review_id"):
        import_export([{"id": 1, "data": {"text": "x"}}])


def test_llm_labels_enter_only_when_allowed_and_only_verbatim_snippets():
    text = "The prose is hard to read."
    llm = [_llm_record("r1", text)]
    finals, rep = final_labels([], llm)
    assert {f["rule"] for f in finals.values()} == {"not_annotated"}
    finals, rep = final_labels([], llm, allow_llm=True)
    assert finals[("r1", "readability")] == {"label": -1, "rule": "llm_unverified", "annotators": ["llm"],
                                             "snippets": ["hard to read"]}
    assert rep["llm_snippets_dropped_not_verbatim"] == 1  # the missing snippet is never released


def test_a_real_label_studio_export_with_three_annotators():
    """What Label Studio 1.23.2 exported after three people annotated the tasks of ``export_tasks`` (recorded with
    tests/fixtures/label_studio/driver_three_annotators.py): annotators are Label Studio user ids, the LLM answer
    comes back as each annotation's ``prediction``, a skipped task as a cancelled annotation."""
    from pathlib import Path

    export = json.loads((Path(__file__).parent / "fixtures" / "label_studio" / "export_three_annotators.json")
                        .read_text(encoding="utf-8"))
    text = ("The prose is hard to read in the methods part. The structure is clear and well motivated. "
            "Important recent studies are missing from the reference list.")
    reviews = [ReviewRecord(f"f1000-1-1-r{k}", "f1000-1", "f1000", text) for k in (1, 2)]
    llm = []
    for r in reviews:
        dims = {"readability": (-1, "hard to read"), "structure": (1, "The structure is clear"),
                "comprehensiveness": (-1, None), "criticalness": (0, None)}
        llm.append({"review_id": r.review_id, "dimensions": {d: {"label": lab, "snippets": [] if s is None else [
            {"text": s, "status": "exact", "start": text.index(s), "end": text.index(s) + len(s), "score": 100.0,
             "verbatim": True}]} for d, (lab, s) in dims.items()}})
    tasks = export_tasks(reviews, llm)
    # Label Studio keeps our task data and our predictions as we sent them
    assert [t["data"] for t in export] == [t["data"] for t in tasks]
    assert [t["annotations"][0]["prediction"]["result"] for t in export] == [t["predictions"][0]["result"]
                                                                            for t in tasks]
    records, report = import_export(export)
    assert {k: v for k, v in report.items() if k != "problems"} == {
        "tasks": 2, "annotations": 6, "records": 5, "annotators": ["1", "2", "3"], "cancelled": 1, "empty": 0,
        "bad_choices": 0, "bad_spans": 0, "dimensions_without_choice": 0, "duplicate_annotations": 0,
        "foreign_tasks": 0}
    assert report["problems"] == ["f1000-1-1-r2 by 3: cancelled (skipped) in Label Studio"]
    labels = unit_labels(records)
    assert labels[("f1000-1-1-r1", "readability")] == {"1": -1, "2": -2, "3": -1}
    assert labels[("f1000-1-1-r1", "structure")] == {"1": 1, "2": 1, "3": 2}
    assert labels[("f1000-1-1-r2", "structure")] == {"1": 1, "2": 1}  # 3 skipped the second task
    third = next(r for r in records if r["annotator"] == "3")["dimensions"]
    assert third["comprehensiveness"]["snippets"] == [{"text": "Important recent studies are missing", "start": 90,
                                                       "end": 126, "status": "exact", "score": 100.0,
                                                       "verbatim": True}]
    assert text[90:126] == "Important recent studies are missing"
    assert [r["labels"] for r in disagreements(records)] == ["1=-1; 2=-2; 3=-1", "1=+1; 2=+1; 3=+2"]
    # two of three agreeing is still a disagreement: it waits for a third person's decision
    finals, rep = final_labels(records)
    assert rep["rules"] == {"agreed": 6, "single_annotator": 0, "third_decision": 0, "llm_unverified": 0,
                            "unresolved": 2, "not_annotated": 0}
    assert finals[("f1000-1-1-r1", "comprehensiveness")] == {"label": -1, "rule": "agreed", "snippets": [
        "Important recent studies are missing"], "annotators": ["1", "2", "3"]}
    # pairwise agreement of annotators 1 and 2 over the 8 units both labelled: one disagreement, one level apart
    table = agreement_table(pair_labels({u: v["1"] for u, v in labels.items()},
                                        {u: v["2"] for u, v in labels.items()}), n_boot=0)
    overall = table["rows"]["overall"]
    assert (overall["units"], overall["disagreements"], overall["distance"]["one_level"]) == (8, 1, 1)


def test_confusion_matrices_rendered_by_hand():
    from surveyalign.annotation import render_confusion

    md = render_confusion(agreement_table({"structure": PAIRS["structure"]}, n_boot=0), "A vs B")
    lines = md.splitlines()
    assert lines[:6] == ["#### A vs B: confusion matrices (rows: first, columns: second)", "", "Structure:", "",
                         "| first \\ second | -3 | -2 | -1 | 0 | +1 | +2 |", "| --- | --- | --- | --- | --- | --- | --- |"]
    # structure: (-1,-1), (-1,-2), (2,1), (0,-1), (-3,-1)
    assert lines[6:12] == ["| -3 | 0 | 0 | 1 | 0 | 0 | 0 |", "| -2 | 0 | 0 | 0 | 0 | 0 | 0 |",
                           "| -1 | 0 | 1 | 1 | 0 | 0 | 0 |", "| 0 | 0 | 0 | 1 | 0 | 0 | 0 |",
                           "| +1 | 0 | 0 | 0 | 0 | 0 | 0 |", "| +2 | 0 | 0 | 0 | 0 | 1 | 0 |"]
    assert lines[13] == "Overall (pooled over dimensions):" and lines[17:23] == lines[6:12]  # one dimension: overall is the same matrix

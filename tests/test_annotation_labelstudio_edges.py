"""Label Studio format edges (issue 27; the conversion code only, the real server is tests/
test_annotation_labelstudio_server.py): every attribute of the labeling config, predictions (choices, placed and
unplaced snippets), the project files, and the export reader's counts: annotators by email / username / id, cancelled
and empty annotations, bad choices, spans outside the review or not matching it, labels that are not dimensions, and
every error with its task (SurveyReview §4.3)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

from surveyalign.annotation import (
    ReviewRecord,
    export_tasks,
    import_export,
    labeling_config,
)
from surveyalign.annotation.labelstudio import write_project

DIMS = ["readability", "structure", "comprehensiveness", "criticalness"]


def test_labeling_config_attributes():
    text = labeling_config()
    assert text.startswith("<View>\n  <Header value=\"$title\"/>\n") and text.endswith("</View>\n")
    view = ET.fromstring(text)
    labels = view.find("Labels")
    assert labels.attrib == {"name": "rationale", "toName": "review"}
    assert [x.attrib for x in labels] == [{"value": d, "background": c} for d, c in
                                          zip(DIMS, ("#4e79a7", "#f28e2b", "#59a14f", "#e15759"))]
    assert view.find("Text").attrib == {"name": "review", "value": "$review", "granularity": "symbol"}
    headers = [h.get("value") for h in view.findall("Header")]
    assert headers == ["$title"] + [f"{d.capitalize()}: -3 unjudgeable, 0 not mentioned, -2..+2 verdict" for d in DIMS]
    for choices, dim in zip(view.findall("Choices"), DIMS):
        assert choices.attrib == {"name": dim, "toName": "review", "choice": "single", "showInline": "true",
                                  "required": "true"}
        assert [c.attrib for c in choices] == [{"value": v} for v in ("-3", "-2", "-1", "0", "+1", "+2")]
    assert [child.tag for child in view] == ["Header", "Labels", "Text"] + ["Header", "Choices"] * 4
    # nothing but elements: no stray text between them for the interface to show
    assert all(not (e.text or "").strip() and not (e.tail or "").strip() for e in view.iter())


TEXT = "Hard to read. Sections are well ordered. Coverage is thin."


def _ann(review_id):
    return {"review_id": review_id, "dimensions": {
        "readability": {"label": -2, "snippets": [
            {"text": "Hard to read.", "status": "exact", "start": 0, "end": 13, "score": 100.0},
            {"text": "Never written.", "status": "missing", "start": None, "end": None, "score": 12.0},
            {"text": "Sections are wel ordered", "status": "near", "start": 14, "end": 39, "score": 95.7}]},
        "structure": {"label": None, "snippets": [{"text": "x", "start": None}]},
        "comprehensiveness": {"label": 1},  # no snippet list at all
        "criticalness": {"label": -3, "snippets": []}}}


def test_export_tasks_predictions_and_unplaced_snippets(tmp_path, ascii_locale):
    reviews = [ReviewRecord("r1", "p1", "moprd", TEXT), ReviewRecord("r2", "p2", "f1000", "Other.")]
    tasks = export_tasks(reviews, [_ann("r1")], titles={"p1": "Chauves-souris : étude"}, model_version="gpt-x")
    assert tasks[0]["data"] == {"review": TEXT, "review_id": "r1", "paper_id": "p1", "source": "moprd",
                                "title": "Chauves-souris : étude",
                                "llm_unplaced": "readability: Never written.\nstructure: x"}
    assert tasks[1] == {"data": {"review": "Other.", "review_id": "r2", "paper_id": "p2", "source": "f1000",
                                 "title": "p2", "llm_unplaced": ""}}  # no title: the paper id; no prediction
    prediction = tasks[0]["predictions"]
    assert [p["model_version"] for p in prediction] == ["gpt-x"]
    assert prediction[0]["result"] == [
        {"id": "readability-choice", "from_name": "readability", "to_name": "review", "type": "choices",
         "value": {"choices": ["-2"]}},
        {"id": "readability-span-0", "from_name": "rationale", "to_name": "review", "type": "labels",
         "value": {"start": 0, "end": 13, "text": "Hard to read.", "labels": ["readability"]},
         "meta": {"text": ["LLM snippet exact (score 100.0)"]}},
        {"id": "readability-span-2", "from_name": "rationale", "to_name": "review", "type": "labels",
         "value": {"start": 14, "end": 39, "text": "Sections are well ordered", "labels": ["readability"]},
         "meta": {"text": ["LLM snippet near (score 95.7)"]}},
        {"id": "comprehensiveness-choice", "from_name": "comprehensiveness", "to_name": "review", "type": "choices",
         "value": {"choices": ["+1"]}},
        {"id": "criticalness-choice", "from_name": "criticalness", "to_name": "review", "type": "choices",
         "value": {"choices": ["-3"]}}]
    assert export_tasks(reviews[:1])[0]["data"]["llm_unplaced"] == ""
    assert export_tasks(reviews[:1], [_ann("r1")])[0]["predictions"][0]["model_version"] == "llm"
    config, tasks_path = write_project(tmp_path / "ls" / "project", tasks)
    assert (config, tasks_path) == (tmp_path / "ls" / "project" / "labeling_config.xml",
                                    tmp_path / "ls" / "project" / "tasks.json")
    assert config.read_text(encoding="utf-8") == labeling_config()
    assert json.loads(tasks_path.read_text(encoding="utf-8")) == tasks
    assert tasks_path.read_text(encoding="utf-8").startswith('[\n {\n  "data"')
    assert '"Chauves-souris : étude"' in tasks_path.read_text(encoding="utf-8")  # not escaped


def _choice(dim, *choices):
    return {"type": "choices", "from_name": dim, "value": {"choices": list(choices)}}


def _span(start, end, *labels, text=None):
    value = {"start": start, "end": end, "labels": list(labels)}
    if text is not None:
        value["text"] = text
    return {"type": "labels", "from_name": "rationale", "value": value}


def test_import_export_counts_every_problem(tmp_path, ascii_locale):
    result = [
        _choice("readability", "-1"), _choice("structure", "+1", "+2"), _choice("comprehensiveness", "5"),
        _choice("novelty", "+1"), {"type": "choices", "from_name": "criticalness"},
        _span(14, 40, "novelty", "structure"), _span(0, 13, "readability", text="Hard to read."),
        _span(0, 4, "novelty"), _span(5, 5, "readability"), _span(-1, 3, "readability"), _span(0, len(TEXT) + 1, "readability"),
        _span("0", 4, "readability"), _span(0, 4, "readability", "structure", text="Easy"), _span(0, len(TEXT), "criticalness"),
        _span(-2, 0, "comprehensiveness", "criticalness"),
        {"type": "labels", "from_name": "other", "value": {"start": 0, "end": 4, "labels": ["readability"]}},
    ]
    export = [{"id": 5, "data": {"review": TEXT, "review_id": "r1", "paper_id": "p1", "source": "moprd"},
               "annotations": [
                   {"id": 50, "completed_by": {"email": "", "username": "anné", "id": 3}, "result": result},
                   {"completed_by": {"id": 4}, "result": [_choice("readability", "0")]},
                   {"completed_by": None, "result": [], "was_cancelled": False},
                   {"completed_by": 0, "was_cancelled": True, "result": result},
                   {"completed_by": 5, "result": None},
                   {"completed_by": 6, "was_cancelled": True}]},
              {"data": {"review": "Short.", "review_id": "r2"}},
              {"data": {"review": "Short.", "review_id": "r3"}, "annotations": [
                  {"completed_by": 7, "was_cancelled": True}, {"completed_by": "", "result": [_choice("structure", "+2")]}]}]
    path = tmp_path / "export.json"
    path.write_text(json.dumps(export, ensure_ascii=False), encoding="utf-8")
    records, report = import_export(path)
    assert [(r["review_id"], r["annotator"], r["annotation_id"], r["paper_id"], r["source"]) for r in records] == [
        ("r1", "anné", 50, "p1", "moprd"), ("r1", "4", 1, "p1", "moprd"), ("r3", "unknown", 1, "", "unknown")]
    first = records[0]["dimensions"]
    assert {d: first[d]["label"] for d in DIMS} == {"readability": -1, "structure": None, "comprehensiveness": None,
                                                     "criticalness": None}
    assert first["readability"]["snippets"] == [{"text": "Hard to read.", "start": 0, "end": 13, "status": "exact",
                                                 "score": 100.0, "verbatim": True}]
    # spans sorted by their start; the whole review is a span too
    assert [s["start"] for s in first["criticalness"]["snippets"]] == [0]
    assert first["structure"]["snippets"][0]["text"] == "Sections are well ordered."
    assert report == {
        "tasks": 3, "annotations": 8, "records": 3, "annotators": ["4", "anné", "unknown"], "cancelled": 3,
        "empty": 2, "bad_choices": 3, "bad_spans": 8, "dimensions_without_choice": 3 + 3 + 3,
        "duplicate_annotations": 0, "foreign_tasks": 0,
        "problems": [
            "r1 by anné: structure: choice ['+1', '+2'] is not one label",
            "r1 by anné: comprehensiveness: choice ['5'] is not one label",
            "r1 by anné: criticalness: choice [] is not one label",
            "r1 by anné: readability: span offsets 5-5 outside the review",
            "r1 by anné: readability: span offsets -1-3 outside the review",
            f"r1 by anné: readability: span offsets 0-{len(TEXT) + 1} outside the review",
            "r1 by anné: readability: span offsets 0-4 outside the review",
            "r1 by anné: readability: span text differs from the review at 0-4",
            "r1 by anné: structure: span text differs from the review at 0-4",
            "r1 by anné: comprehensiveness: span offsets -2-0 outside the review",
            "r1 by anné: criticalness: span offsets -2-0 outside the review",
            "r1 by unknown: empty annotation",
            "r1 by 0: cancelled (skipped) in Label Studio",
            "r1 by 5: empty annotation",
            "r1 by 6: cancelled (skipped) in Label Studio",
            "r3 by 7: cancelled (skipped) in Label Studio"]}


def test_import_export_sorts_spans_and_reads_a_list(tmp_path):
    export = [{"id": 1, "data": {"review": TEXT, "review_id": "r1"}, "annotations": [
        {"id": 9, "completed_by": {"email": "a@x.org"}, "result": [
            _choice("readability", "+2"), _span(41, 58, "readability"), _span(0, 13, "readability"),
            _choice("structure", "-3"), _choice("comprehensiveness", "-2"), _choice("criticalness", "0")]}]}]
    records, report = import_export(export, source="mine")
    dims = records[0]["dimensions"]
    assert [s["text"] for s in dims["readability"]["snippets"]] == ["Hard to read.", "Coverage is thin."]
    assert {d: dims[d]["label"] for d in DIMS} == {"readability": 2, "structure": -3, "comprehensiveness": -2,
                                                    "criticalness": 0}
    assert (report["dimensions_without_choice"], report["problems"], report["annotators"]) == (0, [], ["a@x.org"])


@pytest.mark.parametrize(("data", "message"), [
    ([{"id": 1, "data": {"review": "x", "review_id": "r"}}, "task"], (r"mine: task 1 \(id \?\): expected an object "
                                                                      "with 'data'")),
    ([{"id": 7, "data": "x"}], r"mine: task 0 \(id 7\): expected an object with 'data'"),
    ([{"data": {"review": "x", "review_id": 3}}], (r"mine: task 0 \(id \?\): field data.review or data.review_id "
                                                   "missing")),
    ([{"data": {"review_id": "r"}}], "field data.review or data.review_id missing"),
])
def test_import_export_errors_name_the_task(data, message):
    with pytest.raises(ValueError, match=message):
        import_export(data, source="mine")
    with pytest.raises(ValueError, match=message.replace("mine: ", "export: ")):
        import_export(data)  # a list read from memory is named "export"


def test_import_export_file_errors(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("[{", encoding="utf-8")
    with pytest.raises(ValueError, match=r"bad.json: not valid JSON \(line 1: "):
        import_export(bad)
    obj = tmp_path / "obj.json"
    obj.write_text('{"tasks": []}', encoding="utf-8")
    with pytest.raises(ValueError, match=r"obj.json: expected a JSON array of Label Studio tasks"):
        import_export(str(obj))
    assert import_export([]) == ([], {"tasks": 0, "annotations": 0, "records": 0, "annotators": [], "cancelled": 0,
                                      "empty": 0, "bad_choices": 0, "bad_spans": 0, "dimensions_without_choice": 0,
                                      "duplicate_annotations": 0, "foreign_tasks": 0, "problems": []})

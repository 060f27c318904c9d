"""Human verification in Label Studio (SurveyReview §4.3): export tasks with the LLM's answer, import the result.

Label Studio (https://labelstud.io) is what annotation teams run; this module only speaks its JSON formats:

* :func:`labeling_config`: the project's labeling interface: the review text, one single-choice question per
  dimension over the six labels (-3, -2, -1, 0, +1, +2) and span labels (one per dimension) for the rationale
  snippets over the review text.
* :func:`export_tasks`: one task per review (``data``: review, ids, title, source) with the LLM pre-annotation
  as a prediction (choices and spans with character offsets; flagged snippets with offsets as spans marked in
  ``meta``, snippets without offsets listed in ``data.llm_unplaced``).
* :func:`import_export`: read Label Studio's JSON export (``[{"id", "data", "annotations": [{"completed_by",
  "result", "was_cancelled"}]}]``) into one record per (review, annotator), several annotators per task.
  Cancelled (skipped) annotations, empty ones and spans whose text is not the review's span at their offsets
  are counted and listed, never used; so are an annotator's second labelling of a review (the first is kept: one
  annotator counts once in the Table 5 agreement and in ``disagreements.csv`` alike) and, when the project's
  reviews are given, a task for a review outside the project.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any
from xml.sax.saxutils import quoteattr

from surveyalign.constants import DIMENSIONS

from .records import LABELS, ReviewRecord, label_name, parse_label

#: Name of the text object and of the span-label control in the labeling config.
TEXT_NAME = "review"
SPAN_NAME = "rationale"


def labeling_config() -> str:
    """The Label Studio labeling config (XML): review text, span labels per dimension, one choice per dimension."""
    spans = "\n".join(f'    <Label value="{d}" background="{c}"/>' for d, c in
                      zip(DIMENSIONS, ("#4e79a7", "#f28e2b", "#59a14f", "#e15759")))
    blocks = []
    for d in DIMENSIONS:
        choices = "\n".join(f"      <Choice value={quoteattr(label_name(x))}/>" for x in LABELS)
        blocks.append(f'  <Header value="{d.capitalize()}: -3 unjudgeable, 0 not mentioned, -2..+2 verdict"/>\n'
                      f'  <Choices name="{d}" toName="{TEXT_NAME}" choice="single" showInline="true" required="true">\n'
                      f"{choices}\n  </Choices>")
    return ("<View>\n  <Header value=\"$title\"/>\n"
            f'  <Labels name="{SPAN_NAME}" toName="{TEXT_NAME}">\n{spans}\n  </Labels>\n'
            f'  <Text name="{TEXT_NAME}" value="${TEXT_NAME}" granularity="symbol"/>\n'
            + "\n".join(blocks) + "\n</View>\n")


def _prediction(annotation: dict[str, Any], review: str) -> list[dict[str, Any]]:
    result: list[dict[str, Any]] = []
    for d in DIMENSIONS:
        dim = annotation["dimensions"].get(d) or {}
        if dim.get("label") is None:
            continue
        result.append({"id": f"{d}-choice", "from_name": d, "to_name": TEXT_NAME, "type": "choices",
                       "value": {"choices": [label_name(dim["label"])]}})
        for k, s in enumerate(dim.get("snippets", [])):
            if s.get("start") is None:
                continue
            result.append({"id": f"{d}-span-{k}", "from_name": SPAN_NAME, "to_name": TEXT_NAME, "type": "labels",
                           "value": {"start": s["start"], "end": s["end"], "text": review[s["start"]:s["end"]],
                                     "labels": [d]},
                           "meta": {"text": [f"LLM snippet {s['status']} (score {s['score']})"]}})
    return result


def export_tasks(reviews: Sequence[ReviewRecord], annotations: Sequence[dict[str, Any]] = (), *,
                 titles: dict[str, str] | None = None, model_version: str = "llm") -> list[dict[str, Any]]:
    """Label Studio tasks, one per review, with the LLM pre-annotation as a prediction.

    Args:
        reviews: the reviews (``reviews.jsonl``).
        annotations: ``annotations.jsonl`` records (matched by ``review_id``; reviews without one get no
            prediction).
        titles: ``{paper_id: title}`` shown above the review.
        model_version: the prediction's ``model_version``.

    Returns:
        JSON-ready tasks ``{"data": {...}, "predictions": [{"model_version", "result"}]}``.
    """
    by_id = {a["review_id"]: a for a in annotations}
    titles = titles or {}
    tasks = []
    for r in reviews:
        ann = by_id.get(r.review_id)
        unplaced = []
        if ann:
            unplaced = [f"{d}: {s['text']}" for d, dim in ann["dimensions"].items()
                        for s in dim.get("snippets", []) if s.get("start") is None]
        task: dict[str, Any] = {"data": {TEXT_NAME: r.text, "review_id": r.review_id, "paper_id": r.paper_id,
                                         "source": r.source, "title": titles.get(r.paper_id, r.paper_id),
                                         "llm_unplaced": "\n".join(unplaced)}}
        if ann:
            task["predictions"] = [{"model_version": model_version, "result": _prediction(ann, r.text)}]
        tasks.append(task)
    return tasks


def write_project(out: str | os.PathLike, tasks: Sequence[dict[str, Any]]) -> tuple[Path, Path]:
    """Write ``OUT/labeling_config.xml`` and ``OUT/tasks.json``; returns both paths."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "labeling_config.xml").write_text(labeling_config(), encoding="utf-8")
    (out / "tasks.json").write_text(json.dumps(list(tasks), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return out / "labeling_config.xml", out / "tasks.json"


def _annotator(annotation: dict[str, Any]) -> str:
    who = annotation.get("completed_by")
    if isinstance(who, dict):
        who = who.get("email") or who.get("username") or who.get("id")
    return str(who) if who not in (None, "") else "unknown"


def import_export(data: Sequence[dict[str, Any]] | str | os.PathLike, *, source: str = "export",
                  review_ids: Collection[str] | None = None) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Read a Label Studio JSON export into one record per (review, annotator).

    Args:
        data: the export (a list of tasks) or the path of its JSON file.
        source: name used in messages when ``data`` is a list.
        review_ids: the project's reviews (``reviews.jsonl`` of ``data collect``, or the reviews ``data annotate``
            labelled); a task for another review is counted (``foreign_tasks``), named in ``problems`` and left
            out. ``None``: every task is taken.

    Returns:
        ``(records, report)``. A record: ``review_id``, ``paper_id``, ``source``, ``annotator``,
        ``annotation_id``, ``dimensions`` ``{dim: {"label": int | None, "snippets": [{"text", "start", "end",
        "status": "exact", "verbatim": True}]}}``. The report counts tasks, annotations, annotators, cancelled
        and empty annotations, dimensions left without a choice, bad choices, spans whose text differs from
        the review at their offsets, ``duplicate_annotations`` (an annotator's second and later labelling of the
        same review: left out, the first kept) and ``foreign_tasks`` (each listed in ``problems``).

    Raises:
        ValueError: not a list of tasks, or a task without ``data.review`` / ``data.review_id`` (task named).
    """
    if not isinstance(data, list):
        path = Path(data)
        source = str(path)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as err:
            raise ValueError(f"{path}: not valid JSON (line {err.lineno}: {err.msg})") from None
    if not isinstance(data, list):
        raise ValueError(f"{source}: expected a JSON array of Label Studio tasks")  # noqa: TRY004
    records: list[dict[str, Any]] = []
    counts: Counter = Counter()
    problems: list[str] = []
    annotators: set[str] = set()
    labelled: dict[tuple[str, str], Any] = {}  # (review_id, annotator) -> the annotation id kept
    for t, task in enumerate(data):
        where = f"{source}: task {t} (id {task.get('id', '?') if isinstance(task, dict) else '?'})"
        if not isinstance(task, dict) or not isinstance(task.get("data"), dict):
            raise ValueError(f"{where}: expected an object with 'data'")  # noqa: TRY004
        review, review_id = task["data"].get(TEXT_NAME), task["data"].get("review_id")
        if not isinstance(review, str) or not isinstance(review_id, str):
            raise ValueError(f"{where}: field data.{TEXT_NAME} or data.review_id missing")  # noqa: TRY004
        counts["tasks"] += 1
        if review_ids is not None and review_id not in review_ids:
            counts["foreign_tasks"] += 1
            problems.append(f"{where}: review {review_id} is not a review of the project: its "
                            f"{len(task.get('annotations') or [])} annotation(s) left out")
            continue
        for a, ann in enumerate(task.get("annotations") or []):
            counts["annotations"] += 1
            who = _annotator(ann)
            if ann.get("was_cancelled"):
                counts["cancelled"] += 1
                problems.append(f"{review_id} by {who}: cancelled (skipped) in Label Studio")
                continue
            result = ann.get("result") or []
            if not result:
                counts["empty"] += 1
                problems.append(f"{review_id} by {who}: empty annotation")
                continue
            dims: dict[str, dict[str, Any]] = {d: {"label": None, "snippets": []} for d in DIMENSIONS}
            for item in result:
                value = item.get("value") or {}
                name = item.get("from_name")
                if item.get("type") == "choices" and name in dims:
                    choices = value.get("choices") or []
                    label = parse_label(choices[0]) if len(choices) == 1 else None
                    if label is None:
                        counts["bad_choices"] += 1
                        problems.append(f"{review_id} by {who}: {name}: choice {choices!r} is not one label")
                    dims[name]["label"] = label
                elif item.get("type") == "labels" and name == SPAN_NAME:
                    start, end = value.get("start"), value.get("end")
                    for d in value.get("labels") or []:
                        if d not in dims:
                            continue
                        if not (isinstance(start, int) and isinstance(end, int) and 0 <= start < end <= len(review)):
                            counts["bad_spans"] += 1
                            problems.append(f"{review_id} by {who}: {d}: span offsets {start}-{end} outside the review")
                            continue
                        if value.get("text") not in (None, review[start:end]):
                            counts["bad_spans"] += 1
                            problems.append(f"{review_id} by {who}: {d}: span text differs from the review at "
                                            f"{start}-{end}")
                            continue
                        dims[d]["snippets"].append({"text": review[start:end], "start": start, "end": end,
                                                    "status": "exact", "score": 100.0, "verbatim": True})
            for d, v in dims.items():
                if v["label"] is None:
                    counts["dimensions_without_choice"] += 1
                v["snippets"].sort(key=lambda s: s["start"])
            if (review_id, who) in labelled:
                counts["duplicate_annotations"] += 1
                problems.append(f"{review_id} by {who}: labelled twice (annotation {ann.get('id', a)} after "
                                f"{labelled[(review_id, who)]}): the first kept, this one left out")
                continue
            labelled[(review_id, who)] = ann.get("id", a)
            annotators.add(who)
            records.append({"review_id": review_id, "paper_id": task["data"].get("paper_id", ""),
                            "source": task["data"].get("source", "unknown"), "annotator": who,
                            "annotation_id": ann.get("id", a), "dimensions": dims})
    report = {"tasks": counts["tasks"], "annotations": counts["annotations"], "records": len(records),
              "annotators": sorted(annotators), "cancelled": counts["cancelled"], "empty": counts["empty"],
              "bad_choices": counts["bad_choices"], "bad_spans": counts["bad_spans"],
              "dimensions_without_choice": counts["dimensions_without_choice"],
              "duplicate_annotations": counts["duplicate_annotations"], "foreign_tasks": counts["foreign_tasks"],
              "problems": problems}
    return records, report

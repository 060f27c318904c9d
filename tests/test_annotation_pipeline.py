"""Extend SurveyReview end to end on made-up inputs (SurveyReview §4.1-4.3, App. A, A.2): identify -> collect
(F1000Research JATS, OpenReview forum, MOPRD / PeerJ history, plain text) -> annotate (scripted judge, through the
CLI and with K samples from Python) -> Label Studio format round trip (two annotators) -> agreement -> release
-> `data build` -> `evaluate`; a -3 or 0 label and a snippet not in its review never reach the dataset."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import yaml
from annotation_fixtures import (
    _answer_for,
    confirm_proposed,
    label_studio_export,
    scripted_judge,
    write_inputs,
)

from surveyalign.cli import main


def _judge_yaml(path: Path, replies: list[str]) -> Path:
    path.write_text(yaml.safe_dump({"backend": {"kind": "scripted", "options": {"replies": replies}},
                                    "generation": {"temperature": 0.0, "max_new_tokens": 512}}), encoding="utf-8")
    return path


def test_pipeline_end_to_end(tmp_path, capsys):
    from surveyalign.annotation import annotate_reviews, read_jsonl, read_reviews
    from surveyalign.backends import GenerationSettings, load_backend

    inputs = write_inputs(tmp_path)
    # 1. identify: keyword stage, scripted screen (candidate order: 5 keyword matches), verification file
    screen = [json.dumps({"survey": v, "reason": "scripted"}) for v in ("yes", "yes", "yes", "yes", "no")]
    rc = main(["data", "identify", "--candidates", str(inputs["candidates"]), "--judge",
               str(_judge_yaml(tmp_path / "screen.yaml", screen)), "--out", str(tmp_path / "identified")])
    assert rc == 0
    report = json.loads((tmp_path / "identified" / "identify_report.json").read_text())
    assert report["total"] == {"candidates": 6, "keyword_match": 5, "screened": 5, "llm_yes": 4, "llm_no": 1,
                               "llm_not_screened": 1, "proposed": 4}
    assert report["per_source"]["moprd"] == {"candidates": 2, "keyword_match": 2, "screened": 2, "llm_yes": 1,
                                             "llm_no": 1, "proposed": 1}
    verification = tmp_path / "identified" / "verification.csv"
    rows = list(csv.DictReader(verification.read_text().splitlines()))
    assert [r["proposed"] for r in rows] == ["yes", "yes", "yes", "yes", "no", "no"]
    assert rows[5]["llm_verdict"] == "not screened" and rows[4]["llm_verdict"] == "no"
    confirm_proposed(verification)

    # 2. collect: the unconfirmed paper's file is left out; non-reviews are skipped with a reason
    assert main(["data", "collect", str(inputs["reviews"]), "--verification", str(verification), "--texts",
                 str(inputs["texts"]), "--out", str(tmp_path / "collected")]) == 0
    collected = json.loads((tmp_path / "collected" / "collect_report.json").read_text())
    assert (collected["surveys"], collected["reviews"]) == (4, 8)
    assert collected["files_not_confirmed"] == ["unconfirmed_9999.json (moprd-9999)"]
    assert len(collected["skipped_records"]) == 4 and collected["reviews_found_in_survey_text"] == []
    # stage 3 in numbers, per source: the person confirmed the 4 proposed papers and rejected the 2 others
    assert collected["verification"]["total"] == {"rows": 6, "confirmed": 4, "rejected": 2, "unchecked": 0,
                                                  "no_substantive_reviews": 0}
    assert collected["verification"]["per_source"]["moprd"] == {"rows": 2, "confirmed": 1, "rejected": 1,
                                                                "unchecked": 0, "no_substantive_reviews": 0}
    reviews = read_reviews(tmp_path / "collected")
    assert [r.review_id for r in reviews] == [
        "f1000-5501-1-r1", "f1000-5501-1-r2", "moprd-8120-1-r1", "moprd-8120-2-r1", "openreview-fOr3st-1-r1",
        "openreview-fOr3st-1-r2", "openreview-fOr3st-1-r3", "unknown-lit2024-1-r1"]  # the meta-review is r3
    by_id = {r.review_id: r for r in reviews}
    assert (by_id["f1000-5501-1-r2"].reviewer, by_id["f1000-5501-1-r2"].date,
            by_id["f1000-5501-1-r2"].recommendation) == ("Bo Renner", "2022-04-12", "approve-with-reservations")
    assert by_id["openreview-fOr3st-1-r3"].kind == "meta_review"
    assert by_id["openreview-fOr3st-1-r1"].text.startswith("Summary: The paper surveys token pruning")
    assert "Rating" not in by_id["openreview-fOr3st-1-r1"].text  # scores are not review text
    assert by_id["moprd-8120-1-r1"].text.split("\n\n")[1] == ("Experimental design: The literature search strategy "
                                                              "misses two major databases.")

    # 3. annotate through the CLI (one sample per review, scripted answers in review order)
    replies = [_answer_for(r.text) for r in reviews]
    assert main(["data", "annotate", "--reviews", str(tmp_path / "collected"), "--judge",
                 str(_judge_yaml(tmp_path / "judge.yaml", replies)), "--out", str(tmp_path / "annotated")]) == 0
    ann_report = json.loads((tmp_path / "annotated" / "annotate_report.json").read_text())
    assert ann_report["review_status"] == {"ok": 8, "partial": 0, "parse_failed": 0, "api_error": 0}
    assert ann_report["snippets"] == {"exact": 15, "layout": 0, "near": 1, "missing": 1}
    annotations = {a["review_id"]: a for a in read_jsonl(tmp_path / "annotated" / "annotations.jsonl")}
    crit = annotations["f1000-5501-1-r2"]["dimensions"]["criticalness"]["snippets"][0]
    assert (crit["status"], crit["verbatim"], crit["span"]) == ("near", False, None)  # flagged, never verbatim
    comp = annotations["openreview-fOr3st-1-r1"]["dimensions"]["comprehensiveness"]["snippets"]
    assert [s["status"] for s in comp] == ["exact", "missing"]
    # the flagged snippets are listed for a person, with the closest window's offsets when there is one
    flagged = {(f["review_id"], f["dimension"], f["status"]): f for f in ann_report["flagged_snippets"]}
    assert sorted(flagged) == [("f1000-5501-1-r2", "criticalness", "near"),
                               ("openreview-fOr3st-1-r1", "comprehensiveness", "missing")]
    near = flagged[("f1000-5501-1-r2", "criticalness", "near")]
    assert (near["start"], near["end"]) == (crit["start"], crit["end"]) and near["start"] is not None
    assert flagged[("openreview-fOr3st-1-r1", "comprehensiveness", "missing")]["start"] is None
    text = by_id["openreview-fOr3st-1-r1"].text
    assert text[comp[0]["start"]:comp[0]["end"]] == comp[0]["text"]
    # a re-run resumes from calls.jsonl: no call is made
    calls = (tmp_path / "annotated" / "calls.jsonl").read_text()
    assert main(["data", "annotate", "--reviews", str(tmp_path / "collected"), "--judge",
                 str(tmp_path / "judge.yaml"), "--out", str(tmp_path / "annotated")]) == 0
    assert json.loads((tmp_path / "annotated" / "annotate_report.json").read_text())["calls_cached"] == 8
    assert (tmp_path / "annotated" / "calls.jsonl").read_text() == calls

    # the seeded double-annotation sample (2 units per dimension here; 70 by default) and its blind tasks
    assert main(["data", "agreement", "--plan", "--llm", str(tmp_path / "annotated"), "--collected",
                 str(tmp_path / "collected"), "--sample", "2", "--seed", "5", "--out", str(tmp_path / "plan")]) == 0
    plan = json.loads((tmp_path / "plan" / "double_annotation_sample.json").read_text())
    assert len(plan["units"]) == 8 and sorted({u[1] for u in plan["units"]}) == [
        "comprehensiveness", "criticalness", "readability", "structure"]
    blind = json.loads((tmp_path / "plan" / "label_studio" / "tasks.json").read_text())
    assert {t["data"]["review_id"] for t in blind} == {u[0] for u in plan["units"]}
    assert not any("predictions" in t for t in blind)  # the second annotator does not see the LLM's answer

    # K = 3 samples with a vote (Python API, callable judge); one sample disagrees and one fails
    def shaky(messages, settings, index):
        if index == 1:
            return "no json at all"
        answer = json.loads(scripted_judge(messages, settings, index))
        if index == 2:
            answer["readability"]["label"] = 2
        return json.dumps(answer)

    voted = annotate_reviews(reviews[:1], load_backend("scripted", replies=shaky), GenerationSettings(), samples=3)
    read = voted.records[0]["dimensions"]["readability"]
    assert (read["label"], read["votes"], read["tie"]) == (1, {"1": 1, "2": 1}, True)

    # 4. Label Studio format round trip: annotator b changes three choices
    tasks = json.loads((tmp_path / "annotated" / "label_studio" / "tasks.json").read_text())
    assert len(tasks) == 8 and (tmp_path / "annotated" / "label_studio" / "labeling_config.xml").exists()
    export = label_studio_export(tasks, {("f1000-5501-1-r1", "structure"): "-2",
                                         ("moprd-8120-1-r1", "criticalness"): "+1",
                                         ("unknown-lit2024-1-r1", "readability"): "0"})
    (tmp_path / "export.json").write_text(json.dumps(export))

    # 5. agreement: human vs human and LLM vs human; disagreements listed for a third decision
    capsys.readouterr()
    assert main(["data", "agreement", "--human", str(tmp_path / "export.json"), "--llm", str(tmp_path / "annotated"),
                 "--bootstrap", "50", "--out", str(tmp_path / "agreement")]) == 0
    tables = json.loads((tmp_path / "agreement" / "agreement.json").read_text())["tables"]
    hh = tables["human vs human"]["rows"]
    assert (hh["overall"]["units"], hh["overall"]["disagreements"]) == (32, 3)
    assert hh["overall"]["distance"]["one_level"] == 2 and hh["overall"]["distance"]["two_levels"] == 0  # -1/+1 adjacent
    assert hh["overall"]["distance"]["with_not_mentioned"] == 1
    assert tables["LLM vs human"]["rows"]["overall"]["units"] == 29  # 3 units unresolved until decided
    # the same report on the seeded plan's units only (--sample-file): its 8 units, all double-annotated here
    assert main(["data", "agreement", "--human", str(tmp_path / "export.json"), "--sample-file",
                 str(tmp_path / "plan" / "double_annotation_sample.json"), "--bootstrap", "0", "--out",
                 str(tmp_path / "on_plan")]) == 0
    on_plan = json.loads((tmp_path / "on_plan" / "agreement.json").read_text())
    assert on_plan["sample_units"] == 8 and list(on_plan["tables"]) == ["human vs human"]
    assert [on_plan["tables"]["human vs human"]["rows"][d]["units"] for d in ("readability", "structure",
            "comprehensiveness", "criticalness", "overall")] == [2, 2, 2, 2, 8]
    report_md = (tmp_path / "agreement" / "agreement.md").read_text()
    assert "#### human vs human: confusion matrices" in report_md and "#### LLM vs human: confusion matrices" in report_md
    # overall human vs human: 29 agreements on the diagonal, the three changed choices off it
    overall = report_md.split("#### human vs human")[1].split("Overall (pooled over dimensions):")[1].split("####")[0]
    cells = [[int(c) for c in line.strip("| ").split(" | ")[1:]] for line in overall.strip().splitlines()[2:8]]
    assert sum(cells[i][i] for i in range(6)) == 29 and sum(map(sum, cells)) == 32
    decisions = tmp_path / "agreement" / "disagreements.csv"
    rows = list(csv.DictReader(decisions.read_text().splitlines()))
    assert [(r["review_id"], r["dimension"]) for r in rows] == [
        ("f1000-5501-1-r1", "structure"), ("moprd-8120-1-r1", "criticalness"), ("unknown-lit2024-1-r1", "readability")]
    for r in rows:  # the third person sides with annotator "1" (the LLM's answer) except on lit2024
        r["final"] = "0" if r["review_id"].startswith("unknown") else r["labels"].split(";")[0].split("=")[1]
    with decisions.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)

    # 6. release in the official layout, then `data build` reads it unchanged
    assert main(["data", "release", "--collected", str(tmp_path / "collected"), "--human", str(tmp_path / "export.json"),
                 "--llm", str(tmp_path / "annotated"), "--decisions", str(decisions), "--agreement",
                 str(tmp_path / "agreement" / "agreement.json"), "--identified", str(tmp_path / "identified"),
                 "--out", str(tmp_path / "release")]) == 0
    release = tmp_path / "release"
    prov = json.loads((release / "provenance.json").read_text())
    assert prov["final_label_rules"] == {"agreed": 29, "third_decision": 3}
    assert prov["identification"]["total"]["proposed"] == 4 and prov["human_annotators"] == ["1", "b@example.org"]
    assert prov["agreement"]["human vs human"]["rows"]["overall"]["disagreements"] == 3
    assert prov["sources"]["moprd"] == {"candidates": 2, "keyword_match": 2, "screened": 2, "llm_yes": 1,
                                        "proposed": 1, "confirmed": 1, "papers": 1, "reviews": 2, "reviews_written": 2}
    assert (prov["guideline_version"], prov["prompt_version"]) == ("surveyalign-annotation-1", "annotate-v1")
    assert prov["annotator_model"]["description"]["backend"]["kind"] == "scripted"
    # the rule behind every final label, and who gave which label (the LLM's beside the people's)
    finals = {(x["review_id"], x["dimension"]): x for x in
              map(json.loads, (release / "final_labels.jsonl").read_text().splitlines())}
    assert len(finals) == 32 and sum(x["rule"] == "third_decision" for x in finals.values()) == 3
    decided = finals[("unknown-lit2024-1-r1", "readability")]
    assert (decided["label"], decided["rule"], decided["released"]) == (0, "third_decision", True)
    assert decided["labels"]["b@example.org"] == "0" and set(decided["labels"]) == {"1", "b@example.org", "llm"}
    assert "## Annotation" in (release / "ANNOTATION.md").read_text()
    raw = [r for f in sorted((release / "raw").glob("*.json")) for r in json.loads(f.read_text())]
    assert len(raw) == 8
    released = {(r["uid"], x["dimension"]): x for r in raw for x in r["result"]}
    assert released[("moprd-8120-1-r1", "Criticalness")]["score"] == -1.0
    assert released[("f1000-5501-1-r2", "Criticalness")] == {"dimension": "Criticalness", "score": 2.0, "reasons": [
        "authors offer a thoughtful synthesis that goes well beyond listing prior studies"]}  # the people's span
    grouped = [r for f in sorted(release.glob("*/grouped_*set.json")) for r in json.loads(f.read_text())]
    assert len(grouped) == 7  # the two MOPRD rounds of reviewer 1 merged; the later round's label wins
    merged = next(r for r in grouped if r["uid"] == "moprd-8120-2-r1")
    assert {x["dimension"]: x["score"] for x in merged["result"]}["Criticalness"] == 1.0
    for r in raw:  # every released reason is the review's own words
        for x in r["result"]:
            assert all(reason in r["review_content"] for reason in x["reasons"])

    capsys.readouterr()
    assert main(["data", "build", "--official", str(release), "--out", str(tmp_path / "built")]) == 0
    build = json.loads((tmp_path / "built" / "build_report.json").read_text())
    assert build["records"]["set"] == "grouped" and build["split"]["policy"] == "as-released"
    # the dataset card carries the release's annotation section: guideline, annotator model, agreement table
    card = (tmp_path / "built" / "README.md").read_text()
    assert build["annotation_section"]["file"] == "ANNOTATION.md"
    section = card[card.index("## Annotation"):card.index("## Filtering of scores 0 and -3")]
    assert section.strip() == (release / "ANNOTATION.md").read_text().strip()
    assert card.index("## Provenance") < card.index("## Annotation")
    assert "guideline `surveyalign-annotation-1`" in section
    assert ("- Pre-annotation: backend `scripted`, temperature 0, max_new_tokens 512 (prompt `annotate-v1`)"
            in section) and "replies" not in section  # the judge's options stay in provenance.json
    assert "- Human verification in Label Studio by 2 annotator(s)." in section
    assert "- How each final label was decided: agreed 29, third_decision 3" in section
    assert ("- Identification: 6 candidate papers, 5 with a title keyword, 5 screened by the LLM (4 yes), 4 proposed, "
            "4 confirmed by a person.") in section
    assert "### human vs human" in section and "### LLM vs human" in section
    overall = next(line for line in section.splitlines() if line.startswith("| Overall (pooled over dimensions) | 32 | 3 | 9.38%"))
    assert overall.count("|") == 12
    excluded = sum(build["units"]["excluded_score_0"].values()) + sum(build["units"]["excluded_score_minus3"].values())
    assert excluded > 0 and build["missing_text"]["units"] == 0
    import pyarrow.parquet as pq

    rows = [row for f in (tmp_path / "built" / "data").rglob("*.parquet") for row in pq.read_table(f).to_pylist()]
    assert rows and {row["score"] for row in rows} <= {-2, -1, 1, 2}  # -3 and 0 never reach the dataset
    assert "~" not in json.dumps([row["rationales"] for row in rows])
    assert not any("without listing prior" in " ".join(row["rationales"]) for row in rows)

    # 7. evaluate a constant judge on the built dataset (all splits present; test split scored)
    cfg = tmp_path / "eval.yaml"
    cfg.write_text(yaml.safe_dump({"name": "constant -1", "dataset": str(tmp_path / "built"), "split": "test",
                                   "knowledge_dimensions": [], "progress": False, "bootstrap": 0,
                                   "backend": {"kind": "constant", "options": {"score": -1}},
                                   "output_dir": str(tmp_path / "runs"), "run_name": "c"}))
    test_dims = sorted({row["dimension"] for f in (tmp_path / "built" / "data").rglob("test.parquet")
                        for row in pq.read_table(f).to_pylist()})
    assert main(["evaluate", "--config", str(cfg), "--dimensions", ",".join(test_dims)]) == 0
    predictions = [json.loads(line) for line in (tmp_path / "runs" / "c" / "predictions.jsonl").read_text().splitlines()]
    assert predictions and all(p["status"] == "scored" for p in predictions)


def test_no_usable_result_exits_3_and_bad_input_exits_2(tmp_path, capsys):
    inputs = write_inputs(tmp_path)
    assert main(["data", "collect", str(inputs["reviews"]), "--out", str(tmp_path / "c")]) == 0
    assert main(["data", "annotate", "--reviews", str(tmp_path / "c"), "--judge",
                 str(_judge_yaml(tmp_path / "j.yaml", ["not json"] * 9)), "--out", str(tmp_path / "a")]) == 3
    assert "no review got a label" in capsys.readouterr().err
    failed = json.loads((tmp_path / "a" / "annotate_report.json").read_text())
    assert failed["review_status"]["parse_failed"] == 9 and failed["calls_failed"] == 0  # kept, counted
    bad = tmp_path / "bad.json"
    bad.write_text('{"paper_id": "1", "review_history": {"version": 1}}')
    assert main(["data", "collect", str(bad), "--out", str(tmp_path / "x")]) == 2
    assert capsys.readouterr().err.strip() == f"error: {bad}: field review_history must be a list of review rounds"
    (tmp_path / "judge.yaml").write_text("backend: {kind: scripted, options: {replies: []}}\ngeneration: {temp: 1}\n")
    assert main(["data", "annotate", "--reviews", str(tmp_path / "c"), "--judge", str(tmp_path / "judge.yaml"),
                 "--out", str(tmp_path / "b")]) == 2
    assert "generation.temp: Extra inputs are not permitted" in capsys.readouterr().err


def test_annotate_keeps_reviews_sharing_an_id_apart_and_merges_a_repeat(tmp_path, capsys):
    """Issue 21 A: two collected reviews with one id each keep their own annotation; a repeat is annotated once."""
    import hashlib

    from surveyalign.annotation import read_jsonl

    texts = ["Summary: the survey covers pruning well. The figures are hard to read.",
             "Summary: the coverage of quantisation is thin. The writing is clear."]
    rows = [{"review_id": "moprd-1-1-r1", "paper_id": "moprd-1", "source": "moprd", "text": texts[0]},
            {"review_id": "moprd-1-1-r1", "paper_id": "moprd-1", "source": "moprd", "text": texts[1]},
            {"review_id": "moprd-1-1-r1", "paper_id": "moprd-1", "source": "moprd", "text": texts[0]},
            {"review_id": "moprd-2-1-r1", "paper_id": "moprd-2", "source": "moprd", "text": texts[1]}]
    collected = tmp_path / "collected"
    collected.mkdir()
    (collected / "reviews.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    from surveyalign.constants import DIMENSIONS

    replies = [json.dumps({d: {"label": 0, "snippets": []} for d in DIMENSIONS})] * 3
    assert main(["data", "annotate", "--reviews", str(collected), "--judge",
                 str(_judge_yaml(tmp_path / "judge.yaml", replies)), "--out", str(tmp_path / "annotated")]) == 0
    ids = [a["review_id"] for a in read_jsonl(tmp_path / "annotated" / "annotations.jsonl")]
    renamed = [f"moprd-1-1-r1-{hashlib.sha256(t.encode()).hexdigest()[:8]}" for t in texts]
    assert ids == [*renamed, "moprd-2-1-r1"]  # 3 distinct reviews, the repeat annotated once, the unique id kept
    err = capsys.readouterr().err
    assert "repeated; annotated once" in err and err.count("another review has the same id") == 2
    tasks = json.loads((tmp_path / "annotated" / "label_studio" / "tasks.json").read_text())
    assert len(tasks) == 3


def test_annotate_into_a_folder_of_other_reviews_keeps_their_annotations(tmp_path, capsys):
    """Issue 21 A across runs: ``data annotate`` on reviews B into the OUT of reviews A used to rewrite
    annotations.jsonl with B's records only; A's annotations stay (after B's), a review in both is updated."""
    from surveyalign.annotation import read_jsonl
    from surveyalign.constants import DIMENSIONS

    replies = [json.dumps({d: {"label": 0, "snippets": []} for d in DIMENSIONS})]
    judge = str(_judge_yaml(tmp_path / "judge.yaml", replies))
    for name, ids in (("a", ["moprd-1-1-r1", "moprd-2-1-r1"]), ("b", ["moprd-2-1-r1", "moprd-3-1-r1"])):
        folder = tmp_path / name
        folder.mkdir()
        rows = [{"review_id": i, "paper_id": i[:7], "source": "moprd", "text": f"Summary of {i}. It is clear."}
                for i in ids]
        (folder / "reviews.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        assert main(["data", "annotate", "--reviews", str(folder), "--judge", judge, "--out", str(tmp_path / "out")]) == 0
    ids = [a["review_id"] for a in read_jsonl(tmp_path / "out" / "annotations.jsonl")]
    assert ids == ["moprd-2-1-r1", "moprd-3-1-r1", "moprd-1-1-r1"]  # this run's two, then the earlier one kept
    assert json.loads((tmp_path / "out" / "annotate_report.json").read_text())["carried_over"] == 1
    assert "kept the 1 annotation(s) of an earlier run on reviews not in this one" in capsys.readouterr().err

"""Release edges (issue 27), every value by hand: which labels are written (released rules only, 0 and -3 kept),
records per review and per reviewer (a later round's label replaces an earlier one), stale files removed, the
articles shards of 100, the paper-level split and its default seed, the provenance and the card section with the
annotator line (SurveyReview §4, App. A-B)."""

from __future__ import annotations

import datetime as dt
import json
import re

import pytest

import surveyalign
from surveyalign.annotation import (
    ReviewRecord,
    SurveyRecord,
    agreement_table,
    card_section,
    render_table,
    write_release,
)
from surveyalign.annotation.release import annotator_line
from surveyalign.data import split_papers

BATS = SurveyRecord("moprd-8120", "moprd", title="Chauves-souris : revue générale", abstract="We review bats.",
                    text="# Chauves-souris\n\nElles volent la nuit, été comme hiver.\n")
F1000 = SurveyRecord("f1000-77", "f1000", title="Sleep: a review", abstract="")
EARLY = SurveyRecord("f1000-50", "f1000", title="Owls")
UNREVIEWED = SurveyRecord("openreview-F1", "openreview", title="Pruning", text="# Pruning\n")

R_A = ReviewRecord("moprd-8120-1-r1", "moprd-8120", "moprd", "Round one.", reviewer_index=1, version=1)
R_B = ReviewRecord("moprd-8120-2-r1", "moprd-8120", "moprd", "Round two.", reviewer_index=1, version=2)
R_C = ReviewRecord("moprd-8120-1-r2", "moprd-8120", "moprd", "Other reviewer.", reviewer_index=2, version=1)
R_D = ReviewRecord("f1000-77-1-r1", "f1000-77", "f1000", "F1000 report.", reviewer_index=1, version=1)
R_E = ReviewRecord("f1000-50-1-r1", "f1000-50", "f1000", "Not labelled yet.")  # sorted first, no final label


def _final(label, rule, *snippets):
    return {"label": label, "rule": rule, "snippets": list(snippets), "annotators": []}


FINALS = {
    ("moprd-8120-1-r1", "readability"): _final(-1, "agreed", "Round one."),
    ("moprd-8120-1-r1", "criticalness"): _final(2, "third_decision", "one"),
    ("moprd-8120-1-r1", "structure"): _final(0, "single_annotator"),
    ("moprd-8120-2-r1", "readability"): _final(1, "llm_unverified", "Round two."),
    ("moprd-8120-2-r1", "comprehensiveness"): _final(-3, "agreed"),
    ("moprd-8120-1-r2", "structure"): _final(None, "unresolved"),
    ("moprd-8120-1-r2", "readability"): _final(None, "not_annotated"),
    ("f1000-77-1-r1", "criticalness"): _final(-2, "single_annotator", "F1000 report."),
    ("f1000-77-1-r1", "readability"): _final(1, "agreed", "F1000"),
}
JUDGE = {"backend": {"kind": "openai", "options": {"model": "gpt-x", "base_url": "http://x"}},
         "generation": {"temperature": 0.7, "max_new_tokens": 256}}


def _read(path):
    return json.loads(path.read_text(encoding="utf-8"))


def test_records_grouped_rounds_files_and_provenance(tmp_path, ascii_locale):
    out = tmp_path / "release"
    (out / "raw").mkdir(parents=True)
    (out / "raw" / "train_samples.json").write_text("[]")  # stale: this release has no train split
    (out / "articles").mkdir()
    (out / "articles" / "articles_part7.json").write_text("{}")
    table = agreement_table({"readability": [(1, 1), (-1, 1)]}, n_boot=0)
    prov = write_release(out, [BATS, F1000, UNREVIEWED, EARLY], [R_C, R_B, R_D, R_E, R_A], FINALS, split="test",
                         agreement={"humain contre humain, été": table},
                         provenance={"annotator_model": {"description": JUDGE}, "human_annotators": ["a", "b"],
                                     "prompt_version": "annotate-v1", "note": "relu par Zoë"})
    raw = _read(out / "raw" / "test_samples.json")
    assert [r["uid"] for r in raw] == ["f1000-77-1-r1", "moprd-8120-1-r1", "moprd-8120-2-r1"]
    assert raw[1] == {"uid": "moprd-8120-1-r1", "paper_title": "Chauves-souris : revue générale",
                      "paper_abstract": "We review bats.", "review_content": "Round one.", "source": "moprd",
                      "paper_title_zh": "", "paper_abstract_zh": "", "review_content_zh": "", "result": [
                          {"dimension": "Readability", "score": -1.0, "reasons": ["Round one."]},
                          {"dimension": "Structure", "score": 0.0, "reasons": []},
                          {"dimension": "Criticalness", "score": 2.0, "reasons": ["one"]}]}
    assert raw[0]["result"] == [{"dimension": "Readability", "score": 1.0, "reasons": ["F1000"]},
                                {"dimension": "Criticalness", "score": -2.0, "reasons": ["F1000 report."]}]
    assert raw[2]["result"] == [{"dimension": "Readability", "score": 1.0, "reasons": ["Round two."]},
                                {"dimension": "Comprehensiveness", "score": -3.0, "reasons": []}]
    raw_text = (out / "raw" / "test_samples.json").read_text(encoding="utf-8")
    assert raw_text.startswith('[\n {\n  "uid": "f1000-77-1-r1",\n') and "revue générale" in raw_text
    grouped = _read(out / "test" / "grouped_testset.json")
    assert [(g["uid"], g["review_content"]) for g in grouped] == [
        ("f1000-77-1-r1", "F1000 report."), ("moprd-8120-2-r1", "Round one.\n\nRound two.")]
    assert [(g["paper_title"], g["source"]) for g in grouped] == [("Sleep: a review", "f1000"),
                                                                  ("Chauves-souris : revue générale", "moprd")]
    assert (out / "test" / "grouped_testset.json").read_text(encoding="utf-8").startswith('[\n {\n  "uid"')
    assert grouped[1]["result"] == [  # the second round's readability replaces the first's; dimension order
        {"dimension": "Readability", "score": 1.0, "reasons": ["Round two."]},
        {"dimension": "Structure", "score": 0.0, "reasons": []},
        {"dimension": "Comprehensiveness", "score": -3.0, "reasons": []},
        {"dimension": "Criticalness", "score": 2.0, "reasons": ["one"]}]
    assert not (out / "raw" / "train_samples.json").exists() and not (out / "train").exists()
    assert sorted(p.name for p in (out / "articles").iterdir()) == ["articles_part1.json"]
    assert _read(out / "articles" / "articles_part1.json") == {"moprd-8120": BATS.text}
    assert (out / "articles" / "articles_part1.json").read_text(encoding="utf-8") == (
        '{\n "moprd-8120": "# Chauves-souris\\n\\nElles volent la nuit, été comme hiver.\\n"\n}\n')
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", prov.pop("created"))
    assert prov == {
        "surveyalign_version": surveyalign.__version__,
        "guideline_version": "surveyalign-annotation-1",
        "files": ["raw/test_samples.json", "test/grouped_testset.json", "articles/articles_part1.json"],
        "final_labels_file": "final_labels.jsonl",
        "papers": 3,
        "papers_per_source": {"f1000": 2, "moprd": 1},
        # without data identify's report: what the release holds per source (R_D of f1000-77, R_A and R_B written)
        "sources": {"f1000": {"papers": 2, "reviews": 2, "reviews_written": 1},
                    "moprd": {"papers": 1, "reviews": 3, "reviews_written": 2}},
        "papers_without_text": ["f1000-50", "f1000-77"],
        "reviews": 5,
        "reviews_written": 3,
        "reviews_without_final_label": ["f1000-50-1-r1", "moprd-8120-1-r2"],
        "split": {"policy": "test", "seed": 42, "test_fraction": None, "papers": {"test": 3}},
        "final_label_rules": {"agreed": 3, "llm_unverified": 1, "not_annotated": 1, "single_annotator": 2,
                              "third_decision": 1, "unresolved": 1},
        "labels": {"readability": {"-3": 0, "-2": 0, "-1": 1, "0": 0, "+1": 2, "+2": 0},
                   "structure": {"-3": 0, "-2": 0, "-1": 0, "0": 1, "+1": 0, "+2": 0},
                   "comprehensiveness": {"-3": 1, "-2": 0, "-1": 0, "0": 0, "+1": 0, "+2": 0},
                   "criticalness": {"-3": 0, "-2": 1, "-1": 0, "0": 0, "+1": 0, "+2": 1}},
        "excluded_from_training_and_evaluation": "labels 0 (not mentioned) and -3 (unjudgeable), dropped by "
                                                 "`surveyalign data build`",
        "annotator_model": {"description": JUDGE},
        "human_annotators": ["a", "b"],
        "prompt_version": "annotate-v1",
        "note": "relu par Zoë",
        "agreement": {"humain contre humain, été": table},
    }
    written = _read(out / "provenance.json")
    assert written.pop("created") and written == prov
    # every unit's final label with its rule, sorted by unit; released only when written into the sample files
    lines = [json.loads(x) for x in (out / "final_labels.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [(x["review_id"], x["dimension"], x["label"], x["rule"], x["released"]) for x in lines] == [
        ("f1000-77-1-r1", "criticalness", -2, "single_annotator", True),
        ("f1000-77-1-r1", "readability", 1, "agreed", True),
        ("moprd-8120-1-r1", "criticalness", 2, "third_decision", True),
        ("moprd-8120-1-r1", "readability", -1, "agreed", True),
        ("moprd-8120-1-r1", "structure", 0, "single_annotator", True),
        ("moprd-8120-1-r2", "readability", None, "not_annotated", False),
        ("moprd-8120-1-r2", "structure", None, "unresolved", False),
        ("moprd-8120-2-r1", "comprehensiveness", -3, "agreed", True),
        ("moprd-8120-2-r1", "readability", 1, "llm_unverified", True)]
    assert lines[2] == {"review_id": "moprd-8120-1-r1", "dimension": "criticalness", "label": 2,
                        "rule": "third_decision", "released": True, "annotators": [], "labels": {},
                        "snippets": ["one"]}
    prov_text = (out / "provenance.json").read_text(encoding="utf-8")
    assert prov_text.startswith('{\n  "surveyalign_version"') and '"relu par Zoë"' in prov_text
    assert '"Chauves-souris : revue générale"' in (out / "test" / "grouped_testset.json").read_text(encoding="utf-8")
    card = (out / "ANNOTATION.md").read_text(encoding="utf-8")
    assert card.splitlines()[4:] == [
        "- Papers: 3 (f1000 2, moprd 1); reviews: 5 (3 with a final label).",
        ("- Pre-annotation: backend `openai`, model `gpt-x`, temperature 0.7, max_new_tokens 256 (prompt "
        "`annotate-v1`); every snippet was checked against its review, flagged ones were never released as verbatim."),
        "- Human verification in Label Studio by 2 annotator(s).",
        ("- How each final label was decided: agreed 3, llm_unverified 1, not_annotated 1, single_annotator 2, "
        "third_decision 1, unresolved 1"),
        "", *render_table(table, "humain contre humain, été").splitlines(), ""]
    assert card.splitlines()[1] == card.splitlines()[3] == ""
    assert card.startswith("## Annotation\n\nEach (survey, review, dimension) unit was labelled with one of six "
                           "labels, +2, +1, -1, -2, 0 or -3") and "(guideline `surveyalign-annotation-1`)." in card
    # the same folder as a train release: the test files go, the train files come
    write_release(out, [BATS, F1000], [R_A, R_D], FINALS, split="train", agreement={"t": table})
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*.json")) == [
        "articles/articles_part1.json", "provenance.json", "raw/train_samples.json", "train/grouped_trainset.json"]


def test_created_in_utc_and_a_release_without_labels(tmp_path, far_east):
    before = dt.datetime.now(dt.UTC).replace(microsecond=0)
    prov = write_release(tmp_path / "new" / "release", [EARLY], [R_E], FINALS, split="train")
    created = dt.datetime.strptime(prov["created"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=dt.UTC)
    assert before <= created <= dt.datetime.now(dt.UTC)  # UTC, not the machine's time zone
    assert (prov["files"], prov["reviews_written"], prov["reviews_without_final_label"]) == ([], 0, ["f1000-50-1-r1"])
    assert sorted(p.name for p in (tmp_path / "new" / "release").iterdir()) == ["ANNOTATION.md", "articles",
                                                                              "final_labels.jsonl", "provenance.json"]
    # every unit decided is listed, none released: R_E has no label and the other units' reviews are not in it
    lines = [json.loads(x) for x in (tmp_path / "new" / "release" / "final_labels.jsonl").read_text().splitlines()]
    assert len(lines) == len(FINALS) and not any(x["released"] for x in lines)
    assert prov["sources"] == {"f1000": {"papers": 1, "reviews": 1, "reviews_written": 0}}


def test_split_and_paper_errors(tmp_path):
    with pytest.raises(ValueError, match="unknown split 'validation'; expected one of paper-level, test, train"):
        write_release(tmp_path, [BATS], [R_A], FINALS, split="validation")
    with pytest.raises(ValueError, match="review.s. of paper f1000-77 whose survey is not in surveys.jsonl"):
        write_release(tmp_path, [BATS], [R_D, R_A, ReviewRecord("x-9-1-r1", "x-9", "x", "t")], FINALS)


def _papers(n, source="moprd", text=False):
    surveys = [SurveyRecord(f"{source}-{k:03d}", source, title=f"Survey {k}", text=f"text {k}" if text else "")
               for k in range(n)]
    reviews = [ReviewRecord(f"{s.paper_id}-1-r1", s.paper_id, source, f"Review {k}.") for k, s in enumerate(surveys)]
    finals = {(r.review_id, "structure"): _final(1, "agreed", r.text) for r in reviews}
    return surveys, reviews, finals


def test_paper_level_split_by_source_with_the_default_seed(tmp_path):
    surveys, reviews, finals = _papers(10)
    prov = write_release(tmp_path / "a", surveys, reviews, finals)
    # 10 papers: 3 in test (a quarter, rounded half up), validation papers written to train
    assert prov["split"] == {"policy": "paper-level", "seed": 42, "test_fraction": 0.25,
                             "papers": {"test": 3, "train": 7}}
    expected = split_papers({s.paper_id: "moprd" for s in surveys}, seed=42, test_fraction=0.25)
    assert "validation" in expected.values()
    test_uids = {r["uid"] for r in _read(tmp_path / "a" / "raw" / "test_samples.json")}
    train_uids = {r["uid"] for r in _read(tmp_path / "a" / "raw" / "train_samples.json")}
    assert test_uids == {f"{p}-1-r1" for p, s in expected.items() if s == "test"}
    assert train_uids == {f"{p}-1-r1" for p, s in expected.items() if s != "test"}
    prov = write_release(tmp_path / "b", surveys, reviews, finals, seed=3, test_fraction=0.5)
    assert prov["split"] == {"policy": "paper-level", "seed": 3, "test_fraction": 0.5, "papers": {"test": 5, "train": 5}}
    other = split_papers({s.paper_id: "moprd" for s in surveys}, seed=3, test_fraction=0.5)
    assert {r["uid"] for r in _read(tmp_path / "b" / "test" / "grouped_testset.json")} == {
        f"{p}-1-r1" for p, s in other.items() if s == "test"} != test_uids


def test_articles_are_sharded_by_100(tmp_path):
    surveys, reviews, finals = _papers(101, text=True)
    prov = write_release(tmp_path, surveys, reviews, finals, split="train")
    assert prov["files"][-2:] == ["articles/articles_part1.json", "articles/articles_part2.json"]
    first, second = (_read(tmp_path / "articles" / f"articles_part{n}.json") for n in (1, 2))
    assert len(first) == 100 and next(iter(first)) == "moprd-000" and second == {"moprd-100": "text 100"}


def test_annotator_line_and_card_without_a_judge():
    assert annotator_line(None) == "none recorded" and annotator_line({}) == "none recorded"
    assert annotator_line({"backend": {}}) == "backend `?`"
    assert annotator_line({"backend": {"kind": "vllm", "options": {"model": ""}},
                           "generation": {"temperature": None, "max_new_tokens": 0}}) == "backend `vllm`, max_new_tokens 0"
    assert annotator_line({"backend": {"kind": "hf"}, "generation": {"temperature": 1.0}}) == (
        "backend `hf`, temperature 1")
    prov = {"guideline_version": "g", "papers": 1, "papers_per_source": {"f1000": 1}, "reviews": 2,
            "reviews_written": 1, "final_label_rules": {"agreed": 3}}
    card = card_section(prov, {})
    assert "- Pre-annotation: none recorded (prompt `n/a`)" in card
    assert "- Human verification in Label Studio by 0 annotator(s)." in card and card.endswith("agreed 3\n\n")


def test_sources_identification_line_and_who_gave_which_label(tmp_path):
    # data identify's per-source counts and the person's check (collect's report) go into provenance["sources"]
    extra = {"identification": {
        "per_source": {"f1000": {"candidates": 5, "keyword_match": 3, "screened": 3, "llm_yes": 2, "llm_no": 1,
                                 "proposed": 2},
                       "openreview": {"candidates": 4, "keyword_match": 1, "screened": 1, "llm_failed": 1}},
        "total": {"candidates": 9, "keyword_match": 4, "screened": 4, "llm_yes": 2, "proposed": 2}},
        "collection": {"verification": {"total": {"confirmed": 1},
                                        "per_source": {"f1000": {"rows": 5, "confirmed": 1}}}}}
    given = {("f1000-77-1-r1", "readability"): {"b": 1, "a": 1, "llm": 2}}
    prov = write_release(tmp_path, [F1000], [R_D], FINALS, split="test", provenance=extra, given=given)
    assert prov["sources"] == {
        "f1000": {"candidates": 5, "keyword_match": 3, "screened": 3, "llm_yes": 2, "proposed": 2, "confirmed": 1,
                  "papers": 1, "reviews": 1, "reviews_written": 1},
        # candidates of a source with no confirmed paper are still counted, every stage at 0 where absent
        "openreview": {"candidates": 4, "keyword_match": 1, "screened": 1, "llm_yes": 0, "proposed": 0,
                       "confirmed": 0, "papers": 0, "reviews": 0, "reviews_written": 0}}
    card = (tmp_path / "ANNOTATION.md").read_text(encoding="utf-8").splitlines()
    assert card[4:6] == [("- Identification: 9 candidate papers, 4 with a title keyword, 4 screened by the LLM "
                          "(2 yes), 2 proposed, 1 confirmed by a person."),
                         "- Papers: 1 (f1000 1); reviews: 1 (1 with a final label)."]
    lines = [json.loads(x) for x in (tmp_path / "final_labels.jsonl").read_text().splitlines()]
    assert [(x["dimension"], x["labels"]) for x in lines if x["review_id"] == "f1000-77-1-r1"] == [
        ("criticalness", {}), ("readability", {"a": "+1", "b": "+1", "llm": "+2"})]
    # without the person's check the card says nothing about it, and no "confirmed" count is made up
    del extra["collection"]
    prov = write_release(tmp_path, [F1000], [R_D], FINALS, split="test", provenance=extra)
    assert "confirmed" not in prov["sources"]["f1000"]
    assert (tmp_path / "ANNOTATION.md").read_text().splitlines()[4].endswith("4 screened by the LLM (2 yes), 2 proposed.")

"""Pre-annotation edges (issue 27), every figure by hand: each review status (ok / partial / parse_failed /
api_error) and dimension status with its problems, the report's counts, K samples (seeds, majority, the first
sample's snippets, votes in label order, failed samples), titles in the prompt, the output files and a re-run that
asks again only the unreadable answer, and the ids of repeated or clashing reviews (SurveyReview §4.3, App. A)."""

from __future__ import annotations

import json

import pytest

from surveyalign.annotation import (
    ReviewRecord,
    annotate_reviews,
    unique_reviews,
    vote_label,
)
from surveyalign.backends import GenerationSettings, load_backend
from surveyalign.calls import make_call

OK = ("The prose is clear and pleasant to read. The section order feels arbitrary. "
      "Recent cohort studies are missing from the references.")
PARTIAL = "Hard to follow in places."
UNREADABLE = "Fine work overall."
FAILING = "Nothing to say here."

ANSWERS = {
    OK: json.dumps({
        "readability": {"label": 1, "snippets": ["The prose is clear and pleasant to read."]},
        "structure": {"label": -1, "snippets": ["The section order feels arbitrary.",
                                                 "The reviewer never wrote this sentence at all."]},
        "comprehensiveness": {"label": -2, "snippets": ["Recent cohort study are missing from the references."]},
        "criticalness": {"label": -3, "snippets": []},
    }),
    PARTIAL: json.dumps({"readability": {"label": -1, "snippets": ["Hard to follow in places."]}}),
    UNREADABLE: "I cannot tell.",
    FAILING: RuntimeError("quota"),
}


def _review_of(messages) -> str:
    return messages[-1]["content"].split("=== Review report ===\n", 1)[1].split("\n=== End of review report", 1)[0]


def _reviews(*texts: str) -> list[ReviewRecord]:
    return [ReviewRecord(review_id=f"r{i}", paper_id=f"p{i}", source="moprd", text=t) for i, t in enumerate(texts, 1)]


def test_vote_label_votes_in_label_order_and_three_way_ties():
    assert list(vote_label([-1, -3, -1])[1].items()) == [("-3", 1), ("-1", 2)]
    assert vote_label([2, -1, 1]) == (2, {"-1": 1, "1": 1, "2": 1}, True)
    assert vote_label([None, -2, 1, 1, -2]) == (-2, {"-2": 2, "1": 2}, True)
    assert vote_label([0]) == (0, {"0": 1}, False)


def test_every_review_and_dimension_status_and_the_report():
    backend = load_backend("scripted", replies=lambda messages, settings, index: ANSWERS[_review_of(messages)])
    result = annotate_reviews(_reviews(OK, PARTIAL, UNREADABLE, FAILING), backend, GenerationSettings(seed=3))
    ok, partial, unreadable, failing = result.records
    assert [r["status"] for r in result.records] == ["ok", "partial", "parse_failed", "api_error"]
    assert {k: ok[k] for k in ("review_id", "paper_id", "source", "annotator")} == {
        "review_id": "r1", "paper_id": "p1", "source": "moprd", "annotator": "llm"}
    read = ok["dimensions"]["readability"]
    assert read == {"label": 1, "status": "labelled", "votes": {"1": 1}, "tie": False, "problems": [], "snippets": [
        {"text": "The prose is clear and pleasant to read.", "status": "exact", "start": 0, "end": 40, "score": 100.0,
         "verbatim": True, "span": "The prose is clear and pleasant to read."}]}
    structure = ok["dimensions"]["structure"]
    assert [(s["status"], s["start"], s["end"], s["span"]) for s in structure["snippets"]] == [
        ("exact", 41, 75, "The section order feels arbitrary."), ("missing", None, None, None)]
    comp = ok["dimensions"]["comprehensiveness"]["snippets"][0]
    assert (comp["status"], comp["verbatim"], comp["span"]) == ("near", False, None)
    assert OK[comp["start"]:comp["end"]].startswith("Recent cohort studies are missing")
    # a label other than 0 without a snippet is kept and noted; label 0 needs none
    assert ok["dimensions"]["criticalness"] == {"label": -3, "status": "labelled", "votes": {"-3": 1}, "tie": False,
                                                "snippets": [], "problems": [("criticalness: label -3 given without a "
                                                                             "snippet")]}
    assert partial["dimensions"]["structure"] == {"label": None, "status": "parse_failed", "votes": {}, "tie": False,
                                                  "snippets": [], "problems": ["structure: missing or not an object"]}
    assert partial["dimensions"]["readability"]["label"] == -1
    no_json = "invalid JSON: no JSON object in the answer"
    assert unreadable["dimensions"]["criticalness"]["problems"] == [no_json]
    assert unreadable["samples"] == [{"sample": 0, "text": "I cannot tell.", "error": None, "finish_reason": "stop",
                                      "cached": False, "problems": [no_json]}]
    for dim in failing["dimensions"].values():  # the backend's error stands in for the parse problems
        assert dim == {"label": None, "status": "api_error", "votes": {}, "tie": False, "snippets": [],
                       "problems": ["RuntimeError: quota"]}
    assert failing["samples"][0]["problems"] == [] and failing["samples"][0]["error"] == "RuntimeError: quota"
    report = result.report
    assert {k: report[k] for k in ("reviews", "samples_per_review", "calls", "calls_cached", "calls_failed")} == {
        "reviews": 4, "samples_per_review": 1, "calls": 4, "calls_cached": 0, "calls_failed": 1}
    assert report["review_status"] == {"ok": 1, "partial": 1, "parse_failed": 1, "api_error": 1}
    assert report["labels"] == {
        "readability": {"-3": 0, "-2": 0, "-1": 1, "0": 0, "1": 1, "2": 0},
        "structure": {"-3": 0, "-2": 0, "-1": 1, "0": 0, "1": 0, "2": 0},
        "comprehensiveness": {"-3": 0, "-2": 1, "-1": 0, "0": 0, "1": 0, "2": 0},
        "criticalness": {"-3": 1, "-2": 0, "-1": 0, "0": 0, "1": 0, "2": 0}}
    assert report["dimensions_without_label"] == {"readability": 2, "structure": 3, "comprehensiveness": 3,
                                                  "criticalness": 3}
    assert report["snippets"] == {"exact": 3, "layout": 0, "near": 1, "missing": 1}
    assert report["snippets_flagged"] == 2
    assert (report["prompt_version"], report["guideline_version"]) == ("annotate-v1", "surveyalign-annotation-1")
    assert report["judge"] == {"backend": "scripted", "replies": None, "cycle": False}  # the backend identity
    assert report["settings"]["seed"] == 3 and report["answers"] is None  # no output folder, no cache


def test_label_zero_without_snippet_is_no_problem_and_labels_are_counted_over_reviews():
    answer = {d: {"label": 0, "snippets": []} for d in ("readability", "structure", "comprehensiveness",
                                                         "criticalness")}
    result = annotate_reviews(_reviews(PARTIAL, UNREADABLE), load_backend("scripted", replies=[json.dumps(answer)] * 2),
                              GenerationSettings())
    assert [r["status"] for r in result.records] == ["ok", "ok"]
    assert all(d["problems"] == [] for r in result.records for d in r["dimensions"].values())
    assert result.report["labels"]["structure"] == {"-3": 0, "-2": 0, "-1": 0, "0": 2, "1": 0, "2": 0}


def test_progress_bar_only_when_asked(capsys):
    backend = load_backend("scripted", replies=lambda m, s, i: ANSWERS[PARTIAL])
    annotate_reviews(_reviews(PARTIAL), backend, GenerationSettings())
    assert capsys.readouterr().err == ""
    annotate_reviews(_reviews(PARTIAL), backend, GenerationSettings(), progress=True)
    assert "annotate: 100%" in capsys.readouterr().err  # the bar on stderr, named after the stage


def test_k_samples_seeds_majority_and_the_first_winning_samples_snippets(tmp_path):
    text = "Alpha sentence here. Beta sentence here. Gamma sentence here."
    by_seed = {
        10: {"readability": (-1, "Alpha sentence here."), "structure": (2, "Alpha sentence here."),
             "comprehensiveness": (-1, "Alpha sentence here.")},
        11: {"readability": (1, "Beta sentence here."), "structure": (-2, "Beta sentence here."),
             "comprehensiveness": (-3, "Beta sentence here.")},
        12: {"readability": (1, "Gamma sentence here."), "comprehensiveness": (-1, "Gamma sentence here.")},
    }

    def reply(messages, settings, index):  # the K samples of a prompt are one request: index k is sample k
        return json.dumps({d: {"label": lab, "snippets": [s]} for d, (lab, s) in by_seed[10 + index].items()})

    backend = load_backend("scripted", replies=reply)
    settings = GenerationSettings(seed=10)
    result = annotate_reviews(_reviews(text), backend, settings, samples=3, judge={"who": "me"}, out=tmp_path)
    # sample k is cached under seed 10 + k
    messages = backend.calls[0][0]
    keys = [json.loads(x)["key"] for x in (tmp_path / "calls.jsonl").read_text().splitlines()]
    assert keys == [make_call(backend, GenerationSettings(seed=seed), stage="annotate", unit_id="r1",
                              namespace="annotation.annotate", messages=messages, sample=k).key
                    for k, seed in enumerate((10, 11, 12))]
    dims = result.records[0]["dimensions"]
    read = dims["readability"]
    assert (read["label"], read["votes"], read["tie"]) == (1, {"-1": 1, "1": 2}, False)
    assert [s["text"] for s in read["snippets"]] == ["Beta sentence here."]  # sample 1: the first with label 1
    assert (dims["structure"]["label"], dims["structure"]["tie"]) == (2, True)  # tie: the label seen first
    assert [s["text"] for s in dims["structure"]["snippets"]] == ["Alpha sentence here."]
    assert list(dims["comprehensiveness"]["votes"].items()) == [("-3", 1), ("-1", 2)]
    assert dims["criticalness"]["status"] == "parse_failed"
    assert len(dims["criticalness"]["problems"]) == 1  # the same reason in all three samples, once
    assert [s["sample"] for s in result.records[0]["samples"]] == [0, 1, 2]
    assert result.records[0]["status"] == "partial"
    assert (result.report["calls"], result.report["samples_per_review"], result.report["judge"]) == (
        3, 3, {"who": "me"})
    assert result.report["labels"]["readability"] == {"-3": 0, "-2": 0, "-1": 0, "0": 0, "1": 1, "2": 0}


def test_failed_samples_api_error_only_when_every_sample_failed():
    def reply(messages, settings, index):
        review = _review_of(messages)
        if review == FAILING:
            return RuntimeError(f"down {index}")
        return RuntimeError("timeout") if index == 0 else "no json at all"

    result = annotate_reviews(_reviews(FAILING, UNREADABLE), load_backend("scripted", replies=reply),
                              GenerationSettings(seed=0), samples=2)
    failing, mixed = result.records
    assert failing["status"] == "api_error"
    assert failing["dimensions"]["readability"]["problems"] == ["RuntimeError: down 0"]  # the first error only
    assert mixed["status"] == "parse_failed"  # one sample answered: not an API error
    assert mixed["dimensions"]["readability"]["status"] == "parse_failed"
    assert mixed["dimensions"]["readability"]["problems"] == ["invalid JSON: no JSON object in the answer"]
    assert result.report["calls_failed"] == 3
    assert result.report["review_status"] == {"ok": 0, "partial": 0, "parse_failed": 1, "api_error": 1}


def test_samples_below_one_are_refused():
    with pytest.raises(ValueError, match="samples must be >= 1, got 0"):
        annotate_reviews(_reviews(OK), load_backend("scripted", replies=["{}"]), GenerationSettings(), samples=0)


def test_titles_go_into_the_prompt():
    backend = load_backend("scripted", replies=[ANSWERS[PARTIAL], ANSWERS[PARTIAL]])
    annotate_reviews(_reviews(PARTIAL, PARTIAL + " Again."), backend, GenerationSettings(),
                     titles={"p1": "Sleep staging: a review"})
    first, second = (c[0][-1]["content"] for c in backend.calls)
    assert "Reviewed survey: Sleep staging: a review\n\n=== Review report ===" in first
    assert "Reviewed survey:" not in second


def test_output_files_and_a_rerun_asks_again_only_the_unreadable_answer(tmp_path, ascii_locale):
    out = tmp_path / "runs" / "annotated"  # parents created
    naive = "A naïve reading of the field. " + PARTIAL
    readable = json.dumps({"readability": {"label": -1, "snippets": ["A naïve reading of the field."]}},
                          ensure_ascii=False)
    # callables on both runs: the same backend identity, so the same cache keys
    first = load_backend("scripted", replies=lambda m, s, i: "{}" if _review_of(m) == UNREADABLE else readable)
    result = annotate_reviews(_reviews(naive, UNREADABLE), first, GenerationSettings(), out=out,
                              judge={"model": "modèle"})
    assert result.report["answers"] == {"reused": 0, "retried": 0, "made": 2}
    lines = (out / "annotations.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(x) for x in lines] == result.records
    assert "naïve" in lines[0]  # written as UTF-8, not escaped
    report_text = (out / "annotate_report.json").read_text(encoding="utf-8")
    assert report_text.startswith('{\n  "reviews": 2,\n') and report_text.endswith("}\n")
    assert '"judge": {\n    "model": "modèle"\n  }' in report_text
    assert json.loads(report_text) == result.report
    assert result.records[1]["status"] == "parse_failed"
    # "{}" labels nothing: asked again on the re-run; the readable answer is reused
    second = load_backend("scripted", replies=lambda m, s, i: json.dumps({"structure": {"label": 0, "snippets": []}}))
    again = annotate_reviews(_reviews(naive, UNREADABLE), second, GenerationSettings(), out=out)
    assert len(second.calls) == 1 and _review_of(second.calls[0][0]) == UNREADABLE
    assert again.report["answers"] == {"reused": 1, "retried": 1, "made": 0}
    assert again.report["calls_cached"] == 1
    assert [s["cached"] for r in again.records for s in r["samples"]] == [True, False]
    assert again.records[1]["status"] == "partial"


def test_unique_reviews_merges_repeats_and_renames_clashing_ids():
    same = "The tables are hard to read."
    reviews = [ReviewRecord(review_id="r1", paper_id="p1", source="f1000", text=same),
               ReviewRecord(review_id="r1", paper_id="p1", source="f1000", text=same),
               ReviewRecord(review_id="r1", paper_id="p2", source="f1000", text="Second review of another paper."),
               ReviewRecord(review_id="r2", paper_id="p2", source="f1000", text="Third.")]
    out, messages = unique_reviews(reviews)
    # 8 hex digits of the text's SHA-256: 387aa5dd..., adff122f...
    assert [(r.review_id, r.paper_id) for r in out] == [("r1-387aa5dd", "p1"), ("r1-adff122f", "p2"), ("r2", "p2")]
    assert messages == ["review 'r1' (paper p1): repeated; annotated once",
                        "review 'r1' (paper p1): another review has the same id; annotated as 'r1-387aa5dd'",
                        "review 'r1' (paper p2): another review has the same id; annotated as 'r1-adff122f'"]
    assert out[0].text == same and reviews[0].review_id == "r1"  # the input records are not changed
    assert unique_reviews(reviews[3:]) == ([reviews[3]], [])

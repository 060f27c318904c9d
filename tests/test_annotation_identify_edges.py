"""Survey identification edges (issue 27), every figure by hand: the candidate readers (CSV, JSON lines, JSON; the
fallback field names; every error with file and row), whole-word keywords, the screen reader's fallbacks, stage 2
skipped / on every candidate / failing, the report and the files written, a re-run asking again only the unreadable
screen, and the verification file's counts (SurveyReview §4.1)."""

from __future__ import annotations

import csv
import json

import pytest

from surveyalign.annotation import Candidate, keyword_hits, read_candidates, read_screen
from surveyalign.annotation.identify import (
    SCREEN_VERSION,
    build_screen_messages,
    identify_surveys,
    read_verification,
    write_verification,
)
from surveyalign.backends import GenerationSettings, load_backend
from surveyalign.calls import make_call


def _write(path, text):
    path.write_text(text, encoding="utf-8")
    return path


def test_read_candidates_csv_jsonl_json_and_fallback_fields(tmp_path, ascii_locale):
    csv_path = _write(tmp_path / "c.csv", "id,title,abstract,source,doi\n"
                                          " 11 , A survey of bats , Chauves-souris : étude. , F1000 , 10.1/x \n"
                                          "12,Bat calls,,,\n")
    assert read_candidates(csv_path) == [
        Candidate(id="11", title="A survey of bats", abstract="Chauves-souris : étude.", source="f1000", doi="10.1/x"),
        Candidate(id="12", title="Bat calls", abstract="", source="unknown", doi="")]
    lines = [{"uid": "u1", "paper_title": "Sleep: a review", "paper_abstract": "We review sleep."},
             {"paper_id": 0, "title": "Zero", "source": " MOPRD "}]
    jsonl = _write(tmp_path / "c.jsonl", json.dumps(lines[0]) + "\n\n   \n" + json.dumps(lines[1]) + "\n")
    assert read_candidates(jsonl) == [
        Candidate(id="u1", title="Sleep: a review", abstract="We review sleep.", source="unknown"),
        Candidate(id="0", title="Zero", source="moprd")]  # an id 0 is an id
    # the first non-empty of id / uid / paper_id; title before paper_title
    array = _write(tmp_path / "c.json", json.dumps([{"id": "", "uid": None, "paper_id": "p7", "title": "T",
                                                     "paper_title": "Other", "abstract": "", "paper_abstract": "A"}]))
    assert read_candidates(array) == [Candidate(id="p7", title="T", abstract="A")]
    other = _write(tmp_path / "c.txt", json.dumps([{"id": "x", "title": "Y"}]))  # any other suffix: JSON
    assert read_candidates(other) == [Candidate(id="x", title="Y")]


@pytest.mark.parametrize(("name", "text", "message"), [
    ("bad.jsonl", '{"id": "a", "title": "t"}\n\n{"id": \n', r"bad.jsonl: line 3: not valid JSON \(Expecting value\)"),
    ("bad.json", '[{"id": "a",\n "title": }]', r"bad.json: not valid JSON \(line 2: Expecting value\)"),
    ("obj.json", '{"id": "a", "title": "t"}', "obj.json: expected a JSON array of candidate objects"),
    ("row.json", '[{"id": "a", "title": "t"}, "b"]', "row.json: row 2: expected an object"),
    ("noid.json", '[{"id": "a", "title": "t"}, {"id": " ", "title": "t"}]', "noid.json: row 2: field id missing"),
    ("noids.json", '[{"title": "t", "uid": ""}]', "noids.json: row 1: field id missing or empty"),
    ("notitle.json", '[{"id": "a"}]', r"notitle.json: row 1 \(a\): field title missing or empty"),
    ("notitle.csv", "id,title\na,t\nb, \n", r"notitle.csv: row 2 \(b\): field title missing or empty"),
])
def test_read_candidates_errors_name_file_and_row(tmp_path, name, text, message):
    with pytest.raises(ValueError, match=message):
        read_candidates(_write(tmp_path / name, text))


def test_keyword_hits_custom_keywords_and_word_edges():
    assert keyword_hits("A SURVEY of Surveys", ["Survey", "surveys", "review"]) == ["Survey", "surveys"]
    assert keyword_hits("survey2 and 3review", ["survey", "review"]) == []  # digits are word characters here
    assert keyword_hits("(survey)", ["survey"]) == ["survey"]
    assert keyword_hits("A metareview, in short", ["review"]) == []  # a letter before the keyword
    assert keyword_hits("Progress in the state of the art", []) == []
    assert keyword_hits("Advances: a primer") == ["advances", "primer"]


def test_screen_prompt_is_screen_v1():
    """The screen's wording is part of every cache key and of the report's ``screen_version``: a change to it must
    come with a new SCREEN_VERSION (and this digest)."""
    import hashlib

    messages = build_screen_messages("  Bats: a review ", " ")
    assert [m["role"] for m in messages] == ["user"]
    content = messages[0]["content"]
    assert content.endswith("\n\nTitle: Bats: a review\n\nAbstract: (none given)")
    assert SCREEN_VERSION == "screen-v1"
    assert hashlib.sha256(content.encode()).hexdigest()[:16] == "0777f9eb980c3598"


def test_read_screen_fallbacks():
    assert read_screen('{"verdict": " YES ", "reason": "  a scoping review. "}') == ("yes", "a scoping review.")
    assert read_screen('{"survey": "no", "verdict": "yes"}') == ("no", "")  # survey first
    assert read_screen('{"survey": true, "reason": null}') == ("yes", "")
    assert read_screen('{"survey": null}') == ("failed", "verdict None is not yes or no")
    assert read_screen('{"reason": "x"}') == ("failed", "verdict None is not yes or no")
    assert read_screen("") == ("failed", "empty answer")
    assert read_screen(None)[0] == "failed"


CANDIDATES = [
    Candidate("1", "Sleep staging: a review", "Wearables.", "f1000"),
    Candidate("2", "A new detector", "We propose.", "f1000"),
    Candidate("3", "Bats: an overview", "", "moprd"),
    Candidate("4", "Graph learning trends", "", "openreview"),
]


def _screen(messages, settings, index):
    title = messages[0]["content"].split("Title: ", 1)[1].split("\n", 1)[0]
    if title.startswith("Bats"):
        return RuntimeError("overloaded")
    if title.startswith("Graph"):
        return "not sure"
    return json.dumps({"survey": "no" if "detector" in title else "yes", "reason": f"about {title}"})


def test_identify_without_a_judge_screens_nothing():
    result = identify_surveys(CANDIDATES, None, GenerationSettings())
    assert [(r["keyword_match"], r["keywords_found"], r["llm_verdict"], r["proposed"]) for r in result.rows] == [
        ("yes", "review", "not screened", "no"), ("no", "", "not screened", "no"),
        ("yes", "overview", "not screened", "no"), ("yes", "trends", "not screened", "no")]
    assert result.report["total"] == {"candidates": 4, "keyword_match": 3, "screened": 0, "llm_not_screened": 4,
                                      "proposed": 0}
    assert result.report["answers"] is None


def test_identify_screens_keyword_matches_failures_and_the_report():
    backend = load_backend("scripted", replies=_screen)
    result = identify_surveys(CANDIDATES, backend, GenerationSettings(seed=4), judge={"model": "m"},
                              input_report={"kind": "csv"})
    assert len(backend.calls) == 3  # the paper without a keyword is not screened
    assert "Abstract: (none given)" in backend.calls[1][0][0]["content"]
    assert result.rows[0] == {"id": "1", "source": "f1000", "title": "Sleep staging: a review", "keyword_match": "yes",
                              "keywords_found": "review", "llm_verdict": "yes",
                              "llm_reason": "about Sleep staging: a review", "proposed": "yes", "confirmed": "",
                              "substantive_reviews": "", "note": ""}
    assert [(r["llm_verdict"], r["llm_reason"], r["proposed"]) for r in result.rows[1:]] == [
        ("not screened", "", "no"), ("failed", "RuntimeError: overloaded", "no"),
        ("failed", "invalid JSON: no JSON object in the answer", "no")]
    report = result.report
    assert report["per_source"] == {
        "f1000": {"candidates": 2, "keyword_match": 1, "screened": 1, "llm_yes": 1, "llm_not_screened": 1,
                  "proposed": 1},
        "moprd": {"candidates": 1, "keyword_match": 1, "screened": 1, "llm_failed": 1, "proposed": 0},
        "openreview": {"candidates": 1, "keyword_match": 1, "screened": 1, "llm_failed": 1, "proposed": 0}}
    assert list(report["per_source"]) == ["f1000", "moprd", "openreview"]
    assert report["total"] == {"candidates": 4, "keyword_match": 3, "screened": 3, "llm_yes": 1,
                               "llm_not_screened": 1, "llm_failed": 2, "proposed": 1}
    assert {k: report[k] for k in ("candidates", "screen_all", "screen_version", "judge", "input", "answers")} == {
        "candidates": 4, "screen_all": False, "screen_version": "screen-v1", "judge": {"model": "m"},
        "input": {"kind": "csv"}, "answers": None}
    assert report["keywords"][:3] == ["survey", "surveys", "review"] and report["settings"]["seed"] == 4


def test_screen_all_screens_every_candidate_but_proposes_only_keyword_matches():
    backend = load_backend("scripted", replies=lambda m, s, i: json.dumps({"survey": "yes"}))
    result = identify_surveys(CANDIDATES[:2], backend, GenerationSettings(), screen_all=True)
    assert [(r["llm_verdict"], r["proposed"]) for r in result.rows] == [("yes", "yes"), ("yes", "no")]
    assert result.report["screen_all"] is True and result.report["total"]["screened"] == 2


def test_duplicate_candidate_ids_are_refused():
    with pytest.raises(ValueError, match="candidate id '1' appears 2 times"):
        identify_surveys([CANDIDATES[0], CANDIDATES[1], CANDIDATES[0]], None, GenerationSettings())


def test_custom_keywords_joined_and_files_without_a_judge(tmp_path):
    cands = [Candidate("1", "Bats and owls: a survey", source="moprd"), Candidate("2", "Owls", source="moprd")]
    result = identify_surveys(cands, None, GenerationSettings(), keywords=["owls", "bats"],
                              out=tmp_path / "a" / "b")  # no judge, no calls.jsonl: the folder is made here
    assert [r["keywords_found"] for r in result.rows] == ["owls;bats", "owls"]
    assert result.report["keywords"] == ["owls", "bats"]
    assert (tmp_path / "a" / "b" / "verification.csv").is_file() and not (tmp_path / "a" / "b" / "calls.jsonl").exists()


def test_identify_files_and_a_rerun_asks_again_only_the_unreadable_screen(tmp_path, ascii_locale):
    out = tmp_path / "runs" / "identified"
    cands = [Candidate("1", "Sleep staging: a review", "Wearables.", "f1000"),
             Candidate("2", "Café culture: a survey", "", "moprd")]
    replies = {"Sleep": json.dumps({"survey": "yes", "reason": "r"}), "Café": "maybe"}
    first = load_backend("scripted", replies=lambda m, s, i: replies[m[0]["content"].split("Title: ")[1][:5].strip()])
    result = identify_surveys(cands, first, GenerationSettings(), out=out)
    assert result.report["answers"] == {"reused": 0, "retried": 0, "made": 2}
    records = [json.loads(x) for x in (out / "calls.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [(r["stage"], r["unit_id"], r["namespace"]) for r in records] == [
        ("identify", "1", "annotation.identify"), ("identify", "2", "annotation.identify")]
    assert records[0]["key"] == make_call(first, GenerationSettings(), stage="identify", unit_id="1",
                                          namespace="annotation.identify",
                                          messages=build_screen_messages("Sleep staging: a review", "Wearables.")).key
    rows = list(csv.DictReader((out / "verification.csv").read_text(encoding="utf-8").splitlines()))
    assert rows == result.rows
    lines = (out / "candidates.jsonl").read_text(encoding="utf-8").splitlines()
    assert "Café culture" in lines[1]  # not escaped
    assert json.loads(lines[1]) == {"id": "2", "title": "Café culture: a survey", "abstract": "", "source": "moprd",
                                    "doi": "", **result.rows[1]}
    report_text = (out / "identify_report.json").read_text(encoding="utf-8")
    assert report_text.startswith('{\n  "candidates": 2,') and json.loads(report_text) == result.report
    second = load_backend("scripted", replies=lambda m, s, i: json.dumps({"survey": "no", "reason": "r2"}))
    again = identify_surveys(cands, second, GenerationSettings(), out=out)
    assert len(second.calls) == 1 and "Café" in second.calls[0][0][0]["content"]
    assert again.report["answers"] == {"reused": 1, "retried": 1, "made": 0}
    assert [r["llm_verdict"] for r in again.rows] == ["yes", "no"]


def test_verification_counts_yes_spellings_and_columns(tmp_path, ascii_locale):
    path = tmp_path / "verification.csv"
    rows = [{"id": " a ", "confirmed": "YES", "substantive_reviews": "y"},
            {"id": "b", "confirmed": "x", "substantive_reviews": " True "},
            {"id": "c", "confirmed": "1", "substantive_reviews": "no"},
            {"id": "d", "confirmed": "no", "substantive_reviews": "yes"},
            {"id": "e", "confirmed": " ", "substantive_reviews": "yes"},
            {"id": "f", "confirmed": "y", "substantive_reviews": ""},
            {"id": "g", "confirmed": "nope", "substantive_reviews": "yes", "note": "déjà vu"},
            {"id": "h", "confirmed": "", "substantive_reviews": ""}]
    write_verification(path, rows)
    lines = path.read_text(encoding="utf-8").splitlines()
    assert lines[:2] == [("id,source,title,keyword_match,keywords_found,llm_verdict,llm_reason,proposed,confirmed,"
                         "substantive_reviews,note"), " a ,,,,,,,,YES,y,"]
    assert read_verification(path) == ({"a", "b"}, {"rows": 8, "confirmed": 2, "rejected": 2, "unchecked": 2,
                                                     "no_substantive_reviews": 2})
    # a short row (a person deleted the trailing commas): its missing cells are unchecked, not rejected
    short = _write(tmp_path / "short.csv", "id,confirmed,substantive_reviews\na,yes,yes\nb\nc,yes\n")
    assert read_verification(short) == ({"a"}, {"rows": 3, "confirmed": 1, "rejected": 0, "unchecked": 1,
                                                "no_substantive_reviews": 1})
    empty = _write(tmp_path / "empty.csv", "")
    assert read_verification(empty) == (set(), {"rows": 0, "confirmed": 0, "rejected": 0, "unchecked": 0,
                                                "no_substantive_reviews": 0})
    with pytest.raises(ValueError, match=r"missing column\(s\) \['confirmed', 'substantive_reviews'\]"):
        read_verification(_write(tmp_path / "cols.csv", "id,note\na,\n"))


def test_verification_counts_per_source(tmp_path):
    from surveyalign.annotation import verification_counts

    path = tmp_path / "verification.csv"
    write_verification(path, [{"id": "1", "source": "f1000", "confirmed": "yes", "substantive_reviews": "yes"},
                              {"id": "2", "source": "f1000", "confirmed": "no"},
                              {"id": "3", "source": " OpenReview ", "confirmed": "yes", "substantive_reviews": "no"},
                              {"id": "4", "source": "", "confirmed": "", "substantive_reviews": ""},
                              {"id": "5", "source": "openreview", "confirmed": "y", "substantive_reviews": "y"}])
    zero = {"rows": 0, "confirmed": 0, "rejected": 0, "unchecked": 0, "no_substantive_reviews": 0}
    assert verification_counts(path) == {
        "file": "verification.csv",
        "total": {"rows": 5, "confirmed": 2, "rejected": 1, "unchecked": 1, "no_substantive_reviews": 1},
        "per_source": {"f1000": {**zero, "rows": 2, "confirmed": 1, "rejected": 1},
                       "openreview": {**zero, "rows": 2, "confirmed": 1, "no_substantive_reviews": 1},
                       "unknown": {**zero, "rows": 1, "unchecked": 1}}}  # a row without source
    assert verification_counts(path)["total"] == read_verification(path)[1]
    with pytest.raises(ValueError, match=r"missing column\(s\) \['substantive_reviews'\]"):
        verification_counts(_write(tmp_path / "cols.csv", "id,confirmed\na,yes\n"))

"""Collection edges (issue 27), every figure by hand: which files are read, papers kept by raw id / DOI / paper key
(a blank confirmed id keeps nothing), files of one paper merged (the first non-empty field wins), reviewers numbered
by version, kind, date and place (anonymous reviewers by their note, a chair's meta-review apart from the same
person's review), a report read twice counted once, survey texts found by candidate id or paper key (never replacing
a JATS text), the 40-character leak check, every count of the report, UTF-8 output under an ASCII locale, and a
re-run into the same folder (SurveyReview §4.1)."""

from __future__ import annotations

import json

import pytest
from annotation_fixtures import F1000_REPORTS, _jats

from surveyalign.annotation import collect_reviews
from surveyalign.annotation.collect import read_texts, review_files

LEAKED = "Summary: The survey covers token pruning methods in great depth."  # 64 characters
SHORT = "It is a useful and a timely survey, too."  # 40 characters: checked
TOO_SHORT = "A survey which is really worth reading."  # 39 characters: not checked
EDITOR = {"role": "editor", "content": "Decision letter."}


def _history(paper_id, title, rounds, doi=""):
    return json.dumps({"paper_id": paper_id, "title": title, "abstract": "", "doi": doi, "review_history": rounds})


def _note(nid, cdate, content, invitation="V/-/Official_Review", signature=None):
    note = {"id": nid, "forum": "F1", "invitation": invitation, "cdate": cdate, "content": content}
    if signature:
        note["signatures"] = [f"V/{signature}"]
    return note


def _inputs(tmp_path):
    reviews = tmp_path / "reviews"
    (reviews / "a").mkdir(parents=True)
    (reviews / "plain" / "lit").mkdir(parents=True)
    r1 = {"reviewer": "Reviewer 1", "date": "2021-02-01", "content": "First reviewer, first round."}
    r2 = {"reviewer": "Reviewer 2", "date": "2021-01-01", "content": "Second reviewer, earlier date."}
    v2 = {"version": 2, "reviews": [{"reviewer": "Reviewer 1", "date": "2021-06-01", "content": "Round two."}]}
    (reviews / "a" / "h1.json").write_text(_history("8120", "", [v2, {"version": 1, "reviews": [r1, r2, EDITOR]}],
                                                    doi="10.7717/peerj.8120"))
    # the same paper again: its title, another DOI (the first file's wins), v1's two reports repeated
    (reviews / "a" / "h2.json").write_text(_history("8120", "Bats: a review", [{"version": 1, "reviews": [
        r1, r2, EDITOR]}], doi="10.1/other"))
    (reviews / "a" / "h3.json").write_text(_history("8121", "Owls", [{"version": 1, "reviews": [
        {"reviewer": "Reviewer 1", "content": "Owls report."}]}]))
    (reviews / "a" / "notes.csv").write_text("not a review file")
    forum = [
        {"id": "F1", "forum": "F1", "content": {"title": "Pruning: a survey", "abstract": "We survey pruning."}},
        _note("m", 1600000000000, {"metareview": "Good. " + SHORT}, "V/-/Meta_Review", "Area_Chair_Q"),
        _note("q", 1690000000000, {"review": "Same person, as a reviewer."}, signature="Area_Chair_Q"),
        _note("x", 1710000000000, {"summary": LEAKED[len("Summary: "):]}),
        _note("y", 1700000000000, {"review": "Fine. " + TOO_SHORT}),
        # two anonymous reviewers who wrote the same words on the same day: two reviews, numbered by note id
        _note("zz", 1705000000000, {"review": "Agree."}),
        _note("aa", 1705000000000, {"review": "Agree."}),
        _note("m2", 1600000000001, {"metareview": "Second chair."}, "V/-/Meta_Review", "Area_Chair_R"),
        {"id": "d", "forum": "F1", "invitation": "V/-/Decision", "content": {"decision": "Reject"}},
    ]
    (reviews / "forum.json").write_text(json.dumps(forum))
    (reviews / "plain" / "lit" / "ref.txt").write_text("An unconfirmed plain report.")
    (reviews / "plain" / "lit" / "résumé.txt").write_text("Another unconfirmed report.", encoding="utf-8")
    (reviews / "empty.json").write_text(_history("9", "No reviews yet", []))
    texts = tmp_path / "texts"
    texts.mkdir()
    (texts / "A.csv").write_text("not a document")  # sorted first, skipped
    body = f"We survey pruning.\n\n{LEAKED}\n\n{SHORT}\n\n{TOO_SHORT}\n"
    (texts / "F-1.md").write_text("# Pruning: a survey\n\n## Introduction\n\n" + body)
    (texts / "Moprd_8120.md").write_text("# Bats: a review\n\n## Introduction\n\nBats fly at night.\n")
    return reviews, texts


def test_collect_numbers_merges_matches_texts_and_checks_leaks(tmp_path, ascii_locale):
    reviews, texts = _inputs(tmp_path)
    out = tmp_path / "runs" / "collected"
    result = collect_reviews([reviews], confirmed={"10.7717/PEERJ.8120", "Moprd-8120", "f1", " 9", "8121", "", "-"},
                             texts=texts, out=out)
    got = [(r.review_id, r.reviewer, r.reviewer_index, r.text) for r in result.reviews if r.source == "moprd"]
    assert got == [
        # reviews of a paper by version, then date: one number per reviewer, across versions
        ("moprd-8120-1-r1", "Reviewer 2", 1, "Second reviewer, earlier date."),
        ("moprd-8120-1-r2", "Reviewer 1", 2, "First reviewer, first round."),
        ("moprd-8120-2-r2", "Reviewer 1", 2, "Round two."),
        ("moprd-8121-1-r1", "Reviewer 1", 1, "Owls report.")]
    forum = [(r.review_id, r.reviewer, r.provenance["element"]) for r in result.reviews if r.source == "openreview"]
    assert forum == [
        ("openreview-F1-1-r1", "Area_Chair_Q", "note#q"), ("openreview-F1-1-r2", "", "note#y"),
        ("openreview-F1-1-r3", "", "note#aa"), ("openreview-F1-1-r4", "", "note#zz"),
        ("openreview-F1-1-r5", "", "note#x"),
        # meta-reviews after the reviews; the chair's meta-review is not the chair's review
        ("openreview-F1-1-r6", "Area_Chair_Q", "note#m"), ("openreview-F1-1-r7", "Area_Chair_R", "note#m2")]
    surveys = {s.paper_id: s for s in result.surveys}
    assert [s.paper_id for s in result.surveys] == ["moprd-8120", "moprd-8121", "moprd-9", "openreview-F1"]
    bats = surveys["moprd-8120"]  # two files: the first non-empty title, the first file's DOI
    assert (bats.title, bats.doi, bats.candidate_id) == ("Bats: a review", "10.7717/peerj.8120", "8120")
    assert (bats.text_from, surveys["openreview-F1"].text_from) == ("texts:Moprd_8120.md", "texts:F-1.md")
    assert "Bats fly at night." in bats.text and surveys["moprd-9"].text == ""
    report = result.report
    assert {k: report[k] for k in ("files", "surveys", "reviews", "surveys_without_text", "surveys_without_reviews",
                                   "files_not_confirmed", "duplicate_reports")} == {
        "files": 7, "surveys": 4, "reviews": 11, "surveys_without_text": ["moprd-8121", "moprd-9"],
        "surveys_without_reviews": ["moprd-9"],
        "files_not_confirmed": ["ref.txt (unknown-lit)", "résumé.txt (unknown-lit)"], "duplicate_reports": 2}
    # the 64- and 40-character sentences are found in the survey text; the 39-character one is not looked for;
    # moprd-8121 has no text to look in
    assert report["reviews_found_in_survey_text"] == ["openreview-F1-1-r5", "openreview-F1-1-r6"]
    assert report["skipped_records"] == [
        "h1.json: review_history[1].reviews[2]: editor's decision, not a review",
        "h2.json: review_history[0].reviews[2]: editor's decision, not a review",
        "forum.json: note 8 (d): decision is not a review or meta-review"]
    assert report["per_source"] == {
        "moprd": {"files": 4, "records_skipped": 2, "reviews": 4, "surveys": 3, "surveys_with_text": 1},
        "openreview": {"files": 1, "records_skipped": 1, "reviews": 7, "surveys": 1, "surveys_with_text": 1},
        "unknown": {"files": 2, "records_skipped": 0, "reviews_not_confirmed": 2}}
    lines = (out / "reviews.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(x)["review_id"] for x in lines] == [r.review_id for r in result.reviews]
    assert [json.loads(x)["paper_id"] for x in (out / "surveys.jsonl").read_text().splitlines()] == [
        "moprd-8120", "moprd-8121", "moprd-9", "openreview-F1"]
    text = (out / "collect_report.json").read_text(encoding="utf-8")
    assert text.startswith('{\n  "files": 7,') and json.loads(text) == report
    assert '"résumé.txt (unknown-lit)"' in text  # not escaped
    # a second run into the same folder replaces the files
    again = collect_reviews([reviews / "forum.json"], out=out)
    assert len((out / "reviews.jsonl").read_text(encoding="utf-8").splitlines()) == len(again.reviews) == 7


def test_collect_without_confirmation_or_texts_keeps_everything(tmp_path):
    reviews, _ = _inputs(tmp_path)
    result = collect_reviews([reviews / "plain", reviews / "forum.json"], text_source="f1000")
    assert [r.review_id for r in result.reviews] == ["f1000-lit-1-r1", "f1000-lit-1-r2"] + [
        f"openreview-F1-1-r{k}" for k in range(1, 8)]
    assert [r.reviewer for r in result.reviews[:2]] == ["ref", "résumé"]
    assert result.report["files_not_confirmed"] == [] and result.report["reviews_found_in_survey_text"] == []
    assert result.report["surveys_without_text"] == ["f1000-lit", "openreview-F1"]
    assert [s.candidate_id for s in result.surveys] == ["lit", "F1"]
    nothing = collect_reviews([reviews / "forum.json"], confirmed=set())
    assert (nothing.reviews, nothing.report["files_not_confirmed"]) == ([], ["forum.json (openreview-F1)"])


def test_a_jats_text_is_kept_over_the_texts_folder(tmp_path):
    reviews = tmp_path / "reviews"
    reviews.mkdir()
    (reviews / "f1000_5501_v1.xml").write_text(_jats(5501, 1, "Sleep: a review", F1000_REPORTS), encoding="utf-8")
    texts = tmp_path / "texts"
    texts.mkdir()
    (texts / "5501.md").write_text("# Another text\n\nNot this one.\n")
    result = collect_reviews([reviews], texts=texts)
    survey = result.surveys[0]
    assert survey.text_from == "jats:f1000_5501_v1.xml" and "Not this one." not in survey.text
    assert [r.review_id for r in result.reviews] == ["f1000-5501-1-r1", "f1000-5501-1-r2"]


def test_review_files_and_texts_folder(tmp_path):
    reviews, texts = _inputs(tmp_path)
    assert [p.relative_to(reviews).as_posix() for p in review_files([reviews, reviews / "a" / "notes.csv"])] == [
        "a/h1.json", "a/h2.json", "a/h3.json", "empty.json", "forum.json", "plain/lit/ref.txt", "plain/lit/résumé.txt",
        "a/notes.csv"]
    with pytest.raises(FileNotFoundError, match="review path .*nowhere does not exist"):
        review_files([reviews, tmp_path / "nowhere"])
    found = read_texts(texts)
    assert sorted(found) == ["f1", "moprd8120"] and found["f1"][1] == "F-1.md"
    with pytest.raises(FileNotFoundError, match="texts folder .*none does not exist"):
        read_texts(tmp_path / "none")


def test_titles_and_abstracts_a_review_file_lacks_come_from_the_candidates(tmp_path):
    reviews, _ = _inputs(tmp_path)
    (reviews / "plain" / "lit" / "résumé.txt").unlink()
    candidates = [  # as data identify writes candidates.jsonl: id, title, abstract, doi (matched by id or DOI)
        {"id": "lit", "title": "Literature on owls: a review", "abstract": "We review owl studies.", "doi": ""},
        {"id": "f-1", "title": "Not used: the forum has its title", "abstract": "Not used either.",
         "doi": "10.1/F1"},  # matched (F1), but the forum gives title and abstract: only its missing DOI is taken
        {"id": "unrelated", "title": "Nothing to do with these files"}]
    stage3 = {"file": "verification.csv", "total": {"rows": 3, "confirmed": 2}, "per_source": {}}
    result = collect_reviews([reviews / "plain", reviews / "forum.json"], candidates=candidates,
                             verification=stage3)
    plain = next(s for s in result.surveys if s.paper_id == "unknown-lit")
    assert (plain.title, plain.abstract, plain.doi) == ("Literature on owls: a review", "We review owl studies.", "")
    forum = next(s for s in result.surveys if s.paper_id == "openreview-F1")
    assert (forum.title, forum.abstract, forum.doi) == ("Pruning: a survey", "We survey pruning.", "10.1/F1")
    assert result.report["surveys_completed_from_candidates"] == 2
    assert result.report["verification"] == stage3
    assert collect_reviews([reviews / "plain"]).report["verification"] is None

"""Review readers' edges (issue 27), every value by hand: JATS dates and versions (from the related article, the
report's title, the article's DOI), the source told by DOI or file name, skipped sub-articles; OpenReview's note
kinds, text fields, ratings, signatures and dates, and every error with file and note; MOPRD / PeerJ id, round and
report fallbacks and errors; plain text; the reader chosen by suffix (SurveyReview §4.1)."""

from __future__ import annotations

import json

import pytest

from surveyalign.annotation.sources import read_plain, read_source


def _write(path, text):
    path.write_text(text, encoding="utf-8")
    return path


def _sub(sid, kind, meta, title, body, names=(("Quill", "Ada"),)):
    ident = f' id="{sid}"' if sid else ""
    people = "".join(f'<contrib contrib-type="author"><name><surname>{surname}</surname><given-names>{given}'
                     "</given-names></name></contrib>" for surname, given in names)
    return (f'<sub-article article-type="{kind}"{ident}><front-stub><title-group><article-title>{title}'
            f"</article-title></title-group><contrib-group>{people}</contrib-group>"
            f"{meta}</front-stub><body>{body}</body></sub-article>")


def _article(doi, subs, namespace=""):
    doi_el = f'<article-id pub-id-type="doi">{doi}</article-id>' if doi else ""
    xmlns = f' xmlns="{namespace}"' if namespace else ""
    return ('<?xml version="1.0" encoding="UTF-8"?>\n<article xmlns:xlink="http://www.w3.org/1999/xlink" '
            f'article-type="review-article"{xmlns}><front><article-meta>{doi_el}<title-group><article-title>Bats: a review'
            "</article-title></title-group><abstract><p>We review bats.</p></abstract></article-meta></front>"
            "<body><sec><title>Introduction</title><p>Bats fly at night.</p></sec></body>" + "".join(subs)
            + "</article>")


def _date(year, month="", day=""):
    parts = ((f"<year>{year}</year>" if year else "") + (f"<month>{month}</month>" if month else "")
             + (f"<day>{day}</day>" if day else ""))
    return f'<pub-date pub-type="epub">{parts}</pub-date>'


def _related(href):
    link = f' xlink:href="{href}"' if href else ""
    return f'<related-article ext-link-type="doi" related-article-type="peer-reviewed-article"{link}/>'


def test_jats_dates_versions_and_skipped_sub_articles(tmp_path):
    subs = [
        # date: the first pub-date, month and day zero-padded; version from the related article's DOI
        _sub("s1", "ref-report", _date(2021, 3, 7) + _date(2022, 1, 1) + _related("10.12688/f1000research.77.3")
             + _related("10.12688/f1000research.77.4"), "Referee report", "<p>First report text.</p>"),
        # year only; no version in the related DOI: the title's "Version 2"
        _sub("s2", "ref-report", _date(2020) + _related("10.12688/f1000research.77"), "Reviewer response for "
             "Version 2", "<p>Second report text.</p>"),
        # a year that is not a number gives no date; no version anywhere: the article's (DOI .5)
        _sub("s3", "ref-report", _date("n.d.", 4, 2), "Referee report", "<p>Third report text.</p>"),
        _sub("s4", "author-comment", "", "Author response", "<p>Thanks.</p>"),
        _sub("s5", "ref-report", _date(2021, 1, 1), "Referee report", "<p>  </p>"),
    ]
    path = _write(tmp_path / "bats.xml", _article("10.12688/f1000research.77.5", subs))
    sf = read_source(path)
    assert (sf.format, sf.raw_id, sf.survey.paper_id, sf.survey.source) == ("f1000-jats", "77", "f1000-77", "f1000")
    assert (sf.survey.title, sf.survey.abstract, sf.survey.text_from) == ("Bats: a review", "We review bats.",
                                                                          "jats:bats.xml")
    assert "Bats fly at night." in sf.survey.text and sf.survey.doi == "10.12688/f1000research.77.5"
    assert {r.review_id for r in sf.reviews} == {""}  # numbered later, by collect
    assert [(r.version, r.date, r.text, r.reviewer, r.kind, r.source) for r in sf.reviews] == [
        (3, "2021-03-07", "First report text.", "Ada Quill", "referee_report", "f1000"),
        (2, "2020", "Second report text.", "Ada Quill", "referee_report", "f1000"),
        (5, "", "Third report text.", "Ada Quill", "referee_report", "f1000")]
    assert sf.reviews[0].provenance == {"file": "bats.xml", "format": "f1000-jats", "element": "sub-article#s1"}
    assert sf.skipped == ["sub-article 3 (s4): type 'author-comment', not a referee report",
                          "sub-article 4 (s5): empty report"]


def test_jats_namespaced_without_ids_and_odd_related_articles(tmp_path):
    subs = [
        _sub("", "author-comment", "", "Author response", "<p>Thanks.</p>"),
        # no id; a related article without a link and one to another journal: the article's version (DOI .2)
        _sub("", "ref-report", _date(2020, 5, 6) + _related("") + _related("10.7717/peerj.1"), "Referee report",
             "<p>Report without an id.</p>"),
        _sub("e", "ref-report", _date(2021, 1, 1), "Referee report", "<p> </p>"),
        # a pub-date without a year gives no date; two referees signed
        _sub("g", "ref-report", _date("", 4, 2), "Referee report", "<p>Signed by two.</p>",
             names=(("Quill", "Ada"), ("Renner", "Bo"))),
    ]
    path = _write(tmp_path / "ns.xml", _article("10.12688/f1000research.78.2", subs,
                                                namespace="http://jats.nlm.nih.gov/ns/archiving/1.3/"))
    sf = read_source(path)
    assert [(r.text, r.date, r.version, r.reviewer) for r in sf.reviews] == [
        ("Report without an id.", "2020-05-06", 2, "Ada Quill"), ("Signed by two.", "", 2, "Ada Quill, Bo Renner")]
    assert sf.skipped == ["sub-article 0 (?): type 'author-comment', not a referee report",
                          "sub-article 2 (e): empty report"]


def test_jats_source_from_doi_or_file_name(tmp_path):
    report = [_sub("s1", "ref-report", "", "Referee report", "<p>Some report.</p>")]
    peerj = read_source(_write(tmp_path / "peerj_8120.xml", _article("10.7717/peerj.8120", report)))
    assert (peerj.raw_id, peerj.survey.source, peerj.survey.paper_id) == ("peerj_8120", "moprd", "moprd-peerj.8120")
    assert peerj.reviews[0].version == 1  # no version anywhere: 1
    named = read_source(_write(tmp_path / "F1000_article.xml", _article("", report)))
    assert (named.raw_id, named.survey.source) == ("F1000_article", "f1000")
    plain_doi = read_source(_write(tmp_path / "x.xml", _article("10.12688/f1000research.91", report)))
    assert (plain_doi.raw_id, plain_doi.survey.source, plain_doi.reviews[0].version) == ("91", "f1000", 1)
    broken = _write(tmp_path / "broken.xml", "<article><front>")
    with pytest.raises(ValueError) as err:
        read_source(broken)
    assert str(err.value).startswith(f"{broken}: not a readable JATS article: {broken}: not well-formed XML")


FORUM = {"notes": [
    {"id": "rev0", "forum": "F1", "invitation": "Venue/-/Official_Review", "signatures": ["ICLR.cc/2024/Reviewer_A1"],
     "cdate": 1700000000000,
     "content": {"summary_of_the_paper": {"value": " Surveys pruning. "}, "Rating": {"value": "6: accept"},
                 "confidence": {"value": "4"}, "weaknesses": {"value": "  "}, "score": {"value": 7},
                 "questions": "Why this order?"}},
    {"id": "F1", "forum": "F1", "content": {"title": {"value": "Pruning: a survey"}, "abstract": "We survey."}},
    {"id": "meta", "forum": "F1", "invitations": ["Venue/-/Meta_Review"], "tcdate": "2024-01-05T10:00:00",
     "content": {"metareview": {"value": "Incomplete coverage."}, "recommendation": {"value": "Reject"}}},
    {"id": "r9", "forum": "F1", "invitation": "Venue/-/Official_Review", "content": {"rating": "5"}},
    {"id": "k1", "forum": "F1", "signatures": ["~Ada_Quill1"], "content": {"review": "Plain review field."}},
    {"id": "k2", "forum": "F1", "content": {"summary": "S.", "weaknesses": "W."}},
    {"id": "k3", "forum": "F1", "content": {"MetaReview": "By key."}},
    # told only by their invitation (API 2 lists them under "invitations")
    {"id": "i2", "forum": "F1", "invitations": ["Venue/Submission7/-/Official_Review"],
     "content": {"comment": "Via invitations only.", "final_rating": "3"}},
    {"id": "i3", "forum": "F1", "invitation": "Venue/-/Meta_Review", "content": {"comment": "Meta via invitation."}},
    {"forum": "F1", "invitation": "Venue/-/Decision", "content": {"decision": "Reject"}},
    {"id": "c1", "forum": "F1", "content": {"comment": "Thanks."}},
]}


def test_openreview_kinds_text_ratings_and_skips(tmp_path):
    sf = read_source(_write(tmp_path / "forum.json", json.dumps(FORUM)))
    assert (sf.format, sf.raw_id, sf.survey.paper_id, sf.survey.source, sf.survey.title, sf.survey.abstract) == (
        "openreview", "F1", "openreview-F1", "openreview", "Pruning: a survey", "We survey.")
    got = [(r.kind, r.text, r.recommendation, r.reviewer, r.date) for r in sf.reviews]
    assert got == [
        ("official_review", "Summary of the paper: Surveys pruning.\n\nQuestions: Why this order?", "6: accept",
         "Reviewer_A1", "2023-11-14"),
        ("meta_review", "Metareview: Incomplete coverage.", "Reject", "", "2024-01-05"),
        ("official_review", "Review: Plain review field.", "", "~Ada_Quill1", ""),
        ("official_review", "Summary: S.\n\nWeaknesses: W.", "", "", ""),
        ("meta_review", "Metareview: By key.", "", "", ""),
        ("official_review", "Comment: Via invitations only.", "3", "", ""),
        ("meta_review", "Comment: Meta via invitation.", "", "", "")]
    assert {(r.review_id, r.source, r.version) for r in sf.reviews} == {("", "openreview", 1)}
    assert sf.reviews[0].provenance == {"file": "forum.json", "format": "openreview", "element": "note#rev0"}
    assert sf.skipped == ["note 3 (r9): no review text", "note 9 (?): decision is not a review or meta-review",
                          "note 10 (c1): note is not a review or meta-review"]


def test_openreview_dates_are_utc_days(tmp_path, far_east):
    # 1700000000000 ms is 2023-11-14 22:13 UTC, already the 15th at UTC+14
    notes = [{"id": "F", "forum": "F", "content": {}},
             {"id": "r", "forum": "F", "cdate": 1700000000000, "content": {"review": "R."}}]
    sf = read_source(_write(tmp_path / "f.json", json.dumps(notes)))
    assert sf.reviews[0].date == "2023-11-14"
    assert (sf.survey.title, sf.survey.abstract) == ("", "")


def test_openreview_submission_fallback_and_errors(tmp_path):
    notes = [{"id": "a", "forum": "Z", "content": {"title": "T", "abstract": ""}},
             {"id": "b", "forum": "Z", "content": {"title": "Real", "abstract": {"value": "Abs."}}},
             {"forum": "Z", "content": {"review": "R."}}]
    sf = read_source(_write(tmp_path / "list.json", json.dumps(notes)))
    assert (sf.raw_id, sf.survey.title) == ("Z", "Real")  # the first note with an abstract
    assert sf.reviews[0].provenance["element"] == "note#2" and sf.skipped == [("note 0 (a): note is not a review or "
                                                                              "meta-review")]
    # no forum field: the submission's own id
    alone = read_source(_write(tmp_path / "alone.json", json.dumps([{"id": "S1", "content": {"abstract": "A."}}])))
    assert (alone.raw_id, alone.survey.title, alone.survey.abstract) == ("S1", "", "A.")
    cases = [
        ({"notes": {"a": 1}}, "expected a list of OpenReview notes or an object with 'notes'"),
        ([{"id": "F", "forum": "F", "content": {}}, "x"], "note 1 is a str, expected an object"),
        ([{"id": "a", "forum": "F", "content": {"title": "T"}}], "no submission note"),
        ([{"id": "F", "forum": "F", "content": {}}, {"id": "n1", "content": "text"}],
         r"note 1 \(n1\): field 'content' must be an object"),
    ]
    for n, (data, message) in enumerate(cases):
        path = _write(tmp_path / f"bad{n}.json", json.dumps(data))
        with pytest.raises(ValueError, match=message):
            read_source(path)
    with pytest.raises(ValueError, match=r"bad.json: not valid JSON \(line 1: "):
        read_source(_write(tmp_path / "bad.json", "[{"))


def test_moprd_fallbacks_skips_and_joined_fields(tmp_path):
    data = {"id": 8120, "title": "Bats", "abstract": "We review bats.", "doi": "10.7717/peerj.8120", "rounds": [
        {"round": "v2", "reviewers": [
            {"reviewer_id": "R-9", "decision": "minor", "comments": [{"basic_reporting": " Clear. ", "n": 3},
                                                                     "  Also good.  ", {"x": " "}, 7]},
            {"role": "Editor", "content": "Decision letter."},
            {"reviewer": "R-5"},
            {"reviewer": "Dr X", "recommendation": "accept", "decision": "minor", "review": {"Validity": "No comment."},
             "date": "2021-05-01"},
            {"text": 42},
            {"text": "   "}]},
        {"reports": [{"text": "Round two, third report."}]},
        {"version": "V4", "reviews": [{"text": "Fourth."}]},
        {"version": 5},  # a round without reports
    ]}
    sf = read_source(_write(tmp_path / "h.json", json.dumps(data)))
    assert (sf.format, sf.raw_id, sf.survey.paper_id, sf.survey.source) == ("moprd", "8120", "moprd-8120", "moprd")
    assert (sf.survey.title, sf.survey.abstract, sf.survey.doi) == ("Bats", "We review bats.", "10.7717/peerj.8120")
    assert [(r.version, r.reviewer, r.recommendation, r.date, r.text) for r in sf.reviews] == [
        (2, "R-9", "minor", "", "Basic reporting: Clear.\n\nAlso good."),
        (2, "Dr X", "accept", "2021-05-01", "Validity: No comment."),
        (2, "Reviewer 1", "", "", "Round two, third report."),  # round 2 (index 1): version r + 1
        (4, "Reviewer 1", "", "", "Fourth.")]
    assert {(r.review_id, r.kind, r.source) for r in sf.reviews} == {("", "review", "moprd")}
    assert sf.reviews[0].provenance == {"file": "h.json", "format": "moprd", "element": "review_history[0].reviews[0]"}
    assert sf.skipped == ["review_history[0].reviews[1]: editor's decision, not a review",
                          "review_history[0].reviews[2]: no review text", "review_history[0].reviews[4]: no review text",
                          "review_history[0].reviews[5]: no review text"]
    manuscript = read_source(_write(tmp_path / "m.json", json.dumps({"manuscript_id": " m7 ", "reviews": []})))
    assert (manuscript.raw_id, manuscript.reviews) == ("m7", [])
    assert (manuscript.survey.title, manuscript.survey.abstract, manuscript.survey.doi) == ("", "", "")


@pytest.mark.parametrize(("data", "message"), [
    ({"paper_id": True, "reviews": []}, "field paper_id missing or empty"),
    ({"paper_id": "  ", "reviews": []}, "field paper_id missing or empty"),
    ({"paper_id": "p", "review_history": {}}, "field review_history must be a list of review rounds"),
    ({"paper_id": "p"}, "field review_history must be a list of review rounds"),
    ({"paper_id": "p", "reviews": ["x"]}, r"review_history\[0\] must be an object"),
    ({"paper_id": "p", "reviews": [{"version": "two"}]}, r"review_history\[0\]: field version 'two' is not a number"),
    ({"paper_id": "p", "reviews": [{"reviews": {}}]}, r"review_history\[0\]: field reviews must be a list"),
    ({"paper_id": "p", "reviews": [{"reviews": [{"text": "a"}, 3]}]}, (r"review_history\[0\].reviews\[1\] must be an "
                                                                      "object")),
])
def test_moprd_errors_name_the_field(tmp_path, data, message):
    with pytest.raises(ValueError, match=message):
        read_source(_write(tmp_path / "h.json", json.dumps(data)))


def test_a_json_object_that_is_not_a_history_is_refused(tmp_path):
    # an object with "notes" is a forum; any other object is read as a MOPRD history
    assert read_source(_write(tmp_path / "n.json", json.dumps({"notes": [
        {"id": "F", "forum": "F", "content": {}}]}))).format == "openreview"
    with pytest.raises(ValueError, match="expected a JSON object with paper_id and review_history"):
        read_source(_write(tmp_path / "s.json", '"text"'))


def test_plain_text_and_unsupported_suffix(tmp_path, ascii_locale):
    folder = tmp_path / "lit2024"
    folder.mkdir()
    direct = read_plain(_write(folder / "z.txt", "Très bien."))
    assert (direct.path, direct.survey.source, direct.reviews[0].text) == (folder / "z.txt", "unknown", "Très bien.")
    assert direct.reviews[0].review_id == ""
    history = {"paper_id": "p", "title": "Chauves-souris : étude", "reviews": []}
    assert read_source(_write(tmp_path / "h.json", json.dumps(history, ensure_ascii=False))).survey.title == (
        "Chauves-souris : étude")
    sf = read_source(_write(folder / "referee-a.md", "\n  A short report.  \n"), text_source="f1000")
    assert (sf.format, sf.raw_id, sf.survey.paper_id, sf.survey.source) == ("text", "lit2024", "f1000-lit2024", "f1000")
    r = sf.reviews[0]
    assert (r.text, r.reviewer, r.kind, r.version, r.source) == ("A short report.", "referee-a", "review", 1, "f1000")
    assert r.provenance == {"file": "lit2024/referee-a.md", "format": "text", "element": "referee-a.md"}
    empty = read_source(_write(folder / "b.txt", " \n"))
    assert (empty.reviews, empty.skipped, empty.survey.source) == ([], ["b.txt: empty file"], "unknown")
    with pytest.raises(ValueError, match=r"unsupported review file \(expected .xml JATS"):
        read_source(_write(folder / "c.csv", "a"))


def test_jats_reports_without_ids_keep_their_own_dates_and_versions(tmp_path):
    # two referee reports without an id: each keeps its own date and version (both read as the last one's before)
    subs = [
        _sub("", "ref-report", _date(2020, 1, 2) + _related("10.12688/f1000research.90.1"), "Referee report",
             "<p>Report one.</p>"),
        _sub("", "ref-report", _date(2021, 3, 4) + _related("10.12688/f1000research.90.2"), "Referee report",
             "<p>Report two.</p>"),
    ]
    sf = read_source(_write(tmp_path / "noid.xml", _article("10.12688/f1000research.90.3", subs)))
    assert [(r.text, r.date, r.version) for r in sf.reviews] == [("Report one.", "2020-01-02", 1),
                                                                 ("Report two.", "2021-03-04", 2)]


def test_jats_report_date_is_its_own_not_a_nested_responses(tmp_path):
    # a report without a date holding the authors' dated response: the report has no date; the response is listed
    # after it (as parse_jats lists it) and the next report keeps its own date
    response = _sub("r1a", "reply", _date(2022, 6, 1), "Author response", "<p>Thanks.</p>")
    report = _sub("r1", "ref-report", _related("10.12688/f1000research.91.1"), "Referee report",
                  "<p>Undated report.</p>")
    report = report.replace("<front-stub>", response + "<front-stub>", 1)  # nested first: its own elements follow
    later = _sub("r2", "ref-report", _date(2023, 2, 3), "Referee report", "<p>Dated report.</p>")
    sf = read_source(_write(tmp_path / "nested.xml", _article("10.12688/f1000research.91.2", [report, later])))
    assert [(r.text, r.date, r.version) for r in sf.reviews] == [("Undated report.", "", 1),
                                                                 ("Dated report.", "2023-02-03", 2)]
    assert sf.skipped == ["sub-article 1 (r1a): type 'reply', not a referee report"]

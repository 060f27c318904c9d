"""The survey texts of an extension come through `surveyalign data fetch-texts` and the documents layer (SurveyReview
§4.1-4.3): a PeerJ review history is collected without its survey's text, annotated (scripted judge) and released;
the real `fetch_texts` then fills the text into the release from the stand-in Europe PMC of tests/test_data_fetch.py
(JATS with a referee report, which the conversion leaves out), `data build` reads it with no text missing and no
review sentence in it, and `data collect --texts <fetch output>` attaches the same text by DOI / uid."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import yaml
from test_data_fetch import (
    PEERJ_ABSTRACT,
    PEERJ_TITLE,
    REPORT_SENTENCE,
    FakeServices,
    run,
    serve_release,
)

from surveyalign.annotation import read_fetched_texts, read_surveys
from surveyalign.cli import main
from surveyalign.constants import DIMENSIONS

OTHER = "The figures of call spectra are easy to read."


def _history(path):
    path.write_text(json.dumps({
        "paper_id": "9001", "title": PEERJ_TITLE, "abstract": PEERJ_ABSTRACT, "doi": "10.7717/peerj.9001",
        "review_history": [{"version": 1, "reviews": [
            {"reviewer": "Reviewer 1", "date": "2020-02-02", "recommendation": "minor revisions",
             "content": {"Basic reporting": OTHER, "Experimental design": REPORT_SENTENCE}}]}]}), encoding="utf-8")


def test_release_texts_fetched_then_built_and_collected_from_the_fetch_output(tmp_path, capsys):
    reviews = tmp_path / "reviews"
    reviews.mkdir()
    _history(reviews / "peerj_9001.json")
    assert main(["data", "collect", str(reviews), "--out", str(tmp_path / "collected")]) == 0
    collected = json.loads((tmp_path / "collected" / "collect_report.json").read_text())
    assert collected["surveys_without_text"] == ["moprd-9001"]  # a review history carries no survey text

    answer = {d: {"label": 0, "snippets": []} for d in DIMENSIONS}
    answer["readability"] = {"label": 1, "snippets": [OTHER]}
    answer["comprehensiveness"] = {"label": -1, "snippets": [REPORT_SENTENCE]}
    judge = tmp_path / "judge.yaml"
    judge.write_text(yaml.safe_dump({"backend": {"kind": "scripted", "options": {"replies": [json.dumps(answer)]}}}))
    assert main(["data", "annotate", "--reviews", str(tmp_path / "collected"), "--judge", str(judge), "--out",
                 str(tmp_path / "annotated")]) == 0
    release = tmp_path / "release"
    assert main(["data", "release", "--collected", str(tmp_path / "collected"), "--llm", str(tmp_path / "annotated"),
                 "--allow-llm", "--split", "test", "--out", str(release)]) == 0
    assert json.loads((release / "provenance.json").read_text())["papers_without_text"] == ["moprd-9001"]

    services = FakeServices()
    try:
        serve_release(services)
        result = run(release, release, services)  # `data fetch-texts --official release --out release`
    finally:
        services.close()
    assert result.report["per_source"]["moprd"]["converted"] == 1
    capsys.readouterr()
    assert main(["data", "build", "--official", str(release), "--out", str(tmp_path / "built")]) == 0
    build = json.loads((tmp_path / "built" / "build_report.json").read_text())
    assert build["missing_text"]["units"] == 0
    rows = [r for f in (tmp_path / "built" / "data").rglob("*.parquet") for r in pq.read_table(f).to_pylist()]
    assert sorted((r["dimension"], r["score"]) for r in rows) == [("comprehensiveness", -1), ("readability", 1)]
    for row in rows:  # the fetched survey text, without the referee report the JATS carried
        assert "Detectors were placed at roost exits." in row["text"] and REPORT_SENTENCE not in row["text"]

    # the same fetch output as `data collect --texts`: found by DOI and by the uid's paper key
    texts = read_fetched_texts(release)
    assert texts["107717peerj9001"][1] == texts["moprd9001"][1] == texts["moprd90011r1"][1] == "fetch-texts:moprd-9001-v1"
    assert main(["data", "collect", str(reviews), "--texts", str(release), "--out", str(tmp_path / "again")]) == 0
    survey = read_surveys(tmp_path / "again")[0]
    assert survey.text_from == "fetch-texts:moprd-9001-v1" and survey.text == texts["moprd9001"][0]
    assert "Detectors were placed at roost exits." in survey.text
    again = json.loads((tmp_path / "again" / "collect_report.json").read_text())
    assert again["surveys_without_text"] == [] and again["reviews_found_in_survey_text"] == []

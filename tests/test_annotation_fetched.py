"""`surveyalign data identify` over what `surveyalign data fetch-texts` resolved (SurveyReview §4.1): the fetch
output is written by the real `fetch_texts` against the stand-in Europe PMC / OpenReview services of
tests/test_data_fetch.py (F1000Research paper converted, PeerJ paper resolved but its full text 404, OpenReview
paper unresolved), then read as candidates: by folder, by fetch_report.json and by one articles shard."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
import yaml
from annotation_fixtures import F1000_REPORTS, _jats, confirm_proposed
from test_data_fetch import (
    F1000_TITLE,
    OR_TITLE,
    PEERJ_TITLE,
    FakeServices,
    or_note,
    run,
    serve_release,
    write_release,
)

from surveyalign.annotation import Candidate, is_fetch_output, read_fetched_candidates
from surveyalign.cli import main
from surveyalign.documents import fingerprint

F1000_DOI = "10.12688/f1000research.70001.1"


@pytest.fixture
def fetched(tmp_path) -> Path:
    """A fetch-texts output folder: f1000 converted, moprd resolved then failed (404), openreview unresolved."""
    services = FakeServices()
    try:
        release = write_release(tmp_path / "rel")
        serve_release(services)
        del services.files["/epmc/PMC8000001/fullTextXML"]
        services.searches[OR_TITLE] = [or_note("WrOng01", "Token pruning for language models", "Pruning tokens.")]
        run(release, tmp_path / "fetched", services)
    finally:
        services.close()
    return tmp_path / "fetched"


def test_candidates_from_the_fetch_output_folder_and_its_files(fetched):
    shard = fetched / "articles" / "articles_part_fetched_001.json"
    assert json.loads(shard.read_text()).keys() == {"f1000-7001"}  # the shape fetch-texts writes: {uid: markdown}
    assert all(is_fetch_output(p) for p in (fetched, fetched / "fetch_report.json", fetched / "fetch_state.jsonl",
                                            shard))
    assert not is_fetch_output(fetched / "articles")
    expected = [Candidate(id=F1000_DOI, title=F1000_TITLE, abstract="Abstract text.", source="f1000", doi=F1000_DOI),
                Candidate(id="10.7717/peerj.9001", title=PEERJ_TITLE, abstract="", source="moprd",
                          doi="10.7717/peerj.9001")]  # resolved, its text not fetched: no abstract
    for path in (fetched, fetched / "fetch_report.json", fetched / "fetch_state.jsonl"):
        candidates, report = read_fetched_candidates(path)
        assert candidates == expected
        assert (report["records"], report["candidates"], report["per_status"]) == (
            3, 2, {"converted": 1, "failed": 1, "unresolved": 1})
        assert report["skipped"] == [{"key": f"openreview-{fingerprint(OR_TITLE)[:16]}", "status": "unresolved",
                                      "reason": "1 hit(s), none accepted; best: title similarity 50.6 < 92"}]
        assert report["fetch_report"]["papers"] == 5 and report["fetch_report"]["n_failures"] == 2
    # one shard alone: one candidate per text, named by its uid, title and abstract from the markdown
    candidates, report = read_fetched_candidates(shard)
    assert candidates == [Candidate(id="f1000-7001", title=F1000_TITLE, abstract="Abstract text.", source="f1000")]
    assert (report["records"], report["skipped"], report["fetch_report"]) == (1, [], None)


def test_identify_screens_the_fetched_papers_and_collect_finds_them_by_doi(fetched, tmp_path, capsys):
    judge = tmp_path / "screen.yaml"
    judge.write_text(yaml.safe_dump({"backend": {"kind": "scripted", "options": {"replies": [
        json.dumps({"survey": "yes", "reason": "reviews field trials"}),
        json.dumps({"survey": "no", "reason": "scripted no"})]}}}))
    assert main(["data", "identify", "--candidates", str(fetched), "--judge", str(judge), "--out",
                 str(tmp_path / "identified")]) == 0
    out = capsys.readouterr().out
    assert "fetch-texts output: 3 papers, 2 resolved taken as candidates, 1 not resolved" in out
    report = json.loads((tmp_path / "identified" / "identify_report.json").read_text())
    assert report["total"] == {"candidates": 2, "keyword_match": 2, "screened": 2, "llm_yes": 1, "llm_no": 1,
                               "proposed": 1}
    assert report["input"]["kind"] == "fetch-texts" and len(report["input"]["skipped"]) == 1
    verification = tmp_path / "identified" / "verification.csv"
    rows = list(csv.DictReader(verification.read_text().splitlines()))
    assert [(r["id"], r["source"], r["keywords_found"], r["llm_verdict"], r["proposed"]) for r in rows] == [
        (F1000_DOI, "f1000", "review", "yes", "yes"), ("10.7717/peerj.9001", "moprd", "review", "no", "no")]
    screened = [json.loads(x) for x in (tmp_path / "identified" / "calls.jsonl").read_text().splitlines()]
    assert len(screened) == 2
    # the person confirms the proposed paper; collect keeps the referee reports of that article (matched by DOI)
    confirm_proposed(verification)
    reviews = tmp_path / "reviews"
    reviews.mkdir()
    (reviews / "f1000_70001_v1.xml").write_text(_jats(70001, 1, F1000_TITLE, F1000_REPORTS), encoding="utf-8")
    (reviews / "f1000_5501_v1.xml").write_text(_jats(5501, 1, "Another review", F1000_REPORTS), encoding="utf-8")
    assert main(["data", "collect", str(reviews), "--verification", str(verification), "--out",
                 str(tmp_path / "collected")]) == 0
    collected = json.loads((tmp_path / "collected" / "collect_report.json").read_text())
    assert (collected["surveys"], collected["reviews"]) == (1, 2)
    assert collected["files_not_confirmed"] == ["f1000_5501_v1.xml (f1000-5501)"]


def test_a_fetch_output_with_nothing_resolved_exits_3(tmp_path, capsys):
    out = tmp_path / "fetched"
    out.mkdir()
    (out / "fetch_state.jsonl").write_text(json.dumps({"key": "openreview-x", "source": "openreview", "uids": ["o-1"],
                                                       "title": "T", "status": "unresolved", "reason": "no hit"}) + "\n")
    assert main(["data", "identify", "--candidates", str(out), "--out", str(tmp_path / "i")]) == 3
    assert capsys.readouterr().err.strip() == f"error: {out}: no candidate paper to screen"
    (out / "fetch_state.jsonl").write_text('{"source": "f1000"}\n')
    assert main(["data", "identify", "--candidates", str(out), "--out", str(tmp_path / "i")]) == 2
    assert capsys.readouterr().err.strip() == f"error: {out / 'fetch_state.jsonl'}: line 1: field key missing or empty"

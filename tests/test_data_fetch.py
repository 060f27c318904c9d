"""`surveyalign data fetch-texts` against a local server answering like Europe PMC and OpenReview.

The fake services answer in the documented shapes: Europe PMC ``/search?format=json&resultType=core``
(``{"hitCount", "resultList": {"result": [...]}}``) and ``/{PMCID}/fullTextXML`` (JATS), OpenReview API 2
``/notes/search`` (``{"notes": [{"id", "forum", "content": {"title": {"value"}}, ...}], "count"}``) and ``/pdf?id=``.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from fpdf import FPDF

from surveyalign.cli import main
from surveyalign.data import build_dataset, load_surveyreview
from surveyalign.data.fetch import EuropePMC, fetch_texts, release_targets
from surveyalign.documents import fingerprint

F1000_TITLE = "Soil carbon under cover crops: a review"
F1000_ABSTRACT = "We pooled field trials of winter cover crops and measured the change in topsoil organic carbon."
PEERJ_TITLE = "Acoustic monitoring of bats: a review"
PEERJ_ABSTRACT = "Passive acoustic detectors record bat calls; we review detector placement and call classifiers."
OR_TITLE = "Token merging for vision transformers: a survey"
OR_ABSTRACT = "Token merging shortens the sequence a vision transformer attends over; we survey merging rules."
REPORT_SENTENCE = "The search strategy missed the grey literature entirely."
QUOTED = "Token merging reduces the cost of attention in every layer."


def jats(title: str, doi: str, pmcid: str, body: str, refs: list[str], report: str | None) -> bytes:
    """A small JATS article; ``report`` becomes a ref-report sub-article."""
    ref_xml = "".join(f'<ref id="r{i}"><mixed-citation>{r}</mixed-citation></ref>' for i, r in enumerate(refs, 1))
    sub = (f'<sub-article article-type="ref-report" id="rep1"><front-stub><title-group><article-title>Referee '
           f'report</article-title></title-group></front-stub><body><p>{report}</p></body></sub-article>'
           if report else "")
    return (f'<?xml version="1.0" encoding="UTF-8"?><article><front><article-meta>'
            f'<article-id pub-id-type="doi">{doi}</article-id><article-id pub-id-type="pmcid">{pmcid}</article-id>'
            f'<title-group><article-title>{title}</article-title><fn-group content-type="pub-status"><fn><p>'
            f'[version 1; peer review: 2 approved]</p></fn></fn-group></title-group>'
            f'<abstract><p>Abstract text.</p></abstract></article-meta></front><body>{body}</body>'
            f'<back><ref-list>{ref_xml}</ref-list></back>{sub}</article>').encode()


def pdf(lines: list[str]) -> bytes:
    doc = FPDF()
    doc.add_page()
    doc.set_font("helvetica", size=11)
    for line in lines:
        doc.multi_cell(0, 6, line, new_x="LMARGIN", new_y="NEXT")
    return bytes(doc.output())


def epmc_hit(title: str, doi: str, pmcid: str | None, year: int, abstract: str, journal: str) -> dict:
    return {"id": pmcid or doi, "source": "PMC" if pmcid else "MED", "pmcid": pmcid, "doi": doi,
            "title": f"{title}.", "authorString": "Okafor A, Lindqvist P.", "pubYear": str(year),
            "abstractText": f"<h4>Summary</h4>{abstract}", "journalInfo": {"journal": {"title": journal}},
            "isOpenAccess": "Y", "inEPMC": "Y" if pmcid else "N"}


def or_note(forum: str, title: str, abstract: str) -> dict:
    return {"id": forum, "forum": forum, "invitations": ["ICLR.cc/2024/Conference/-/Submission"],
            "cdate": 1695000000000, "content": {"title": {"value": title}, "abstract": {"value": abstract},
                                                "authors": {"value": ["Mei Tanaka", "Omar Haddad"]},
                                                "pdf": {"value": f"/pdf/{forum}.pdf"}}}


class FakeServices:
    """Europe PMC under /epmc and OpenReview under /or on 127.0.0.1; answers and failures set per test.

    Attributes:
        searches: Europe PMC query (or OpenReview term) -> list of hits.
        files: path ("/epmc/PMC1/fullTextXML", "/or/pdf?id=X") -> (content type, bytes).
        fail: path -> statuses to answer first (429 comes with ``Retry-After: 0``).
        raw: path -> bytes answered with status 200 as text/html (a broken answer).
        log: every request path with its query, in order.
    """

    def __init__(self) -> None:
        self.searches: dict[str, list[dict]] = {}
        self.files: dict[str, tuple[str, bytes]] = {}
        self.fail: dict[str, list[int]] = {}
        self.raw: dict[str, bytes] = {}
        self.log: list[str] = []
        services = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                url = urlsplit(self.path)
                query = {k: v[0] for k, v in parse_qs(url.query).items()}
                key = url.path + (f"?id={query['id']}" if url.path.endswith("/pdf") else "")
                services.log.append(key + (f" {query.get('query') or query.get('term')}" if "search" in key else ""))
                if key in services.raw:
                    return self._send(200, "text/html", services.raw[key])
                pending = services.fail.get(key)
                if pending:
                    status = pending.pop(0)
                    return self._send(status, "application/json", b'{"error": "busy"}',
                                      {"Retry-After": "0"} if status == 429 else {})
                if url.path == "/epmc/search":
                    hits = services.searches.get(query["query"], [])
                    body = {"version": "6.9", "hitCount": len(hits), "request": {"queryString": query["query"]},
                            "resultList": {"result": hits}}
                    return self._send(200, "application/json", json.dumps(body).encode())
                if url.path in ("/or/notes/search", "/or1/notes/search"):
                    hits = services.searches.get(("v1:" if url.path.startswith("/or1") else "") + query["term"], [])
                    return self._send(200, "application/json", json.dumps({"notes": hits, "count": len(hits)}).encode())
                if key in services.files:
                    kind, data = services.files[key]
                    return self._send(200, kind, data)
                return self._send(404, "application/json", b'{"name": "NotFoundError", "message": "not found"}')

            def _send(self, status, kind, data, headers=None):
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def services():
    fake = FakeServices()
    yield fake
    fake.close()


def review(uid: str, source: str, title: str, abstract: str, reasons: dict[str, tuple[float, list[str]]]) -> dict:
    return {"uid": uid, "paper_title": title, "paper_abstract": abstract, "review_content": " ".join(
        r for _, rs in reasons.values() for r in rs), "source": source, "paper_title_zh": "",
            "paper_abstract_zh": "", "review_content_zh": "",
            "result": [{"dimension": d, "score": s, "reasons": rs} for d, (s, rs) in reasons.items()]}


def write_release(root: Path) -> Path:
    """A made-up release in the v1.0-paper layout: train papers without texts, test papers with texts."""
    train = [
        review("f1000-7001", "f1000", F1000_TITLE, F1000_ABSTRACT,
               {"Readability": (-1.0, ["the tables are hard to read."]), "Structure": (1.0, ["Well organised"])}),
        review("moprd-9001-1-r1", "moprd", PEERJ_TITLE, PEERJ_ABSTRACT,
               {"Comprehensiveness": (-1.0, [REPORT_SENTENCE]), "Readability": (1.0, ["Reads well."])}),
        review("moprd-9001-1-r2", "moprd", PEERJ_TITLE, PEERJ_ABSTRACT,
               {"Structure": (-2.0, ["Sections repeat one another."]), "Readability": (2.0, ["Very clear."])}),
        review("openreview-101", "openreview", OR_TITLE, OR_ABSTRACT,
               {"Criticalness": (-1.0, [QUOTED]), "Structure": (1.0, ["Good taxonomy."])}),
    ]
    test = [
        review("openreview-201", "openreview", "Sparse attention: a survey", "Abstract of sparse attention.",
               {"Structure": (-2.0, ["The taxonomy is unclear."]), "Readability": (1.0, ["Clear."])}),
        review("f1000-7002", "f1000", "Telehealth for rural stroke care: a review", "Abstract of telehealth.",
               {"Readability": (1.0, ["Clear"]), "Comprehensiveness": (2.0, ["complete."])}),
    ]
    for folder, name, records in (("raw", "train_samples.json", train), ("train", "grouped_trainset.json", train),
                                  ("raw", "test_samples.json", test), ("test", "grouped_testset.json", test)):
        (root / folder).mkdir(parents=True, exist_ok=True)
        (root / folder / name).write_text(json.dumps(records, indent=1))
    (root / "articles").mkdir()
    (root / "articles" / "articles_part1.json").write_text(json.dumps({
        "openreview-201": "# Sparse attention: a survey\n\n## Introduction\n\nSparse patterns.\n",
        "f1000-7002": "# Telehealth for rural stroke care: a review\n\n## Background\n\nRural clinics.\n"}))
    return root


def serve_release(s: FakeServices) -> None:
    """Each paper of :func:`write_release` as the services hold it, with a 429 and a wrong-paper top hit."""
    f1000_doi1, f1000_doi2 = "10.12688/f1000research.70001.1", "10.12688/f1000research.70001.2"
    s.searches[EuropePMC.title_query(F1000_TITLE)] = [
        # wrong-paper top hit: similar title, other journal and other abstract
        epmc_hit("Soil carbon under cover crops: a meta-analysis", "10.1016/j.geoderma.2020.1", "PMC1111",
                 2020, "Unrelated abstract about grassland.", "Geoderma"),
        epmc_hit(F1000_TITLE, f1000_doi2, "PMC7000002", 2022, F1000_ABSTRACT, "F1000Research"),
        epmc_hit(F1000_TITLE, f1000_doi1, "PMC7000001", 2021, F1000_ABSTRACT, "F1000Research"),
    ]
    body = ("<sec><title>Introduction</title><p>Cover crops add carbon to topsoil.</p></sec>"
            "<sec><title>Results</title><p>Carbon rose in most trials.</p>"
            "<fig id='f1'><label>Figure 1.</label><caption><p>Carbon gain per trial.</p></caption></fig></sec>")
    refs = ["Smith J: Cover crops and carbon. Soil Biol. 2019.",
            "Lee K: Rye and vetch [version 2; peer review: 2 approved]. F1000Research. 2018."]
    s.files["/epmc/PMC7000001/fullTextXML"] = ("application/xml", jats(
        F1000_TITLE, f1000_doi1, "PMC7000001", body, refs, "The tables are hard to read and the figure is small."))
    s.files["/epmc/PMC7000002/fullTextXML"] = ("application/xml", jats(
        F1000_TITLE, f1000_doi2, "PMC7000002", "<sec><title>Second version</title><p>v2.</p></sec>", refs, None))
    s.fail["/epmc/PMC7000001/fullTextXML"] = [429]
    peerj = epmc_hit(PEERJ_TITLE, "10.7717/peerj.9001", "PMC8000001", 2020, PEERJ_ABSTRACT, "PeerJ")
    s.searches['DOI:"10.7717/peerj.9001"'] = [peerj]
    s.searches[EuropePMC.title_query(PEERJ_TITLE)] = [peerj]
    s.files["/epmc/PMC8000001/fullTextXML"] = ("application/xml", jats(
        PEERJ_TITLE, "10.7717/peerj.9001", "PMC8000001",
        "<sec><title>Detectors</title><p>Detectors were placed at roost exits.</p></sec>", ["Bat ref. 2015."],
        REPORT_SENTENCE))
    s.searches[OR_TITLE] = [or_note("WrOng01", "Token pruning for language models", "Pruning tokens."),
                            or_note("TokMrg42", OR_TITLE, OR_ABSTRACT)]
    s.files["/or/pdf?id=TokMrg42"] = ("application/pdf", pdf(
        [OR_TITLE, "Abstract", OR_ABSTRACT, "1 Introduction", QUOTED, "References", "[1] A. Author. Merge. 2023."]))


def run(release: Path, out: Path, s: FakeServices, **kw):
    return fetch_texts(release, out, europepmc_url=f"{s.url}/epmc", openreview_urls=[f"{s.url}/or"],
                       requests_per_second=0, http_options={"backoff_initial": 0.01}, progress=False, **kw)


def test_targets_group_reviews_of_one_paper(tmp_path):
    release = write_release(tmp_path / "rel")
    grouped = json.loads((release / "train" / "grouped_trainset.json").read_text())
    grouped[1]["result"].append({"dimension": "Structure", "score": -1.0, "reasons": ["Lacks a methods part."]})
    (release / "train" / "grouped_trainset.json").write_text(json.dumps(grouped))
    targets = {t.key: t for t in release_targets(release)}
    assert sorted(targets) == sorted([
        "moprd-9001-v1", f"f1000-{fingerprint(F1000_TITLE)[:16]}", f"openreview-{fingerprint(OR_TITLE)[:16]}",
        f"f1000-{fingerprint('Telehealth for rural stroke care: a review')[:16]}",
        f"openreview-{fingerprint('Sparse attention: a survey')[:16]}"])
    peerj = targets["moprd-9001-v1"]
    assert (peerj.uids, peerj.paper_id, peerj.version, peerj.present) == (
        ["moprd-9001-1-r1", "moprd-9001-1-r2"], "9001", 1, [])
    # both annotation sets are read: the grouped-only rationale is checked too
    assert peerj.rationales == [REPORT_SENTENCE, "Reads well.", "Lacks a methods part.", "Sections repeat one another.",
                                "Very clear."]
    by_uid = {u: t for t in targets.values() for u in t.uids}
    assert len(by_uid) == 6 and len(targets) == 5
    assert by_uid["f1000-7002"].present == ["f1000-7002"] and by_uid["f1000-7001"].present == []
    assert by_uid["openreview-101"].source == "openreview" and by_uid["openreview-101"].version is None


def test_end_to_end_fetch_convert_guard_then_build(tmp_path, services):
    release = write_release(tmp_path / "rel")
    serve_release(services)
    result = run(release, release, services)
    rep = result.report
    assert rep["per_source"] == {
        "f1000": {"papers": 2, "uids": 2, "uids_present": 1, "present": 1, "resolved": 1, "unresolved": 0,
                  "fetched": 1, "converted": 1, "failed": 0, "uids_written": 1},
        "moprd": {"papers": 1, "uids": 2, "uids_present": 0, "present": 0, "resolved": 1, "unresolved": 0,
                  "fetched": 1, "converted": 1, "failed": 0, "uids_written": 2},
        "openreview": {"papers": 2, "uids": 2, "uids_present": 1, "present": 1, "resolved": 1, "unresolved": 0,
                       "fetched": 1, "converted": 1, "failed": 0, "uids_written": 1},
    }
    assert rep["n_failures"] == 0 and rep["shards"] == ["articles_part_fetched_001.json"]
    texts = json.loads((release / "articles" / "articles_part_fetched_001.json").read_text())
    assert sorted(texts) == ["f1000-7001", "moprd-9001-1-r1", "moprd-9001-1-r2", "openreview-101"]
    f1000 = texts["f1000-7001"]
    assert f1000.startswith(f"# {F1000_TITLE}\n\n## Abstract\n\nAbstract text.\n\n## Introduction\n")
    assert "**Figure 1.** Carbon gain per trial." in f1000 and "Second version" not in f1000  # version 1 taken
    assert "2. Lee K: Rye and vetch . F1000Research. 2018." in f1000  # status bracket removed by the guard
    assert "tables are hard to read" not in f1000 and "peer review" not in f1000  # report left out by element
    assert texts["moprd-9001-1-r1"] == texts["moprd-9001-1-r2"] and REPORT_SENTENCE not in texts["moprd-9001-1-r1"]
    assert texts["openreview-101"].startswith(f"# {OR_TITLE}") and "## 1 Introduction" in texts["openreview-101"]
    guard = rep["leakage_guard"]
    assert (guard["texts_cleaned"], guard["status_lines_removed"], guard["chars_removed"]) == (1, 1, 36)
    assert rep["sub_articles_removed"] == {"ref-report": 2}  # F1000 v1 and PeerJ reports, left out by element
    assert (rep["verbatim"]["snippets_found"], rep["verbatim"]["snippets_near_verbatim"]) == (1, 1)
    assert rep["verbatim"]["papers"][0]["snippets"] == [QUOTED]  # the PDF quotes a gold rationale
    versions = {v["key"].split("-")[0]: v for v in rep["versions"]}
    assert versions["f1000"]["taken"] == 1 and "earliest version found taken (found: [1, 2])" in versions["f1000"]["rule"]
    assert versions["moprd"]["requested"] == 1 and versions["moprd"]["taken"] == "published"
    assert rep["http"]["europepmc"]["retries"] == 1  # the 429 was retried after its Retry-After
    state = [json.loads(x) for x in (release / "fetch_state.jsonl").read_text().splitlines()]
    f1000_state = next(r for r in state if r["source"] == "f1000")
    assert f1000_state["identifier"]["pmcid"] == "PMC7000001"
    assert f1000_state["match"]["candidates"][0]["reason"].startswith("10.1016/j.geoderma.2020.1 is not a f1000")
    moprd_state = next(r for r in state if r["source"] == "moprd")
    assert moprd_state["match"]["uid_doi_agrees"] is True

    # `data build` reads the release folder with the fetched shards unchanged and gives every unit a text, with
    # either annotation set
    built = build_dataset(release, tmp_path / "ds")
    raw = build_dataset(release, tmp_path / "ds-raw", records="raw")
    assert raw.report["missing_text"]["units"] == 0
    assert built.report["missing_text"]["units"] == 0
    ds = load_surveyreview(tmp_path / "ds", "readability")
    rows = [r for split in ("train", "validation", "test") for r in ds[split]]
    assert len(rows) == 5 and all(r["text"].strip() for r in rows)


def test_failures_are_listed_and_a_rerun_fetches_only_what_is_missing(tmp_path, services):
    release = write_release(tmp_path / "rel")
    serve_release(services)
    del services.files["/epmc/PMC8000001/fullTextXML"]  # PeerJ full text: 404
    services.searches[OR_TITLE] = [or_note("WrOng01", "Token pruning for language models", "Pruning tokens.")]
    out = tmp_path / "out"
    rep = run(release, out, services).report
    assert rep["per_source"]["moprd"]["failed"] == 1 and rep["per_source"]["openreview"]["unresolved"] == 1
    fails = {f["source"]: f for f in rep["failures"]}
    assert fails["moprd"]["stage"] == "fetch" and "404" in fails["moprd"]["reason"]
    assert fails["moprd"]["uids"] == ["moprd-9001-1-r1", "moprd-9001-1-r2"]
    assert fails["openreview"]["stage"] == "resolve"
    assert fails["openreview"]["reason"].startswith("1 hit(s), none accepted; best: title similarity")
    assert json.loads((out / "articles" / "articles_part_fetched_001.json").read_text()).keys() == {"f1000-7001"}

    serve_release(services)  # the full text is back (and OpenReview would now answer differently)
    services.log.clear()
    rep = run(release, out, services).report
    # the converted F1000 paper is not asked for again; the PeerJ searches and the OpenReview search come from
    # the HTTP cache (a 404 is never cached), so only the missing full text reaches the service
    assert services.log == ["/epmc/PMC8000001/fullTextXML"]
    assert rep["per_source"]["moprd"]["converted"] == 1 and rep["per_source"]["openreview"]["unresolved"] == 1
    assert rep["per_source"]["f1000"]["converted"] == 1 and rep["n_failures"] == 1
    written = json.loads((out / "articles" / "articles_part_fetched_001.json").read_text())
    assert sorted(written) == ["f1000-7001", "moprd-9001-1-r1", "moprd-9001-1-r2"]
    state = (out / "fetch_state.jsonl").read_text().splitlines()
    assert len(state) == 3 + 2  # first run: 3 papers; second run: the 2 that were missing


def test_cli_fetch_texts(tmp_path, services, capsys):
    release = write_release(tmp_path / "rel")
    serve_release(services)
    code = main(["data", "fetch-texts", "--official", str(release), "--out", str(tmp_path / "out"),
                 "--europepmc-url", f"{services.url}/epmc", "--openreview-url", f"{services.url}/or",
                 "--requests-per-second", "0", "--no-progress"])
    out = capsys.readouterr().out
    assert code == 0
    assert "f1000: 2 papers, 1 present, 1 resolved, 1 fetched, 1 converted, 0 failed" in out
    assert "wrote 4 texts to 1 shard(s)" in out
    assert main(["data", "fetch-texts", "--official", str(tmp_path / "nope"), "--out", str(tmp_path / "o2")]) == 2


def test_cli_fetch_texts_with_nothing_converted_exits_3(tmp_path, services, capsys):
    """Every paper to fetch failed or stayed unresolved: no usable result, exit 3 (issue 21), report still written."""
    release = write_release(tmp_path / "rel")  # the stand-in services know none of its papers
    code = main(["data", "fetch-texts", "--official", str(release), "--out", str(tmp_path / "out"),
                 "--europepmc-url", f"{services.url}/epmc", "--openreview-url", f"{services.url}/or",
                 "--requests-per-second", "0", "--max-attempts", "1", "--no-progress"])
    assert code == 3
    assert "was converted (exit 3" in capsys.readouterr().err
    assert (tmp_path / "out" / "fetch_report.json").is_file()


def test_api1_venue_metadata_only_xml_unknown_source_and_a_broken_answer(tmp_path, services):
    v1_title = "Graph pooling operators: a survey"
    v1_abstract = "Graph pooling coarsens a graph between message passing layers; we compare forty pooling operators."
    records = [
        review("openreview-301", "openreview", v1_title, v1_abstract, {"Structure": (1.0, ["Clear taxonomy."])}),
        review("f1000-7101", "f1000", F1000_TITLE, F1000_ABSTRACT, {"Readability": (1.0, ["Reads well."])}),
        review("x-1", None, "A paper from nowhere", "An abstract.", {"Readability": (1.0, ["Fine."])}),
        review("moprd-9301-2-r1", "moprd", PEERJ_TITLE, PEERJ_ABSTRACT, {"Readability": (1.0, ["Fine."])}),
    ]
    del records[2]["source"]
    (tmp_path / "rel").mkdir()
    (tmp_path / "rel" / "train_samples.json").write_text(json.dumps(records))
    services.searches[f"v1:{v1_title}"] = [{  # API 1 note shape: plain content values
        "id": "GrPool7", "forum": "GrPool7", "cdate": 1569000000000,
        "content": {"title": v1_title, "abstract": v1_abstract, "authors": ["Ana Ruiz"], "pdf": "/pdf/x.pdf"}}]
    services.files["/or1/pdf?id=GrPool7"] = ("application/pdf", pdf([v1_title, "1 Introduction", "Pooling."]))
    services.searches[EuropePMC.title_query(F1000_TITLE)] = [
        epmc_hit(F1000_TITLE, "10.12688/f1000research.71001.1", "PMC7100001", 2021, F1000_ABSTRACT, "F1000Research")]
    front_only = b"<article><front><article-meta><title-group><article-title>T</article-title></title-group>"
    services.files["/epmc/PMC7100001/fullTextXML"] = ("application/xml", front_only + b"</article-meta></front></article>")
    # the PeerJ paper's phrase search finds nothing; its word search finds only an F1000Research article with the
    # same title and abstract
    services.searches[EuropePMC.title_query(PEERJ_TITLE, phrase=False)] = [
        epmc_hit(PEERJ_TITLE, "10.12688/f1000research.71001.1", "PMC7100002", 2021, PEERJ_ABSTRACT, "F1000Research")]
    rep = fetch_texts(tmp_path / "rel", tmp_path / "out", europepmc_url=f"{services.url}/epmc",
                      openreview_urls=[f"{services.url}/or", f"{services.url}/or1"], requests_per_second=0,
                      progress=False).report
    fails = {f["key"].split("-")[0]: f for f in rep["failures"]}
    assert rep["per_source"]["openreview"]["converted"] == 1  # found through API 1 only, PDF from API 1
    assert rep["http"]["openreview1"]["requests"] == 2 and rep["http"]["openreview"]["requests"] == 1
    assert (fails["f1000"]["stage"], fails["f1000"]["reason"]) == (
        "convert", "PMC7100001: the JATS XML has no body (metadata only)")
    assert fails["unknown"]["reason"] == "source 'unknown': no service to search (f1000, moprd or openreview)"
    assert EuropePMC.title_query(PEERJ_TITLE, phrase=False) == "TITLE:(Acoustic monitoring of bats a review)"
    assert fails["moprd"]["reason"] == ("1 hit(s), none accepted; best: 10.12688/f1000research.71001.1 is not a "
                                        "moprd DOI (10.7717/peerj., 10.7717/peerj-cs.)")
    assert rep["n_failures"] == 3

    services.raw["/epmc/search"] = b"<html>maintenance</html>"  # a broken answer with status 200
    rep = fetch_texts(tmp_path / "rel", tmp_path / "out2", europepmc_url=f"{services.url}/epmc",
                      openreview_urls=[f"{services.url}/or"], requests_per_second=0, progress=False).report
    moprd = next(f for f in rep["failures"] if f["source"] == "moprd")
    assert moprd["stage"] == "resolve" and moprd["reason"].startswith("search failed: ")
    assert "not JSON" in moprd["reason"]


@pytest.mark.real
def test_real_f1000_xml_and_real_pdf_through_the_pipeline(tmp_path, services, shared_real):
    from surveyalign.documents import extract_abstract, extract_references, parse_jats

    xml_path = shared_real / "f1000" / "207_6-229_v1.xml"
    pdf_path = shared_real / "surveys" / "alignment-of-llms.pdf"
    md_path = shared_real / "surveys" / "alignment-of-llms.md"
    if not (xml_path.is_file() and pdf_path.is_file() and md_path.is_file()):
        pytest.skip("the real F1000 XML and survey PDF (../shared/real, kept for development beside the repository) are not here")
    article = parse_jats(xml_path.read_bytes())
    or_title = "Aligning Large Language Models with Human: A Survey"
    or_abstract = extract_abstract(md_path.read_text())
    records = [review("f1000-1", "f1000", article.title, article.abstract.replace("**", ""),
                      {"Readability": (1.0, ["Clear."])}),
               review("openreview-1", "openreview", or_title, or_abstract, {"Structure": (1.0, ["Clear."])})]
    (tmp_path / "rel").mkdir()
    (tmp_path / "rel" / "train_samples.json").write_text(json.dumps(records))
    services.searches[EuropePMC.title_query(article.title)] = [
        epmc_hit(article.title, article.doi, "PMC5353432", 2017, article.abstract, "F1000Research")]
    services.files["/epmc/PMC5353432/fullTextXML"] = ("application/xml", xml_path.read_bytes())
    services.searches[or_title] = [or_note("AlignSv1", or_title, or_abstract)]
    services.files["/or/pdf?id=AlignSv1"] = ("application/pdf", pdf_path.read_bytes())
    result = run(tmp_path / "rel", tmp_path / "out", services)
    assert result.report["n_failures"] == 0
    texts = json.loads(result.shards[0].read_text())
    f1000 = texts["f1000-1"]
    assert len(extract_references(f1000)) == 16 and "## Discussion" in f1000
    report_paras = [p for s in article.sub_articles for p in s.text.split("\n\n") if len(p) >= 30]
    assert report_paras and not [p for p in report_paras if p in f1000]
    assert result.report["sub_articles_removed"] == {"ref-report": 2}
    assert len(texts["openreview-1"]) > 50_000 and "References" in texts["openreview-1"]


def test_an_interrupted_run_keeps_its_texts_and_resumes(tmp_path, services, monkeypatch):
    from surveyalign.data.fetch import pipeline

    release = write_release(tmp_path / "rel")
    serve_release(services)
    real, calls = pipeline._process, []

    def interrupted(target, *args):
        calls.append(target.key)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(target, *args)

    monkeypatch.setattr(pipeline, "_process", interrupted)
    with pytest.raises(KeyboardInterrupt):
        run(release, tmp_path / "out", services)
    first = json.loads((tmp_path / "out" / "articles" / "articles_part_fetched_001.json").read_text())
    report = json.loads((tmp_path / "out" / "fetch_report.json").read_text())
    assert len(first) >= 1 and sum(s["converted"] for s in report["per_source"].values()) == 1
    monkeypatch.setattr(pipeline, "_process", real)
    rep = run(release, tmp_path / "out", services).report
    assert sum(s["converted"] for s in rep["per_source"].values()) == 3 and rep["n_failures"] == 0
    assert len((tmp_path / "out" / "fetch_state.jsonl").read_text().splitlines()) == 3


def test_unreachable_service_stops_the_run_at_once_with_the_url(tmp_path, capsys):
    with socket.socket() as sock:  # a port nothing listens on once the socket is closed
        sock.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{sock.getsockname()[1]}"
    release = write_release(tmp_path / "rel")
    start = time.monotonic()
    code = main(["data", "fetch-texts", "--official", str(release), "--out", str(tmp_path / "out"),
                 "--europepmc-url", f"{dead}/epmc", "--openreview-url", f"{dead}/or", "--no-progress"])
    assert time.monotonic() - start < 5  # one failure, not every paper times six tries with backoff
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()[0]  # the error line (a --traceback hint follows)
    assert err.startswith("surveyalign data: error: UnreachableError: cannot reach")
    assert f"cannot reach {dead}/epmc" in err and "2 tries: ConnectError" in err


def test_a_second_release_fetched_into_the_same_out_keeps_the_first_ones_texts(tmp_path, services, capsys):
    # issue 21 A: the shards are rewritten on every run; texts of uids the new release does not hold stay
    first = write_release(tmp_path / "rel")
    serve_release(services)
    out = tmp_path / "out"
    assert run(first, out, services).report["carried_over"] == {"uids": 0, "listed": []}
    shard = out / "articles" / "articles_part_fetched_001.json"
    before = json.loads(shard.read_text())
    assert sorted(before) == ["f1000-7001", "moprd-9001-1-r1", "moprd-9001-1-r2", "openreview-101"]

    second = write_release(tmp_path / "rel2")  # the same release without the F1000 and OpenReview train papers
    for name in ("raw/train_samples.json", "train/grouped_trainset.json"):
        records = json.loads((second / name).read_text())
        (second / name).write_text(json.dumps([r for r in records if r["uid"].startswith("moprd")]))
    rep = run(second, out, services).report
    assert rep["carried_over"] == {"uids": 2, "listed": ["f1000-7001", "openreview-101"]}
    assert rep["per_source"]["moprd"]["uids_written"] == 2
    assert json.loads(shard.read_text()) == before  # nothing lost, the same texts

    code = main(["data", "fetch-texts", "--official", str(second), "--out", str(out), "--europepmc-url",
                 f"{services.url}/epmc", "--openreview-url", f"{services.url}/or", "--requests-per-second", "0",
                 "--no-progress"])
    assert code == 0
    assert f"kept 2 texts an earlier run wrote into {out / 'articles'}" in capsys.readouterr().out
    assert json.loads(shard.read_text()) == before


def test_an_unreadable_earlier_shard_is_named(tmp_path, services):
    release = write_release(tmp_path / "rel")
    (tmp_path / "out" / "articles").mkdir(parents=True)
    (tmp_path / "out" / "articles" / "articles_part_fetched_001.json").write_text("[1, 2]")
    with pytest.raises(ValueError, match=r"articles_part_fetched_001.json: expected a JSON object \{uid: text\}, got list"):
        run(release, tmp_path / "out", services)
    (tmp_path / "out" / "articles" / "articles_part_fetched_001.json").write_text("{")
    with pytest.raises(ValueError, match=r"articles_part_fetched_001.json: not valid JSON"):
        run(release, tmp_path / "out", services)

"""`surveyalign ka build` / `ka show` end to end on the sample dataset, graph files, and the real session file."""

from __future__ import annotations

import json

import pytest

from surveyalign.backends import load_backend
from surveyalign.cli import main
from surveyalign.data import load_surveyreview
from surveyalign.documents import Paper
from surveyalign.knowledge.build import build_ka_dataset, read_ka_records
from surveyalign.knowledge.config import KAConfig
from surveyalign.knowledge.graph import CitationGraph
from surveyalign.knowledge.ka import comp_ka, neighbourhood
from surveyalign.knowledge.sample import sample_graph
from surveyalign.testing import FakeScholarServer


def test_graph_files_round_trip_and_bad_lines(tmp_path):
    papers = [Paper(id="W1", title="", year=None, reference_ids=["W2", ""], reference_count=3),
              Paper(id="W2", title="Two", year=2001, citation_count=4, authors=["A B"])]
    for name in ("g.parquet", "g.jsonl"):
        path = CitationGraph(papers).save(tmp_path / name)
        back = CitationGraph.load(path)
        assert [p.to_dict() for p in back.papers] == [p.to_dict() for p in papers]
        assert back.stats.n_untitled == 1 and back.stats.n_empty_reference_ids == 1 and back.stats.n_edges == 1
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "W1"}\n{"id": "W2", "year": "soon"}\n')
    with pytest.raises(ValueError, match=r"bad.jsonl line 2: field 'year' must be an integer"):
        CitationGraph.load(bad)
    bad.write_text('{"id": "W1", "colour": "red"}\n')
    with pytest.raises(ValueError, match=r"line 1: unknown field\(s\) \['colour'\]"):
        CitationGraph.load(bad)


def test_ka_build_dataset_comp_and_crit_then_resume(dataset_dir, tmp_path):
    out = tmp_path / "ka"
    graph = sample_graph(dataset_dir)

    def reply(messages, settings, index):
        return "compressed trend text" if messages[0]["content"].startswith("The notes") else "a block summary"

    config = KAConfig(tokenizer="whitespace", block_tokens=64)
    report = build_ka_dataset(dataset_dir, graph, out, config, backend=load_backend("scripted", replies=reply),
                              progress=False)
    records = read_ka_records(out)
    comp = [r for r in records if r["dimension"] == "comprehensiveness"]
    crit = [r for r in records if r["dimension"] == "criticalness"]
    assert comp and crit and report.n_made == len(records)
    assert all(r["excluded"]["survey"] == 1 and r["excluded"]["citing_survey"] == 1 for r in records)
    assert all(r["n_resolved"] == r["n_references"] and r["tokens"] for r in comp)
    empty = [r for r in records if not r["text"]]
    assert report.n_empty == len(empty) == 1  # sr0016: no neighbour reaches tau_c / tau_y (R+ has 6 papers)
    assert empty[0]["reason"] == "no paper of R+ reaches the citation or year threshold"
    assert all(r["text"] == "compressed trend text" and r["n_calls"] >= 2 for r in crit if r["text"])
    train = load_surveyreview(out, "comprehensiveness", split="train")
    assert all(k.startswith("Cited by the survey") for k in train["knowledge"])
    assert set(load_surveyreview(out, "readability", split="train")["knowledge"]) == {""}
    assert "knowledge" in load_surveyreview(out, "all", split="test").column_names
    # papers without an abstract (abstract: null at the source) are counted in the records and the report (issue 21)
    saved = json.loads((out / "ka" / "ka_report.json").read_text())
    # the sample surveys' lists are full: no reference shortfall (issue 21 E; the rule: test_knowledge_ka.py)
    assert saved["n_reference_shortfall"] == 0 and all(not r["reference_shortfall"] for r in records)
    no_abstract = sum(1 for p in graph.papers if not p.abstract.strip())
    assert saved["n_graph_papers_without_abstract"] == no_abstract
    assert all(0 <= r["crit"]["n_no_abstract"] <= r["n_kept"] for r in crit if "crit" in r)
    assert saved["n_crit_papers_without_abstract"] == sum(r["crit"]["n_no_abstract"] for r in crit if "crit" in r)
    # issue 21 C: the summariser's answers are counted (all new on a first run: one per distinct prompt)
    n_calls = sum(r.get("n_calls", 0) for r in crit)
    assert saved["answers"]["reused"] == 0 and saved["answers"]["retried"] == 0
    assert 0 < saved["answers"]["made"] <= n_calls
    again = build_ka_dataset(dataset_dir, graph, out, config, backend=load_backend("scripted", replies=[]),
                             progress=False)
    assert again.n_made == 0 and again.n_records == report.n_records  # resumed: nothing asked again


def test_ka_build_without_graph_matches_keeps_empty_ka_with_reason(dataset_dir, tmp_path, capsys):
    graph_file = tmp_path / "g.jsonl"
    CitationGraph([Paper(id="X1", title="Nothing like the sample references", year=2000)]).save(graph_file)
    rc = main(["ka", "build", "--dataset", str(dataset_dir), "--graph", str(graph_file), "--out", str(tmp_path / "o"),
               "--dimensions", "comprehensiveness", "--no-progress"])
    assert rc == 3  # every KA record empty: no usable result (issue 21), the records are still written
    captured = capsys.readouterr()
    printed = captured.out
    assert "KA records are empty (no usable knowledge; exit 3)" in captured.err
    assert "empty (" in printed and "none of the" in printed
    assert "papers without an abstract (kept, shown as '(no abstract)'): 1 in the graph, 0 in Crit-KA blocks" in printed  # X1 has none
    records = read_ka_records(tmp_path / "o")
    assert records and all(r["text"] == "" and r["reason"].startswith("none of the") for r in records)
    unit = records[0]["unit_ids"][0]
    assert main(["ka", "show", unit, "--dataset", str(tmp_path / "o")]) == 0
    shown = capsys.readouterr().out
    assert f"== {records[0]['paper_id']} / comprehensiveness" in shown and "no knowledge: none of the" in shown
    assert main(["ka", "show", "nope", "--dataset", str(tmp_path / "o")]) == 2


def test_ka_cli_errors_are_one_line(dataset_dir, tmp_path, capsys):
    assert main(["ka", "build", "--dataset", str(dataset_dir), "--graph", str(tmp_path / "none.jsonl"),
                 "--out", str(tmp_path / "o")]) == 2
    assert "graph file not found" in capsys.readouterr().err
    assert main(["ka", "build", "--dataset", str(dataset_dir), "--graph", "sample", "--out", str(tmp_path / "o"),
                 "--dimensions", "criticalness"]) == 2
    assert "tokenizer" in capsys.readouterr().err


@pytest.mark.real
def test_real_session_graph_comp_ka(shared_real):
    graph = CitationGraph.load(shared_real / "citation-graphs" / "examples.json")
    stats = graph.stats
    assert (stats.n_papers, stats.n_duplicate_ids, stats.n_untitled, stats.n_missing_records) == (163, 3, 2, 4)
    assert stats.n_empty_reference_ids == 601 and stats.n_incomplete == 5
    seed = next(s for s in graph.seeds if s.api == "OpenAlex")
    assert seed.title == "Why Most Published Research Findings Are False" and len(seed.reference_ids) == 37
    refs = [graph.index[r] for r in seed.reference_ids if r in graph.index]
    hood = neighbourhood(graph, refs, survey_nodes=[graph.index[seed.id]], survey_year=seed.year)
    comp = comp_ka(graph, hood)
    assert len(refs) == 36 and hood.n_neighbourhood == 46
    assert hood.excluded == {"survey": 1, "citing_survey": 3, "after_survey": 5}
    assert len(comp.top) == 37 and len(comp.added) == 12 and comp.n_top_in_references == 25
    assert comp.text.splitlines()[0] == "Cited by the survey (36):"
    assert json.dumps(comp.text)  # serialisable as the dataset column


def test_ka_graph_fetched_through_the_api_gives_the_same_comp_ka(dataset_dir, tmp_path):
    """`ka graph` against a fake Semantic Scholar serving the sample graph rebuilds the same neighbourhoods."""
    truth = sample_graph(dataset_dir)
    with FakeScholarServer(truth.papers) as server:
        graph_file = tmp_path / "fetched.jsonl"
        argv = ["ka", "graph", "--dataset", str(dataset_dir), "--base-url", server.s2_url, "--out", str(graph_file),
                "--cache-dir", str(tmp_path / "http"), "--requests-per-second", "0", "--no-progress", "--limit", "3"]
        assert main(argv) == 0
        report = json.loads((tmp_path / "fetched.jsonl.report.json").read_text())
        assert report["n_surveys"] == 3 and report["n_resolved"] == report["n_references"] > 0
        assert report["n_errors"] == 0
        n_requests = len(server.requests)
        assert main(argv) == 0 and len(server.requests) == n_requests  # resumed: nothing asked again
    fetched = CitationGraph.load(graph_file)
    config = KAConfig(dimensions=["comprehensiveness"])
    build_ka_dataset(dataset_dir, fetched, tmp_path / "a", config, progress=False)
    build_ka_dataset(dataset_dir, truth, tmp_path / "b", config, progress=False)
    got = {r["paper_id"]: r for r in read_ka_records(tmp_path / "a") if r["n_resolved"]}
    want = {r["paper_id"]: r for r in read_ka_records(tmp_path / "b")}
    assert len(got) == 3
    for pid, record in got.items():
        assert record["text"] == want[pid]["text"] and record["excluded"] == want[pid]["excluded"]


def test_ka_build_never_reuses_a_record_made_from_another_survey_under_one_id(dataset_dir, tmp_path):
    """Issue 21 A: a KA record was reused for any survey with the same paper id (another dataset into the same --out,
    an edited survey); it is reused only when made from the same survey (title, references, text, year)."""
    import shutil

    import pyarrow as pa
    import pyarrow.parquet as pq

    from surveyalign.knowledge.build import dataset_rows, dataset_surveys

    graph = sample_graph(dataset_dir)
    config = KAConfig(tokenizer="whitespace", dimensions=["comprehensiveness"], comp_max_tokens=60)
    out = tmp_path / "ka-out"
    first = build_ka_dataset(dataset_dir, graph, out, config, backend=load_backend("scripted", replies=["x"]),
                             progress=False)
    edited = tmp_path / "edited"
    shutil.copytree(dataset_dir, edited)
    surveys, _ = dataset_surveys(dataset_rows(edited), ["comprehensiveness"])
    pid = min(surveys["comprehensiveness"])
    for path in (edited / "data").glob("*/*.parquet"):  # one survey's title changes in every config and split
        rows = pq.read_table(path).to_pylist()
        for row in rows:
            if row["paper_id"] == pid:
                row["title"] = "An edited survey title"
        pq.write_table(pa.Table.from_pylist(rows, schema=pq.read_schema(path)), path)
    again = build_ka_dataset(edited, graph, out, config, backend=load_backend("scripted", replies=["x"]),
                             progress=False)
    assert first.n_made == len(surveys["comprehensiveness"]) and again.n_made == 1  # only the edited survey
    records = [r for r in read_ka_records(out) if r["paper_id"] == pid]
    assert len(records) == 1 and records[0]["survey_sha256"] == dataset_surveys(
        dataset_rows(edited), ["comprehensiveness"])[0]["comprehensiveness"][pid].digest()
    assert again.n_records == first.n_records  # the report counts this dataset's surveys only

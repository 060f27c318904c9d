"""References and scholarly APIs on real inputs (issue 21 E): a GROBID answer shorter than the document's
citation numbers, Semantic Scholar ``abstract: null`` in nested objects and a short batch answer."""

from __future__ import annotations

import json

from survey_fixtures import write_pdf_survey

from surveyalign.documents import (
    Paper,
    check_reference_count,
    highest_citation_number,
    read_references,
)
from surveyalign.knowledge import GrobidClient
from surveyalign.knowledge.build import SurveyKAInput
from surveyalign.knowledge.clients import SemanticScholarClient
from surveyalign.knowledge.fetch import fetch_graph, resolve_references
from surveyalign.testing import FakeScholarServer

# GROBID merged [2] and [3] into one entry and lost [5] and [6]: 3 entries for a text citing [1]-[6]
MERGED_TEI = """<TEI xmlns="http://www.tei-c.org/ns/1.0"><text><back><div type="references"><listBibl>
<biblStruct xml:id="b0"><analytic><title level="a">Graph networks</title></analytic><monogr><imprint>
<date when="2019"/></imprint></monogr></biblStruct>
<biblStruct xml:id="b1"><analytic><title level="a">Message passing. Spectral graph convolutions</title></analytic>
<monogr><imprint><date when="2018"/></imprint></monogr></biblStruct>
<biblStruct xml:id="b2"><analytic><title level="a">Graph attention networks</title></analytic><monogr><imprint>
<date when="2018"/></imprint></monogr></biblStruct>
</listBibl></div></back></text></TEI>"""

PDF_LINES = ["A Survey of Graph Networks", "1 Introduction",
             "Graph networks [1] extend message passing [2, 3] and attention [4].",
             "Recent work [5]-[6] scales them.", "References",
             "[1] A. One. Graph networks. 2019.", "[2] B. Two. Message passing. 2018."]


def test_highest_citation_number_skips_the_reference_section():
    text = "Body [1], [2, 7] and [3-9] and [10–12].\n\n## References\n\n[1] x\n[40] y\n"
    assert highest_citation_number(text) == 12
    assert highest_citation_number("no citations here") is None


def test_grobid_shortfall_is_flagged_in_the_result_and_the_report(tmp_path, monkeypatch):
    pdf = write_pdf_survey(tmp_path, PDF_LINES, title="A Survey of Graph Networks", name="graphs.pdf")
    with FakeScholarServer([], grobid_tei=MERGED_TEI) as server:
        monkeypatch.setenv("GROBID_URL", server.base_url)
        refs = read_references(pdf, pdf_reader=GrobidClient().references)
    assert len(refs) == 3 and refs.cited_up_to == 6 and refs.shortfall == 3
    assert refs.problems == [(f"{pdf}: 3 references read but the text cites up to [6]: 3 missing (entries merged "
                             "or lost)")]
    summary = refs.summary()
    assert (summary["n_references"], summary["cited_up_to"], summary["shortfall"], summary["n_problems"]) == \
        (3, 6, 3, 1)
    json.dumps(summary)  # the report form is JSON


def test_a_long_enough_list_has_no_shortfall():
    from surveyalign.documents import Reference, ReferenceList

    refs = ReferenceList([Reference(key=str(i)) for i in range(1, 5)], [], "tei", "x.pdf")
    assert refs.shortfall is None  # not checked
    check_reference_count(refs, "text [1]-[4]")
    assert (refs.cited_up_to, refs.shortfall, refs.problems) == (4, 0, [])


def _papers() -> list[Paper]:
    cited = Paper("c" * 40, title="A paper with no abstract", year=2015, abstract="")
    return [
        Paper("a" * 40, title="Graph networks for molecules", year=2019, doi="10.1000/a",
              abstract="We model molecules as graphs.", reference_ids=["c" * 40], authors=["Ann Lee"]),
        Paper("b" * 40, title="Attention on graphs", year=2018, doi="10.1000/b", abstract="", authors=["Bo Kim"],
              reference_ids=["c" * 40]),
        cited,
    ]


def test_s2_short_batch_answer_is_mapped_by_id(tmp_path):
    with FakeScholarServer(_papers(), batch_drop={"DOI:10.1000/a"}) as server:
        client = SemanticScholarClient(server.s2_url, requests_per_second=0)
        got = client.papers(["DOI:10.1000/a", "DOI:10.1000/b", "DOI:10.1000/unknown"])
    # the answer held 2 entries (b, null) for 3 ids: b is matched by its DOI, a and the unknown id are None
    assert [p.id if p else None for p in got] == [None, "b" * 40, None]
    assert client.n_batch_missing == 2
    assert client.batch_problems == ["POST /paper/batch answered 2 entries for 3 ids; 2 id(s) left unresolved"]


def test_s2_null_nested_abstracts_and_short_batch_are_counted_in_the_fetch_report(tmp_path):
    refs = ("[1] Ann Lee. 2019. Graph networks for molecules. Nature. doi:10.1000/a",
            "[2] Bo Kim. 2018. Attention on graphs. In ICLR. doi:10.1000/b")
    survey = SurveyKAInput("s1", "A survey of graphs", refs, "")
    with FakeScholarServer(_papers(), batch_drop={"DOI:10.1000/a"}) as server:
        client = SemanticScholarClient(server.s2_url, requests_per_second=0)
        resolutions, _ = resolve_references(client, [r for r in _refs(survey)])
        assert [r.resolved for r in resolutions] == [True, True]  # a: not in the batch answer, found by search
        report = fetch_graph([survey], SemanticScholarClient(server.s2_url, requests_per_second=0),
                             tmp_path / "graph.jsonl", progress=False)
    records = [json.loads(line) for line in (tmp_path / "graph.jsonl").read_text().splitlines()]
    assert report.n_batch_missing == 1
    assert any("answered 1 entries for 2 ids" in line for line in report.errors)
    # b (top level) and c (nested in both references lists) came with abstract: null
    assert report.n_without_abstract == sum(1 for r in records if not r["abstract"]) == 3
    assert {r["id"] for r in records if not r["abstract"]} == {"b" * 40, "c" * 40}
    saved = json.loads((tmp_path / "graph.jsonl.report.json").read_text())
    assert (saved["n_without_abstract"], saved["n_batch_missing"]) == (3, 1)


def _refs(survey):
    from surveyalign.knowledge.build import survey_references

    return survey_references(survey)[0]

"""Reference-list readers (BibTeX, LaTeX \\bibitem, markdown [n] / author-year, GROBID TEI) and cited keys."""

from __future__ import annotations

import re

import pytest

from surveyalign.documents import (
    cited_keys,
    parse_bibtex,
    parse_latex_bibliography,
    parse_markdown_references,
    parse_tei_references,
    read_references,
)
from surveyalign.knowledge import GrobidClient
from surveyalign.testing import FakeScholarServer

BIB = r"""
@inproceedings{vaswani2017,
  title = {Attention is All you Need},
  author = {Vaswani, Ashish and Shazeer, Noam},
  booktitle = {NeurIPS},
  year = {2017},
  eprint = {1706.03762},
}
@article{Hagel10,
  Author = {Johan Hagelb{\"a}ck and Stefan J. Johansson},
  Title = {A {Study} on Human like Characteristics},
  Journal = {CIG},
  doi = {https://doi.org/10.1109/CIG.2010.5593358},
  Year = 2010
}
@article{vaswani2017, title = {Duplicate}, year = 2000}
"""


def test_bibtex_entries_fields_and_duplicate_reported():
    refs = parse_bibtex(BIB, path="x.bib")
    assert refs.keys() == ["vaswani2017", "Hagel10"]
    first, second = refs.references
    assert (first.title, first.year, first.arxiv_id, first.venue) == ("Attention is All you Need", 2017,
                                                                      "1706.03762", "NeurIPS")
    assert first.authors == ["Vaswani, Ashish", "Shazeer, Noam"] and first.first_author_surname == "Vaswani"
    assert second.authors[0] == "Johan Hagelbäck" and second.first_author_surname == "Hagelbäck"
    assert second.title == "A Study on Human like Characteristics" and second.doi == "10.1109/cig.2010.5593358"
    assert len(refs.problems) == 1 and "duplicate key 'vaswani2017'" in refs.problems[0] and "x.bib" in refs.problems[0]


def test_cited_keys_order_comments_and_end_document():
    tex = r"""
    As shown \cite{a, b} and \citep[see][p. 3]{c}; \citet*{a}. % \cite{hidden}
    100\% sure \parencite{d}\nocite{*}\textcite{e,f}
    \end{document}
    \cite{after}
    """
    assert cited_keys(tex) == ["a", "b", "c", "d", "e", "f"]
    assert cited_keys(tex, include_comments=True) == ["a", "b", "c", "hidden", "d", "e", "f", "after"]
    refs = parse_bibtex("@misc{A, title={T}}\n@misc{d, title={D}}")
    found, missing = refs.select(["a", "d", "zz"])  # BibTeX keys are case-insensitive
    assert [r.title for r in found] == ["T", "D"] and missing == ["zz"]


def test_latex_thebibliography_with_newblock():
    tex = r"""
    \begin{thebibliography}{9}
    \bibitem{hoch97} S.~Hochreiter and J.~Schmidhuber.
    \newblock Long short-term memory.
    \newblock {\em Neural Computation}, 9(8), 1997.
    \bibitem[Bah15]{bahdanau} D. Bahdanau, K. Cho, Y. Bengio, ``Neural machine translation by jointly learning
      to align and translate,'' in ICLR, 2015. arXiv:1409.0473
    % \bibitem{gone} Commented Out. Title. 2001.
    \end{thebibliography}
    """
    refs = parse_latex_bibliography(tex)
    assert refs.keys() == ["hoch97", "bahdanau"]
    hoch, bah = refs.references
    assert (hoch.title, hoch.year, hoch.authors) == ("Long short-term memory", 1997,
                                                     ["S. Hochreiter", "J. Schmidhuber"])
    assert hoch.venue.startswith("Neural Computation")
    assert bah.title == "Neural machine translation by jointly learning to align and translate"
    assert (bah.year, bah.arxiv_id, bah.first_author_surname) == (2015, "1409.0473", "Bahdanau")


def test_markdown_numbered_run_together_follows_numbering():
    md = """# Survey

Text citing [2] and [1].

## References

[1] Aditya Grover and Jure Leskovec. 2016. node2vec: scalable feature learning for networks. In KDD. 855- 864. [2] Ana [S]u[snjara and Pierre V. 2015. Accelerated filtering on graphs. (2015). https://arxiv.org/abs/1509.04537[3] Z. Wu, S. Pan, "A comprehensive survey on graph neural networks," IEEE TNNLS, 2020. see [7]
"""
    refs = parse_markdown_references(md)
    assert refs.keys() == ["1", "2", "3"]  # the stray [7] inside entry 3 does not start an entry
    one, two, three = refs.references
    assert (one.title, one.year, one.authors) == ("node2vec: scalable feature learning for networks", 2016,
                                                  ["Aditya Grover", "Jure Leskovec"])
    assert (two.year, two.arxiv_id) == (2015, "1509.04537")
    assert (three.title, three.year, three.first_author_surname) == (
        "A comprehensive survey on graph neural networks", 2020, "Wu")


def test_markdown_author_year_entries():
    md = """## References

Waseem AlShikh and Kirk Goddard. 2023. Becoming self-instruct: early stopping. arXiv preprint arXiv:2307.03692. Yuvanesh Anand, Zach Nussbaum. 2023a. Gpt4all: Training an assistant. https://github.com/x

BIG bench authors. 2023. Beyond the imitation game. Transactions on Machine Learning Research.
"""
    refs = parse_markdown_references(md)
    assert [r.title for r in refs.references] == ["Becoming self-instruct: early stopping",
                                                   "Gpt4all: Training an assistant", "Beyond the imitation game"]
    assert [r.year for r in refs.references] == [2023, 2023, 2023]
    assert refs.references[0].arxiv_id == "2307.03692" and refs.references[1].authors == ["Yuvanesh Anand",
                                                                                          "Zach Nussbaum"]
    assert parse_markdown_references("no heading here").problems == [
        "markdown: no 'References' / 'Bibliography' heading found"]


TEI = """<?xml version="1.0" encoding="UTF-8"?>
<TEI xmlns="http://www.tei-c.org/ns/1.0"><text><back><div type="references"><listBibl>
<biblStruct xml:id="b0"><analytic><title level="a" type="main">Deep residual learning</title>
<author><persName><forename type="first">Kaiming</forename><surname>He</surname></persName></author></analytic>
<monogr><title level="m">CVPR</title><imprint><date type="published" when="2016-06"/></imprint></monogr>
<idno type="DOI">10.1109/CVPR.2016.90</idno></biblStruct>
<biblStruct xml:id="b1"><monogr><title level="m">Pattern Recognition and Machine Learning</title>
<author><persName><forename>Christopher</forename><forename>M</forename><surname>Bishop</surname></persName></author>
<imprint><date>2006</date></imprint></monogr></biblStruct>
</listBibl></div></back></text></TEI>"""


def test_tei_biblstruct(tmp_path):
    path = tmp_path / "refs.tei"
    path.write_text(TEI)
    refs = read_references(path)
    assert refs.keys() == ["b0", "b1"] and refs.format == "tei"
    he, bishop = refs.references
    assert (he.title, he.year, he.doi, he.authors, he.venue) == ("Deep residual learning", 2016,
                                                                 "10.1109/cvpr.2016.90", ["Kaiming He"], "CVPR")
    assert (bishop.title, bishop.year, bishop.authors) == ("Pattern Recognition and Machine Learning", 2006,
                                                           ["Christopher M Bishop"])
    with pytest.raises(ValueError, match="bad.xml: not well-formed XML"):
        parse_tei_references("<TEI><unclosed>", path="bad.xml")
    with pytest.raises(ValueError, match="cannot tell the reference format"):
        read_references(tmp_path / "refs.docx")


@pytest.mark.real
def test_real_latex_survey_cited_keys_against_bib(shared_real):
    bib = read_references(shared_real / "latex-survey" / "survey.bib")
    tex = (shared_real / "latex-survey" / "survey.tex").read_text()
    # 118 entries in the file: 117 parsed + one duplicate key (reported, first kept)
    assert len(bib) == 117 and len(bib.problems) == 1 and "duplicate key 'Diard03'" in bib.problems[0]
    every = cited_keys(tex, include_comments=True)
    assert len(every) == 81
    found, missing = bib.select(every)
    assert len(found) == 79 and missing == ["SynnaeveCIG11", "gameurl"]  # one commented, one after \end{document}
    typeset = cited_keys(tex)
    found, missing = bib.select(typeset)
    assert len(typeset) == 74 and len(found) == 74 and missing == []


@pytest.mark.real
def test_real_markdown_numbered_references(shared_real):
    path = shared_real / "surveys" / "graph-neural-networks.md"
    refs = read_references(path)
    text = path.read_text()
    section = text[text.rindex("## REFERENCES"):]
    highest = max(int(n) for n in re.findall(r"\[(\d{1,3})\]", section))
    assert highest == 251 and len(refs) == highest and refs.keys() == [str(i) for i in range(1, 252)]
    assert refs.references[0].title == "node2vec: scalable feature learning for networks"
    assert sum(1 for r in refs.references if r.title and r.year) >= 245


def test_grobid_client_posts_the_pdf_and_reads_tei(tmp_path, monkeypatch):
    pdf = tmp_path / "survey.pdf"
    pdf.write_bytes(b"%PDF-1.4 made-up bytes")
    with FakeScholarServer([], grobid_tei=TEI, fail_first=1, fail_status=503) as server:
        monkeypatch.setenv("GROBID_URL", server.base_url)
        refs = GrobidClient(backoff_initial=0.01).references(pdf)  # a busy server (503) is retried
        assert refs.keys() == ["b0", "b1"] and refs.path == str(pdf)
        assert read_references(pdf, pdf_reader=GrobidClient().references).keys() == ["b0", "b1"]  # .pdf: GROBID
        post = server.requests[-1]
        assert (post.method, post.path, len(server.requests)) == ("POST", "/api/processReferences", 3)
        assert b"%PDF-1.4 made-up bytes" in post.body and b'name="consolidateCitations"' in post.body
    monkeypatch.delenv("GROBID_URL")
    with pytest.raises(ValueError, match="no GROBID server configured"):
        GrobidClient()
    with pytest.raises(ValueError, match="needs a GROBID server; set GROBID_URL"):
        read_references(pdf)

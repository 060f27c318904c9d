"""Documents and references on real inputs (issue 21 E): accents in ``\\bibitem`` lists, NLM-style JATS
citations, JATS reference lists, ligatures in PDF text, empty-password PDFs, reference-string layouts."""

from __future__ import annotations

import zlib
from pathlib import Path

import pytest
from survey_fixtures import write_pdf_survey

from surveyalign.documents import (
    fix_ligatures,
    parse_jats,
    parse_latex_bibliography,
    parse_markdown_references,
    parse_reference_text,
    read_document,
    read_references,
)

BBL = r"""\begin{thebibliography}{3}
\bibitem[M{\"u}ller et~al.(2020)]{mueller2020}
A.~M{\"u}ller and J.~Garc{\'\i}a.
\newblock Pr{\"a}diktive {M}odelle f\"ur {G}raphen.
\newblock In \emph{Proc. ICML}, 2020.
\bibitem{strasser2019} B.~Stra\ss{}er and \v{S}.~\c{C}ak{\i}r. Graph networks for molecules. \url{http://x.org}, 2019.
\bibitem{mueller2021} M\"{u}ller, A. Effiziente Netze. Nature, 2021.
\end{thebibliography}
"""


def test_bbl_with_accent_macros_reads_whole_entries(tmp_path):
    path = tmp_path / "survey.bbl"
    path.write_text(BBL, encoding="utf-8")
    refs = read_references(path).references
    assert [(r.key, r.title, r.authors) for r in refs] == [
        ("mueller2020", "Prädiktive Modelle für Graphen", ["A. Müller", "J. García"]),
        ("strasser2019", "Graph networks for molecules", ["B. Straßer", "Š. Çakır"]),
        ("mueller2021", "Effiziente Netze", ["Müller, A"]),
    ]
    assert [r.year for r in refs] == [2020, 2019, 2021]
    # the \url macro is not read as a \u (breve) accent
    assert "url" not in refs[1].title


NLM_JATS = """<?xml version="1.0" encoding="UTF-8"?>
<article article-type="research-article"><front><article-meta><title-group>
<article-title>Graphs in chemistry</article-title></title-group></article-meta></front>
<body><sec><title>Introduction</title><p>Text [1].</p></sec></body>
<back><ref-list>
<ref id="B1"><label>1</label><citation citation-type="journal"><person-group person-group-type="author"><name>\
<surname>Lee</surname><given-names>A</given-names></name><name><surname>Kim</surname><given-names>BC</given-names>\
</name></person-group><article-title>Graph networks for molecules</article-title><source>Nature</source>\
<year>2019</year><volume>12</volume><fpage>1</fpage><lpage>9</lpage>\
<pub-id pub-id-type="doi">10.1000/xyz123</pub-id></citation></ref>
<ref id="B2"><label>2</label><citation citation-type="book"><name><surname>Wiener</surname><given-names>N</given-names>\
</name><source>Cybernetics</source><year>1948</year></citation></ref>
<ref id="B3"><label>3</label><mixed-citation publication-type="journal"><person-group><name><surname>Roe</surname>\
<given-names>P</given-names></name></person-group>. <article-title>Mixed is kept as printed</article-title>. \
<source>Science</source>. <year>2001</year>.</mixed-citation></ref>
</ref-list></back></article>
"""


def test_nlm_citation_elements_are_read_with_separators(tmp_path):
    article = parse_jats(NLM_JATS)
    assert [r.text for r in article.references] == [
        "Lee A, Kim BC. Graph networks for molecules. Nature. 2019. 12:1-9. doi:10.1000/xyz123",
        "Wiener N. Cybernetics. 1948.",
        "Roe P. Mixed is kept as printed. Science. 2001.",
    ]
    assert article.references[0].authors == ["Lee A", "Kim BC"]
    path = tmp_path / "article.xml"
    path.write_text(NLM_JATS, encoding="utf-8")
    refs = read_references(path)
    assert refs.format == "jats" and refs.problems == []
    assert [(r.key, r.title, r.year, r.doi) for r in refs.references] == [
        ("1", "Graph networks for molecules", 2019, "10.1000/xyz123"),
        ("2", "Cybernetics", 1948, None),
        ("3", "Mixed is kept as printed", 2001, None),
    ]
    assert refs.references[0].authors == ["Lee A", "Kim BC"]


def test_read_references_refuses_an_unknown_xml_root_by_name(tmp_path):
    path = tmp_path / "feed.xml"
    path.write_text("<?xml version='1.0'?><rss><channel/></rss>", encoding="utf-8")
    with pytest.raises(ValueError, match=r"feed\.xml: an XML file with root <rss> .*GROBID TEI .*JATS"):
        read_references(path)


def test_real_f1000_jats_reference_list(shared_real):
    refs = read_references(shared_real / "f1000" / "207_6-229_v1.xml")
    assert len(refs) == 16  # the 17th <ref> belongs to a referee report
    first = refs.references[0]
    assert first.title == "Rescuing US biomedical research from its systemic flaws"
    assert first.year == 2014 and first.doi == "10.1073/pnas.1404402111"
    assert first.authors[:2] == ["Alberts B", "Kirschner MW"]


# -- PDFs ------------------------------------------------------------------------------------------------------

def _pdf_with_ligatures(path: Path) -> Path:
    """A one-page PDF whose font maps codes 1 and 2 to U+FB03 (ffi) and U+FB01 (fi) through /ToUnicode, as
    PDFs typeset by TeX do: extracted text holds the ligature code points."""
    cmap = (b"/CIDInit /ProcSet findresource begin 12 dict begin begincmap /CMapName /L def\n"
            b"1 begincodespacerange <00> <FF> endcodespacerange\n"
            b"2 beginbfchar <01> <FB03> <02> <FB01> endbfchar\n"
            b"1 beginbfrange <20> <7E> <0020> endbfrange\n"
            b"endcmap CMapName currentdict /CMap defineresource pop end end\n")
    content = b"BT /F1 14 Tf 72 720 Td (E\x01cient Graph Networks) Tj 0 -20 Td (Speci\x02c text of the survey.) Tj ET"
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        (b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>"),
        b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(zlib.compress(content))
        + zlib.compress(content) + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /ToUnicode 6 0 R >>",
        b"<< /Length %d >>\nstream\n" % len(cmap) + cmap + b"\nendstream",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer << /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    path.write_bytes(bytes(out))
    return path


def test_pdf_ligatures_are_spelled_out(tmp_path):
    from pypdf import PdfReader

    path = _pdf_with_ligatures(tmp_path / "ligatures.pdf")
    assert "\ufb03" in PdfReader(path).pages[0].extract_text()  # the file really carries the ligature
    document = read_document(path)
    assert "Efficient Graph Networks" in document.text and "Specific text" in document.text
    assert not any("\ufb00" <= ch <= "\ufb06" for ch in document.text + document.title)
    assert document.title == "Efficient Graph Networks"


def test_ligatures_in_titles_and_reference_titles():
    assert fix_ligatures("E\ufb03cient \ufb01ne-tuning \ufb02ows o\ufb00 \ufb04 \ufb05 \ufb06") == \
        "Efficient fine-tuning flows off ffl st st"
    ref = parse_reference_text("[1] A. Author, \"E\ufb03cient transformers,\" in Proc. X, 2020.", "1")
    assert ref.title == "Efficient transformers"
    refs = parse_markdown_references("# S\n\n## References\n\n[1] Lee A. Speci\ufb01c graphs. Nature. 2019.\n")
    assert refs.references[0].title == "Specific graphs"


def _encrypted(tmp_path: Path, name: str, user_password: str) -> Path:
    from pypdf import PdfReader, PdfWriter

    plain = write_pdf_survey(tmp_path / "plain", name=f"plain-{name}")
    writer = PdfWriter(clone_from=PdfReader(plain))
    writer.encrypt(user_password=user_password, owner_password="owner-secret", algorithm="RC4-128")
    path = tmp_path / name
    with path.open("wb") as handle:
        writer.write(handle)
    return path


def test_pdf_with_an_empty_user_password_is_opened(tmp_path):
    from pypdf import PdfReader

    path = _encrypted(tmp_path, "restricted.pdf", "")
    assert PdfReader(path).is_encrypted
    document = read_document(path)
    assert document.title == "A Survey of Flaky Tests"
    assert "flaky" in document.text.lower()


def test_pdf_with_a_real_password_is_refused_with_its_name(tmp_path):
    path = _encrypted(tmp_path, "locked.pdf", "s3cret")
    with pytest.raises(ValueError, match=r"locked\.pdf: the PDF is protected by a password"):
        read_document(path)


# -- reference strings -------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "title", "authors", "year"), [
    # Vancouver / NLM (the case: the title was "Nature")
    ("Lee A. Graph networks for molecules. Nature. 2019.", "Graph networks for molecules", ["Lee A"], 2019),
    ("Kipf TN, Welling M. Semi-supervised classification with graph convolutional networks. ICLR. 2017.",
     "Semi-supervised classification with graph convolutional networks", ["Kipf TN", "Welling M"], 2017),
    # a title with no authors, an acronym before "In Proc." (the case: "...NLP. In Proc")
    ("Parameter-efficient transfer learning for NLP. In Proc. ICML",
     "Parameter-efficient transfer learning for NLP", [], None),
    # numbered, initials first
    (("[3] N. Houlsby, A. Giurgiu, S. Jastrzebski. Parameter-efficient transfer learning for NLP. In Proc. ICML, "
     "2019."), "Parameter-efficient transfer learning for NLP", ["N. Houlsby", "A. Giurgiu", "S. Jastrzebski"], 2019),
    # IEEE
    ('A. Vaswani, N. Shazeer, and N. Parmar, "Attention is all you need," in Proc. NeurIPS, 2017, pp. 5998-6008.',
     "Attention is all you need", ["A. Vaswani", "N. Shazeer", "N. Parmar"], 2017),
    ("S. Kullback, Information theory and statistics. Courier Corporation, 1997.",
     "Information theory and statistics", ["S. Kullback"], 1997),
    # ACM
    (("Ashish Vaswani, Noam Shazeer, and Niki Parmar. 2017. Attention is all you need. In Advances in NeurIPS. "
     "5998-6008."), "Attention is all you need", ["Ashish Vaswani", "Noam Shazeer", "Niki Parmar"], 2017),
    (("Thomas N. Kipf and Max Welling. Semi-supervised classification with graph convolutional networks. In ICLR, "
     "2017."), "Semi-supervised classification with graph convolutional networks", ["Thomas N. Kipf", "Max Welling"],
     2017),
    # Springer (LNCS)
    (("Wu, Z., Pan, S.: A comprehensive survey on graph neural networks. IEEE Trans. Neural Netw. Learn. Syst. "
     "32(1), 4-24 (2021)"), "A comprehensive survey on graph neural networks", ["Wu, Z.", "Pan, S"], 2021),
    # APA / author-year
    ("Vaswani, A., Shazeer, N. and Parmar, N. (2017). Attention is all you need. In NeurIPS.",
     "Attention is all you need", ["Vaswani, A.", "Shazeer, N.", "Parmar, N"], 2017),
    ("Y. Bengio. Is attention all you need? In Proc. ICLR, 2020.", "Is attention all you need?", ["Y. Bengio"], 2020),
])
def test_reference_string_layouts(text, title, authors, year):
    ref = parse_reference_text(text, "k")
    assert (ref.title, ref.authors, ref.year) == (title, authors, year)


def test_real_reference_lists_titles(shared_real):
    """Titles read from the three real surveys' reference lists (numbered ACM, numbered IEEE run together)."""
    checks = {
        "graph-neural-networks.md": (251, {"1": "node2vec: scalable feature learning for networks"}),
        "generative-diffusion-models.md": (258, {"40": "Stochastic differential equations: an introduction with "
                                                       "applications",
                                                 "230": "Information theory and statistics"}),
        "alignment-of-llms.md": (109, {}),
    }
    for name, (count, titles) in checks.items():
        refs = parse_markdown_references((shared_real / "surveys" / name).read_text(encoding="utf-8")).references
        assert len(refs) == count, name
        by_key = {ref.key: ref.title for ref in refs}
        for key, title in titles.items():
            assert by_key[key] == title, (name, key)
        empty = [ref.key for ref in refs if not ref.title]
        assert len(empty) <= 0.02 * count, (name, empty)


def test_latex_bibliography_decodes_accents_before_splitting():
    refs = parse_latex_bibliography(BBL).references
    assert refs[0].raw.startswith("A.~M{ü}ller and J.~Garc{í}a.")

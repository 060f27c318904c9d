"""Edges of the reference-list readers (issue 27): every LaTeX accent, the BibTeX fields ids and years come from,
unreadable and empty entries with their positions, several ``thebibliography`` blocks, JATS keys, XML roots,
citation numbers around the reference heading, and the suffix table of :func:`read_references`."""

from __future__ import annotations

import pytest

from surveyalign.documents import (
    Reference,
    ReferenceList,
    check_reference_count,
    cited_keys,
    decode_latex_accents,
    highest_citation_number,
    parse_bibtex,
    parse_jats_references,
    parse_latex_bibliography,
    read_references,
)

# -- accents ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("latex", "text"), [
    (r"\`{e}", "è"), (r"\'e", "é"), (r"\^o", "ô"), (r"\"u", "ü"), (r"\~n", "ñ"), (r"\=a", "ā"), (r"\.z", "ż"),
    (r"\u{g}", "ğ"), (r"\v s", "š"), (r"\H{o}", "ő"), (r"\c{c}", "ç"), (r"\k{a}", "ą"), (r"\r{a}", "å"),
    (r"\d{o}", "ọ"), (r"\b{k}", "ḵ"),
    # dotless i and j under an accent, braced or bare, and spaces inside the braces
    (r"\"{\i}", "ï"), (r"\'\i", "í"), (r"\^{\j}", "ĵ"), (r"\'{ e }", "é"), (r"\c c", "ç"),
    # the special letters, with and without the empty group
    (r"\ss{}", "ß"), (r"\ss", "ß"), (r"\oe", "œ"), (r"\OE", "Œ"), (r"\ae", "æ"), (r"\AE", "Æ"), (r"\aa", "å"),
    (r"\AA", "Å"), (r"\o", "ø"), (r"\O", "Ø"), (r"\l", "ł"), (r"\L", "Ł"), (r"\i", "ı"), (r"\j", "ȷ"),
])
def test_every_latex_accent_and_special_letter(latex, text):
    assert decode_latex_accents(latex) == text


def test_accents_leave_other_macros_and_braces_as_written():
    assert decode_latex_accents(r"M{\"u}ller \url{x} \vspace{1pt} \octave \item") == \
        r"M{ü}ller \url{x} \vspace{1pt} \octave \item"


# -- cited keys ---------------------------------------------------------------------------------------------------

def test_cited_keys_escaped_percent_and_empty_pieces():
    tex = "50\\% of \\cite{a,,b} and \\citealp{c}\\citeauthor*{ d } % \\cite{e}\n\\cite{}"
    assert cited_keys(tex) == ["a", "b", "c", "d"]
    # the comment is kept with include_comments, and nothing after \end{document} is cut without it
    assert cited_keys("\\cite{x}\\end{document}\\cite{y}", include_comments=True) == ["x", "y"]
    assert cited_keys("\\cite{x}\\end{document}\\cite{y}") == ["x"]


# -- BibTeX -------------------------------------------------------------------------------------------------------

BIB_IDS = """@article{a,
  title = {T1},
  journal = {arXiv preprint arXiv:2101.00001},
  date = {2019-05-01},
}
@misc{b, title={T2}, url={https://doi.org/10.1000/ABC}, publisher={Springer}}
@misc{c, title={T3}, note={arXiv:2102.00002v3}, booktitle={ACL}, year={2020}, date={1999}}
@misc{d, title={T4}, arxiv={2103.00003}, doi={doi:10.1000/Direct}, url={https://doi.org/10.1000/other}}
@misc{e, title={T5}, eprint={2105.00005}, note={arXiv:2102.00002}, journal={J}, booktitle={B}}
@misc{f, title = {T6}
@misc{g, title = {T7}}
"""


def test_bibtex_ids_years_and_venues_from_every_field():
    refs = parse_bibtex(BIB_IDS, path="ids.bib")
    got = {r.key: (r.year, r.doi, r.arxiv_id, r.venue) for r in refs.references}
    assert got == {
        "a": (2019, None, "2101.00001", "arXiv preprint arXiv:2101.00001"),  # arXiv id in the journal field
        "b": (None, "10.1000/abc", None, "Springer"),  # DOI in the url field
        "c": (2020, None, "2102.00002", "ACL"),  # arXiv id in the note; year wins over date
        "d": (None, "10.1000/direct", "2103.00003", ""),  # a bare arXiv field; the doi field wins over the url
        "e": (None, None, "2105.00005", "J"),  # the eprint field wins over the note; journal over booktitle
        "g": (None, None, None, ""),
    }
    # the entry left open (f, on the 10th line) is reported with its line, the entries after it are read
    assert refs.problems == ["ids.bib: line 10: entry could not be parsed (ParsingFailedBlock)"]
    assert refs.format == "bibtex" and refs.path == "ids.bib"
    assert refs.references[0].raw.startswith("@article{a,") and refs.references[0].source == "bibtex"


def test_bibtex_problem_lines_without_a_path_and_authors_split_on_and():
    refs = parse_bibtex("@misc{k, title={A}}\n@misc{k, title={B}}\n"
                        "@misc{m, author={Ada  Lovelace and\n  Grace Hopper and  {}}}")
    assert refs.problems == ["bibtex: line 2: duplicate key 'k' (the first entry is kept)"]
    assert refs.path is None and refs.keys() == ["k", "m"] and refs.references[0].title == "A"
    assert refs.references[1].authors == ["Ada Lovelace", "Grace Hopper"]


# -- \bibitem lists ----------------------------------------------------------------------------------------------

TWO_BIBLIOGRAPHIES = r"""
\begin{thebibliography}{2}
\bibitem{a} A. One. Title one. 2001.
\bibitem[x]{b}
\end{thebibliography}
text between
\begin{thebibliography}{3}
\bibitem{c} C. Three.
\newblock Title three.
\newblock Venue {\em Three}, vol. 3.
\newblock 2003.
\bibitem{e}
\bibitem{d} Last, D. Unterminated entry. 2004.
"""


def test_latex_bibliographies_number_entries_across_blocks():
    refs = parse_latex_bibliography(TWO_BIBLIOGRAPHIES, path="p.bbl")
    assert refs.keys() == ["a", "c", "d"] and refs.format == "latex" and refs.path == "p.bbl"
    a, c, d = refs.references
    assert (a.title, a.authors, a.year, a.venue) == ("Title one", ["A. One"], 2001, "")
    # \newblock: authors, title, then everything else is the venue
    assert (c.title, c.authors, c.year, c.venue) == ("Title three", ["C. Three"], 2003, "Venue Three, vol. 3. 2003.")
    # a block left open runs to the end of the text
    assert (d.title, d.authors, d.year) == ("Unterminated entry", ["Last, D"], 2004)
    # entries are counted over both blocks, empty ones included: b is the 2nd entry, e the 4th
    assert refs.problems == ["p.bbl: \\bibitem 'b' (entry 2) is empty", "p.bbl: \\bibitem 'e' (entry 4) is empty"]
    assert parse_latex_bibliography(TWO_BIBLIOGRAPHIES).problems[0] == "latex: \\bibitem 'b' (entry 2) is empty"


# -- JATS ---------------------------------------------------------------------------------------------------------

JATS = """<article><front><article-meta><title-group><article-title>T</article-title></title-group></article-meta>
</front><body><p>x</p></body><back><ref-list>
<ref id="r1"><label>[7].</label><mixed-citation>Roe P. Printed as is. Book. 2001. doi:10.1000/Mixed. \
arXiv:2104.00004</mixed-citation></ref>
<ref id="r2"><element-citation><person-group><name><surname>Doe</surname><given-names>J</given-names></name>\
</person-group><chapter-title>Chapter two.</chapter-title><source>Big Book</source><year>1999</year>\
</element-citation></ref>
</ref-list></back></article>"""


def test_jats_keys_from_labels_or_numbers_and_ids_from_the_text():
    refs = parse_jats_references(JATS, path="a.xml")
    assert refs.keys() == ["7", "2"] and refs.problems == [] and refs.format == "jats"
    first, second = refs.references
    assert (first.doi, first.arxiv_id, first.source) == ("10.1000/mixed", "2104.00004", "jats")
    assert (second.title, second.authors, second.year) == ("Chapter two", ["Doe J"], 1999)
    assert second.raw == "Doe J. Chapter two. Big Book. 1999."
    empty = "<article><body><p>x</p></body></article>"
    assert parse_jats_references(empty).problems == ["jats: the article has no <ref-list> references"]
    assert parse_jats_references(empty, path="z.xml").problems == ["z.xml: the article has no <ref-list> references"]


# -- citation numbers -------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "highest"), [
    ("a [3] b [12]\n\n7. References\n[20] x", 12),  # a numbered bare heading
    ("a [3]\n## 7 Bibliography\n[9]\nmore [40]\nBibliography\n[50]", 40),  # the last heading counts
    ("x [2]\nReferences and notes\n[30]", 30),  # not a heading: the whole text is the body
    ("x [2]\n    References\n[30]", 30),  # four spaces: not a heading
    ("x [2]\n####### References\n[30]", 30),  # seven hashes: not a heading
    ("x [2]\n   ###### REFERENCES \t\n[30]", 2),
    ("x [1; 4 , 11]\nBIBLIOGRAPHY\n[30]", 11),
    ("[12345] and [2]", 2),  # five digits are no citation number
])
def test_highest_citation_number_around_the_reference_heading(text, highest):
    assert highest_citation_number(text) == highest


def test_reference_count_check_at_the_boundary():
    refs = ReferenceList([Reference(key=str(i)) for i in (1, 2)], [], "markdown", None)
    assert check_reference_count(refs, "cites [1] and [2]").problems == [] and refs.cited_up_to == 2
    assert refs.shortfall == 0
    check_reference_count(refs, "cites [3]")
    assert refs.problems == [("references: 2 references read but the text cites up to [3]: 1 missing (entries "
                             "merged or lost)")] and refs.shortfall == 1
    plain = ReferenceList([], [], "markdown", "p.md")
    assert check_reference_count(plain, "no numbers").cited_up_to is None and plain.problems == []


# -- read_references ---------------------------------------------------------------------------------------------

MD = "# S\n\n## References\n\n[1] A. Writer. Oracles in practice. Journal of Tests, 2001.\n"
BBL = "\\begin{thebibliography}{1}\n\\bibitem{w} A. Writer. Oracles in practice. 2001.\n\\end{thebibliography}\n"


@pytest.mark.parametrize(("name", "content", "fmt", "key"), [
    ("refs.BIB", "@misc{w, title={Oracles in practice}}", "bibtex", "w"),
    ("main.tex", BBL, "latex", "w"), ("main.bbl", BBL, "latex", "w"),
    ("s.md", MD, "markdown", "1"), ("s.markdown", MD, "markdown", "1"), ("s.txt", MD, "markdown", "1"),
])
def test_read_references_by_suffix(tmp_path, name, content, fmt, key):
    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    refs = read_references(path)
    assert (refs.format, refs.keys(), refs.path) == (fmt, [key], str(path))
    assert refs.references[0].title == "Oracles in practice"


def test_read_references_reads_undecodable_bytes_as_replacement_characters(tmp_path):
    path = tmp_path / "s.md"
    path.write_bytes(b"## References\n\n[1] A. Writer. Or\xe1cles in practice. 2001.\n")
    assert read_references(path).references[0].title == "Or\ufffdcles in practice"


TEI_ENTRY = ('<biblStruct xmlns="http://www.tei-c.org/ns/1.0" xml:id="b0"><analytic><title level="a">Graph networks'
             '</title></analytic></biblStruct>')


@pytest.mark.parametrize("xml", [
    (f"<?xml version='1.0'?>\n<!-- <article> -->\n<!DOCTYPE TEI>\n<teiCorpus xmlns='http://www.tei-c.org/ns/1.0'>"
    f"{TEI_ENTRY}</teiCorpus>"),
    f"<listBibl xmlns='http://www.tei-c.org/ns/1.0'>{TEI_ENTRY}</listBibl>",
    TEI_ENTRY,
    f"<tei:TEI xmlns:tei='http://www.tei-c.org/ns/1.0'>{TEI_ENTRY}</tei:TEI>",
])
def test_read_references_tei_roots(tmp_path, xml):
    path = tmp_path / "refs.xml"
    path.write_text(xml, encoding="utf-8")
    refs = read_references(path)
    assert (refs.format, refs.keys(), refs.references[0].title) == ("tei", ["b0"], "Graph networks")


def test_read_references_jats_by_root_and_unknown_roots_by_name(tmp_path):
    path = tmp_path / "article.tei"
    path.write_text("<?xml version='1.0'?>\n" + JATS, encoding="utf-8")
    assert read_references(path).keys() == ["7", "2"]
    blank = tmp_path / "blank.xml"
    blank.write_text("<?xml version='1.0'?><!-- nothing -->", encoding="utf-8")
    with pytest.raises(ValueError, match=r"blank\.xml: an XML file with root <\?> is not a reference format"):
        read_references(blank)


def test_pdf_without_a_reader_names_the_server_setting(tmp_path, monkeypatch):
    pdf = tmp_path / "s.PDF"
    pdf.write_bytes(b"%PDF-1.4")
    monkeypatch.setenv("GROBID_URL", "http://127.0.0.1:8070")
    with pytest.raises(ValueError, match=r"s\.PDF: reading references from a PDF needs a GROBID server; set "
                                         r"GROBID_URL \(e\.g\. http://localhost:8070; now http://127\.0\.0\.1:8070\)"):
        read_references(pdf)
    monkeypatch.setenv("GROBID_URL", "")
    with pytest.raises(ValueError, match=r"now unset\) and pass pdf_reader="):
        read_references(pdf)
    seen = []
    assert read_references(pdf, pdf_reader=lambda p: seen.append(p) or ReferenceList([], [], "tei", str(p))).path \
        == str(pdf) and seen == [pdf]
    with pytest.raises(ValueError, match=r"suffix '\.docx'; known: \['\.bbl', '\.bib', '\.markdown', '\.md', "
                                         r"'\.tei', '\.tex', '\.txt', '\.xml'\]"):
        read_references(tmp_path / "x.DOCX")


# -- what the first measurement left alive -----------------------------------------------------------------------

def test_cited_keys_across_lines_comments_and_a_second_end():
    tex = "\\cite{a,%\n b}\\citep{c,\n  d}\\end{document}\\cite{e}\\end{document}\\cite{f}"
    assert cited_keys(tex) == ["a", "b", "c", "d"]
    assert cited_keys(tex, include_comments=True) == ["a", "b", "c", "d", "e", "f"]


def test_bibtex_doi_and_arxiv_fields_the_text_search_cannot_read_alone():
    refs = parse_bibtex(
        # a SICI DOI (Wiley's older form) holds < and >, where a DOI found in running text stops
        "@article{sici, doi={10.1002/(SICI)1097-4571(199806)49:8<693::AID-ASI4>3.0.CO;2-O}}\n"
        # two DOIs in the field: the first is taken
        "@article{two, doi={10.1000/first, 10.1000/second}}\n"
        # eprint and arxiv fields with the class after the id
        "@misc{ep, eprint={arXiv:2101.00001 [cs.CL]}}\n"
        "@misc{ax, arxiv={arXiv:2102.00002 [cs.LG]}}\n")
    got = {r.key: (r.doi, r.arxiv_id, r.title, r.authors) for r in refs.references}
    assert got == {"sici": ("10.1002/(sici)1097-4571(199806)49:8<693::aid-asi4>3.0.co;2-o", None, "", []),
                   "two": ("10.1000/first", None, "", []), "ep": (None, "2101.00001", "", []),
                   "ax": (None, "2102.00002", "", [])}


def test_bibtex_problem_on_the_first_line():
    refs = parse_bibtex("@misc{a, title = {open\n@misc{b, title={B}}\n")
    assert refs.problems == ["bibtex: line 1: entry could not be parsed (ParsingFailedBlock)"]
    assert refs.keys() == ["b"]


def test_latex_bibliography_two_blocks_sources_comments_and_trailing_x():
    tex = (r"\begin{thebibliography}{3}" "\n"
           r"\bibitem{two} Ann Lee and Malcolm X. \newblock Notes on LaTeX." "\n"
           r"\bibitem{one} B. Two. Single block % a note" "\n"
           r"  title. 2002." "\n"
           r"\end{thebibliography}")
    refs = parse_latex_bibliography(tex)
    two, one = refs.references
    assert (two.authors, two.title, two.venue, two.raw, two.source) == (
        ["Ann Lee", "Malcolm X"], "Notes on LaTeX", "", "Ann Lee and Malcolm X. Notes on LaTeX.", "latex")
    assert (one.raw, one.source, one.title) == ("B. Two. Single block title. 2002.", "latex", "Single block title")


def test_jats_label_strip_title_end_path_and_error_source():
    xml = ("<article><back><ref-list><ref><label>Xu, 2019</label><mixed-citation><article-title>The rise of "
           "SpaceX.</article-title></mixed-citation></ref></ref-list></back></article>")
    refs = parse_jats_references(xml, path="x.xml")
    assert refs.keys() == ["Xu, 2019"] and refs.references[0].title == "The rise of SpaceX" and refs.path == "x.xml"
    with pytest.raises(ValueError, match=r"^<jats>: not well-formed XML"):
        parse_jats_references("<article><unclosed></article>")
    with pytest.raises(ValueError, match=r"^bad\.xml: not well-formed XML"):
        parse_jats_references("<article><unclosed></article>", path="bad.xml")


def test_read_references_xml_paths_and_the_full_refusal(tmp_path):
    jats = tmp_path / "article.xml"
    jats.write_text(JATS, encoding="utf-8")
    assert read_references(jats).path == str(jats)
    tei = tmp_path / "refs.tei"
    tei.write_text(TEI_ENTRY, encoding="utf-8")
    assert read_references(tei).path == str(tei)
    rss = tmp_path / "feed.xml"
    rss.write_text("<rss/>", encoding="utf-8")
    with pytest.raises(ValueError) as err:
        read_references(rss)
    assert str(err.value) == (f"{rss}: an XML file with root <rss> is not a reference format read here; known XML: "
                              "GROBID TEI (<TEI>) and JATS articles (<article>)")
    pdf = tmp_path / "s.pdf"
    pdf.write_bytes(b"%PDF-1.4")
    with pytest.raises(ValueError, match=r"and pass pdf_reader=surveyalign\.knowledge\.GrobidClient\(\)\.references$"):
        read_references(pdf)


@pytest.mark.parametrize("head", [
    "<?note see <article>?>",  # markup inside a processing instruction
    "<!--\n<article>\n-->",  # a comment over several lines
    '<!DOCTYPE TEI [<!ENTITY x "<article>">]>',  # markup in the DOCTYPE's internal subset
])
def test_xml_root_skips_markup_that_is_no_element(tmp_path, head):
    path = tmp_path / "refs.xml"
    path.write_text(f"<?xml version='1.0'?>{head}<listBibl xmlns='http://www.tei-c.org/ns/1.0'>{TEI_ENTRY}"
                    "</listBibl>", encoding="utf-8")
    assert read_references(path).keys() == ["b0"]


def test_xml_root_is_read_from_the_first_64_kb(tmp_path):
    path = tmp_path / "late.xml"
    path.write_bytes(b"<!--" + b"x" * (65535 - 7) + b"-->" + b"<TEI/>")  # '<' is byte 65,536, 'T' the next
    with pytest.raises(ValueError, match=r"root <\?> is not a reference format"):
        read_references(path)

"""surveyalign.documents.read_document: markdown, LaTeX projects and PDFs read into guarded markdown."""

from __future__ import annotations

import pytest
from survey_fixtures import (
    EXPECTED,
    write_latex_survey,
    write_markdown_survey,
    write_pdf_survey,
)

from surveyalign.documents import (
    find_documents,
    flatten_latex,
    read_document,
    read_documents,
)


def test_markdown_is_read_and_guarded(tmp_path):
    doc = read_document(write_markdown_survey(tmp_path))
    assert doc.format == "markdown"
    assert doc.title == EXPECTED["markdown"]["title"]  # title taken after the status line is removed
    assert "peer review: 2 approved" not in doc.text
    assert "Referee Report" not in doc.text and "asked for more references" not in doc.text
    assert (doc.leakage.status_lines, doc.leakage.record_sections) == (1, 1)
    assert "leakage guard removed 1 peer-review status line(s) and 1 review-record section(s)" in doc.warnings[0]
    assert doc.text.rstrip().endswith("[2] B. Author. Metamorphic testing revisited. Testing Letters, 2010.")
    assert doc.bibliography_format == "markdown" and doc.bibliography is None


def test_guard_can_be_turned_off(tmp_path):
    doc = read_document(write_markdown_survey(tmp_path), guard=False)
    assert "Open Peer Review" in doc.text and doc.leakage.status_lines == 0


def test_latex_project_inputs_macros_citations_bibliography(tmp_path):
    main = write_latex_survey(tmp_path)
    doc = read_document(main)
    text = doc.text
    assert doc.format == "latex" and doc.title == "A Tiny Survey of OracleNet"
    assert text.startswith("# A Tiny Survey of OracleNet\n\n## Abstract\n\nWe survey OracleNet for TestConf.")
    # \newcommand with 0, 2 and optional arguments, \def, all expanded
    assert "compare outputs and expectations" in text
    assert "<default|a> <b|c>" in text
    # \input without .tex, \include, numbered sections, starred section unnumbered, \ref resolved
    assert "## 1 Introduction" in text and "## 2 Related Work" in text and "### 2.1 Details" in text
    assert "## Outlook" in text and "see Section 2." in text
    assert "Math stays: $x^2 + y$." in text
    # citations numbered in order of first citation; bibliography of the cited entries only
    assert "Oracles [1, 2] compare" in text and "Earlier work [2, 3] built" in text
    assert doc.cited_keys == ["lovelace1843", "turing1950", "hopper1952"]
    refs = text.split("## References\n\n", 1)[1]
    assert refs.splitlines()[0] == "[1] Ada Lovelace. Notes on the Analytical Engine. Scientific Memoirs. 1953."
    assert ("[2] Alan Turing, Max Newman. Computing Machinery and Intelligence. Mind. 1950. "
            "doi: 10.1093/mind/lix.236.433") in refs
    assert "Never Cited Here" not in text
    # raw bibliography kept for knowledge augmentation (all entries, uncited too)
    assert doc.bibliography_format == "bibtex" and "@article{uncited2000" in doc.bibliography
    assert doc.bibliography_path == tmp_path / "refs.bib"
    assert [p.name for p in doc.files] == ["main.tex", "related.tex", "outlook.tex"]
    # the commented-out \input is not reported; the missing one is, with file and line
    assert len(doc.warnings) == 1
    # line 20 as the file has it (the comment-only line above it counts)
    assert doc.warnings[0].startswith("main.tex line 20: \\input{absent_file} not found")
    assert "commented_out" not in text


def test_latex_include_cycle_is_reported(tmp_path):
    (tmp_path / "main.tex").write_text("\\documentclass{article}\\begin{document}\\input{a}\\end{document}\n")
    (tmp_path / "a.tex").write_text("A text \\input{b}\n")
    (tmp_path / "b.tex").write_text("B text \\input{a}\n")
    flat = flatten_latex(tmp_path / "main.tex")
    assert flat.text.count("A text") == 1 and flat.text.count("B text") == 1
    assert flat.warnings == ["b.tex line 1: \\input{a} includes a.tex again (cycle); not spliced twice"]


def test_latex_thebibliography_numbers_in_bibitem_order(tmp_path):
    (tmp_path / "s.tex").write_text(r"""\documentclass{article}\begin{document}
\section{One} See \cite{second} and \cite{first}.
\begin{thebibliography}{9}
\bibitem{first} F. First. Paper one. 2001.
\bibitem{second} S. Second. Paper two. 2002.
\end{thebibliography}
\end{document}
""")
    doc = read_document(tmp_path / "s.tex")
    assert "See [2] and [1]." in doc.text
    assert "[1] F. First. Paper one. 2001." in doc.text and "[2] S. Second. Paper two. 2002." in doc.text
    assert doc.bibliography_format == "thebibliography"
    assert doc.bibliography.startswith("\\begin{thebibliography}")


def test_latex_missing_bib_and_non_main_file(tmp_path):
    (tmp_path / "m.tex").write_text("\\documentclass{article}\\begin{document}Hi \\cite{x}\\bibliography{nope}"
                                    "\\end{document}\n")
    doc = read_document(tmp_path / "m.tex")
    assert any("bibliography 'nope' not found" in w for w in doc.warnings)
    (tmp_path / "part.tex").write_text("\\section{Only a part}\n")
    with pytest.raises(ValueError, match=r"part\.tex: no \\begin\{document\}"):
        read_document(tmp_path / "part.tex")


def test_pdf_pypdf_headings_hyphenation_guard(tmp_path):
    doc = read_document(write_pdf_survey(tmp_path))
    assert doc.format == "pdf" and doc.extractor == "pypdf"
    assert doc.title == "A Survey of Flaky Tests"
    assert doc.text.startswith("# A Survey of Flaky Tests\n")
    assert doc.text.count("A Survey of Flaky Tests") == 1
    assert "\n## Abstract\n" in doc.text and "\n## 1 Introduction\n" in doc.text and "\n## 2 Causes\n" in doc.text
    assert "A flaky test is an example of non-determinism" in doc.text
    assert "\n## References\n" in doc.text and doc.bibliography_format == "markdown"
    assert "peer review" not in doc.text and doc.leakage.status_lines == 1


def test_pdf_errors_are_named(tmp_path):
    blank = write_pdf_survey(tmp_path, lines=[], name="blank.pdf")
    with pytest.raises(ValueError, match=r"blank\.pdf: no extractable text in 1 page"):
        read_document(blank)
    fake = tmp_path / "fake.pdf"
    fake.write_bytes(b"this is not a pdf")
    with pytest.raises(ValueError, match=r"fake\.pdf: not a readable PDF"):
        read_document(fake)
    with pytest.raises(ValueError, match="unknown PDF extractor 'ocr'"):
        read_document(blank, pdf_extractor="ocr")


def test_optional_extractor_missing_names_the_extra(tmp_path):
    pytest.importorskip("pypdf", reason="pypdf (a surveyalign dependency) is not installed: pip install -e .")
    try:
        import pymupdf4llm  # noqa: F401
        pytest.skip("pymupdf4llm is installed, so the message shown without it cannot be checked here")
    except ImportError:
        pass
    with pytest.raises(ImportError, match=r"surveyalign\[pdf-mupdf\]"):
        read_document(write_pdf_survey(tmp_path), pdf_extractor="pymupdf4llm")


def test_folder_of_documents(tmp_path):
    write_markdown_survey(tmp_path / "md")
    write_latex_survey(tmp_path / "tex")
    write_pdf_survey(tmp_path / "pdf")
    (tmp_path / "notes.docx").write_text("ignored")
    found = find_documents(tmp_path)
    assert [p.relative_to(tmp_path).as_posix() for p in found] == ["md/oracles.md", "pdf/flaky.pdf", "tex/main.tex"]
    docs = read_documents([tmp_path])
    assert [d.format for d in docs] == ["markdown", "pdf", "latex"]
    assert read_document(tmp_path / "tex").source == tmp_path / "tex" / "main.tex"  # a project folder
    with pytest.raises(ValueError, match="expected one survey in the folder, found 3"):
        read_document(tmp_path)
    with pytest.raises(ValueError, match="unsupported file type '.docx'"):
        read_document(tmp_path / "notes.docx")
    with pytest.raises(FileNotFoundError, match="does not exist"):
        read_document(tmp_path / "missing.md")


@pytest.mark.real
def test_real_pdf_and_latex(shared_real):
    pdf = read_document(shared_real / "surveys" / "alignment-of-llms.pdf")
    assert pdf.title == "Aligning Large Language Models with Human: A Survey"
    for heading in ("## 1 Introduction", "## 2 Alignment Data Collection", "### 3.1 Online Human Preference",
                    "## 6 Conclusion", "## References"):
        assert heading in pdf.text
    tex = read_document(shared_real / "latex-survey" / "survey.tex")
    assert tex.title.startswith("A Survey of Real-Time Strategy Game AI")
    assert len(tex.cited_keys) == 74  # \cite keys in the body; commented-out and after \end{document} excluded
    assert any("weber2011acs" in w for w in tex.warnings)  # cited, no entry: reported
    assert any("duplicate key 'Diard03'" in w for w in tex.warnings)
    assert tex.text.split("## References")[1].count("\n[") == 73 and "## 2 Real-Time Strategy Games" in tex.text

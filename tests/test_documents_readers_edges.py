"""Edges of ``read_document`` / ``read_documents`` / ``find_documents`` (issue 27): which files count as surveys,
the reference list each format gives, the JSON description, ligatures and titles, and how a batch reports files it
cannot read."""

from __future__ import annotations

from pathlib import Path

import pytest

from surveyalign.documents import (
    Document,
    find_documents,
    read_document,
    read_documents,
)

FIXTURES = Path(__file__).parent / "fixtures"
MD = "# A Survey\n\nBody text [1].\n\n## References\n\n[1] A. One. Title one. Venue, 2001.\n"
MAIN = "\\documentclass{article}\n\\title{Tex Survey}\n\\begin{document}\nHi \\cite{k}.\n"


def test_find_documents_skips_hidden_parts_non_main_tex_and_non_jats_xml(tmp_path):
    files = {
        "a.md": MD, "b.MARKDOWN": MD, "c.txt": MD, ".hidden.md": MD, ".git/x.md": MD, "sub/.cache/y.md": MD,
        "sub/main.tex": MAIN + "\\end{document}\n", "sub/part.tex": "\\section{Part}\n",
        "sub/commented.tex": "% \\documentclass{article}\n\\section{X}\n",
        "sub/late.tex": "text \\documentclass{article}\n",
        "j/article.xml": "<?xml version='1.0'?>\n<article\n>x</article>", "j/feed.xml": "<rss><articles/></rss>",
        "notes.docx": "x", "folder.md/inner.txt": MD,
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    found = [p.relative_to(tmp_path).as_posix() for p in find_documents(tmp_path)]
    assert found == ["a.md", "b.MARKDOWN", "c.txt", "folder.md/inner.txt", "j/article.xml", "sub/late.tex",
                     "sub/main.tex"]
    with pytest.raises(NotADirectoryError, match=r"a\.md is not a folder"):
        find_documents(tmp_path / "a.md")


def test_a_folder_must_hold_exactly_one_survey(tmp_path):
    with pytest.raises(ValueError, match=r"expected one survey in the folder, found 0 \(none\); pass a file"):
        read_document(tmp_path)
    for i in range(12):
        (tmp_path / f"s{i:02d}.md").write_text(MD, encoding="utf-8")
    listed = ", ".join(f"s{i:02d}.md" for i in range(10))
    with pytest.raises(ValueError, match=rf"found 12 \({listed}\); pass a file, or read them all with read_documents"):
        read_document(tmp_path)
    # the extractor is checked before anything is read
    with pytest.raises(ValueError, match=r"unknown PDF extractor 'ocr'; choose one of \['pypdf', 'pymupdf4llm', "
                                         r"'marker'\]"):
        read_document(tmp_path / "s00.md", pdf_extractor="ocr")


def test_unsupported_suffix_and_empty_markdown(tmp_path):
    odd = tmp_path / "s.rtf"
    odd.write_text("x", encoding="utf-8")
    with pytest.raises(ValueError, match=r"s\.rtf: unsupported file type '\.rtf'; expected one of \['\.markdown', "
                                         r"'\.md', '\.pdf', '\.tex', '\.txt', '\.xml'\]"):
        read_document(odd)
    blank = tmp_path / "blank.md"
    blank.write_text(" \n\t\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"blank\.md: the file is empty"):
        read_document(blank)


def test_markdown_document_fields_and_description(tmp_path):
    path = tmp_path / "S.MD"
    path.write_text("E\ufb03cient \ufb01ne-tuning\n\nNo heading here.\n", encoding="utf-8")
    doc = read_document(path)
    assert (doc.format, doc.title, doc.source, doc.files, doc.extractor) == ("markdown", "Efficient fine-tuning",
                                                                             path, [path], None)
    assert doc.text == "Efficient fine-tuning\n\nNo heading here.\n"
    assert (doc.bibliography, doc.bibliography_format, doc.bibliography_path, doc.warnings) == (None, None, None, [])
    assert doc.sections == []
    assert doc.references().problems == [f"{path}: no 'References' / 'Bibliography' heading found"]
    described = doc.to_dict()
    assert described == {
        "format": "markdown", "title": "Efficient fine-tuning", "source": str(path), "files": [str(path)],
        "bibliography_paths": [], "bibliography_format": None, "n_cited_keys": 0, "extractor": None, "chars": 40,
        "leakage": {"status_lines": 0, "record_sections": 0, "top_boxes": 0, "records": [], "running_headers": 0,
                    "status_marks": 0, "lines_removed": 0, "chars_removed": 0},
        "warnings": [], "hidden_text": {"n": 0, "counts": {}, "chars": {}, "items": []}}
    assert "text" not in described and doc.to_dict(with_text=True)["text"] == doc.text
    assert doc.to_dict(with_text=True)["bibliography"] is None


def test_markdown_references_and_the_guard(tmp_path):
    path = tmp_path / "s.md"
    path.write_text(MD + "\n## Open Peer Review\n\nReferee Report 1: fine.\n", encoding="utf-8")
    doc = read_document(path)
    assert doc.bibliography_format == "markdown" and doc.references().keys() == ["1"]
    assert doc.references().path == str(path) and "Referee Report" not in doc.text
    assert doc.warnings == [("leakage guard removed 0 peer-review status line(s) and 1 review-record section(s) "
                            f"({doc.leakage.chars_removed} chars)")] and doc.leakage.chars_removed > 0
    raw = read_document(path, guard=False)
    assert "Referee Report" in raw.text and raw.warnings == [] and raw.title == "A Survey"


def test_latex_reference_lists_by_bibliography_format(tmp_path):
    (tmp_path / "bib").mkdir()
    bib_main = tmp_path / "bib" / "main.tex"
    bib_main.write_text(MAIN + "\\bibliography{refs}\n\\end{document}\n", encoding="utf-8")
    (tmp_path / "bib" / "refs.bib").write_text("@article{k, title={Bib E\ufb03cient}, year={2001}}\n",
                                               encoding="utf-8")
    doc = read_document(bib_main)
    assert doc.bibliography_format == "bibtex" and doc.bibliography_path == tmp_path / "bib" / "refs.bib"
    refs = doc.references()
    assert (refs.format, refs.keys(), refs.path) == ("bibtex", ["k"], str(bib_main))
    assert "Bib Efficient" in doc.bibliography and doc.cited_keys == ["k"] and doc.title == "Tex Survey"
    (tmp_path / "item").mkdir()
    item_main = tmp_path / "item" / "main.tex"
    item_main.write_text(MAIN + "\\begin{thebibliography}{1}\n\\bibitem{k} A. One. Item title. 2001.\n"
                         "\\end{thebibliography}\n\\end{document}\n", encoding="utf-8")
    refs = read_document(item_main).references()
    assert (refs.format, refs.keys(), refs.references[0].title) == ("latex", ["k"], "Item title")
    (tmp_path / "none").mkdir()
    bare = tmp_path / "none" / "main.tex"
    bare.write_text(MAIN + "\\end{document}\n", encoding="utf-8")
    plain = read_document(bare)
    assert plain.bibliography is None and plain.bibliography_format is None
    assert plain.references().format == "markdown"


def test_jats_document_leaves_sub_articles_out_and_says_so(tmp_path):
    doc = read_document(FIXTURES / "jats" / "review_article.xml")
    assert doc.warnings == [("review_article.xml: 3 sub-article(s) (referee reports, responses, decision letters) "
                            "left out of the text")]
    assert doc.bibliography_format == "markdown" and doc.files == [FIXTURES / "jats" / "review_article.xml"]
    bad = tmp_path / "bad.xml"
    bad.write_text("<article><unclosed></article>", encoding="utf-8")
    with pytest.raises(ValueError, match=rf"^not a readable JATS article: {bad}: not well-formed XML"):
        read_document(bad)


def test_read_documents_collects_errors_and_keeps_reading(tmp_path):
    good = tmp_path / "good.md"
    good.write_text(MD, encoding="utf-8")
    empty = tmp_path / "empty.md"
    empty.write_text("\n", encoding="utf-8")
    bad = tmp_path / "bad.xml"
    bad.write_text("<article><unclosed></article>", encoding="utf-8")
    errors: list[str] = []
    docs = read_documents([empty, bad, good], errors=errors)
    assert [d.source for d in docs] == [good]
    assert errors[0] == f"{empty}: the file is empty"
    assert errors[1].startswith(f"not a readable JATS article: {bad}: not well-formed XML")  # names the file itself
    assert "\n" not in errors[1]
    with pytest.raises(ValueError, match="the file is empty"):
        read_documents([good, empty])
    with pytest.raises(FileNotFoundError, match="missing.md does not exist"):
        read_documents([tmp_path / "missing.md"], errors=[])
    (tmp_path / "void").mkdir()
    with pytest.raises(ValueError, match=r"void: no survey found \(looked for \.markdown, \.md, \.pdf, \.tex, \.txt, "
                                         r"\.xml; \.tex files count only with \\documentclass\)"):
        read_documents([tmp_path / "void"])


def test_document_defaults():
    doc = Document(text="# T\n\nx\n", format="markdown", title="T", source=Path("t.md"))
    assert (doc.bibliography_path, doc.cited_keys, doc.files, doc.warnings) == (None, [], [], [])
    assert [s.heading for s in doc.sections] == ["T"]


def test_format_sniffing_reads_a_fixed_head(tmp_path):
    # a JATS root counts in the first 4096 bytes; a \documentclass in the first 200,000 characters
    pad = "<!--" + "x" * (4096 - 9 - 7) + "-->"
    (tmp_path / "in.xml").write_text(pad + "<article>", encoding="utf-8")  # ends at byte 4096
    (tmp_path / "out.xml").write_text(pad + " <article>", encoding="utf-8")  # its '>' is byte 4097
    tex_pad = "%" * 199_985 + "\n"
    (tmp_path / "in.tex").write_text(tex_pad + "\\documentclass", encoding="utf-8")  # 200,000 characters
    (tmp_path / "out.tex").write_text(tex_pad + " \\documentclass", encoding="utf-8")
    assert len((tmp_path / "in.xml").read_bytes()) == 4096 and len((tmp_path / "in.tex").read_text()) == 200_000
    assert [p.name for p in find_documents(tmp_path)] == ["in.tex", "in.xml"]


# -- what the first measurement left alive -----------------------------------------------------------------------

def test_files_in_latin_1_are_read_with_replacement_characters(tmp_path):
    (tmp_path / "s.md").write_bytes(b"# M\xfcller survey\n\nText.\n")
    (tmp_path / "main.tex").write_bytes(b"% M\xfcller\n\\documentclass{article}\n\\begin{document}\nText.\n"
                                        b"\\end{document}\n")
    assert [p.name for p in find_documents(tmp_path)] == ["main.tex", "s.md"]
    assert read_document(tmp_path / "s.md").title == "M\ufffdller survey"


def test_pdf_documents_keep_their_files_and_page_warnings(tmp_path):
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("helvetica", size=11)
    pdf.cell(0, 8, "A Survey of Empty Pages", new_x="LMARGIN", new_y="NEXT")
    pdf.add_page()
    path = tmp_path / "two.pdf"
    pdf.output(str(path))
    doc = read_document(path)
    assert (doc.files, doc.source, doc.extractor) == ([path], path, "pypdf")
    assert doc.warnings == ["two.pdf: 1 of 2 page(s) have no extractable text: 2"]


def test_jats_without_sub_articles_and_its_source(tmp_path):
    path = tmp_path / "a.xml"
    path.write_text("<article><front><article-meta><title-group><article-title>Plain</article-title></title-group>"
                    "</article-meta></front><body><p>Text.</p></body></article>", encoding="utf-8")
    doc = read_document(path)
    assert (doc.title, doc.source, doc.warnings) == ("Plain", path, [])


def _two_inputs(root: Path) -> Path:
    (root / "a.tex").write_text("A text\n", encoding="utf-8")
    (root / "b.tex").write_text("B text\n", encoding="utf-8")
    main = root / "main.tex"
    main.write_text(MAIN + "\\input{a}\\input{b}\n\\end{document}\n", encoding="utf-8")
    return main


def test_limits_options_and_the_guard_reach_every_reader(tmp_path):
    from surveyalign.documents import DocumentLimits

    main = _two_inputs(tmp_path)
    limits = DocumentLimits(latex_max_files=1)
    for doc in (read_document(main, limits=limits), *read_documents([main], limits=limits),
                *read_documents([main], limits=limits, errors=[])):
        assert "A text" in doc.text and "B text" not in doc.text
    record = tmp_path / "r.md"
    record.write_text(MD + "\n## Open Peer Review\n\nReferee Report 1: fine.\n", encoding="utf-8")
    for doc in (*read_documents([record]), *read_documents([record], errors=[])):  # the guard is on by default
        assert "Referee Report" not in doc.text
    for doc in (*read_documents([record], guard=False), *read_documents([record], guard=False, errors=[])):
        assert "Referee Report" in doc.text
    errors: list[str] = []
    assert read_documents([record], pdf_extractor="ocr", errors=errors) == []
    # a message that does not name the file gets its path in front
    assert errors == [f"{record}: unknown PDF extractor 'ocr'; choose one of ['pypdf', 'pymupdf4llm', 'marker']"]
    with pytest.raises(ValueError, match="unknown PDF extractor 'ocr'"):
        read_documents([record], pdf_extractor="ocr")


def test_latex_descriptions_and_reference_paths(tmp_path):
    main = tmp_path / "main.tex"
    main.write_text(MAIN + "\\begin{thebibliography}{1}\n\\bibitem{k} A. One. Item title. 2001.\n"
                    "\\end{thebibliography}\n\\end{document}\n", encoding="utf-8")
    assert read_document(main).references().path == str(main)
    (tmp_path / "bib").mkdir()
    bib_main = tmp_path / "bib" / "main.tex"
    bib_main.write_text(MAIN + "\\bibliography{refs}\n\\end{document}\n", encoding="utf-8")
    (tmp_path / "bib" / "refs.bib").write_text("@misc{k, title={T}}\n", encoding="utf-8")
    described = read_document(bib_main).to_dict()
    assert (described["bibliography_paths"], described["files"], described["n_cited_keys"]) == (
        [str(tmp_path / "bib" / "refs.bib")], [str(bib_main.resolve())], 1)


def test_the_guard_takes_the_review_status_out_of_a_latex_title(tmp_path):
    main = tmp_path / "main.tex"
    main.write_text("\\documentclass{article}\n\\title{Survey of X [version 1; peer review: 2 approved]}\n"
                    "\\begin{document}\nText.\n\\end{document}\n", encoding="utf-8")
    doc = read_document(main)
    assert (doc.title, doc.text, doc.leakage.status_lines) == ("Survey of X", "# Survey of X\n\nText.\n", 1)
    assert read_document(main, guard=False).title == "Survey of X [version 1; peer review: 2 approved]"

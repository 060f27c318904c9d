"""Edges of the LaTeX-to-markdown conversion (issue 27): every macro definition form, citation commands and
``\\nocite``, section / figure / table / appendix numbers behind ``\\ref``, the environments kept and dropped,
several ``.bib`` files, the compiled ``.bbl`` fallback and the rendered reference lines."""

from __future__ import annotations

from pathlib import Path

import pytest

from surveyalign.documents.latex import latex_to_markdown

REPORT = r"""\documentclass{report}
\newcommand{\A}{alpha}
\renewcommand{\A}{beta}
\providecommand{\A}{gamma}
\providecommand{\B}{bee}
\newcommand{\C}[x]{bad}
\newcommand*{\D}[1]{<#1>}
\DeclareRobustCommand{\E}[2][dflt]{(#1,#2)}
\def\F{eff}
\def\G{a\}b}
\newcommand{\Loop}{\Loop x}
\title{The \A{} Title}
\begin{document}
\begin{abstract}Abs \B.\end{abstract}
\begin{IEEEkeywords}k1, k2\end{IEEEkeywords}
\begin{keywords}k3\end{keywords}
\chapter{One}\label{ch:one}
\section{Sec}\label{sec:a}
\subsection{Sub}
\subsubsection{SubSub}\label{ss}
\paragraph{Para} run in text \C \D{d} \E{e} \E[o]{e} \F \G \Loop.
\begin{figure}\caption[short]{A caption}\label{fig:x}\end{figure}
\begin{table*}\caption{T cap}\label{tab:y}\end{table*}
Refs \ref{ch:one} \autoref{sec:a} \cref{ss} \Cref{fig:x} \ref{tab:y} \ref{nope}.
\section*{Star}
\citet[p.~3]{k1} \Citep{k2,k1} \citenum{k3} \footcite{} \cite{ k4 }\nocite{k5}
\begin{comment}hidden comment\end{comment}
\begin{IEEEbiography}Bio text\end{IEEEbiography}
\appendix
\chapter{App}
\section{AppSec}\label{app:s}
See \ref{app:s}.
\nocite{*}
\bibliographystyle{plain}
\bibliography{refs,more.bib}
\end{document}
After the end
"""

REFS = """@article{k1, author={Ann Lee and Bob Ray}, title={Paper one}, journal={J1}, year={2001}, doi={10.1000/ONE}}
@misc{k2, title={Paper two}, eprint={2101.00002}}
@misc{k1, title={dup}}
"""
MORE = """@misc{k3, title={Paper three}, year={2003}, author={Cy Doe}}
@misc{k2, title={other two}}
@misc{unc, title={Uncited}}
@misc{k5, title={Not cited, listed}, year={2005}}
"""


def _project(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    return root / "main.tex"


def test_macros_numbers_citations_and_bibliography_of_a_report(tmp_path):
    main = _project(tmp_path, {"main.tex": REPORT, "refs.bib": REFS, "more.bib": MORE})
    out = latex_to_markdown(main)
    assert out.title == "The beta Title"  # \renewcommand wins; \providecommand does not override
    assert out.text == (
        "# The beta Title\n\n## Abstract\n\nAbs bee.\n\nKeywords: k1, k2\n\nKeywords: k3\n\n"
        # chapters exist: sections are numbered under them
        "## 1 One\n\n## 1.1 Sec\n\n### 1.1.1 Sub\n\n#### 1.1.1.1 SubSub\n\n"
        # a bad argument count reads as none; \newcommand*; \DeclareRobustCommand with its default; \def with an
        # escaped brace; a macro calling itself stops; a control word eats the space after it (as in TeX)
        "**Para**  run in text bad<d> (dflt,e) (o,e) effa}b" + "x" * 21 + ".\n\n"
        "Caption: A caption\n\nCaption: T cap\n\n"
        # a \label in a float is the float's number; an unknown label is ??
        "Refs 1 1.1 1.1.1.1 1 1 ??.\n\n## Star\n\n"
        "[1] [2, 1] [3]  [4]\n\n"
        # \appendix restarts the top counter as letters
        "## A App\n\n## A.1 AppSec\n\nSee A.1.\n\n"
        "## References\n\n[1] Ann Lee, Bob Ray. Paper one. J1. 2001. doi: 10.1000/one\n\n"
        "[2] Paper two. arXiv: 2101.00002\n\n[3] Cy Doe. Paper three. 2003.\n\n"
        "[5] Not cited, listed. 2005.\n\n[6] Uncited.\n")
    # \nocite{k5} lists k5 (number 5) without a mark in the text; \nocite{*} adds the rest after it
    assert out.cited_keys == ["k1", "k2", "k3", "k4", "k5", "unc"]
    assert out.bibliography_paths == [tmp_path / "refs.bib", tmp_path / "more.bib"]
    assert out.bibliography_format == "bibtex" and out.bibliography == REFS + "\n" + MORE
    assert out.warnings == ["refs.bib: line 3: duplicate key 'k1' (the first entry is kept)",
                            "main.tex: 1 cited key(s) have no bibliography entry: k4"]
    assert out.files == [main.resolve()]
    for gone in ("hidden comment", "Bio text", "After the end", "plain", "gamma", "other two"):
        assert gone not in out.text


def test_article_numbers_labels_outside_floats_and_the_bbl_fallback(tmp_path):
    main = _project(tmp_path, {
        "main.tex": ("\\documentclass{article}\n\\begin{document}\n\\title{Late~Title}\n"
                     "\\section{Intro}\\label{s:intro}\nText\\ with~tilde and\u00a0nbsp   \n"
                     "\\begin{figure}\\label{fig:before}\\caption{C}\\end{figure}\n\\label{after:fig}\n"
                     "\\subsection*{Unnumbered}\\section{Two}\\label{s:two}\n"
                     "\\ref{fig:before} \\ref{after:fig} \\ref{s:two} \\cite{z}\n"
                     "\\appendix\n\\section{Proofs}\n\\subsection{Lemma}\\label{lem}\n\\ref{lem}\n"
                     "\\bibliography{refs}\n"),
        "main.bbl": "\\begin{thebibliography}{1}\n\\bibitem{z} Z. Zed. Bbl title. 1999.\n\\end{thebibliography}\n",
    })
    out = latex_to_markdown(main)
    assert out.text == ("# Late Title\n\n## 1 Intro\n\nText with tilde and nbsp\n\nCaption: C\n\n"
                        "### Unnumbered\n\n## 2 Two\n\n1 1 2 [1]\n\n## A Proofs\n\n### A.1 Lemma\n\nA.1\n\n"
                        "## References\n\n[1] Z. Zed. Bbl title. 1999.\n")
    assert out.title == "Late Title"  # a \title after \begin{document}
    assert out.bibliography_format == "thebibliography" and out.bibliography_paths == [main.resolve().parent
                                                                                       / "main.bbl"]
    assert out.bibliography.startswith("\\begin{thebibliography}{1}\n\\bibitem{z}")
    assert out.warnings == [f"main.tex: bibliography 'refs' not found (looked for refs.bib in {tmp_path.resolve()})",
                            "main.tex: bibliography read from the compiled main.bbl"]


def test_bib_outside_the_project_and_many_missing_keys(tmp_path):
    (tmp_path / "outside.bib").write_text("@misc{o, title={Out}}\n", encoding="utf-8")
    keys = ",".join("abcdefghijkl")
    main = _project(tmp_path / "proj", {
        "main.tex": f"\\documentclass{{article}}\n\\begin{{document}}\n\\cite{{{keys}}}\\cite{{x}}\n"
                    "\\bibliography{refs.bib, ../outside}\n\\end{document}\n",
        "refs.bib": "@misc{x, title={Only x}}\n"})
    out = latex_to_markdown(main)
    root = (tmp_path / "proj").resolve()
    assert out.text == "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12][13]\n\n## References\n\n[13] Only x.\n"
    assert out.warnings == [(f"main.tex: bibliography '../outside' refused: resolves to {(tmp_path / 'outside').resolve()}"
                            f", outside the project folder {root}; not read"),
                            "main.tex: 12 cited key(s) have no bibliography entry: a, b, c, d, e, f, g, h, i, j ..."]
    assert out.bibliography == "@misc{x, title={Only x}}\n"


def test_a_bbl_is_not_read_when_a_bib_was(tmp_path):
    main = _project(tmp_path, {
        "main.tex": "\\documentclass{article}\n\\begin{document}\n\\cite{x}\n\\bibliography{refs}\n\\end{document}\n",
        "refs.bib": "@misc{x, title={From bib}}\n",
        "main.bbl": "\\begin{thebibliography}{1}\n\\bibitem{x} From bbl.\n\\end{thebibliography}\n"})
    out = latex_to_markdown(main)
    assert out.text == "[1]\n\n## References\n\n[1] From bib.\n" and out.warnings == []


def test_exactly_ten_missing_keys_have_no_ellipsis(tmp_path):
    keys = ",".join("abcdefghij")
    main = _project(tmp_path, {"main.tex": f"\\begin{{document}}\\cite{{{keys}}}\\bibliography{{r}}\\end{{document}}",
                               "r.bib": "@misc{z, title={Z}}\n"})
    assert latex_to_markdown(main).warnings == [
        "main.tex: 10 cited key(s) have no bibliography entry: a, b, c, d, e, f, g, h, i, j"]


def test_no_document_environment_and_no_end(tmp_path):
    part = _project(tmp_path, {"part.tex": "\\section{Only a part}\n"}).parent / "part.tex"
    with pytest.raises(ValueError, match=r"part\.tex: no \\begin\{document\}; pass the project's main \.tex file"):
        latex_to_markdown(part)
    main = _project(tmp_path, {"main.tex": "\\begin{document}\nNo end \\cite{q} here\n"})
    out = latex_to_markdown(main)
    assert out.text == "No end [1] here\n" and out.bibliography is None and out.bibliography_format is None
    assert out.cited_keys == ["q"] and out.title == ""


def test_a_heading_inside_a_macro_takes_no_number(tmp_path):
    # the numbers are counted on the source, where \mysec is no \section: the expanded heading gets none
    main = _project(tmp_path, {"main.tex": ("\\newcommand{\\mysec}{\\section{Inside}}\n\\begin{document}\n"
                                            "\\section{One}\n\\mysec\n\\end{document}\n")})
    assert latex_to_markdown(main).text == "## 1 One\n\n## Inside\n"


# -- what the first measurement left alive -----------------------------------------------------------------------

ODD = r"""\documentclass{article}
\def\broken{open
\newcommand\Xset{the set X}
\newcommand{\wrap}[1]{[#1]}
\newcommand{\both}{\wrap{in}}
\newcommand{\opt}[2][]{<#1|#2>}
\newcommand{\beq}{\begin{equation}}
\newcommand{\eeq}{\end{equation}}
\def\nest{a{b{c}}d}
\def\esc{x\}}
\title[Short]{Long \wrap{T}}
\begin{document}
\label{top}Top \ref{top}.
\Xset, \both, \opt{a}, \nest, \esc.
\beq x = 1 \eeq
Para one.

~~Para two with \parencite{p1} and \Textcite{p2}.
\begin{table}\end{table}\end{table}
\begin{figure}\label{f1}\end{figure}\begin{figure}\label{f2}\end{figure}\ref{f2}
\bibitem{} Empty.
\paragraph
\end{document}
"""


def test_definitions_that_open_environments_and_other_odd_sources(tmp_path):
    main = _project(tmp_path, {"main.tex": ODD})
    out = latex_to_markdown(main)
    # \beq opens an equation it does not close: the definitions after it and the \title are still read (a LaTeX
    # parser ran on to \end{equation} in the next definition and printed the preamble into the text)
    assert out.title == "Long [T]"  # the long title, with a macro taking an argument
    assert out.text == (
        "# Long [T]\n\n"
        # a \label before any section refers to nothing
        "Top .\n"
        # a name without braces (starting with X), a macro calling one with an argument, an empty optional default,
        # nested braces and an escaped brace in \def; the unbalanced \def is no macro, and the definitions after
        # it are still read
        "the set X, [in], <|a>, abcd, x}.\n\n"
        "\\begin{equation}\nx = 1 Para one.\n\n"
        # spaces at a paragraph start go; \parencite and \Textcite are citations
        "Para two with [1] and [2].\n\n"
        # a stray \end{table} is ignored; the second figure is figure 2
        "2\n\n"
        # a \bibitem with an empty key numbers nothing; a \paragraph without its argument is empty
        "Empty.\n\n****\n")
    assert out.cited_keys == ["p1", "p2"] and out.warnings == []


def test_chapters_with_a_short_title_number_their_sections(tmp_path):
    main = _project(tmp_path, {"main.tex": (
        "\\documentclass{book}\n\\begin{document}\n\\chapter[Short]{Long Chapter}\n\\section{S}\\label{s}\n"
        "\\begin{figure}\\caption{a}\\end{figure}\\begin{figure}\\caption{b}\\label{f2}\\end{figure}\n"
        "See \\ref{s} and \\ref{f2}.\n\\end{document}\n")})
    assert latex_to_markdown(main).text == ("## 1 Long Chapter\n\n## 1.1 S\n\nCaption: a\n\nCaption: b\n\n"
                                            "See 1.1 and 2.\n")


def test_bib_and_bbl_files_in_latin_1_are_read(tmp_path):
    main = _project(tmp_path / "bib", {"main.tex": ("\\begin{document}\\cite{m}\\bibliography{missing,../outside,refs}"
                                                    "\\end{document}")})
    (tmp_path / "bib" / "refs.bib").write_bytes(b"@misc{m, title={M\xfcller graphs}}\n")
    (tmp_path / "outside.bib").write_text("@misc{o, title={Out}}\n", encoding="utf-8")
    out = latex_to_markdown(main)
    # the names after one not found and after one refused are still read
    assert out.text == "[1]\n\n## References\n\n[1] M\ufffdller graphs.\n"
    assert [w.split(":")[1].strip() for w in out.warnings] == [("bibliography 'missing' not found (looked for missing.bib in "
                                                               f"{(tmp_path / 'bib').resolve()})"),
                                                               "bibliography '../outside' refused"]
    bbl = _project(tmp_path / "bbl", {"main.tex": "\\begin{document}\\cite{m}\\bibliography{none}\\end{document}"})
    (tmp_path / "bbl" / "main.bbl").write_bytes(b"\\begin{thebibliography}{1}\\bibitem{m} M\xfcller. T. 2001."
                                                b"\\end{thebibliography}")
    assert "[1] M\ufffdller. T. 2001." in latex_to_markdown(bbl).text


def test_a_bib_name_that_links_outside_falls_back_to_the_bib_file(tmp_path):
    (tmp_path / "outside").write_text("@misc{o, title={Out}}\n", encoding="utf-8")
    main = _project(tmp_path / "proj", {"main.tex": "\\begin{document}\\cite{k}\\bibliography{refs}\\end{document}",
                                        "refs.bib": "@misc{k, title={Inside}}\n"})
    (tmp_path / "proj" / "refs").symlink_to(tmp_path / "outside")
    out = latex_to_markdown(main)
    assert out.text == "[1]\n\n## References\n\n[1] Inside.\n" and out.warnings == []


def test_a_bbl_without_a_bibliography_command_is_not_read(tmp_path):
    main = _project(tmp_path, {"main.tex": "\\begin{document}Hi \\cite{m}.\\end{document}",
                               "main.bbl": "\\begin{thebibliography}{1}\\bibitem{m} M. T. 2001.\\end{thebibliography}"})
    out = latex_to_markdown(main)
    assert out.text == "Hi [1].\n" and out.bibliography is None and out.warnings == []


def test_limits_reach_the_include_splicer(tmp_path):
    from surveyalign.documents import DocumentLimits

    main = _project(tmp_path, {"main.tex": "\\begin{document}\\input{a}\\input{b}\\end{document}", "a.tex": "A text\n",
                               "b.tex": "B text\n"})
    out = latex_to_markdown(main, limits=DocumentLimits(latex_max_files=1))
    assert "A text" in out.text and "B text" not in out.text
    assert out.warnings[0].startswith("main.tex line 1: \\input{b}: include limit reached")


def test_document_bounds_are_the_first_begin_and_the_first_end(tmp_path):
    main = _project(tmp_path, {"main.tex": (
        "\\newcommand{\\stop}{\\end{document}}\n\\begin{document}\nBody \\verb|\\begin{document}| here.\n"
        "\\end{document}\nOld draft.\n\\end{document}\n")})
    text = latex_to_markdown(main).text
    assert text.startswith("Body") and "here." in text and "Old draft" not in text


def test_an_unclosed_environment_in_the_body_is_read_tolerantly(tmp_path):
    main = _project(tmp_path, {"main.tex": "\\begin{document}\n\\begin{itemize}\\item one\n\\end{document}"})
    assert "one" in latex_to_markdown(main).text


def test_a_cite_without_argument_cites_nothing(tmp_path):
    main = _project(tmp_path, {"main.tex": "\\begin{document}\nSee \\cite"})
    out = latex_to_markdown(main)
    assert out.text == "See\n" and out.cited_keys == []


def test_exactly_eleven_missing_keys_are_cut_to_ten(tmp_path):
    keys = ",".join("abcdefghijk")
    main = _project(tmp_path, {"main.tex": f"\\begin{{document}}\\cite{{{keys}}}\\bibliography{{r}}\\end{{document}}",
                               "r.bib": "@misc{z, title={Z}}\n"})
    assert latex_to_markdown(main).warnings == [
        "main.tex: 11 cited key(s) have no bibliography entry: a, b, c, d, e, f, g, h, i, j ..."]


def test_the_title_is_looked_for_in_the_first_2000_characters_of_the_body(tmp_path):
    pad = "x" * (2000 - len("\n") - len("\\title{AB"))
    main = _project(tmp_path, {"main.tex": f"\\begin{{document}}\n{pad}\\title{{ABC}}\n\\end{{document}}"})
    assert latex_to_markdown(main).title == "AB"  # cut after the 2000th character of the body


def test_a_macro_argument_without_braces_a_broken_title_and_a_file_left_open(tmp_path):
    main = _project(tmp_path, {"main.tex": ("\\newcommand{\\wrap}[1]{[#1]}\n\\newcommand{\\Xset}{the set X}\n"
                                            "\\title{Costs in $x}\n\\begin{document}\nA \\wrap\\Xset.\nHello world% note")})
    out = latex_to_markdown(main)
    # a one-token argument is the macro itself; a title with an unclosed $ is read tolerantly; a file without
    # \end{document} ends with its last character
    assert out.title == "Costs in $x"
    assert out.text == "# Costs in $x\n\nA [the set X].\nHello world\n"


def test_bbl_comments_join_lines_as_in_tex(tmp_path):
    main = _project(tmp_path, {"main.tex": "\\begin{document}See \\cite{m}.\\bibliography{none}\\end{document}",
                               "main.bbl": ("\\begin{thebibliography}{1}\n\\bibitem{m} M. Lee. Graphs %\n  in practice. "
                                            "2001.\n% a comment line\n\\end{thebibliography}\n")})
    out = latex_to_markdown(main)
    assert out.text == "See [1].\n\n## References\n\n[1] M. Lee. Graphs   in practice. 2001.\n"
    assert "comment" not in out.bibliography


def test_our_argument_shapes_win_over_pylatexenc_defaults(tmp_path):
    # pylatexenc knows \citeyear without natbib's star: read with its shape, '*' became the key and '{k}' text
    main = _project(tmp_path, {"main.tex": "\\begin{document}\nSee \\citeyear*{k}.\n\\end{document}\n"})
    out = latex_to_markdown(main)
    assert (out.text, out.cited_keys) == ("See [1].\n", ["k"])

"""Small made-up surveys in the three input formats (markdown, a LaTeX project, a PDF), written for the tests.

Each writer puts its files under the given folder and returns the path to pass to ``read_document``; the texts
are ours. ``EXPECTED`` holds what a correct reader must find in each.
"""

from __future__ import annotations

from pathlib import Path

MARKDOWN = """# Tiny Survey of Test Oracles [version 1; peer review: 2 approved]

## Abstract

We review how test oracles decide whether a program run passed.

## 1 Introduction

Oracles compare outputs with expectations [1]. Metamorphic relations help when no expectation exists [2].

## References

[1] A. Writer. Oracles in practice. Journal of Tests, 2001.

[2] B. Author. Metamorphic testing revisited. Testing Letters, 2010.

## Open Peer Review

Referee Report 1: the reviewer found the survey thin and asked for more references.
"""

MAIN_TEX = r"""\documentclass{article}
\usepackage{amsmath}
\newcommand{\method}{OracleNet}
\newcommand{\pair}[2]{#1 and #2}
\newcommand{\opt}[2][default]{<#1|#2>}
\def\venue{TestConf}
\title{A Tiny Survey of \method}
\author{Ada Writer}
\begin{document}
\maketitle
\begin{abstract}
We survey \method{} for \venue.
\end{abstract}
\section{Introduction}\label{sec:intro}
% \input{commented_out}
Oracles \cite{lovelace1843,turing1950} compare \pair{outputs}{expectations}; see Section~\ref{sec:related}.
Math stays: $x^2 + y$. \opt{a} \opt[b]{c}
\input{sections/related}
\include{sections/outlook}
\input{absent_file}
\bibliographystyle{plain}
\bibliography{refs}
\end{document}
"""

RELATED_TEX = r"""\section{Related Work}\label{sec:related}
Earlier work \cite{turing1950, hopper1952} built the first oracles.
\subsection{Details}
More text.
"""

OUTLOOK_TEX = r"""\section*{Outlook}
Nothing more to say.
"""

REFS_BIB = r"""@article{lovelace1843,
  author = {Ada Lovelace},
  title = {Notes on the {Analytical} Engine},
  journal = {Scientific Memoirs},
  year = {1953}
}
@inproceedings{turing1950,
  author = {Alan Turing and Max Newman},
  title = {Computing Machinery and Intelligence},
  booktitle = {Mind},
  year = {1950},
  doi = {10.1093/mind/LIX.236.433}
}
@article{hopper1952,
  author = {Grace Hopper},
  title = {The Education of a Computer},
  journal = {ACM Proceedings},
  year = {1952}
}
@article{uncited2000,
  author = {Nobody Cited},
  title = {Never Cited Here},
  journal = {Void},
  year = {2000}
}
"""

PDF_LINES = [
    "A Survey of Flaky Tests",
    "[version 2; peer review: 1 approved]",
    "Abstract",
    "Flaky tests pass and fail on the same code. We review their causes and cures.",
    "1 Introduction",
    "A flaky test is an exam-",
    "ple of non-determinism in a test suite [1].",
    "2 Causes",
    "Order dependence and timing are the main causes [2].",
    "References",
    "[1] C. Tester. Flaky tests in the wild. Software Journal, 2019.",
    "[2] D. Runner. Ordering matters. Testing Letters, 2021.",
]

EXPECTED = {
    "markdown": {"title": "Tiny Survey of Test Oracles", "snippet": "Metamorphic relations help"},
    "latex": {"title": "A Tiny Survey of OracleNet", "snippet": "OracleNet"},
    "pdf": {"title": "A Survey of Flaky Tests", "snippet": "example of non-determinism"},
}


def write_markdown_survey(folder: Path) -> Path:
    """Write the markdown survey (with an F1000-style status line and review record) and return its path."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "oracles.md"
    path.write_text(MARKDOWN, encoding="utf-8")
    return path


def write_latex_survey(folder: Path) -> Path:
    """Write a LaTeX project (main file, two included files, a .bib) and return the main file's path."""
    (folder / "sections").mkdir(parents=True, exist_ok=True)
    (folder / "main.tex").write_text(MAIN_TEX, encoding="utf-8")
    (folder / "sections" / "related.tex").write_text(RELATED_TEX, encoding="utf-8")
    (folder / "sections" / "outlook.tex").write_text(OUTLOOK_TEX, encoding="utf-8")
    (folder / "refs.bib").write_text(REFS_BIB, encoding="utf-8")
    return folder / "main.tex"


def write_pdf_survey(folder: Path, lines: list[str] | None = None, *, title: str = "A Survey of Flaky Tests",
                     name: str = "flaky.pdf") -> Path:
    """Write a one-page PDF (fpdf2) with ``lines`` (default :data:`PDF_LINES`), metadata title ``title``."""
    from fpdf import FPDF

    folder.mkdir(parents=True, exist_ok=True)
    pdf = FPDF()
    pdf.set_title(title)
    pdf.add_page()
    pdf.set_font("helvetica", size=11)
    for line in PDF_LINES if lines is None else lines:
        pdf.cell(0, 8, line, new_x="LMARGIN", new_y="NEXT")
    path = folder / name
    pdf.output(str(path))
    return path

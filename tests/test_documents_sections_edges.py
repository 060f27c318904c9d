"""Edges of the one heading splitter (issue 27): every LaTeX level, nested and unbalanced braces, fences that are
closed or not, offsets at the text's ends, and heading titles normalised for matching."""

from __future__ import annotations

import pytest

from surveyalign.documents import (
    Heading,
    Section,
    find_headings,
    normalise_heading,
    split_sections,
)


def test_every_latex_level_and_nested_braces():
    tex = "\\part{P}\n\\chapter{C}\n\\section*{S}\n\\subsubsection{Deep {x} y}\nz\n"
    assert find_headings(tex) == [Heading("P", 0, 0, 8), Heading("C", 1, 9, 20), Heading("S", 2, 21, 33),
                                  Heading("Deep {x} y", 4, 34, 60)]
    assert tex[34:60] == "\\subsubsection{Deep {x} y}"


def test_an_unbalanced_latex_heading_runs_to_the_end():
    tex = "\\section{Open {x}\nrest"
    assert find_headings(tex) == [Heading("Open {x}\nres", 2, 0, len(tex))]
    # braces opened and closed again inside the title, then the closing brace
    assert find_headings("\\section{a}}b") == [Heading("a", 2, 0, 11)]


def test_markdown_and_latex_headings_sorted_by_offset():
    text = "\\section{One}\n# Two\n\\subsection{Three}\n"
    assert [(h.title, h.level, h.start) for h in find_headings(text)] == [("One", 2, 0), ("Two", 1, 14),
                                                                          ("Three", 3, 20)]
    assert [h.title for h in find_headings(text, latex=False)] == ["Two"]


def test_fences_closed_and_not():
    assert find_headings("# H\n```\n# in\n```\n# After\n") == [Heading("H", 1, 0, 3), Heading("After", 1, 17, 24)]
    # a fence never closed hides nothing
    assert [h.title for h in find_headings("```\n# open fence\n# also")] == ["open fence", "also"]
    # a heading right after a closing fence (the fence ends where the heading begins) is kept
    assert [h.title for h in find_headings("```\nx\n```\n# kept\n")] == ["kept"]
    # seven hashes, no space, or a blank title are not headings; closing hashes and trailing spaces go
    assert find_headings("####### seven\n#nospace\n#   \n##  Title ##  \n") == [Heading("Title", 2, 28, 42)]


def test_split_sections_offsets_and_stripped_bodies():
    text = "intro\n# A\n  body  \n# B"
    assert split_sections(text) == [Section("A", 1, 6, 9, 19, "body"), Section("B", 1, 19, 22, 22, "")]
    assert split_sections("\\section{X} y", latex=False) == []
    assert split_sections("\\section{ X } y") == [Section("X", 2, 0, 13, 15, "y")]


@pytest.mark.parametrize(("title", "normal"), [
    ("2.1 \\textbf{Related Works}:", "related works"),
    ("**1 INTRODUCTION**", "introduction"),
    ("Section 3. Methods", "methods"),
    ("Chapter 2 Background", "background"),
    ("IV. Results", "results"),
    ("IV Results", "results"),
    ("iv. roman lower", "roman lower"),
    ("a. Appendix", "appendix"),
    ("`code_name` [x] (y) ~z~ {w}", "code name x y z w"),
    ("\\emph*{Future} Work!", "future work"),
    ("VI", "vi"),
    ("3.2.1. Deep -- Nets", "deep nets"),
])
def test_normalise_heading(title, normal):
    assert normalise_heading(title) == normal

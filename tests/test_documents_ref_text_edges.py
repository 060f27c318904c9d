"""Edges of the free-text reference reader (issue 27): quoted titles in every quote style, APA and ACM years, the
author-list layouts and where they stop, the arXiv id that is no year, the reference section's limits and the
numbering that splits it."""

from __future__ import annotations

import pytest

from surveyalign.documents import parse_markdown_references, parse_reference_text


@pytest.mark.parametrize(("text", "title", "authors", "year"), [
    # LaTeX quotes, curly quotes, and an opening quote whose closing quote was lost
    ("A. Author and B. Author, ``Quoted in latex,'' in Proc. X, 2019.", "Quoted in latex",
     ["A. Author", "B. Author"], 2019),
    ("A. Author, “Curly quoted title,” Journal, 2018.", "Curly quoted title", ["A. Author"], 2018),
    ('A. Author, "Lost closing quote. Journal, 2017.', "Lost closing quote", ["A. Author"], 2017),
    ('A. Author, "Lost closing quote to the end', "Lost closing quote to the end", ["A. Author"], None),
    # APA years with a letter, and a colon after the year
    ("Smith, J. (2015a). Title after apa. Venue.", "Title after apa", ["Smith, J"], 2015),
    ("Smith, J. (2015): Title after colon year. Venue.", "Title after colon year", ["Smith, J"], 2015),
    # Vancouver and Springer lists ending in et al.
    ("Lee A, Kim BC, et al. Vancouver et al title. J. 2019;1:2.", "Vancouver et al title", ["Lee A", "Kim BC"], 2019),
    ("Alberts B, Kirschner MW, et al.: Springer et al title. PNAS. 2014.", "Springer et al title",
     ["Alberts B", "Kirschner MW"], 2014),
    # "n.d." in place of the year
    ("Anon. n.d. Title no date. Venue.", "Title no date", ["Anon"], None),
    # labels: "1." and "[12]"
    ("1. Numbered dot entry. Venue 2001.", "Numbered dot entry", [], 2001),
    ("[12] Numbered bracket. Venue 2001.", "Numbered bracket", [], 2001),
    ("Müller, A., Schmidt, B. J. and Weber, C. Family initials title. 2020.", "Family initials title",
     ["Müller, A.", "Schmidt, B. J.", "Weber, C"], 2020),
    ("A. Vaswani, N. M. Shazeer and L. Kaiser. Initials first title. 2017.", "Initials first title",
     ["A. Vaswani", "N. M. Shazeer", "L. Kaiser"], 2017),
    # ACM year after a phrase that is no sentence
    ("BIG bench authors. 2023. Beyond the imitation game. TMLR.", "Beyond the imitation game", ["BIG bench authors"],
     2023),
    # ACM title with markup and a trailing comma left by a converter
    (r"Ann Lee and Bob Ray. 2020. \emph{Graph {N}etworks}~now ,. In KDD.", "Graph Networks now", ["Ann Lee",
                                                                                                  "Bob Ray"], 2020),
])
def test_reference_layouts_more(text, title, authors, year):
    ref = parse_reference_text(text, "k")
    assert (ref.title, ref.authors, ref.year) == (title, authors, year)


def test_an_arxiv_id_is_not_the_year():
    # two entries of a real survey's list (generative diffusion models, IEEE style): the arXiv ids 2011.13456 and
    # 2012.08125 were read as the years 2011 and 2012
    song = parse_reference_text('[11] Y. Song, J. Sohl- Dickstein, D. P. Kingma, A. Kumar, S. Ermon, and B. Poole, '
                                '"Score- based generative modeling through stochastic differential equations," '
                                'arXiv:2011.13456, 2020. (document), 2.1.3, 2.2.2', "11")
    assert (song.year, song.arxiv_id) == (2020, "2011.13456")
    assert song.title == "Score- based generative modeling through stochastic differential equations"
    gpt3 = parse_reference_text("T. Brown, B. Mann. Language models are few-shot learners. "
                                "https://arxiv.org/abs/2005.14165v4", "1")
    assert (gpt3.year, gpt3.arxiv_id, gpt3.title) == (None, "2005.14165", "Language models are few-shot learners")


def test_ids_and_raw_text():
    ref = parse_reference_text("[3]  Title only\n with doi 10.1000/ABC.def and arXiv: 1901.01234v2", "3",
                               source="latex")
    assert (ref.doi, ref.arxiv_id, ref.year, ref.source, ref.key) == ("10.1000/abc.def", "1901.01234", None,
                                                                      "latex", "3")
    assert ref.raw == "[3] Title only with doi 10.1000/ABC.def and arXiv: 1901.01234v2"
    assert parse_reference_text("x", "k").source == "markdown"


@pytest.mark.parametrize(("text", "title", "authors"), [
    # the title stops at the first sentence end, not at "vs." / "e.g." / "i.e." or after an initial
    ("Ann Lee and Bob Ray. Cats vs. dogs e.g. pets i.e. animals of J. Doe. Venue, 2001.",
     "Cats vs. dogs e.g. pets i.e. animals of J. Doe", ["Ann Lee", "Bob Ray"]),
    ("Ann Lee and Bob Ray. Is it? Venue, 2001.", "Is it?", ["Ann Lee", "Bob Ray"]),
    ("Ann Lee and Bob Ray. Wow! Venue, 2001.", "Wow!", ["Ann Lee", "Bob Ray"]),
    # separators: "; ", ", and ", " and "; a one-letter piece is dropped
    ("Ada Lovelace; Grace Hopper, and Alan Turing. Computing. Venue, 1950.", "Computing",
     ["Ada Lovelace", "Grace Hopper", "Alan Turing"]),
    # a first sentence of lower-case words is a title, not an author list
    ("Learning deep networks quickly. In Proc. X, 2001.", "Learning deep networks quickly", []),
    # a piece of more than six words is no name
    ("One two three four five six seven, Ann Lee. Title. 2001.", "One two three four five six seven, Ann Lee", []),
    # three of five pieces name-like (the 60 % rule, at its boundary)
    ("Ann Lee, Bob Ray, learning networks now, deep models here, x. Title. 2001.", "Title",
     ["Ann Lee", "Bob Ray", "learning networks now", "deep models here"]),
    # two of four: not names
    ("Ann Lee, Bob Ray, learning networks now, deep models here. Title. 2001.",
     "Ann Lee, Bob Ray, learning networks now, deep models here", []),
    # initials first: every author needs initials
    ("S. Kullback, T. Cover. Information theory. Wiley, 1991.", "Information theory", ["S. Kullback", "T. Cover"]),
    # one name: every word capitalised (particles allowed)
    ("Ludwig van Beethoven. Symphonies. Venue, 1824.", "Symphonies", ["Ludwig van Beethoven"]),
    ("Lee A. Specific graphs. Nature. 2019.", "Specific graphs", ["Lee A"]),
])
def test_author_lists_and_title_ends(text, title, authors):
    ref = parse_reference_text(text, "k")
    assert (ref.title, ref.authors) == (title, authors)


# -- the reference section -------------------------------------------------------------------------------------

ENTRY = "[1] A. One. Title one. Venue, 2001.\n"


@pytest.mark.parametrize(("markdown", "keys"), [
    (f"# S\n## References\n{ENTRY}## Appendix\n[2] B. Two. Title two. 2002.", ["1"]),  # an appendix ends the list
    (f"# S\n## References\n{ENTRY}## A Proofs\n[2] B. Two. Title two. 2002.", ["1"]),  # so does "A Proofs"
    (f"# S\n## References\n{ENTRY}## Acknowledgements\n[2] B. Two. Title two. 2002.", ["1", "2"]),
    (f"# S\n### 9. Bibliography\n{ENTRY}", ["1"]), (f"# S\n## Works Cited\n{ENTRY}", ["1"]),
    (f"## Literature cited  \n{ENTRY}", ["1"]),
    (f"## REFERENCES\n[9] early\n## References\n{ENTRY}", ["1"]),  # the last heading counts
])
def test_reference_section_headings_and_ends(markdown, keys):
    refs = parse_markdown_references(markdown)
    assert refs.keys() == keys and refs.problems == []


@pytest.mark.parametrize("markdown", ["    ## References\n" + ENTRY, "## References and notes\n" + ENTRY,
                                      "####### References\n" + ENTRY])
def test_no_reference_heading(markdown):
    refs = parse_markdown_references(markdown, path="s.md")
    assert refs.references == [] and refs.problems == ["s.md: no 'References' / 'Bibliography' heading found"]
    assert (refs.format, refs.path) == ("markdown", "s.md")


def test_numbering_is_followed_from_zero_or_one():
    refs = parse_markdown_references("## References\n[0] Zero. T zero. 2000. [1] One. T one. 2001. [3] in text "
                                     "[2] Two. T two. 2002.")
    assert refs.keys() == ["0", "1", "2"] and refs.references[1].raw == "One. T one. 2001. [3] in text"
    # a list that starts at 2 is no numbered list: read as author-year paragraphs
    refs = parse_markdown_references("## References\n[2] B. Two. T two.\n\n[3] C. Three. T three.\n")
    assert refs.keys() == ["ref-1", "ref-2"]


def test_numbered_lines_and_empty_entries():
    refs = parse_markdown_references("## References\n1. A. One. T one. 2001.\n2.   \n 3. C. Three. T three. 2003.\n"
                                     "5. E. Five. T five. 2005.\n", path="x.md")
    assert refs.keys() == ["1", "3"] and refs.problems == ["x.md: reference [2] is empty"]
    assert refs.references[1].raw == "C. Three. T three. 2003. 5. E. Five. T five. 2005."
    assert parse_markdown_references("## References\n[1]\n[2] B. Two. T two. 2002.").problems == [
        "markdown: reference [1] is empty"]


def test_author_year_lists_split_before_each_entry():
    refs = parse_markdown_references("## References\nAnn Lee. 2020. T one. Venue one. Bob Ray and Cy Doe. 2021. "
                                     "T two. In Proc. KDD (2021). Dan Ek. 2019b. T three.")
    assert [r.raw for r in refs.references] == ["Ann Lee. 2020. T one. Venue one.",
                                                "Bob Ray and Cy Doe. 2021. T two. In Proc. KDD (2021).",
                                                "Dan Ek. 2019b. T three."]
    assert refs.keys() == ["ref-1", "ref-2", "ref-3"] and [r.year for r in refs.references] == [2020, 2021, 2019]
    # without ". YEAR. " the paragraphs are the entries
    refs = parse_markdown_references("## References\nPara one, no year.\n\nPara two.\n  \n")
    assert [r.raw for r in refs.references] == ["Para one, no year.", "Para two."]


# -- what the first measurement left alive -----------------------------------------------------------------------

@pytest.mark.parametrize(("text", "title", "authors"), [
    # a lead with a sentence end is no author list for an ACM year
    ("Attention mechanisms in practice. Technical report. 2020. Internal.", "Attention mechanisms in practice", []),
    ("Ann Leeds. Graph Networks. 2019. Springer.", "Graph Networks", ["Ann Leeds"]),
    # "et al." is dropped before the names are judged
    ("Lee A et al. Title here. Nature. 2019.", "Title here", ["Lee A"]),
    ("Ann Lee, deep survey et al. Title. 2001.", "Ann Lee, deep survey et al", []),
    ("Xu Li. Graph title. Venue, 2001.", "Graph title", ["Xu Li"]),
    # a name has at most six words: a Title-Case title of seven is no author list
    ("Deep Graph Networks For Large Scale Learning. In Proc. X, 2001.",
     "Deep Graph Networks For Large Scale Learning", []),
    ("Maria Ana de la Cruz Lopez. Title here. Venue, 2001.", "Title here", ["Maria Ana de la Cruz Lopez"]),
    # particles count as capitals
    ("Ann Lee and van der Berg. Title here. Venue, 2001.", "Title here", ["Ann Lee", "van der Berg"]),
    # half the words capitalised (2 of 4), one of three, or two title words: no name
    ("Ann Lee, Graphs in the Wild. Venue, 2001.", "Ann Lee, Graphs in the Wild", []),
    ("Ann Lee, Graph neural nets. Venue, 2001.", "Ann Lee, Graph neural nets", []),
    ("Ann Lee, the models. Venue, 2001.", "Ann Lee, the models", []),
    # two lower-case words without a title word pass as a name
    ("Ann Lee and yelong shen. Title here. Venue, 2001.", "Title here", ["Ann Lee", "yelong shen"]),
    # a word without letters ("(ed.)") does not stop a name
    ("Ann Lee (ed.). Title here. Venue, 2001.", "Title here", ["Ann Lee (ed.)"]),
    # a two-letter name is kept
    ("Ann Lee, Yu, and Bob Ray. Title here. Venue, 2001.", "Title here", ["Ann Lee", "Yu", "Bob Ray"]),
    # a title at the very end loses its period only; names and titles ending in X keep it
    ("Ann Lee. 2020. The rise of SpaceX.", "The rise of SpaceX", ["Ann Lee"]),
    ("Ann Lee and Malcolm X. 2020. Title. Venue.", "Title", ["Ann Lee", "Malcolm X"]),
    ('A. Author, "The rise of SpaceX," Journal, 2020.', "The rise of SpaceX", ["A. Author"]),
    # the authors end right before the "(" of an APA year, also without a space
    ("Lee J(2015). Title here. Venue.", "Title here", ["Lee J"]),
])
def test_name_rules_at_their_edges(text, title, authors):
    ref = parse_reference_text(text, "k")
    assert (ref.title, ref.authors) == (title, authors)


def test_markdown_entries_are_markdown_and_years_after_line_breaks_split_entries():
    numbered = parse_markdown_references("## References\n[1] A. One. T one. 2001.\n")
    assert numbered.references[0].source == "markdown"
    refs = parse_markdown_references("## References\nAnn Lee.\n  2020. Title one. Venue.\nBob Ray.\n  2021. Title two. "
                                     "Venue.")
    assert [(r.raw, r.source, r.year) for r in refs.references] == [
        ("Ann Lee. 2020. Title one. Venue.", "markdown", 2020), ("Bob Ray. 2021. Title two. Venue.", "markdown", 2021)]


@pytest.mark.parametrize(("text", "title", "authors", "year"), [
    # the year opens the entry (the authors lost, or "———" styles after a converter): no authors
    ("2020a. Graph Networks. Venue.", "Graph Networks", [], 2020),
    ("(2015). Title apa first. Venue.", "Title apa first", [], 2015),
    # a one-letter author (an organisation) still dates the entry; one-letter names are dropped from the list
    ("X. 2023. Grok-1 model card. Online.", "Grok-1 model card", [], 2023),
    ("X(2015). Model card. Online.", "Model card", [], 2015),  # glued to an APA year
])
def test_entries_that_open_with_their_year_or_a_one_letter_name(text, title, authors, year):
    ref = parse_reference_text(text, "k")
    assert (ref.title, ref.authors, ref.year) == (title, authors, year)


def test_a_comma_before_an_acm_year_does_not_stop_the_names():
    assert parse_reference_text("Ann Lee. Bob Ray, 2020. Title here. Venue.", "k").title == "Title here"

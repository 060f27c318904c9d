"""surveyalign.documents: the one heading splitter, the one token fitter, one Document for every format."""

from __future__ import annotations

from pathlib import Path

import pytest

from surveyalign.documents import (
    Document,
    Paper,
    find_headings,
    fit_texts,
    read_document,
    split_sections,
)

FIXTURES = Path(__file__).parent / "fixtures"


class WordTokenizer:
    """One token per whitespace-separated word, with character offsets (a fast tokenizer's interface)."""

    def __call__(self, text, add_special_tokens=False, return_offsets_mapping=False):
        spans, pos = [], 0
        for word in text.split():
            start = text.index(word, pos)
            spans.append((start, start + len(word)))
            pos = start + len(word)
        out = {"input_ids": list(range(len(spans)))}
        if return_offsets_mapping:
            out["offset_mapping"] = spans
        return out


def _count(texts):
    """A prompt of 10 tokens around the texts."""
    return 10 + sum(len(t.split()) for t in texts)


# ---------------------------------------------------------------- the one heading splitter

MD = ("Preamble line\n# Title\n\nabc\n## 1 Background ##\nbody one\n```\n# not a heading\n```\n"
      "### Deep\nx\n")


def test_markdown_headings_levels_offsets_and_fences():
    heads = find_headings(MD)
    assert [(h.title, h.level) for h in heads] == [("Title", 1), ("1 Background", 2), ("Deep", 3)]
    assert [h.start for h in heads] == [MD.index("# Title"), MD.index("## 1"), MD.index("### Deep")]
    assert MD[heads[1].start:heads[1].body_start] == "## 1 Background ##"
    sections = split_sections(MD)
    assert [(s.heading, s.text) for s in sections] == [
        ("Title", "abc"), ("1 Background", "body one\n```\n# not a heading\n```"), ("Deep", "x")]
    assert [(s.start, s.end) for s in sections] == [(14, 27), (27, 79), (79, 90)] and len(MD) == 90
    assert split_sections("no heading at all\n") == []


def test_latex_headings_and_the_latex_switch():
    tex = "\\section{Intro}\nhello\n\\subsection*[short]{Deep {\\em dive}}\nmore\n"
    assert [(h.title, h.level) for h in find_headings(tex)] == [("Intro", 2), ("Deep {\\em dive}", 3)]
    assert [(s.heading, s.text) for s in split_sections(tex)] == [("Intro", "hello"), ("Deep {\\em dive}", "more")]
    assert find_headings(tex, latex=False) == []


def test_document_sections_point_into_its_text(tmp_path):
    path = tmp_path / "survey.md"
    path.write_text("# A survey\n\n## Abstract\nWe review.\n\n## References\n[1] A. Author. A title. 2020.\n")
    doc = read_document(path)
    assert [(s.heading, s.level, s.text) for s in doc.sections] == [
        ("A survey", 1, ""), ("Abstract", 2, "We review."), ("References", 2, "[1] A. Author. A title. 2020.")]
    assert all(doc.text[s.start:s.body_start].lstrip("#").strip() == s.heading for s in doc.sections)
    refs = doc.references()
    assert refs.keys() == ["1"] and refs.references[0].year == 2020


def test_jats_is_read_into_the_same_document_type():
    doc = read_document(FIXTURES / "jats" / "review_article.xml")
    assert isinstance(doc, Document) and doc.format == "jats"
    assert doc.title == "Soil carbon under cover crops: a review"
    assert [s.heading for s in doc.sections] == ["Soil carbon under cover crops: a review", "Abstract",
                                                 "1 Introduction", "1.1 Scope", "Results", "Acknowledgements",
                                                 "References"]
    assert doc.warnings == [("review_article.xml: 3 sub-article(s) (referee reports, responses, decision letters) "
                            "left out of the text")]
    assert len(doc.references()) == 2 and doc.bibliography_format == "markdown"


def test_one_paper_type():
    from surveyalign import autoraters, knowledge, prism

    assert not any(hasattr(pkg, "Paper") for pkg in (autoraters, knowledge, prism))
    assert Paper("P1", "A title", 2020).first_author_surname is None


# ---------------------------------------------------------------- the one token fitter


def test_fit_texts_cuts_the_longer_text_first():
    tok = WordTokenizer()
    fit = fit_texts(["a b c d e f g h", "x y"], _count, tok, 16)
    assert fit.texts == ("a b c d ", "x y") and fit.total == 16 and fit.cut_tokens == (4, 0)
    assert fit.reason is None


def test_fit_texts_water_fills_two_long_texts():
    fit = fit_texts(["a b c d e f", "p q r s t u v w"], _count, WordTokenizer(), 18)
    assert fit.texts == ("a b c d ", "p q r s ") and fit.cut_tokens == (2, 4) and fit.total == 18


def test_fit_texts_untouched_empty_and_refused():
    tok = WordTokenizer()
    assert fit_texts(["a b", "c"], _count, tok, None).texts == ("a b", "c")
    assert fit_texts(["a b", "c"], _count, tok, 13).cut_tokens == (0, 0)
    emptied = fit_texts(["a b", "c"], _count, tok, 10)
    assert emptied.texts == ("", "") and emptied.total == 10 and emptied.cut_tokens == (2, 1)
    refused = fit_texts(["a b", "c"], _count, tok, 9)
    assert refused.texts is None and refused.reason == "10 tokens without any text, 9 allowed"


def test_fit_survey_text_is_the_fitter_with_one_text():
    from surveyalign.prompts import fit_survey_text

    tok = WordTokenizer()
    text = "one two three four five six"
    assert fit_survey_text(text, lambda t: 10 + len(t.split()), 13, tok) == ("one two three ", 13, 3)
    with pytest.raises(ValueError, match="needs 10 tokens without any survey text"):
        fit_survey_text(text, lambda t: 10 + len(t.split()), 9, tok)

"""Edges of the read blocks' texts and summary (surveyalign/documents/reading.py): blocks that sent nothing or
an empty survey, partial token counts, and every part of the one-line texts (issue 27)."""

from __future__ import annotations

from surveyalign.documents.reading import (
    reading_summary_text,
    reading_text,
    summarize_reading,
)


def _block(read, total, *, tokens=None, cut=False, counted="characters"):
    block = {"chars_read": read, "chars_total": total, "tokens_read": None, "tokens_total": None, "cut": cut,
             "cut_at_char": read if cut else None, "counted": counted}
    if tokens is not None:
        block.update(tokens_read=tokens[0], tokens_total=tokens[1], counted="tokens")
    return block


def test_reading_text_of_blocks_that_sent_nothing():
    assert reading_text(None) == reading_text({}) == "nothing sent"
    assert reading_text({"chars_read": None, "chars_total": 500, "cut": False}) == "nothing sent"


def test_reading_text_parts():
    assert reading_text(_block(0, 5)) == "0 of 5 characters (whole)"
    assert reading_text(_block(84156, 84156, tokens=(20311, 20311))) == \
        "84,156 of 84,156 characters (20,311 of 20,311 tokens) (whole)"
    # tokens are shown only with a token total
    assert reading_text({**_block(1200, 3400, cut=True), "tokens_read": 300}) == \
        "1,200 of 3,400 characters; cut at character 1,200, the rest not read"
    assert reading_text(_block(7, 7, counted="none")) == \
        "7 of 7 characters (whole); length not checked (no tokenizer and no known context)"


def test_summary_of_sent_units_only():
    blocks = [_block(100, 400, tokens=(30, 120), cut=True), None, {}, {"chars_read": None},
              _block(300, 400, tokens=(90, 120), cut=True), _block(0, 0, tokens=(0, 0))]
    # fractions over the sent units with a non-empty survey: 0.25 and 0.75 -> median 0.5; the empty survey counts
    # in the sums but has no fraction
    assert summarize_reading(iter(blocks)) == {
        "n_units": 6, "n_sent": 3, "n_cut": 2, "n_unchecked": 0, "median_fraction_read": 0.5,
        "min_fraction_read": 0.25, "chars_read": 400, "chars_total": 800, "tokens_read": 120, "tokens_total": 240}


def test_summary_without_tokens_or_totals():
    blocks = [_block(50, 100, tokens=(5, 10)), {"chars_read": 20, "counted": "none"},
              _block(10, 40, counted="none")]
    s = summarize_reading(blocks)
    # one sent unit counted no tokens: no token sums; a block without a total adds 0 characters and no fraction
    assert (s["tokens_read"], s["tokens_total"], s["chars_read"], s["chars_total"]) == (None, None, 80, 140)
    assert (s["n_unchecked"], s["median_fraction_read"], s["min_fraction_read"]) == (2, 0.375, 0.25)
    assert reading_summary_text(s) == "0/3 cut; whole surveys read; 2 unchecked"


def test_summary_of_nothing_sent():
    s = summarize_reading([None, {"chars_read": None}])
    assert s == {"n_units": 2, "n_sent": 0, "n_cut": 0, "n_unchecked": 0, "median_fraction_read": None,
                 "min_fraction_read": None, "chars_read": 0, "chars_total": 0, "tokens_read": None,
                 "tokens_total": None}
    assert reading_summary_text(s) == "nothing sent"
    assert summarize_reading([]) == {**s, "n_units": 0}


def test_summary_text():
    assert reading_summary_text({}) == "not recorded"
    summary = {"n_sent": 11, "n_cut": 3, "median_fraction_read": 0.42, "min_fraction_read": 0.1, "n_unchecked": 0}
    assert reading_summary_text(summary) == "3/11 cut; median 42% read (least 10%)"
    assert reading_summary_text({**summary, "n_unchecked": 1}) == "3/11 cut; median 42% read (least 10%); 1 unchecked"
    assert reading_summary_text({"n_sent": 4, "n_cut": 0, "median_fraction_read": 1.0, "min_fraction_read": 1.0}) \
        == "0/4 cut; whole surveys read"

"""Edges of the structural leakage guard (surveyalign/documents/leakage.py): what confirms each record, the
windows and boundaries of its searches, the top box's limits, and the guard's counts (issue 27)."""

from __future__ import annotations

import pytest

from surveyalign.documents import (
    LeakageEdit,
    strip_review_record,
    strip_running_headers,
)

HEADER = "F1000Research 2021, 10:412 Last updated: 14 SEP 2021"
BODY = "## Discussion\n\nCover crops add carbon to topsoil.\n"


# ---- what confirms an F1000Research back-matter record ------------------------------------------------------


def test_a_report_line_alone_is_not_a_record():
    # no "Open Peer Review" lead, no confirming line, no references heading before it: an ordinary text
    text = "# Notes\n\nReviewer Report 1\n\nThe reviewers were kind.\n"
    cleaned, edit = strip_review_record(text)
    assert cleaned == text and edit == LeakageEdit()


def test_an_open_peer_review_lead_alone_confirms_the_record():
    text = BODY + "\nOpen Peer Review\n\nReviewer Report 1\n\nThe review is fair.\n"
    cleaned, edit = strip_review_record(text)
    assert cleaned == BODY and edit.records == ["f1000"] and edit.record_sections == 1
    assert edit.lines_removed == 6  # lead, blank, report, blank, sentence, trailing ""


def test_a_confirming_line_alone_confirms_the_record_within_its_window():
    lead = BODY + "\nReviewer Report 1\n"
    # the confirming line is searched in the report line and the 119 lines after it
    inside = lead + "x\n" * 118 + "Reviewer Expertise: soils\n"
    cleaned, edit = strip_review_record(inside)
    assert cleaned == BODY and edit.records == ["f1000"] and edit.lines_removed == 121
    outside = lead + "x\n" * 119 + "Reviewer Expertise: soils\n"
    cleaned, edit = strip_review_record(outside)
    assert cleaned == outside and not edit.changed


@pytest.mark.parametrize("heading", ["## References", "**References**", "# 7. Bibliography"])
def test_a_report_after_the_last_references_heading_is_a_record(heading):
    text = BODY + f"\n{heading}\n\n1. Reed B. Hydrology. 2021.\n\nReviewer Report 1\n\nThe review is fair.\n"
    cleaned, edit = strip_review_record(text)
    assert edit.records == ["f1000"]
    assert cleaned == BODY + f"\n{heading}\n\n1. Reed B. Hydrology. 2021.\n"


@pytest.mark.parametrize("text", [
    # "References" as a plain line is not the references heading
    BODY + "\nReferences\n\n1. Reed B. 2021.\n\nReviewer Report 1\n\nThe review is fair.\n",
    # the report line stands before the (last) references heading
    BODY + "\nReviewer Report 1\n\nThe review is fair.\n\n## References\n\n1. Reed B. 2021.\n",
    BODY + "\n## References\n\nReviewer Report 1\n\nThe review is fair.\n\n## References\n\n1. Reed B. 2021.\n",
    # another heading before the report line is not a references heading
    "## Methods\n\nReviewer Report 1\n\nWe asked two reviewers.\n",
])
def test_a_report_not_after_the_references_is_no_record(text):
    cleaned, edit = strip_review_record(text)
    assert cleaned == text and edit.records == []


def test_the_record_start_walks_back_over_blanks_lead_lines_and_headers_but_not_text():
    text = (BODY + "\nOpen Peer Review\n\nVersion 1\n" + HEADER + "\n\nReviewer Report 1\n\nThe review is fair.\n"
            "Competing Interests: none.\n")
    cleaned, edit = strip_review_record(text)
    assert cleaned == BODY
    # the header above the report belongs to the record, not to the running headers of the article
    assert (edit.records, edit.running_headers, edit.lines_removed) == (["f1000"], 0, 10)


def test_a_header_right_above_the_report_joins_the_record():
    text = "Cover crops add carbon.\n" + HEADER + "\nReviewer Report 1\nThe review is fair.\nCompeting Interests: none.\n"
    cleaned, edit = strip_review_record(text)
    assert cleaned == "Cover crops add carbon.\n"
    assert (edit.records, edit.running_headers, edit.lines_removed) == (["f1000"], 0, 5)


def test_the_record_start_skips_forward_over_blank_lines_only():
    # the walk back stops at the text's first line, a lead line: the record is the whole text
    text = "Open Peer Review\nVersion 1\n\nReviewer Report 1\nThe review is fair.\nCompeting Interests: none."
    cleaned, edit = strip_review_record(text)
    assert (cleaned, edit.lines_removed, edit.records) == ("\n", 6, ["f1000"])
    # a blank first line is kept (then stripped with the other blank ends)
    text = "\n\nReviewer Report 1\nThe review is fair.\nCompeting Interests: none.\n"
    cleaned, edit = strip_review_record(text)
    assert (cleaned, edit.lines_removed) == ("\n", 4)


def test_the_status_line_alone_opens_a_record():
    text = BODY + "\nCurrent Peer Review Status: ✓ ✓\n\nThe reports follow.\n"
    cleaned, edit = strip_review_record(text)
    assert cleaned == BODY and edit.records == ["f1000"] and edit.status_marks == 0


# ---- OpenReview / MOPRD form records ------------------------------------------------------------------------


def test_a_form_record_needs_two_distinct_fields_after_its_start_line():
    body = "Roads are graphs.\n\n"
    # exactly two fields: a record
    text = body + "Paper Decision\nRating: 3\nConfidence: 4\n"
    cleaned, edit = strip_review_record(text)
    assert (cleaned, edit.records, edit.lines_removed) == ("Roads are graphs.\n", ["openreview"], 4)
    # one field, or the same field twice (in another case), or the start line's own "Decision:": no record
    for tail in ("Paper Decision\nRating: 3\n", "Paper Decision\nRating: 3\nRATING: 4\n",
                 "Decision:\nRating: 3\n", "Reviewer 1\nBasic reporting: fine\n"):
        cleaned, edit = strip_review_record(body + tail)
        assert cleaned == body + tail and edit.records == [], tail


def test_the_form_fields_are_searched_in_the_120_lines_after_the_start():
    body = "Roads are graphs.\n\n"
    inside = body + "Official Review\nRating: 3\n" + "x\n" * 118 + "Confidence: 4\n"  # at start + 120
    assert strip_review_record(inside)[1].records == ["openreview"]
    outside = body + "Official Review\nRating: 3\n" + "x\n" * 119 + "Confidence: 4\n"  # at start + 121
    assert strip_review_record(outside) == (outside, LeakageEdit())


def test_the_earliest_record_wins_whatever_its_kind():
    body = "Fungi tolerate drought.\n\n"
    openreview = "# Paper Decision\n\n**Decision:** Accept\n\n**Rating:** 8\n\n"
    moprd = "Peer Review History\n\nReviewer 1\n\n**Basic reporting**\n\nFine.\n\n**Experimental design**\n\nFine.\n"
    cleaned, edit = strip_review_record(body + openreview + moprd)
    assert cleaned == "Fungi tolerate drought.\n" and edit.records == ["openreview"]
    f1000 = "Open Peer Review\n\nReviewer Report 1\n\nFair.\n\n"
    cleaned, edit = strip_review_record(body + moprd + f1000)
    assert cleaned == "Fungi tolerate drought.\n" and edit.records == ["moprd"]


# ---- the F1000Research top box ------------------------------------------------------------------------------


def test_a_two_line_box_without_closing_sentence_ends_at_its_last_box_line():
    text = "# Title\nKeywords: soil\nOpen Peer Review\nReviewer Status: approved\n## Introduction\nText.\n"
    cleaned, edit = strip_review_record(text)
    assert cleaned == "# Title\nKeywords: soil\n## Introduction\nText.\n"
    assert (edit.top_boxes, edit.record_sections, edit.lines_removed) == (1, 1, 2)


def test_a_box_at_the_very_end_of_the_text():
    cleaned, edit = strip_review_record("# Title\n\nOpen Peer Review\nReviewer Status ✓ ✓")
    assert cleaned == "# Title\n" and edit.top_boxes == 1 and edit.lines_removed == 2


def test_the_closing_sentence_is_searched_from_the_box_start_only():
    # the closing sentence came out of the PDF above the box: the box is the run of box lines
    text = ("Any reports and responses or comments on the article can be found at the end of the article.\n\n"
            "Open Peer Review\nApproval Status ✓ ✓\nversion 1 ✓ ✓\n\n## Introduction\n")
    cleaned, edit = strip_review_record(text)
    assert cleaned == ("Any reports and responses or comments on the article can be found at the end of the "
                       "article.\n\n## Introduction\n")
    assert edit.top_boxes == 1 and edit.lines_removed == 3


def test_the_closing_sentence_is_searched_in_60_lines():
    def box(filler: int) -> str:
        return "# T\n\nOpen Peer Review\n" + "Reviewer Status ✓\n" * filler + \
            "Reports follow the article.\n\n## Introduction\n"

    # closing sentence at box start + 59: the whole box goes
    assert strip_review_record(box(58))[0] == "# T\n\n## Introduction\n"
    # at + 60: not found, so the box is the run of box-like lines (the sentence line is not one of them)
    cleaned, edit = strip_review_record(box(59))
    assert cleaned == "# T\n\nReports follow the article.\n\n## Introduction\n" and edit.top_boxes == 1


@pytest.mark.parametrize("text", [
    # an "Open peer review" section of a survey: its next line is text, no box line
    "# T\n\nOpen Peer Review\nJournals publish reviews.\n",
    # box-like lines without any box evidence (status, invited, report, marks, closing words)
    "# T\n\nOpen Peer Review\nVersion 1 of the protocol\n\nText.\n",
    # evidence on the line after the run does not count
    "# T\n\nOpen Peer Review\nVersion 1 of the protocol\nThe status of peer review is debated.\n",
    # nor on the line before the opener
    "# T\nA status report on journals.\nOpen Peer Review\nVersion 1 of the protocol\n\nText.\n",
    # a lone opener line carrying its own evidence is not a box either
    "# T\n\nApproval Status ✓ ✓\nJournals publish reviews.\n",
])
def test_lines_that_are_not_a_box_stay(text):
    cleaned, edit = strip_review_record(text)
    assert cleaned == text and edit == LeakageEdit()


def test_the_opener_line_beyond_its_words_is_box_evidence():
    text = "# T\n\nApproval Status ✓ ✓\nVersion 1 published 2021\n\nText.\n"
    cleaned, edit = strip_review_record(text)
    assert cleaned == "# T\n\nText.\n" and edit.top_boxes == 1


def test_an_evidence_phrase_wrapped_over_two_box_lines_counts():
    # the closing sentence ("... end of this article") is no evidence itself; the wrapped one before it is
    box = ("Open Peer Review\nAll reviews follow the\narticle in full.\n"
           "Any comments can be found at the end of this article.\n")
    cleaned, edit = strip_review_record("# T\n\n" + box + "\nText.\n")
    assert cleaned == "# T\n\nText.\n" and edit.top_boxes == 1
    unwrapped = box.replace("follow the\narticle", "come with the\narticle")
    assert strip_review_record("# T\n\n" + unwrapped + "\nText.\n")[1].top_boxes == 0


def test_headers_and_marks_inside_the_box_are_box_lines_not_counted_twice():
    text = ("# T\n\nOpen Peer Review\nPage 2 of 9\n✓ ✓\nAny reports can be found at the end of the article.\n"
            "\n## Introduction\n")
    cleaned, edit = strip_review_record(text)
    assert cleaned == "# T\n\n## Introduction\n"
    assert (edit.top_boxes, edit.running_headers, edit.status_marks, edit.lines_removed) == (1, 0, 0, 4)


# ---- headers, marks and the guard's counts ------------------------------------------------------------------


def test_status_mark_lines_in_the_body_are_removed_and_counted():
    text = "# T\n\nTable 1.\n✓ ✓\n? ✗\nText.\n"
    cleaned, edit = strip_review_record(text)
    assert cleaned == "# T\n\nTable 1.\nText.\n"
    assert (edit.status_marks, edit.lines_removed, edit.chars_removed, edit.changed) == (2, 2, 8, True)


def test_only_marks_removed_leaves_one_newline():
    cleaned, edit = strip_review_record("✓")
    assert (cleaned, edit.status_marks, edit.lines_removed, edit.chars_removed) == ("\n", 1, 1, 0)


@pytest.mark.parametrize("line", ["<span>Page 3 of 12</span>", "**Page 3 of 12**", "| Page 3 of 12 |",
                                  "_Under review as a conference paper at ICLR 2024_"])
def test_decorated_running_headers_are_headers(line):
    text = f"# T\n\nBefore.\n{line}\nAfter.\n"
    cleaned, edit = strip_review_record(text)
    assert cleaned == "# T\n\nBefore.\nAfter.\n" and edit.running_headers == 1
    assert strip_running_headers(text) == "# T\n\nBefore.\nAfter.\n"


def test_header_words_all_present_still_strip():
    text = "Our page was updated.\nPage 3 of 12\nA conference paper at the end."
    assert strip_running_headers(text) == "Our page was updated.\nA conference paper at the end."


def test_a_text_holding_every_marker_word_is_still_cleaned():
    text = ("# Review [version 1; peer review: 2 approved]\n\nA referee, an approval status, a decision, a "
            "rebuttal; last updated in a conference paper on page 2 of the [version table]: ✓ ✔ ✗ ✘ ×.\n")
    cleaned, edit = strip_review_record(text)
    assert cleaned.startswith("# Review\n\nA referee") and edit.status_lines == 1


@pytest.mark.parametrize(("first", "kept"), [("XML feeds carry the data.", "XML feeds carry the data.\n"),
                                             ("    indented = 1", "    indented = 1\n")])
def test_the_cleaned_text_keeps_its_first_characters(first, kept):
    cleaned, edit = strip_review_record(f"Page 1 of 9\n{first}\n")
    assert cleaned == kept and edit.running_headers == 1

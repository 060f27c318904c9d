"""Leakage guard: status lines and published review records are removed; verbatim gold snippets are counted."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from surveyalign.data import build_dataset
from surveyalign.documents import find_verbatim, strip_review_record, verbatim_hits

FIXTURES = Path(__file__).parent / "fixtures" / "data"

FIRST_PAGE_BOX = """# Soil Carbon Sequestration Practices: A Review [version 1; referees: 2 approved]

Open Peer Review

Reviewer Status: approved, approved

Invited Reviewers 1 2 version 1 published 10 May 2021 report report

## Introduction

Cover crops add carbon to topsoil.

## Conclusions

More long-term trials are needed.
"""


def test_strip_first_page_box_keeps_the_body():
    text, edit = strip_review_record(FIRST_PAGE_BOX)
    assert edit.status_lines == 1 and edit.record_sections == 1 and edit.changed
    assert text.startswith("# Soil Carbon Sequestration Practices: A Review\n\n## Introduction\n")
    assert "Invited Reviewers" not in text and "referees" not in text
    assert "Cover crops add carbon to topsoil." in text and "## Conclusions" in text
    assert edit.chars_removed == len(FIRST_PAGE_BOX) - len(text)


def test_strip_fixture_f1000_text_removes_reports_and_author_response():
    import json

    text = json.loads((FIXTURES / "per_dimension" / "articles" / "articles4test.json").read_text())["a1"]
    cleaned, edit = strip_review_record(text)
    assert (edit.status_lines, edit.record_sections) == (1, 1)
    assert cleaned.splitlines()[0] == "# Wetland Restoration Outcomes: A Systematic Review"
    for gone in ("Open Peer Review", "Reviewer Report", "not cited", "Author Response", "peer review:"):
        assert gone not in cleaned
    assert cleaned.endswith("2. Reed, B. Hydrology after restoration. 2021.\n")
    assert "10.12688/f1000research.99999.2" in cleaned  # the DOI stays: it is how the source is inferred


def test_strip_leaves_ordinary_texts_alone():
    text = "# A Review of Peer Review Practices\n\nWe study how reviewers work.\n\n## Reviewer fatigue\n\nIt grows.\n"
    cleaned, edit = strip_review_record(text)
    assert cleaned == text and not edit.changed and edit.chars_removed == 0


def test_verbatim_hits_exact():
    texts = ["alpha beta gamma delta epsilon zeta eta theta iota kappa",
             "The comparison table is a useful synthesis of the field.\nMore text here.",
             "prefix:The comparison table is a useful synthesis of the field."]
    snippets = [
        "The comparison table is a useful synthesis of the field.",  # long anchor, in texts 1 and 2
        "gamma delta epsilon zeta",  # 16-byte anchor after the first space ("delta epsilon ze")
        "Missing from every text, this sentence is.",
        "Too short.",  # under min_chars: not checked
        "epsilon-zeta-eta-theta-iota",  # no space: bytes.find fallback
        "kappa\x00The comparison",  # would only match across the separator between texts
        "Zeta eta theta iota kappa",  # case differs: not verbatim
    ]
    hits = verbatim_hits(snippets, texts)
    assert hits == [{1, 2}, {0}, set(), None, set(), set(), set()]
    assert find_verbatim(snippets, texts) == [1, 0, -1, None, -1, -1, -1]
    assert find_verbatim([], texts) == [] and find_verbatim(["some snippet longer than twenty"], []) == [-1]


def test_verbatim_hits_unicode_and_repeats():
    text = "Résumé: la revue “couvre” bien les méthodes récentes, même en 2024. " * 50
    snippet = "la revue “couvre” bien les méthodes récentes, même en 2024."
    assert verbatim_hits([snippet, snippet], [text, "autre"]) == [{0}, {0}]


def test_build_reports_guard_and_no_guard(tmp_path):
    on = build_dataset(FIXTURES / "per_dimension", tmp_path / "on").report["leakage_guard"]
    # two gold snippets (a1 review 1 criticalness, a1 review 2 comprehensiveness) are quoted in a1's referee reports
    assert on == {
        "enabled": True,
        "texts_cleaned": 1,
        "cleaned_ids": ["a1"],
        "status_lines_removed": 1,
        "record_sections_removed": 1,
        "top_boxes_removed": 0,
        "records_removed": {"f1000": 1, "openreview": 0, "moprd": 0},
        "running_headers_removed": 0,
        "status_marks_removed": 0,
        "chars_removed": on["chars_removed"],
        "matching": on["matching"],
        "near_verbatim_threshold": 90.0,
        "snippets_checked": 22,  # distinct rationales of the 19 kept units: a1 5, b2 4, c3 5, d4 2, e5 3, f6 3
        "snippets_too_short": 0,
        "snippets_verbatim_before_guard": 2,
        "snippets_verbatim_in_inputs": 0,
        "snippets_near_verbatim_before_guard": 2,
        "snippets_near_verbatim_in_inputs": 0,
        "units_with_verbatim_snippets": [],
        "units_with_near_verbatim_snippets": [],
    }
    assert on["chars_removed"] > 200
    off_result = build_dataset(FIXTURES / "per_dimension", tmp_path / "off", leakage_guard=False)
    off = off_result.report["leakage_guard"]
    assert off["enabled"] is False and off["texts_cleaned"] == 0
    assert off["snippets_verbatim_in_inputs"] == 2 and off["snippets_near_verbatim_in_inputs"] == 2
    assert off["units_with_verbatim_snippets"] == ["a1-r1::criticalness", "a1-r2::comprehensiveness"]
    assert off["units_with_near_verbatim_snippets"] == ["a1-r1::criticalness", "a1-r2::comprehensiveness"]
    card = (tmp_path / "off" / "README.md").read_text()
    assert "OFF (built with --no-leakage-guard)" in card and "leakage guard off" in card


def _jats_to_markdown(path: Path) -> tuple[str, list[str]]:
    """Minimal JATS -> markdown: title + status line, body sections, then the referee reports as an
    "Open Peer Review" section; returns (markdown, paragraphs of the referee reports)."""
    root = ET.parse(path).getroot()

    def text_of(el) -> str:
        return re.sub(r"\s+", " ", "".join(el.itertext())).strip()

    front = root.find("front/article-meta")
    title = text_of(front.find("title-group/article-title"))
    status = text_of(front.find("title-group/fn-group/fn/p"))
    lines = [f"# {title} {status}", ""]
    abstract = front.find("abstract")
    if abstract is not None:
        lines += ["## Abstract", "", text_of(abstract), ""]
    for sec in root.findall("body/sec"):
        heading = sec.find("title")
        lines += [f"## {text_of(heading) if heading is not None else 'Section'}", ""]
        lines += [text_of(p) + "\n" for p in sec.iter("p")]
    reports = [s for s in root.iter("sub-article") if s.get("article-type") == "ref-report"]
    report_paragraphs: list[str] = []
    lines += ["## Open Peer Review", ""]
    for n, rep in enumerate(reports, 1):
        lines += [f"### Referee Report {n}", ""]
        for p in rep.find("body").iter("p"):
            report_paragraphs.append(text_of(p))
            lines += [text_of(p), ""]
    return "\n".join(lines), report_paragraphs


@pytest.mark.real
def test_real_f1000_article_referee_reports_removed(shared_real):
    files = sorted((shared_real / "f1000").glob("*.xml"))
    if not files:
        pytest.skip("no real F1000Research article (../shared/real/f1000, kept for development beside the repository) is here")
    for path in files:
        markdown, reports = _jats_to_markdown(path)
        assert reports, f"{path.name}: no referee report found"
        sentences = [s for p in reports for s in re.split(r"(?<=[.?!])\s+", p) if len(s) >= 40]
        assert find_verbatim(sentences, [markdown]).count(0) == len(sentences)
        cleaned, edit = strip_review_record(markdown)
        assert edit.status_lines == 1 and edit.record_sections == 1
        assert "peer review:" not in cleaned and "Open Peer Review" not in cleaned
        assert all(h == -1 for h in find_verbatim(sentences, [cleaned]))
        assert len(cleaned) > 0.3 * len(markdown) - sum(len(p) for p in reports)  # the article body stays

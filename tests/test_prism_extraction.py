"""PRISM extraction pieces: the strict JSON reader (a table of real-looking and nasty answers), per-stage item
checks with recorded defaults, the selectable grounding rubric, readers' errors, the prior-only filter and MMR."""

from __future__ import annotations

import datetime as dt
import json

import pytest

from surveyalign.backends import Generation
from surveyalign.prism import (
    GROUNDING_RUBRICS,
    ExtractionLog,
    PriorPaper,
    Submission,
    build_messages,
    is_prior,
    mmr_select,
    parse_adus,
    parse_claims,
    parse_comments,
    parse_flaws,
    parse_groups,
    parse_json_object,
    parse_validation,
    parse_verdict,
    read_paper,
    read_reviews,
    stage_of,
)

OK = '{"units": []}'


@pytest.mark.parametrize(("answer", "value", "error", "notes"), [
    (OK, [], None, []),
    ('  {"units": [1]}\n', [1], None, []),
    ('```json\n{"units": []}\n```', [], None, []),
    ('<think>let me see {"units": 3}</think>\n{"units": []}', [], None, []),
    ('I thought about it.</think>{"units": []}', [], None, []),  # a lone closer: its opener was in the prompt
    ('<think>still thinking {"units": []}', None, "unclosed <think> block", []),
    # text around the object: read, and the note goes to the extraction log (never silently)
    ('Here you go: {"units": []}', [], None, ["extra text around the JSON object"]),
    ('{"units": []} Hope this helps!', [], None, ["extra text around the JSON object"]),
    ('{"units": [1], "units": []}', [], None, ["duplicate key(s): units"]),
    ('{"units": []}{"units": []}', None, "more than one JSON object", []),
    ('[{"units": []}]', None, "expected a JSON object, got list", []),
    ('{"unit": []}', None, "no key 'units'", []),
    ('{"units": [}', None, "invalid JSON", []),
    ("", None, "empty answer", []),
    (None, None, "empty answer", []),
])
def test_parse_json_object_table(answer, value, error, notes):
    got = parse_json_object(answer, "units")
    assert got.value == value and got.notes == notes
    assert (got.error is None) if error is None else (error in got.error)


def test_reader_notes_reach_the_extraction_log():
    log = ExtractionLog()
    gen = Generation(text='Sure! {"flaws": [{"text": "No baseline", "section": "weaknesses"}]}',
                     finish_reason="stop", mean_logprob=None)
    got = log.read("flaws", "r1", gen, parse_flaws)
    assert got.ok and got.value[0]["text"] == "No baseline"
    assert log.notes == [{"stage": "flaws", "unit_id": "r1", "what": "extra text around the JSON object"}]
    assert log.counts["flaws"]["parsed"] == 1 and log.failures == []


def test_parse_adus_defaults_are_recorded():
    answer = json.dumps({"units": [
        {"text": "A claim", "role": "Claim", "aspect": "Soundness", "grounding": 2},  # claims get no grounding
        {"text": "A premise", "role": "premise", "aspect": "novelty", "grounding": 1},  # unknown aspect
        {"text": "Another", "role": "premise", "aspect": "clarity", "grounding": "high"},
        {"role": "premise"}]})
    got = parse_adus(answer)
    assert [(a.role, a.aspect, a.grounding, a.defaulted) for a in got.value] == [
        ("claim", "soundness", None, False), ("claim", "other", None, True), ("premise", "clarity", None, False)]
    assert got.defaults == ["unit 1: role 'premise' / aspect 'novelty' -> claim / other",
                            "unit 2: premise grounding 'high' -> ungraded"]
    assert got.invalid == ["unit 3: no text"]
    assert parse_adus('{"units": {"text": "x"}}').error == "'units' must be a list, got dict"


def test_stage_parsers():
    assert parse_claims('{"claims": [{"text": "new idea", "stance": "Not_Novel"}]}').value == [("new idea", "not novel")]
    assert parse_claims('{"claims": [{"text": "x", "stance": "great"}]}').defaults == [
        "claim 0: stance 'great' -> somewhat novel"]
    assert parse_verdict('{"verdict": "Overstated"}').value == 1
    assert "not one of" in parse_verdict('{"verdict": "maybe"}').error  # never read as 0
    assert parse_groups('{"groups": [[1, 0], [2]]}', 3).value == [[0, 1], [2]]
    assert "exactly once" in parse_groups('{"groups": [[0], [0, 1]]}', 2).error
    assert "exactly once" in parse_groups('{"groups": [[0]]}', 2).error
    assert parse_validation('{"valid": true, "severity": "Critical"}').value == (True, "critical")
    assert "true or false" in parse_validation('{"valid": "yes", "severity": "minor"}').error
    got = parse_comments(json.dumps({"comments": [
        {"text": "a", "type": "Suggestion", "actionability": 2, "specificity": 2, "justification": 1,
         "solution": 0, "tone": 2},
        {"text": "b", "type": "rant", "actionability": 1, "specificity": 1, "justification": 1, "solution": 1,
         "tone": 1},
        {"text": "c", "type": "weakness", "actionability": 2.5, "specificity": 1, "justification": True,
         "solution": 1, "tone": 1}]}))
    assert [(c.kind, c.score) for c in got.value] == [("suggestion", 0.7), ("observation", 0.5)]
    assert got.defaults == ["comment 1: type 'rant' -> observation"]
    assert got.invalid == ["comment 2: actionability 2.5, justification True not in {0, 1, 2}"]


def test_grounding_rubric_is_selectable():
    seed = build_messages("adu", review="r", rubric="seed")
    spec = build_messages("adu", review="r", rubric="specificity")
    assert stage_of(seed) == "adu"
    assert GROUNDING_RUBRICS["seed"][2] in seed[0]["content"]
    assert GROUNDING_RUBRICS["specificity"][2] in spec[0]["content"] and GROUNDING_RUBRICS["seed"][2] not in spec[0]["content"]
    with pytest.raises(ValueError, match="specificity"):
        build_messages("adu", review="r", rubric="depth")
    with pytest.raises(ValueError, match="unknown PRISM stage"):
        build_messages("summary", review="r")


def test_reader_errors_name_file_record_and_field(tmp_path):
    bad = tmp_path / "r.json"
    bad.write_text("[{\"reviewer_id\": \"R1\", \"summary\": \"ok\"}, 3]")
    with pytest.raises(ValueError, match=r"r\.json: record 1 is a int"):
        read_reviews(bad)
    bad.write_text("{not json")
    with pytest.raises(ValueError, match=r"r\.json: not valid JSON \(line 1"):
        read_reviews(bad)
    paper = tmp_path / "p.json"
    paper.write_text(json.dumps({"id": "x", "title": "T", "submission_date": "27/09/2024"}))
    with pytest.raises(ValueError, match="submission_date"):
        read_paper(paper)
    paper.write_text(json.dumps({"id": "x"}))
    with pytest.raises(ValueError, match="no title, abstract or text"):
        read_paper(paper)
    xml = tmp_path / "a.xml"
    xml.write_text("<article><front>")
    with pytest.raises(ValueError, match=r"not a readable JATS article: .*a\.xml"):
        read_reviews(xml)
    flat = tmp_path / "flat.jsonl"
    flat.write_text(json.dumps({"reviewer_id": "S1", "source": "system", "system": "Bot", "text":
                                "Strengths: fast.\nWeaknesses: no ablation."}) + "\n")
    review = read_reviews(flat).reviews[0]
    assert (review.review_id, review.label, review.sections) == ("S1", "Bot", {"strengths": "fast.",
                                                                               "weaknesses": "no ablation."})


def test_markdown_paper(tmp_path):
    md = tmp_path / "paper.md"
    md.write_text("# Title here\n\n## Abstract\n\nShort abstract.\n\n## Method\n\nWe do things.\n")
    paper = read_paper(md, submission_date="2024-05-01")
    assert (paper.title, paper.abstract, paper.submission_year) == ("Title here", "Short abstract.", 2024)
    assert [s.heading for s in paper.sections] == ["Title here", "Abstract", "Method"]


def test_prior_only_filter():
    paper = Submission(paper_id="p", title="t", submission_date=dt.date(2024, 9, 27))
    assert is_prior(PriorPaper("a", "x", publication_date="2024-09-26"), paper) is True
    assert is_prior(PriorPaper("a", "x", publication_date="2024-09-27"), paper) is False
    assert is_prior(PriorPaper("a", "x", year=2024), paper) is False  # same year without a date: not prior
    assert is_prior(PriorPaper("a", "x", year=2023), paper) is True
    assert is_prior(PriorPaper("a", "x"), paper) is None
    assert is_prior(PriorPaper("a", "x", year=2020), Submission(paper_id="q", title="t")) is None


def test_mmr_diversifies():
    texts = ["adapters for translation routing", "adapters for translation routing experts",
             "graph neural networks for molecules"]
    assert mmr_select("adapters translation routing", texts, 3, lambda_=1.0) == [0, 1, 2]  # plain relevance
    assert mmr_select("adapters translation routing", texts, 2, lambda_=0.3) == [0, 2]  # near-duplicate passed over
    assert mmr_select("q", [], 3) == []

"""PaperOrchestra autoraters, pure parts: citation F1 (both variants), side-by-side outcome rules and flip rate,
strict answer readers, literature-review validation / recomputation / caps, prompts, section extraction."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from surveyalign.autoraters import (
    AXES,
    AXIS_WEIGHTS,
    OUTCOMES,
    SXS_KEYS,
    build_litreview_messages,
    build_partition_messages,
    build_sxs_messages,
    check_litreview,
    citation_f1,
    extract_review_sections,
    parse_litreview,
    parse_partition,
    parse_sxs,
    position_flip_rate,
    read_json_answer,
    sxs_outcome,
)
from surveyalign.autoraters.rubric import PENALTIES, SCORE_ANCHORS
from surveyalign.documents import find_headings

FIXTURES = Path(__file__).parent / "fixtures" / "autoraters"


# ---------------------------------------------------------------- citation F1


def test_seed_f1_by_hand_with_unresolved():
    gt_ids = {"1": "a", "2": "b", "3": "c", "4": "d"}
    gt_labels = {"1": "P0", "2": "P0", "3": "P1", "4": "P1"}
    gen_ids = {"1": "a", "2": "c", "3": "e", "4": None}
    gen_labels = {"1": "P0", "2": "P0", "3": "P1", "4": "P1"}
    r = citation_f1(gt_ids, gen_ids, gt_labels, gen_labels)
    assert r.variant == "seed"
    assert (r.p0.precision, r.p0.recall, r.p0.f1) == (0.5, 0.5, 0.5)
    assert (r.p1.precision, r.p1.recall, r.p1.f1) == (0.0, 0.0, 0.0)
    assert r.p1.flags == ("f1: precision + recall = 0",)
    assert r.overall.precision == pytest.approx(2 / 3) and r.overall.recall == 0.5
    assert r.overall.f1 == pytest.approx(4 / 7)
    assert r.generated.unresolved == ("4",) and r.generated.n_unresolved == 1 and r.ground_truth.n_unresolved == 0
    assert r.flags == ("P1 f1: precision + recall = 0",)
    d = r.to_dict()
    assert d["variant"] == "seed" and d["generated"]["n_unresolved"] == 1 and d["p0"]["n_matched"] == 1


def test_f1_empty_sides_give_zero_with_flags():
    r = citation_f1({"1": "a"}, {}, {"1": "P0"}, {})
    assert (r.overall.precision, r.overall.recall, r.overall.f1) == (0.0, 0.0, 0.0)
    assert "precision: no generated ids (denominator 0)" in r.overall.flags
    assert "f1: precision + recall = 0" in r.overall.flags
    both_empty = citation_f1({}, {}, {}, {})
    assert both_empty.overall.flags == ("recall: no ground-truth ids (denominator 0)",
                                        "precision: no generated ids (denominator 0)",
                                        "f1: precision + recall = 0")
    assert both_empty.p0.f1 == 0.0 and len(both_empty.flags) == 9
    # everything unresolved is the same as empty, and counted
    unresolved = citation_f1({"1": None, "2": ""}, {"1": None}, {"1": "P0", "2": "P1"}, {"1": "P0"})
    assert unresolved.ground_truth.unresolved == ("1", "2") and unresolved.generated.n_unresolved == 1
    assert unresolved.overall.n_ground_truth == 0 and unresolved.overall.recall == 0.0
    official = citation_f1({"1": "a"}, {}, {"1": "P0"}, variant="official")
    assert official.p0.recall == 0.0 and official.p0.flags == () and official.p0.precision is None
    assert official.overall.flags[0] == "precision: no generated ids (denominator 0)"


def test_f1_duplicates_count_once():
    gt_ids = {"1": "a", "2": "a", "3": "b"}
    gen_ids = {"1": "a", "2": "a"}
    r = citation_f1(gt_ids, gen_ids, {"1": "P0", "2": "P0", "3": "P0"}, {"1": "P0", "2": "P0"})
    assert r.ground_truth.duplicate_ids == ("a",) and r.generated.duplicate_ids == ("a",)
    assert (r.p0.n_ground_truth, r.p0.n_generated, r.p0.n_matched) == (2, 1, 1)
    assert (r.p0.precision, r.p0.recall) == (1.0, 0.5) and r.p0.f1 == pytest.approx(2 / 3)


def test_f1_reference_in_both_p0_and_p1():
    gt_ids = {"1": "a", "2": "a", "3": "b"}
    gt_labels = {"1": "P0", "2": "P1", "3": "P1"}
    gen_ids = {"1": "a"}
    seed = citation_f1(gt_ids, gen_ids, gt_labels, {"1": "P1"})
    assert seed.ground_truth.ids_in_both == ("a",)
    assert seed.ground_truth.p0_ids == ("a",) and seed.ground_truth.p1_ids == ("a", "b")  # seed: in both sets
    assert (seed.p1.precision, seed.p1.recall) == (1.0, 0.5) and seed.p0.precision == 0.0
    official = citation_f1(gt_ids, gen_ids, gt_labels, variant="official")
    assert official.ground_truth.p0_ids == ("a",) and official.ground_truth.p1_ids == ("b",)  # P0 wins
    assert (official.p0.recall, official.p1.recall) == (1.0, 0.0)


def test_official_f1_by_hand_unlabelled_counts_as_p1():
    gt_ids = {"1": "a", "2": "b", "3": "c"}
    r = citation_f1(gt_ids, {"x": "a", "y": "c", "z": None}, {"1": "P0", "2": "P1"}, gen_labels={"x": "P0"},
                    variant="official")  # gen_labels ignored by the official variant
    assert r.variant == "official" and r.ground_truth.unlabelled == ("3",)
    assert (r.overall.precision, r.overall.recall) == (1.0, pytest.approx(2 / 3))
    assert r.overall.f1 == pytest.approx(0.8)
    assert (r.p0.recall, r.p1.recall) == (1.0, 0.5)
    assert r.p0.precision is None and r.p0.f1 is None and r.p1.precision is None
    seed = citation_f1(gt_ids, {"x": "a", "y": "c"}, {"1": "P0", "2": "P1"}, {"x": "P0", "y": "P1"})
    assert seed.ground_truth.unlabelled == ("3",) and seed.overall.n_ground_truth == 2  # seed: left out


@pytest.mark.parametrize("kwargs, message", [
    ({"variant": "symmetric"}, "unknown citation F1 variant"),
    ({"gen_labels": None}, "needs the generated paper's partition"),
    ({"gt_labels": {"1": "P2"}}, "labels must be P0 or P1"),
    ({"gt_labels": {"9": "P0"}}, "number(s) ['9']"),
])
def test_f1_bad_input(kwargs, message):
    args = {"gt_ids": {"1": "a"}, "gen_ids": {"1": "a"}, "gt_labels": {"1": "P0"}, "gen_labels": {"1": "P0"}}
    args.update(kwargs)
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")):
        citation_f1(**args)


# ---------------------------------------------------------------- side-by-side outcome rules

# (call_ab, call_ba) -> (s, seed, official3, official5, flip)
NINE = {
    ("paper_1", "paper_1"): (0, "tie", "tie", "tie", True),
    ("paper_1", "paper_2"): (2, "win", "win", "win", False),
    ("paper_1", "tie"): (1, "tie", "win", "leaning_win", False),
    ("paper_2", "paper_1"): (-2, "loss", "loss", "loss", False),
    ("paper_2", "paper_2"): (0, "tie", "tie", "tie", True),
    ("paper_2", "tie"): (-1, "tie", "loss", "leaning_loss", False),
    ("tie", "paper_1"): (-1, "tie", "loss", "leaning_loss", False),
    ("tie", "paper_2"): (1, "tie", "win", "leaning_win", False),
    ("tie", "tie"): (0, "tie", "tie", "tie", False),
}


@pytest.mark.parametrize("pair", list(NINE))
def test_outcome_rules_on_all_nine_winner_pairs(pair):
    s, seed, o3, o5, flip = NINE[pair]
    for rule, expected in (("seed", seed), ("official3", o3), ("official5", o5)):
        out = sxs_outcome(*pair, rule=rule)
        assert (out.rule, out.outcome, out.score, out.position_flip, out.unreadable) == (rule, expected, s, flip, 0)
        assert out.outcome in OUTCOMES[rule]


def test_outcome_unreadable_winner_votes_zero_and_bad_rule():
    out = sxs_outcome(None, "paper_2", rule="official3")
    assert (out.vote_ab, out.vote_ba, out.outcome, out.unreadable) == (0, 1, "win", 1)
    assert sxs_outcome("Paper 1", "paper_2").outcome == "tie"  # not an exact winner: 0 vote
    for rule in ("seed", "official3", "official5"):  # both unreadable: a failed comparison, not a tie
        both = sxs_outcome(None, "Paper 2", rule=rule)
        assert (both.outcome, both.score, both.unreadable) == ("failed", 0, 2)
    with pytest.raises(ValueError, match="unknown side-by-side rule"):
        sxs_outcome("paper_1", "paper_2", rule="official4")


def test_flip_rate():
    always_first = [("paper_1", "paper_1")] * 4
    assert position_flip_rate(always_first).rate == 1.0
    mixed = position_flip_rate([("paper_1", "paper_2"), ("paper_2", "paper_2"), ("tie", "paper_1"), (None, "tie")])
    assert (mixed.rate, mixed.n_flips, mixed.n_counted, mixed.n_pairs) == (pytest.approx(1 / 3), 1, 3, 4)
    empty = position_flip_rate([])
    assert (empty.rate, empty.n_counted) == (None, 0) and "denominator 0" in empty.flag  # n/a, not 0.0
    unreadable = position_flip_rate([(None, None), ("paper_1", None)])
    assert (unreadable.rate, unreadable.n_counted, unreadable.n_pairs) == (None, 0, 2)


# ---------------------------------------------------------------- strict readers

NUMBERS = ["1", "2"]
PARTITION_TABLE = [
    ('{"1": "P0", "2": "P1"}', {"1": "P0", "2": "P1"}, [], True),
    ('<think>maybe {"1": "P1"}</think>```json\n{"1": "P0", "2": "P1"}\n```', {"1": "P0", "2": "P1"}, [], True),
    ('{"1": "p0 ", "2": "P1"}', {"1": "P0", "2": "P1"}, [], True),
    ('{"1": "P0", "2": "P1", "7": "P0"}', {"1": "P0", "2": "P1"}, ["unknown reference number(s): 7"], False),
    ('{"1": "P0", "1": "P0", "2": "P1"}', {"1": "P0", "2": "P1"}, ["duplicate reference number(s): 1"], False),
    ('{"1": "P0", "1": "P1", "2": "P1"}', {"2": "P1"},
     ["duplicate reference number(s): 1", "invalid label(s) (expected P0 or P1): 1=['P0', 'P1']"], False),
    ('{"1": "P0"}', {"1": "P0"}, ["1 reference number(s) not labelled: 2"], False),
    ('{"1": "P2", "2": "P1"}', {"2": "P1"}, ["invalid label(s) (expected P0 or P1): 1='P2'"], False),
    ('Sure! {"1": "P0", "2": "P1"} Hope this helps.', {"1": "P0", "2": "P1"},
     ["extra text around the JSON object"], False),
    ('Labels {as asked}:\n{"1": "P0", "2": "P1"}', {"1": "P0", "2": "P1"}, ["extra text around the JSON object"], False),
]


@pytest.mark.parametrize("text, labels, problems, ok", PARTITION_TABLE)
def test_parse_partition_table(text, labels, problems, ok):
    got = parse_partition(text, NUMBERS)
    assert got.labels == labels and list(got.problems) == problems and got.ok is ok and got.error is None


@pytest.mark.parametrize("text, error", [
    ('{"1": "P0", "2": }', "invalid JSON: Expecting value at line 1 column 18"),
    ('{"1": "P0", "2": "P', "invalid JSON: Unterminated string"),
    ("I cannot do this.", "invalid JSON: no JSON object in the answer"),
    ("<think>let me see", "unclosed <think> block"),
    ('{"1": "P0"} {"2": "P1"}', "more than one JSON object"),
    ("```json\n{}\n```\n```json\n{}\n```", "2 code blocks"),
    ("", "empty answer"),
    (None, "empty answer"),
])
def test_parse_partition_unreadable(text, error):
    got = parse_partition(text, NUMBERS)
    assert got.error.startswith(error) and got.labels == {} and got.missing_numbers == ("1", "2") and not got.ok


def test_read_json_answer_keeps_duplicates_and_nested_objects():
    answer = read_json_answer('{"a": {"b": 1}, "a": {"b": 2}, "c": [{"d": 3}]}')
    assert answer.data == {"a": {"b": 2}, "c": [{"d": 3}]} and answer.duplicate_keys == ("a",)
    assert answer.pairs == (("a", {"b": 1}), ("a", {"b": 2}), ("c", [{"d": 3}]))
    assert answer.problems == ("duplicate key(s): a",)
    assert read_json_answer("</think>{\"x\": 1}").data == {"x": 1}  # reasoning before a lone closer


def _sxs(kind: str, winner) -> str:
    first, second, just, key = SXS_KEYS[kind]
    return json.dumps({first: "clear framing", second: "list-like", just: "1 synthesises", key: winner})


@pytest.mark.parametrize("kind", ["litreview", "paper"])
def test_parse_sxs(kind):
    got = parse_sxs(_sxs(kind, "paper_1"), kind)
    assert (got.winner, got.paper_1_analysis, got.justification, got.problems) == (
        "paper_1", "clear framing", "1 synthesises", ())
    assert parse_sxs(_sxs(kind, " PAPER_2 "), kind).winner == "paper_2"
    bad = parse_sxs(_sxs(kind, "Paper 1"), kind)
    assert bad.winner is None and bad.problems == ("invalid winner 'Paper 1'; expected one of paper_1, paper_2, tie",)
    other = "paper" if kind == "litreview" else "litreview"
    wrong_keys = parse_sxs(_sxs(other, "tie"), kind)  # the other autorater's keys: winner kept, fields missing
    assert wrong_keys.winner == "tie" and len(wrong_keys.problems) == 2
    assert parse_sxs('{"winner": "tie"', kind).winner is None
    with pytest.raises(ValueError):
        parse_sxs("{}", "full")


# ---------------------------------------------------------------- literature-review quality


def _axis(score):
    return {"score": score, "justification": "Not evidenced in the text."}


LITREVIEW = {
    "paper_title": "Sparse Routing for Graph Transformers",
    "citation_statistics": {"estimated_unique_citations": 40, "citation_density_assessment": "appropriate",
                            "breadth_across_subareas": "moderate", "comparison_to_baseline": "69% of 58",
                            "notes": "few recent works"},
    "axis_scores": {"coverage_and_completeness": _axis(60), "relevance_and_focus": _axis(70),
                    "critical_analysis_and_synthesis": _axis(55), "positioning_and_novelty": _axis(50),
                    "organization_and_writing": _axis(80), "citation_practices_and_rigor": _axis(65)},
    "penalties": [{"reason": "Mostly descriptive review with weak synthesis", "points_deducted": -5}],
    "summary": {"strengths": ["clear"], "weaknesses": ["thin"], "top_improvements": ["compare"]},
    "overall_score": 55,
}


def _judgement(**changes):
    data = copy.deepcopy(LITREVIEW)
    for path, value in changes.items():
        node = data
        *parents, last = path.split("__")
        for key in parents:
            node = node[key]
        node[last] = value
    parsed = parse_litreview(json.dumps(data))
    assert parsed.judgement is not None, parsed.problems
    return parsed.judgement


def test_litreview_recomputation_by_hand():
    assert sum(AXIS_WEIGHTS.values()) == pytest.approx(1.0)
    assert [round(a.weight * 100) for a in AXES] == [20, 15, 25, 25, 10, 5]
    check = check_litreview(_judgement(), 58)
    # 0.2*60 + 0.15*70 + 0.25*55 + 0.25*50 + 0.1*80 + 0.05*65 = 60.0; minus 5 points of penalty
    assert (check.weighted_score, check.penalty_points, check.recomputed_score) == (pytest.approx(60.0), 5, 55)
    assert check.overall_score == 55 and check.implied_adjustment == pytest.approx(0)
    assert check.citation_ratio == pytest.approx(40 / 58) and check.violations == ()


def _rules(check):
    return [v.rule for v in check.violations]


def test_litreview_violations_flagged():
    # +7 implied adjustment: in range, but its conditions fail (69% of the average, critical 55)
    check = check_litreview(_judgement(overall_score=62), 58)
    assert _rules(check) == ["positive_adjustment_not_allowed"]
    assert "citations 69% of the venue average" in check.violations[0].message
    # +2: neither 0 nor +3..+7
    assert _rules(check_litreview(_judgement(overall_score=57), 58)) == ["overall_mismatch",
                                                                           "positive_adjustment_not_allowed"]
    # descriptive penalty declared but critical analysis above 60
    assert "critical_cap_descriptive" in _rules(check_litreview(
        _judgement(axis_scores__critical_analysis_and_synthesis=_axis(70), overall_score=58.75), 58))
    # few citations: coverage and rigour capped at 55
    few = check_litreview(_judgement(citation_statistics__estimated_unique_citations=20), 58)
    assert _rules(few) == ["coverage_cap_low_citation_count", "rigor_cap_low_citation_count"]
    # overall above 75 with an axis below 50; above 85 without strong axes; penalty size
    high = check_litreview(_judgement(overall_score=88, penalties=[{"reason": "x", "points_deducted": 20}],
                                      axis_scores__positioning_and_novelty=_axis(45)), 58)
    assert {"overall_mismatch", "overall_above_75_with_weak_axis", "overall_above_85_without_strong_axes",
            "penalty_out_of_range"} <= set(_rules(high))
    sparse = check_litreview(_judgement(citation_statistics__citation_density_assessment="low"), 58)
    assert _rules(sparse) == ["rigor_cap_sparse_citations"]
    with pytest.raises(ValueError):
        check_litreview(_judgement(), 0)


def test_litreview_out_of_range_and_invalid_reported():
    data = copy.deepcopy(LITREVIEW)
    data["axis_scores"]["coverage_and_completeness"]["score"] = 120
    data["axis_scores"]["positioning_and_novelty"]["score"] = -3
    data["citation_statistics"]["citation_density_assessment"] = "medium"
    del data["overall_score"]
    got = parse_litreview(json.dumps(data))
    assert got.judgement is None
    assert got.problems == (
        "citation_statistics.citation_density_assessment: Input should be 'low', 'appropriate' or 'high'",
        "axis_scores.coverage_and_completeness.score: Input should be less than or equal to 100",
        "axis_scores.positioning_and_novelty.score: Input should be greater than or equal to 0",
        "overall_score: Field required",
    )
    assert parse_litreview('{"paper_title": "x", ').problems[0].startswith("invalid JSON")
    extra = copy.deepcopy(LITREVIEW)
    extra["bonus"] = 5
    assert parse_litreview(json.dumps(extra)).problems == ("bonus: Extra inputs are not permitted",)


# ---------------------------------------------------------------- prompts


def test_prompts_carry_every_rubric_fact():
    system = build_litreview_messages("paper", 58.52)[0]["content"]
    for axis in AXES:
        assert f'"{axis.key}"' in system and f"weight {round(axis.weight * 100)}%" in system
    for lo, hi, name in SCORE_ANCHORS:
        assert f"{lo}-{hi}: {name}" in system
    for p in PENALTIES:
        assert f"minus {p.low} to {p.high} points" in system
    for fact in ("58.52", "3 to 7 points in total", "more than 150%", "at most 55", "at most 60", "at most 65",
                 "between 45 and 70", "above 85", "above 90", "below 50", "25 words", "Not evidenced in the text.",
                 '"overall_score"', '"estimated_unique_citations"', '"top_improvements"', '"points_deducted"'):
        assert fact in system, fact
    with pytest.raises(ValueError):
        build_litreview_messages("paper", 0)
    partition = build_partition_messages("text", "1. A\n2. B")
    assert "P0" in partition[0]["content"] and "dataset" in partition[0]["content"]
    assert partition[1]["content"].endswith("1. A\n2. B")
    for kind, keys in SXS_KEYS.items():
        messages = build_sxs_messages(kind, "FIRST", "SECOND")
        assert all(f'"{k}"' in messages[0]["content"] for k in keys)
        assert messages[1]["content"].index("FIRST") < messages[1]["content"].index("SECOND")


# ---------------------------------------------------------------- sections


def test_sections_markdown():
    text = (FIXTURES / "paper.md").read_text()
    sel = extract_review_sections(text)
    assert [(t.role, t.heading, t.similarity) for t in sel.taken] == [
        ("introduction", "1 Introduction", 100.0), ("related_work", "2 Related Works", 100.0)]
    assert sel.missing == () and not sel.whole_document
    assert "GraphGPS [4]" in sel.text and "1.1 Contributions" in sel.text and "spatial ones" in sel.text
    assert "Details that" not in sel.text and "We route messages" not in sel.text


def test_sections_latex():
    text = (FIXTURES / "paper.tex").read_text()
    assert [(h.title, h.level) for h in find_headings(text)] == [
        ("Introduction", 2), ("Contributions", 3), ("Background and \\textbf{Related Work}", 2), ("Method", 2)]
    sel = extract_review_sections(text)
    assert [(t.role, t.matched_name, t.similarity) for t in sel.taken] == [
        ("introduction", "introduction", 100.0), ("related_work", "related work", 95.0)]
    assert "\\cite{cost}" in sel.text and "spatial ones" in sel.text and "Details that" not in sel.text


def test_sections_missing_and_nested():
    nested = "# T\n## 1 Introduction to graphs\nintro\n### 1.2 Prior work\nold\n## 2 Method\nm\n"
    sel = extract_review_sections(nested)
    assert sel.nested == ("related_work",) and sel.text == "## 1 Introduction to graphs\nintro\n### 1.2 Prior work\nold"
    none = extract_review_sections("# Title\n## Experiments\nx\n")
    assert none.whole_document and none.missing == ("introduction", "related_work") and none.text.startswith("# Title")
    typo = extract_review_sections("## Introdution\nx\n## Relatd Work\ny\n")
    assert [t.matched_name for t in typo.taken] == ["introduction", "related work"]


# ---------------------------------------------------------------- evaluate module


def test_citation_f1_module_batches_match_pure_function(repo_root, monkeypatch):
    evaluate = pytest.importorskip("evaluate", reason="the `evaluate` package (a surveyalign dependency) is not installed: pip install -e .")
    from surveyalign.autoraters import citation_f1_by_pair

    monkeypatch.chdir(repo_root)
    pairs = ["p1"] * 5 + ["p2"] * 3
    sides = ["ground_truth", "ground_truth", "generated", "generated", "generated", "ground_truth", "generated",
             "generated"]
    ids = ["a", "b", "a", "a", None, "x", "y", "x"]
    labels = ["P0", "P1", "P0", "P1", "P0", "P1", "P1", "P1"]
    metric = evaluate.load("metrics/citation_f1")
    metric.add_batch(pairs=pairs[:4], sides=sides[:4], paper_ids=ids[:4], labels=labels[:4])
    metric.add_batch(pairs=pairs[4:], sides=sides[4:], paper_ids=ids[4:], labels=labels[4:])
    got = metric.compute()
    want = citation_f1_by_pair(pairs, sides, ids, labels)
    assert got["mean"] == want["mean"] and got["n_pairs"] == 2 and got["n_unresolved"] == {"ground_truth": 0,
                                                                                           "generated": 1}
    # p1: gt P0 {a} P1 {b}; gen P0 {a} P1 {a}: overall P 1/1, R 1/2; p2: overall P 1/2, R 1/1
    assert got["mean"]["overall"]["precision"] == 0.75 and got["mean"]["overall"]["recall"] == 0.75
    assert got["per_pair"]["p1"]["generated"]["ids_in_both"] == ("a",)
    with pytest.raises(ValueError, match="unknown config"):
        evaluate.load("metrics/citation_f1", "symmetric")
    with pytest.raises(ValueError, match="row 0: side must be"):
        metric.compute(pairs=["p"], sides=["gt"], paper_ids=["a"], labels=["P0"])

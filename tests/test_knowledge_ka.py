"""Comp-KA and Crit-KA on hand-made graphs with answers worked out by hand (SurveyReview App. F)."""

from __future__ import annotations

import numpy as np
import pytest

from surveyalign.backends import Generation, load_backend
from surveyalign.calls import CallCache
from surveyalign.documents import Paper
from surveyalign.knowledge import Resolver
from surveyalign.knowledge.build import SurveyKAInput, build_survey_ka
from surveyalign.knowledge.config import KAConfig
from surveyalign.knowledge.graph import CitationGraph
from surveyalign.knowledge.ka import (
    comp_ka,
    crit_candidates,
    neighbourhood,
    pack_blocks,
)
from surveyalign.knowledge.summarise import Summariser, TokenCounter, empty_answer


def _p(pid, year, cites, refs=(), title=None):
    return Paper(id=pid, title=title or f"Paper {pid}", year=year, citation_count=cites, reference_ids=list(refs),
                 abstract="one two three four five", authors=[f"Author {pid}"])


def _graph() -> CitationGraph:
    # R = r1, r2, r3.  a: cites r1, r2 and is cited by r3 -> score 3.  b <-> r1 both ways -> score 1 (once).
    # c -> r2, d -> r3: score 1.  r1 -> r2: R members inside R+ (score 1 each).  s: the survey (cites R).
    # z cites the survey.  late (2030) cites r1.  e: unlinked.
    return CitationGraph([
        _p("r1", 2010, 100, ["r2", "b"]), _p("r2", 2012, 7), _p("r3", 2014, 30, ["a"]),
        _p("a", 2015, 10, ["r1", "r2"]), _p("b", 2011, 50, ["r1"]), _p("c", 2013, 50, ["r2"]),
        _p("d", 2009, 5, ["r3"]), _p("s", 2016, 3, ["r1", "r2", "r3"], title="The survey"),
        _p("z", 2016, 1, ["s", "r1"]), _p("late", 2030, 999, ["r1"]), _p("e", 2000, 1),
    ])


def _ids(graph, nodes):
    return [graph.papers[i].id for i in nodes]


def test_graph_csr_both_directions_and_counts():
    g = CitationGraph([_p("x", 2000, 1, ["y", "", "nowhere", "x"]), _p("y", 2001, 2), _p("x", 1999, 0)])
    assert g.stats.n_papers == 2 and g.stats.n_edges == 1 and g.stats.n_duplicate_ids == 1
    assert (g.stats.n_empty_reference_ids, g.stats.n_dangling_ids, g.stats.n_self_citations) == (1, 1, 1)
    x, y = g.index["x"], g.index["y"]
    assert g.cites[x, y] == 1 and g.cites[y, x] == 0 and g.cited_by[y, x] == 1
    assert g.linked[x, y] == g.linked[y, x] == 1
    # a repeated id is merged: empty fields filled, reference ids united (the first record's values win)
    merged = CitationGraph([Paper(id="m", title="", year=2001, reference_ids=["y"]), _p("y", 2000, 1),
                            Paper(id="m", title="Filled", year=1990, reference_ids=["y", "z", ""]), _p("z", 2002, 1)])
    m = merged.papers[merged.index["m"]]
    assert (m.title, m.year, m.reference_ids, merged.stats.n_edges) == ("Filled", 2001, ["y", "z"], 2)


def test_comp_ka_scores_ties_both_way_links_and_r_inside_r_plus():
    g = _graph()
    refs = [g.index[r] for r in ("r1", "r2", "r3")]
    hood = neighbourhood(g, refs, survey_nodes=[g.index["s"]], survey_year=2016)
    assert hood.n_neighbourhood == 9  # a b c d r1 r2 s z late
    assert hood.excluded == {"survey": 1, "citing_survey": 1, "after_survey": 1}
    scores = dict(zip(_ids(g, hood.candidates), hood.scores.tolist(), strict=True))
    assert scores == {"r1": 1, "r2": 1, "a": 3, "b": 1, "c": 1, "d": 1}
    comp = comp_ka(g, hood)
    # top 2n = 6: a (3), then the score-1 tie by citations (r1 100, b 50, c 50, r2 7, d 5), b before c by id
    assert _ids(g, comp.top) == ["a", "r1", "b", "c", "r2", "d"]
    assert _ids(g, comp.added) == ["a", "b", "c", "d"] and comp.n_top_in_references == 2
    assert comp.text.splitlines() == [
        "Cited by the survey (3):",
        "- Paper r1 (2010; 100 citations)", "- Paper r2 (2012; 7 citations)", "- Paper r3 (2014; 30 citations)",
        "Connected to those references by citations, most connected first (4):",
        "- Paper a (2015; 10 citations)", "- Paper b (2011; 50 citations)", "- Paper c (2013; 50 citations)",
        "- Paper d (2009; 5 citations)",
    ]
    assert _ids(g, comp_ka(g, hood, top_factor=1).top) == ["a", "r1", "b"]
    # a token budget drops the lowest-ranked neighbours first, then the last references
    words = TokenCounter("whitespace")
    assert words(comp.text) == 57  # headers of 5 and 10 words, seven entries of 6 words
    fitted = comp_ka(g, hood, max_tokens=48, count_tokens=words)
    assert fitted.text.splitlines()[-3:] == [
        "Connected to those references by citations, most connected first (2 of 4):",
        "- Paper a (2015; 10 citations)", "- Paper b (2011; 50 citations)"]
    assert (fitted.n_dropped_added, fitted.n_dropped_references, words(fitted.text)) == (2, 0, 47)
    tight = comp_ka(g, hood, max_tokens=19, count_tokens=words)
    assert tight.text.splitlines() == ["Cited by the survey (2 of 3):", "- Paper r1 (2010; 100 citations)",
                                       "- Paper r2 (2012; 7 citations)"]
    assert (tight.n_dropped_added, tight.n_dropped_references) == (4, 1)
    with pytest.raises(ValueError, match=r"^comp_ka: max_tokens needs count_tokens \(the judge tokenizer\)$"):
        comp_ka(g, hood, max_tokens=10)


def test_future_cutoff_falls_back_to_newest_reference_and_can_be_off():
    g = _graph()
    refs = [g.index[r] for r in ("r1", "r2", "r3")]
    hood = neighbourhood(g, refs)  # no survey node, no survey year: newest reference (2014) is the cutoff
    assert (hood.cutoff_year, hood.cutoff_from) == (2014, "references")
    assert hood.excluded["after_survey"] == 4  # a (2015), s (2016), z (2016), late (2030)
    assert "a" not in _ids(g, hood.candidates)
    assert neighbourhood(g, refs, exclude_future=False).candidates.size == 9


def test_empty_r_gives_empty_ka():
    g = _graph()
    hood = neighbourhood(g, [], survey_nodes=[g.index["s"]], survey_year=2016)
    assert hood.candidates.size == 0 and hood.scores.size == 0 and hood.n_neighbourhood == 0
    assert hood.excluded == {"survey": 0, "citing_survey": 0, "after_survey": 0}
    assert (hood.cutoff_year, hood.cutoff_from, hood.n_unknown_year) == (None, "none", 0)
    comp = comp_ka(g, hood)
    assert comp.text == "" and comp.top == []
    crit = crit_candidates(g, hood, alpha=75, beta=75)
    assert (crit.tau_c, crit.tau_y, crit.nodes, crit.n_no_year) == (None, None, [], 0)


def test_a_single_reference_has_a_neighbourhood():
    g = _graph()
    hood = neighbourhood(g, [g.index["r3"]], survey_year=2016)  # r3 cites a and is cited by d and s
    assert _ids(g, hood.candidates) == ["a", "d", "s"] and hood.scores.tolist() == [1, 1, 1]
    comp = comp_ka(g, hood)  # 2n = 2: the two most cited (a 10, d 5; s has 3)
    assert _ids(g, comp.top) == ["a", "d"] and comp.scores == [1, 1] and type(comp.scores[0]) is int


def test_crit_percentiles_candidates_and_blocks():
    g = _graph()
    hood = neighbourhood(g, [g.index[r] for r in ("r1", "r2", "r3")], survey_nodes=[g.index["s"]],
                         survey_year=2016)
    cand = crit_candidates(g, hood, alpha=75, beta=75)
    # citations of R [7, 30, 100] -> 75th percentile 30 + 0.5 * 70 = 65; years [2010, 2012, 2014] -> 2013
    assert cand.tau_c == 65.0 and cand.tau_y == 2013.0
    assert _ids(g, cand.nodes) == ["r1", "c", "a"]  # r1 by citations, c and a by year; sorted by year
    words = TokenCounter("whitespace")
    assert words("Paper r1 (2010): one two three four five") == 8
    blocks = pack_blocks(g, cand.nodes, budget=16, count_tokens=words)
    assert [(b.first_year, b.last_year, _ids(g, b.nodes), b.tokens) for b in blocks] == [
        (2010, 2013, ["r1", "c"], 16), (2015, 2015, ["a"], 8)]
    cut = pack_blocks(g, cand.nodes, budget=5, count_tokens=words)  # each entry alone exceeds the budget
    assert [b.n_cut for b in cut] == [1, 1, 1] and all(b.tokens <= 5 for b in cut)


def _summary_reply(messages, settings, index):
    text = messages[0]["content"]
    if text.startswith("The notes below"):
        return "compressed: " + " ".join(["word"] * 50)
    first = text.split("between ")[1].split(" and")[0]
    return f"summary from {first}"


def _scripted():
    return load_backend("scripted", replies=_summary_reply)


def test_crit_ka_summaries_compression_cache_and_length(tmp_path):
    g = _graph()
    hood = neighbourhood(g, [g.index[r] for r in ("r1", "r2", "r3")], survey_nodes=[g.index["s"]],
                         survey_year=2016)
    words = TokenCounter("whitespace")
    blocks = pack_blocks(g, crit_candidates(g, hood, alpha=75, beta=75).nodes, budget=16, count_tokens=words)
    config = KAConfig(length=20, tokenizer="whitespace")
    backend = _scripted()
    with CallCache.load(tmp_path / "calls.jsonl") as cache:
        result = Summariser(backend, config, words, cache).crit_ka(blocks)
    assert result.n_calls == 3 and result.cache_hits == 0 and result.errors == []
    assert [b["summary"] for b in result.blocks] == ["summary from 2010", "summary from 2015"]
    compress_prompt = backend.calls[-1][0][0]["content"]
    assert "[2010-2013] summary from 2010\n[2015-2015] summary from 2015" in compress_prompt
    assert result.cut_to_length and result.tokens == 20 and result.text.startswith("compressed: word")
    again = Summariser(_scripted(), config, words, CallCache.load(tmp_path / "calls.jsonl")).crit_ka(blocks)
    assert (again.n_calls, again.cache_hits, again.text) == (0, 3, result.text)
    assert {record["namespace"] for record in CallCache.load(tmp_path / "calls.jsonl")} == {"ka.summary"}


def test_crit_ka_plan_sends_nothing_and_names_the_calls_crit_ka_makes(tmp_path):
    """Summariser.plan: before the run, the summary calls crit_ka makes (same keys) and a compression bound with
    summary_tokens stand-in words per summary and a stand-in text of L words; after it, the run's own calls and
    text. A budget refusing the compression stops after the summaries (kept in the cache)."""
    from surveyalign.calls.budget import CostCapReached

    g = _graph()
    hood = neighbourhood(g, [g.index[r] for r in ("r1", "r2", "r3")], survey_nodes=[g.index["s"]],
                         survey_year=2016)
    words = TokenCounter("whitespace")
    blocks = pack_blocks(g, crit_candidates(g, hood, alpha=75, beta=75).nodes, budget=16, count_tokens=words)
    config = KAConfig(length=20, summary_tokens=10, tokenizer="whitespace")

    class Budget:  # allows the summaries (and the compression bound with them), refuses the compression alone
        def __init__(self):
            self.asked, self.answered = [], []

        def before(self, calls):
            self.asked.append([c.stage for c in calls])
            return len(self.asked) == 1

        def after(self, calls):
            self.answered += [c.stage for c in calls]

    with CallCache.load(tmp_path / "calls.jsonl") as cache:
        summariser = Summariser(_scripted(), config, words, cache)
        before = summariser.plan(blocks)
        assert before.stand_in and before.n_calls == 0 and not cache.records
        assert [c.stage for c in before.planned_calls] == ["ka-summary", "ka-summary", "ka-compress"]
        bound = before.planned_calls[-1].messages[0]["content"]
        assert "[2010-2013] " + " ".join(["the"] * 10) + "\n[2015-2015] " in bound
        assert before.text == " ".join(["the"] * 20) and before.tokens == 20
        summariser.budget = Budget()
        with pytest.raises(CostCapReached, match="compression"):
            summariser.crit_ka(blocks)
        assert summariser.budget.asked == [["ka-summary", "ka-summary", "ka-compress"], ["ka-compress"]]
        assert summariser.budget.answered == ["ka-summary", "ka-summary"] and len(cache.records) == 2
        summariser.budget = None
        result = summariser.crit_ka(blocks)
        after = summariser.plan(blocks)
    assert {c.key for c in after.planned_calls} == set(cache.records) and len(cache.records) == 3
    assert not after.stand_in and after.text == result.text and after.cut_to_length
    assert [c.key for c in before.planned_calls[:2]] == [c.key for c in after.planned_calls[:2]]


def test_crit_ka_failed_calls_are_kept_and_reported():
    g = _graph()
    hood = neighbourhood(g, [g.index[r] for r in ("r1", "r2", "r3")], survey_year=2016)
    words = TokenCounter("whitespace")
    blocks = pack_blocks(g, crit_candidates(g, hood, alpha=75, beta=75).nodes, budget=16, count_tokens=words)
    failing = load_backend("scripted", replies=[RuntimeError("HTTP 503")] * 5)
    result = Summariser(failing, KAConfig(tokenizer="whitespace"), words).crit_ka(blocks)
    assert result.text == "" and len(result.errors) == len(blocks) and "failed" in result.errors[0]


def test_survey_record_without_resolved_reference_says_why():
    g = _graph()
    resolver = Resolver(g.papers)
    survey = SurveyKAInput("p1", "Unrelated survey", ("Nobody, A. (2001). A title nobody has. Venue.",))
    record = build_survey_ka(g, resolver, survey, "comprehensiveness", KAConfig())
    assert record["text"] == "" and record["n_references"] == 1 and record["n_resolved"] == 0
    assert record["reason"] == "none of the 1 references resolved to a paper of the graph"
    assert record["unresolved"] == [{"key": "1", "reason": "no candidate with a similar title"}]
    empty = build_survey_ka(g, resolver, SurveyKAInput("p2", "x"), "comprehensiveness", KAConfig())
    assert empty["reason"].startswith("no reference list found")


def test_survey_record_resolves_references_and_excludes_the_survey_node():
    g = _graph()
    survey = SurveyKAInput("p1", "The survey", ("Author r1 (2010). Paper r1. Venue.", "Author r2 (2012). Paper r2.",
                                                 "Author r3 (2014). Paper r3. Venue."))
    record = build_survey_ka(g, Resolver(g.papers), survey, "comprehensiveness", KAConfig(),
                             counter=TokenCounter("whitespace"))
    assert record["n_resolved"] == 3 and record["survey_nodes"] == ["s"] and record["cutoff_year"] == 2016
    assert record["excluded"] == {"survey": 1, "citing_survey": 1, "after_survey": 1}
    assert record["n_kept"] == 7 and record["comp"]["top"] == ["a", "r1", "b", "c", "r2", "d"]
    assert record["tokens"] == len(record["text"].split()) and record["n_resolved_incomplete"] == 0
    with pytest.raises(ValueError, match="summariser"):
        build_survey_ka(g, Resolver(g.papers), survey, "criticalness", KAConfig())
    # a near-identical title (a preprint of the survey, say) is left out too, without needing year or author
    variant = CitationGraph([*g.papers, _p("s-v2", 2015, 2, ["r1"], title="The surveys")])
    record = build_survey_ka(variant, Resolver(variant.papers), survey, "comprehensiveness", KAConfig())
    assert record["survey_nodes"] == ["s", "s-v2"] and record["excluded"]["survey"] == 2


def test_from_edges_matches_record_edges():
    papers = [Paper(id=f"n{i}", title=f"T{i}", year=2000 + i, citation_count=i) for i in range(4)]
    g = CitationGraph.from_edges(papers, np.array([0, 1, 2, 2]), np.array([1, 2, 3, 3]))
    assert g.stats.n_edges == 3 and g.linked[3, 2] == 1 and g.cites[2, 3] == 1
    with pytest.raises(ValueError, match="node indices"):
        CitationGraph.from_edges(papers, np.array([0]), np.array([9]))


# ------------------------------------------------------------------------------------------------- edges (issue 27)


def test_comp_ka_budget_keeps_the_most_entries_that_fit():
    # full text: 57 words. With all 3 references (header 5 + 3 x 6 = 23) and k of the 4 neighbours cut:
    # 23 + 12 ("(k of 4):" header) + 6k words; with no neighbour left the neighbour header goes too
    g = _graph()
    hood = neighbourhood(g, [g.index[r] for r in ("r1", "r2", "r3")], survey_nodes=[g.index["s"]], survey_year=2016)
    words = TokenCounter("whitespace")
    kept = {}
    for budget in (57, 56, 53, 52, 41, 40, 23):
        comp = comp_ka(g, hood, max_tokens=budget, count_tokens=words)
        kept[budget] = (len(comp.added) - comp.n_dropped_added, comp.n_dropped_references, words(comp.text))
    assert kept == {57: (4, 0, 57), 56: (3, 0, 53), 53: (3, 0, 53), 52: (2, 0, 47), 41: (1, 0, 41),
                    40: (0, 0, 23), 23: (0, 0, 23)}
    # references: header "(k of 3):" of 7 words + 6 per entry; one reference alone (13 words) over the budget
    # leaves nothing, and says so in the counts
    refs_only = {b: comp_ka(g, hood, max_tokens=b, count_tokens=words) for b in (22, 19, 18, 13, 12)}
    assert {b: c.n_dropped_references for b, c in refs_only.items()} == {22: 1, 19: 1, 18: 2, 13: 2, 12: 3}
    assert refs_only[12].text == "" and refs_only[12].n_dropped_added == 4 and refs_only[12].n_untitled == 0
    assert refs_only[13].text.splitlines() == ["Cited by the survey (1 of 3):", "- Paper r1 (2010; 100 citations)"]


def _edge_graph() -> CitationGraph:
    # R = r1 (2010, 10 citations), r2 (2012, 20), r3 (2014, 30), r4 (untitled, no year, no count); no links
    # inside R. Each other paper cites one reference (score 1); "after" is later than the survey (2020).
    return CitationGraph([
        _p("r1", 2010, 10), _p("r2", 2012, 20), _p("r3", 2014, 30),
        Paper(id="r4", title="  ", year=None, citation_count=None, abstract=""),
        _p("p", 2011, 20, ["r1"]), _p("q", 2011, 19, ["r1"]), _p("w", 2013, 19, ["r2"]),
        _p("y", 2014, 0, ["r2"]), _p("aa", 2014, 0, ["r3"]), _p("n1", 2014, None, ["r3"]),
        _p("n2", 2012, None, ["r3"]), _p("m", None, 1234, ["r1"]), _p("m2", None, 0, ["r2"]),
        _p("after", 2021, 500, ["r1"]),
    ])


def test_crit_thresholds_are_inclusive_and_unknown_counts_and_years_never_pass():
    g = _edge_graph()
    hood = neighbourhood(g, [g.index[r] for r in ("r1", "r2", "r3", "r4")], survey_year=2020)
    assert hood.excluded == {"survey": 0, "citing_survey": 0, "after_survey": 1} and hood.n_unknown_year == 2
    cand = crit_candidates(g, hood, alpha=50, beta=100)
    # r4's unknown count and year are left out: median of [10, 20, 30] = 20, 100th percentile of the years 2014
    assert (cand.tau_c, cand.tau_y) == (20.0, 2014.0)
    # p (20 citations = tau_c) and the 2014 papers (= tau_y) are in; q, w (19; 2011, 2013) and n2 (no count,
    # 2012) are out. Within 2014: 0 citations before an unknown count, "aa" before "y" by id.
    # m passes on citations but has no year: counted, not placed.
    assert _ids(g, cand.nodes) == ["p", "aa", "y", "n1"] and cand.n_no_year == 1
    # the 25th percentile of the counts (15) lets q and w in (p before q in 2011: more citations); m2 never passes
    low = crit_candidates(g, hood, alpha=25, beta=100)
    assert low.tau_c == 15.0 and _ids(g, low.nodes) == ["p", "q", "w", "aa", "y", "n1"] and low.n_no_year == 1


def test_an_unknown_count_never_meets_a_zero_citation_threshold():
    # R's counts [0, 0, 10]: the median is 0, so a paper with 0 citations passes and one with no count does not
    g = CitationGraph([_p("z1", 2010, 0), _p("z2", 2011, 0), _p("z3", 2012, 10), _p("k1", 2001, None, ["z1"]),
                       _p("k2", 2002, 0, ["z2"])])
    hood = neighbourhood(g, [0, 1, 2], survey_year=2020)
    cand = crit_candidates(g, hood, alpha=50, beta=100)
    assert (cand.tau_c, cand.tau_y, _ids(g, cand.nodes), cand.n_no_year) == (0.0, 2012.0, ["k2"], 0)


def test_crit_thresholds_without_counts_or_years_in_r():
    no_counts = CitationGraph([_p("u1", 2010, None), _p("u2", 2012, None), _p("c1", 2012, 5, ["u1"]),
                               _p("c2", 2011, 1000, ["u2"]), _p("c3", 2010, 1000, ["u2"])])
    hood = neighbourhood(no_counts, [0, 1], survey_year=2020)
    cand = crit_candidates(no_counts, hood, alpha=0, beta=50)
    assert (cand.tau_c, cand.tau_y, _ids(no_counts, cand.nodes)) == (None, 2011.0, ["c2", "c1"])
    no_years = CitationGraph([_p("v1", None, 10), _p("v2", None, 30), _p("c3", 2000, 25, ["v1"]),
                              _p("c4", 2001, 15, ["v2"]), _p("c5", None, 99, ["v2"])])
    hood = neighbourhood(no_years, [0, 1])  # no survey year and no year in R: no cutoff at all
    assert (hood.cutoff_year, hood.cutoff_from, hood.excluded["after_survey"]) == (None, "none", 0)
    cand = crit_candidates(no_years, hood, alpha=50, beta=50)
    assert (cand.tau_c, cand.tau_y, _ids(no_years, cand.nodes), cand.n_no_year) == (20.0, None, ["c3"], 1)


def test_comp_ka_ranks_unknown_counts_last_and_writes_unknowns():
    g = _edge_graph()
    hood = neighbourhood(g, [g.index[r] for r in ("r1", "r2", "r3", "r4")], survey_year=2020)
    comp = comp_ka(g, hood)
    # 2n = 8 of the 9 candidates, all of score 1: by citations (unknown below 0), then id
    assert _ids(g, comp.top) == ["m", "p", "q", "w", "aa", "m2", "y", "n1"] and comp.scores == [1] * 8
    assert comp.n_top_in_references == 0 and comp.n_untitled == 1
    lines = comp.text.splitlines()
    assert lines[4] == "- [untitled record r4] (year unknown; citations unknown)"
    assert lines[6] == "- Paper m (year unknown; 1,234 citations)" and lines[-1] == "- Paper n1 (2014; citations unknown)"


def test_exclusions_count_each_paper_under_its_first_reason():
    # s and its preprint s2 (which cites s) stand for the survey; x and y3 cite the survey, x is also later
    # than it and y3 has no year; "late" is after the survey; y2 has no year and is kept (counted)
    g = CitationGraph([
        _p("r1", 2010, 5), _p("r2", 2012, 5, ["r1"]), _p("s", 2016, 1, ["r1", "r2"]), _p("s2", 2015, 1, ["s", "r1"]),
        _p("x", 2030, 1, ["s", "r1"]), Paper(id="y3", title="Y3", year=None, reference_ids=["s", "r2"]),
        Paper(id="y2", title="Y2", year=None, reference_ids=["r1"]), _p("late", 2030, 1, ["r2"]),
    ])
    survey = [g.index["s"], g.index["s2"]]
    hood = neighbourhood(g, [g.index["r1"], g.index["r2"], g.index["r1"]], survey_nodes=survey, survey_year=2016)
    assert hood.references.tolist() == [g.index["r1"], g.index["r2"]]  # repeats removed, order kept
    assert hood.n_neighbourhood == 8
    assert hood.excluded == {"survey": 2, "citing_survey": 2, "after_survey": 1}
    assert _ids(g, hood.candidates) == ["r1", "r2", "y2"] and hood.scores.tolist() == [1, 1, 1]
    assert hood.n_unknown_year == 1 and (hood.cutoff_year, hood.cutoff_from) == (2016, "survey")
    # no survey year: the newest reference year (2012) is the cutoff; s2 (2015) is still a survey node
    fallback = neighbourhood(g, [g.index["r1"], g.index["r2"]], survey_nodes=survey)
    assert (fallback.cutoff_year, fallback.cutoff_from) == (2012, "references")
    assert fallback.excluded == {"survey": 2, "citing_survey": 2, "after_survey": 1}
    off = neighbourhood(g, [g.index["r1"], g.index["r2"]], exclude_future=False)
    assert (off.cutoff_year, off.cutoff_from, off.excluded, off.n_unknown_year) == (
        None, "none", {"survey": 0, "citing_survey": 0, "after_survey": 0}, 2)


def test_pack_blocks_gives_an_oversized_entry_a_cut_block_of_its_own():
    long_abstract = " ".join(f"w{i}" for i in range(1, 21))  # entry: 3 + 20 = 23 words
    g = CitationGraph([
        _p("a", 2001, 1), Paper(id="big", title="Big one", year=2002, abstract=long_abstract.replace("w5 ", "w5\n  ")),
        _p("b", 2003, 1), Paper(id="c", title="", year=2004, abstract="  "),
    ])
    words = TokenCounter("whitespace")
    blocks = pack_blocks(g, [0, 1, 2, 3], budget=16, count_tokens=words)
    # 23 words -> 20 -> 18 -> 16 (each cut keeps 90% of the words, rounded down) fits; b (8) and c (6) start afresh
    assert [(_ids(g, b.nodes), b.first_year, b.last_year, b.tokens, b.n_cut) for b in blocks] == [
        (["a"], 2001, 2001, 8, 0), (["big"], 2002, 2002, 16, 1), (["b", "c"], 2003, 2004, 14, 0)]
    assert blocks[1].text == "Big one (2002): " + " ".join(f"w{i}" for i in range(1, 14))
    assert blocks[2].text == "Paper b (2003): one two three four five\n[untitled record c] (2004): (no abstract)"
    # a budget of one token leaves the first word alone
    (one,) = pack_blocks(g, [1], budget=1, count_tokens=words)
    assert (one.text, one.tokens, one.n_cut) == ("Big", 1, 1)
    assert pack_blocks(g, [], budget=16, count_tokens=words) == []


def test_pack_blocks_budget_is_inclusive_and_counted_on_the_joined_text():
    g = CitationGraph([_p("a", 2001, 1), _p("b", 2002, 1), _p("c", 2003, 1)])
    words = TokenCounter("whitespace")
    # each entry is exactly 8 words = the budget: one full block each, none cut
    blocks = pack_blocks(g, [0, 1, 2], budget=8, count_tokens=words)
    assert [(_ids(g, b.nodes), b.tokens, b.n_cut) for b in blocks] == [(["a"], 8, 0), (["b"], 8, 0), (["c"], 8, 0)]
    # counted in characters: "Paper a (2001): one two three four five" is 39, two entries and a newline 79
    by_chars = pack_blocks(g, [0, 1, 2], budget=79, count_tokens=len)
    assert [(_ids(g, b.nodes), b.tokens) for b in by_chars] == [(["a", "b"], 79), (["c"], 39)]
    assert [len(b.nodes) for b in pack_blocks(g, [0, 1, 2], budget=78, count_tokens=len)] == [1, 1, 1]
    # an entry over 20 characters loses words (90% of them each time, rounded down) until it fits:
    # 39 -> 34 -> 29 -> 23 -> 19 characters
    (cut,) = pack_blocks(g, [0], budget=20, count_tokens=len)
    assert (cut.text, cut.tokens, cut.n_cut) == ("Paper a (2001): one", 19, 1)


def test_pack_blocks_stops_cutting_at_one_word():
    # a single word can still be over the budget (5 characters > 3): it is kept as it is, after a bounded number
    # of counts (the cut must not loop on a word it cannot shorten)
    g = CitationGraph([_p("a", 2001, 1)])
    calls = []

    def counted(text):
        calls.append(text)
        assert len(calls) < 50, "the cut does not terminate"
        return len(text)

    (block,) = pack_blocks(g, [0], budget=3, count_tokens=counted)
    assert (block.text, block.tokens, block.n_cut) == ("Paper", 5, 1)


def test_crit_ka_empty_summaries_are_asked_again_on_a_rerun(tmp_path):
    """Issue 21 C: an empty summary (a failed block) used to be replayed from calls.jsonl on every re-run."""
    g = _graph()
    hood = neighbourhood(g, [g.index[r] for r in ("r1", "r2", "r3")], survey_nodes=[g.index["s"]],
                         survey_year=2016)
    words = TokenCounter("whitespace")
    blocks = pack_blocks(g, crit_candidates(g, hood, alpha=75, beta=75).nodes, budget=16, count_tokens=words)
    config = KAConfig(length=20, tokenizer="whitespace")
    state = {"fixed": False}

    def reply(messages, settings, index):  # one backend identity before and after the fix
        return _summary_reply(messages, settings, index) if state["fixed"] else "   "

    def summariser(cache):
        return Summariser(load_backend("scripted", replies=reply), config, words, cache)

    with CallCache.load(tmp_path / "calls.jsonl") as cache:
        broken = summariser(cache).crit_ka(blocks)
    assert broken.text == "" and broken.errors == ["summary of block [2010-2013] failed",
                                                   "summary of block [2015-2015] failed"]
    state["fixed"] = True
    with CallCache.load(tmp_path / "calls.jsonl") as cache:
        fixed = summariser(cache).crit_ka(blocks)
        assert cache.counts == {"reused": 0, "retried": 2, "made": 1}  # 2 summaries again + the compression
    assert fixed.errors == [] and fixed.text.startswith("compressed: word")
    with CallCache.load(tmp_path / "calls.jsonl", keep_failed=True) as cache:  # score --keep-failed
        state["fixed"] = False
        kept = summariser(cache).crit_ka(blocks)
        assert cache.counts == {"reused": 3, "retried": 0, "made": 0} and kept.text == fixed.text
    assert empty_answer(None, Generation(" \n", "stop", None)) == "empty answer"
    assert empty_answer(None, Generation("x", "stop", None)) is None


def test_survey_record_flags_a_text_reference_list_shorter_than_its_citations():
    """Issue 21 E: the text cites [1]-[4] but its reference section holds 3 entries (one lost): the KA record
    says so; a list from the ``references`` column is not checked (None)."""
    g = _graph()
    text = ("# The survey\n\nWe build on [1], [2] and [3-4].\n\n## References\n\n"
            "[1] Author r1. 2010. Paper r1. Venue.\n[2] Author r2. 2012. Paper r2. Venue.\n"
            "[3] Author r3. 2014. Paper r3. Venue.\n")
    record = build_survey_ka(g, Resolver(g.papers), SurveyKAInput("p1", "The survey", (), text), "comprehensiveness",
                             KAConfig(), counter=TokenCounter("whitespace"))
    assert (record["reference_source"], record["n_references"]) == ("text", 3)
    assert (record["cited_up_to"], record["reference_shortfall"]) == (4, 1)
    column = build_survey_ka(g, Resolver(g.papers), SurveyKAInput("p1", "The survey", ("Author r1 (2010). Paper r1.",),
                                                                 text), "comprehensiveness", KAConfig(),
                             counter=TokenCounter("whitespace"))
    assert (column["reference_source"], column["cited_up_to"], column["reference_shortfall"]) == ("column", None, None)

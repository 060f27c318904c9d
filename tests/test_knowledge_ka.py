"""Comp-KA and Crit-KA on hand-made graphs with answers worked out by hand (SurveyReview App. F)."""

from __future__ import annotations

import numpy as np
import pytest

from surveyalign.backends import load_backend
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
from surveyalign.knowledge.summarise import Summariser, TokenCounter


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
    with pytest.raises(ValueError, match="count_tokens"):
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
    hood = neighbourhood(g, [])
    assert hood.candidates.size == 0 and hood.n_neighbourhood == 0
    comp = comp_ka(g, hood)
    assert comp.text == "" and comp.top == []


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


def _scripted():
    def reply(messages, settings, index):
        text = messages[0]["content"]
        if text.startswith("The notes below"):
            return "compressed: " + " ".join(["word"] * 50)
        first = text.split("between ")[1].split(" and")[0]
        return f"summary from {first}"
    return load_backend("scripted", replies=reply)


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


def test_blocks_counted_with_the_judge_tokenizer(tiny_model_dir):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    counter = TokenCounter(str(tiny_model_dir))
    text = "Paper r1 (2010): one two three four five"
    assert counter(text) == len(tokenizer(text, add_special_tokens=False)["input_ids"])
    cut, was_cut = counter.truncate(text, 3)
    assert was_cut and counter(cut) <= 3 and text.startswith(cut.strip()[:3])
    g = _graph()
    hood = neighbourhood(g, [g.index[r] for r in ("r1", "r2", "r3")], survey_year=2016)
    nodes = crit_candidates(g, hood, alpha=75, beta=75).nodes
    budget = counter(text) * 2 + 2
    blocks = pack_blocks(g, nodes, budget=budget, count_tokens=counter)
    assert all(b.tokens <= budget for b in blocks) and sum(len(b.nodes) for b in blocks) == len(nodes)
    assert [b.tokens for b in blocks] == [counter(b.text) for b in blocks]


def test_crit_ka_through_the_transformers_backend_on_the_tiny_model(tiny_model_dir, tmp_path):
    g = _graph()
    hood = neighbourhood(g, [g.index[r] for r in ("r1", "r2", "r3")], survey_year=2016)
    counter = TokenCounter(str(tiny_model_dir))
    blocks = pack_blocks(g, crit_candidates(g, hood, alpha=75, beta=75).nodes, budget=40, count_tokens=counter)
    config = KAConfig(summary_tokens=8, length=12, tokenizer=str(tiny_model_dir))
    backend = load_backend("transformers", model=str(tiny_model_dir), device="cpu")
    with CallCache.load(tmp_path / "calls.jsonl") as cache:
        result = Summariser(backend, config, counter, cache).crit_ka(blocks)
    made = result.n_calls
    assert made == len(blocks) + (1 if any(b["summary_ok"] for b in result.blocks) else 0)
    assert len(result.errors) == sum(not b["summary_ok"] for b in result.blocks) + (not result.text and made > len(blocks))
    assert result.tokens <= 12 and result.tokens == (counter(result.text) if result.text else 0)
    again = Summariser(backend, config, counter, CallCache.load(tmp_path / "calls.jsonl")).crit_ka(blocks)
    assert (again.n_calls, again.text) == (0, result.text)

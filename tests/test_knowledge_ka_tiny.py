"""Crit-KA with the judge's own tokenizer and the transformers backend on the tiny model (SurveyReview App. F.2).

Kept apart from tests/test_knowledge_ka.py (hand-made graphs, whitespace tokens) because building the tiny model
costs seconds: the mutation check of surveyalign/knowledge/ka.py (benchmarks/mutation.py) runs the fast file only.
"""

from __future__ import annotations

from surveyalign.backends import load_backend
from surveyalign.calls import CallCache
from surveyalign.documents import Paper
from surveyalign.knowledge.config import KAConfig
from surveyalign.knowledge.graph import CitationGraph
from surveyalign.knowledge.ka import crit_candidates, neighbourhood, pack_blocks
from surveyalign.knowledge.summarise import Summariser, TokenCounter


# the graph of tests/test_knowledge_ka.py
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

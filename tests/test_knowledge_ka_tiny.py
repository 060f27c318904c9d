"""Crit-KA with the judge's own tokenizer and the transformers backend on the tiny model (SurveyReview App. F.2).

Kept apart from tests/test_knowledge_ka.py (hand-made graphs, whitespace tokens) because building the tiny model
costs seconds: the mutation check of surveyalign/knowledge/ka.py (benchmarks/mutation.py) runs the fast file only.
"""

from __future__ import annotations

from test_knowledge_ka import _graph  # the hand-made graph, one copy

from surveyalign.backends import load_backend
from surveyalign.calls import CallCache
from surveyalign.knowledge.config import KAConfig
from surveyalign.knowledge.ka import crit_candidates, neighbourhood, pack_blocks
from surveyalign.knowledge.summarise import Summariser, TokenCounter


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
    # resumed with the failed (empty) answers of the random model kept: nothing asked again
    kept = CallCache.load(tmp_path / "calls.jsonl", keep_failed=True)
    again = Summariser(backend, config, counter, kept).crit_ka(blocks)
    assert (again.n_calls, again.text) == (0, result.text)
    # without keep_failed, every empty summary is asked again (issue 21 C), the others reused
    failed = sum(not b["summary_ok"] for b in result.blocks)
    retry = CallCache.load(tmp_path / "calls.jsonl")
    Summariser(backend, config, counter, retry).crit_ka(blocks)
    assert retry.counts["retried"] >= failed and retry.counts["reused"] >= len(blocks) - failed

"""--plan and --max-cost edges (surveyalign/calls/budget.py), by hand with the shipped configs/prices.yaml (gpt-5.2:
1.75 / 14.00 USD per million tokens; gpt-5-mini, unverified: batch 0.125 / 1.00): calls grouped by dimension, else
namespace, else "-"; models matched by prefix, unpriced and unverified ones listed; the printed plan line by line; the
cap's boundary (a projection equal to the cap is sent), the smaller step of single units, and its stop message."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from surveyalign.calls import CallPlan, CostCap, estimate_calls, load_prices
from surveyalign.calls.budget import CHARS_PER_TOKEN, chars_per_token_count


@dataclass
class _Call:
    key: str
    model: str | None
    prompt: int
    completion: int
    batch: bool = False
    dimension: str | None = None
    namespace: str | None = None


def _plan(**kwargs):
    calls = [
        _Call("c1", "openai/gpt-5.2", 10_000, 1_000, dimension="readability"),
        _Call("c2", "gpt-5-mini-2026-01-01", 20_000, 5_000, batch=True, dimension="readability"),
        _Call("c3", None, 300, 30, namespace="rqs"),
        _Call("c4", "/models/Qwen3-32B", 10, 1),
        _Call("c5", "openai/gpt-5.2", 10_000, 1_000, dimension="readability", namespace="ignored"),
    ]
    return estimate_calls(calls, prompt_tokens=lambda c: c.prompt, completion_tokens=lambda c: c.completion,
                          prices=load_prices(), model_of=lambda c: c.model, batch_of=lambda c: c.batch, **kwargs)


def test_chars_per_token_count_by_hand():
    assert CHARS_PER_TOKEN == 4.0
    assert chars_per_token_count([{"role": "user", "content": "x" * 400}]) == 100 + 4  # exactly 100 tokens
    # 5 characters -> 2 tokens (rounded up); a message without content still pays its 4 role tokens; a number
    # counts by its printed form
    assert chars_per_token_count([{"role": "system", "content": "abcde"}, {"role": "user"},
                                  {"role": "user", "content": None}]) == 2 + 12
    assert chars_per_token_count([{"role": "user", "content": 123456789}]) == 3 + 4
    assert chars_per_token_count([]) == 0


def test_estimate_groups_prices_and_lists_models():
    plan = _plan(seconds_per_call=30.0, in_flight=0)
    one, mini_batch = (10_000 * 1.75 + 1_000 * 14.0) / 1e6, (20_000 * 0.125 + 5_000 * 1.00) / 1e6
    assert (plan.calls, plan.prompt_tokens, plan.completion_tokens, plan.total_tokens) == (5, 40_310, 7_031, 47_341)
    assert plan.cost_usd == pytest.approx(2 * one + mini_batch) == pytest.approx(0.0705)
    assert list(plan.by_dimension) == ["readability", "rqs", "-"]
    assert plan.by_dimension["readability"] == {"calls": 3, "prompt_tokens": 40_000, "completion_tokens": 7_000,
                                                "cost_usd": pytest.approx(0.0705)}
    assert plan.by_dimension["rqs"] == {"calls": 1, "prompt_tokens": 300, "completion_tokens": 30, "cost_usd": None}
    assert plan.by_dimension["-"] == {"calls": 1, "prompt_tokens": 10, "completion_tokens": 1, "cost_usd": None}
    assert plan.unpriced_models == ["/models/Qwen3-32B", "unknown"]
    assert plan.unverified_prices == ["gpt-5-mini"]
    assert plan.seconds == pytest.approx(150.0)  # 5 calls x 30 s / max(1, 0 in flight)
    assert plan.prices_as_of == "2026-12-01"
    assert _plan(seconds_per_call=30.0, in_flight=3).seconds == pytest.approx(50.0)
    assert _plan(seconds_per_call=0.0).seconds == 0.0  # measured as instant, not unknown
    assert _plan().seconds is None


def test_estimate_of_no_calls():
    plan = estimate_calls([], prompt_tokens=len, completion_tokens=len, prices=load_prices(), model_of=str,
                          seconds_per_call=2.0, in_flight=4)
    assert (plan.calls, plan.cost_usd, plan.seconds, plan.by_dimension) == (0, None, None, {})
    assert (plan.token_source, plan.completion_source) == ("tokenizer", "max_new_tokens (upper bound)")


def test_each_model_is_looked_up_once():
    class _Counting:
        def __init__(self, table):
            self.table, self.looked, self.as_of = table, [], table.as_of

        def lookup(self, model):
            self.looked.append(model)
            return self.table.lookup(model)

    prices = _Counting(load_prices())
    calls = [_Call(f"c{i}", "gpt-5.2" if i % 2 else None, 1, 1) for i in range(6)]
    plan = estimate_calls(calls, prompt_tokens=lambda c: 1, completion_tokens=lambda c: 1, prices=prices,
                          model_of=lambda c: c.model)
    assert prices.looked == [None, "gpt-5.2"] and plan.unpriced_models == ["unknown"]
    assert plan.cost_usd == pytest.approx(3 * (1.75 + 14.0) / 1e6)


def test_plan_lines_by_hand():
    plan = _plan(seconds_per_call=30.0, in_flight=0)
    assert plan.lines(spent_usd=0.25, cached_calls=7) == [
        "plan: 5 call(s) to make (7 already answered in the run folder)",
        "  tokens: 40,310 prompt (tokenizer) + 7,031 completion (max_new_tokens (upper bound)) = 47,341",
        # issue 22: a model without a price makes the total unknown; the priced sum is never the headline
        ("  estimated cost: unknown: no price for /models/Qwen3-32B, unknown; the priced calls alone: $0.0705 "
         "(unverified price): gpt-5-mini (prices as of 2026-12-01); already spent in this run: $0.2500"),
        "  no price for: /models/Qwen3-32B, unknown (add them with --prices FILE)",
        "  estimated time: 2.5 min",
        "  readability: 3 call(s), 40,000 + 7,000 tokens, $0.0705",
        "  rqs: 1 call(s), 300 + 30 tokens, -",
        "  -: 1 call(s), 10 + 1 tokens, -",
    ]
    local = CallPlan(calls=2, prompt_tokens=1_234_567, completion_tokens=8, unverified_prices=["gpt-5-mini"],
                     token_source="4 characters per token", completion_source="mean of the 3 answers so far")
    assert local.lines() == [
        "plan: 2 call(s) to make (0 already answered in the run folder)",
        ("  tokens: 1,234,567 prompt (4 characters per token) + 8 completion (mean of the 3 answers so far) = "
         "1,234,575"),
        "  estimated cost: no price (local engine: GPU time only)",
        "  estimated time: unknown (no answer timed yet in this run)",
    ]
    assert local.lines(spent_usd=0.0)[2] == "  estimated cost: no price (local engine: GPU time only)"
    # no priced call at all: nothing partial to show
    assert CallPlan(calls=1, unpriced_models=["/models/Qwen3-32B"]).lines()[2] == (
        "  estimated cost: no price (local engine: GPU time only)")
    priced = CallPlan(calls=1, cost_usd=1234.5, seconds=90.0)
    assert priced.lines()[2:] == ["  estimated cost: $1,234.5000", "  estimated time: 1.5 min"]


def test_plan_to_dict():
    plan = CallPlan(calls=3, prompt_tokens=10, completion_tokens=5, cost_usd=0.123456789)
    d = plan.to_dict()
    assert d["cost_usd"] == 0.123457 and d["total_tokens"] == 15 and d["calls"] == 3 and d["seconds"] is None
    assert CallPlan().to_dict()["cost_usd"] is None and CallPlan().to_dict()["total_tokens"] == 0


@dataclass
class _Unit:
    unit_id: str
    stage: str = "judge"
    cost: float = 0.0


def test_cap_sends_a_chunk_whose_projection_equals_the_cap():
    calls = [_Unit(f"u{i}") for i in range(5)]
    cap = CostCap(1.0, 0.5, lambda c: 0.25)
    sent = []
    for chunk in cap.chunks(calls, size=2):
        sent.append([c.unit_id for c in chunk])
        for _ in chunk:
            cap.add(0.25)
    # 0.5 + 2 x 0.25 = 1.0: sent; then 1.0 + 0.25 > 1.0: not even one unit fits
    assert sent == [["u0", "u1"]] and cap.stopped and cap.held_back == 3
    assert cap.spent_usd == 1.0


def test_cap_sends_the_units_of_an_over_cap_chunk_that_still_fit():
    calls = [_Unit(f"u{i}") for i in range(6)]
    cap = CostCap(1.0, 0.0, lambda c: 0.25)
    chunks = [[c.unit_id for c in chunk] for chunk in cap.chunks(calls, size=8)]
    # the chunk of 6 would project 1.5: its units go one by one while they fit (4 x 0.25 = 1.0)
    assert chunks == [["u0", "u1", "u2", "u3"]] and cap.stopped and cap.held_back == 2


def test_cap_never_splits_a_unit_and_keeps_stages_apart():
    calls = [_Unit("u1"), _Unit("u1"), _Unit("u1"), _Unit("u1", "rqs"), _Unit("u2"), _Unit("u2")]
    cap = CostCap(100.0, 0.0, lambda c: 1.0)
    chunks = [[(c.unit_id, c.stage) for c in chunk] for chunk in cap.chunks(calls, size=2)]
    # a unit bigger than the chunk size goes alone; (unit, stage) is the unit
    assert chunks == [[("u1", "judge")] * 3, [("u1", "rqs")], [("u2", "judge")] * 2]
    assert not cap.stopped and cap.held_back == 0
    bare = CostCap(100.0, 0.0, lambda c: 1.0)  # calls without unit_id / stage: one unit
    assert [len(ch) for ch in bare.chunks([object(), object(), object()], size=1)] == [3]


def test_cap_held_back_counts_what_was_sent_before():
    calls = [_Unit(f"u{i // 2}") for i in range(8)]  # 4 units x 2
    cap = CostCap(0.7, 0.0, lambda c: 0.1)
    sizes = []
    for chunk in cap.chunks(calls, size=2):
        sizes.append(len(chunk))
        for _ in chunk:
            cap.add(0.1)
    # units of 0.2: 0.2, 0.4, 0.6 sent; 0.8 > 0.7
    assert sizes == [2, 2, 2] and cap.held_back == 2


def test_cap_add_allows_and_refuses():
    with pytest.raises(ValueError, match=r"--max-cost must be > 0 USD, got -1"):
        CostCap(-1, 0.0, lambda c: 0.0)
    cap = CostCap(1.0, 0.25, lambda c: 0.25)
    assert (cap.cap_usd, cap.spent_usd, cap.stopped, cap.held_back) == (1.0, 0.25, False, 0)
    cap.add(None)
    cap.add(0.25)
    assert cap.spent_usd == 0.5
    assert cap.allows([1, 2]) and not cap.stopped  # 0.5 + 0.5 = 1.0 fits
    assert cap.allows([1], extra_usd=0.25) and not cap.stopped
    assert not cap.allows([1], extra_usd=0.5) and cap.stopped
    assert cap.projected_total([1, 2, 3]) == 1.25


def test_stop_message_by_hand():
    cap = CostCap(0.55, 0.5, lambda c: 0.05)
    assert cap.stop_message([1, 2], "judge", "runs/x/calls.jsonl") == (
        "stopped at the cost cap: --max-cost 0.55 USD would be passed (judge stage: $0.5000 spent, 2 call(s) "
        "left, about $0.6000 in all); the answers so far are kept in runs/x/calls.jsonl; run again with "
        "--max-cost 0.66 or more to finish (the estimate assumes answers of max_new_tokens for a stage with no "
        "answer yet, an upper bound; a later run uses the mean answer length so far)")
    # the suggestion is never below the cap itself
    assert "--max-cost 2.00 or more to finish (" in CostCap(2.0, 0.5, lambda c: 0.05).stop_message([], "rqs", "d")


class _Bare:
    """A call with nothing but a price: no dimension, namespace, unit or stage."""

    def __init__(self, cost: float) -> None:
        self.cost = cost


def test_a_call_without_dimension_or_namespace_and_the_default_sources():
    plan = estimate_calls([_Bare(0.0), _Bare(0.0)], prompt_tokens=lambda c: 5, completion_tokens=lambda c: 1,
                          prices=load_prices(), model_of=lambda c: "gpt-5.2", seconds_per_call=4.0)
    assert list(plan.by_dimension) == ["-"] and plan.by_dimension["-"]["calls"] == 2
    assert plan.seconds == 8.0  # one call in flight by default
    sourced = estimate_calls([_Bare(0.0)], prompt_tokens=lambda c: 5, completion_tokens=lambda c: 1,
                             prices=load_prices(), model_of=lambda c: None, token_source="4 characters per token",
                             completion_source="mean of the 9 answers so far")
    assert (sourced.token_source, sourced.completion_source) == ("4 characters per token",
                                                                 "mean of the 9 answers so far")


def test_plan_lines_list_every_unverified_price_and_long_times():
    plan = CallPlan(calls=1, cost_usd=0.5, unverified_prices=["gpt-5-mini", "other-model"], seconds=600.0)
    assert plan.lines()[2:] == ["  estimated cost: $0.5000 (unverified price): gpt-5-mini, other-model",
                                "  estimated time: 10.0 min"]


def test_the_cap_prices_each_call_by_itself():
    calls = [_Bare(0.5), _Bare(0.25), _Bare(0.125), _Bare(0.0625)]
    cap = CostCap(0.75, 0.0, lambda c: c.cost)
    assert cap.projected_total(calls) == 0.9375
    assert cap.allows(calls[:2]) and not cap.allows(calls[:3])
    # calls without unit or stage are one unit: 0.9375 > 0.75, and that one unit does not fit either
    cap = CostCap(0.75, 0.0, lambda c: c.cost)
    assert list(cap.chunks(calls, size=8)) == [] and cap.stopped and cap.held_back == 4
    units = [_Unit("u1"), _Unit("u2"), _Unit("u3")]
    for unit, cost in zip(units, (0.5, 0.25, 0.125)):
        unit.cost = cost
    cap = CostCap(0.8, 0.0, lambda c: c.cost)
    assert [[c.unit_id for c in ch] for ch in cap.chunks(units, size=8)] == [["u1", "u2"]] and cap.held_back == 1


def test_answers_cheaper_than_estimated_let_the_next_chunk_go():
    calls = [_Unit(f"u{i}") for i in range(5)]
    cap = CostCap(1.0, 0.5, lambda c: 0.25)
    sent = []
    for chunk in cap.chunks(calls, size=2):  # each chunk projects 0.5 + 0.5 = 1.0: on the cap, sent
        sent.append(len(chunk))
        cap.add(0.0)  # the answers cost nothing (a cached prompt, a free tier)
    assert sent == [2, 2, 1] and not cap.stopped and cap.held_back == 0


def test_the_smaller_step_keeps_the_stages_of_a_unit_apart():
    judge, rqs = _Unit("u1", "judge", 0.5), _Unit("u1", "rqs", 0.75)
    cap = CostCap(1.0, 0.0, lambda c: c.cost)
    assert [[(c.unit_id, c.stage) for c in ch] for ch in cap.chunks([judge, rqs], size=8)] == [[("u1", "judge")]]
    assert cap.held_back == 1


def test_merged_plans_by_hand():
    a = CallPlan(calls=1, prompt_tokens=10, completion_tokens=2, cost_usd=0.5, seconds=3.0, unpriced_models=["z", "a"],
                 by_dimension={"readability": {"calls": 1, "prompt_tokens": 10, "completion_tokens": 2,
                                               "cost_usd": 0.5}}, prices_as_of="")
    b = CallPlan(calls=2, prompt_tokens=20, completion_tokens=4, cost_usd=0.25, seconds=1.5, unpriced_models=["a"],
                 by_dimension={"readability": {"calls": 2, "prompt_tokens": 20, "completion_tokens": 4,
                                               "cost_usd": None},
                               "rqs": {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0, "cost_usd": None}},
                 completion_source="mean of the 2 answers so far", prices_as_of="2026-12-01")
    m = a.merged(b)
    assert (m.calls, m.prompt_tokens, m.completion_tokens, m.cost_usd, m.seconds) == (3, 30, 6, 0.75, 4.5)
    assert m.by_dimension == {"readability": {"calls": 3, "prompt_tokens": 30, "completion_tokens": 6,
                                              "cost_usd": 0.5},
                              "rqs": {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0, "cost_usd": None}}
    assert m.unpriced_models == ["a", "z"] and m.unverified_prices == []
    assert (m.token_source, m.completion_source, m.prices_as_of) == ("tokenizer", "max_new_tokens (upper bound)",
                                                                     "2026-12-01")
    assert b.by_dimension["readability"]["calls"] == 2 and b.by_dimension["rqs"]["cost_usd"] is None
    counted = CallPlan(calls=1, token_source="4 characters per token").merged(CallPlan(calls=1))
    assert counted.token_source == "4 characters per token"
    assert CallPlan(prices_as_of="2026-01-01").merged(CallPlan(prices_as_of="2026-12-01")).prices_as_of == "2026-01-01"
    assert CallPlan(cost_usd=None, seconds=None).merged(CallPlan(cost_usd=0.0, seconds=0.0)).cost_usd == 0.0
    # the other side's row costs add, its unverified prices join, its way of counting tokens shows
    row = {"calls": 1, "prompt_tokens": 1, "completion_tokens": 1}
    x = CallPlan(calls=1, unverified_prices=["b"], by_dimension={"rqs": {**row, "cost_usd": 0.5}})
    y = CallPlan(calls=1, unverified_prices=["a"], token_source="4 characters per token",
                 by_dimension={"rqs": {**row, "cost_usd": 0.25}})
    xy = x.merged(y)
    assert xy.by_dimension["rqs"]["cost_usd"] == 0.75 and xy.unverified_prices == ["a", "b"]
    assert xy.token_source == "4 characters per token"
    # a side without calls takes the completion source of the side with them
    later = CallPlan().merged(CallPlan(calls=2, completion_source="mean of the 4 answers so far"))
    assert later.completion_source == "mean of the 4 answers so far"


def test_to_dict_rounds_seconds_and_rows_to_six_digits():
    plan = CallPlan(calls=1, seconds=1.23456789, cost_usd=None,
                    by_dimension={"readability": {"calls": 1, "prompt_tokens": 1, "completion_tokens": 1,
                                                  "cost_usd": 0.1234564999},
                                  "rqs": {"calls": 1, "prompt_tokens": 1, "completion_tokens": 1, "cost_usd": None}})
    d = plan.to_dict()
    assert d["seconds"] == 1.234568 and d["cost_usd"] is None
    assert d["by_dimension"]["readability"]["cost_usd"] == 0.123456 and d["by_dimension"]["rqs"]["cost_usd"] is None
    assert plan.by_dimension["readability"]["cost_usd"] == 0.1234564999  # the plan itself keeps the full value


def test_gpu_hours_in_the_plan_lines_merge_and_dict():
    plan = CallPlan(calls=4, seconds=120.0, gpu_hours=0.1234567)
    assert plan.lines()[-1] == "  estimated GPU-hours: 0.1235 (local engines on GPUs)"
    assert plan.lines()[-2] == "  estimated time: 2.0 min"
    assert CallPlan(calls=1, gpu_hours=None).lines()[-1].startswith("  estimated time:")  # no line without GPUs
    assert plan.to_dict()["gpu_hours"] == 0.123457 and CallPlan().to_dict()["gpu_hours"] is None
    assert plan.merged(CallPlan(gpu_hours=0.5)).gpu_hours == pytest.approx(0.6234567)
    assert plan.merged(CallPlan()).gpu_hours == pytest.approx(0.1234567)
    assert CallPlan().merged(CallPlan(gpu_hours=0.25)).gpu_hours == 0.25
    assert CallPlan().merged(CallPlan()).gpu_hours is None

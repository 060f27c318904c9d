"""Cost summary and its printed lines on five hand-priced calls (issue 27): cache reads, a batch call, a provider
prefix with a dated snapshot, an unpriced local model, a call without token counts, GPU-hours."""

from __future__ import annotations

import pytest

from surveyalign.calls.cost import (
    ModelPrice,
    PriceTable,
    cost_lines,
    gpu_hours,
    summarize_costs,
)

PRICES = PriceTable(as_of="2026-01-15", currency="USD", files=["prices.yaml"], models={
    "judge-a": ModelPrice(input=2.0, output=8.0, cached_input=0.5, batch_input=1.0, batch_output=4.0),
    "judge-b": ModelPrice(input=1.0, output=1.0, unverified=True)})
RECORDS = [
    # 600 fresh x $2 + 400 cached x $0.5 + 200 out x $8 per million = $0.003
    {"model": "judge-a", "dimension": "readability", "prompt_tokens": 1000, "completion_tokens": 200,
     "cached_tokens": 400},
    # batch: 1000 x $1 + 100 x $4 per million = $0.0014
    {"model": "judge-a", "dimension": "readability", "prompt_tokens": 1000, "completion_tokens": 100,
     "batch_id": "b1"},
    # priced as judge-b (provider prefix dropped, dated snapshot): 1000 x $1 per million = $0.001
    {"model": "openai/judge-b-2026-01-01", "dimension": "structure", "prompt_tokens": 500, "completion_tokens": 500},
    {"model": "local-llama", "dimension": "structure", "prompt_tokens": 10, "completion_tokens": 5},  # no price
    {"model": "judge-a", "namespace": "prism"},  # failed before any token was counted: $0
]


def _summary():
    return summarize_costs(RECORDS, PRICES, model_of=lambda r: r.get("model"),
                           units_per_dimension={"readability": 2, "structure": 2})


def test_totals_per_dimension_and_per_judge():
    s = _summary()
    assert s["total"] == {"calls": 5, "batch_calls": 1, "prompt_tokens": 2510, "completion_tokens": 805,
                          "cached_tokens": 400, "calls_without_usage": 1, "cost_usd": 0.0054, "units": 4, "retries": 0,
                          "total_tokens": 3315, "cost_per_1000_units": 1.35,  # $0.0054 * 1000 / 4 units
                          # the 400 cache reads would have cost 400 x (input - cached_input) more: $0.0006
                          "cache_write_tokens": 0, "cache_hits": 1, "uncached_cost_usd": 0.006,
                          "cache_saving_usd": 0.0006}
    read, struct, prism = (s["by_dimension"][d] for d in ("readability", "structure", "prism"))
    assert (read["calls"], read["cost_usd"], read["cost_per_1000_units"]) == (2, 0.0044, 2.2)
    assert (struct["calls"], struct["prompt_tokens"], struct["cost_usd"], struct["cost_per_1000_units"]) == (
        2, 510, 0.001, 0.5)
    assert (prism["calls_without_usage"], prism["cost_usd"], prism["units"], prism["cost_per_1000_units"]) == (
        1, 0.0, 0, None)
    a, b, local = (s["by_judge"][m] for m in ("judge-a", "openai/judge-b-2026-01-01", "local-llama"))
    assert (a["calls"], a["batch_calls"], a["cost_usd"], a["priced_as"], a["unverified_price"]) == (
        3, 1, 0.0044, "judge-a", False)
    assert (b["cost_usd"], b["priced_as"], b["unverified_price"], b["cost_per_1000_units"]) == (
        0.001, "judge-b", True, 0.25)
    assert (local["cost_usd"], local["priced_as"], local["unverified_price"]) == (None, None, False)
    assert s["unpriced_models"] == ["local-llama"] and s["unverified_prices"] == ["judge-b"]
    assert s["prices"] == {"as_of": "2026-01-15", "currency": "USD", "files": ["prices.yaml"]}


def test_cost_lines_in_full():
    s = _summary()
    s["gpu_hours"] = {"llama-70b": gpu_hours(1800, 4)}  # half an hour on 4 GPUs
    assert cost_lines(s) == [
        ("tokens: 2,510 prompt + 805 completion over 5 call(s) (1 in provider batches); cost $0.0054 "
        "(unverified price) = $1.35 per 1,000 units (prices as of 2026-01-15); 1 call(s) without a token count"),
        ("  prompt cache: 1 of 5 call(s) read from it, 400 of 2,510 prompt tokens (15.9%) served from cache, 0 written; "
         "saved $0.0006 of $0.0060 without it"),
        "  per dimension: readability 2,300 tokens $0.0044; structure 1,015 tokens $0.0010; prism 0 tokens $0.0000",
        ("  per judge: judge-a 3 call(s) $0.0044; openai/judge-b-2026-01-01 1 call(s) $0.0010 (unverified price); "
        "local-llama 1 call(s)"),
        "  GPU-hours of local engines: llama-70b 2.0000"]
    unpriced = summarize_costs(RECORDS[3:4], PRICES, model_of=lambda r: r.get("model"))
    assert cost_lines(unpriced) == [
        ("tokens: 10 prompt + 5 completion over 1 call(s) (0 in provider batches); cost no price "
        "(prices as of 2026-01-15)"),
        "  per dimension: structure 15 tokens",
        "  per judge: local-llama 1 call(s)"]


def test_gpu_hours_and_its_limits():
    assert gpu_hours(0, 1) == 0.0 and gpu_hours(7200, 1) == 2.0
    for seconds, gpus in ((-1.0, 1), (10.0, 0)):
        with pytest.raises(ValueError, match=f"^wall_seconds must be >= 0 and gpus >= 1, got {seconds} and {gpus}$"):
            gpu_hours(seconds, gpus)


def test_usage_counting_rounding_and_fallback_names():
    tiny = PriceTable(as_of="2026-01-15", currency="USD", models={"m": ModelPrice(input=0.1, output=0.1)})
    records = [{"model": "m", "dimension": "d", "prompt_tokens": 7},  # 7 x $0.1 per million = $0.0000007
               {"model": "m", "dimension": "d", "completion_tokens": 0},  # a count, even of 0, is usage
               {"model": None}, {"model": None, "namespace": ""}]  # no usage, no model, no dimension
    s = summarize_costs(records, tiny, model_of=lambda r: r.get("model"), units_per_dimension={"d": 3})
    d = s["by_dimension"]["d"]
    # costs are rounded to 1e-6 USD: $0.0000007 shows as $0.000001; per 1,000 units 7e-7 * 1000 / 3 = 0.000233
    assert (d["calls_without_usage"], d["cost_usd"], d["cost_per_1000_units"]) == (0, 1e-06, 0.000233)
    assert s["total"]["calls_without_usage"] == 2 and set(s["by_dimension"]) == {"d", "-"}
    assert s["by_judge"]["unknown"]["calls"] == 2 and s["unpriced_models"] == ["unknown"]
    custom = summarize_costs(records[:1] + [{"model": "m", "stage": "prism"}], tiny, model_of=lambda r: "m",
                             dimension_of=lambda r: r.get("stage"))
    assert list(custom["by_dimension"]) == ["d", "prism"]  # no stage: the record's own dimension
    two = {**s, "gpu_hours": {"a": 1.0, "b": 0.5}}
    assert cost_lines(two)[-1] == "  GPU-hours of local engines: a 1.0000; b 0.5000"


def test_prices_batch_defaults_zero_input_and_count_checks():
    plain = ModelPrice(input=2.0, output=8.0)
    assert plain.cost(1000, 100, batch=True) == pytest.approx((1000 * 2 + 100 * 8) / 1e6)  # no batch price listed
    # a free prompt (input 0) with a priced cache read: the batch discount cannot be a ratio to 0, so none applies
    free = ModelPrice(input=0.0, output=1.0, cached_input=0.5)
    assert free.cost(100, 0, 100, batch=True) == pytest.approx(100 * 0.5 / 1e6)
    for counts in ((-1, 0, 0), (0, -1, 0), (5, 0, -1), (5, 0, 6)):
        with pytest.raises(ValueError, match="token counts must be >= 0 with cached <= prompt"):
            plain.cost(*counts)
    assert PRICES.lookup("openai/judge-a")[0] == "judge-a"
    assert PRICES.lookup("hf/org/judge-a")[0] == "judge-a"  # only the last path segment is the model id
    assert PRICES.lookup("hf/org/judge-b-2026-01-01")[0] == "judge-b"
    assert PRICES.lookup("judge-c") is None and PRICES.lookup("") is None


def test_retried_attempts_are_counted_and_named():
    """Issue 22: every record is a sent attempt; a key seen before is a retry (records without a key never are)."""
    from surveyalign.calls.cost import cost_lines, load_prices, summarize_costs

    records = [{"key": "a", "prompt_tokens": 1000, "completion_tokens": 10},
               {"key": "b", "prompt_tokens": 500, "completion_tokens": 20},
               {"key": "a", "prompt_tokens": 1000, "completion_tokens": 30},
               {"key": "a", "prompt_tokens": 1000, "completion_tokens": 50},
               {"prompt_tokens": 1, "completion_tokens": 1}, {"prompt_tokens": 1, "completion_tokens": 1}]
    out = summarize_costs(records, load_prices(), model_of=lambda r: "gpt-5.2", dimension_of=lambda r: "rqs")
    assert out["total"]["calls"] == 6 and out["total"]["retries"] == 2
    assert out["by_dimension"]["rqs"]["retries"] == 2 and out["by_judge"]["gpt-5.2"]["retries"] == 2
    assert out["total"]["prompt_tokens"] == 3502 and out["total"]["completion_tokens"] == 112
    assert out["total"]["cost_usd"] == round((3502 * 1.75 + 112 * 14.0) / 1e6, 6) == 0.007697
    assert cost_lines(out)[0].endswith("; 2 of the calls were retries of a failed answer (each attempt is paid)")

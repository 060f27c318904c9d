"""The dated price table (configs/prices.yaml) and the token -> USD arithmetic of surveyalign/calls/cost.py: hand
computations per dimension, per judge and per 1,000 units; batch and cached prices; user overrides; one-line
errors naming the file and field."""

from __future__ import annotations

from pathlib import Path

import pytest

from surveyalign.calls.cost import (
    ModelPrice,
    call_cost,
    default_prices_path,
    gpu_hours,
    load_prices,
    summarize_costs,
)

REPO = Path(__file__).resolve().parents[1]


def test_shipped_table_is_dated_and_is_the_configs_file():
    table = load_prices()
    assert default_prices_path().resolve() == (REPO / "configs/prices.yaml").resolve()
    assert table.as_of == "2026-12-01" and table.currency == "USD"
    gpt = table.models["gpt-5.2"]
    assert (gpt.input, gpt.cached_input, gpt.output, gpt.batch_input, gpt.batch_output) == (1.75, 0.175, 14, 0.875, 7)
    assert table.lookup("claude-opus-4-5-20251101")[0] == "claude-opus-4-5"  # dated snapshot
    assert table.lookup("openai/gpt-5.2")[0] == "gpt-5.2"
    assert table.lookup("Qwen/Qwen3-32B") is None and table.lookup(None) is None


def test_cost_of_one_call_by_hand():
    price = ModelPrice(input=2.0, output=10.0, cached_input=0.5, batch_input=1.0, batch_output=5.0)
    # 16,000 prompt tokens of which 4,000 cached, 300 completion tokens
    assert price.cost(16_000, 300, 4_000) == pytest.approx((12_000 * 2 + 4_000 * 0.5 + 300 * 10) / 1e6)
    # through the batch API: input and output at the batch rates, cache reads discounted by the same 50%
    assert price.cost(16_000, 300, 4_000, batch=True) == pytest.approx((12_000 * 1 + 4_000 * 0.25 + 300 * 5) / 1e6)
    assert ModelPrice(input=1.0, output=1.0).cost(10, 10, 5) == pytest.approx(20 / 1e6)  # no cached price: input
    with pytest.raises(ValueError, match="cached <= prompt"):
        price.cost(10, 0, 11)
    assert call_cost({"prompt_tokens": 1000, "completion_tokens": 100, "batch_id": "batch_1"}, price) == \
        pytest.approx((1000 * 1 + 100 * 5) / 1e6)
    assert call_cost({"prompt_tokens": 1000}, None) is None


def test_summary_per_dimension_judge_and_1000_units():
    table = load_prices()
    records = [
        {"dimension": "readability", "stage": "judge", "prompt_tokens": 10_000, "completion_tokens": 200},
        {"dimension": "readability", "stage": "judge", "prompt_tokens": 10_000, "completion_tokens": 300,
         "batch_id": "batch_x"},
        {"dimension": "structure", "stage": "judge", "prompt_tokens": 8_000, "completion_tokens": 100,
         "cached_tokens": 8_000},
        {"dimension": "structure", "stage": "rqs", "prompt_tokens": 1_000, "completion_tokens": 50},
        {"dimension": "structure", "stage": "judge", "error": "HTTP 500"},  # failed: no usage
    ]
    models = {"judge": "claude-opus-4-5-20251101", "rqs": "my-local-model"}
    out = summarize_costs(records, table, model_of=lambda r: models[r["stage"]],
                          units_per_dimension={"readability": 2, "structure": 2})
    read = (10_000 * 5 + 200 * 25) / 1e6 + (10_000 * 2.5 + 300 * 12.5) / 1e6
    struct = (8_000 * 0.5 + 100 * 25) / 1e6
    assert out["by_dimension"]["readability"]["cost_usd"] == pytest.approx(read)
    assert out["by_dimension"]["readability"]["cost_per_1000_units"] == pytest.approx(read * 500)
    assert out["by_dimension"]["structure"]["cost_usd"] == pytest.approx(struct)  # the rqs model has no price
    assert out["by_dimension"]["structure"]["calls_without_usage"] == 1
    judge = out["by_judge"]["claude-opus-4-5-20251101"]
    assert judge["priced_as"] == "claude-opus-4-5" and judge["batch_calls"] == 1 and judge["calls"] == 4
    assert out["by_judge"]["my-local-model"]["cost_usd"] is None
    assert out["unpriced_models"] == ["my-local-model"]
    total = out["total"]
    assert (total["calls"], total["prompt_tokens"], total["completion_tokens"]) == (5, 29_000, 650)
    assert total["cost_usd"] == pytest.approx(read + struct, abs=1e-6)
    assert total["cost_per_1000_units"] == pytest.approx((read + struct) * 250, abs=1e-3)
    assert out["prices"]["as_of"] == "2026-12-01"


def test_user_table_overrides_model_by_model(tmp_path):
    mine = tmp_path / "prices.yaml"
    mine.write_text("as_of: '2027-01-15'\nmodels:\n  gpt-5.2: {input: 1.0, output: 8.0}\n"
                    "  my-model: {input: 0.1, output: 0.2}\ngpu_hour_usd: {H100: 2.5}\n")
    table = load_prices(override=mine)
    assert table.as_of == "2027-01-15" and table.models["gpt-5.2"].input == 1.0
    assert table.models["gpt-5.2"].batch_input is None  # replaced whole, not merged field by field
    assert table.models["claude-opus-4-5"].input == 5.0 and table.models["my-model"].output == 0.2
    assert table.gpu_hour_usd == {"H100": 2.5} and len(table.files) == 2
    assert gpu_hours(1800, 8) == 4.0


@pytest.mark.parametrize(("text", "message"), [
    ("as_of: x\nmodels:\n  m: {input: -1, output: 1}\n", "models.m.input: expected a number >= 0, got -1"),
    ("as_of: x\nmodels:\n  m: {input: 1}\n", "models.m.output: required"),
    ("as_of: x\nmodels:\n  m: {input: 1, output: 1, batch: 2}\n", "models.m: unknown field(s) batch"),
    ("as_of: x\nmodel: {}\n", "unknown key(s) model"),
    ("models: {}\n", "as_of: required"),
])
def test_bad_tables_fail_in_one_line_naming_file_and_field(tmp_path, text, message):
    bad = tmp_path / "bad.yaml"
    bad.write_text(text)
    with pytest.raises(ValueError, match="bad.yaml") as err:
        load_prices(bad)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_unverified_prices_are_marked_wherever_a_cost_is_printed(tmp_path):
    """gpt-5-mini's shipped price is from third-party pages only (unverified: true); claude-haiku-4-5's was
    confirmed on Anthropic's pages. A cost computed with an unverified price says so in the summary lines and in
    the --plan lines."""
    from surveyalign.calls import estimate_calls
    from surveyalign.calls.cost import cost_lines

    table = load_prices()
    assert table.models["gpt-5-mini"].unverified is True and table.models["claude-haiku-4-5"].unverified is False
    assert (table.models["claude-haiku-4-5"].input, table.models["claude-haiku-4-5"].output) == (1.0, 5.0)
    records = [{"key": "a", "dimension": "structure", "prompt_tokens": 1000, "completion_tokens": 100},
               {"key": "b", "dimension": "structure", "prompt_tokens": 3000, "completion_tokens": 0}]
    mini = summarize_costs(records, table, model_of=lambda r: "gpt-5-mini-2025-08-07")
    assert mini["unverified_prices"] == ["gpt-5-mini"] and mini["by_judge"]["gpt-5-mini-2025-08-07"]["unverified_price"]
    assert mini["total"]["cost_usd"] == pytest.approx((4000 * 0.25 + 100 * 2.0) / 1e6)
    lines = cost_lines(mini)
    assert "$0.0012 (unverified price)" in lines[0] and lines[2].endswith("(unverified price)")
    haiku = summarize_costs(records, table, model_of=lambda r: "claude-haiku-4-5")
    assert haiku["unverified_prices"] == [] and "unverified" not in " ".join(cost_lines(haiku))

    class C:
        namespace = "structure"
    plan = estimate_calls([C()], prompt_tokens=lambda c: 2000, completion_tokens=lambda c: 100, prices=table,
                          model_of=lambda c: "gpt-5-mini")
    assert plan.unverified_prices == ["gpt-5-mini"]
    assert "estimated cost: $0.0007 (unverified price): gpt-5-mini" in "\n".join(plan.lines())
    bad = tmp_path / "bad.yaml"
    bad.write_text("as_of: '2026-12-03'\nmodels:\n  m: {input: 1, output: 1, unverified: 'yes'}\n")
    with pytest.raises(ValueError, match=r"models\.m\.unverified: expected true or false"):
        load_prices(override=bad)

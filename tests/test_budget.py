"""--plan and --max-cost bookkeeping (surveyalign/calls/budget.py): estimates by hand, and a cap that sends whole
units while the projected total stays under it."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from surveyalign.calls import CostCap, estimate_calls, load_prices
from surveyalign.calls.budget import chars_per_token_count


@dataclass
class _Call:
    key: str
    unit_id: str
    dimension: str
    stage: str = "judge"


def test_estimate_by_hand():
    calls = [_Call(f"k{i}", f"u{i // 2}", "readability" if i < 4 else "structure") for i in range(6)]
    plan = estimate_calls(calls, prompt_tokens=lambda c: 1000, completion_tokens=lambda c: 100,
                          prices=load_prices(), model_of=lambda c: "gpt-5.2",
                          batch_of=lambda c: c.dimension == "structure", seconds_per_call=2.0, in_flight=3)
    one, batch = (1000 * 1.75 + 100 * 14) / 1e6, (1000 * 0.875 + 100 * 7) / 1e6
    assert (plan.calls, plan.prompt_tokens, plan.completion_tokens, plan.total_tokens) == (6, 6000, 600, 6600)
    assert plan.cost_usd == pytest.approx(4 * one + 2 * batch)
    assert plan.by_dimension["structure"]["cost_usd"] == pytest.approx(2 * batch)
    assert plan.seconds == pytest.approx(4.0) and plan.unpriced_models == []
    text = "\n".join(plan.lines(spent_usd=0.5, cached_calls=3))
    assert "6 call(s) to make (3 already answered" in text and "already spent in this run: $0.5000" in text
    local = estimate_calls(calls, prompt_tokens=lambda c: 10, completion_tokens=lambda c: 1, prices=load_prices(),
                           model_of=lambda c: "/models/Qwen3-32B")
    assert local.cost_usd is None and local.unpriced_models == ["/models/Qwen3-32B"] and local.seconds is None
    assert chars_per_token_count([{"role": "user", "content": "x" * 401}]) == 101 + 4


def test_cost_cap_sends_whole_units_until_the_projection_passes():
    calls = [_Call(f"k{i}", f"u{i // 2}", "readability") for i in range(10)]  # 5 units x K=2
    cap = CostCap(0.55, spent_usd=0.1, estimate=lambda c: 0.05)
    sent = []
    for chunk in cap.chunks(calls, size=4):
        assert len({c.unit_id for c in chunk}) * 2 == len(chunk)  # the K samples of a unit travel together
        sent += chunk
        for _ in chunk:
            cap.add(0.05)
    # 0.1 spent + 4 units x 0.1 = 0.5 <= 0.55; a fifth unit would make 0.6
    assert len(sent) == 8 and cap.stopped and cap.held_back == 2
    assert cap.projected_total(calls[8:]) == pytest.approx(0.6)
    with pytest.raises(ValueError, match="must be > 0"):
        CostCap(0, 0, lambda c: 0)
    everything = CostCap(10.0, 0.0, lambda c: 0.05)
    assert sum(len(ch) for ch in everything.chunks(calls, size=3)) == 10 and not everything.stopped

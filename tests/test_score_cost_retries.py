"""Issue 22: `score` counts every sent attempt (a failed answer asked again was paid each time), in its cap and in
its batch cost, by the rule of the calls layer (:meth:`surveyalign.calls.CallCache.attempts`)."""

from __future__ import annotations

import pytest

from surveyalign.backends import Backend, Generation, GenerationSettings
from surveyalign.calls import CallCache, load_prices, make_call
from surveyalign.calls.budget import CostCap
from surveyalign.calls.cost import cost_lines
from surveyalign.inference.spend import SUMMARISER_ROW, ScoreBudget, batch_cost


class _Hosted(Backend):
    name = "openai"

    def describe(self):
        return {"backend": "openai", "model": "gpt-5.2"}


def _call(unit: str, stage: str = "judge"):
    return make_call(_Hosted(), GenerationSettings(seed=0, max_new_tokens=64), stage=stage, unit_id=unit,
                     namespace="readability", messages=[{"role": "user", "content": unit}], sample=0,
                     identity={"backend": "t"})


def _answer(prompt: int, completion: int, text: str = "ok") -> Generation:
    return Generation(text, "stop", None, prompt_tokens=prompt, completion_tokens=completion)


def _usd(prompt: int, completion: int) -> float:  # gpt-5.2: 1.75 in, 14.00 out per million tokens
    return (prompt * 1.75 + completion * 14.0) / 1e6


def test_the_cap_counts_the_new_answer_of_a_retried_call(tmp_path):
    r1 = _call("r1")
    cache = CallCache.load(tmp_path / "calls.jsonl")
    cache.add(r1, _answer(1000, 10, "unreadable"), 1.0)  # an earlier run's failed answer
    budget = ScoreBudget(CostCap(1.0, _usd(1000, 10), lambda c: 0.0), cache, load_prices())
    cache.add(r1, _answer(1000, 50), 1.0)  # asked again in this run
    budget.after([r1])
    assert budget.cap.spent_usd == pytest.approx(_usd(1000, 10) + _usd(1000, 50)) == pytest.approx(0.00434)
    budget.after([r1])  # counted once
    assert budget.cap.spent_usd == pytest.approx(0.00434)


def test_batch_cost_adds_every_attempt_of_the_summariser_and_the_dimensions_retries(tmp_path):
    s1, s2 = _call("s1", "summary"), _call("s2", "summary")
    cache = CallCache.load(tmp_path / "calls.jsonl")
    cache.add(s1, _answer(2000, 100), 1.0)
    cache.add(s1, _answer(2000, 300), 1.0)  # asked again
    cache.add(s2, _answer(500, 40), 1.0)
    block = {"calls": 3, "batch_calls": 0, "calls_without_usage": 0, "prompt_tokens": 3000, "completion_tokens": 30,
             "cached_tokens": 0, "cost_usd": _usd(3000, 30), "model": "gpt-5.2", "priced_as": "gpt-5.2",
             "retries": 1}
    out = batch_cost([{"dimensions": {"readability": {"cost": block}}}], load_prices(), cache=cache,
                     summariser_calls=[s1, s2])
    assert out["by_dimension"][SUMMARISER_ROW]["calls"] == 3 and out["by_dimension"][SUMMARISER_ROW]["retries"] == 1
    assert out["total"]["calls"] == 6 and out["total"]["retries"] == 2
    assert out["total"]["prompt_tokens"] == 7500 and out["total"]["completion_tokens"] == 470
    assert out["total"]["cost_usd"] == round(_usd(7500, 470), 6) == 0.019705
    assert "; 2 of the calls were retries of a failed answer (each attempt is paid)" in cost_lines(out)[0]

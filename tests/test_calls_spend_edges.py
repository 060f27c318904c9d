"""What a run folder's calls will cost and have cost (surveyalign/calls/spend.py), by hand with the shipped
configs/prices.yaml (gpt-5.2: 1.75 input, 0.175 cached, 14.00 output; batch 0.875 / 7.00 USD per million tokens):
prompt tokens by a real (word-level) tokenizer or 4 characters per token, the K samples of a shared prompt paying it
once, completion lengths and seconds from the cache's answers (errors, batch timings and zero seconds left out),
the plan's sources, spent USD at cached and batch prices, and the cap refused for an unpriced judge."""

from __future__ import annotations

import pytest

from surveyalign.backends import Backend, Generation, GenerationSettings
from surveyalign.backends.simple import ScriptedBackend
from surveyalign.calls import CallCache, load_prices, make_call
from surveyalign.calls.spend import (
    NO_TOKENIZER,
    PromptCounter,
    answer_cost,
    answer_history,
    batched,
    engine_gpus,
    gpu_hours_per_second,
    make_cap,
    model_of_call,
    plan_calls,
    spent_usd,
    unanswered,
)

_TEMPLATE = ("{% for m in messages %}<|{{ m.role }}|> {{ m.content }} {% endfor %}"
             "{% if add_generation_prompt %}<|assistant|>{% endif %}{% if not enable_thinking %} <think></think>"
             "{% endif %}")


def _word_tokenizer():
    """A real transformers tokenizer: one token per whitespace-separated word, with a chat template."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    inner = Tokenizer(models.WordLevel({"[UNK]": 0}, unk_token="[UNK]"))
    inner.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok = PreTrainedTokenizerFast(tokenizer_object=inner, unk_token="[UNK]")
    tok.chat_template = _TEMPLATE
    return tok


class _Hosted(Backend):
    """A backend as the call layer sees it: its describe(), ``batch``, ``concurrency``, ``tokenizer`` (never asked)."""

    name = "openai"

    def __init__(self, model: str = "gpt-5.2", **attrs) -> None:
        self.model = model
        self.flags = {k: attrs.pop(k) for k in ("n_per_request", "shared_prefill", "backend") if k in attrs}
        self.__dict__.update(attrs)

    def describe(self):
        return {"backend": self.flags.get("backend", self.name), "model": self.model, **self.flags}


def _call(backend, unit="u1", *, stage="judge", content="x" * 40, seed=0, sample=0, max_new_tokens=512,
          enable_thinking=False, temperature=0.7):
    settings = GenerationSettings(seed=seed, max_new_tokens=max_new_tokens, enable_thinking=enable_thinking,
                                  temperature=temperature)
    return make_call(backend, settings, stage=stage, unit_id=unit, namespace="readability",
                     messages=[{"role": "user", "content": content}], sample=sample, identity={"backend": "t"})


def _answer(text="ok", *, error=None, completion=None, prompt=None, cached=None, batch_id=None):
    return Generation(text, "stop", None, error=error, completion_tokens=completion, prompt_tokens=prompt,
                      cached_tokens=cached, batch_id=batch_id)


# ---- which model, batch, shared prompt ---------------------------------------------------------------------------


def test_model_of_a_call():
    assert model_of_call(_call(_Hosted("gpt-5.2"))) == "gpt-5.2"
    assert model_of_call(_call(_Hosted(""))) == "openai"  # no model: the backend's name
    assert model_of_call(_call(ScriptedBackend(["a"]))) == "scripted"

    class _Bare:  # no describe at all
        pass

    assert model_of_call(_call(_Bare())) is None
    assert batched(_call(_Hosted(batch="openai"))) is True
    assert batched(_call(_Hosted(batch=False))) is False and batched(_call(_Bare())) is False


@pytest.mark.parametrize(("flags", "shared"), [
    ({}, False), ({"n_per_request": True}, True), ({"shared_prefill": True}, True), ({"backend": "vllm"}, True),
    ({"n_per_request": False, "shared_prefill": None}, False),
])
def test_samples_of_a_shared_prompt_pay_it_once(flags, shared):
    backend = _Hosted(**flags)
    calls = [_call(backend, seed=k, sample=k) for k in range(3)]  # K = 3 samples of one prompt
    counter = PromptCounter(lambda c: None, calls)
    assert [counter(c) for c in calls] == ([14, 0, 0] if shared else [14, 14, 14])  # 40 chars / 4 + 4
    assert counter.source == NO_TOKENIZER


@pytest.mark.parametrize(("name", "temperature", "shared"), [
    ("transformers", 0.0, True), ("transformers", 0.7, False), ("openai", 0.0, False), ("ray", 0.0, False),
])
def test_greedy_samples_on_the_transformers_engine_pay_the_prompt_once(name, temperature, shared):
    # at temperature 0 the transformers engine runs one row for a run of K samples (its copies count no prompt)
    backend = _Hosted(backend=name)
    backend.name = name
    calls = [_call(backend, seed=k, sample=k, temperature=temperature) for k in range(3)]
    counter = PromptCounter(lambda c: None, calls)
    assert [counter(c) for c in calls] == ([14, 0, 0] if shared else [14, 14, 14])


def test_a_backend_without_a_name_pays_each_greedy_prompt():
    class _Bare:  # neither describe() nor a name
        pass

    calls = [_call(_Bare(), seed=k, sample=k, temperature=0.0) for k in range(2)]
    counter = PromptCounter(lambda c: None, calls)
    assert [counter(c) for c in calls] == [14, 14]


def test_two_prompts_each_pay_their_own():
    backend = _Hosted(n_per_request=True)
    calls = [_call(backend, "u1"), _call(backend, "u2", content="y" * 80)]
    counter = PromptCounter(lambda c: None, calls)
    assert [counter(c) for c in calls] == [14, 24]


# ---- counting prompt tokens --------------------------------------------------------------------------------------


def test_a_tokenizer_counts_the_rendered_chat():
    tok = _word_tokenizer()
    asked = []

    def tokenizer_of(call):
        asked.append(call.unit_id)
        return tok

    counter = PromptCounter(tokenizer_of)
    # "<|user|> rate this survey <|assistant|> <think></think>": 6 words; with thinking on, no empty think block
    assert counter.messages_tokens(_call(_Hosted(), content="rate this survey")) == 6
    assert counter.messages_tokens(_call(_Hosted(), "u2", content="rate that survey", enable_thinking=True)) == 5
    assert counter.source == "tokenizer"
    # the same messages again: counted once (per messages hash)
    assert counter.messages_tokens(_call(_Hosted(), "u3", content="rate this survey")) == 6
    assert asked == ["u1", "u2"]


def test_the_backends_tokenizer_when_the_caller_has_none():
    backend = _Hosted(tokenizer=_word_tokenizer())

    def unknown(call):
        raise KeyError(call.unit_id)

    counter = PromptCounter(unknown)
    assert counter(_call(backend, content="one two three four")) == 7 and counter.source == "tokenizer"

    def refused(call):
        raise ValueError("no tokenizer for an API judge")

    fallback = PromptCounter(refused)
    assert fallback(_call(_Hosted(), content="z" * 401)) == 101 + 4 and fallback.source == NO_TOKENIZER


# ---- the cache's history -----------------------------------------------------------------------------------------


def _history_cache(tmp_path):
    backend = _Hosted()
    cache = CallCache.load(tmp_path / "calls.jsonl")
    cache.add(_call(backend, "h1"), _answer(completion=100, prompt=1000, cached=200), 2.0)
    cache.add(_call(backend, "h2"), _answer(completion=200), 4.0)
    cache.add(_call(backend, "h3"), _answer(error="HTTP 500", completion=999), 50.0)
    cache.add(_call(backend, "h4", stage="synthesis"), _answer(completion=40, prompt=1000, batch_id="b1"), 100.0)
    cache.add(_call(backend, "h5"), _answer(), 0.0)
    return cache


def test_answer_history_leaves_out_errors_batch_timings_and_zero_seconds(tmp_path):
    means, seconds, answers = answer_history(_history_cache(tmp_path))
    assert means == {"judge": 150.0, "synthesis": 40.0}
    assert seconds == 3.0 and answers == 3
    assert answer_history(CallCache.load(tmp_path / "empty.jsonl")) == ({}, None, 0)


def test_plan_by_hand(tmp_path):
    cache = _history_cache(tmp_path)
    backend = _Hosted(concurrency=4)
    todo = [_call(backend, "u1"), _call(backend, "u2"),
            _call(backend, "u3", stage="rqs", content="y" * 80, max_new_tokens=64)]
    plan, estimate = plan_calls(todo, PromptCounter(lambda c: None, todo), cache, load_prices(),
                                extra_prompt=lambda c: 100 if c.stage == "rqs" else 0)
    # prompts 14 + 14 + (24 + 100); completions: the judge mean 150 twice, rqs has no answers yet: its 64
    assert (plan.calls, plan.prompt_tokens, plan.completion_tokens) == (3, 152, 364)
    assert plan.cost_usd == pytest.approx((152 * 1.75 + 364 * 14.0) / 1e6)
    assert plan.seconds == pytest.approx(3 * 3.0 / 4)
    assert plan.completion_source == "mean of the 3 answers so far; max_new_tokens (upper bound) for rqs"
    assert plan.token_source == NO_TOKENIZER
    assert estimate(todo[2]) == pytest.approx((124 * 1.75 + 64 * 14.0) / 1e6)
    assert estimate(todo[0]) == pytest.approx((14 * 1.75 + 150 * 14.0) / 1e6)
    one, _ = plan_calls(todo[:2], PromptCounter(lambda c: None), cache, load_prices(), concurrency=1)
    assert one.seconds == pytest.approx(2 * 3.0) and one.completion_source == "mean of the 3 answers so far"
    assert one.prompt_tokens == 28


def test_plan_without_history_uses_max_new_tokens_and_one_in_flight(tmp_path):
    cache = CallCache.load(tmp_path / "calls.jsonl")
    backend = _Hosted(batch="openai")  # batch prices
    todo = [_call(backend, "u1", max_new_tokens=100)]
    plan, estimate = plan_calls(todo, PromptCounter(lambda c: None), cache, load_prices())
    assert plan.completion_tokens == 100 and plan.completion_source == "max_new_tokens (upper bound)"
    assert plan.cost_usd == pytest.approx((14 * 0.875 + 100 * 7.0) / 1e6) and plan.seconds is None
    assert estimate(todo[0]) == pytest.approx((14 * 0.875 + 100 * 7.0) / 1e6)
    local = [_call(ScriptedBackend(["a"]), "u1")]
    plan, estimate = plan_calls(local, PromptCounter(lambda c: None), cache, load_prices())
    assert plan.cost_usd is None and plan.unpriced_models == ["scripted"] and estimate(local[0]) == 0.0
    empty, _ = plan_calls([], PromptCounter(lambda c: None), cache, load_prices())
    assert empty.calls == 0 and empty.cost_usd is None


def test_completion_mean_is_capped_by_max_new_tokens(tmp_path):
    cache = _history_cache(tmp_path)  # judge answers: 150 tokens on average
    backend = _Hosted(concurrency=None)
    plan, _ = plan_calls([_call(backend, "u1", max_new_tokens=120), _call(backend, "u2", max_new_tokens=151)],
                         PromptCounter(lambda c: None), cache, load_prices())
    assert plan.completion_tokens == 120 + 150 and plan.seconds == pytest.approx(2 * 3.0 / 1)


# ---- what was spent ----------------------------------------------------------------------------------------------


def test_spent_usd_at_cached_and_batch_prices(tmp_path):
    cache = _history_cache(tmp_path)
    backend = _Hosted()
    calls = [_call(backend, "h1"), _call(backend, "h4", stage="synthesis"), _call(backend, "never-made")]
    # h1: 800 fresh + 200 cached prompt tokens, 100 completion; h4: a batch answer, 1000 + 40 at batch prices
    h1 = (800 * 1.75 + 200 * 0.175 + 100 * 14.0) / 1e6
    h4 = (1000 * 0.875 + 40 * 7.0) / 1e6
    assert spent_usd(cache, calls, load_prices()) == pytest.approx(h1 + h4)
    assert spent_usd(cache, [_call(backend, "h5")], load_prices()) == 0.0  # no counted tokens
    assert spent_usd(cache, calls, load_prices(), model_of=lambda c: "local-model") == 0.0
    cap = make_cap(1.0, calls, cache, load_prices(), lambda c: 0.01)
    assert cap.spent_usd == pytest.approx(h1 + h4) and cap.cap_usd == 1.0
    assert make_cap(None, calls, cache, load_prices(), lambda c: 0.01) is None


def test_a_cap_on_an_unpriced_judge_is_refused(tmp_path):
    cache = CallCache.load(tmp_path / "calls.jsonl")
    prices = load_prices()
    calls = [_call(ScriptedBackend(["a"]), "u1"), _call(_Hosted("/models/Qwen3-32B"), "u2"), _call(_Hosted(), "u3")]
    with pytest.raises(ValueError) as err:
        make_cap(5.0, calls, cache, prices, lambda c: 0.0)
    assert str(err.value) == (f"--max-cost: no price for /models/Qwen3-32B, scripted in {', '.join(prices.files)}; "
                              "add it with --prices FILE (a local engine has no token price: its cost is GPU time)")


def test_answer_cost():
    cost_of = answer_cost(load_prices())
    call = _call(_Hosted())
    assert cost_of(call, _answer(prompt=1000, completion=100, cached=200)) == pytest.approx(
        (800 * 1.75 + 200 * 0.175 + 100 * 14.0) / 1e6)
    assert cost_of(call, _answer(prompt=1000, completion=100, batch_id="b1")) == pytest.approx(
        (1000 * 0.875 + 100 * 7.0) / 1e6)
    assert cost_of(call, _answer()) == 0.0  # no counts
    assert cost_of(_call(ScriptedBackend(["a"])), _answer(prompt=10, completion=10)) is None


# ---- what is still to make ---------------------------------------------------------------------------------------


def test_unanswered_one_per_key_failed_ones_again_unless_kept(tmp_path):
    backend = _Hosted()
    done, failed, bad, new = (_call(backend, u) for u in ("done", "failed", "unparsable", "new"))
    path = tmp_path / "calls.jsonl"
    cache = CallCache.load(path)
    cache.add(done, _answer("fine$$$-1$$$"), 1.0)
    cache.add(failed, _answer(error="HTTP 503"), 1.0)
    cache.add(bad, _answer("no score here"), 1.0)

    def check(call, generation):
        return None if "$$$" in generation.text else "no score"

    todo = unanswered(cache, [done, failed, bad, new, new, failed], check)
    assert [c.unit_id for c in todo] == ["failed", "unparsable", "new"]
    assert [c.unit_id for c in unanswered(cache, [done, failed, bad, new])] == ["failed", "new"]
    assert cache.counts == {"reused": 0, "retried": 0, "made": 0}  # nothing counted
    kept = CallCache.load(path, keep_failed=True)
    assert [c.unit_id for c in unanswered(kept, [done, failed, bad, new], check)] == ["new"]
    # retry_errors=False (evaluate's retry_errors: false) keeps them too; True is the default
    assert [c.unit_id for c in unanswered(cache, [done, failed, bad, new], check, retry_errors=False)] == ["new"]
    assert [c.unit_id for c in unanswered(cache, [bad, new], check, retry_errors=True)] == ["unparsable", "new"]
    assert [c.unit_id for c in unanswered(kept, [bad, new], check, retry_errors=True)] == ["new"]


def test_a_duplicate_key_does_not_end_the_scan(tmp_path):
    cache = CallCache.load(tmp_path / "calls.jsonl")
    first, again, later = _call(_Hosted(), "u1"), _call(_Hosted(), "u1"), _call(_Hosted(), "u2")
    assert [c.unit_id for c in unanswered(cache, [first, again, later])] == ["u1", "u2"]


def test_a_backend_without_describe_pays_its_own_prompt():
    class _Bare:
        pass

    calls = [_call(_Bare(), seed=k, sample=k) for k in range(2)]
    counter = PromptCounter(lambda c: None, calls)
    assert [counter(c) for c in calls] == [14, 14]


def test_every_stage_without_history_is_named(tmp_path):
    cache = _history_cache(tmp_path)  # answers of the judge and synthesis stages
    backend = _Hosted()
    todo = [_call(backend, "u1", stage="summary"), _call(backend, "u2", stage="rqs"), _call(backend, "u3")]
    plan, _ = plan_calls(todo, PromptCounter(lambda c: None), cache, load_prices())
    assert plan.completion_source == "mean of the 3 answers so far; max_new_tokens (upper bound) for rqs, summary"


def test_the_cap_starts_from_the_spend_of_the_callers_model_and_uses_its_estimate(tmp_path):
    user = tmp_path / "mine.yaml"
    user.write_text('as_of: "2026-12-02"\nmodels:\n  my-judge:\n    input: 2.0\n    output: 10.0\n', encoding="utf-8")
    prices = load_prices(override=user)
    cache = _history_cache(tmp_path)
    local = ScriptedBackend(["a"])
    calls = [_call(local, "h1"), _call(local, "h2")]
    cap = make_cap(1.0, calls, cache, prices, lambda c: 0.125, model_of=lambda c: "my-judge")
    # h1: 1000 prompt (no cached price: input for all) + 100 completion; h2: no prompt count + 200 completion
    assert cap.spent_usd == pytest.approx((1000 * 2.0 + 100 * 10.0 + 200 * 10.0) / 1e6)
    assert cap.projected_total(calls) == pytest.approx(cap.spent_usd + 0.25)
    with pytest.raises(ValueError) as err:
        make_cap(1.0, calls, cache, prices, lambda c: 0.0)
    assert f"--max-cost: no price for scripted in {prices.files[0]}, {prices.files[1]}; " in str(err.value)


class _Local(Backend):
    """A local engine as the call layer sees it: its describe() (no GPU here to build a real one)."""

    name = "vllm"

    def __init__(self, **desc) -> None:
        self.desc, self.concurrency = desc, desc.pop("concurrency", None)

    def describe(self):
        return {"backend": "vllm", "model": "m", **self.desc}


class _LocalAsync(_Local):
    async def agenerate(self, prompts, settings=None, n=1):  # pragma: no cover - never called
        raise AssertionError


@pytest.mark.parametrize(("backend", "gpus"), [
    (_Local(), 1), (_Local(tensor_parallel_size=4), 4), (_Local(ray={"workers": 3}), 3),
    (_Local(tensor_parallel_size=2, ray={"workers": 4}), 8), (_Local(tensor_parallel_size=None, ray={}), 1),
    (_Local(backend="transformers", device="cuda:0"), 1), (_Local(backend="transformers", device="cpu"), 0),
    (_Local(backend="transformers", device="cpu:0", tensor_parallel_size=2), 0),
    (_Hosted(), 0), (_Hosted(backend="sglang"), 0), (ScriptedBackend(["x"]), 0)])
def test_engine_gpus(backend, gpus):
    assert engine_gpus(backend) == gpus
    assert gpu_hours_per_second(backend) == pytest.approx(gpus / 3600.0)  # a batch engine: its seconds add up


def test_a_local_engine_that_answers_no_model_has_no_gpus():
    class _Stub(_Local):
        answers_from_model = False

    assert engine_gpus(_Stub(tensor_parallel_size=2)) == 0 and gpu_hours_per_second(_Stub()) == 0.0
    assert engine_gpus(object()) == 0  # no describe(): not an engine


def test_a_duck_typed_engine_without_answers_from_model_answers_from_its_model():
    # the call layer takes any object with describe() / generate(); one that does not say answers_from_model
    # answers from a model, as executor.answers_from_models reads it: its GPUs count
    class _Engine:
        def describe(self):
            return {"backend": "vllm", "model": "m", "tensor_parallel_size": 2, "ray": {"workers": 3}}

    assert engine_gpus(_Engine()) == 6 and gpu_hours_per_second(_Engine()) == pytest.approx(6 / 3600.0)


def test_gpu_hours_per_second_of_requests_in_flight_together():
    ray_like = _LocalAsync(tensor_parallel_size=2, ray={"workers": 2}, concurrency=8)
    assert gpu_hours_per_second(ray_like) == pytest.approx(4 / 3600.0 / 8)  # its own concurrency
    assert gpu_hours_per_second(ray_like, concurrency=2) == pytest.approx(4 / 3600.0 / 2)  # the run's
    assert gpu_hours_per_second(_LocalAsync(tensor_parallel_size=1)) == pytest.approx(1 / 3600.0 / 32)
    assert gpu_hours_per_second(_LocalAsync(device="cpu", concurrency=4)) == 0.0


def test_the_plan_estimates_gpu_hours_by_the_runs_own_rule(tmp_path):
    from surveyalign.calls.spend import planned_gpu_hours

    cache = _history_cache(tmp_path)  # mean seconds of a timed answer: 3.0
    local, ray_like, hosted = _Local(tensor_parallel_size=2), _LocalAsync(ray={"workers": 4}, concurrency=8), _Hosted()
    todo = [_call(local, "a"), _call(local, "b"), _call(ray_like, "c"), _call(hosted, "d")]
    plan, _ = plan_calls(todo, PromptCounter(lambda c: None, todo), cache, load_prices())
    assert plan.gpu_hours == pytest.approx(2 * 3.0 * 2 / 3600 + 3.0 * 4 / 3600 / 8)  # the API call: no GPU time
    assert planned_gpu_hours(todo, 3.0, concurrency=2) == pytest.approx(2 * 3.0 * 2 / 3600 + 3.0 * 4 / 3600 / 2)
    # the run's concurrency reaches the estimate: 2 x 3.0 s x 2 GPUs + 3.0 s x 4 GPUs / 2 in flight = 18 GPU-s
    plan2, _ = plan_calls(todo, PromptCounter(lambda c: None, todo), cache, load_prices(), concurrency=2)
    assert plan2.gpu_hours == pytest.approx(0.005)  # 18 / 3600
    assert planned_gpu_hours(todo, None) is None  # nothing timed yet: unknown
    assert planned_gpu_hours([_call(hosted, "e")], 3.0) is None and planned_gpu_hours([], 3.0) is None
    fresh, _ = plan_calls(todo, PromptCounter(lambda c: None, todo), CallCache.load(tmp_path / "new.jsonl"),
                          load_prices())
    assert fresh.gpu_hours is None


def test_every_sent_attempt_is_spent_retries_and_reloads_included(tmp_path):
    """Issue 22: a failed answer asked again was paid each time it was sent. Unit r1 is asked three times (two
    unreadable answers, then a good one), r2 once; a call of another run (not in ``calls``) is not counted."""
    backend = _Hosted()
    r1, r2, other = _call(backend, "r1"), _call(backend, "r2"), _call(backend, "other")
    cache = CallCache.load(tmp_path / "calls.jsonl")
    cache.add(r1, _answer("??", prompt=1000, completion=10), 1.0)
    cache.add(r2, _answer("4", prompt=500, completion=20), 1.0)
    cache.add(r1, _answer("??", prompt=1000, completion=30), 1.0)
    cache.add(other, _answer("5", prompt=9999, completion=999), 1.0)
    cache.add(r1, _answer("3", prompt=1000, completion=50), 1.0)
    # 3,500 prompt x 1.75 + 110 completion x 14.00 per million (gpt-5.2)
    expected = (3500 * 1.75 + 110 * 14.0) / 1e6
    assert expected == pytest.approx(0.007665)
    assert spent_usd(cache, [r1, r2], load_prices()) == pytest.approx(expected)
    reloaded = CallCache.load(tmp_path / "calls.jsonl")  # the next run reads the same five lines
    assert spent_usd(reloaded, [r1, r2, r1], load_prices()) == pytest.approx(expected)
    assert make_cap(1.0, [r1, r2], reloaded, load_prices(), lambda c: 0.0).spent_usd == pytest.approx(expected)
    assert [(r["key"] == r1.key, r["completion_tokens"]) for r in reloaded.attempts([r1.key, r2.key])] == [
        (True, 10), (True, 30), (True, 50), (False, 20)]
    assert len(reloaded.attempts()) == 5 and reloaded.get(r1.key)["completion_tokens"] == 50

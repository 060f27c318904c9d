"""Transformers backend: one prefill for K samples, and four adapters on one base model."""

from __future__ import annotations

import json

import pytest
from tiny_adapters import ANSWERS

from surveyalign.backends import GenerationSettings, load_backend
from surveyalign.prompts import build_judge_prompt, format_target

SAMPLED = GenerationSettings(temperature=0.7, max_new_tokens=8, seed=11)
LONG = [{"role": "user", "content": "judge this survey about graph models " * 30}]
SHORT = [{"role": "user", "content": "a short survey"}]


def _count_embedded(model):
    """Register a hook on the token embedding; returns the list of (rows, positions) of every forward."""
    calls: list[tuple[int, int]] = []
    embed = model.get_input_embeddings()
    handle = embed.register_forward_hook(lambda module, args, out: calls.append(tuple(args[0].shape)))
    return calls, handle


@pytest.fixture(scope="module")
def shared(tiny_model_dir):
    return load_backend("transformers", model=str(tiny_model_dir), device="cpu", batch_size=16)


@pytest.fixture(scope="module")
def repeated(tiny_model_dir):
    return load_backend("transformers", model=str(tiny_model_dir), device="cpu", batch_size=16,
                        shared_prefill=False)


def test_one_prefill_for_k_samples(shared, repeated):
    prompt_tokens = len(shared.tokenizer(shared.render(LONG, SAMPLED), add_special_tokens=False)["input_ids"])
    assert prompt_tokens > 150
    calls, handle = _count_embedded(shared.model)
    try:
        [row] = shared.generate_detailed([LONG], SAMPLED, n=5)
    finally:
        handle.remove()
    # the prompt (all but its last token) goes through the model once; then 5 rows advance one token per step
    assert calls[0] == (1, prompt_tokens - 1)
    assert all(shape[1] == 1 for shape in calls[1:]) and calls[1] == (5, 1)
    assert sum(r * t for r, t in calls if t > 1) == prompt_tokens - 1
    assert {d.prompt_tokens for d in row} == {prompt_tokens}
    calls, handle = _count_embedded(repeated.model)
    try:
        repeated.generate_detailed([LONG], SAMPLED, n=5)
    finally:
        handle.remove()
    assert calls[0] == (5, prompt_tokens)  # what num_return_sequences-style batching costs: 5 x the prompt


def test_shared_prefill_gives_the_repeated_prompt_results(shared, repeated):
    prompts = [LONG, SHORT]  # different lengths: left padding in the shared prefill
    a = shared.generate_detailed(prompts, SAMPLED, n=5)
    b = repeated.generate_detailed(prompts, SAMPLED, n=5)
    for row_a, row_b in zip(a, b):
        assert [d.token_ids for d in row_a] == [d.token_ids for d in row_b]
        for da, db in zip(row_a, row_b):
            assert da.token_logprobs == pytest.approx(db.token_logprobs, abs=1e-5)
    assert len({tuple(d.token_ids) for d in a[0]}) == 5  # five distinct seeds, five different samples


def test_sample_k_is_the_seed_plus_k_single_call(shared):
    [row] = shared.generate([SHORT], SAMPLED, n=4)
    for k in range(4):
        [[alone]] = shared.generate([SHORT], SAMPLED.model_copy(update={"seed": SAMPLED.seed + k}), n=1)
        assert alone.text == row[k].text
        assert alone.mean_logprob == pytest.approx(row[k].mean_logprob, abs=1e-5)


def test_samples_beyond_batch_size_are_chunked(tiny_model_dir, shared):
    small = load_backend("transformers", model=str(tiny_model_dir), device="cpu", batch_size=2)
    calls, handle = _count_embedded(small.model)
    try:
        [row] = small.generate([LONG], SAMPLED, n=5)
    finally:
        handle.remove()
    assert [r for r, t in calls if t > 1] == [1, 1, 1]  # chunks of 2, 2, 1 samples: one prefill each
    assert [g.text for g in row] == [g.text for g in shared.generate([LONG], SAMPLED, n=5)[0]]


def test_four_adapters_on_one_base(tiny_model_dir, tiny_adapters, shared):
    multi = load_backend("transformers", model=str(tiny_model_dir), device="cpu",
                         adapters={dim: str(path) for dim, path in tiny_adapters.items()})
    assert set(multi.model.peft_config) == set(ANSWERS)
    greedy = GenerationSettings(max_new_tokens=16)
    identities = set()
    for dim, (rationale, score) in ANSWERS.items():
        view = multi.adapter_view(dim)
        assert view.parent is multi and view.describe()["adapter_name"] == dim
        identities.add(json.dumps(view.describe()["fingerprints"]["adapter"], sort_keys=True))
        messages = build_judge_prompt(dim, "A survey of tests.").messages()
        [[answer]] = view.generate([messages], greedy)
        assert answer.text == format_target(rationale, score)
        single = load_backend("transformers", model=str(tiny_model_dir), device="cpu", adapter=str(tiny_adapters[dim]),
                              merge_adapter=False)
        [[alone]] = single.generate([messages], greedy)
        assert alone.text == answer.text and alone.mean_logprob == pytest.approx(answer.mean_logprob, abs=1e-5)
    assert len(identities) == 4  # each dimension has its own cache identity
    # adapter None = the base model with every adapter off
    [[base_multi]] = multi.generate([SHORT], greedy)
    [[base_alone]] = shared.generate([SHORT], greedy)
    assert base_multi.text == base_alone.text
    assert multi.describe()["adapters"] == {dim: str(path) for dim, path in tiny_adapters.items()}
    with pytest.raises(KeyError, match="no adapter named 'clarity'"):
        multi.adapter_view("clarity")
    with pytest.raises(ValueError, match="either adapter"):
        load_backend("transformers", model=str(tiny_model_dir), adapter=str(tiny_adapters["readability"]),
                     adapters={"structure": str(tiny_adapters["structure"])})


def test_reserved_cache_holds_the_expanded_prompt_and_grows_in_place(shared):
    """issue 23: ``reserve`` writes the expanded cache once into buffers; decoding fills them in place and falls back
    to ``torch.cat`` past the reserve. The keys are those of the plain expansion (``batch_select_indices``)."""
    import torch

    from surveyalign.backends.prefill import cache_keyword, shared_prefill

    ids = torch.tensor([[5, 6, 7, 8, 9], [0, 0, 7, 8, 9]])
    mask = torch.tensor([[1, 1, 1, 1, 1], [0, 0, 1, 1, 1]])
    key = cache_keyword(shared.model)
    plain_ids, plain_mask, plain = shared_prefill(shared.model, ids, mask, [2, 3])
    got_ids, got_mask, reserved = shared_prefill(shared.model, ids, mask, [2, 3], reserve=2)
    assert torch.equal(plain_ids, got_ids) and torch.equal(plain_mask, got_mask) and got_ids.shape == (5, 5)
    for a, b in zip(plain[key].layers, reserved[key].layers):
        assert type(b).__name__ == "ReservedLayer" and b.keys.shape == (5, a.keys.shape[1], 4, a.keys.shape[3])
        assert torch.equal(a.keys, b.keys) and torch.equal(a.values, b.values)
        buffer = b.keys.data_ptr()
        step = torch.ones_like(a.keys[:, :, :1])
        for n in range(3):  # two steps fit in the reserve, the third is appended with torch.cat
            k, v = b.update(step * n, step * -n)
            assert k.shape[2] == 5 + n and torch.equal(k[:, :, -1:], step * n) and torch.equal(v[:, :, -1:], step * -n)
            assert torch.equal(k[:, :, :4], a.keys)
            assert (k.data_ptr() == buffer) == (n < 2)

"""Memory per GPU of tensor / data parallel serving layouts (surveyalign/backends/serving_plan.py), by hand for
Qwen3-32B's architecture (config only, no weights)."""

from __future__ import annotations

import pytest

from surveyalign.backends import serving_plan

Q32 = {"vocab_size": 151936, "hidden_size": 5120, "intermediate_size": 25600, "num_hidden_layers": 64,
       "num_attention_heads": 64, "num_key_value_heads": 8, "head_dim": 128, "tie_word_embeddings": False}


@pytest.fixture(scope="module")
def q32(tmp_path_factory):
    from transformers import Qwen3Config

    out = tmp_path_factory.mktemp("q32")
    Qwen3Config(**Q32, max_position_embeddings=40960).save_pretrained(out)
    return str(out)


def test_tensor_and_data_parallel_memory_by_hand(q32):
    n = 32_762_123_392
    one = serving_plan(q32, gpu_gib=140.4)  # 1 x H200
    assert one.n_params == n and one.weights_gib == pytest.approx(2 * n / 2**30, abs=0.01)
    assert one.kv_bytes_per_token == 2 * 64 * 8 * 128 * 2  # K and V, 64 layers, 8 KV heads of 128, 16-bit
    budget = 140.4 * 2**30 * 0.9 - 2 * n - 2 * 2**30
    assert one.tokens_per_replica == int(budget // 262144) and one.sequences_per_replica == 14
    tp2 = serving_plan(q32, tensor_parallel_size=2, data_parallel_size=4, gpu_gib=79.6)  # 8 x H100
    assert tp2.gpus == 8 and tp2.weights_gib == pytest.approx(one.weights_gib / 2, abs=0.01)
    assert tp2.kv_bytes_per_token == 262144 // 2 and tp2.sequences_total == 4 * tp2.sequences_per_replica == 72
    tp1 = serving_plan(q32, data_parallel_size=8, gpu_gib=79.6)  # a full copy per H100: little room for the cache
    assert tp1.sequences_per_replica == 2 and tp1.fits
    small = serving_plan(q32, gpu_gib=48.0)
    assert not small.fits and small.kv_budget_gib < 0
    with pytest.raises(ValueError, match="tensor_parallel_size"):
        serving_plan(q32, tensor_parallel_size=0)

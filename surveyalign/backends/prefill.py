"""One prefill for the K samples of a prompt (SurveyReview App. E test-time scaling, transformers backend).

``generate(num_return_sequences=K)`` (and K rows of the same prompt in one batch) repeat the prompt K times
before the forward pass: for K=5 and a 2,000-token survey prompt, 10,000 prompt tokens go through the model.
:func:`shared_prefill` runs each distinct prompt once (all but its last token), copies the resulting key/value
cache to the prompt's K rows, and hands ``generate`` the K rows with that cache, so only the last prompt token
and the generated tokens are computed per row. Outputs are those of the repeated-prompt path (same tokens under
the per-row seeded sampler of :mod:`surveyalign.backends.hf`; the tests check this).
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import Any

__all__ = ["cache_keyword", "shared_prefill"]


def cache_keyword(model: Any) -> str:
    """The keyword the model's ``forward``/``generate`` take a KV cache under (``cache`` from transformers 5.2x).

    Args:
        model: a transformers causal LM, or a PEFT model wrapping one.

    Returns:
        ``"cache"`` when the base model's ``forward`` has that parameter, else ``"past_key_values"``.
    """
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    return "cache" if "cache" in inspect.signature(type(base).forward).parameters else "past_key_values"


def _new_cache(model: Any) -> Any:
    from transformers import DynamicCache

    try:
        return DynamicCache(config=model.config)
    except TypeError:  # older transformers: no config argument
        return DynamicCache()


def shared_prefill(model: Any, input_ids: Any, attention_mask: Any, repeats: Sequence[int]
                   ) -> tuple[Any, Any, dict[str, Any]]:
    """Prefill each prompt row once and expand its KV cache to ``repeats[g]`` rows.

    Args:
        model: the causal LM (plain or PEFT; the active adapter is the one used).
        input_ids: ``(G, W)`` long tensor, left-padded prompts.
        attention_mask: ``(G, W)`` 0/1 tensor (0 on the left padding).
        repeats: samples wanted per prompt row, each >= 1; rows of the result are prompt-major
            (prompt 0's samples first).

    Returns:
        ``(ids, mask, cache_kwargs)``: ``ids``/``mask`` of shape ``(sum(repeats), W)`` and the keyword arguments
        (``{cache_keyword: DynamicCache}`` holding positions ``0..W-2``) to pass to ``model.generate`` together
        with them; ``cache_kwargs`` is empty when ``W < 2`` (nothing to share).

    Raises:
        ValueError: ``len(repeats) != G`` or a repeat below 1.
    """
    import torch

    if len(repeats) != input_ids.shape[0] or any(r < 1 for r in repeats):
        raise ValueError(f"shared_prefill: need one repeat >= 1 per prompt row, got {list(repeats)} for "
                         f"{input_ids.shape[0]} rows")
    index = torch.repeat_interleave(torch.arange(len(repeats), device=input_ids.device),
                                    torch.tensor(list(repeats), device=input_ids.device))
    ids, mask = input_ids[index], attention_mask[index]
    if input_ids.shape[1] < 2:
        return ids, mask, {}
    keyword = cache_keyword(model)
    cache = _new_cache(model)
    # positions as generate() derives them from the mask, so the cached keys match the decoding positions
    positions = (attention_mask.long().cumsum(-1) - 1).clamp(min=0)
    with torch.inference_mode():
        model(input_ids=input_ids[:, :-1], attention_mask=attention_mask[:, :-1], position_ids=positions[:, :-1],
              use_cache=True, logits_to_keep=1, **{keyword: cache})
    if any(r != 1 for r in repeats):
        cache.batch_select_indices(index)
    return ids, mask, {keyword: cache}

"""One prefill for the K samples of a prompt (SurveyReview App. E test-time scaling, transformers backend).

``generate(num_return_sequences=K)`` (and K rows of the same prompt in one batch) repeat the prompt K times
before the forward pass: for K=5 and a 2,000-token survey prompt, 10,000 prompt tokens go through the model.
:func:`shared_prefill` runs each distinct prompt once (all but its last token), copies the resulting key/value
cache to the prompt's K rows, and hands ``generate`` the K rows with that cache, so only the last prompt token
and the generated tokens are computed per row. Outputs are those of the repeated-prompt path (same tokens under
the per-row seeded sampler of :mod:`surveyalign.backends.hf`; the tests check this).

Decoding then appends one position per step. ``transformers``' ``DynamicCache`` appends with ``torch.cat``, which
copies the whole cache at every step: K rows of a 2,000-token prompt are copied 32 times for 32 new tokens, the
largest cost that grows with K on a small model (a third of the K=5 overhead in a profile). With
``reserve`` the expanded cache is written once into buffers with room for the new tokens, and each step writes
its position in place (:class:`_ReservedLayer`); the keys and values the attention sees are the same numbers.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from dataclasses import dataclass
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


def _reserved_layer_class():
    """:class:`_ReservedLayer`, defined on first use (importing this module does not import transformers)."""
    global _ReservedLayer
    if _ReservedLayer is None:
        from transformers.cache_utils import DynamicLayer

        class ReservedLayer(DynamicLayer):
            """A ``DynamicLayer`` whose keys/values are views of buffers with room for ``extra`` more positions;
            built from the prefilled ``(G, heads, length, dim)`` tensors, row ``g`` repeated ``repeats[g]`` times.

            ``update`` writes new positions in place while they fit; otherwise (or after another method replaced
            the tensors, e.g. ``batch_select_indices``) it falls back to ``DynamicLayer.update`` (``torch.cat``).
            """

            def __init__(self, keys: Any, values: Any, repeats: Sequence[int], extra: int) -> None:
                super().__init__()
                _, heads, length, _ = keys.shape
                self._k = keys.new_empty((sum(repeats), heads, length + extra, keys.shape[-1]))
                self._v = values.new_empty((sum(repeats), heads, length + extra, values.shape[-1]))
                row = 0
                for g, r in enumerate(repeats):  # prompt g's cache broadcast to its r rows: one copy, no temporary
                    self._k[row : row + r, :, :length] = keys[g : g + 1]
                    self._v[row : row + r, :, :length] = values[g : g + 1]
                    row += r
                self.keys, self.values = self._k[:, :, :length], self._v[:, :, :length]
                self.device = keys.device
                self.is_initialized = True

            def update(self, key_states: Any, value_states: Any, *args: Any, **kwargs: Any) -> tuple[Any, Any]:
                if self.keys is None or self.keys.data_ptr() != self._k.data_ptr():
                    return super().update(key_states, value_states, *args, **kwargs)
                start, end = self.keys.shape[-2], self.keys.shape[-2] + key_states.shape[-2]
                if end > self._k.shape[-2] or key_states.shape[0] != self._k.shape[0]:
                    return super().update(key_states, value_states, *args, **kwargs)
                self._k[:, :, start:end] = key_states
                self._v[:, :, start:end] = value_states
                self.keys, self.values = self._k[:, :, :end], self._v[:, :, :end]
                return self.keys, self.values

        _ReservedLayer = ReservedLayer
    return _ReservedLayer


_ReservedLayer: Any = None


def shared_prefill(model: Any, input_ids: Any, attention_mask: Any, repeats: Sequence[int], *, reserve: int = 0
                   ) -> tuple[Any, Any, dict[str, Any]]:
    """Prefill each prompt row once and expand its KV cache to ``repeats[g]`` rows.

    Args:
        model: the causal LM (plain or PEFT; the active adapter is the one used).
        input_ids: ``(G, W)`` long tensor, left-padded prompts.
        attention_mask: ``(G, W)`` 0/1 tensor (0 on the left padding).
        repeats: samples wanted per prompt row, each >= 1; rows of the result are prompt-major
            (prompt 0's samples first).
        reserve: positions to make room for in the cache (the tokens ``generate`` will add: the last prompt
            token and ``max_new_tokens``); 0 keeps ``transformers``' growing cache.

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
    if reserve > 0 and all(type(layer).__name__ == "DynamicLayer" for layer in getattr(cache, "layers", [None])):
        # the expansion and the reserved buffers in one copy per layer
        layer_class = _reserved_layer_class()
        cache.layers = [layer_class(layer.keys, layer.values, repeats, reserve) for layer in cache.layers]
    elif any(r != 1 for r in repeats):
        cache.batch_select_indices(index)
    return ids, mask, {keyword: cache}


@dataclass(frozen=True)
class _Job:
    """Samples of one prompt generated together (they share one prefill)."""

    prompt: int
    samples: tuple[int, ...]


def _pack(jobs: list[_Job], rows: int) -> list[list[_Job]]:
    """Group jobs in order into batches of at most ``rows`` sample rows (a job is never split here)."""
    batches: list[list[_Job]] = []
    used = rows
    for job in jobs:
        if used + len(job.samples) > rows:
            batches.append([])
            used = 0
        batches[-1].append(job)
        used += len(job.samples)
    return batches

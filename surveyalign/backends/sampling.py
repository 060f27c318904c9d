"""Per-row seeded sampling for the transformers backend (Gumbel-max over temperature-scaled, nucleus-truncated
logits) that also records each generated token's raw log-probability (the SurveyReview App. E vote tie-break).
"""

from __future__ import annotations

from typing import Any

__all__ = ["make_sampler"]


def make_sampler(seeds: list[int], temperature: float, top_p: float, device: Any, top_logprobs: int = 0) -> Any:
    """Build the logits processor that records raw log-probs and (when temperature > 0) samples per row.

    Args:
        seeds: one seed per batch row (``settings.seed + sample index``); row ``r`` draws from its own
            ``torch.Generator`` seeded ``seeds[r]``, so a sample does not depend on its batch neighbours.
        temperature: softmax temperature, >= 0 (0: greedy, the processor only records log-probs).
        top_p: nucleus mass in (0, 1].
        device: torch device of the logits.
        top_logprobs: when > 0, also record the ``top_logprobs`` most likely tokens of every step (raw
            distribution), read back with ``top_tokens()``.

    Returns:
        A ``transformers.LogitsProcessor`` with ``token_logprobs(new_tokens) -> (rows, steps)`` tensor of the raw
        natural-log probabilities of the generated tokens, and ``top_tokens() -> (values, indices)`` tensors of
        shape ``(rows, steps, top_logprobs)`` (``None`` when ``top_logprobs == 0``).
    """
    import torch
    from transformers import LogitsProcessor

    class _SeededSampler(LogitsProcessor):
        def __init__(self) -> None:
            self.generators = None
            if temperature > 0:
                self.generators = [torch.Generator(device=device).manual_seed(int(seed)) for seed in seeds]
            self.previous: torch.Tensor | None = None
            self.chosen: list[torch.Tensor] = []
            self.top: list[tuple[torch.Tensor, torch.Tensor]] = []

        def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
            logprobs = torch.log_softmax(scores.float(), dim=-1)
            if self.previous is not None:
                self.chosen.append(self.previous.gather(1, input_ids[:, -1:]).squeeze(1))
            self.previous = logprobs
            if top_logprobs > 0:
                values, indices = torch.topk(logprobs, top_logprobs, dim=-1)
                self.top.append((values.cpu(), indices.cpu()))
            if self.generators is None:
                return scores
            scaled = logprobs / temperature
            if top_p < 1.0:
                sorted_scores, order = torch.sort(scaled, dim=-1, descending=True)
                probs = torch.softmax(sorted_scores, dim=-1)
                mass_before = torch.cumsum(probs, dim=-1) - probs
                drop_sorted = mass_before >= top_p  # the top token always survives (mass_before == 0)
                drop = torch.zeros_like(drop_sorted).scatter(1, order, drop_sorted)
                scaled = scaled.masked_fill(drop, float("-inf"))
            noise = torch.stack([
                torch.rand(scaled.shape[-1], generator=generator, device=scaled.device)
                for generator in self.generators
            ])
            gumbel = -torch.log(-torch.log(noise.clamp(min=1e-20, max=1.0 - 1e-7)))
            return scaled + gumbel  # argmax of this is a sample from softmax(scaled)

        def token_logprobs(self, new_tokens: torch.LongTensor) -> torch.Tensor:
            """(batch, steps) log-probs of the generated tokens, the last step included."""
            chosen = list(self.chosen)
            if self.previous is not None and new_tokens.shape[1] > len(chosen):
                last = new_tokens[:, len(chosen):len(chosen) + 1]
                chosen.append(self.previous.gather(1, last).squeeze(1))
            if not chosen:
                return torch.zeros((new_tokens.shape[0], 0))
            return torch.stack(chosen, dim=1).cpu()

        def top_tokens(self) -> tuple[torch.Tensor, torch.Tensor] | None:
            """``(values, indices)``, each ``(rows, steps, top_logprobs)``; ``None`` when not recorded."""
            if not self.top:
                return None
            return torch.stack([v for v, _ in self.top], dim=1), torch.stack([i for _, i in self.top], dim=1)

    return _SeededSampler()

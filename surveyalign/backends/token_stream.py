"""Tokens handed out while the transformers backend is still generating (``surveyalign serve`` ``stream=True``).

:func:`make_streamer` builds the ``transformers`` streamer given to ``model.generate``: after every decoding step it reads
the token each batch row chose, with its raw log-probability (and the step's most likely alternatives) from the
seeded sampler (:func:`surveyalign.backends.sampling.make_sampler`), and calls ``on_token`` with a
:class:`StreamedToken` naming the row's prompt and sample. A row's end-of-turn token is passed once, marked
``eos``; the padding ``generate`` adds to finished rows is not passed. :func:`cancel_criteria` stops the rows of a
request whose client left (``surveyalign serve``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["StreamedToken", "cancel_criteria", "make_streamer"]


@dataclass(frozen=True)
class StreamedToken:
    """One generated token of one (prompt, sample), as soon as the step that chose it has run.

    Attributes:
        prompt: index of the prompt in the ``generate_detailed`` call.
        sample: sample index (0 .. n-1).
        token_id: the token.
        logprob: its natural-log probability under the raw next-token distribution.
        top: the step's most likely ``(token_id, logprob)`` alternatives (empty unless ``top_logprobs`` was asked).
        eos: whether this is the row's end-of-turn token (it ends the answer and adds no text).
    """

    prompt: int
    sample: int
    token_id: int
    logprob: float
    top: list[tuple[int, float]] = field(default_factory=list)
    eos: bool = False


def make_streamer(keys: Sequence[tuple[int, int]], eos_ids: Sequence[int], sampler: Any,
                  on_token: Callable[[StreamedToken], None]) -> Any:
    """A ``transformers`` ``BaseStreamer`` for one batch.

    Args:
        keys: ``(prompt, sample)`` of each batch row, in row order.
        eos_ids: the end-of-turn token ids.
        sampler: the batch's seeded sampler (its ``previous`` step log-probs and ``top`` alternatives are read).
        on_token: called from the generating thread once per row and step, until the row's end-of-turn token.

    Returns:
        The streamer, to pass as ``model.generate(..., streamer=...)``.
    """
    from transformers.generation.streamers import BaseStreamer

    class RowStreamer(BaseStreamer):
        def __init__(self) -> None:
            self.prompt_seen = False
            self.done = [False] * len(keys)

        def put(self, value: Any) -> None:
            if not self.prompt_seen:  # generate() first puts the prompt ids
                self.prompt_seen = True
                return
            tokens = value.reshape(-1)
            previous = sampler.previous
            logprobs = previous.gather(1, tokens.reshape(-1, 1).to(previous.device)).reshape(-1).tolist()
            top = sampler.top[-1] if sampler.top else None
            for row, token in enumerate(tokens.tolist()):
                if self.done[row]:
                    continue
                alternatives = [] if top is None else list(zip(top[1][row].tolist(), top[0][row].tolist()))
                end = token in eos
                prompt, sample = keys[row]
                on_token(StreamedToken(prompt, sample, int(token), float(logprobs[row]), alternatives, end))
                self.done[row] = end

        def end(self) -> None:
            """Nothing to flush: every step's tokens were handed out in :meth:`put`."""

    eos = set(eos_ids)
    return RowStreamer()


def cancel_criteria(row_prompts: Sequence[int], cancelled: Callable[[int], bool]) -> Any:
    """A ``transformers`` ``StoppingCriteriaList`` for one batch: after every step, the rows whose prompt
    ``cancelled(prompt)`` names are done (``generate`` pads them from there on and ends when no row is left).

    Args:
        row_prompts: the prompt index of each batch row, in row order.
        cancelled: ``prompt index -> True`` once nobody waits for its answers.

    Returns:
        The list, to pass as ``model.generate(..., stopping_criteria=...)``.
    """
    import torch
    from transformers import StoppingCriteria, StoppingCriteriaList

    class Cancelled(StoppingCriteria):
        def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
            return torch.tensor([bool(cancelled(p)) for p in row_prompts], dtype=torch.bool, device=input_ids.device)

    return StoppingCriteriaList([Cancelled()])

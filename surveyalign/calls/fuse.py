"""The K samples of one prompt as one request (SurveyReview App. E: K samples per dimension, one prefill).

Every backend draws sample ``i`` of ``generate(prompts, settings, n)`` with seed ``settings.seed + i``, so the
calls of one prompt whose settings differ only in a run of consecutive seeds (``seed + k``, the K samples of a
unit) can be made as one ``generate(..., n=K)`` with the first seed, and their answers are the same as one by
one. Made that way the samples share the prompt's prefill: the transformers backend runs the prompt once for the
K rows (:mod:`surveyalign.backends.prefill`), ``surveyalign serve`` and vLLM get ``n=K``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["fuse_samples"]


def fuse_samples(calls: Sequence[Any]) -> list[list[Any]]:
    """Group calls into runs answerable by one ``generate(..., n=len(run))``.

    Args:
        calls: :class:`~surveyalign.calls.Call` objects of one backend.

    Returns:
        Runs in first-seen order; each run holds calls with the same messages and settings except ``seed``, whose
        seeds are consecutive (``s, s+1, ...``), sorted by seed. A call that has no such partner is a run of one.
    """
    groups: dict[tuple[str, str, str], list[Any]] = {}
    for call in calls:
        rest = call.settings.model_dump_json(exclude={"seed"})
        groups.setdefault((call.stage, call.messages_hash, rest), []).append(call)
    runs: list[list[Any]] = []
    for group in groups.values():
        group = sorted(group, key=lambda c: c.settings.seed)
        run = [group[0]]
        for call in group[1:]:
            if call.settings.seed == run[-1].settings.seed + 1:
                run.append(call)
            else:
                runs.append(run)
                run = [call]
        runs.append(run)
    order = {id(call): i for i, call in enumerate(calls)}
    return sorted(runs, key=lambda r: min(order[id(c)] for c in r))

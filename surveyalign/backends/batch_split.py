"""Cutting a provider batch submission into batches within the provider's limits, a prefix group in one batch."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from surveyalign.backends.batch_api import BatchAPI, BatchRequest

__all__ = ["split_requests"]


def split_requests(requests: Sequence[BatchRequest], api: BatchAPI, *, max_tokens: int | None = None,
                   tokens_of: Callable[[BatchRequest], int] | None = None,
                   group_of: Callable[[BatchRequest], str] | None = None) -> list[list[BatchRequest]]:
    """Cut ``requests`` into batches, in order, within ``api.max_requests``, ``api.max_bytes`` and ``max_tokens``
    estimated prompt tokens (OpenAI's batch queue limit; ``None``: none) as ``tokens_of(request)`` counts them.

    With ``group_of`` (a request's prefix group: requests sharing a cached prompt prefix), consecutive requests of
    one group go into one batch whenever the group fits in an empty one: a batch is closed before a group that
    would not fit in it whole.

    Raises:
        ValueError: one request alone over ``api.max_bytes`` or ``max_tokens``; ``max_tokens`` without ``tokens_of``.
    """
    if max_tokens is not None and tokens_of is None:
        raise ValueError("split_requests: max_tokens needs tokens_of (a request's estimated prompt tokens)")
    out: list[list[BatchRequest]] = []
    current: list[BatchRequest] = []
    size = tokens = 0
    limit = float("inf") if max_tokens is None else max_tokens
    groups: list[list[BatchRequest]] = []
    for req in requests:
        if groups and group_of is not None and group_of(groups[-1][-1]) == group_of(req):
            groups[-1].append(req)
        else:
            groups.append([req])
    for group in groups:
        sizes = [api.request_size(req) for req in group]
        counts = [0 if tokens_of is None else tokens_of(req) for req in group]
        if current and len(group) > 1 and (len(current) + len(group) > api.max_requests
                                           or size + sum(sizes) > api.max_bytes or tokens + sum(counts) > limit):
            out.append(current)
            current, size, tokens = [], 0, 0
        for req, n, t in zip(group, sizes, counts):
            if n > api.max_bytes:
                raise ValueError(f"request {req.custom_id} is {n} bytes, over the {api.name} batch limit of "
                                 f"{api.max_bytes} bytes")
            if t > limit:
                raise ValueError(f"request {req.custom_id} holds about {t} prompt tokens, over the batch queue limit "
                                 f"max_enqueued_tokens={max_tokens}: raise the limit or shorten the prompt")
            if current and (len(current) >= api.max_requests or size + n > api.max_bytes or tokens + t > limit):
                out.append(current)
                current, size, tokens = [], 0, 0
            current.append(req)
            size, tokens = size + n, tokens + t
    if current:
        out.append(current)
    return out

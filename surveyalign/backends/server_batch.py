"""The served model's request queue and answer decoding (``surveyalign serve``).

:class:`_MicroBatcher` groups concurrent chat requests with equal generation settings into one
``generate_detailed`` call per batch (a request whose client left before its batch started gets
:class:`_ClientGone`); ``_cut_at_stop`` cuts an answer at its first stop string and ``_token_spans`` gives the text
each token adds (for logprobs and streaming).
"""

from __future__ import annotations

import asyncio
import inspect
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from surveyalign.backends.base import GenerationSettings


class _ClientGone(Exception):
    """Set on a queued request's future when its client disconnected before its batch started."""


@dataclass
class _Pending:
    messages: list[dict[str, str]]
    settings: GenerationSettings
    n: int
    future: asyncio.Future
    is_disconnected: Callable[[], Awaitable[bool]] | None = None
    top_logprobs: int = 0
    on_token: Callable[[Any], None] | None = None
    cancel: threading.Event | None = None


class _MicroBatcher:
    """Groups concurrent requests with equal settings into one ``generate_detailed`` call.

    Right before a group starts, requests whose client is gone (``is_disconnected()`` true: their future gets
    :class:`_ClientGone`; or the awaiting handler was cancelled) are dropped and counted in ``stats["dropped"]``;
    ``stats["served"]`` and ``stats["failed"]`` count requests answered by a batch and requests of failed batches.
    A request of a batch already generating whose ``cancel`` event is set (its streaming client left) stops at the
    engine's next step when the backend takes ``cancelled`` (the transformers engine); counted in
    ``stats["cancelled"]``.
    """

    def __init__(self, backend: Any, max_requests: int, wait_s: float) -> None:
        self.backend = backend
        self.max_requests = max(1, max_requests)
        self.wait_s = wait_s
        self._queue: asyncio.Queue[_Pending] | None = None
        self._task: asyncio.Task | None = None
        self.stats = {"served": 0, "dropped": 0, "failed": 0, "cancelled": 0}
        method = getattr(backend, "generate_detailed", None)
        params = inspect.signature(method).parameters if method is not None else {}
        self.streams = "on_token" in params
        self.cancels = "cancelled" in params

    @property
    def queued(self) -> int:
        """Requests waiting for a batch (not counting the batch being generated)."""
        return self._queue.qsize() if self._queue is not None else 0

    async def submit(self, messages: list[dict[str, str]], settings: GenerationSettings, n: int,
                     is_disconnected: Callable[[], Awaitable[bool]] | None = None, top_logprobs: int = 0,
                     on_token: Callable[[Any], None] | None = None, cancel: threading.Event | None = None
                     ) -> list[Any]:
        """Queue one request and wait for its ``n`` detailed generations.

        ``cancel``: set when nobody waits for the answer any more (the client disconnected): a queued request is
        dropped, one generating stops at the next step (its future then holds :class:`_ClientGone`).

        ``on_token`` (``stream=True``) is called in the event loop's thread with each
        :class:`~surveyalign.backends.token_stream.StreamedToken` of this request while its batch generates, when
        the backend can hand tokens out (a ``generate_detailed`` with an ``on_token`` parameter); else never.
        """
        if self._queue is None:
            self._queue = asyncio.Queue()
            self._task = asyncio.get_running_loop().create_task(self._run())
        future = asyncio.get_running_loop().create_future()
        await self._queue.put(_Pending(messages, settings, n, future, is_disconnected, top_logprobs, on_token,
                                       cancel))
        return await future

    async def _gone(self, item: _Pending) -> bool:
        """True (the item's future then holds :class:`_ClientGone`) when nobody waits for its answer any more."""
        if item.future.done():  # the awaiting handler was cancelled
            return True
        if item.cancel is not None and item.cancel.is_set():
            item.future.set_exception(_ClientGone())
            return True
        if item.is_disconnected is None:
            return False
        try:
            gone = await item.is_disconnected()
        except Exception:  # noqa: BLE001 - cannot tell: keep the request
            return False
        if gone:
            item.future.set_exception(_ClientGone())
        return gone

    async def _run(self) -> None:
        assert self._queue is not None
        while True:
            batch = [await self._queue.get()]
            deadline = time.monotonic() + self.wait_s
            while len(batch) < self.max_requests:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                try:
                    batch.append(await asyncio.wait_for(self._queue.get(), remaining))
                except TimeoutError:
                    break
            # seeds are per row, so requests differing only in their seed share a batch
            groups: dict[tuple[GenerationSettings, int, int], list[_Pending]] = {}
            for item in batch:
                key = (item.settings.model_copy(update={"seed": 0}), item.n, item.top_logprobs)
                groups.setdefault(key, []).append(item)
            for (settings, n, top), waiting in groups.items():
                # checked per group, right before it starts: earlier groups may have run for a while
                items = [item for item in waiting if not await self._gone(item)]
                self.stats["dropped"] += len(waiting) - len(items)
                if not items:
                    continue
                extra: dict[str, Any] = {"top_logprobs": top} if top else {}
                if any(i.on_token for i in items) and self.streams:
                    extra["on_token"] = _dispatch(asyncio.get_running_loop(), [i.on_token for i in items])
                if self.cancels and any(i.cancel is not None for i in items):
                    events = [i.cancel for i in items]
                    extra["cancelled"] = lambda p, events=events: events[p] is not None and events[p].is_set()
                try:
                    rows = await asyncio.to_thread(self.backend.generate_detailed, [i.messages for i in items],
                                                   settings, n, [i.settings.seed for i in items], **extra)
                except Exception as exc:  # noqa: BLE001 - reported to each waiting request as HTTP 500
                    self.stats["failed"] += len(items)
                    for item in items:
                        if not item.future.done():
                            item.future.set_exception(exc)
                    continue
                for item, row in zip(items, rows):
                    if item.cancel is not None and item.cancel.is_set():
                        self.stats["cancelled"] += 1
                        if not item.future.done():
                            item.future.set_exception(_ClientGone())
                        continue
                    self.stats["served"] += 1
                    if not item.future.done():
                        item.future.set_result(row)


def _dispatch(loop: asyncio.AbstractEventLoop, handlers: list[Callable[[Any], None] | None]
              ) -> Callable[[Any], None]:
    """``on_token`` for one batch: hands each token, from the generating thread, to its request's handler (row
    ``token.prompt`` of the batch is request ``handlers[token.prompt]``) in the event loop's thread."""
    def on_token(token: Any) -> None:
        handler = handlers[token.prompt]
        if handler is not None:
            loop.call_soon_threadsafe(handler, token)
    return on_token


def _cut_at_stop(text: str, stops: list[str]) -> tuple[str, bool]:
    """``text`` up to (not including) the earliest of ``stops``, and whether one was found."""
    cuts = [i for i in (text.find(stop) for stop in stops) if i >= 0]
    return (text[:min(cuts)], True) if cuts else (text, False)


def _token_spans(tokenizer: Any, ids: list[int]) -> list[str]:
    """The text each token adds to the decoded answer (incremental decoding, so multi-byte characters split over
    several tokens land on the token that completes them; the pieces join to ``decode(ids)``)."""
    pieces, previous = [], ""
    for k in range(1, len(ids) + 1):
        text = tokenizer.decode(ids[:k], skip_special_tokens=False)
        if text.endswith("\ufffd") and k < len(ids):  # an incomplete character: wait for the next token
            pieces.append("")
            continue
        pieces.append(text[len(previous):])
        previous = text
    return pieces

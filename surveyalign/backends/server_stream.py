"""Server-sent events of ``surveyalign serve`` (``stream=True``) in the OpenAI ``chat.completion.chunk`` format.

:func:`live_events` sends each token while the batch is still generating: the transformers backend
hands every token out as soon as its decoding step has run (:mod:`surveyalign.backends.token_stream`); the text a
chunk adds is the incremental decoding of the choice's tokens, held back while it could be the start of a
``stop`` string and never sent past one. When the batch ends, the choice's final answer (stop cut, log-probs) is
the reference: whatever it holds beyond what was sent goes in one last content chunk, then the ``finish_reason``
chunk, the usage chunk (``stream_options.include_usage``) and ``[DONE]``. :func:`answer_events` sends an answer
already generated as one chunk per token (backends that cannot hand tokens out, and answers that ended before their
first token was handed out). :func:`watch_disconnect` and :func:`cancel_unless_finished` set a request's cancel event
when its client leaves, so the engine stops generating for it (:class:`~surveyalign.backends.server_batch.
_MicroBatcher`).
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from surveyalign.backends.server_batch import _token_spans

__all__ = ["answer_events", "cancel_unless_finished", "held_back", "live_events", "watch_disconnect"]

#: Seconds between two looks at whether a client is still connected.
DISCONNECT_POLL_S = 0.2


async def watch_disconnect(is_disconnected: Callable[[], Awaitable[bool]], answer: asyncio.Future,
                           cancel: threading.Event, poll_s: float = DISCONNECT_POLL_S) -> None:
    """Set ``cancel`` as soon as the client is gone (``is_disconnected()``, asked every ``poll_s`` seconds) while
    its ``answer`` is pending; returns when the answer is done or the client left."""
    while not answer.done():
        try:
            gone = await is_disconnected()
        except Exception:  # noqa: BLE001 - cannot tell: keep generating
            gone = False
        if gone:
            cancel.set()
            return
        await asyncio.sleep(poll_s)


async def cancel_unless_finished(events: AsyncIterator[bytes], cancel: threading.Event) -> AsyncIterator[bytes]:
    """``events`` as they are; when the stream stops before its end (the client left: the response task is
    cancelled or the generator closed), ``cancel`` is set."""
    finished = False
    try:
        async for event in events:
            yield event
        finished = True
    finally:
        if not finished:
            cancel.set()


def _event(common: dict[str, Any], choices: list[dict[str, Any]], **extra: Any) -> bytes:
    chunk = {**common, "object": "chat.completion.chunk", "choices": choices, **extra}
    return f"data: {json.dumps(chunk, ensure_ascii=False)}\n\n".encode()


def _delta(index: int, delta: dict[str, Any], entries: list[dict[str, Any]] | None = None,
           finish: str | None = None) -> dict[str, Any]:
    return {"index": index, "delta": delta, "logprobs": {"content": entries} if entries is not None else None,
            "finish_reason": finish}


def held_back(text: str, stops: list[str]) -> int:
    """How many characters at the end of ``text`` could be the start of one of ``stops`` (not sent yet).

    Args:
        text: the answer decoded so far (no stop string in it).
        stops: the request's stop strings.

    Returns:
        The length of the longest end of ``text`` that is a proper prefix of a stop string (0: send everything).
    """
    return max([k for stop in stops for k in range(min(len(stop) - 1, len(text)), 0, -1)
                if text.endswith(stop[:k])] or [0])


@dataclass
class _Choice:
    ids: list[int]
    sent: str = ""
    entries: int = 0
    stopped: bool = False


async def live_events(first: Any, tokens: asyncio.Queue, task: asyncio.Future, *, n: int, tokenizer: Any,
                      stops: list[str], want_logprobs: bool, top: int,
                      entry: Callable[[int, float, list[tuple[int, float]]], dict[str, Any]],
                      finish: Callable[[list[Any]], list[dict[str, Any]]], common: dict[str, Any],
                      include_usage: bool) -> AsyncIterator[bytes]:
    """The event stream of a request whose batch is generating: one chunk per token as it comes.

    Args:
        first: the first :class:`~surveyalign.backends.token_stream.StreamedToken` handed out.
        tokens: the queue the generating thread puts the following tokens in.
        task: the request's pending answer (the batch's detailed generations for the ``n`` choices).
        n: choices in the request.
        tokenizer: the served model's tokenizer (incremental decoding).
        stops: the request's stop strings.
        want_logprobs: send a log-prob entry with each token (``logprobs: true``).
        top: alternatives per entry (``top_logprobs``).
        entry: ``(token_id, logprob, alternatives) -> logprob entry`` of the OpenAI format.
        finish: ``details -> answers`` (text cut at the stops, ``finish_reason``, ``ids``, ``logprobs``).
        common: the chunk fields every event carries (id, created, model, system_fingerprint).
        include_usage: end with the usage chunk.

    Yields:
        ``data: {...}\\n\\n`` events, then ``data: [DONE]\\n\\n``.
    """
    nothing = {"usage": None} if include_usage else {}
    choices = [_Choice([]) for _ in range(n)]
    for index in range(n):
        yield _event(common, [_delta(index, {"role": "assistant", "content": ""})], **nothing)

    def step(token: Any) -> bytes | None:
        choice = choices[token.sample]
        if choice.stopped:
            return None
        entries = [entry(token.token_id, token.logprob, token.top[:top])] if want_logprobs else None
        new = ""
        if not token.eos:
            choice.ids.append(token.token_id)
            text = tokenizer.decode(choice.ids, skip_special_tokens=False)
            if not text.endswith("\ufffd"):  # an incomplete character waits for the token that completes it
                cuts = [i for i in (text.find(s) for s in stops) if i >= 0]
                if cuts:
                    text, choice.stopped = text[:min(cuts)], True
                else:
                    text = text[:len(text) - held_back(text, stops)]
                if text.startswith(choice.sent):
                    new, choice.sent = text[len(choice.sent):], text
        choice.entries += len(entries or [])
        if not new and entries is None:
            return None
        return _event(common, [_delta(token.sample, {"content": new}, entries)], **nothing)

    token, getter = first, None
    while True:
        if token is not None:
            event = step(token)
            if event is not None:
                yield event
            token = None
        if getter is None:
            getter = asyncio.ensure_future(tokens.get())
        done, _ = await asyncio.wait({getter, task}, return_when=asyncio.FIRST_COMPLETED)
        if getter in done:
            token, getter = getter.result(), None
            continue
        getter.cancel()  # the batch ended: every token it handed out is already queued
        while not tokens.empty():
            event = step(tokens.get_nowait())
            if event is not None:
                yield event
        break
    try:
        answers = finish(task.result())
    except Exception as exc:  # noqa: BLE001 - the stream has started (HTTP 200): the error is its last event
        yield f"data: {json.dumps({'error': {'message': str(exc), 'type': 'server_error'}})}\n\n".encode()
        yield b"data: [DONE]\n\n"
        return
    for index, (choice, a) in enumerate(zip(choices, answers)):
        rest = a["text"][len(choice.sent):] if a["text"].startswith(choice.sent) else ""
        entries = a["logprobs"][choice.entries:] if a["logprobs"] is not None else None
        if rest or entries:
            yield _event(common, [_delta(index, {"content": rest}, entries)], **nothing)
        yield _event(common, [_delta(index, {}, None, a["finish_reason"])], **nothing)
    if include_usage:
        yield _event(common, [], usage=usage_of(task.result(), answers))
    yield b"data: [DONE]\n\n"


def usage_of(details: list[Any], answers: list[dict[str, Any]]) -> dict[str, int]:
    """The OpenAI ``usage`` block of a request: prompt tokens once, the tokens of every choice."""
    prompt_tokens = details[0].prompt_tokens if details else 0
    completion_tokens = sum(len(a["ids"]) for a in answers)
    return {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens}


async def answer_events(answers: list[dict[str, Any]], common: dict[str, Any], usage: dict[str, Any] | None,
                        tokenizer: Any) -> AsyncIterator[bytes]:
    """The event stream of answers already generated: per choice a role chunk, one chunk per token (its text and
    log-prob entry), the ``finish_reason`` chunk; then the usage chunk (when given) and ``[DONE]``."""
    nothing = {"usage": None} if usage is not None else {}
    for index, a in enumerate(answers):
        yield _event(common, [_delta(index, {"role": "assistant", "content": ""})], **nothing)
        spans = _token_spans(tokenizer, a["ids"]) if a["ids"] else []
        sent = 0
        for k, span in enumerate(spans):
            text = a["text"][sent:sent + len(span)] if sent < len(a["text"]) else ""
            sent += len(text)
            entry = a["logprobs"][k:k + 1] if a["logprobs"] is not None else None
            if not text and entry is None:
                continue
            yield _event(common, [_delta(index, {"content": text}, entry)], **nothing)
        if sent < len(a["text"]):  # whatever the token spans did not cover (a decoder that merges spaces)
            yield _event(common, [_delta(index, {"content": a["text"][sent:]})], **nothing)
        yield _event(common, [_delta(index, {}, None, a["finish_reason"])], **nothing)
    if usage is not None:
        yield _event(common, [], usage=usage)
    yield b"data: [DONE]\n\n"

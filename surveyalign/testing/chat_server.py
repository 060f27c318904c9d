"""A scriptable OpenAI-compatible chat server on 127.0.0.1, for tests and throughput benchmarks.

``FakeChatServer`` answers ``POST /v1/chat/completions`` (and Anthropic's ``POST /v1/messages``) after a fixed delay with canned replies, and can be
told to fail: the first N requests with 429 (and a ``Retry-After`` header), every request with 500, and so
on. It logs every request body and tracks the peak number of requests in flight, so tests can check
retries and concurrency bounds against a real HTTP server instead of mocks. Its ``usage`` counts words: prompt
tokens = whitespace-separated words of every message, completion tokens = words of the answer; given a
``tokenizer`` it counts tokens as a vLLM server does (the chat template rendered with the generation prompt, and
the answer's tokens).

Example::

    from surveyalign.testing import FakeChatServer
    with FakeChatServer(delay=0.2) as server:
        backend = load_backend("openai", base_url=server.base_url, model="fake", concurrency=32)
"""

from __future__ import annotations

import asyncio
import itertools
import json
import threading
import time
from collections.abc import Callable
from typing import Any

from surveyalign.testing.threaded import ThreadedApp

__all__ = ["FakeChatServer"]


def _texts(content: Any) -> list[str]:
    """The texts of a Messages API ``system`` or message ``content`` (a string, or a list of text blocks)."""
    if isinstance(content, str):
        return [content]
    return [str(b.get("text") or "") for b in content or [] if isinstance(b, dict)]


class FakeChatServer(ThreadedApp):
    """A fake OpenAI-compatible server running in a background thread.

    Args:
        delay: seconds to wait before answering each request (``asyncio.sleep``; many requests overlap).
        replies: canned replies, used in turn (cycled); or a callable ``body -> reply``. A reply is the answer text
            (sent as a string ``content``) or a dict ``{"message": {...}, "finish_reason": ...}`` sent as the
            choice as is (typed content parts, ``reasoning_content``, ``refusal``: every shape servers use).
        fail_first: number of initial requests answered with ``fail_status`` before normal replies.
        fail_status: HTTP status for those failures (default 429).
        retry_after: ``Retry-After`` header value sent with failures (``None``: no header).
        always_status: when set, every request is answered with this status (e.g. 500).
        echo_headers: failures quote the request's headers in their error body, ``Authorization`` included (as
            some servers do in a 401): the stand-in for testing that keys are redacted.
        finish_reason: ``finish_reason`` of successful replies.
        logprob: when not ``None`` and the request asks for logprobs, each reply word gets this log-prob.
        model: model id listed by ``GET /v1/models``.
        max_choices: honour a request's ``n`` (one reply per choice, in turn) but return at most this many
            choices (``None``: all ``n``): the stand-in for a server that answers fewer choices than asked.
        max_model_len: when set, ``GET /v1/models`` lists it (as vLLM does) for clients reading the context.
        tokenizer: a ``transformers`` tokenizer with a chat template: ``usage`` counts its tokens instead of words.
        prompt_cache: a :class:`~surveyalign.testing.prompt_cache.StandInPromptCache` modelling OpenAI's automatic
            prefix cache (a prefix seen within its ``ttl_s`` is read: ``usage.prompt_tokens_details.cached_tokens``)
            and, on ``/v1/messages``, Anthropic's marked breakpoints (``cache_read_input_tokens`` /
            ``cache_creation_input_tokens``); ``None`` (default): nothing is cached.
        port: port to bind on 127.0.0.1; 0 picks a free one.

    Attributes:
        requests: JSON bodies of every ``/v1/chat/completions`` and ``/v1/messages`` request, in arrival order.
        request_headers: the matching request headers (lower-case names), e.g. to check ``authorization``.
        request_times: ``time.monotonic()`` of each request's arrival.
        max_in_flight: the largest number of requests being handled at the same time.
        base_url: ``http://127.0.0.1:<port>/v1`` once started.
    """

    def __init__(
        self,
        *,
        delay: float = 0.0,
        replies: list[str | dict[str, Any]] | Callable[[dict[str, Any]], str | dict[str, Any]] | None = None,
        fail_first: int = 0,
        fail_status: int = 429,
        retry_after: str | None = "0",
        always_status: int | None = None,
        echo_headers: bool = False,
        finish_reason: str = "stop",
        logprob: float | None = -0.5,
        model: str = "fake-judge",
        max_choices: int | None = None,
        max_model_len: int | None = None,
        tokenizer: Any = None,
        port: int = 0,
        prompt_cache: Any = None,
    ) -> None:
        self.tokenizer = tokenizer
        self.prompt_cache = prompt_cache
        self.delay = float(delay)
        self._replies = replies if replies is not None else ["The survey is fine.$$$-1$$$"]
        self._cycle = itertools.cycle(self._replies) if isinstance(self._replies, list) else None
        self.fail_first = int(fail_first)
        self.fail_status = int(fail_status)
        self.retry_after = retry_after
        self.always_status = always_status
        self.echo_headers = echo_headers
        self.finish_reason = finish_reason
        self.logprob = logprob
        self.model = model
        self.max_choices = max_choices
        self.max_model_len = max_model_len
        self.requests: list[dict[str, Any]] = []
        self.request_headers: list[dict[str, str]] = []
        self.request_times: list[float] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        self._serve(self._build_app(), port)

    # ------------------------------------------------------------------ lifecycle
    @property
    def base_url(self) -> str:
        """API root for clients, ``http://127.0.0.1:<port>/v1``."""
        return f"http://127.0.0.1:{self.port}/v1"

    def reset(self) -> None:
        """Forget logged requests and the in-flight peak."""
        with self._lock:
            self.requests.clear()
            self.request_headers.clear()
            self.request_times.clear()
            self.max_in_flight = 0

    # ------------------------------------------------------------------ app
    def _next_reply(self, body: dict[str, Any]) -> str | dict[str, Any]:
        if self._cycle is not None:
            with self._lock:
                return next(self._cycle)
        return self._replies(body)  # type: ignore[operator]

    def _usage(self, body: dict[str, Any], prompt_words: int, text: str) -> dict[str, int]:
        """Words (default), or tokens of ``tokenizer``: the rendered prompt and the answer."""
        prompt, completion = prompt_words, len(text.split())
        if self.tokenizer is not None:
            kwargs = body.get("chat_template_kwargs") or {}
            rendered = self.tokenizer.apply_chat_template(body.get("messages") or [], tokenize=False,
                                                          add_generation_prompt=True, **kwargs)
            prompt = len(self.tokenizer(rendered, add_special_tokens=False)["input_ids"])
            completion = len(self.tokenizer(text, add_special_tokens=False)["input_ids"])
        return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}

    def _choice(self, body: dict[str, Any], reply: str | dict[str, Any]) -> tuple[dict[str, Any], str]:
        """One ``choices[i]`` entry of ``reply`` (index 0; the caller renumbers) and its answer text."""
        if isinstance(reply, dict):
            choice = {"index": 0, "finish_reason": self.finish_reason, **reply}
            content = choice.get("message", {}).get("content")
            text = content if isinstance(content, str) else ""
        else:
            text = reply
            choice = {"index": 0, "message": {"role": "assistant", "content": text},
                      "finish_reason": self.finish_reason}
        if body.get("logprobs") and self.logprob is not None:
            choice["logprobs"] = {"content": [{"token": word, "logprob": self.logprob} for word in text.split()]}
        return choice, text

    def _chat_reply(self, body: dict[str, Any], index: int) -> dict[str, Any]:
        """The ``/v1/chat/completions`` reply to ``body`` (request number ``index``)."""
        prompt_words = sum(len(str(m.get("content") or "").split()) for m in body.get("messages") or []
                           if isinstance(m, dict))
        n = max(1, int(body.get("n") or 1))  # one reply per asked choice, in turn
        if self.max_choices is not None:
            n = min(n, max(1, int(self.max_choices)))
        choices, texts = [], []
        for i in range(n):
            choice, text = self._choice(body, self._next_reply(body))
            choices.append({**choice, "index": i})
            texts.append(text)
        usage = self._usage(body, prompt_words, texts[0])
        if self.prompt_cache is not None:
            usage["prompt_tokens_details"] = {
                "cached_tokens": self.prompt_cache.openai(body.get("messages") or [], body.get("model"))}
        for text in texts[1:]:  # the prompt is billed once, every choice's answer counted
            more = self._usage(body, prompt_words, text)["completion_tokens"]
            usage["completion_tokens"] += more
            usage["total_tokens"] += more
        # usage counts words: prompt = words of every message, completion = words of the answers
        return {"id": f"chatcmpl-fake-{index}", "object": "chat.completion", "created": int(time.time()),
                "model": body.get("model", self.model), "choices": choices, "usage": usage}

    def _messages_reply(self, body: dict[str, Any], index: int) -> dict[str, Any]:
        """The Anthropic ``/v1/messages`` reply to ``body``: the next canned reply as one text block (after a
        thinking block when the request asks for ``thinking``), ``stop_reason`` ``end_turn`` (``max_tokens`` when
        ``finish_reason`` is ``"length"``), and usage in words: ``input_tokens``, ``cache_read_input_tokens`` and
        ``cache_creation_input_tokens`` from ``prompt_cache``
        (:meth:`~surveyalign.testing.prompt_cache.StandInPromptCache.anthropic`; without one every prompt word is
        ``input_tokens``)."""
        reply = self._next_reply(body)
        text = reply if isinstance(reply, str) else str((reply.get("message") or {}).get("content") or "")
        content: list[dict[str, Any]] = []
        if body.get("thinking"):
            content.append({"type": "thinking", "thinking": "Weighing the survey.", "signature": "stand-in"})
        content.append({"type": "text", "text": text})
        if self.prompt_cache is not None:
            usage = self.prompt_cache.anthropic(body)
        else:
            words = sum(len(t.split()) for t in _texts(body.get("system")))
            words += sum(len(t.split()) for m in body.get("messages") or [] for t in _texts(m.get("content")))
            usage = {"input_tokens": words, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}
        usage["output_tokens"] = len(text.split())
        return {"id": f"msg_fake_{index}", "type": "message", "role": "assistant",
                "model": body.get("model", self.model), "content": content,
                "stop_reason": "max_tokens" if self.finish_reason == "length" else "end_turn", "usage": usage}

    def _build_app(self) -> Any:
        from starlette.applications import Starlette
        from starlette.requests import Request
        from starlette.responses import JSONResponse
        from starlette.routing import Route

        async def chat(request: Request) -> JSONResponse:
            return await handle(request, self._chat_reply)

        async def messages(request: Request) -> JSONResponse:
            return await handle(request, self._messages_reply)

        async def handle(request: Request, answer: Callable[[dict[str, Any], int], dict[str, Any]]) -> JSONResponse:
            try:
                body = json.loads(await request.body())
            except ValueError:
                return JSONResponse({"error": {"message": "body is not JSON", "type": "invalid_request_error"}},
                                    status_code=400)
            with self._lock:
                index = len(self.requests)
                self.requests.append(body)
                self.request_headers.append(dict(request.headers))
                self.request_times.append(time.monotonic())
                self.in_flight += 1
                self.max_in_flight = max(self.max_in_flight, self.in_flight)
            try:
                if self.delay > 0:
                    await asyncio.sleep(self.delay)
                status = self.always_status or (self.fail_status if index < self.fail_first else 200)
                if status != 200:
                    headers = {"Retry-After": self.retry_after} if self.retry_after is not None else None
                    message = f"scripted failure {status}"
                    if self.echo_headers:
                        message += f"; request headers were {dict(request.headers)}"
                    return JSONResponse({"error": {"message": message, "type": "fake"}},
                                        status_code=status, headers=headers)
                return JSONResponse(answer(body, index))
            finally:
                with self._lock:
                    self.in_flight -= 1

        async def models(request: Request) -> JSONResponse:
            entry: dict[str, Any] = {"id": self.model, "object": "model"}
            if self.max_model_len is not None:
                entry["max_model_len"] = int(self.max_model_len)
            return JSONResponse({"object": "list", "data": [entry]})

        return Starlette(routes=[
            Route("/v1/chat/completions", chat, methods=["POST"]),
            Route("/v1/messages", messages, methods=["POST"]),
            Route("/v1/models", models, methods=["GET"]),
        ])


def main(argv: list[str] | None = None) -> int:
    """Run a :class:`FakeChatServer` in the foreground: ``python -m surveyalign.testing.chat_server --delay 0.2``.

    Prints ``base_url=http://127.0.0.1:<port>/v1`` on one line once it listens (for benchmark scripts that
    want the server in a separate process, off the client's GIL), then serves until interrupted.
    """
    import argparse

    parser = argparse.ArgumentParser(prog="python -m surveyalign.testing.chat_server",
                                     description="Fake OpenAI-compatible chat server on 127.0.0.1.")
    parser.add_argument("--delay", type=float, default=0.2, help="seconds before each answer (default 0.2)")
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1; 0 picks a free one")
    parser.add_argument("--fail-first", type=int, default=0, help="answer the first N requests with --fail-status")
    parser.add_argument("--fail-status", type=int, default=429, help="status of scripted failures (default 429)")
    parser.add_argument("--reply", action="append", help="canned reply text (repeatable; cycled)")
    args = parser.parse_args(argv)
    server = FakeChatServer(delay=args.delay, port=args.port, fail_first=args.fail_first,
                            fail_status=args.fail_status, replies=args.reply).start()
    print(f"base_url={server.base_url}", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())

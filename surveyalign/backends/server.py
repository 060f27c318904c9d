"""``surveyalign serve``: an OpenAI-compatible HTTP server over a local model (+ optional PEFT adapter).

Endpoints: ``POST /v1/chat/completions`` (messages, temperature, top_p, max_tokens / max_completion_tokens, n,
seed, logprobs, top_logprobs, stop, stream with ``stream_options.include_usage``,
chat_template_kwargs.enable_thinking), ``GET /v1/models``, ``GET /health``. ``stream=True`` answers with
server-sent events in the OpenAI ``chat.completion.chunk`` format, token by token while the batch generates
(:mod:`surveyalign.backends.server_stream`; the transformers backend hands each token out as its step has run). ``stop`` strings cut the answer at the first one found (``finish_reason`` "stop"; the
token log-probs end with the token that reached it). An API key, request limits and timeouts
(:mod:`surveyalign.backends.server_guard`) make it safe to expose on a cluster. Concurrent
requests with the same sampling settings are grouped into one batched ``generate`` call (micro-batching),
and sampling is seeded per row, so a request's answer does not depend on what it was batched with.
Bad requests get HTTP 400 with an OpenAI-style ``{"error": {...}}`` body; an unknown model name gets 404.
A queued request whose client has disconnected (a killed ``surveyalign evaluate``, a client timeout) is dropped
right before its batch would start, so work nobody waits for does not delay new requests; ``/health`` counts
served, dropped, cancelled and failed requests. A request whose client leaves while its batch generates (a
streaming client that closed the connection) is cancelled: the transformers engine stops its rows at the next
step, and the batch ends as soon as no row is left, so other clients do not wait for ``n x max_tokens`` nobody
reads.

The served backend's content fingerprint (:func:`~surveyalign.backends.fingerprint.served_fingerprint`: model,
adapter and tokenizer digests, no paths) is published as ``"surveyalign": {"fingerprint": ...}`` in the
``/v1/models`` entry and in the ``x-surveyalign-fingerprint`` header of chat completions, so the ``openai``
backend's cache identity follows the weights behind the server. Each ``/v1/models`` entry also lists the model's
context in tokens as ``max_model_len`` (as vLLM does), which the ``openai`` backend reads so that a survey longer
than the context is cut or refused before it is sent.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import threading
import time
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from surveyalign.backends._http import _UvicornThread
from surveyalign.backends.base import GenerationSettings
from surveyalign.backends.fingerprint import FINGERPRINT_HEADER, served_fingerprint
from surveyalign.backends.server_batch import (
    _ClientGone,
    _cut_at_stop,
    _MicroBatcher,
    _token_spans,
)
from surveyalign.backends.server_guard import (
    BodyError,
    ServerLimits,
    http_protocol_class,
    is_loopback,
    read_json_object,
)
from surveyalign.backends.server_schema import ChatRequest
from surveyalign.backends.server_stream import (
    answer_events,
    cancel_unless_finished,
    live_events,
    usage_of,
    watch_disconnect,
)
from surveyalign.redact import redact_secrets


def _error(status: int, message: str, kind: str = "invalid_request_error", param: str | None = None) -> Any:
    from starlette.responses import JSONResponse

    return JSONResponse({"error": {"message": message, "type": kind, "param": param, "code": None}},
                        status_code=status)


def build_app(backend: Any, served_model_name: str, *, batch_wait_s: float = 0.005,
              default_max_tokens: int = 1024, extra_models: Mapping[str, Any] | None = None,
              limits: ServerLimits | None = None) -> Any:
    """Build the Starlette app serving ``backend`` under the name ``served_model_name`` (and more models).

    Args:
        backend: a :class:`~surveyalign.backends.hf.TransformersBackend` (anything with
            ``generate_detailed(prompts, settings, n, seeds[, top_logprobs=k])`` and a ``tokenizer``).
        served_model_name: the model id of ``backend``; the default when a request names no model.
        batch_wait_s: how long the first queued request waits for others to batch with, in seconds.
        default_max_tokens: token cap when a request sets neither ``max_tokens`` nor ``max_completion_tokens``.
        extra_models: further ``{model id: backend}`` served side by side, e.g. each dimension adapter of a
            multi-adapter backend (``backend.adapter_view(name)``), as vLLM's ``--lora-modules`` publishes LoRA
            adapters; each model id gets its own micro-batcher and fingerprint.
        limits: API key and request limits (:class:`~surveyalign.backends.server_guard.ServerLimits`); default:
            no key, default limits.

    Returns:
        A Starlette ASGI application. When ``backend.describe()`` holds content ``fingerprints``, their digest
        (:func:`~surveyalign.backends.fingerprint.served_fingerprint`) is listed in the ``/v1/models`` entry as
        ``"surveyalign": {"fingerprint": <64 hex>}`` and sent in the ``x-surveyalign-fingerprint`` header of
        every chat completion.

    Raises:
        Nothing at build time; per-request problems are answered as OpenAI-style errors (400 bad request, too deep
        or prompt too long, 401 missing or wrong API key, 404 unknown model, 408 stalled body, 413 body too large,
        500 failed generation).
    """
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse, Response, StreamingResponse
    from starlette.routing import Route

    limits = limits or ServerLimits()
    created = int(time.time())
    served = {served_model_name: backend, **dict(extra_models or {})}
    batchers: dict[str, _MicroBatcher] = {}
    headers: dict[str, dict[str, str] | None] = {}
    entries: list[dict[str, Any]] = []
    for name, model_backend in served.items():
        batchers[name] = _MicroBatcher(model_backend, max_requests=getattr(model_backend, "batch_size", 8),
                                       wait_s=batch_wait_s)
        describe = getattr(model_backend, "describe", None)
        fingerprint = served_fingerprint(describe()) if callable(describe) else None
        headers[name] = {FINGERPRINT_HEADER: fingerprint} if fingerprint else None
        context = next((v for v in (getattr(model_backend, "max_positions", None),
                                     getattr(model_backend, "max_model_len", None)) if isinstance(v, int) and v > 0),
                       None)  # published like vLLM, so clients can cut a long prompt before sending it
        entries.append({"id": name, "object": "model", "created": created, "owned_by": "surveyalign",
                        **({"max_model_len": context} if context else {}),
                        **({"surveyalign": {"fingerprint": fingerprint}} if fingerprint else {})})
    token_text: dict[int, str] = {}
    watchers: set[asyncio.Future] = set()

    def piece(token_id: int) -> str:
        if token_id not in token_text:
            token_text[token_id] = backend.tokenizer.decode([token_id], skip_special_tokens=False)
        return token_text[token_id]

    def logprob_entry(token_id: int, logprob: float, alternatives: list[tuple[int, float]]) -> dict[str, Any]:
        text = piece(token_id)
        return {"token": text, "logprob": logprob, "bytes": list(text.encode("utf-8")),
                "top_logprobs": [{"token": piece(t), "logprob": lp, "bytes": list(piece(t).encode("utf-8"))}
                                 for t, lp in alternatives]}

    def unauthorized(request: Request) -> Response | None:
        if limits.authorized(request.headers.get("authorization")):
            return None
        response = _error(401, "missing or wrong API key: send the header 'Authorization: Bearer <key>'",
                          kind="authentication_error")
        response.headers["www-authenticate"] = "Bearer"
        return response

    def answer(detail: Any, stops: list[str], top: int, want_logprobs: bool) -> dict[str, Any]:
        """The choice's text, finish reason and per-token logprob entries, after the stop strings."""
        text, finish = detail.generation.text, detail.generation.finish_reason
        ids, lps = list(detail.token_ids), list(detail.token_logprobs)
        alternatives = list(detail.top_logprobs) if top else []
        text, stopped = _cut_at_stop(text, stops)
        if stopped:
            finish = "stop"
            spans, seen, keep = _token_spans(backend.tokenizer, ids), 0, 0
            for keep, span in enumerate(spans, 1):  # keep the tokens up to the one that reached the stop string
                seen += len(span)
                if seen >= len(text) + 1:
                    break
            ids, lps, alternatives = ids[:keep], lps[:keep], alternatives[:keep]
        entries_ = None
        if want_logprobs:
            entries_ = [logprob_entry(t, lp, alternatives[k][:top] if k < len(alternatives) else [])
                        for k, (t, lp) in enumerate(zip(ids, lps))]
        return {"text": text, "finish_reason": finish, "ids": ids, "logprobs": entries_}

    async def chat(request: Request) -> Response:
        if (denied := unauthorized(request)) is not None:
            return denied
        try:
            payload = await read_json_object(request, limits)
        except BodyError as err:
            return _error(err.status, str(err))
        try:
            req = ChatRequest.model_validate(payload)
        except ValidationError as exc:
            first = exc.errors()[0]
            param = ".".join(str(p) for p in first.get("loc", ()))
            return _error(400, f"invalid request: {param}: {first.get('msg')}", param=param or None)
        name = served_model_name if req.model is None else req.model
        if name not in served:
            return _error(404, f"model {req.model!r} is not served here; available: {sorted(served)}",
                          kind="not_found_error", param="model")
        messages = [m.as_dict() for m in req.messages]
        chars = sum(len(m["content"]) for m in messages)
        if chars > limits.max_prompt_chars:  # before any tokenising: a 10 MB prompt costs seconds and GBs there
            response = _error(400, f"the messages hold {chars:,} characters, above this server's limit of "
                                   f"{limits.max_prompt_chars:,}", param="messages")
            return response
        settings = GenerationSettings(
            temperature=req.temperature,
            top_p=req.top_p,
            max_new_tokens=req.max_completion_tokens or req.max_tokens or default_max_tokens,
            seed=req.seed if req.seed is not None else secrets.randbelow(2**31),
            enable_thinking=req.chat_template_kwargs.enable_thinking,
        )
        top = req.top_logprobs or 0
        common = {"id": f"chatcmpl-{uuid.uuid4().hex}", "created": int(time.time()), "model": name,
                  "system_fingerprint": f"seed-{settings.seed}"}
        include_usage = bool(req.stream and req.stream_options and req.stream_options.include_usage)
        tokens: asyncio.Queue = asyncio.Queue()
        cancel = threading.Event()  # set when the client leaves: the engine stops this request's rows
        task = asyncio.ensure_future(batchers[name].submit(messages, settings, req.n, request.is_disconnected, top,
                                                           on_token=tokens.put_nowait if req.stream else None,
                                                           cancel=cancel))
        task.add_done_callback(lambda t: t.cancelled() or t.exception())  # a cancelled stream's answer: read here
        watcher = asyncio.ensure_future(watch_disconnect(request.is_disconnected, task, cancel))
        watchers.add(watcher)  # held until it ends (the loop keeps only weak references to tasks)
        watcher.add_done_callback(watchers.discard)
        try:
            if req.stream:  # the first token before the batch ends: stream the rest as it is generated
                first = asyncio.ensure_future(tokens.get())
                await asyncio.wait({first, task}, return_when=asyncio.FIRST_COMPLETED)
                if first.done() and not task.done():
                    events = live_events(first.result(), tokens, task, n=req.n, tokenizer=backend.tokenizer,
                                         stops=req.stop_strings, want_logprobs=req.logprobs, top=top,
                                         entry=logprob_entry,
                                         finish=lambda details: [answer(d, req.stop_strings, top, req.logprobs)
                                                                 for d in details],
                                         common=common, include_usage=include_usage)
                    return StreamingResponse(cancel_unless_finished(events, cancel), media_type="text/event-stream",
                                             headers=headers[name])
                first.cancel()
            details = await task
        except _ClientGone:  # nobody reads this answer; 499 as nginx logs a closed client
            return _error(499, "client disconnected before its answer was written", kind="client_closed_request")
        except Exception as exc:  # noqa: BLE001 - a failed batch answers HTTP 500, the server keeps going
            return _error(500, redact_secrets(f"generation failed: {type(exc).__name__}: {exc}"), kind="server_error")
        failed = [d.generation.error for d in details if d.generation.error]
        if failed:
            return _error(400, failed[0], param="messages")
        answers = [answer(d, req.stop_strings, top, req.logprobs) for d in details]
        usage = usage_of(details, answers)
        if req.stream:  # the answer ended before a token was handed out (or the backend hands none out)
            return StreamingResponse(answer_events(answers, common, usage if include_usage else None,
                                                   backend.tokenizer),
                                     media_type="text/event-stream", headers=headers[name])
        choices = [{"index": index, "message": {"role": "assistant", "content": a["text"]},
                    "finish_reason": a["finish_reason"],
                    "logprobs": {"content": a["logprobs"]} if a["logprobs"] is not None else None}
                   for index, a in enumerate(answers)]
        return JSONResponse({**common, "object": "chat.completion", "choices": choices, "usage": usage},
                            headers=headers[name])

    async def models(request: Request) -> Response:
        if (denied := unauthorized(request)) is not None:
            return denied
        return JSONResponse({"object": "list", "data": entries})

    async def health(request: Request) -> JSONResponse:
        # requests: served = answered by a batch, dropped = client gone before its batch started,
        # cancelled = client gone while its batch generated; failed = their batch raised (HTTP 500);
        # queued = waiting for a batch now
        totals = {key: sum(b.stats[key] for b in batchers.values())
                  for key in ("served", "dropped", "cancelled", "failed")}
        return JSONResponse({"status": "ok", "queued": sum(b.queued for b in batchers.values()), "requests": totals,
                             "models": {n: dict(b.stats) for n, b in batchers.items()}})

    return Starlette(routes=[
        Route("/v1/chat/completions", chat, methods=["POST"]),
        Route("/v1/models", models, methods=["GET"]),
        Route("/health", health, methods=["GET"]),
    ])


def default_served_name(model: str, adapter: str | None = None) -> str:
    """Default model id: the adapter folder's name when an adapter is served, else the model folder's name.

    Args:
        model: base model folder (or hub id).
        adapter: PEFT adapter folder, or ``None``.

    Returns:
        The last path component of ``adapter`` (else ``model``) after resolving it, e.g. ``"adapter-readability"``.

    Raises:
        Nothing: a path that does not exist is still named by its last component.
    """
    return Path(adapter or model).resolve().name or str(model)


def adapter_models(backend: Any) -> dict[str, Any]:
    """``{adapter name: backend view}`` of a multi-adapter backend (``adapters={...}``), served beside the base.

    Args:
        backend: a ``TransformersBackend``; one without named adapters gives ``{}``.

    Returns:
        One :class:`~surveyalign.backends.adapters.AdapterView` per named adapter, in load order.
    """
    return {name: backend.adapter_view(name) for name in getattr(backend, "adapter_paths", {}) or {}}


@dataclass
class ServerHandle:
    """A running server: ``base_url`` (``http://host:port/v1``), the base model id, the backend and the ids of
    its adapters served as models of their own (``adapter_models``)."""

    base_url: str
    model: str
    backend: Any
    port: int
    adapter_models: list[str] = field(default_factory=list)


@contextlib.contextmanager
def serve_in_thread(model: str | None = None, adapter: str | None = None, *, backend: Any = None,
                    served_model_name: str | None = None, host: str = "127.0.0.1", port: int = 0,
                    limits: ServerLimits | None = None, **backend_options: Any) -> Iterator[ServerHandle]:
    """Serve a local model over the OpenAI API in a background thread (for tests and notebooks).

    Args:
        model: model folder (ignored when ``backend`` is given).
        adapter: optional PEFT adapter folder.
        backend: an already built ``TransformersBackend`` to serve instead of loading one.
        served_model_name: model id; defaults to :func:`default_served_name`.
        host: interface to bind; 127.0.0.1 by default.
        port: port; 0 picks a free one.
        limits: API key, request limits and timeouts (default: no key, default limits).
        **backend_options: extra ``TransformersBackend`` options (device, dtype, batch_size, ``adapters={name:
            folder}``: each adapter is then served as the model ``name``...).

    Yields:
        A :class:`ServerHandle`; the server stops when the block exits.

    Raises:
        ValueError: neither ``model`` nor ``backend`` is given, or an invalid backend option.
        OSError: the model folder cannot be loaded, or the port cannot be bound.
    """
    owned = backend is None
    if backend is None:
        if model is None:
            raise ValueError("serve_in_thread needs model= or backend=")
        from surveyalign.backends.hf import TransformersBackend

        backend = TransformersBackend(model=str(model), adapter=str(adapter) if adapter else None, **backend_options)
    name = served_model_name or default_served_name(backend.model_path, backend.adapter_path)
    extra = adapter_models(backend)
    limits = limits or ServerLimits()
    runner = _UvicornThread(build_app(backend, name, extra_models=extra, limits=limits), host=host, port=port,
                            **_uvicorn_options(limits))
    runner.start()
    try:
        yield ServerHandle(base_url=f"http://{host}:{runner.port}/v1", model=name, backend=backend, port=runner.port,
                           adapter_models=list(extra))
    finally:
        runner.stop()
        if owned:
            backend.close()


def _uvicorn_options(limits: ServerLimits) -> dict[str, Any]:
    """uvicorn settings for ``limits``: the h11 protocol with a header timeout, the keep-alive idle timeout and a
    16 KB cap on the request line and headers."""
    return {"http": http_protocol_class(limits.header_timeout_s), "timeout_keep_alive": limits.keep_alive_s,
            "h11_max_incomplete_event_size": 16 * 1024}


def serve(model: str, adapter: str | None = None, *, host: str = "127.0.0.1", port: int = 8000,
          served_model_name: str | None = None, log_level: str = "info", batch_wait_s: float = 0.005,
          default_max_tokens: int = 1024, limits: ServerLimits | None = None, **backend_options: Any) -> None:
    """Load the model and serve it in the foreground until interrupted (``surveyalign serve``).

    Serves ``POST /v1/chat/completions`` (OpenAI-compatible: temperature, top_p, max_tokens /
    max_completion_tokens, n, seed, logprobs, top_logprobs, stop, stream, ``chat_template_kwargs.enable_thinking``),
    ``GET /v1/models`` and
    ``GET /health``, so a local judge or adapter runs through the same openai backend as the API judges
    (SurveyReview §6.1). Concurrent requests are micro-batched; sampling is seeded per request.

    Args:
        model: base model folder (or cached hub id) loaded with ``TransformersBackend``.
        adapter: optional PEFT adapter folder applied on top (merged by default).
        host: interface to bind; ``127.0.0.1`` keeps the server local.
        port: TCP port, 1-65535.
        served_model_name: model id clients send; default :func:`default_served_name` (the adapter or model
            folder's name).
        log_level: uvicorn log level (``"critical"``, ``"error"``, ``"warning"``, ``"info"``, ``"debug"``).
        batch_wait_s: seconds the first queued request waits for others to share its batch (>= 0).
        default_max_tokens: new-token cap for requests that set none.
        limits: API key, request limits and timeouts (:class:`~surveyalign.backends.server_guard.ServerLimits`);
            a non-loopback ``host`` without a key prints a warning.
        **backend_options: further ``TransformersBackend`` options (device, dtype, batch_size,
            ``adapters={name: folder}``: the base is loaded once and each adapter is served as the model ``name``,
            as vLLM's ``--lora-modules`` does; the base model stays available under ``served_model_name``).

    Returns:
        ``None``, once uvicorn stops (Ctrl-C / SIGTERM).

    Raises:
        ValueError: an invalid backend option (dtype, batch_size).
        OSError: the model or adapter folder cannot be loaded, or the port is in use.
    """
    import sys

    import uvicorn

    from surveyalign.backends.hf import TransformersBackend

    limits = limits or ServerLimits()
    if limits.api_key is None and not is_loopback(host):
        print(f"WARNING: serving on {host} without an API key: anyone who can reach this port can use the model; "
              f"set --api-key or SURVEYALIGN_API_KEY", file=sys.stderr, flush=True)
    backend = TransformersBackend(model=model, adapter=adapter, **backend_options)
    name = served_model_name or default_served_name(model, adapter)
    extra = adapter_models(backend)
    app = build_app(backend, name, batch_wait_s=batch_wait_s, default_max_tokens=default_max_tokens,
                    extra_models=extra, limits=limits)
    described = backend.describe()
    bits = (described.get("quantization") or {}).get("bits")
    print(f"serving {', '.join(repr(n) for n in [name, *extra])} ({described['device']}"
          f"{f', base in {bits}-bit' if bits else ''}) at http://{host}:{port}/v1", flush=True)
    for line in described.get("base_mismatch") or []:  # --allow-base-mismatch: said once, loudly
        print(f"WARNING: serving on another base than the adapter's training record: {line}", flush=True)
    print(f"API key: {'required (Authorization: Bearer ...)' if limits.api_key else 'none'}; request body <= "
          f"{limits.max_body_bytes:,} bytes; prompt <= {limits.max_prompt_chars:,} characters", flush=True)
    uvicorn.run(app, host=host, port=port, log_level=log_level, **_uvicorn_options(limits))

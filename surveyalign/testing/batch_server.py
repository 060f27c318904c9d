"""A stand-in for the providers' batch APIs on 127.0.0.1: OpenAI Files + Batch and Anthropic Message Batches.

``FakeBatchServer`` implements the endpoints the official ``openai`` and ``anthropic`` SDKs call, in their
documented shapes, so tests drive the real SDKs with ``base_url`` pointed here:

OpenAI (``base_url = server.openai_url`` = ``http://127.0.0.1:PORT/v1``):

* ``GET /v1/models`` (the preflight check of the openai backend);
* ``POST /v1/files`` (multipart: ``file``, ``purpose=batch``) -> a File object; ``GET /v1/files/{id}``;
  ``GET /v1/files/{id}/content`` -> the file's bytes;
* ``POST /v1/batches`` (``input_file_id``, ``endpoint=/v1/chat/completions``, ``completion_window=24h``,
  ``metadata``) -> a Batch object (``validating``); ``GET /v1/batches/{id}``; ``GET /v1/batches`` (newest first);
  ``POST /v1/batches/{id}/cancel``. The input file is checked as OpenAI documents it (one JSON object per line
  with ``custom_id``, ``method: POST``, ``url`` = the endpoint, ``body``; unique custom ids; at most 50,000
  lines): a bad file gives a ``failed`` batch with ``errors.data``, and so does a batch that would pass
  ``enqueued_token_limit`` (code ``token_limit_exceeded``). A finished batch is ``completed`` (or
  ``expired`` when a request expired, ``cancelled`` after a cancel) with ``output_file_id`` (lines
  ``{"id", "custom_id", "response": {"status_code": 200, "request_id", "body": <chat completion>}, "error": null}``)
  and ``error_file_id`` (a per-request error: ``response.status_code`` 400 and an error body; an expired request:
  ``"response": null, "error": {"code": "batch_expired", ...}``).

Anthropic (``base_url = server.anthropic_url`` = ``http://127.0.0.1:PORT``):

* ``POST /v1/messages/batches`` (``requests: [{custom_id, params}]``; custom ids ``^[a-zA-Z0-9_-]{1,64}$``,
  unique) -> a MessageBatch (``in_progress``); ``GET /v1/messages/batches/{id}``; ``GET /v1/messages/batches``
  (newest first; ``limit``, ``after_id`` pages to older ones);
  ``POST /v1/messages/batches/{id}/cancel`` (``canceling``, then ``ended`` with ``canceled`` results);
  ``GET /v1/messages/batches/{id}/results`` -> JSONL of ``{"custom_id", "result": {"type": "succeeded",
  "message": {...}} | {"type": "errored", "error": {...}} | {"type": "expired"} | {"type": "canceled"}}``.

A batch ends when it is read (``GET``) at least ``complete_after`` seconds after it was created; every request
then gets the outcome ``outcome(body, attempt)`` says (``"ok"``, ``"error"`` or ``"expire"``; ``attempt`` counts
earlier batches that held the same prompt, so a test can fail a request once and let its retry succeed).
Answers are ``reply(body)`` (default ``"The survey is fine.$$$-1$$$"``); usage counts whitespace-separated
words: prompt tokens = words of every message, completion tokens = words of the answer. Example:
``with FakeBatchServer() as server: client = openai.OpenAI(base_url=server.openai_url, api_key="x")``.
"""

from __future__ import annotations

import email.parser
import email.policy
import itertools
import json
import threading
import time
from collections.abc import Callable
from typing import Any

from surveyalign.testing.batch_shapes import (
    ANTHROPIC_MAX_REQUESTS,
    CUSTOM_ID,
    WINDOW_S,
    file_object,
    iso,
    queue_limit_error,
    validate_openai_lines,
    words,
)
from surveyalign.testing.threaded import ThreadedApp

__all__ = ["FakeBatchServer"]

class FakeBatchServer(ThreadedApp):
    """OpenAI Batch + Anthropic Message Batches stand-in in a background thread (see the module docstring).

    Args:
        reply: the answer text for a request body (OpenAI body or Anthropic ``params``); default a fixed answer.
        outcome: ``(body, attempt) -> "ok" | "error" | "expire"`` per request; default always ``"ok"``.
        complete_after: seconds after creation before a batch ends when read (0: at the first read).
        port: port on 127.0.0.1; 0 picks a free one.
        tamper: ``(lines) -> lines`` applied to a finished batch's result lines (OpenAI output file, Anthropic
            results; JSON strings) when served: a malformed or duplicated line. An attribute, as the next one.
        enqueued_token_limit: OpenAI's batch queue limit: a new batch whose prompt tokens (words, as in usage) plus
            those of the running batches (``validating``, ``in_progress``) pass it fails at validation with
            ``token_limit_exceeded``; ``None``: no limit. An attribute: a test may change it between runs.
        prompt_cache: a :class:`~surveyalign.testing.prompt_cache.StandInPromptCache` every request goes through as
            its batch ends, in batch order (Anthropic breakpoints / OpenAI prefixes); ``None`` (default): no cache.

    Attributes:
        created: ids of every batch created, both APIs, in order (a resubmission shows up here).
        requests_seen: custom ids of every request of every batch, in order.
        files: OpenAI file id -> ``{"bytes": ..., "purpose": ..., "filename": ...}``.
    """

    def __init__(self, *, reply: Callable[[dict[str, Any]], str] | None = None,
                 outcome: Callable[[dict[str, Any], int], str] | None = None, complete_after: float = 0.0,
                 port: int = 0, enqueued_token_limit: int | None = None, prompt_cache: Any = None,
                 tamper: Callable[[list[str]], list[str]] | None = None) -> None:
        self.prompt_cache, self.tamper, self.enqueued_token_limit = prompt_cache, tamper, enqueued_token_limit
        self.reply = reply or (lambda body: "The survey is fine.$$$-1$$$")
        self.outcome = outcome or (lambda body, attempt: "ok")
        self.complete_after = float(complete_after)
        self.created: list[str] = []
        self.requests_seen: list[str] = []
        self.files: dict[str, dict[str, Any]] = {}
        self._batches: dict[str, dict[str, Any]] = {}  # OpenAI
        self._abatches: dict[str, dict[str, Any]] = {}  # Anthropic
        self._attempts: dict[str, int] = {}
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._serve(self._build_app(), port)

    @property
    def openai_url(self) -> str:
        """``base_url`` for ``openai.OpenAI``: ``http://127.0.0.1:PORT/v1``."""
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def anthropic_url(self) -> str:
        """``base_url`` for ``anthropic.Anthropic``: ``http://127.0.0.1:PORT``."""
        return f"http://127.0.0.1:{self.port}"

    # ------------------------------------------------------------------ test controls
    def expire_all(self) -> None:
        """Let every batch still running pass its 24 h window now (its unfinished requests expire)."""
        with self._lock:
            for batch in [*self._batches.values(), *self._abatches.values()]:
                batch["_force_expire"] = True

    # ------------------------------------------------------------------ processing
    def _new_id(self, prefix: str) -> str:
        return f"{prefix}{next(self._ids):06d}"

    def _decide(self, key: str, body: dict[str, Any]) -> str:
        attempt = self._attempts.get(key, 0)
        self._attempts[key] = attempt + 1
        result = self.outcome(body, attempt)
        if result not in ("ok", "error", "expire"):
            raise ValueError(f"outcome must be ok, error or expire, got {result!r}")
        return result

    def _prompt_key(self, body: dict[str, Any]) -> str:
        return json.dumps([body.get("messages"), body.get("system"), body.get("seed")], sort_keys=True)

    def _finish_openai(self, batch: dict[str, Any]) -> None:
        now = time.time()
        out_lines, err_lines = [], []
        counts = {"total": len(batch["_lines"]), "completed": 0, "failed": 0}
        any_expired = False
        for line in batch["_lines"]:
            body, cid = line["body"], line["custom_id"]
            self.requests_seen.append(cid)
            verdict = "expire" if batch.get("_force_expire") else self._decide(self._prompt_key(body), body)
            req_id = self._new_id("batch_req_")
            if verdict == "ok":
                text = self.reply(body)
                prompt, completion = words(body.get("messages")), len(text.split())
                cached = self.prompt_cache.openai(body.get("messages"), body.get("model")) if self.prompt_cache else 0
                n = int(body.get("n") or 1)
                completion_body = {
                    "id": self._new_id("chatcmpl-"), "object": "chat.completion", "created": int(now),
                    "model": body.get("model"),
                    "choices": [{"index": i, "message": {"role": "assistant", "content": text},
                                 "finish_reason": "stop", "logprobs": None} for i in range(n)],
                    "usage": {"prompt_tokens": prompt, "completion_tokens": completion * n,
                              "total_tokens": prompt + completion * n,
                              "prompt_tokens_details": {"cached_tokens": cached}},
                }
                out_lines.append({"id": req_id, "custom_id": cid, "response": {
                    "status_code": 200, "request_id": req_id, "body": completion_body}, "error": None})
                counts["completed"] += 1
            elif verdict == "error":
                err_lines.append({"id": req_id, "custom_id": cid, "response": {
                    "status_code": 400, "request_id": req_id, "body": {"error": {
                        "message": "scripted per-request failure", "type": "invalid_request_error",
                        "param": None, "code": None}}}, "error": None})
                counts["failed"] += 1
            else:
                any_expired = True
                err_lines.append({"id": req_id, "custom_id": cid, "response": None, "error": {
                    "code": "batch_expired",
                    "message": "This request could not be executed before the completion window expired."}})
                counts["failed"] += 1
        batch["request_counts"] = counts
        for name, lines in (("output_file_id", out_lines), ("error_file_id", err_lines)):
            if lines:
                fid = self._new_id("file-")
                text = [json.dumps(x) for x in lines]
                if self.tamper is not None and name == "output_file_id":
                    text = self.tamper(text)
                self.files[fid] = {"bytes": "".join(x + "\n" for x in text).encode(),
                                   "purpose": "batch_output", "filename": f"{batch['id']}_{name[:-8]}.jsonl",
                                   "created_at": int(now)}
                batch[name] = fid
        batch["finalizing_at"] = int(now)
        if any_expired:
            batch.update(status="expired", expired_at=int(now))
        else:
            batch.update(status="completed", completed_at=int(now))

    def _advance_openai(self, batch: dict[str, Any]) -> None:
        if batch["status"] == "validating":
            batch.update(status="in_progress", in_progress_at=int(time.time()))
        if batch["status"] == "cancelling":
            batch.update(status="cancelled", cancelled_at=int(time.time()))
        elif batch["status"] == "in_progress" and (
                batch.get("_force_expire") or time.time() - batch["created_at"] >= self.complete_after):
            self._finish_openai(batch)

    def _finish_anthropic(self, batch: dict[str, Any], canceled: bool = False) -> None:
        now = time.time()
        results = []
        counts = {"processing": 0, "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0}
        for req in batch["_requests"]:
            params, cid = req["params"], req["custom_id"]
            self.requests_seen.append(cid)
            if canceled:
                verdict = "cancel"
            elif batch.get("_force_expire"):
                verdict = "expire"
            else:
                verdict = self._decide(self._prompt_key(params), params)
            if verdict == "ok":
                text = self.reply(params)
                usage = ({"input_tokens": words(params.get("messages"), params.get("system")),
                          "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}
                         if self.prompt_cache is None else self.prompt_cache.anthropic(params))
                message = {"id": self._new_id("msg_"), "type": "message", "role": "assistant",
                           "model": params.get("model"), "content": [{"type": "text", "text": text}],
                           "stop_reason": "end_turn", "stop_sequence": None,
                           "usage": {**usage, "output_tokens": len(text.split())}}
                results.append({"custom_id": cid, "result": {"type": "succeeded", "message": message}})
                counts["succeeded"] += 1
            elif verdict == "error":
                results.append({"custom_id": cid, "result": {"type": "errored", "error": {
                    "type": "error", "error": {"type": "invalid_request_error",
                                               "message": "scripted per-request failure"}}}})
                counts["errored"] += 1
            elif verdict == "expire":
                results.append({"custom_id": cid, "result": {"type": "expired"}})
                counts["expired"] += 1
            else:
                results.append({"custom_id": cid, "result": {"type": "canceled"}})
                counts["canceled"] += 1
        batch["_results"] = results
        batch.update(processing_status="ended", ended_at=iso(now), request_counts=counts,
                     results_url=f"{self.anthropic_url}/v1/messages/batches/{batch['id']}/results")

    def _advance_anthropic(self, batch: dict[str, Any]) -> None:
        if batch["processing_status"] == "canceling":
            self._finish_anthropic(batch, canceled=True)
        elif batch["processing_status"] == "in_progress" and (
                batch.get("_force_expire") or time.time() - batch["_created"] >= self.complete_after):
            self._finish_anthropic(batch)

    @staticmethod
    def _public(batch: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in batch.items() if not k.startswith("_")}

    # ------------------------------------------------------------------ app
    def _build_app(self) -> Any:
        from starlette.applications import Starlette
        from starlette.requests import Request
        from starlette.responses import JSONResponse, Response
        from starlette.routing import Route

        def oai_error(status: int, message: str, kind: str = "invalid_request_error") -> JSONResponse:
            return JSONResponse({"error": {"message": message, "type": kind, "param": None, "code": None}},
                                status_code=status)

        def ant_error(status: int, message: str, kind: str = "invalid_request_error") -> JSONResponse:
            return JSONResponse({"type": "error", "error": {"type": kind, "message": message}}, status_code=status)

        async def upload(request: Request) -> JSONResponse:
            raw = await request.body()
            head = f"Content-Type: {request.headers.get('content-type', '')}\r\n\r\n".encode()
            msg = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(head + raw)
            fields: dict[str, Any] = {}
            filename = None
            for part in msg.iter_parts() if msg.is_multipart() else []:
                name = part.get_param("name", header="content-disposition")
                if part.get_filename():
                    filename = part.get_filename()
                fields[name] = part.get_payload(decode=True)
            if "file" not in fields or fields.get("purpose", b"").decode() != "batch":
                return oai_error(400, "expected multipart fields 'file' and purpose=batch")
            with self._lock:
                fid = self._new_id("file-")
                self.files[fid] = {"bytes": fields["file"], "purpose": "batch", "filename": filename or "upload.jsonl",
                                   "created_at": int(time.time())}
            return JSONResponse(file_object(fid, self.files[fid]))

        async def file_get(request: Request) -> JSONResponse:
            fid = request.path_params["fid"]
            if fid not in self.files:
                return oai_error(404, f"No such File object: {fid}")
            return JSONResponse(file_object(fid, self.files[fid]))

        async def file_content(request: Request) -> Response:
            fid = request.path_params["fid"]
            if fid not in self.files:
                return oai_error(404, f"No such File object: {fid}")
            return Response(self.files[fid]["bytes"], media_type="application/octet-stream")

        async def batch_create(request: Request) -> JSONResponse:
            body = json.loads(await request.body())
            fid, endpoint = body.get("input_file_id"), body.get("endpoint")
            if body.get("completion_window") != "24h":
                return oai_error(400, "completion_window must be 24h")
            if fid not in self.files:
                return oai_error(400, f"input_file_id {fid} not found")
            now = time.time()
            with self._lock:
                bid = self._new_id("batch_")
                batch: dict[str, Any] = {
                    "id": bid, "object": "batch", "endpoint": endpoint, "errors": None, "input_file_id": fid,
                    "completion_window": "24h", "status": "validating", "output_file_id": None,
                    "error_file_id": None, "created_at": int(now), "in_progress_at": None,
                    "expires_at": int(now + WINDOW_S), "finalizing_at": None, "completed_at": None,
                    "failed_at": None, "expired_at": None, "cancelling_at": None, "cancelled_at": None,
                    "request_counts": {"total": 0, "completed": 0, "failed": 0},
                    "metadata": body.get("metadata") or {}, "_lines": []}
                errors = validate_openai_lines(self.files[fid]["bytes"], endpoint, batch)
                batch["_tokens"] = sum(words(line["body"].get("messages")) for line in batch["_lines"])
                queued = sum(b["_tokens"] for b in self._batches.values() if b["status"] in ("validating",
                                                                                              "in_progress"))
                limit = self.enqueued_token_limit
                if not errors and batch["_lines"] and limit is not None and queued + batch["_tokens"] > limit:
                    errors = [queue_limit_error(batch["_lines"][0]["body"].get("model"), limit)]
                    batch["_lines"], batch["request_counts"]["total"] = [], 0
                if errors:
                    batch.update(status="failed", failed_at=int(now), errors={"object": "list", "data": errors})
                self._batches[bid] = batch
                self.created.append(bid)
            return JSONResponse(self._public(batch))

        async def batch_get(request: Request) -> JSONResponse:
            bid = request.path_params["bid"]
            with self._lock:
                if bid not in self._batches:
                    return oai_error(404, f"No such Batch object: {bid}")
                self._advance_openai(self._batches[bid])
                return JSONResponse(self._public(self._batches[bid]))

        async def batch_list(request: Request) -> JSONResponse:
            limit = int(request.query_params.get("limit", 20))
            with self._lock:
                data = [self._public(b) for b in reversed(list(self._batches.values()))][:limit]
            return JSONResponse({"object": "list", "data": data, "first_id": data[0]["id"] if data else None,
                                 "last_id": data[-1]["id"] if data else None, "has_more": False})

        async def batch_cancel(request: Request) -> JSONResponse:
            bid = request.path_params["bid"]
            with self._lock:
                batch = self._batches.get(bid)
                if batch is None:
                    return oai_error(404, f"No such Batch object: {bid}")
                if batch["status"] in ("validating", "in_progress"):
                    batch.update(status="cancelling", cancelling_at=int(time.time()))
                return JSONResponse(self._public(batch))

        async def abatch_create(request: Request) -> JSONResponse:
            body = json.loads(await request.body())
            requests = body.get("requests")
            if not isinstance(requests, list) or not requests:
                return ant_error(400, "requests: expected a non-empty list")
            if len(requests) > ANTHROPIC_MAX_REQUESTS:
                return ant_error(400, f"requests: at most {ANTHROPIC_MAX_REQUESTS} per batch")
            seen: set[str] = set()
            for i, req in enumerate(requests):
                cid = req.get("custom_id") if isinstance(req, dict) else None
                if not isinstance(cid, str) or not CUSTOM_ID.match(cid):
                    return ant_error(400, f"requests.{i}.custom_id: must match ^[a-zA-Z0-9_-]{{1,64}}$")
                if cid in seen:
                    return ant_error(400, f"requests.{i}.custom_id: duplicate {cid}")
                seen.add(cid)
                params = req.get("params") or {}
                if not params.get("model") or not params.get("max_tokens") or not params.get("messages"):
                    return ant_error(400, f"requests.{i}.params: model, max_tokens and messages are required")
            now = time.time()
            with self._lock:
                bid = self._new_id("msgbatch_")
                batch = {"id": bid, "type": "message_batch", "processing_status": "in_progress",
                         "request_counts": {"processing": len(requests), "succeeded": 0, "errored": 0,
                                            "canceled": 0, "expired": 0},
                         "ended_at": None, "created_at": iso(now), "expires_at": iso(now + WINDOW_S),
                         "archived_at": None, "cancel_initiated_at": None, "results_url": None,
                         "_created": now, "_requests": requests}
                self._abatches[bid] = batch
                self.created.append(bid)
            return JSONResponse(self._public(batch))

        async def abatch_list(request: Request) -> JSONResponse:
            # newest first; after_id pages towards older batches (the documented cursor), limit 1..1000 (default 20)
            try:
                limit = min(1000, max(1, int(request.query_params.get("limit", 20))))
            except ValueError:
                return ant_error(400, "limit: expected an integer")
            with self._lock:
                batches = sorted(self._abatches.values(), key=lambda b: b["_created"], reverse=True)
                after = request.query_params.get("after_id")
                if after:
                    ids = [b["id"] for b in batches]
                    batches = batches[ids.index(after) + 1:] if after in ids else []
                for b in batches:
                    self._advance_anthropic(b)
                page = [self._public(b) for b in batches[:limit]]
            return JSONResponse({"data": page, "has_more": len(batches) > limit,
                                 "first_id": page[0]["id"] if page else None,
                                 "last_id": page[-1]["id"] if page else None})

        async def abatch_get(request: Request) -> JSONResponse:
            bid = request.path_params["bid"]
            with self._lock:
                if bid not in self._abatches:
                    return ant_error(404, f"message batch {bid} not found", "not_found_error")
                self._advance_anthropic(self._abatches[bid])
                return JSONResponse(self._public(self._abatches[bid]))

        async def abatch_cancel(request: Request) -> JSONResponse:
            bid = request.path_params["bid"]
            with self._lock:
                batch = self._abatches.get(bid)
                if batch is None:
                    return ant_error(404, f"message batch {bid} not found", "not_found_error")
                if batch["processing_status"] == "in_progress":
                    batch.update(processing_status="canceling", cancel_initiated_at=iso(time.time()))
                return JSONResponse(self._public(batch))

        async def abatch_results(request: Request) -> Response:
            bid = request.path_params["bid"]
            with self._lock:
                batch = self._abatches.get(bid)
                if batch is None:
                    return ant_error(404, f"message batch {bid} not found", "not_found_error")
                if batch["processing_status"] != "ended":
                    return ant_error(400, f"message batch {bid} has not ended")
                lines = [json.dumps(r) for r in batch["_results"]]
                text = "".join(x + "\n" for x in (self.tamper(lines) if self.tamper is not None else lines))
            return Response(text.encode(), media_type="application/binary")

        async def models(request: Request) -> JSONResponse:
            return JSONResponse({"object": "list", "data": [{"id": "judge-model", "object": "model"}]})

        return Starlette(routes=[
            Route("/v1/models", models, methods=["GET"]),
            Route("/v1/files", upload, methods=["POST"]),
            Route("/v1/files/{fid}", file_get, methods=["GET"]),
            Route("/v1/files/{fid}/content", file_content, methods=["GET"]),
            Route("/v1/batches", batch_create, methods=["POST"]),
            Route("/v1/batches", batch_list, methods=["GET"]),
            Route("/v1/batches/{bid}", batch_get, methods=["GET"]),
            Route("/v1/batches/{bid}/cancel", batch_cancel, methods=["POST"]),
            Route("/v1/messages/batches", abatch_create, methods=["POST"]),
            Route("/v1/messages/batches", abatch_list, methods=["GET"]),
            Route("/v1/messages/batches/{bid}", abatch_get, methods=["GET"]),
            Route("/v1/messages/batches/{bid}/cancel", abatch_cancel, methods=["POST"]),
            Route("/v1/messages/batches/{bid}/results", abatch_results, methods=["GET"]),
        ])

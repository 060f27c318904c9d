"""A lean OpenAI-compatible chat server for throughput benchmarks: ``python benchmarks/_lean_chat_server.py --delay D``.

``surveyalign.testing.chat_server`` (Starlette + uvicorn) records every request, counts prompt words and renders
usage per call: right for tests, but at C=256 with D=0.2 s (1,280 calls/s) on a 2-core machine it is the bottleneck
that every client hits. This one (aiohttp.web, one process) reads the body, waits D seconds and answers one canned
completion with fixed usage, so the measured ceiling is the client's, not the server's. It prints
``base_url=http://127.0.0.1:PORT/v1`` on its first line, then serves until killed.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import socket

from aiohttp import web


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--delay", type=float, default=0.2, help="seconds before each answer (default 0.2)")
    parser.add_argument("--reply", default="Fine.$$$-1$$$", help="the answer's text")
    parser.add_argument("--model", default="fake", help="model id of /v1/models and of every answer")
    args = parser.parse_args()
    answer = json.dumps({
        "id": "chatcmpl-lean", "object": "chat.completion", "created": 0, "model": args.model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": args.reply}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 1000, "completion_tokens": 16, "total_tokens": 1016}}).encode()
    models = json.dumps({"object": "list", "data": [{"id": args.model, "object": "model"}]}).encode()

    async def chat(request: web.Request) -> web.Response:
        await request.read()
        await asyncio.sleep(args.delay)
        return web.Response(body=answer, content_type="application/json")

    async def list_models(request: web.Request) -> web.Response:
        return web.Response(body=models, content_type="application/json")

    app = web.Application(client_max_size=64 * 1024 * 1024)
    app.router.add_post("/v1/chat/completions", chat)
    app.router.add_get("/v1/models", list_models)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(1024)
    print(f"base_url=http://127.0.0.1:{sock.getsockname()[1]}/v1", flush=True)
    web.run_app(app, sock=sock, print=None, access_log=None, backlog=1024)


if __name__ == "__main__":
    main()

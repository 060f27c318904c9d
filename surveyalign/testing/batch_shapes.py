"""Shapes of the providers' batch APIs shared by the stand-in server (:mod:`surveyalign.testing.batch_server`):
limits, time stamps, the File object and the check of an OpenAI batch input file; and :class:`BatchCall`, the
smallest call :func:`surveyalign.calls.run_batches` accepts, for tests."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

__all__ = [
    "ANTHROPIC_MAX_REQUESTS",
    "CUSTOM_ID",
    "OPENAI_MAX_REQUESTS",
    "WINDOW_S",
    "BatchCall",
    "file_object",
    "iso",
    "validate_openai_lines",
    "words",
]

OPENAI_MAX_REQUESTS = 50_000
ANTHROPIC_MAX_REQUESTS = 100_000
WINDOW_S = 24 * 3600
CUSTOM_ID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


@dataclass
class BatchCall:
    """The fields :func:`surveyalign.calls.run_batches` reads from a call (a stand-in for
    :class:`surveyalign.calls.Call` in tests): cache key, chat messages, ``GenerationSettings``, sample index."""

    key: str
    messages: list
    settings: Any
    sample: int = 0


def iso(ts: float | None) -> str | None:
    """RFC 3339 UTC time stamp of a Unix time (Anthropic's shape), ``None`` for ``None``."""
    return None if ts is None else datetime.fromtimestamp(ts, UTC).isoformat().replace("+00:00", "Z")


def words(messages: Any, system: Any = None) -> int:
    """Whitespace-separated words of chat messages (and a system prompt): the stand-ins' token count."""
    n = 0
    for message in [*(messages or []), *([{"content": system}] if system else [])]:
        content = message.get("content") if isinstance(message, dict) else message
        if isinstance(content, list):
            content = " ".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
        n += len(str(content or "").split())
    return n


def file_object(fid: str, f: dict[str, Any]) -> dict[str, Any]:
    """A File object of the OpenAI Files API for the stored file ``f`` (bytes, filename, purpose, created_at)."""
    return {"id": fid, "object": "file", "bytes": len(f["bytes"]), "created_at": f["created_at"],
            "filename": f["filename"], "purpose": f["purpose"], "status": "processed", "expires_at": None,
            "status_details": None}

def validate_openai_lines(raw: bytes, endpoint: str | None, batch: dict[str, Any]) -> list[dict[str, Any]]:
    """Check an OpenAI batch input file as OpenAI documents it; valid lines go to ``batch["_lines"]``.

    Returns:
        The errors (``errors.data`` items: code, message, line, param); empty when the file is valid.
    """
    errors: list[dict[str, Any]] = []
    seen: set[str] = set()
    lines = [line for line in raw.decode("utf-8", "replace").splitlines() if line.strip()]
    if len(lines) > OPENAI_MAX_REQUESTS:
        return [{"code": "too_many_requests", "message": f"at most {OPENAI_MAX_REQUESTS} requests per batch",
                 "line": None, "param": None}]
    for n, text in enumerate(lines, 1):
        try:
            line = json.loads(text)
        except ValueError:
            errors.append({"code": "invalid_json_line", "message": "not JSON", "line": n, "param": None})
            continue
        cid = line.get("custom_id")
        if not isinstance(cid, str) or cid in seen:
            errors.append({"code": "duplicate_custom_id" if cid in seen else "missing_required_parameter",
                           "message": f"custom_id {cid!r}", "line": n, "param": "custom_id"})
        elif line.get("method") != "POST" or line.get("url") != endpoint or not isinstance(line.get("body"), dict):
            errors.append({"code": "invalid_request", "message": "method must be POST, url the batch endpoint, "
                           "body an object", "line": n, "param": "url"})
        else:
            seen.add(cid)
            batch["_lines"].append(line)
    batch["request_counts"]["total"] = len(batch["_lines"])
    return errors


def queue_limit_error(model: Any, limit: int) -> dict[str, Any]:
    """The ``errors.data`` item of a batch failed at validation for passing the model's batch queue limit (the
    prompt tokens one model may have enqueued in running batches), as OpenAI words it."""
    return {"code": "token_limit_exceeded", "line": None, "param": None,
            "message": f"Enqueued token limit reached for {model} in organization org-local. Limit: {limit} "
                       "enqueued tokens. Please try again once some in_progress batches have been completed."}

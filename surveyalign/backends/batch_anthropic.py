"""Anthropic's Message Batches behind the :class:`~surveyalign.backends.batch_api.BatchAPI` interface (the
``anthropic`` SDK is imported only when one is made). Results are read line by line as untrusted: a line that is
not JSON or not in the documented shape is that request's error (see :func:`surveyalign.backends.batch_api.
split_requests` for the limits shared with OpenAI)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from surveyalign.backends.batch_api import (
    _STOP_REASONS,
    BatchRequest,
    BatchResult,
    BatchStatus,
    _failed,
    _malformed,
    _usage_generation,
)
from surveyalign.backends.request_bodies import messages_params

__all__ = ["AnthropicBatchAPI"]


class AnthropicBatchAPI:
    """Anthropic's Message Batches through the ``anthropic`` SDK (``client.messages.batches``).

    A request's ``params`` are a Messages API call: system messages joined into ``system``, the others as
    ``messages``, ``max_tokens`` = max_new_tokens, ``temperature``, and ``top_p`` only when below 1 (newer models
    refuse both at once); a field named in ``settings.omit`` is never sent (``max_new_tokens`` cannot be: the API
    requires ``max_tokens``), and ``settings.thinking_budget`` is sent as ``thinking: {type: enabled,
    budget_tokens: N}``. The API has no seed: K samples of one prompt are K requests that differ in their ids.
    The last user message is marked for the prompt cache (``cache_control`` on the whole prompt, and on the shared
    survey block of the ``shared`` layout: :func:`surveyalign.backends.prompt_cache.anthropic_blocks`); usage's
    ``cache_read_input_tokens`` / ``cache_creation_input_tokens`` are recorded as ``cached_tokens`` /
    ``cache_write_tokens``.

    Args:
        base_url: the API root without ``/v1`` (``https://api.anthropic.com``; a trailing ``/v1`` is removed).
        api_key: the key (``None``: the placeholder ``"unused"``, for a server that needs none; ``ANTHROPIC_API_KEY``
            is not read here: the caller reads its own key variable).
        model: the model id; timeout, max_retries: the SDK's.
    """

    name = "anthropic"
    max_requests = 100_000
    max_bytes = 256 * 1024 * 1024

    def __init__(self, *, base_url: str, api_key: str | None, model: str, timeout: float = 120.0,
                 max_retries: int = 4) -> None:
        import anthropic

        self.model = model
        root = base_url.rstrip("/")
        root = root.removesuffix("/v1")
        self.client = anthropic.Anthropic(base_url=root, api_key=api_key or "unused", timeout=timeout,
                                          max_retries=max_retries)

    def params(self, req: BatchRequest) -> dict[str, Any]:
        """The Messages API parameters of one request.

        Raises:
            ValueError: ``settings.omit`` names ``max_new_tokens`` (the Messages API requires ``max_tokens``).
        """
        return messages_params(self.model, req.messages, req.settings)

    def request_size(self, request: BatchRequest) -> int:
        """Bytes of the request in the batch body."""
        return len(json.dumps({"custom_id": request.custom_id, "params": self.params(request)}).encode("utf-8"))

    def submit(self, requests: Sequence[BatchRequest], *, tag: str) -> str:
        """Create the batch; returns its id (``tag`` is not sent: Message Batches have no metadata).

        Raises:
            ValueError: more than :attr:`max_requests` requests.
            anthropic.APIError: the provider refused the batch.
        """
        if len(requests) > self.max_requests:
            raise ValueError(f"{len(requests)} requests exceed one Anthropic batch ({self.max_requests})")
        batch = self.client.messages.batches.create(
            requests=[{"custom_id": r.custom_id, "params": self.params(r)} for r in requests])
        return batch.id

    def find(self, tag: str, *, keys: Sequence[str] = (), since: float | None = None) -> str | None:
        """The batch a submission made, found without metadata (Message Batches have none): through the SDK's list
        endpoint (newest first), the batches created from ``since`` (epoch seconds, 5 minutes of clock slack) with
        exactly ``len(keys)`` requests; an ended one counts only when its results carry exactly our custom ids
        (``keys``: the calls' cache keys), a running one only when it is the single candidate.

        Args:
            tag: the submission tag (not sent to Anthropic; named in no request).
            keys: the custom ids of the submission's requests.
            since: when the submission started (the ``intent`` record's ``epoch``); ``None``: not searched.

        Returns:
            The batch id, or ``None`` (nothing found, or two running candidates that cannot be told apart: the
            caller sends the calls again rather than adopt someone else's batch).
        """
        if since is None or not keys:
            return None
        from datetime import datetime

        want = set(keys)
        running: list[str] = []
        for batch in self.client.messages.batches.list(limit=100):
            created = batch.created_at
            created_s = created.timestamp() if isinstance(created, datetime) else float(created)
            if created_s < since - 300:
                break  # newest first: the rest is older than the submission
            counts = batch.request_counts.model_dump() if batch.request_counts else {}
            if sum(int(v or 0) for v in counts.values()) != len(want):
                continue
            if batch.processing_status == "ended":
                if {item.custom_id for item in self.client.messages.batches.results(batch.id)} == want:
                    return batch.id
            else:
                running.append(batch.id)
        return running[0] if len(running) == 1 else None

    def status(self, batch_id: str) -> BatchStatus:
        """The batch's ``processing_status``; ``ended`` when it is ``ended``."""
        b = self.client.messages.batches.retrieve(batch_id)
        counts = b.request_counts.model_dump() if b.request_counts else {}
        return BatchStatus(batch_id, b.processing_status, b.processing_status == "ended", counts)

    def results(self, batch_id: str) -> list[BatchResult]:
        """Every request's result (``succeeded``, ``errored``, ``expired``, ``canceled``).

        Raises:
            anthropic.APIError: the results cannot be read (e.g. the batch has not ended).
        """
        from anthropic.types.messages import MessageBatchIndividualResponse

        raw = self.client.messages.batches.with_raw_response.results(batch_id)
        text = raw.http_response.read().decode("utf-8", errors="replace")
        out: list[BatchResult] = []
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            where = f"results line {number}"
            try:
                parsed = json.loads(line)
            except ValueError:
                out.append(_malformed(batch_id, where, line, "not a JSON object"))
                continue
            try:
                item = MessageBatchIndividualResponse.model_validate(parsed)
                out.append(self._result(batch_id, item))
            except (AttributeError, KeyError, IndexError, TypeError, ValueError) as err:
                why = str(err).splitlines()[0] if str(err) else type(err).__name__
                out.append(_malformed(batch_id, where, line, f"unexpected shape ({why})", parsed))
        return out

    @staticmethod
    def _result(batch_id: str, item: Any) -> BatchResult:
        """One results line (a ``MessageBatchIndividualResponse``) as a :class:`BatchResult`."""
        result = item.result
        kind = result.type
        if kind == "succeeded":
            msg = result.message
            texts = [b.text for b in msg.content if getattr(b, "type", None) == "text"]
            thinking = [getattr(b, "thinking", "") for b in msg.content if getattr(b, "type", None) == "thinking"]
            u = msg.usage
            cached = int(getattr(u, "cache_read_input_tokens", 0) or 0)
            created = int(getattr(u, "cache_creation_input_tokens", 0) or 0)
            usage = {"prompt_tokens": int(u.input_tokens or 0) + cached + created,
                     "completion_tokens": int(u.output_tokens or 0), "cached_tokens": cached,
                     "cache_write_tokens": created}
            finish = _STOP_REASONS.get(msg.stop_reason or "", msg.stop_reason)
            return BatchResult(item.custom_id, _usage_generation(
                "".join(texts), finish, batch_id=batch_id, usage=usage,
                reasoning="\n\n".join(t for t in thinking if t) or None,
                refusal="refused" if msg.stop_reason == "refusal" else None), "succeeded")
        if kind == "errored":
            err = getattr(result.error, "error", None)
            detail = f"{getattr(err, 'type', 'error')}: {getattr(err, 'message', '')}"
            return BatchResult(item.custom_id, _failed(batch_id, f"batch {batch_id}: {detail}"), "errored")
        if kind == "expired":
            return BatchResult(item.custom_id, _failed(
                batch_id, f"batch {batch_id}: request expired before the 24h window ended"), "expired")
        return BatchResult(item.custom_id, _failed(batch_id, f"batch {batch_id}: request canceled"), "canceled")

    def cancel(self, batch_id: str) -> BatchStatus:
        """Ask the provider to cancel; returns the new status (``canceling``)."""
        self.client.messages.batches.cancel(batch_id)
        return self.status(batch_id)

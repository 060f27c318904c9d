"""Provider batch APIs through the official SDKs: OpenAI Batch (Files + ``/v1/batches``) and Anthropic Message
Batches. Half the price of direct calls, the provider's own queue and rate limits, results within 24 hours.

One small interface (:class:`BatchAPI`) over both: ``submit`` a list of :class:`BatchRequest` (one chat prompt, one
sample each; ``custom_id`` = the call's cache key), ``status`` of a batch, its ``results`` as
:class:`BatchResult` (a :class:`~surveyalign.backends.Generation` with token usage and the batch id, and the
outcome ``succeeded`` / ``errored`` / ``expired`` / ``canceled``), ``cancel``, and ``find`` the batch of a
submission (OpenAI: the tag put in its metadata; Anthropic, whose batches carry no metadata: the list endpoint,
by creation time, request count and custom ids), so a submitter killed between the provider's accept and writing
the batch id down adopts the batch instead of sending it twice.

Provider limits (documented by the providers, checked before sending): OpenAI 50,000 requests and 200 MB per
input file; Anthropic 100,000 requests and 256 MB per batch; OpenAI's batch queue limit (prompt tokens one model
may have in running batches, per tier) fails a batch at validation (``token_limit_exceeded``).
:func:`surveyalign.backends.batch_split.split_requests` cuts a list to fit (tokens: ``max_enqueued_tokens``).

The ``openai`` SDK is a core dependency; ``anthropic`` is imported only when an Anthropic batch is made.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from surveyalign.backends.base import Generation, GenerationSettings, Messages
from surveyalign.backends.request_bodies import chat_body
from surveyalign.backends.responses import normalise_message

__all__ = ["BatchAPI", "BatchRequest", "BatchResult", "BatchStatus", "OpenAIBatchAPI"]

#: Finish reasons of Anthropic's ``stop_reason`` in the OpenAI vocabulary the harness reads.
_STOP_REASONS = {"end_turn": "stop", "stop_sequence": "stop", "max_tokens": "length", "refusal": "refusal"}


@dataclass(frozen=True)
class BatchRequest:
    """One request of a batch: one sample of one chat prompt.

    Attributes:
        custom_id: the request's id in the batch (the call's cache key: 64 hex characters, valid for both APIs).
        messages: the chat messages.
        settings: generation settings; ``seed`` = ``settings.seed + sample`` (OpenAI; Anthropic has no seed).
        sample: sample index k.
    """

    custom_id: str
    messages: Messages
    settings: GenerationSettings
    sample: int = 0


@dataclass(frozen=True)
class BatchStatus:
    """A batch as the provider reports it.

    Attributes:
        batch_id: the provider's id; status: the provider's word (OpenAI ``validating`` ... ``completed``,
            ``failed``, ``expired``, ``cancelled``; Anthropic ``in_progress``, ``canceling``, ``ended``).
        ended: no request will change any more (results can be read).
        counts: the provider's request counts.
        errors: batch-level errors (OpenAI validation), one line each.
    """

    batch_id: str
    status: str
    ended: bool
    counts: dict[str, int] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class BatchResult:
    """The result of one request.

    Attributes:
        custom_id: the request's id.
        generation: the answer (``error`` set unless ``outcome == "succeeded"``), with token usage and batch id.
        outcome: ``"succeeded"``, ``"errored"``, ``"expired"`` or ``"canceled"``.
        problem: set when the provider's line for it was malformed (not JSON, not the documented shape): one line
            naming the file line and what was wrong; the request then counts as ``errored``. A malformed line whose
            custom id cannot be read has ``custom_id == ""`` (its request is then missing from the results).
    """

    custom_id: str
    generation: Generation
    outcome: str
    problem: str | None = None


#: The custom id of a line that is not valid JSON, when it can still be read (``"custom_id": "..."``).
_CUSTOM_ID = re.compile(r'"custom_id"\s*:\s*"([A-Za-z0-9_-]{1,128})"')


def _malformed(batch_id: str, where: str, raw: str, why: str, parsed: Any = None) -> BatchResult:
    """A :class:`BatchResult` for an output line that cannot be read: attributed to its custom id when one can be
    found (in the parsed object or, for broken JSON, in the raw text), else ``custom_id == ""``."""
    cid = parsed.get("custom_id") if isinstance(parsed, dict) else None
    if not isinstance(cid, str) or not cid:
        found = _CUSTOM_ID.search(raw)
        cid = found.group(1) if found else ""
    problem = f"batch {batch_id}: {where}: {why}"
    return BatchResult(cid, _failed(batch_id, f"{problem} (the provider's line for this request is malformed)"),
                       "errored", problem)


class BatchAPI(Protocol):
    """What a provider's batch client offers (:class:`OpenAIBatchAPI`, :class:`AnthropicBatchAPI`)."""

    name: str
    max_requests: int
    max_bytes: int

    def request_size(self, request: BatchRequest) -> int: ...
    def submit(self, requests: Sequence[BatchRequest], *, tag: str) -> str: ...
    def find(self, tag: str, *, keys: Sequence[str] = (), since: float | None = None) -> str | None: ...
    def status(self, batch_id: str) -> BatchStatus: ...
    def results(self, batch_id: str) -> list[BatchResult]: ...
    def cancel(self, batch_id: str) -> BatchStatus: ...


def _usage_generation(text: str, finish: str | None, *, batch_id: str, usage: dict[str, Any] | None,
                      reasoning: str | None = None, refusal: str | None = None,
                      mean_logprob: float | None = None) -> Generation:
    usage = usage or {}
    return Generation(text=text, finish_reason=finish, mean_logprob=mean_logprob, reasoning=reasoning,
                      refusal=refusal, prompt_tokens=usage.get("prompt_tokens"),
                      completion_tokens=usage.get("completion_tokens"), cached_tokens=usage.get("cached_tokens"),
                      batch_id=batch_id, cache_write_tokens=usage.get("cache_write_tokens"))


def _failed(batch_id: str, error: str) -> Generation:
    return Generation(text="", finish_reason=None, mean_logprob=None, error=error, batch_id=batch_id)


class OpenAIBatchAPI:
    """OpenAI's Batch API through the ``openai`` SDK: a JSONL input file (Files API, ``purpose=batch``), a batch
    on ``/v1/chat/completions`` with a 24 h completion window, results from the output and error files.

    Args:
        base_url: the API root (``https://api.openai.com/v1``; a local stand-in in tests).
        api_key: the key (``None``: the placeholder ``"unused"``, for a server that needs none; ``OPENAI_API_KEY``
            is not read here: the caller reads its own key variable).
        model: the model id of every request.
        body: ``(messages, settings, sample) -> request body``; default: model, messages, temperature, top_p,
            ``max_tokens_field`` = max_new_tokens, seed = settings.seed + sample, n = 1, less the fields of
            ``settings.omit`` (:func:`surveyalign.backends.request_bodies.chat_body`; the live OpenAI backend
            passes its own builder, so a batch sends what a direct call sends).
        max_tokens_field: ``"max_completion_tokens"`` (OpenAI's current name) or ``"max_tokens"``.
        timeout: seconds per HTTP request of the SDK; max_retries: the SDK's own retries of transient errors.
    """

    name = "openai"
    max_requests = 50_000
    max_bytes = 200 * 1024 * 1024
    endpoint = "/v1/chat/completions"

    def __init__(self, *, base_url: str, api_key: str | None, model: str,
                 body: Callable[[Messages, GenerationSettings, int], dict[str, Any]] | None = None,
                 max_tokens_field: str = "max_completion_tokens", timeout: float = 120.0, max_retries: int = 4) -> None:
        import openai

        self.model = model
        self.max_tokens_field = max_tokens_field
        self._body = body or self._default_body
        self.client = openai.OpenAI(base_url=base_url, api_key=api_key or "unused", timeout=timeout,
                                    max_retries=max_retries)

    def _default_body(self, messages: Messages, settings: GenerationSettings, sample: int) -> dict[str, Any]:
        return chat_body(self.model, messages, settings, sample, 1, self.max_tokens_field)

    def _line(self, req: BatchRequest) -> str:
        body = {**self._body(req.messages, req.settings, req.sample), "n": 1}
        return json.dumps({"custom_id": req.custom_id, "method": "POST", "url": self.endpoint, "body": body},
                          ensure_ascii=False) + "\n"

    def request_size(self, request: BatchRequest) -> int:
        """Bytes of the request's line in the input file."""
        return len(self._line(request).encode("utf-8"))

    def submit(self, requests: Sequence[BatchRequest], *, tag: str) -> str:
        """Upload the input file and create the batch; returns its id.

        Raises:
            ValueError: more than :attr:`max_requests` requests or :attr:`max_bytes` bytes.
            openai.APIError: the provider refused the file or the batch.
        """
        data = "".join(self._line(r) for r in requests).encode("utf-8")
        if len(requests) > self.max_requests or len(data) > self.max_bytes:
            raise ValueError(f"{len(requests)} requests / {len(data)} bytes exceed one OpenAI batch "
                             f"({self.max_requests} / {self.max_bytes}); split them with split_requests")
        upload = self.client.files.create(file=(f"surveyalign-{tag}.jsonl", data), purpose="batch")
        batch = self.client.batches.create(input_file_id=upload.id, endpoint=self.endpoint, completion_window="24h",
                                           metadata={"surveyalign_submission": tag})
        return batch.id

    def find(self, tag: str, *, keys: Sequence[str] = (), since: float | None = None) -> str | None:
        """The id of the batch whose metadata holds submission ``tag``, else ``None`` (``keys``, ``since``: unused,
        the tag is exact)."""
        for batch in self.client.batches.list(limit=100):
            if (batch.metadata or {}).get("surveyalign_submission") == tag:
                return batch.id
        return None

    def status(self, batch_id: str) -> BatchStatus:
        """The batch's status; ``ended`` for completed, failed, expired and cancelled."""
        b = self.client.batches.retrieve(batch_id)
        counts = b.request_counts.model_dump() if b.request_counts else {}
        errors = [f"{e.code}: {e.message}" + (f" (line {e.line})" if e.line else "")
                  for e in ((b.errors.data or []) if b.errors else [])]
        return BatchStatus(batch_id, b.status, b.status in ("completed", "failed", "expired", "cancelled"),
                           counts, errors)

    def _file_lines(self, file_id: str | None, name: str) -> list[tuple[str, str, Any]]:
        """``(where, raw line, parsed JSON or None)`` per non-empty line of a batch file (``where``: ``"output
        file line 3"``)."""
        if not file_id:
            return []
        out: list[tuple[str, str, Any]] = []
        for number, line in enumerate(self.client.files.content(file_id).text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                parsed = json.loads(line)
            except ValueError:
                parsed = None
            out.append((f"{name} file line {number}", line, parsed))
        return out

    def results(self, batch_id: str) -> list[BatchResult]:
        """Every request's result from the output and error files (requests of a failed or cancelled batch that
        never ran are absent: the caller counts them as errors).

        Raises:
            openai.APIError: the files cannot be read.
        """
        from surveyalign.backends.openai_wire import _mean_logprob

        b = self.client.batches.retrieve(batch_id)
        out: list[BatchResult] = []
        for where, raw, line in (self._file_lines(b.output_file_id, "output")
                                 + self._file_lines(b.error_file_id, "error")):
            if not isinstance(line, dict):
                out.append(_malformed(batch_id, where, raw, "not a JSON object"))
                continue
            try:
                out.append(self._result(batch_id, line, _mean_logprob))
            except (AttributeError, KeyError, IndexError, TypeError, ValueError) as err:
                out.append(_malformed(batch_id, where, raw, f"unexpected shape ({type(err).__name__}: {err})", line))
        return out

    @staticmethod
    def _result(batch_id: str, line: dict[str, Any], _mean_logprob: Callable[[Any], Any]) -> BatchResult:
        """One output or error file line as a :class:`BatchResult`.

        Raises:
            AttributeError, KeyError, IndexError, TypeError, ValueError: the line is not in the documented shape.
        """
        cid = line.get("custom_id")
        if not isinstance(cid, str) or not cid:
            raise ValueError("no custom_id")
        response, error = line.get("response"), line.get("error")
        if error and (error.get("code") == "batch_expired"):
            return BatchResult(cid, _failed(batch_id, f"batch {batch_id}: request expired before the 24h window "
                                                      f"ended ({error.get('message')})"), "expired")
        status = (response or {}).get("status_code")
        body = (response or {}).get("body") or {}
        if error or status != 200:
            detail = (body.get("error") or {}).get("message") if isinstance(body, dict) else None
            detail = detail or (error or {}).get("message") or json.dumps(body)[:300]
            return BatchResult(cid, _failed(batch_id, f"batch {batch_id}: HTTP {status}: {detail}"), "errored")
        try:
            choice = body["choices"][0]
            message = normalise_message(choice.get("message"))
        except (KeyError, IndexError, TypeError, ValueError, AttributeError) as err:
            return BatchResult(cid, _failed(batch_id, f"batch {batch_id}: malformed reply: {err}"), "errored")
        usage = body.get("usage") or {}
        counts = {"prompt_tokens": usage.get("prompt_tokens"), "completion_tokens": usage.get("completion_tokens"),
                  "cached_tokens": (usage.get("prompt_tokens_details") or {}).get("cached_tokens")}
        return BatchResult(cid, _usage_generation(
            message.text, choice.get("finish_reason"), batch_id=batch_id, usage=counts,
            reasoning=message.reasoning, refusal=message.refusal, mean_logprob=_mean_logprob(choice)), "succeeded")

    def cancel(self, batch_id: str) -> BatchStatus:
        """Ask the provider to cancel; returns the new status (``cancelling``)."""
        self.client.batches.cancel(batch_id)
        return self.status(batch_id)


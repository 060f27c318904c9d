"""Calls through a provider batch API: submit, write the batch ids to the run folder, poll, collect.

:func:`run_batches` is the batch counterpart of the live call executor: it takes the calls a run still has to make
(each with its cache key), sends them as provider batches (:mod:`surveyalign.backends.batch_api`), and hands every
answer to ``on_result`` (the run's call cache) once its batch has ended. Its memory is ``RUN_DIR/batches.jsonl``,
an append-only log flushed and fsync'ed line by line:

* ``{"event": "intent", "tag", "provider", "keys", "epoch", "tokens"}`` before a batch is sent (``tokens``: its
  estimated prompt tokens);
* ``{"event": "submitted", "tag", "batch_id", "provider", "keys", "epoch", "tokens", "time"}`` as soon as the
  provider accepted it;
* ``{"event": "collected", "batch_id", "succeeded", "errored", "expired", "canceled", "missing", "time"}`` once
  every answer of the batch is in the cache.

So the same command run again (after a crash, a kill, or on purpose with ``wait: false``) never sends a call that
sits in a submitted, uncollected batch: it polls those batches and collects them. An intent without its
``submitted`` line (killed between the provider's accept and the write, or a submission that raised after the
provider may have accepted it) is looked up and adopted: OpenAI by the tag kept in the batch metadata, Anthropic
(no metadata) through the list endpoint by creation time, request count and custom ids
(:meth:`~surveyalign.backends.batch_anthropic.AnthropicBatchAPI.find`); only when nothing is found are its calls sent
again. A
request that comes back errored, expired, canceled or missing is recorded as a failed answer (counted like any API
error); the caller's usual retry of failed calls then sends it in a new batch. So is every request of a batch
the provider failed at validation (e.g. OpenAI's ``token_limit_exceeded``: the batch queue limit was passed; its
code and message are in each answer's error).

The provider's files and the log are read as untrusted: a result line that is not JSON or not in the documented
shape is counted (``malformed_lines``) and made that request's error when its custom id can be read (else the
request is missing from the results, also an error), and every other line is collected; a custom id answered twice
is counted (``duplicate_lines``) and its first answer kept; a batch the provider answers 404 for, or a
``submitted`` record without a batch id or ``keys``, is reported in one line (``problems``) and left behind (a
``left`` record: never polled again; the calls of an unknown batch are recorded as failed answers, so the usual
retry sends them again).

With ``max_enqueued_tokens`` (OpenAI's batch queue limit: the prompt tokens one model may have in running batches
at once) the calls are cut into batches of at most that many estimated tokens, and a batch is sent only while the
open batches plus it stay within the limit; the others wait in memory (not in the log) and go out as batches end,
in the same polling loop, or in the next run of the same command. Only batches still holding calls without a kept
answer count against the limit: given ``settled`` (the run's cache), an open batch whose every call already has an
answer is marked collected (``status: "settled"``) without being read.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from surveyalign.backends.base import Generation
from surveyalign.backends.batch_api import BatchAPI, BatchRequest
from surveyalign.backends.batch_split import split_requests
from surveyalign.calls.budget import chars_per_token_count

__all__ = ["BATCHES_FILE", "BatchLog", "BatchOutcome", "run_batches"]

BATCHES_FILE = "batches.jsonl"


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


class BatchLog:
    """The ``batches.jsonl`` of a run folder (see the module docstring).

    Args:
        path: the log file (created on the first append).

    Attributes:
        records: every well-formed record, in order (a torn last line is skipped).
        problems: one line per record that cannot be used: a ``submitted`` record without a string ``batch_id`` or
            a list of ``keys`` (left out of :attr:`records`; its intent is not adopted either: left behind).
    """

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)
        self.records: list[dict[str, Any]] = []
        self.problems: list[str] = []
        self._broken_tags: set[Any] = set()
        if self.path.exists():
            for number, raw in enumerate(self.path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
                try:
                    rec = json.loads(raw)
                except ValueError:
                    continue
                if not (isinstance(rec, dict) and "event" in rec):
                    continue
                if rec["event"] == "submitted" and not (isinstance(rec.get("batch_id"), str)
                                                        and isinstance(rec.get("keys"), list)):
                    missing = "batch_id" if not isinstance(rec.get("batch_id"), str) else "keys"
                    self.problems.append(f"{self.path} line {number}: a submitted record (batch "
                                         f"{rec.get('batch_id')!r}) without {missing}: left behind, never polled")
                    self._broken_tags.add(rec.get("tag"))
                    continue
                self.records.append(rec)

    def append(self, record: dict[str, Any]) -> None:
        """Write one record, flushed and fsync'ed before returning (a batch id must survive a kill)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        needs_newline = self.path.exists() and self.path.stat().st_size > 0 and \
            self.path.read_bytes()[-1:] != b"\n"
        with self.path.open("a", encoding="utf-8") as fh:
            fh.write(("\n" if needs_newline else "") + json.dumps(record, ensure_ascii=False) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        self.records.append(record)

    def open_batches(self) -> dict[str, dict[str, Any]]:
        """Submitted and not yet collected batches: batch id -> its ``submitted`` record."""
        out: dict[str, dict[str, Any]] = {}
        for rec in self.records:
            if rec["event"] == "submitted":
                out[rec["batch_id"]] = rec
            elif rec["event"] in ("collected", "left"):
                out.pop(rec.get("batch_id"), None)
        return out

    def dangling_intents(self) -> list[dict[str, Any]]:
        """``intent`` records with no ``submitted`` or ``abandoned`` record of the same tag."""
        done = {r.get("tag") for r in self.records if r["event"] in ("submitted", "abandoned")} | self._broken_tags
        return [r for r in self.records if r["event"] == "intent" and r.get("tag") not in done]


@dataclass
class BatchOutcome:
    """What one :func:`run_batches` call did.

    Attributes:
        submitted_calls: calls sent in new batches by this call; submitted_batches: their ids.
        adopted_batches: batches found by their tag after a kill (not sent again).
        skipped_in_flight: calls not sent because a submitted, uncollected batch already holds them.
        collected_calls: answers handed to ``on_result``; collected_batches: batches collected.
        succeeded, errored, expired, canceled, missing: outcomes of the collected requests (``missing``: the batch
            ended without a result for the request, e.g. a failed or cancelled batch).
        open_batches: batches still running when this call returned (``wait=False`` or ``max_wait_s``).
        held_back_calls: calls not sent yet because the open batches filled ``max_enqueued_tokens`` (sent by a
            later call as those batches end; never logged, so never counted as in flight).
        malformed_lines: result lines that could not be read (each its request's error, or a missing request).
        duplicate_lines: result lines for a custom id already answered in the same batch (the first is kept).
        left_batches: batches left behind: unknown to the provider (404); their calls recorded as failed answers.
        settled_batches: open batches whose every call already had a kept answer (marked collected unread).
        problems: one line per malformed or duplicated result line, unknown batch, or broken log record.
        provider: the batch API's name.
    """

    provider: str = ""
    submitted_calls: int = 0
    submitted_batches: list[str] = field(default_factory=list)
    adopted_batches: list[str] = field(default_factory=list)
    skipped_in_flight: int = 0
    collected_calls: int = 0
    collected_batches: list[str] = field(default_factory=list)
    succeeded: int = 0
    errored: int = 0
    expired: int = 0
    canceled: int = 0
    missing: int = 0
    open_batches: list[str] = field(default_factory=list)
    held_back_calls: int = 0
    malformed_lines: int = 0
    duplicate_lines: int = 0
    left_batches: list[str] = field(default_factory=list)
    settled_batches: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def failed(self) -> int:
        """Collected requests that did not succeed (counted as API errors)."""
        return self.errored + self.expired + self.canceled + self.missing

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready copy (for ``run_config.json`` / ``metrics.json``)."""
        from dataclasses import asdict

        return {**asdict(self), "failed": self.failed}


def _collect(api: BatchAPI, batch_id: str, rec: dict[str, Any], by_key: dict[str, Any],
             on_result: Callable[[Any, Generation, float], None], log: BatchLog, outcome: BatchOutcome,
             status_word: str, status_errors: list[str]) -> None:
    results: dict[str, Any] = {}
    for r in api.results(batch_id):
        if r.problem is not None:
            outcome.malformed_lines += 1
            outcome.problems.append(r.problem + ("" if r.custom_id else ": its request counts as missing"))
        if not r.custom_id:
            continue
        if r.custom_id in results:
            outcome.duplicate_lines += 1
            outcome.problems.append(f"batch {batch_id}: custom_id {r.custom_id} answered more than once: the first "
                                    "answer is kept")
            continue
        results[r.custom_id] = r
    started = rec.get("epoch") or time.time()
    seconds = max(0.0, time.time() - float(started))
    counts = {"succeeded": 0, "errored": 0, "expired": 0, "canceled": 0, "missing": 0}
    for key in rec["keys"]:
        result = results.get(key)
        if result is None:
            why = f"; {'; '.join(status_errors)}" if status_errors else ""
            generation = Generation(text="", finish_reason=None, mean_logprob=None, batch_id=batch_id,
                                    error=f"batch {batch_id} ended {status_word} without a result for this "
                                          f"request{why}")
            kind = "missing"
        else:
            generation, kind = result.generation, result.outcome
        counts[kind] += 1
        call = by_key.get(key)
        if call is not None:
            on_result(call, generation, seconds)
            outcome.collected_calls += 1
    for kind, n in counts.items():
        setattr(outcome, kind, getattr(outcome, kind) + n)
    outcome.collected_batches.append(batch_id)
    log.append({"event": "collected", "batch_id": batch_id, "status": status_word, **counts, "time": _now()})


def _not_found(err: Exception) -> bool:
    """Whether a provider error says the batch does not exist (HTTP 404, both SDKs)."""
    return getattr(err, "status_code", None) == 404


def _leave(batch_id: str, rec: dict[str, Any], err: Exception, by_key: dict[str, Any],
           on_result: Callable[[Any, Generation, float], None], log: BatchLog, outcome: BatchOutcome) -> None:
    """A batch the provider does not know: one problem line, a ``left`` record (never polled again), and each of
    its calls here recorded as a failed answer (so the usual retry sends it again)."""
    why = f"batch {batch_id} is unknown to the {outcome.provider or 'batch'} provider (HTTP 404): left behind"
    outcome.problems.append(f"{why}; its {len(rec['keys'])} call(s) count as failed answers and are sent again")
    outcome.left_batches.append(batch_id)
    log.append({"event": "left", "batch_id": batch_id, "reason": f"{type(err).__name__}: {str(err)[:200]}",
                "time": _now()})
    for key in rec["keys"]:
        call = by_key.get(key)
        if call is not None:
            on_result(call, Generation(text="", finish_reason=None, mean_logprob=None, batch_id=batch_id,
                                       error=why), 0.0)
            outcome.missing += 1


def _adopt_or_abandon(api: BatchAPI, log: BatchLog, intent: dict[str, Any], outcome: BatchOutcome) -> bool:
    """Look up the batch of an ``intent`` without its ``submitted`` line (:meth:`BatchAPI.find`): adopt it (a
    ``submitted`` line marked ``adopted``) or mark the intent ``abandoned`` (its calls are sent again). Returns
    whether it was adopted. A lookup that fails counts as not found."""
    try:
        found = api.find(intent["tag"], keys=intent.get("keys") or [], since=intent.get("epoch"))
    except Exception:  # noqa: BLE001 (an unreachable provider: the calls are sent again, never lost)
        found = None
    if not found:
        log.append({"event": "abandoned", "tag": intent["tag"], "time": _now()})
        return False
    log.append({"event": "submitted", "tag": intent["tag"], "batch_id": found, "provider": api.name,
                "keys": intent["keys"], "epoch": intent.get("epoch"), "tokens": intent.get("tokens"), "time": _now(),
                "adopted": True})
    outcome.adopted_batches.append(found)
    return True


def _enqueued(log: BatchLog, tokens: dict[str, int]) -> int:
    """Estimated prompt tokens of the submitted, uncollected batches in ``log`` (a record's ``tokens``; a record
    without one, from an older run or an adoption: the sum over its keys known in ``tokens``). Batches whose calls
    all have kept answers were marked collected before (``settled``), so they do not count."""
    total = 0
    for rec in log.open_batches().values():
        known = rec.get("tokens")
        total += int(known) if known is not None else sum(tokens.get(k, 0) for k in rec["keys"])
    return total


def _submit(api: BatchAPI, log: BatchLog, chunk: list[BatchRequest], tokens: int, outcome: BatchOutcome) -> None:
    """Send one batch: ``intent`` line, the provider's accept, ``submitted`` line (an error after the provider may
    have accepted it: look the batch up before giving up; not found: re-raise, the intent marked abandoned)."""
    tag = uuid.uuid4().hex
    keys = [r.custom_id for r in chunk]
    epoch = time.time()
    log.append({"event": "intent", "tag": tag, "provider": api.name, "keys": keys, "epoch": epoch,
                "tokens": tokens, "time": _now()})
    try:
        batch_id = api.submit(chunk, tag=tag)
    except Exception:
        # the provider may have accepted it before the error (a timeout on the answer): look before giving up
        if _adopt_or_abandon(api, log, {"tag": tag, "keys": keys, "epoch": epoch, "tokens": tokens}, outcome):
            return
        raise
    log.append({"event": "submitted", "tag": tag, "batch_id": batch_id, "provider": api.name, "keys": keys,
                "epoch": epoch, "tokens": tokens, "time": _now()})
    outcome.submitted_calls += len(chunk)
    outcome.submitted_batches.append(batch_id)


def run_batches(calls: Sequence[Any], api: BatchAPI, on_result: Callable[[Any, Generation, float], None],
                log_path: str | os.PathLike, *, wait: bool = True, poll_s: float = 30.0,
                max_wait_s: float | None = None, sleep: Callable[[float], None] = time.sleep,
                max_enqueued_tokens: int | None = None, tokens_of: Callable[[Any], int] | None = None,
                settled: Callable[[str], bool] | None = None) -> BatchOutcome:
    """Send ``calls`` as provider batches (those not already in one), then poll and collect.

    Args:
        calls: the calls still to make (``key``, ``messages``, ``settings``, ``sample``; e.g.
            ``surveyalign.judge.Call``); calls with the same key are sent once.
        api: the provider's batch client.
        on_result: receives ``(call, generation, seconds)`` per collected answer (``seconds``: submission to
            collection); ``generation.batch_id`` names the batch, its token counts are the provider's usage.
        log_path: ``RUN_DIR/batches.jsonl``.
        wait: poll until every open batch has ended; False: one pass (submit, collect what has ended) and return.
        poll_s: seconds between polls; max_wait_s: stop waiting after this long (batches stay open, collected by
            a later call).
        sleep: the wait function (tests pass a fast one).
        max_enqueued_tokens: OpenAI's batch queue limit (prompt tokens a model may have in running batches at
            once): each batch holds at most this many estimated prompt tokens, and a batch is sent only while the
            open batches of the log plus it stay within the limit; the rest is sent as batches end (same polling
            loop), or by the next call when this one returns first (``wait=False``, ``max_wait_s``: counted in
            ``held_back_calls``). ``None`` (default): no limit, everything is sent at once.
        tokens_of: a call's estimated prompt tokens (e.g. :meth:`surveyalign.calls.spend.PromptCounter.
            messages_tokens`); default :func:`~surveyalign.calls.budget.chars_per_token_count` of its messages
            (4 characters per token). Every batch's estimate is written in its log records (``tokens``).
        settled: ``key -> whether an answer is already kept for it`` (the run's cache); an open batch of the log
            whose every key is settled is marked collected (``status: "settled"``) without being read, so it
            neither holds ``max_enqueued_tokens`` nor waits to be collected. ``None``: no such check.

    Returns:
        :class:`BatchOutcome`; ``open_batches`` lists what is still running, ``held_back_calls`` what waits for room
        in the queue, ``problems`` the malformed or duplicated result lines, unknown batches and broken log
        records (one line each; nothing raised for them).

    Raises:
        ValueError: a single request exceeds the provider's size limit or ``max_enqueued_tokens``.
        openai.APIError / anthropic.APIError: the provider refused a submission (nothing is logged as submitted
            for it; its intent is marked abandoned so a re-run sends it again).
    """
    log = BatchLog(log_path)
    outcome = BatchOutcome(provider=api.name)
    outcome.problems.extend(log.problems)
    by_key: dict[str, Any] = {}
    for call in calls:
        by_key.setdefault(call.key, call)

    def ours(rec: dict[str, Any]) -> bool:
        # a log shared by several backends (one per dimension) or stages: only batches holding these calls are
        # looked up, collected and waited for here (another's answers would be dropped, its intents abandoned);
        # a record without keys cannot be placed and is handled by whoever meets it
        keys = rec.get("keys") or ()
        return not keys or any(k in by_key for k in keys)

    for intent in log.dangling_intents():  # killed between the provider's accept and the "submitted" line
        if ours(intent):
            _adopt_or_abandon(api, log, intent, outcome)
    if settled is not None:  # answers already kept for every call: nothing left to collect, no queue room held
        for batch_id, rec in log.open_batches().items():
            if all(settled(k) for k in rec["keys"]) and not any(k in by_key for k in rec["keys"]):
                log.append({"event": "collected", "batch_id": batch_id, "status": "settled", "time": _now()})
                outcome.settled_batches.append(batch_id)
    in_flight = {k for rec in log.open_batches().values() for k in rec["keys"]}
    count = tokens_of or (lambda call: chars_per_token_count(call.messages))
    tokens = {k: int(count(c)) for k, c in by_key.items()}
    new = [c for k, c in by_key.items() if k not in in_flight]
    outcome.skipped_in_flight = len(by_key) - len(new)
    from surveyalign.calls.prefix import order_for_cache, prefix_group

    new = order_for_cache(new)  # the calls sharing a prompt prefix next to each other, and in one batch
    group = {c.key: prefix_group(c) for c in new}
    requests = [BatchRequest(c.key, list(c.messages), c.settings, c.sample) for c in new]
    queue = split_requests(requests, api, max_tokens=max_enqueued_tokens, tokens_of=lambda r: tokens[r.custom_id],
                           group_of=lambda r: group[r.custom_id])

    def send_what_fits() -> None:  # in order; a batch that does not fit waits (and so do the ones after it)
        room = None if max_enqueued_tokens is None else max_enqueued_tokens - _enqueued(log, tokens)
        while queue:
            need = sum(tokens[r.custom_id] for r in queue[0])
            if room is not None and need > room:
                return
            _submit(api, log, queue.pop(0), need, outcome)
            room = None if room is None else room - need

    send_what_fits()
    deadline = None if max_wait_s is None else time.monotonic() + max_wait_s
    while True:
        pending = {b: rec for b, rec in log.open_batches().items() if ours(rec)}
        for batch_id, rec in pending.items():
            try:
                status = api.status(batch_id)
            except Exception as err:
                if not _not_found(err):
                    raise
                _leave(batch_id, rec, err, by_key, on_result, log, outcome)
                continue
            if status.ended:
                _collect(api, batch_id, rec, by_key, on_result, log, outcome, status.status, status.errors)
        send_what_fits()  # room freed by the batches just collected
        still = [b for b, rec in log.open_batches().items() if ours(rec)]
        if not still or not wait or (deadline is not None and time.monotonic() >= deadline):
            outcome.open_batches = still
            outcome.held_back_calls = sum(len(chunk) for chunk in queue)
            return outcome
        sleep(poll_s)

"""Append-only JSONL cache of LLM calls (``RUN_DIR/calls.jsonl``): what makes a run resumable.

Every completed call is one JSON line, written and flushed as soon as the call returns, so a ``kill -9``
loses at most the calls in flight. Inside :meth:`CallCache.background` the write and flush happen on a writer
thread (records that arrive together are written with one system call), so an event loop keeping many API calls
in flight never blocks on the disk; a ``kill -9`` then also loses the few records still queued (micro-seconds
old), which are made again on resume like calls in flight. On start the harness reads the file, keeps the last record per key, and
runs only the calls whose key is absent. A torn last line (the process died mid-write) is counted and
skipped; the next append starts on a fresh line so it never glues onto the torn one.

Keys (:func:`call_key`) hash the stage, the unit, a free ``namespace`` chosen by the caller, the sample index,
the messages, the backend's identity and the generation settings. The namespace keeps one caller's calls apart
from another's: the survey judge passes the dimension judged, the other callers their own name (``"rqs"``,
``"ka.summary"``, ``"prism.extract"``, ``"autorate.<stage>"``, ``"synthesis"``). The namespace is hashed under
``"dimension"`` in the key's payload (the field name existing judge caches were keyed with), so those resume.
Each line names the namespace under ``"namespace"``; a line that holds ``"dimension"`` instead reads back alike
(nothing reads the field: records are found by ``"key"``).
"""

from __future__ import annotations

import collections
import contextlib
import hashlib
import json
import os
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from surveyalign.backends import Generation
from surveyalign.calls.executor import Call
from surveyalign.redact import redact_secrets

#: A caller's reader of one answer, ``(call, generation) -> reason | None``: the reason it is unusable (it failed
#: to parse, it was cut), or ``None`` when the caller can use it.
Check = Callable[[Call, Generation], "str | None"]

__all__ = ["OPERATIONAL_KEYS", "CallCache", "Check", "backend_identity", "call_key", "stable_hash"]

#: ``describe()`` entries that change how calls are made, not what they answer: left out of cache keys so a
#: resumed run with another concurrency, timeout or device still reuses its cached answers.
OPERATIONAL_KEYS = frozenset({"concurrency", "timeout", "max_retries", "backoff_initial", "backoff_max",
                              "max_retry_after", "api_key_env", "api_key_present", "batch_size", "device",
                              "transport", "ray"})


def backend_identity(backend: Any) -> dict[str, Any]:
    """The part of ``backend.describe()`` that determines its answers (without :data:`OPERATIONAL_KEYS`).

    Args:
        backend: a judge backend.

    Returns:
        A JSON-serialisable dict (part of every call key).
    """
    desc = backend.describe() if hasattr(backend, "describe") else {"backend": type(backend).__name__}
    return {k: v for k, v in desc.items() if k not in OPERATIONAL_KEYS}


def stable_hash(obj: Any) -> str:
    """sha256 hex digest of ``obj`` serialised as canonical JSON (sorted keys, no spaces).

    Args:
        obj: any JSON-serialisable value (dicts, lists, strings, numbers, None).

    Returns:
        64 hex characters; equal inputs (up to dict key order) give equal digests.
    """
    blob = json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def call_key(
    *,
    stage: str,
    unit_id: str,
    namespace: str,
    sample: int,
    messages_hash: str,
    backend: dict[str, Any],
    settings: dict[str, Any],
) -> str:
    """Cache key of one call: a hash of everything that determines its answer.

    Args:
        stage: the caller's stage name, e.g. ``"judge"`` (the scoring call), ``"rqs"`` (the consistency call),
            ``"prism:flaw_merge"``.
        unit_id: what the call is about, e.g. ``f"{review_id}::{dimension}"`` from the dataset.
        namespace: a free string that keeps one caller's calls apart from another's (the judge: the dimension
            judged; others their own name, e.g. ``"ka.summary"``); hashed under ``"dimension"`` in the payload,
            the field name of earlier versions, so judge caches of earlier versions resume.
        sample: sample index k in [0, K).
        messages_hash: ``stable_hash`` of the full chat messages sent (template, protocol, survey text,
            knowledge); stored under ``"prompt"`` in the hashed payload, so caches of earlier versions resume.
        backend: the backend's ``describe()`` (model, adapter, kind; never credentials).
        settings: the generation settings (temperature, top_p, max_new_tokens, seed, enable_thinking).

    Returns:
        A 64-character hex key. Changing any input (a new model, another temperature, an edited template,
        a retrained adapter: ``describe()`` holds content fingerprints) gives a new key, so a stale cached answer
        is never reused.

    Raises:
        Nothing: values JSON cannot encode are keyed by their ``str()``.
    """
    return stable_hash(
        {
            "stage": stage,
            "unit_id": unit_id,
            "dimension": namespace,
            "sample": sample,
            "prompt": messages_hash,
            "backend": backend,
            "settings": settings,
        }
    )


def _line(record: dict[str, Any]) -> str:
    """One cache record as a JSON line."""
    return json.dumps(record, ensure_ascii=False, default=str) + "\n"


@dataclass
class CallCache:
    """The ``calls.jsonl`` of one run folder.

    The rule for failed answers, the same at every cached call site: a cached answer that errored,
    or that the caller's reader could not use (it failed to parse: the ``check`` of :meth:`missing` /
    :func:`~surveyalign.calls.cached_generate`), is asked again on a re-run; only ``keep_failed=True`` (the
    commands' ``--keep-failed`` flag) keeps it. :attr:`counts` says how many answers were reused, retried and
    made, for the command's summary line (:meth:`summary`).

    Attributes:
        path: the JSONL file (created on the first append).
        fsync: also ``os.fsync`` after each record (survives power loss, slower).
        keep_failed: reuse cached failed answers (errors, unusable answers) instead of asking again.
        records: key -> the last record read or written for that key.
        superseded: the earlier records of keys asked again (a failed answer retried), in file order: every
            attempt that was sent was paid, so costs add them (:meth:`attempts`).
        n_lines: well-formed records read at load time.
        n_torn: lines that did not parse as a JSON object at load time (skipped, counted).
        counts: ``{"reused", "retried", "made"}``: calls answered from the cache, calls asked again because their
            cached answer failed, calls asked for the first time (one per key; summed over every plan).
    """

    path: Path
    fsync: bool = False
    keep_failed: bool = False
    records: dict[str, dict[str, Any]] = field(default_factory=dict)
    superseded: list[dict[str, Any]] = field(default_factory=list)
    n_lines: int = 0
    n_torn: int = 0
    counts: dict[str, int] = field(default_factory=lambda: {"reused": 0, "retried": 0, "made": 0})
    _fh: Any = field(default=None, repr=False)
    _writer: Any = field(default=None, repr=False)

    @classmethod
    def load(cls, path: str | os.PathLike, *, fsync: bool = False, keep_failed: bool = False) -> CallCache:
        """Read ``path`` if it exists (tolerating torn lines) and return the cache.

        Args:
            path: the ``calls.jsonl`` file (need not exist yet).
            fsync: ``os.fsync`` after every append (survives power loss; slower).
            keep_failed: reuse cached failed answers (see the class docstring); default: ask them again.

        Returns:
            The cache, with :attr:`records`, :attr:`n_lines` and :attr:`n_torn` filled from the file.

        Raises:
            OSError: if the file exists but cannot be read.
        """
        cache = cls(Path(path), fsync=fsync, keep_failed=keep_failed)
        if cache.path.exists():
            with cache.path.open("rb") as fh:
                for raw in fh:
                    if not raw.strip():
                        continue
                    try:
                        rec = json.loads(raw)
                    except (json.JSONDecodeError, UnicodeDecodeError):
                        cache.n_torn += 1
                        continue
                    if not isinstance(rec, dict) or "key" not in rec:
                        cache.n_torn += 1
                        continue
                    if rec.get("error"):  # a line written before redaction existed
                        rec["error"] = redact_secrets(str(rec["error"]))
                    if rec["key"] in cache.records:
                        cache.superseded.append(cache.records[rec["key"]])
                    cache.records[rec["key"]] = rec
                    cache.n_lines += 1
        return cache

    def __contains__(self, key: str) -> bool:
        return key in self.records

    def get(self, key: str) -> dict[str, Any] | None:
        """The last record stored under ``key``, or ``None``."""
        return self.records.get(key)

    def generation(self, key: str) -> Generation:
        """The answer stored under ``key`` as a ``Generation`` (a failed one, "no answer recorded", when absent)."""
        rec = self.records.get(key)
        if rec is None:
            return Generation.failed("no answer recorded")
        return Generation(text=rec.get("text") or "", finish_reason=rec.get("finish_reason"),
                          mean_logprob=rec.get("mean_logprob"), error=rec.get("error"),
                          reasoning=rec.get("reasoning"), refusal=rec.get("refusal"),
                          prompt_tokens=rec.get("prompt_tokens"), completion_tokens=rec.get("completion_tokens"),
                          cached_tokens=rec.get("cached_tokens"), batch_id=rec.get("batch_id"),
                          served_model=rec.get("served_model"), system_fingerprint=rec.get("system_fingerprint"),
                          cache_write_tokens=rec.get("cache_write_tokens"))

    def failure(self, call: Call, check: Check | None = None) -> str | None:
        """Why the cached answer to ``call`` is a failed one (it errored, or ``check`` rejects it), else ``None``
        (also ``None`` when nothing is cached)."""
        rec = self.records.get(call.key)
        if rec is None:
            return None
        if rec.get("error"):
            return f"error: {rec['error']}"
        return check(call, self.generation(call.key)) if check is not None else None

    def missing(self, calls: Sequence[Call], *, retry_errors: bool = True, check: Check | None = None
                ) -> tuple[list[Call], int]:
        """Which of ``calls`` still have to be made: the plan of every cached caller, counted in :attr:`counts`.

        Args:
            calls: the calls of a run, any order; calls sharing a key are made once.
            retry_errors: ask again the calls whose cached answer failed (an error, or rejected by ``check``);
                ``False``, or :attr:`keep_failed`: a failed answer counts as answered (e.g. ``evaluate`` without
                ``retry_errors``).
            check: the caller's reader, ``(call, generation) -> reason | None``: a reason marks a cached answer as
                unusable (it failed to parse), so it is asked again like an error.

        Returns:
            ``(calls to make, one per key in first-seen order; number of calls answered from the cache)``.
        """
        retry = retry_errors and not self.keep_failed
        todo: dict[str, Call] = {}
        cached = 0
        seen: set[str] = set()
        for call in calls:
            rec = self.records.get(call.key)
            failed = rec is not None and retry and self.failure(call, check) is not None
            if rec is not None and not failed:
                cached += 1
                if call.key not in seen:
                    self.counts["reused"] += 1
            elif call.key not in todo:
                todo[call.key] = call
                self.counts["retried" if failed else "made"] += 1
            seen.add(call.key)
        return list(todo.values()), cached

    def summary(self) -> str:
        """``"answers: R reused, T retried (their cached answer had failed), M made"`` (:attr:`counts`)."""
        return self.counts_line(self.counts, self.keep_failed)

    @staticmethod
    def counts_line(counts: dict[str, int], keep_failed: bool = False) -> str:
        """:meth:`summary` of counts kept in a report (``{"reused", "retried", "made"}``)."""
        c = counts
        kept = " (failed answers kept: --keep-failed)" if keep_failed else ""
        return (f"answers: {c['reused']} reused, {c['retried']} retried (their cached answer had failed), "
                f"{c['made']} made{kept}")

    def add(self, call: Call, generation: Generation, seconds: float) -> None:
        """Append the answer to ``call`` (a :data:`surveyalign.calls.OnResult`): one ``calls.jsonl`` line with
        key, stage, unit_id, namespace, sample, messages_hash, text, finish_reason, mean_logprob, error, refusal,
        reasoning, prompt_tokens / completion_tokens / cached_tokens (``null`` when the backend did not count),
        prompt_chars / n_messages (the prompt's content characters and messages, when the backend counted its
        tokens: what teaches a plan without a tokenizer its tokens per character),
        cache_write_tokens (only when the provider wrote to its prompt cache), batch_id (provider batch calls), served_model / system_fingerprint (when the server returned them), seconds (latency; for a batch call, submission to collection) and an ISO
        time stamp."""
        self.append({
            "key": call.key,
            "stage": call.stage,
            "unit_id": call.unit_id,
            "namespace": call.namespace,
            "sample": call.sample,
            "messages_hash": call.messages_hash,
            "text": generation.text or "",
            "finish_reason": generation.finish_reason,
            "mean_logprob": generation.mean_logprob,
            "error": generation.error,
            "refusal": generation.refusal,
            "reasoning": generation.reasoning,
            "prompt_tokens": generation.prompt_tokens,
            "completion_tokens": generation.completion_tokens,
            "cached_tokens": generation.cached_tokens,
            **({"prompt_chars": sum(len(str(m.get("content") or "")) for m in call.messages),
                "n_messages": len(call.messages)} if generation.prompt_tokens else {}),
            "batch_id": generation.batch_id,
            **({"cache_write_tokens": generation.cache_write_tokens} if generation.cache_write_tokens else {}),
            **({"served_model": generation.served_model} if generation.served_model else {}),
            **({"system_fingerprint": generation.system_fingerprint} if generation.system_fingerprint else {}),
            "seconds": round(seconds, 4),
            "time": datetime.now(UTC).isoformat(timespec="seconds"),
        })

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(self.records.values())

    def _open(self):
        if self._fh is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            needs_newline = False
            if self.path.exists() and self.path.stat().st_size > 0:
                with self.path.open("rb") as fh:
                    fh.seek(-1, os.SEEK_END)
                    needs_newline = fh.read(1) != b"\n"
            self._fh = self.path.open("a", encoding="utf-8")
            if needs_newline:  # a torn last line: start the next record on a line of its own
                self._fh.write("\n")
                self._fh.flush()
        return self._fh

    def append(self, record: dict[str, Any]) -> None:
        """Write one record (must hold ``"key"``) as a JSON line, flush it, and remember it. Its ``"error"`` text
        is redacted first (:func:`surveyalign.redact.redact_secrets`): a key echoed by a server is never stored.

        Raises:
            KeyError: if ``record`` has no ``"key"``.
        """
        key = record["key"]
        if record.get("error"):
            record = {**record, "error": redact_secrets(str(record["error"]))}
        if self._writer is not None:
            self._writer.put(record)  # serialised on the writer thread too
        else:
            self._write(_line(record))
        if key in self.records:
            self.superseded.append(self.records[key])
        self.records[key] = record

    def attempts(self, keys: Iterable[str] | None = None) -> list[dict[str, Any]]:
        """Every record sent for ``keys`` (default: all keys): the superseded ones (failed answers asked again)
        first, in file order, then the last record of each key in ``keys`` order. Every attempt that was sent was
        paid; an answer replayed from the cache writes no record, so it is not counted again."""
        if keys is None:
            return [*self.superseded, *self.records.values()]
        wanted = dict.fromkeys(keys)
        return [*(r for r in self.superseded if r["key"] in wanted),
                *(self.records[k] for k in wanted if k in self.records)]

    def _write(self, text: str) -> None:
        fh = self._open()
        fh.write(text)
        fh.flush()
        if self.fsync:
            os.fsync(fh.fileno())

    @contextlib.contextmanager
    def background(self) -> Iterator[CallCache]:
        """Within the block, :meth:`append` queues the record and a writer thread writes and flushes it.

        The record is visible to :meth:`get` at once; lines queued together are written in one go. On exit the
        queue is drained and the thread joined.

        Yields:
            This cache.

        Raises:
            OSError: a write error of the writer thread, re-raised on exit (or on the next append).
        """
        if self._writer is not None:  # already in the background: nested use is a no-op
            yield self
            return
        self._writer = _Writer(self)
        try:
            yield self
        finally:
            writer, self._writer = self._writer, None
            writer.close()

    @property
    def writing_in_background(self) -> bool:
        """Whether appends currently go to the background writer thread (inside ``with cache.background():``)."""
        return self._writer is not None

    def close(self) -> None:
        """Close the file handle (appending again reopens it); pending background writes are finished first."""
        if self._writer is not None:
            writer, self._writer = self._writer, None
            writer.close()
        if self._fh is not None:
            self._fh.close()
            self._fh = None

    def __enter__(self) -> CallCache:  # noqa: PYI034
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class _Writer:
    """The writer thread of :meth:`CallCache.background`: every :attr:`INTERVAL` seconds it takes the records queued
    since its last turn and writes them with one write + flush.

    ``put`` only appends to a list (no thread wake-up per answer: at 256 calls in flight a wake-up per record
    handed the GIL back and forth 1,000 times a second). A record reaches the file at most
    :attr:`INTERVAL` seconds after it arrived; :meth:`close` writes the rest at once.
    """

    #: Seconds between the writer's turns.
    INTERVAL = 0.05

    def __init__(self, cache: CallCache) -> None:
        self.cache = cache
        self.pending: collections.deque[dict[str, Any]] = collections.deque()  # append / popleft: thread-safe
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name="surveyalign-calls-writer", daemon=True)
        self.thread.start()

    def put(self, record: dict[str, Any]) -> None:
        if self.error is not None:
            raise self.error
        self.pending.append(record)

    def _drain(self) -> None:
        lines = []
        with contextlib.suppress(IndexError):
            while True:
                lines.append(self.pending.popleft())
        if lines and self.error is None:
            try:
                self.cache._write("".join(_line(record) for record in lines))
            except BaseException as err:  # noqa: BLE001 - re-raised in the caller's thread
                self.error = err

    def _run(self) -> None:
        while not self._stop.wait(self.INTERVAL):
            self._drain()
        self._drain()

    def close(self) -> None:
        self._stop.set()
        self.thread.join()
        if self.error is not None:
            raise self.error

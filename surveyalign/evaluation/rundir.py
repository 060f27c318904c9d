"""The run folder: its lock, atomic JSON writes, and moving an earlier call cache aside.

``RUN_DIR`` holds ``calls.jsonl`` (the call cache), ``predictions.jsonl``, ``metrics.json``, ``run_config.json``
and ``.lock``. JSON files are written to a temporary name and renamed, so a reader never sees half a file.
"""

from __future__ import annotations

import fcntl
import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

__all__ = ["RunLock", "now", "set_cache_aside", "write_json", "write_jsonl"]


def now() -> str:
    """The current UTC time, ISO 8601 to the second."""
    return datetime.now(UTC).isoformat(timespec="seconds")


def write_json(path: Path, obj: Any) -> None:
    """Write ``obj`` as indented JSON to ``path`` atomically (temporary file + rename)."""
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(obj, indent=2, ensure_ascii=False, default=str) + "\n")
    os.replace(tmp, path)


def write_jsonl(path: Path, records: list[dict[str, Any]]) -> None:
    """Write ``records`` as JSON lines to ``path`` atomically (temporary file + rename)."""
    tmp = path.with_suffix(path.suffix + ".tmp")
    with tmp.open("w", encoding="utf-8") as fh:
        for rec in records:
            fh.write(json.dumps(rec, ensure_ascii=False, default=str) + "\n")
    os.replace(tmp, path)


def set_cache_aside(calls_path: Path) -> Path | None:
    """Rename a non-empty ``calls.jsonl`` to ``calls.<UTC time>.jsonl`` (``resume: false``).

    Returns:
        The new path, or ``None`` when there was nothing to move.
    """
    if not (calls_path.exists() and calls_path.stat().st_size > 0):
        return None
    aside = calls_path.with_name(f"calls.{datetime.now(UTC).strftime('%Y%m%dT%H%M%S')}.jsonl")
    calls_path.rename(aside)
    return aside


class RunLock:
    """An exclusive ``flock`` on ``RUN_DIR/.lock`` so two processes never append to one cache at once.

    The kernel drops the lock when the holder dies (even by ``kill -9``), so a crash never leaves it stale.

    Args:
        path: the lock file (``RUN_DIR/.lock``).

    Raises:
        RuntimeError: on enter, when another process holds the lock.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fh = None

    def __enter__(self) -> RunLock:  # noqa: PYI034
        self._fh = self.path.open("a+")
        try:
            fcntl.flock(self._fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            self._fh.close()
            self._fh = None
            raise RuntimeError(f"{self.path.parent} is in use by another evaluation process") from None
        self._fh.seek(0)
        self._fh.truncate()
        self._fh.write(str(os.getpid()))
        self._fh.flush()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._fh is not None:
            fcntl.flock(self._fh.fileno(), fcntl.LOCK_UN)
            self._fh.close()
            self._fh = None

"""The finished-run record (``RUN_DIR/finished.json``): a resume of a finished run is a read, not a replay.

A run that ends with every judge call answered and usable writes ``finished.json``: a *run fingerprint* and the
size and modification time of ``calls.jsonl``, ``predictions.jsonl`` and ``metrics.json``. Running the same
command again reads the fingerprint back; when it matches and the three files are untouched, the run is answered
from ``predictions.jsonl`` and ``metrics.json`` (:func:`read_back`) instead of re-hashing every prompt, loading the
dataset and re-parsing every answer. Anything else (no record, another fingerprint, a touched file, an
unreadable file) takes the ordinary path, which replays ``calls.jsonl`` call by call and decides per call key.

The fingerprint covers everything the per-call key covers (:func:`surveyalign.calls.call_key`: unit, dimension,
sample, messages, backend identity, generation settings) through what determines them, plus what turns answers
into predictions and metrics:

- the config without its operational keys (:data:`OPERATIONAL_CONFIG` and the backend's
  :data:`surveyalign.calls.OPERATIONAL_KEYS`: concurrency, timeouts, progress...): dataset, split, dimensions,
  limit, protocol, K, knowledge dimensions, generation settings, ``max_length``, ``retry_errors``, bootstrap...;
- the files of the dataset folder, the ``tokenizer`` folder, every adapter folder and the price tables (relative
  path, size and modification time of each: survey texts, knowledge, training records, prices);
- the prompt template hashes per dimension and the package's code (sha256 of its ``.py`` files: a changed
  template, parser or vote rule is a new fingerprint);
- the identity of every judge backend as built (``backend_identity``: model, adapter and server fingerprints).

Not taken: runs with the RQS stage, ``--plan``, ``--check-drift`` or ``resume: false``; a run whose answers
include a failed one (an error or an unreadable answer) while ``retry_errors`` is on (those are asked again).
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from surveyalign import __version__
from surveyalign.calls import OPERATIONAL_KEYS, backend_identity, stable_hash
from surveyalign.evaluation.adapters import adapter_for
from surveyalign.evaluation.config import EvalConfig
from surveyalign.evaluation.rundir import write_json
from surveyalign.evaluation.units import template_hashes

__all__ = ["FINISHED_FILE", "OPERATIONAL_CONFIG", "backends_fingerprint", "candidate", "clear", "confirm",
           "read_back", "record", "reusable", "rewrite_metrics", "static_fingerprint"]

FINISHED_FILE = "finished.json"
#: Config keys that change how a run is made, not what it answers: left out of the run fingerprint.
OPERATIONAL_CONFIG = frozenset({"concurrency", "batch_size", "progress", "fsync", "max_cost", "output_dir",
                                "run_name", "resume"})
#: The run folder files a finished record vouches for (size and modification time).
_WATCHED = ("calls.jsonl", "predictions.jsonl", "metrics.json")
_FORMAT = 2


def _strip(obj: Any) -> Any:
    """``obj`` without :data:`surveyalign.calls.OPERATIONAL_KEYS` at any depth (backend options)."""
    if isinstance(obj, dict):
        return {k: _strip(v) for k, v in obj.items() if k not in OPERATIONAL_KEYS}
    if isinstance(obj, list):
        return [_strip(v) for v in obj]
    return obj


def _stat(path: Path) -> list[int] | None:
    """``[size, mtime_ns]`` of a file, ``None`` when it does not exist."""
    try:
        st = path.stat()
    except OSError:
        return None
    return [st.st_size, st.st_mtime_ns]


def _tree(path: str | os.PathLike | None) -> Any:
    """Relative path, size and modification time of every non-hidden file under ``path`` (a file: itself);
    ``None`` for no path, ``"absent"`` for a path that does not exist (a hub id, a missing folder)."""
    if path is None:
        return None
    root = Path(path)
    if root.is_file():
        return _stat(root)
    if not root.is_dir():
        return ["absent", str(path)]
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            if not name.startswith("."):
                full = Path(dirpath) / name
                out.append([full.relative_to(root).as_posix(), _stat(full)])
    return out


_CODE: list[str] = []


def _code_digest() -> str:
    """sha256 over the package's ``.py`` files (path and bytes), computed once per process."""
    if not _CODE:
        root = Path(__file__).resolve().parent.parent
        digest = hashlib.sha256()
        for path in sorted(root.rglob("*.py")):
            digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
        _CODE.append(digest.hexdigest())
    return _CODE[0]


def static_fingerprint(config: EvalConfig, given: Any | None) -> str:
    """The part of the run fingerprint known before any backend is built (see the module docstring).

    Args:
        config: the run configuration.
        given: a backend handed to ``run_evaluation`` (its adapter folder counts), or ``None``.

    Returns:
        64 hex characters.
    """
    from surveyalign.calls.cost import default_prices_path

    cfg = {k: v for k, v in config.model_dump(mode="json").items() if k not in OPERATIONAL_CONFIG}
    cfg["backend"] = _strip(cfg.get("backend"))
    adapters = {dim: _tree(a) for dim in config.dimensions if (a := adapter_for(config, dim, given))}
    return stable_hash({
        "format": _FORMAT, "config": cfg, "version": __version__, "code": _code_digest(),
        "dataset": _tree(config.dataset), "tokenizer": _tree(config.tokenizer), "adapters": adapters,
        "prices": [_tree(default_prices_path()), _tree(config.prices)], "templates": template_hashes(config),
    })


def backends_fingerprint(groups: dict[str, Any], judge_of_dim: dict[Any, str]) -> str:
    """The backend part of the run fingerprint: each judge backend's identity (what the call keys hold) and
    which judges which dimension."""
    return stable_hash({"backends": {g: backend_identity(b) for g, b in groups.items()},
                        "of_dim": {str(d): g for d, g in judge_of_dim.items()}})


def clear(run_dir: Path) -> None:
    """Remove ``finished.json`` (a run that is about to change the folder no longer vouches for it)."""
    (run_dir / FINISHED_FILE).unlink(missing_ok=True)


def candidate(run_dir: Path, static: str) -> dict[str, Any] | None:
    """The finished record of ``run_dir`` when its static fingerprint is ``static`` and the watched files are
    as it left them; else ``None`` (no record, unreadable, another fingerprint, a file changed)."""
    try:
        rec = json.loads((run_dir / FINISHED_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(rec, dict) or rec.get("format") != _FORMAT or rec.get("static") != static:
        return None
    files = rec.get("files")
    if not isinstance(files, dict) or any(_stat(run_dir / name) != files.get(name) for name in _WATCHED):
        return None
    return rec


def confirm(rec: dict[str, Any], groups: dict[str, Any], judge_of_dim: dict[Any, str]) -> bool:
    """Whether the built judge backends are those of the finished record."""
    return rec.get("backends") == backends_fingerprint(groups, judge_of_dim)


def record(run_dir: Path, static: str, groups: dict[str, Any], judge_of_dim: dict[Any, str], *, n_calls: int,
           n_keys: int, torn_lines: int) -> None:
    """Write ``finished.json`` after the run folder's files are written.

    Args:
        run_dir: the run folder.
        static: :func:`static_fingerprint` of the run (computed when it started).
        groups, judge_of_dim: the judge backends and which judges which dimension.
        n_calls: judge calls of the run (every one answered from the cache on a resume).
        n_keys: their distinct keys (the answers a resume reuses: ``calls["answers"]["reused"]``).
        torn_lines: torn lines of ``calls.jsonl`` (counted again by every replay of it).
    """
    write_json(run_dir / FINISHED_FILE, {
        "format": _FORMAT, "static": static, "backends": backends_fingerprint(groups, judge_of_dim),
        "calls": n_calls, "keys": n_keys, "torn_lines": torn_lines, "files": {name: _stat(run_dir / name) for name in _WATCHED}})


def rewrite_metrics(run_dir: Path, metrics: dict[str, Any]) -> None:
    """Write ``metrics.json`` again (this invocation's call bookkeeping) and vouch for the new file in
    ``finished.json``."""
    write_json(run_dir / "metrics.json", metrics)
    path = run_dir / FINISHED_FILE
    rec = json.loads(path.read_text(encoding="utf-8"))
    rec["files"]["metrics.json"] = _stat(run_dir / "metrics.json")
    write_json(path, rec)


def reusable(predictions: list[dict[str, Any]], retry_errors: bool) -> bool:
    """Whether a resume could be answered from these predictions: no sample failed (error or no score), or
    failed answers are kept (``retry_errors`` off)."""
    return not retry_errors or all(s.get("score") is not None for p in predictions for s in p.get("samples") or [])


def read_back(run_dir: Path, rec: dict[str, Any]) -> tuple[list[dict[str, Any]], dict[str, Any], dict[str, Any],
                                                            dict[str, Any]] | None:
    """The finished run's predictions, metrics, run config and this invocation's call bookkeeping.

    Returns:
        ``(predictions, metrics, run_config, calls)``; ``None`` when a file cannot be read (the caller replays).
    """
    try:
        with (run_dir / "predictions.jsonl").open("rb") as fh:
            predictions = [json.loads(line) for line in fh if line.strip()]
        metrics = json.loads((run_dir / "metrics.json").read_bytes())
        run_config = json.loads((run_dir / "run_config.json").read_bytes())
    except (OSError, ValueError):
        return None
    if not isinstance(metrics, dict) or not isinstance(run_config, dict):
        return None
    calls = {"torn_lines": int(rec.get("torn_lines") or 0), "cached": int(rec.get("calls") or 0), "made": 0,
             "errors": 0, "seconds": 0.0, "calls_per_s": None,
             "answers": {"reused": int(rec.get("keys") or 0), "retried": 0, "made": 0}}
    return predictions, metrics, run_config, calls

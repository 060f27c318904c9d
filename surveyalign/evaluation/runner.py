"""The evaluation harness: a judge over a split, cached call by call, resumable (SurveyReview §3, §6.1, App. E, G).

``run_evaluation(config)`` does, in order:

1. read the dataset split (contract 1) and build one judge prompt per unit with the shared prompt builder
   (contract 2); a unit with an empty survey text gets status ``missing_text`` and no call; with a token budget
   (``max_length``, default: the adapter's training ``max_length``) the survey body is cut by the training length
   rule so prompt + ``max_new_tokens`` fit, and a prompt that cannot fit the budget or the model context gets
   status ``api_error`` ("prompt too long ...") and no call;
2. for every unit and sample k < K, look the call up in ``RUN_DIR/calls.jsonl`` by its key (unit, dimension,
   k, prompt hash, backend identity, generation settings) and run only the missing calls, concurrently for
   async backends (the API client keeps ``concurrency`` requests in flight) and in batches for local ones,
   appending each answer to the cache as soon as it returns;
3. optionally (``rqs``) ask a consistency judge to rate every scored unit's rationale against the reference
   rationale (App. G), cached the same way;
4. parse every answer, vote over the K samples (App. E), write ``predictions.jsonl`` (one line per unit,
   whatever its status), ``metrics.json`` (``surveyalign.scoring.summarize_predictions``) and
   ``run_config.json`` (provenance), and print the summary table.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import platform
import re
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from surveyalign import __version__
from surveyalign.backends import preflight
from surveyalign.evaluation.cache import CallCache, call_key, stable_hash
from surveyalign.evaluation.config import BackendConfig, EvalConfig, GenerationConfig
from surveyalign.evaluation.consistency import (
    build_consistency_messages,
    consistency_prompt_hash,
    parse_consistency,
)
from surveyalign.evaluation.voting import majority_vote

__all__ = ["STATUSES", "RunResult", "TrainingMismatchError", "run_evaluation"]

_log = logging.getLogger(__name__)

#: Unit statuses, in report order (contract 4).
STATUSES: tuple[str, ...] = ("scored", "parse_failed", "api_error", "missing_text")

#: ``describe()`` entries that change how calls are made, not what they answer: left out of cache keys so a
#: resumed run with another concurrency, timeout or device still reuses its cached answers.
_OPERATIONAL_KEYS = frozenset(
    {
        "concurrency",
        "timeout",
        "max_retries",
        "backoff_initial",
        "backoff_max",
        "max_retry_after",
        "api_key_env",
        "api_key_present",
        "batch_size",
        "device",
        "transport",
    }
)
_SECRET_NAME = re.compile(r"(api[_-]?key|token|secret|password|authori[sz]ation|header|cookie)", re.IGNORECASE)


class TrainingMismatchError(ValueError):
    """An adapter's training record disagrees with the evaluation config (dimension, protocol,
    ``enable_thinking`` or ``use_knowledge``); the message names the adapter folder, each field, both values
    and the override (``allow_training_mismatch: true``)."""


#: Training-record fields compared with the evaluation, and the config key a user changes to fix a mismatch.
_RECORD_CHECKS: dict[str, str] = {
    "dimension": "dimensions / backend.per_dimension.<dimension>.adapter",
    "protocol": "protocol",
    "enable_thinking": "generation.enable_thinking",
    "use_knowledge": "knowledge_dimensions",
}
#: Training-record fields copied into ``run_config.json`` (``training_records``).
_RECORD_SUMMARY = ("stage", "dimension", "protocol", "enable_thinking", "use_knowledge", "prompt_hash",
                   "base_model", "sft_adapter", "dataset_path", "data_version", "data_hash", "n_train")


@dataclass
class RunResult:
    """What :func:`run_evaluation` returns.

    Attributes:
        run_dir: the run folder (``calls.jsonl``, ``predictions.jsonl``, ``metrics.json``, ``run_config.json``).
        metrics: the content of ``metrics.json``.
        counts: unit statuses (``scored``, ``parse_failed``, ``api_error``, ``missing_text``, ``total``).
        calls: call bookkeeping: ``made`` (this invocation), ``cached`` (reused), ``torn_lines`` (skipped
            cache lines), ``errors`` (calls of this invocation that came back with an error), ``seconds``
            (wall time of the call stage), and the same for the RQS stage under ``rqs_*``.
        predictions: the records written to ``predictions.jsonl``.
    """

    run_dir: Path
    metrics: dict[str, Any]
    counts: dict[str, int]
    calls: dict[str, int] = field(default_factory=dict)
    predictions: list[dict[str, Any]] = field(default_factory=list, repr=False)


@dataclass
class _Unit:
    """One (review, dimension) item of the split and its judge prompt."""

    row: dict[str, Any]
    dimension: str
    messages: list[dict[str, str]] | None  # None = missing text, no call
    prompt_hash: str | None
    knowledge: str | None = None  # the knowledge block put before the survey (None: none)
    prompt_tokens: int | None = None  # rendered prompt length, when a tokenizer counted it
    shortened_tokens: int = 0  # survey tokens cut to fit max_length
    too_long: str | None = None  # why no call is made: the prompt cannot fit (error text of the unit)


@dataclass
class _Job:
    """One call to make: ``messages`` with ``settings`` through the backend of group ``group``."""

    key: str
    stage: str
    unit_id: str
    dimension: str
    sample: int
    messages: list[dict[str, str]]
    prompt_hash: str
    settings: Any
    group: str


# ---------------------------------------------------------------------------------------------- public API


def run_evaluation(
    config: EvalConfig,
    *,
    backend: Any | None = None,
    rqs_backend: Any | None = None,
    console: Any | None = None,
    argv: Sequence[str] | None = None,
) -> RunResult:
    """Evaluate one judge on one split and write the run folder (contract 4).

    Args:
        config: the validated run configuration.
        backend: an already built judge backend to use instead of ``load_backend(config.backend...)``
            (same object for every dimension). Its ``describe()`` goes into the cache keys as usual.
        rqs_backend: likewise for the consistency judge of the RQS stage.
        console: a ``rich.console.Console`` for the summary (default: a new one on stdout).
        argv: the command line to record in ``run_config.json`` (default ``sys.argv``); values of
            credential-like ``key=value`` arguments are redacted.

    Returns:
        :class:`RunResult` with the run folder, the metrics dict and the status counts.

    Raises:
        FileNotFoundError: the dataset folder does not exist.
        ValueError: the split or a dimension is absent from the dataset, or a backend option is invalid.
        TrainingMismatchError: (a ``ValueError``) an adapter's training record disagrees with the config on
            dimension, protocol, enable_thinking or use_knowledge, and ``allow_training_mismatch`` is false.
        RuntimeError: another process holds the run folder's lock.
    """
    from surveyalign.console import make_console

    console = console or make_console()
    run_dir = config.run_dir
    run_dir.mkdir(parents=True, exist_ok=True)
    with _RunLock(run_dir / ".lock"):
        return _run_locked(config, run_dir, backend, rqs_backend, console, argv)


# ---------------------------------------------------------------------------------------------- the run


def _run_locked(config, run_dir: Path, backend, rqs_backend, console, argv) -> RunResult:
    started = _now()
    calls_path = run_dir / "calls.jsonl"
    if not config.resume and calls_path.exists() and calls_path.stat().st_size > 0:
        aside = run_dir / f"calls.{datetime.now(UTC).strftime('%Y%m%dT%H%M%S')}.jsonl"
        calls_path.rename(aside)
        console.print(f"resume=false: moved the earlier cache aside to {aside.name}")

    units, train_scores, data_info = _load_units(config)
    template_hashes = _template_hashes(config)
    # before any model is loaded: an adapter trained for another prompt setting is refused (or recorded)
    training_records = _check_training_records(config, units, backend, console)

    # backends: one instance per distinct option set (per-dimension adapters)
    judges, judge_of_dim = _build_backends(config.backend, config.dimensions, backend, config.protocol)
    # the training length rule: survey bodies cut so prompt + max_new_tokens fit max_length
    prompt_length = _fit_prompts(config, units, judges, judge_of_dim, backend, console)
    rqs_cfg = config.rqs if (config.rqs is not None and config.rqs.enabled) else None
    rqs_judges: dict[str, Any] = {}
    if rqs_cfg is not None:
        rqs_judges, _ = _build_backends(rqs_cfg.backend, [None], rqs_backend)
    try:
        # before the first call: every recorded setting applies, and each API server answers (no minutes of retries)
        preflight(list(judges.values()), _settings(config.generation, 0))
        if rqs_cfg is not None:
            preflight(list(rqs_judges.values()), _settings(rqs_cfg.generation, 0))
        run_config = _run_config(config, run_dir, data_info, template_hashes, judges, judge_of_dim, rqs_judges,
                                 argv, started)
        run_config["training_records"] = training_records
        run_config["allow_training_mismatch"] = config.allow_training_mismatch
        run_config["prompt_length"] = prompt_length
        _write_json(run_dir / "run_config.json", run_config)

        cache = CallCache.load(calls_path, fsync=config.fsync)
        if cache.n_torn:
            console.print(f"[yellow]calls.jsonl: skipped {cache.n_torn} torn/unreadable line(s); "
                          "those calls are made again[/]")
        calls: dict[str, int] = {"torn_lines": cache.n_torn}
        try:
            # stage 1: the judge
            identities = {g: _identity(b) for g, b in judges.items()}
            jobs, cached = _judge_jobs(config, units, judge_of_dim, identities, cache)
            calls.update(cached=cached, made=len(jobs))
            t0 = time.perf_counter()
            calls["errors"] = _execute(jobs, judges, config, cache, "judge", config.progress)
            calls["seconds"] = round(time.perf_counter() - t0, 3)
            calls["calls_per_s"] = _rate(len(jobs), time.perf_counter() - t0, judges)

            # stage 2: RQS (consistency of scored rationales with the reference)
            predictions = _assemble(config, units, cache, judge_of_dim, identities)
            if rqs_cfg is not None:
                rqs_identity = _identity(rqs_judges["shared"])
                rjobs, rcached = _rqs_jobs(rqs_cfg.generation, units, predictions, rqs_identity, cache)
                calls.update(rqs_cached=rcached, rqs_made=len(rjobs))
                t0 = time.perf_counter()
                calls["rqs_errors"] = _execute(rjobs, rqs_judges, config, cache, "rqs", config.progress)
                calls["rqs_seconds"] = round(time.perf_counter() - t0, 3)
                _attach_consistency(rqs_cfg.generation, units, predictions, rqs_identity, cache)
        finally:
            cache.close()
    finally:
        for b in list(judges.values()) + list(rqs_judges.values()):
            if b is not backend and b is not rqs_backend:  # close only what this run built
                _close(b)

    _write_jsonl(run_dir / "predictions.jsonl", predictions)
    counts = _status_counts(predictions)
    rqs_counts = _rqs_counts(predictions) if rqs_cfg is not None else {}
    metrics = _metrics(config, predictions, train_scores, rqs_cfg is not None)
    metrics.setdefault("harness", {"status_counts": counts, "calls": calls, "rqs_counts": rqs_counts})
    if isinstance(metrics.get("harness"), dict):
        metrics["harness"]["prompt_length"] = prompt_length
    _write_json(run_dir / "metrics.json", metrics)

    run_config["finished"] = _now()
    run_config["counts"] = counts
    run_config["calls"] = calls
    if rqs_counts:
        run_config["rqs_counts"] = rqs_counts
    _write_json(run_dir / "run_config.json", _scrub(run_config))

    _print_summary(console, config, metrics, predictions, counts, calls, rqs_counts, run_dir,
                   prompt_length=prompt_length)
    return RunResult(run_dir=run_dir, metrics=metrics, counts=counts, calls=calls, predictions=predictions)


# ---------------------------------------------------------------------------------------------- data


def _load_split(path: str, split: str):
    """The split as a ``datasets.Dataset`` of every dimension (contract 1)."""
    try:
        from surveyalign.data import load_surveyreview
    except ImportError:  # the data package has not landed: read the folder with datasets directly
        load_surveyreview = None
    if load_surveyreview is not None:
        return load_surveyreview(path, dimension="all", split=split)
    from datasets import load_dataset

    return load_dataset(path, "all", split=split)


def _load_units(config: EvalConfig) -> tuple[list[_Unit], dict[str, list[int]], dict[str, Any]]:
    """Units of the configured split and dimensions (first ``limit`` per dimension), train scores, data info."""
    from surveyalign.prompts import build_judge_prompt

    root = Path(config.dataset)
    if not root.exists():
        raise FileNotFoundError(f"dataset folder not found: {root} (build one with `surveyalign data build`)")
    ds = _load_split(str(root), config.split)
    present = set(ds.unique("dimension")) if len(ds) else set()
    missing_dims = [d for d in config.dimensions if d not in present]
    if missing_dims and len(ds):
        have = [d for d in config.dimensions if d in present] or sorted(present)
        raise ValueError(f"{root} ({config.split}): no units for dimension(s) {', '.join(missing_dims)}; "
                         f"evaluate the dimensions that have units with --dimensions {','.join(have)} "
                         f"(config key: dimensions)")
    has_knowledge = "knowledge" in ds.column_names

    by_dim: dict[str, list[dict[str, Any]]] = {d: [] for d in config.dimensions}
    for row in ds:
        dim = row["dimension"]
        if dim in by_dim and (config.limit is None or len(by_dim[dim]) < config.limit):
            by_dim[dim].append(row)

    units: list[_Unit] = []
    seen: set[str] = set()
    for dim in config.dimensions:
        for row in by_dim[dim]:
            if row["unit_id"] in seen:
                raise ValueError(f"{root} ({config.split}): unit_id {row['unit_id']!r} occurs twice")
            seen.add(row["unit_id"])
            text = row.get("text") or ""
            if not text.strip():
                units.append(_Unit(row=row, dimension=dim, messages=None, prompt_hash=None))
                continue
            knowledge = row.get("knowledge") if has_knowledge and dim in config.knowledge_dimensions else None
            prompt = build_judge_prompt(
                dim, text, protocol=config.protocol, knowledge=knowledge or None, title=row.get("title") or None
            )
            messages = prompt.messages()
            units.append(_Unit(row=row, dimension=dim, messages=messages, prompt_hash=stable_hash(messages),
                               knowledge=knowledge or None))

    train_scores: dict[str, list[int]] = {}
    try:
        train = _load_split(str(root), "train")
        for dim, score in zip(train["dimension"], train["score"]):
            train_scores.setdefault(dim, []).append(int(score))
    except (ValueError, KeyError, FileNotFoundError):
        train_scores = {}

    data_info = {
        "path": str(root.resolve()),
        "split": config.split,
        "units": len(units),
        "units_per_dimension": {d: len(v) for d, v in by_dim.items()},
        "knowledge_column": has_knowledge,
        **_folder_fingerprint(root),
    }
    return units, train_scores, data_info


def _folder_fingerprint(root: Path) -> dict[str, Any]:
    """sha256 over the relative paths and bytes of the data files (``root/data/**`` when it exists, else every
    file; hidden ones skipped), plus the builder version and release hash from ``build_report.json``.

    Only the data files are hashed so that rebuilding the same release (new timestamps in the card and report)
    gives the same hash.
    """
    digest = hashlib.sha256()
    n = 0
    base = root / "data" if (root / "data").is_dir() else root
    for path in sorted(p for p in base.rglob("*") if p.is_file()):
        rel = path.relative_to(root).as_posix()
        if any(part.startswith(".") for part in rel.split("/")):
            continue
        digest.update(rel.encode() + b"\0")
        with path.open("rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                digest.update(chunk)
        digest.update(b"\0")
        n += 1
    info: dict[str, Any] = {"sha256": digest.hexdigest(), "files": n, "hashed": base.relative_to(root).as_posix()}
    for name in ("build_info.json", "manifest.json", "build_report.json", "dataset_info.json"):
        p = root / name
        if p.is_file() and p.stat().st_size < 1_000_000:
            try:
                meta = json.loads(p.read_text())
            except (ValueError, OSError):
                continue
            if isinstance(meta, dict):
                info["manifest"] = name
                for key in ("version", "dataset_version", "surveyalign_version", "seed"):
                    if key in meta:
                        info["builder_version" if key == "surveyalign_version" else key] = meta[key]
                source = meta.get("input")
                if isinstance(source, dict):
                    info["release_path"] = source.get("path")
                    info["release_sha256"] = source.get("sha256")
            break
    return info


def _template_hashes(config: EvalConfig) -> dict[str, dict[str, str]]:
    """Template hashes (``JudgePrompt.hash``) per dimension, without and with knowledge augmentation."""
    from surveyalign.prompts import build_judge_prompt

    out: dict[str, dict[str, str]] = {}
    for dim in config.dimensions:
        entry = {"plain": build_judge_prompt(dim, "x", protocol=config.protocol).hash}
        if dim in config.knowledge_dimensions:
            entry["knowledge"] = build_judge_prompt(dim, "x", protocol=config.protocol, knowledge="k").hash
        out[dim] = entry
    return out


# ---------------------------------------------------------------------------------------------- backends


def _build_backends(
    cfg: BackendConfig, dimensions: Sequence[str | None], given: Any | None, protocol: str | None = None
) -> tuple[dict[str, Any], dict[str | None, str]]:
    """One backend per distinct option set; returns (group -> backend, dimension -> group).

    The constant baseline answers in the run's protocol unless its options name one.
    """
    if given is not None:
        return {"shared": given}, {d: "shared" for d in dimensions}
    from surveyalign.backends import load_backend

    groups: dict[str, Any] = {}
    of_dim: dict[str | None, str] = {}
    by_options: dict[str, str] = {}
    for dim in dimensions:
        options = cfg.options_for(dim)
        if cfg.kind == "constant" and protocol is not None:
            options.setdefault("protocol", protocol)
        h = stable_hash(options)
        if h not in by_options:
            group = "shared" if not by_options else f"g{len(by_options)}"
            by_options[h] = group
            try:
                groups[group] = load_backend(cfg.kind, **options)
            except TypeError as err:
                raise ValueError(f"backend {cfg.kind!r}: invalid options {sorted(options)}: {err}") from None
            except ValueError as err:
                where = f" (dimension {dim})" if dim is not None and dim in cfg.per_dimension else ""
                raise ValueError(f"backend{where}: {err}") from None
        of_dim[dim] = by_options[h]
    return groups, of_dim


def _adapter_for(config: EvalConfig, dimension: str, given: Any | None) -> str | None:
    """The adapter folder judging ``dimension``: the given backend's ``adapter_path``, else the config's option."""
    if given is not None:
        adapter = getattr(given, "adapter_path", None)
    else:
        adapter = config.backend.options_for(dimension).get("adapter")
    return str(adapter) if adapter else None


def _read_record(adapter: str) -> dict[str, Any] | None:
    """The adapter's training record (``surveyalign_training.json``), or ``None`` when it has none."""
    try:
        from surveyalign.training import read_training_record
    except ImportError:  # pragma: no cover - the training package is part of surveyalign
        return None
    try:
        record = read_training_record(adapter)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as err:
        raise TrainingMismatchError(f"{adapter}: unreadable training record: {err}") from None
    return record if isinstance(record, dict) else None


def _check_training_records(config: EvalConfig, units: list[_Unit], given: Any | None, console: Any
                            ) -> dict[str, Any]:
    """Compare each adapter's training record with this evaluation; the per-dimension summary for run_config.

    Checked fields (when the record has them): ``dimension`` (the dimension it judges here), ``protocol``,
    ``enable_thinking`` (``generation.enable_thinking``) and ``use_knowledge`` (whether the dimension is in
    ``knowledge_dimensions``; only checked when some evaluated unit of that dimension has a non-empty
    ``knowledge`` text, otherwise the prompts are the same either way). Prompts must match training, or the
    adapter is judged on inputs it never saw (SurveyAlign §5.2).

    Returns:
        ``{dimension: {"adapter": folder, "record": {summary fields} | None, "mismatches": [{field, adapter,
        evaluation}], "use_knowledge_checked": bool}}`` for every dimension judged by an adapter.

    Raises:
        TrainingMismatchError: on any mismatch unless ``config.allow_training_mismatch`` (then a warning is
            printed and the mismatches are recorded).
    """
    with_knowledge = {unit.dimension for unit in units
                      if unit.messages is not None and str(unit.row.get("knowledge") or "").strip()}
    summary: dict[str, Any] = {}
    problems: list[str] = []
    for dim in config.dimensions:
        adapter = _adapter_for(config, dim, given)
        if adapter is None:
            continue
        record = _read_record(adapter)
        entry: dict[str, Any] = {"adapter": adapter, "record": None, "mismatches": [],
                                 "use_knowledge_checked": dim in with_knowledge}
        summary[dim] = entry
        if record is None:
            continue
        entry["record"] = {k: record[k] for k in _RECORD_SUMMARY if k in record}
        expected: dict[str, Any] = {"dimension": dim, "protocol": config.protocol,
                                    "enable_thinking": config.generation.enable_thinking}
        if dim in with_knowledge:
            expected["use_knowledge"] = dim in config.knowledge_dimensions
        for name, want in expected.items():
            have = record.get(name)
            if have is None:  # not recorded (e.g. a DPO record without its SFT record's value)
                continue
            if name == "dimension" and isinstance(have, str):
                same = have.strip().lower() in (want, "all")
            else:
                same = have == want
            if not same:
                entry["mismatches"].append({"field": name, "adapter": have, "evaluation": want})
                problems.append(f"adapter {adapter} (judging {dim}): {name}: trained with {have!r}, this evaluation "
                                f"uses {want!r} (config key: {_RECORD_CHECKS[name]})")
    if problems:
        if not config.allow_training_mismatch:
            raise TrainingMismatchError(
                "the adapter's training record (surveyalign_training.json) disagrees with this evaluation:\n  "
                + "\n  ".join(problems)
                + "\nFix the config (or evaluate the matching adapter), or set `allow_training_mismatch: true` "
                "(CLI: --allow-training-mismatch) to evaluate anyway; the mismatch is then recorded in run_config.json."
            )
        console.print("[yellow]allow_training_mismatch: evaluating despite:\n  " + "\n  ".join(problems) + "[/]")
    return summary


def _identity(backend: Any) -> dict[str, Any]:
    """The part of ``backend.describe()`` that determines answers (see :data:`_OPERATIONAL_KEYS`)."""
    desc = backend.describe() if hasattr(backend, "describe") else {"backend": type(backend).__name__}
    return {k: v for k, v in desc.items() if k not in _OPERATIONAL_KEYS}


def _close(backend: Any) -> None:
    """Close a backend; a failure to close must not mask the run's outcome (it is only logged)."""
    close = getattr(backend, "close", None)
    if callable(close):
        try:
            close()
        except Exception as err:  # noqa: BLE001
            _log.debug("closing %s failed: %s", type(backend).__name__, err)


def _settings(gen: GenerationConfig, sample: int) -> Any:
    """``GenerationSettings`` for sample ``sample`` (seed = base seed + sample), fields the backend knows."""
    from surveyalign.backends import GenerationSettings

    values = gen.model_dump()
    values["seed"] = gen.seed + sample
    known = getattr(GenerationSettings, "model_fields", None)
    if known is None:  # a dataclass
        import dataclasses

        known = {f.name for f in dataclasses.fields(GenerationSettings)}
    return GenerationSettings(**{k: v for k, v in values.items() if k in known})


def _native_async(backend: Any) -> bool:
    """True when the backend implements ``agenerate`` itself (rather than wrapping ``generate`` in a thread)."""
    try:
        from surveyalign.backends import Backend
    except ImportError:  # pragma: no cover
        return hasattr(backend, "agenerate")
    own = getattr(type(backend), "agenerate", None)
    return own is not None and own is not getattr(Backend, "agenerate", None)


# ---------------------------------------------------------------------------------------------- prompt length

#: Start of the error text of a unit whose prompt cannot fit the model context (no call is made for it).
PROMPT_TOO_LONG = "prompt too long for the model context"


def _max_length_for(config: EvalConfig, dimension: str, given: Any | None) -> tuple[int | None, str | None]:
    """The token budget (prompt + max_new_tokens) of ``dimension`` and where it comes from.

    ``config.max_length`` when set, else the ``max_length`` of the adapter's training record (top level or
    under ``hyperparameters``), else ``(None, None)``: no shortening.
    """
    if config.max_length is not None:
        return config.max_length, "config"
    adapter = _adapter_for(config, dimension, given)
    record = _read_record(adapter) if adapter else None
    if record:
        value = record.get("max_length")
        if value is None and isinstance(record.get("hyperparameters"), dict):
            value = record["hyperparameters"].get("max_length")
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value, f"training record of {adapter}"
    return None, None


def _context_length(backend: Any) -> int | None:
    """The model context (tokens) of a local backend: ``max_positions`` (transformers) or vLLM's
    ``max_model_len``; ``None`` when unknown (API backends)."""
    for getter in (lambda b: b.max_positions, lambda b: b.max_model_len,
                   lambda b: b.llm.llm_engine.model_config.max_model_len):
        try:
            value = getter(backend)
        except Exception:  # noqa: BLE001, S112 - attribute absent or engine internals differ
            continue
        if isinstance(value, int) and value > 0:
            return value
    return None


def _fit_prompts(config: EvalConfig, units: list[_Unit], judges: dict[str, Any], judge_of_dim: dict[Any, str],
                 given: Any | None, console: Any) -> dict[str, Any]:
    """Cut survey bodies so that prompt + ``generation.max_new_tokens`` fit the token budget (SurveyAlign App. D).

    The same length rule as training (:func:`surveyalign.training.fit_survey_text`): the end of the survey body is
    removed at a token boundary; the instruction and the knowledge block are never cut. Tokens are counted on the
    prompt rendered with the chat template (``enable_thinking`` as configured), by ``config.tokenizer`` when set,
    else the local backend's own tokenizer (API backends without ``tokenizer``: no counting, no shortening).
    A unit whose prompt still does not fit (the instruction alone exceeds the budget, or prompt +
    ``max_new_tokens`` exceeds a known model context) gets ``too_long`` set and no call.

    Units are changed in place (``messages``, ``prompt_hash``, ``prompt_tokens``, ``shortened_tokens``,
    ``too_long``).

    Returns:
        ``{"max_new_tokens": int, "per_dimension": {dim: {"max_length", "max_length_source", "tokenizer",
        "model_context", "n_counted", "n_shortened", "removed_tokens", "n_too_long", "longest_prompt"}},
        "n_shortened": int, "n_too_long": int}`` for ``run_config.json`` and ``metrics.json`` (``harness``).

    Raises:
        ValueError: ``config.tokenizer`` cannot be loaded.
    """
    from surveyalign.prompts import build_judge_prompt, render_chat
    from surveyalign.training import fit_survey_text

    max_new = config.generation.max_new_tokens
    thinking = config.generation.enable_thinking
    shared_tok = None
    if config.tokenizer:
        from transformers import AutoTokenizer

        try:
            from surveyalign.models.paths import resolve_model_path

            shared_tok = AutoTokenizer.from_pretrained(resolve_model_path(config.tokenizer, "tokenizer"))
        except (OSError, ValueError) as err:
            raise ValueError(f"tokenizer {config.tokenizer!r} (config key: tokenizer) cannot be loaded: {err}") from None

    per_dim: dict[str, Any] = {}
    for dim in config.dimensions:
        judge = judges[judge_of_dim[dim]]
        budget, source = _max_length_for(config, dim, given)
        tok = shared_tok if shared_tok is not None else getattr(judge, "tokenizer", None)
        tok_name = config.tokenizer or (getattr(judge, "tokenizer_path", None) or getattr(judge, "model_path", None)
                                        if tok is not None else None)
        context = _context_length(judge)
        entry = per_dim[dim] = {"max_length": budget, "max_length_source": source, "tokenizer": tok_name,
                                "model_context": context, "n_counted": 0, "n_shortened": 0, "removed_tokens": 0,
                                "n_too_long": 0, "longest_prompt": 0}
        if tok is None:
            if budget is not None:
                console.print(f"[yellow]{dim}: max_length={budget} is not applied: no tokenizer to count prompt "
                              "tokens with (API backend); set `tokenizer: FOLDER` (CLI: --tokenizer)[/]")
            continue
        limit = None if budget is None else budget - max_new
        for unit in units:
            if unit.dimension != dim or unit.messages is None:
                continue

            def build(text: str, unit: _Unit = unit, dim: str = dim) -> list[dict[str, str]]:
                return build_judge_prompt(dim, text, protocol=config.protocol, knowledge=unit.knowledge,
                                          title=unit.row.get("title") or None).messages()

            def count(text: str, build: Callable = build, tok: Any = tok) -> int:
                rendered = render_chat(tok, build(text), enable_thinking=thinking)
                return len(tok(rendered, add_special_tokens=False)["input_ids"])

            text = unit.row.get("text") or ""
            if limit is not None and limit <= 0:
                unit.too_long = (f"{PROMPT_TOO_LONG}: max_length={budget} leaves no room for a prompt with "
                                 f"max_new_tokens={max_new}")
            else:
                try:
                    text, n_tokens, removed = fit_survey_text(text, count, limit, tok)
                except ValueError:
                    unit.too_long = (f"{PROMPT_TOO_LONG}: the prompt needs {count('')} tokens with an empty survey "
                                     f"body, more than max_length={budget} - max_new_tokens={max_new}")
                else:
                    unit.prompt_tokens, unit.shortened_tokens = n_tokens, removed
                    entry["n_counted"] += 1
                    entry["longest_prompt"] = max(entry["longest_prompt"], n_tokens)
                    if removed:
                        entry["n_shortened"] += 1
                        entry["removed_tokens"] += removed
                        unit.messages = build(text)
                        unit.prompt_hash = stable_hash(unit.messages)
                    if context is not None and n_tokens + max_new > context:
                        cut = (f" after cutting {removed} survey tokens to max_length={budget}" if removed
                               else f"; set max_length (CLI: --max-length) to at most {context} to shorten the "
                               "survey body")
                        unit.too_long = (f"{PROMPT_TOO_LONG}: {n_tokens} prompt tokens + max_new_tokens={max_new} "
                                         f"exceed the context of {context}{cut}")
            if unit.too_long:
                entry["n_too_long"] += 1
    return {"max_new_tokens": max_new, "per_dimension": per_dim,
            "n_shortened": sum(e["n_shortened"] for e in per_dim.values()),
            "n_too_long": sum(e["n_too_long"] for e in per_dim.values())}


# ---------------------------------------------------------------------------------------------- jobs


def _judge_jobs(config, units, judge_of_dim, identities, cache) -> tuple[list[_Job], int]:
    """The judge calls not yet in the cache (or cached with an error when ``retry_errors``), and how many are."""
    gen = config.generation.model_dump()
    jobs: list[_Job] = []
    cached = 0
    for unit in units:
        if unit.messages is None or unit.too_long:
            continue
        group = judge_of_dim[unit.dimension]
        for k in range(config.samples_per_unit):
            key = call_key(stage="judge", unit_id=unit.row["unit_id"], dimension=unit.dimension, sample=k,
                           prompt_hash=unit.prompt_hash, backend=identities[group], settings=gen)
            rec = cache.get(key)
            if rec is not None and not (config.retry_errors and rec.get("error")):
                cached += 1
                continue
            jobs.append(_Job(key, "judge", unit.row["unit_id"], unit.dimension, k, unit.messages,
                             unit.prompt_hash, _settings(config.generation, k), group))
    return jobs, cached


def _rqs_key(gen: GenerationConfig, unit: _Unit, messages, identity) -> str:
    return call_key(stage="rqs", unit_id=unit.row["unit_id"], dimension=unit.dimension, sample=0,
                    prompt_hash=stable_hash(messages), backend=identity, settings=gen.model_dump())


def _rqs_messages(unit: _Unit, prediction: dict[str, Any]):
    return build_consistency_messages(unit.dimension, title=unit.row.get("title") or "",
                                      reference=list(unit.row.get("rationales") or []),
                                      prediction=prediction["rationale"])


def _rqs_jobs(gen, units, predictions, identity, cache) -> tuple[list[_Job], int]:
    """Consistency calls for every scored unit not yet in the cache."""
    jobs: list[_Job] = []
    cached = 0
    for unit, pred in zip(units, predictions):
        if pred["status"] != "scored":
            continue
        messages = _rqs_messages(unit, pred)
        key = _rqs_key(gen, unit, messages, identity)
        rec = cache.get(key)
        if rec is not None and not rec.get("error"):
            cached += 1
            continue
        jobs.append(_Job(key, "rqs", unit.row["unit_id"], unit.dimension, 0, messages, stable_hash(messages),
                         _settings(gen, 0), "shared"))
    return jobs, cached


# ---------------------------------------------------------------------------------------------- execution


def _execute(jobs: list[_Job], backends: dict[str, Any], config: EvalConfig, cache: CallCache, stage: str,
             progress: bool) -> int:
    """Run ``jobs`` through their backends, appending every answer to ``cache`` as it arrives.

    Returns:
        The number of calls that came back with an error.
    """
    if not jobs:
        return 0
    from tqdm.auto import tqdm

    errors = 0
    lock = threading.Lock()
    timed = all(getattr(b, "answers_from_model", True) for b in backends.values())  # no rate for baselines
    bar = tqdm(total=len(jobs), desc=f"{config.name} [{stage}]", unit="call", disable=not progress,
               dynamic_ncols=True, file=sys.stderr, smoothing=0.1,
               bar_format=None if timed else "{l_bar}{bar}| {n_fmt}/{total_fmt}")

    def record(job: _Job, generation: Any, seconds: float) -> None:
        nonlocal errors
        rec = {
            "key": job.key,
            "stage": job.stage,
            "unit_id": job.unit_id,
            "dimension": job.dimension,
            "sample": job.sample,
            "prompt_hash": job.prompt_hash,
            "text": getattr(generation, "text", "") or "",
            "finish_reason": getattr(generation, "finish_reason", None),
            "mean_logprob": getattr(generation, "mean_logprob", None),
            "error": getattr(generation, "error", None),
            "refusal": getattr(generation, "refusal", None),
            "reasoning": getattr(generation, "reasoning", None),
            "seconds": round(seconds, 4),
            "time": _now(),
        }
        with lock:
            cache.append(rec)
            if rec["error"]:
                errors += 1
                bar.set_postfix(errors=errors, refresh=False)
            bar.update(1)

    try:
        by_group: dict[str, list[_Job]] = {}
        for job in jobs:
            by_group.setdefault(job.group, []).append(job)
        for group, group_jobs in by_group.items():
            backend = backends[group]
            if _native_async(backend):
                limit = config.concurrency or _option(backend, "concurrency") or 32
                with cache.background():  # disk writes off the event loop (measured: ~0.2 ms per call)
                    _run_coroutine(_run_async(backend, group_jobs, int(limit), record))
            else:
                # vLLM schedules its own batches: hand it many prompts at once (cache writes per batch)
                fallback = 256 if getattr(backend, "name", "") == "vllm" else 8
                size = config.batch_size or _option(backend, "batch_size") or fallback
                _run_sync(backend, group_jobs, int(size), record)
    finally:
        bar.close()
    return errors


def _rate(made: int, seconds: float, backends: dict[str, Any]) -> float | None:
    """Calls per second over the calls made (cached ones never count); None when nothing was made or a backend
    answers without a model (constant / scripted judges: no work to time)."""
    if not made or seconds <= 0 or not all(getattr(b, "answers_from_model", True) for b in backends.values()):
        return None
    return round(made / seconds, 2)


def _option(backend: Any, name: str) -> Any:
    value = getattr(backend, name, None)
    if value is None and hasattr(backend, "describe"):
        value = backend.describe().get(name)
    return value if isinstance(value, int) and value > 0 else None


def _failed(err: BaseException) -> Any:
    from surveyalign.backends import Generation

    return Generation(text="", finish_reason=None, mean_logprob=None, error=f"{type(err).__name__}: {err}")


async def _run_async(backend: Any, jobs: list[_Job], concurrency: int,
                     record: Callable[[_Job, Any, float], None]) -> None:
    """``concurrency`` workers pull jobs and await one call each; every answer is recorded on arrival."""
    pending = list(reversed(jobs))

    async def worker() -> None:
        while pending:
            job = pending.pop()
            t0 = time.perf_counter()
            try:
                out = await backend.agenerate([job.messages], job.settings, n=1)
                generation = out[0][0]
            except Exception as err:  # noqa: BLE001 - a backend bug becomes this call's recorded error
                generation = _failed(err)
            record(job, generation, time.perf_counter() - t0)

    try:
        await asyncio.gather(*(worker() for _ in range(min(concurrency, len(jobs)))))
    finally:
        aclose = getattr(backend, "aclose", None)
        if callable(aclose):
            try:
                await aclose()
            except Exception as err:  # noqa: BLE001
                _log.debug("closing the async client of %s failed: %s", type(backend).__name__, err)


def _run_coroutine(coro) -> None:
    """Run ``coro`` to completion, in a helper thread when this thread already runs an event loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        asyncio.run(coro)
        return
    box: dict[str, BaseException] = {}

    def target() -> None:
        try:
            asyncio.run(coro)
        except BaseException as err:  # noqa: BLE001
            box["err"] = err

    t = threading.Thread(target=target, name="surveyalign-eval")
    t.start()
    t.join()
    if "err" in box:
        raise box["err"]


def _run_sync(backend: Any, jobs: list[_Job], batch_size: int, record: Callable[[_Job, Any, float], None]) -> None:
    """Batches of ``batch_size`` prompts sharing settings through ``backend.generate``; recorded per batch."""
    by_sample: dict[int, list[_Job]] = {}
    for job in jobs:
        by_sample.setdefault(job.sample, []).append(job)
    for sample_jobs in by_sample.values():
        for start in range(0, len(sample_jobs), batch_size):
            batch = sample_jobs[start:start + batch_size]
            t0 = time.perf_counter()
            try:
                out = backend.generate([j.messages for j in batch], batch[0].settings, n=1)
                generations = [row[0] for row in out]
                if len(generations) != len(batch):
                    raise RuntimeError(f"backend returned {len(generations)} answers for {len(batch)} prompts")
            except Exception as err:  # noqa: BLE001 - recorded per call, retried on resume
                generations = [_failed(err)] * len(batch)
            per_call = (time.perf_counter() - t0) / len(batch)
            for job, generation in zip(batch, generations):
                record(job, generation, per_call)


# ---------------------------------------------------------------------------------------------- assembly


def _sample_view(rec: dict[str, Any] | None, protocol: str) -> dict[str, Any]:
    """One sample of a unit: parsed score, rationale and the raw answer (contract 4 ``samples`` entry + extras)."""
    from surveyalign.prompts import parse_generation

    if rec is None:  # cannot happen after a completed stage; kept explicit rather than dropped
        return {"score": None, "text": "", "finish_reason": None, "mean_logprob": None,
                "error": "no answer recorded", "_rationale": "", "_parse_error": None}
    if rec.get("error"):
        return {"score": None, "text": rec.get("text") or "", "finish_reason": rec.get("finish_reason"),
                "mean_logprob": rec.get("mean_logprob"), "error": rec["error"], "_rationale": "",
                "_parse_error": None}
    parsed = parse_generation(rec, protocol=protocol)  # a truncated or refused answer is a parse failure
    return {"score": parsed.score, "text": rec.get("text") or "", "finish_reason": rec.get("finish_reason"),
            "mean_logprob": rec.get("mean_logprob"), "error": None, "_rationale": parsed.rationale or "",
            "_parse_error": None if parsed.score is not None else (parsed.error or "no score")}


def _assemble(config, units, cache, judge_of_dim, identities) -> list[dict[str, Any]]:
    """One prediction record per unit (contract 4), from the cached judge answers."""
    gen = config.generation.model_dump()
    out: list[dict[str, Any]] = []
    for unit in units:
        row = unit.row
        base = {
            "unit_id": row["unit_id"],
            "paper_id": row.get("paper_id"),
            "review_id": row.get("review_id"),
            "source": row.get("source"),
            "dimension": unit.dimension,
            "reference": int(row["score"]),
            "reference_rationales": list(row.get("rationales") or []),
        }
        if unit.messages is None:
            out.append({**base, "prediction": None, "status": "missing_text", "rationale": "",
                        "error": "empty survey text: no call made", "samples": [], "consistency": None,
                        "prompt_tokens": None, "shortened_tokens": 0})
            continue
        base["prompt_tokens"] = unit.prompt_tokens
        base["shortened_tokens"] = unit.shortened_tokens
        if unit.too_long:
            out.append({**base, "prediction": None, "status": "api_error", "rationale": "",
                        "error": f"{unit.too_long} (no call made)", "samples": [], "consistency": None})
            continue
        identity = identities[judge_of_dim[unit.dimension]]
        views = []
        for k in range(config.samples_per_unit):
            key = call_key(stage="judge", unit_id=row["unit_id"], dimension=unit.dimension, sample=k,
                           prompt_hash=unit.prompt_hash, backend=identity, settings=gen)
            views.append(_sample_view(cache.get(key), config.protocol))
        vote = majority_vote([v["score"] for v in views], [v["mean_logprob"] for v in views])
        if vote.score is not None:
            status, rationale, error = "scored", views[vote.best_index]["_rationale"], None
        elif all(v["error"] for v in views):
            status, rationale = "api_error", ""
            error = "; ".join(dict.fromkeys(v["error"] for v in views))
        else:
            status = "parse_failed"
            rationale = next((v["_rationale"] for v in views if v["_rationale"]), "")
            error = "; ".join(dict.fromkeys(v["_parse_error"] or v["error"] for v in views))
        samples = [{k: v[k] for k in ("score", "text", "finish_reason", "mean_logprob", "error")} for v in views]
        record = {**base, "prediction": vote.score, "status": status, "rationale": rationale, "error": error,
                  "samples": samples, "consistency": None}
        if config.samples_per_unit > 1:
            record["vote"] = {"counts": {str(s): c for s, c in vote.counts.items()}, "tie_break": vote.tie_break,
                              "chosen_sample": vote.best_index}
        out.append(record)
    return out


def _attach_consistency(gen, units, predictions, identity, cache) -> None:
    """Fill ``consistency`` (and ``consistency_error``) of scored predictions from the cached RQS answers."""
    for unit, pred in zip(units, predictions):
        if pred["status"] != "scored":
            continue
        messages = _rqs_messages(unit, pred)
        rec = cache.get(_rqs_key(gen, unit, messages, identity))
        if rec is None:
            pred["consistency_error"] = "no RQS answer recorded"
        elif rec.get("error"):
            pred["consistency_error"] = f"api_error: {rec['error']}"
        else:
            from surveyalign.prompts import parse_generation

            parsed = parse_generation(rec, parse=parse_consistency)  # truncated / refused: parse_failed
            pred["consistency"] = parsed.score
            pred["consistency_error"] = None if parsed.score is not None else f"parse_failed: {parsed.error}"


def _status_counts(predictions: list[dict[str, Any]]) -> dict[str, int]:
    c = Counter(p["status"] for p in predictions)
    counts = {s: c.get(s, 0) for s in STATUSES}
    counts["total"] = len(predictions)
    return counts


def _rqs_counts(predictions: list[dict[str, Any]]) -> dict[str, int]:
    scored = [p for p in predictions if p["status"] == "scored"]
    return {
        "eligible": len(scored),
        "scored": sum(p["consistency"] is not None for p in scored),
        "parse_failed": sum(str(p.get("consistency_error") or "").startswith("parse_failed") for p in scored),
        "api_error": sum(str(p.get("consistency_error") or "").startswith("api_error") for p in scored),
    }


# ---------------------------------------------------------------------------------------------- metrics


def _metrics(config, predictions, train_scores, consistency_available: bool) -> dict[str, Any]:
    """``surveyalign.scoring.summarize_predictions`` over the records (contract 5)."""
    try:
        from surveyalign.scoring import summarize_predictions
    except ImportError as err:  # the scoring package has not landed yet
        return {"error": f"surveyalign.scoring.summarize_predictions unavailable: {err}",
                "status_counts": _status_counts(predictions)}
    return summarize_predictions(predictions, train_scores=train_scores or None,
                                 consistency_available=consistency_available, bootstrap=config.bootstrap,
                                 seed=config.generation.seed)


def _print_summary(console, config, metrics, predictions, counts, calls, rqs_counts, run_dir, *,
                   prompt_length: dict[str, Any] | None = None) -> None:
    from rich.table import Table

    try:
        from surveyalign.scoring import render_leaderboard

        console.print(render_leaderboard({config.name: metrics}))
    except Exception as err:  # noqa: BLE001 - the status table below is still printed
        console.print(f"[yellow]leaderboard unavailable: {err}[/]")

    table = Table(title=f"{config.name}: unit status ({config.split})")
    table.add_column("dimension")
    for s in STATUSES:
        table.add_column(s, justify="right")
    table.add_column("total", justify="right")
    for dim in config.dimensions:
        c = Counter(p["status"] for p in predictions if p["dimension"] == dim)
        table.add_row(dim, *(str(c.get(s, 0)) for s in STATUSES), str(sum(c.values())))
    table.add_row("all", *(str(counts[s]) for s in STATUSES), str(counts["total"]), style="bold")
    console.print(table)
    line = (f"calls: {calls.get('made', 0)} made ({calls.get('errors', 0)} with errors), "
            f"{calls.get('cached', 0)} reused from calls.jsonl")
    if calls.get("calls_per_s"):
        line += f" [{calls['calls_per_s']:.1f} calls/s over the {calls['made']} made]"
    if calls.get("torn_lines"):
        line += f", {calls['torn_lines']} torn line(s) skipped"
    if rqs_counts:
        line += (f"; RQS: {rqs_counts['scored']}/{rqs_counts['eligible']} rated, "
                 f"{rqs_counts['parse_failed']} parse_failed, {rqs_counts['api_error']} api_error")
    console.print(line)
    for note in _length_notes(prompt_length or {}):
        console.print(note, markup=False)
    for note in _error_notes(predictions):
        console.print(note, markup=False)
    overflow = re.compile(r"context|too long|maximum .*length", re.IGNORECASE)
    n_overflow = sum(1 for p in predictions if p["status"] == "api_error" and p.get("shortened_tokens", 0) == 0
                     and not str(p.get("error") or "").startswith(PROMPT_TOO_LONG)
                     and overflow.search(str(p.get("error") or "")))
    if n_overflow:
        console.print(f"{n_overflow} call(s) failed on the prompt length at the server: set `max_length` (CLI "
                      "--max-length) and, for API judges, `tokenizer` (CLI --tokenizer DIR: the served model's "
                      "tokenizer) so survey bodies are cut to fit", markup=False)
    console.print(f"run folder: {run_dir}")


def _length_notes(prompt_length: dict[str, Any]) -> list[str]:
    """Summary lines on shortened and too-long prompts (per dimension), from :func:`_fit_prompts`'s report."""
    per_dim = prompt_length.get("per_dimension") or {}
    notes: list[str] = []
    shortened = {d: e for d, e in per_dim.items() if e.get("n_shortened")}
    if shortened:
        parts = ", ".join(f"{d} {e['n_shortened']}/{e['n_counted']} (max_length={e['max_length']}, "
                          f"{e['removed_tokens']} tokens cut)" for d, e in shortened.items())
        notes.append(f"shortened survey body (prompt + max_new_tokens={prompt_length.get('max_new_tokens')} fitted "
                     f"to max_length): {parts}")
    too_long = {d: e["n_too_long"] for d, e in per_dim.items() if e.get("n_too_long")}
    if too_long:
        notes.append(f"{sum(too_long.values())} unit(s) with a prompt too long to fit (model context or max_length) "
                     f"even with the survey body shortened, no call made (api_error): "
                     + ", ".join(f"{d} {n}" for d, n in too_long.items())
                     + "; the error texts below say why (max_length, CLI --max-length, sets the token budget)")
    return notes


def _error_notes(predictions: list[dict[str, Any]], top: int = 3) -> list[str]:
    """The ``top`` most common error texts of the units that failed (api_error / parse_failed), with counts.

    Texts that differ only in their numbers (token counts, ports) are counted together; the first one is shown.
    """
    failed = [p for p in predictions if p["status"] in ("api_error", "parse_failed")]
    if not failed:
        return []
    groups: Counter[str] = Counter()
    shown: dict[str, str] = {}
    for p in failed:
        text = f"{p['status']}: {p.get('error') or 'no error text'}"
        key = re.sub(r"\d+", "N", text)
        groups[key] += 1
        shown.setdefault(key, text if len(text) <= 300 else text[:297] + "...")
    lines = [f"most common errors of the {len(failed)} failed unit(s):"]
    lines += [f"  {n} x {shown[key]}" for key, n in groups.most_common(top)]
    if len(groups) > top:
        lines.append(f"  ... and {len(groups) - top} other error text(s) (see predictions.jsonl `error`)")
    return lines


# ---------------------------------------------------------------------------------------------- provenance


def _run_config(config, run_dir, data_info, template_hashes, judges, judge_of_dim, rqs_judges, argv,
                started) -> dict[str, Any]:
    """Provenance of the run (``run_config.json``); never credentials."""
    describe = {g: (b.describe() if hasattr(b, "describe") else {"backend": type(b).__name__})
                for g, b in judges.items()}
    out: dict[str, Any] = {
        "name": config.name,
        "run_dir": str(run_dir.resolve()),
        "started": started,
        "command": _redact_argv(list(sys.argv if argv is None else argv)),
        "config": config.describe(),
        "data": data_info,
        "prompts": {
            "protocol": config.protocol,
            "template_hashes": template_hashes,
            "knowledge_dimensions": config.knowledge_dimensions,
        },
        "backend": {"kind": config.backend.kind,
                    "per_dimension": {d: describe[g] for d, g in judge_of_dim.items()}},
        "generation": config.generation.model_dump(),
        "samples_per_unit": config.samples_per_unit,
        "aggregation": config.aggregation,
        "seeds": {"generation_base": config.generation.seed, "sample_k": "base + k",
                  "bootstrap": config.generation.seed},
        "surveyalign_version": __version__,
        "git": _git_info(),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
    }
    if rqs_judges:
        out["rqs"] = {"backend": rqs_judges["shared"].describe() if hasattr(rqs_judges["shared"], "describe")
                      else {}, "prompt_hash": consistency_prompt_hash(),
                      "generation": config.rqs.generation.model_dump()}
    return _scrub(out)


def _git_info() -> dict[str, Any] | None:
    """Commit and dirty flag of the checkout holding this package (``None`` outside git)."""
    here = Path(__file__).resolve().parent
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=here, capture_output=True, text=True,
                                timeout=10, check=False)
        if commit.returncode != 0:
            return None
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=here,
                               capture_output=True, text=True, timeout=10, check=False)
        return {"commit": commit.stdout.strip(), "dirty": bool(dirty.stdout.strip())}
    except (OSError, subprocess.SubprocessError):
        return None


def _redact_argv(argv: list[str]) -> list[str]:
    """Replace the value of credential-like ``name=value`` arguments (and of ``--api-key VALUE``)."""
    out: list[str] = []
    hide_next = False
    for arg in argv:
        if hide_next:
            out.append("<redacted>")
            hide_next = False
            continue
        name, eq, _ = arg.partition("=")
        if _SECRET_NAME.search(name) and "api_key_env" not in name:
            if eq:
                out.append(f"{name}=<redacted>")
                continue
            if arg.startswith("--"):
                hide_next = True
        out.append(arg)
    return out


def _scrub(obj: dict[str, Any]) -> dict[str, Any]:
    """Belt and braces: remove the value of every credential-like environment variable from ``obj``."""
    blob = json.dumps(obj, default=str)
    secrets = [v for k, v in os.environ.items() if _SECRET_NAME.search(k) and v and len(v) >= 8]
    if not any(s in blob for s in secrets):
        return obj
    for s in secrets:
        blob = blob.replace(json.dumps(s)[1:-1], "<redacted>")
    return json.loads(blob)


# ---------------------------------------------------------------------------------------------- files


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _write_json(path: Path, obj: Any) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(obj, indent=2, ensure_ascii=False, default=str) + "\n")
    os.replace(tmp, path)


def _write_jsonl(path: Path, records: list[dict[str, Any]]) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    with tmp.open("w", encoding="utf-8") as fh:
        for rec in records:
            fh.write(json.dumps(rec, ensure_ascii=False, default=str) + "\n")
    os.replace(tmp, path)


class _RunLock:
    """An exclusive ``flock`` on ``RUN_DIR/.lock`` so two processes never append to one cache at once.

    The kernel drops the lock when the holder dies (even by ``kill -9``), so a crash never leaves it stale.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fh = None

    def __enter__(self) -> _RunLock:  # noqa: PYI034
        try:
            import fcntl
        except ImportError:  # pragma: no cover - not POSIX: no lock
            return self
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

    def __exit__(self, *exc) -> None:
        if self._fh is not None:
            import fcntl

            fcntl.flock(self._fh.fileno(), fcntl.LOCK_UN)
            self._fh.close()
            self._fh = None

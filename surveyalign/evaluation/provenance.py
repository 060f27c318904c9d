"""Provenance of a run (``run_config.json``): config, data, prompts, backends, seeds, versions; never credentials.

Credentials are kept out twice: values of credential-like command-line arguments are replaced
(:func:`redact_argv`), and the value of every credential-like environment variable is removed from the
whole record before it is written (:func:`scrub`).
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any

from surveyalign import __version__
from surveyalign.constants import SECRET_NAME
from surveyalign.evaluation.config import EvalConfig
from surveyalign.evaluation.rqs import rqs_template_hash

__all__ = ["git_info", "redact_argv", "run_config", "scrub"]


def _describe(backend: Any) -> dict[str, Any]:
    return backend.describe() if hasattr(backend, "describe") else {"backend": type(backend).__name__}


def run_config(config: EvalConfig, run_dir: Path, data_info: dict[str, Any], template_hashes: dict[str, Any],
               judges: dict[str, Any], judge_of_dim: dict[Any, str], rqs_backend: Any | None,
               argv: list[str] | None, started: str) -> dict[str, Any]:
    """The provenance record of a run.

    Args:
        config: the run configuration.
        run_dir: the run folder.
        data_info: the data's provenance (:func:`surveyalign.evaluation.units.load_units`).
        template_hashes: per dimension, the prompt template hashes.
        judges: group -> backend.
        judge_of_dim: dimension -> group.
        rqs_backend: the RQS judge, or ``None`` without the stage.
        argv: the command line (default ``sys.argv``).
        started: ISO time stamp of the start.

    Returns:
        A JSON-ready dict, scrubbed of credentials.
    """
    describe = {g: _describe(b) for g, b in judges.items()}
    out: dict[str, Any] = {
        "name": config.name,
        "run_dir": str(run_dir.resolve()),
        "started": started,
        "command": redact_argv(list(sys.argv if argv is None else argv)),
        "config": config.describe(),
        "data": data_info,
        "prompts": {
            "protocol": config.protocol,
            "layout": config.layout,
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
        "git": git_info(),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
    }
    if rqs_backend is not None:
        out["rqs"] = {"backend": _describe(rqs_backend), "template_hash": rqs_template_hash(),
                      "generation": config.rqs.generation.model_dump()}
    return scrub(out)


def git_info() -> dict[str, Any] | None:
    """Commit and dirty flag of the checkout holding this package (``None`` outside git, e.g. from a wheel)."""
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


def redact_argv(argv: list[str]) -> list[str]:
    """Replace the value of credential-like ``name=value`` arguments (and of ``--api-key VALUE``).

    Args:
        argv: the command line.

    Returns:
        A copy with those values replaced by ``<redacted>`` (``api_key_env``, a variable's name, is kept).
    """
    out: list[str] = []
    hide_next = False
    for arg in argv:
        if hide_next:
            out.append("<redacted>")
            hide_next = False
            continue
        name, eq, _ = arg.partition("=")
        if SECRET_NAME.search(name) and "api_key_env" not in name:
            if eq:
                out.append(f"{name}=<redacted>")
                continue
            if arg.startswith("--"):
                hide_next = True
        out.append(arg)
    return out


def scrub(obj: dict[str, Any]) -> dict[str, Any]:
    """Remove the value of every credential-like environment variable (8+ characters) from ``obj``.

    Args:
        obj: a JSON-ready dict.

    Returns:
        ``obj`` itself when it holds no such value, else a copy with each one replaced by ``<redacted>``.
    """
    blob = json.dumps(obj, default=str)
    secrets = [v for k, v in os.environ.items() if SECRET_NAME.search(k) and v and len(v) >= 8]
    if not any(s in blob for s in secrets):
        return obj
    for s in secrets:
        blob = blob.replace(json.dumps(s)[1:-1], "<redacted>")
    return json.loads(blob)

"""Reading an evaluation run folder for ``surveyalign report``: its predictions (``predictions.jsonl``), whether it ran the
consistency stage, and the training-label scores its baselines compare against (found from the run's config, or
read from a file given on the command line).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from surveyalign.data import load_train_scores, row_dimension


def read_predictions(run_dir: str | Path) -> list[dict[str, Any]]:
    """Read ``RUN_DIR/predictions.jsonl`` (``surveyalign/evaluation/predictions.py``).

    Raises:
        FileNotFoundError: if the file is absent.
        ValueError: naming the file and line of a line that is not a JSON object.
    """
    path = Path(run_dir) / "predictions.jsonl"
    if not path.is_file():
        raise FileNotFoundError(f"no predictions.jsonl in {run_dir}")
    out = []
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as err:
            raise ValueError(f"{path}:{lineno}: not valid JSON: {err}") from None
        if not isinstance(rec, dict):
            raise ValueError(f"{path}:{lineno}: expected a JSON object, got {type(rec).__name__}")  # noqa: TRY004
        out.append(rec)
    return out


def _find_dataset_path(config: Any) -> str | None:
    """The first string under a key ``dataset``/``dataset_path`` (or ``dataset.path``) in run_config."""
    if isinstance(config, dict):
        for key in ("dataset_path", "dataset"):
            value = config.get(key)
            if isinstance(value, str) and value:
                return value
            if isinstance(value, dict) and isinstance(value.get("path"), str):
                return value["path"]
        for value in config.values():
            found = _find_dataset_path(value)
            if found:
                return found
    return None


def find_train_scores(run_dir: str | Path) -> tuple[dict[str, list[int]] | None, str]:
    """Training labels for the baselines, from the dataset named in ``RUN_DIR/run_config.json``.

    Returns:
        ``(train_scores or None, message)``: ``{dimension: [scores]}`` of the dataset's ``train`` split
        and where they came from, or None and why not (no run_config, no dataset path, unreadable).
    """
    cfg_path = Path(run_dir) / "run_config.json"
    if not cfg_path.is_file():
        return None, f"no run_config.json in {run_dir}"
    try:
        config = json.loads(cfg_path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        return None, f"{cfg_path}: not valid JSON ({err})"
    named = _find_dataset_path(config)
    recorded = (config.get("data") or {}).get("path") if isinstance(config.get("data"), dict) else None
    if not named and not recorded:
        return None, f"{cfg_path}: names no dataset path"
    # the harness records the resolved absolute path under data.path; a relative config path is tried from the
    # current folder and from the run folder, so the report works from anywhere
    candidates = [c for c in (recorded, named) if isinstance(c, str) and c]
    candidates += [str(Path(run_dir) / c) for c in candidates if not Path(c).is_absolute()]
    dataset = next((c for c in candidates if Path(c).exists()), None)
    if dataset is None:
        return None, f"{cfg_path}: dataset {named or recorded} does not exist here (tried {', '.join(candidates)})"
    try:
        return load_train_scores(dataset), f"training labels from {dataset}"
    except Exception as err:  # noqa: BLE001 - report why, carry on without baselines
        return None, f"could not read training labels from {dataset}: {type(err).__name__}: {err}"


def had_consistency_stage(run_dir: str | Path) -> bool | None:
    """True when ``RUN_DIR/run_config.json`` records an RQS (consistency) stage, else None (infer)."""
    cfg_path = Path(run_dir) / "run_config.json"
    try:
        config = json.loads(cfg_path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None
    return True if isinstance(config, dict) and config.get("rqs") else None


def load_train_scores_file(path: str | Path) -> dict[str, list[int]]:
    """Training labels from ``--train-scores FILE``: a JSON object ``{dimension: [scores]}`` (dimension keys in
    any case: this reader parses them, the row edge) or a dataset folder built by ``surveyalign data build``.

    Returns:
        ``{Dimension: [scores]}`` (canonical dimension keys).

    Raises:
        FileNotFoundError: if the path does not exist.
        ValueError: naming the file when the JSON is not such a mapping or names an unknown dimension.
    """
    p = Path(path)
    if p.is_dir():
        return load_train_scores(p)
    if not p.is_file():
        raise FileNotFoundError(f"train scores not found: {p}")
    data = json.loads(p.read_text(encoding="utf-8"))
    if not isinstance(data, dict) or not all(isinstance(v, list) for v in data.values()):
        raise ValueError(f"{p}: expected a JSON object {{dimension: [scores]}}")
    try:
        return {row_dimension(k): [int(s) for s in v] for k, v in data.items()}
    except ValueError as err:
        raise ValueError(f"{p}: {err}") from None

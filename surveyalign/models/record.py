"""The training record of an adapter folder (``surveyalign_training.json``): its one writer and its one reader.

A surveyalign recipe (``recipes/sft.py``, ``recipes/dpo.py``) writes the record next to the PEFT files
(SurveyReview App. D): dimension, protocol, ``enable_thinking``, ``use_knowledge``, the base model's identity and
quantisation (:mod:`surveyalign.models.identity`, :mod:`surveyalign.models.quantization`), the token budget
``max_length``, data hash, hyper-parameters, metrics. Evaluation, ``score``, ``serve``, DPO pair making and the
DPO recipe read it back through :func:`read_training_record`, which checks what they rely on.

:func:`resolve_max_length` is the one origin rule of a judge's token budget: the config, else the record.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from surveyalign.constants import DIMENSIONS
from surveyalign.models.length import max_length_problem

__all__ = ["RECORD_KEYS", "TRAINING_RECORD", "read_training_record", "resolve_max_length", "write_training_record"]

#: File name of the training record inside an adapter folder.
TRAINING_RECORD = "surveyalign_training.json"
#: Keys every training record has (and their types): what evaluation must reproduce to judge as in training.
RECORD_KEYS: dict[str, type] = {"protocol": str, "enable_thinking": bool, "dimension": str, "use_knowledge": bool}


def write_training_record(output_dir: str | os.PathLike, record: dict[str, Any]) -> Path:
    """Write the training record ``surveyalign_training.json`` into an adapter folder (SurveyReview App. D).

    The one writer; :func:`read_training_record` is the one reader.

    Args:
        output_dir: the adapter folder (must exist).
        record: JSON-serialisable training record; non-JSON values (paths, enums) are written with ``str``.
            Evaluation needs at least the :data:`RECORD_KEYS` keys (see :func:`read_training_record`).

    Returns:
        Path of the written file (sorted keys, 2-space indent, UTF-8, trailing newline).

    Raises:
        OSError: when the folder does not exist or is not writable.
    """
    path = Path(output_dir) / TRAINING_RECORD
    path.write_text(json.dumps(record, indent=2, sort_keys=True, default=str) + "\n", encoding="utf-8")
    return path


def read_training_record(adapter_dir: str | os.PathLike, *, required: bool = True) -> dict[str, Any]:
    """Read and check the training record of an adapter folder (what evaluation must reproduce).

    The one reader of ``surveyalign_training.json``: evaluation, ``score``, ``serve`` / the local backends (base
    identity and quantisation), DPO pair making, the DPO recipe and the ``max_length`` origin rule
    (:func:`resolve_max_length`) use it; :func:`write_training_record` is the one writer.

    The returned dict always has these keys, with these types (others, e.g. ``stage``, ``base_model``, ``base``,
    ``quantization``, ``data_hash``, ``data_version``, ``hyperparameters``, ``metrics``, ``length``, follow as
    written):

    - ``protocol`` (str): prompt/answer protocol version, e.g. ``"v1.0"`` (``surveyalign.prompts.PROTOCOLS``);
    - ``enable_thinking`` (bool): the chat template's thinking switch used to render training examples;
    - ``dimension`` (str): one of ``surveyalign.constants.DIMENSIONS`` (lower case);
    - ``use_knowledge`` (bool): whether a row's knowledge-augmentation block was put before the survey
      (Comp-KA / Crit-KA, SurveyAlign §5.2.3).

    When present, ``max_length`` must be null or an integer >= :data:`surveyalign.models.MIN_MAX_LENGTH` (the one
    floor of a token budget).

    Args:
        adapter_dir: folder written by a surveyalign recipe (a Hub id or a served model name has no local record).
        required: when False, a folder without a record gives ``{}`` (an adapter trained elsewhere, a Hub id).

    Returns:
        The record dict (a fresh copy; safe to modify); ``{}`` for a folder without one when not ``required``.

    Raises:
        FileNotFoundError: naming the folder when it has no record and ``required`` (not trained by a
            surveyalign recipe).
        ValueError: naming the file and the field when the record is not a JSON object, lacks one of the four
            keys above, holds a value of the wrong type or an unknown dimension, or a ``max_length`` below the
            floor.
    """
    path = Path(adapter_dir) / TRAINING_RECORD
    if not path.is_file() and not required:
        return {}
    if not path.is_file():
        raise FileNotFoundError(f"{adapter_dir}: no {TRAINING_RECORD} (adapter not trained by a surveyalign recipe)")
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise ValueError(f"{path}: not valid JSON ({err})") from None
    problem = _record_problem(record)
    if problem:
        raise ValueError(f"{path}: {problem}")
    return record


def _record_problem(record: Any) -> str | None:
    """What is wrong with a parsed training record for evaluation, or None when it is usable."""
    if not isinstance(record, dict):
        return "the training record must be a JSON object"
    for key, kind in RECORD_KEYS.items():
        if key not in record:
            return f"field {key!r} is missing (needed to evaluate the adapter as it was trained)"
        if not isinstance(record[key], kind):
            return f"field {key!r} is {record[key]!r}, expected a {kind.__name__}"
    if record["dimension"] not in DIMENSIONS:
        return f"field 'dimension' is {record['dimension']!r}, expected one of {DIMENSIONS}"
    if record.get("max_length") is not None:
        problem = max_length_problem(record["max_length"])
        if problem:
            return f"field 'max_length' {problem}"
    return None


def resolve_max_length(config_value: int | None, adapter: str | os.PathLike | None
                       ) -> tuple[int | None, str | None]:
    """The token budget of a judge and where it comes from: the config, else the adapter's training record.

    Args:
        config_value: the configured ``max_length`` (already checked at the edge), or None.
        adapter: the adapter folder judging (a Hub id or served model name has no local record), or None.

    Returns:
        ``(config_value, "config")`` when it is set; else ``(record max_length, "training record of ADAPTER")``
        when the adapter folder's training record has one (its top-level ``max_length``, the one place it is
        stored); else ``(None, None)``: no shortening.

    Raises:
        ValueError: the adapter's training record exists but is unreadable or malformed (file and field named).
    """
    if config_value is not None:
        return config_value, "config"
    if not adapter:
        return None, None
    value = read_training_record(adapter, required=False).get("max_length")
    return (value, f"training record of {adapter}") if value is not None else (None, None)

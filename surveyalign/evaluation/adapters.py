"""Adapter training records against the evaluation: prompts must match training (SurveyAlign §5.2, App. D).

An adapter folder written by ``recipes/sft.py`` or ``recipes/dpo.py`` holds ``surveyalign_training.json``
(:func:`surveyalign.models.read_training_record`). Before any model is loaded, the runner compares it with the
evaluation config (dimension, protocol, ``enable_thinking``, ``use_knowledge``) and takes the length budget
``max_length`` from it when the config sets none (:func:`surveyalign.models.resolve_max_length`).
"""

from __future__ import annotations

from typing import Any

from surveyalign.evaluation.config import EvalConfig
from surveyalign.evaluation.units import Unit
from surveyalign.models import read_training_record, resolve_max_length

__all__ = ["TrainingMismatchError", "adapter_for", "check_training_records", "max_length_for", "training_record"]


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
_RECORD_SUMMARY = ("stage", "dimension", "protocol", "enable_thinking", "use_knowledge", "template_hash",
                   "base_model", "sft_adapter", "dataset_path", "data_version", "data_hash", "n_train")


def adapter_for(config: EvalConfig, dimension: str, given: Any | None) -> str | None:
    """The adapter folder judging ``dimension``: the given backend's ``adapter_path``, else the config's option.

    Args:
        config: the run configuration.
        dimension: the dimension.
        given: a backend handed to ``run_evaluation`` (``None``: the config's backend is built).

    Returns:
        The folder, or ``None`` when no adapter judges ``dimension``.
    """
    if given is not None:
        adapter = getattr(given, "adapter_path", None)
    else:
        adapter = config.backend.options_for(dimension).get("adapter")
    return str(adapter) if adapter else None


def training_record(adapter: str) -> dict[str, Any] | None:
    """The adapter's training record (:func:`surveyalign.models.read_training_record`), or ``None`` when the folder
    has none.

    Raises:
        TrainingMismatchError: the record exists but cannot be read or is malformed.
    """
    try:
        return read_training_record(adapter)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as err:
        raise TrainingMismatchError(f"{adapter}: unreadable training record: {err}") from None


def max_length_for(config: EvalConfig, dimension: str, given: Any | None) -> tuple[int | None, str | None]:
    """The token budget (prompt + max_new_tokens) of ``dimension`` and where it comes from.

    The one origin rule, :func:`surveyalign.models.resolve_max_length`, applied to ``config.max_length`` and the
    adapter judging ``dimension``.

    Args:
        config: the run configuration.
        dimension: the dimension.
        given: a backend handed to ``run_evaluation``, or ``None``.

    Returns:
        ``(config.max_length, "config")`` when set, else the ``max_length`` of the adapter's training record
        (``"training record of DIR"``), else ``(None, None)``: no shortening.

    Raises:
        TrainingMismatchError: the adapter's training record exists but cannot be read or is malformed.
    """
    adapter = adapter_for(config, dimension, given)
    try:
        return resolve_max_length(config.max_length, adapter)
    except (OSError, ValueError) as err:
        raise TrainingMismatchError(f"{adapter}: unreadable training record: {err}") from None


def check_training_records(config: EvalConfig, units: list[Unit], given: Any | None, console: Any
                           ) -> dict[str, Any]:
    """Compare each adapter's training record with this evaluation; the per-dimension summary for run_config.

    Checked fields (when the record has them): ``dimension`` (the dimension it judges here), ``protocol``,
    ``enable_thinking`` (``generation.enable_thinking``) and ``use_knowledge`` (whether the dimension is in
    ``knowledge_dimensions``; only checked when some evaluated unit of that dimension has a non-empty
    ``knowledge`` text, otherwise the prompts are the same either way). Prompts must match training, or the
    adapter is judged on inputs it never saw (SurveyAlign §5.2).

    Args:
        config: the run configuration.
        units: the units to evaluate.
        given: a backend handed to ``run_evaluation``, or ``None``.
        console: a ``rich`` console for the warning printed under ``allow_training_mismatch``.

    Returns:
        ``{dimension: {"adapter": folder, "record": {summary fields} | None, "mismatches": [{field, adapter,
        evaluation}], "use_knowledge_checked": bool}}`` for every dimension judged by an adapter.

    Raises:
        TrainingMismatchError: on any mismatch unless ``config.allow_training_mismatch`` (then a warning is
            printed and the mismatches are recorded).
    """
    with_knowledge = {unit.dimension for unit in units
                      if unit.has_text and str(unit.row.get("knowledge") or "").strip()}
    summary: dict[str, Any] = {}
    problems: list[str] = []
    for dim in config.dimensions:
        adapter = adapter_for(config, dim, given)
        if adapter is None:
            continue
        record = training_record(adapter)
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

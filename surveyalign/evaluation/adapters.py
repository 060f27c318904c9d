"""Adapter training records against the evaluation: prompts must match training (SurveyAlign §5.2, App. D).

An adapter folder written by ``recipes/sft.py`` or ``recipes/dpo.py`` holds ``surveyalign_training.json``
(:func:`surveyalign.models.read_training_record`). Before any model is loaded, the runner compares it with the
evaluation config (dimension, protocol, ``enable_thinking``, ``use_knowledge`` and how many training examples and
evaluated units carry knowledge) and takes the length budget ``max_length`` from it when the config sets none
(:func:`surveyalign.models.resolve_max_length`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from surveyalign.evaluation.config import EvalConfig
from surveyalign.evaluation.units import Unit
from surveyalign.models import read_training_record, resolve_max_length

__all__ = ["TrainingMismatchError", "adapter_for", "check_training_records", "max_length_for", "trained_knowledge",
           "training_record"]


class TrainingMismatchError(ValueError):
    """An adapter's training record disagrees with the evaluation config (dimension, protocol,
    ``enable_thinking``, ``use_knowledge``, or the knowledge counts of training and evaluation); the message names
    the adapter folder, each field, both values and the override (``allow_training_mismatch: true``)."""


#: Training-record fields compared with the evaluation, and the config key a user changes to fix a mismatch.
_RECORD_CHECKS: dict[str, str] = {
    "dimension": "dimensions / backend.per_dimension.<dimension>.adapter",
    "protocol": "protocol",
    "enable_thinking": "generation.enable_thinking",
    "use_knowledge": "knowledge_dimensions",
}
#: Training-record fields copied into ``run_config.json`` (``training_records``).
_RECORD_SUMMARY = ("stage", "dimension", "protocol", "enable_thinking", "use_knowledge", "template_hash",
                   "base_model", "sft_adapter", "dataset_path", "data_version", "data_hash", "n_train",
                   "n_train_with_knowledge", "allow_missing_knowledge")


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


def trained_knowledge(record: dict[str, Any]) -> tuple[int | None, int | None]:
    """How many of an adapter's training examples carried a knowledge block, and how many there were.

    Args:
        record: a training record (:func:`surveyalign.models.read_training_record`).

    Returns:
        ``(n_train_with_knowledge, n_train)``: the recorded count; for an SFT record without it, the SFT length
        report's ``length.train.n_with_knowledge``; ``0`` for a record with ``use_knowledge: false`` (no prompt
        carried one); ``None`` where the record does not say (e.g. a DPO adapter on a pairs file without
        ``with_knowledge``).
    """
    n_with = record.get("n_train_with_knowledge")
    if n_with is None:
        length = record.get("length")
        train = length.get("train") if isinstance(length, dict) else None
        n_with = train.get("n_with_knowledge") if isinstance(train, dict) else None
    if n_with is None and record.get("use_knowledge") is False:
        n_with = 0
    n_train = record.get("n_train")
    return (n_with if isinstance(n_with, int) else None), (n_train if isinstance(n_train, int) else None)


def _knowledge_problem(record: dict[str, Any], n_with: int, n_train: int | None, n_eval_with: int, n_eval: int,
                       dim: str) -> tuple[str, str] | None:
    """(adapter side, evaluation side) of a knowledge mismatch between training and these units, or None."""
    trained = f"knowledge in {n_with}/{n_train if n_train is not None else '?'} training examples"
    evaluated = f"knowledge in {n_eval_with}/{n_eval} units of {dim}"
    if record.get("use_knowledge") and n_with == 0:  # a KA adapter trained on a dataset without knowledge
        why = (f"use_knowledge true but {trained} (trained on a dataset without a `knowledge` column: retrain it "
               "on the KA dataset of `surveyalign ka build`)")
        return why, evaluated
    if n_with > 0 and n_eval and n_eval_with == 0:
        fix = "config keys: dataset, a KA dataset of `surveyalign ka build`; knowledge_dimensions"
        return f"trained with {trained}", f"this evaluation has {evaluated} ({fix})"
    if n_with == 0 and n_eval_with > 0:
        plain = f"trained without knowledge ({trained})"
        return plain, f"this evaluation has {evaluated} (config key: knowledge_dimensions)"
    return None


def check_training_records(config: EvalConfig, units: list[Unit], given: Any | None, console: Any
                           ) -> dict[str, Any]:
    """Compare each adapter's training record with this evaluation; the per-dimension summary for run_config.

    Checked fields (when the record has them): ``dimension`` (the dimension it judges here), ``protocol`` and
    ``enable_thinking`` (``generation.enable_thinking``). Knowledge augmentation (SurveyAlign §5.2.3) is checked by
    counts when the record has them (:func:`trained_knowledge`): the training examples whose prompt carried a
    knowledge block against the evaluated units (with survey text) of that dimension whose prompt carries one
    (a non-empty ``knowledge`` text and the dimension in ``knowledge_dimensions``). Refused: an adapter trained
    with knowledge (``use_knowledge`` true, > 0 examples) on units none of which carries it; an adapter trained
    without knowledge on units some of which carry it; and any record with ``use_knowledge`` true but 0 examples
    with knowledge (a KA adapter trained on a dataset without the column). The message names both counts, e.g.
    ``trained with knowledge in 40/40 training examples, this evaluation has knowledge in 0/12 units of
    comprehensiveness``. A record without counts falls back to comparing ``use_knowledge`` with whether the
    dimension is in ``knowledge_dimensions``, only when some evaluated unit of it has a non-empty ``knowledge``
    text. Prompts must match training, or the adapter is judged on inputs it never saw (SurveyAlign §5.2).

    Args:
        config: the run configuration.
        units: the units to evaluate.
        given: a backend handed to ``run_evaluation``, or ``None``.
        console: a ``rich`` console for the warning printed under ``allow_training_mismatch``.

    Returns:
        ``{dimension: {"adapter": folder, "record": {summary fields} | None, "mismatches": [{field, adapter,
        evaluation}], "use_knowledge_checked": bool}}`` for every dimension judged by an adapter; with a record
        also ``"knowledge": {"train": [with, n], "evaluation": [with, n]}`` (counts; ``None`` where unknown).

    Raises:
        TrainingMismatchError: ``layout`` other than ``app_c`` for a dimension judged by an adapter with a training
            record (one line naming the record; never allowed: the adapter never saw that prompt order); on any
            other mismatch unless ``config.allow_training_mismatch`` (then a warning is
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
        if record is not None and config.layout != "app_c":
            from surveyalign.models.record import TRAINING_RECORD

            raise TrainingMismatchError(
                f"layout: {config.layout} is for zero-shot judges only: adapter {adapter} (judging {dim}) was trained "
                f"on the App. C prompt order ({Path(adapter) / TRAINING_RECORD}); use layout: app_c (CLI --layout app_c)")
        entry: dict[str, Any] = {"adapter": adapter, "record": None, "mismatches": [],
                                 "use_knowledge_checked": dim in with_knowledge}
        summary[dim] = entry
        if record is None:
            continue
        entry["record"] = {k: record[k] for k in _RECORD_SUMMARY if k in record}
        judged = [unit for unit in units if unit.dimension == dim and unit.has_text]
        n_eval_with = sum(1 for unit in judged if str(unit.knowledge or "").strip())
        n_with, n_train = trained_knowledge(record)
        entry["knowledge"] = {"train": [n_with, n_train], "evaluation": [n_eval_with, len(judged)]}
        expected: dict[str, Any] = {"dimension": dim, "protocol": config.protocol,
                                    "enable_thinking": config.generation.enable_thinking}
        if n_with is None and dim in with_knowledge:  # no counts recorded: the flag against the config
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
        problem = None if n_with is None else _knowledge_problem(record, n_with, n_train, n_eval_with, len(judged),
                                                                 dim)
        if problem is not None:
            entry["use_knowledge_checked"] = True
            entry["mismatches"].append({"field": "knowledge", "adapter": problem[0], "evaluation": problem[1]})
            problems.append(f"adapter {adapter} (judging {dim}): {problem[0]}; {problem[1]}")
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

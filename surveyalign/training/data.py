"""SFT examples from a SurveyReview dataset, fitted to the training length (SurveyAlign §5.1, App. D).

Examples come from :func:`surveyalign.prompts.build_sft_example` (the protocol builder shared with
evaluation) as TRL conversational prompt-completion pairs. Each example carries
``chat_template_kwargs = {"enable_thinking": ...}``, which TRL passes to the chat template, so the rendering is
the one evaluation uses with the same value.

Length rule (:func:`surveyalign.prompts.fit_survey_text`, shared with DPO pairs and evaluation): when prompt +
completion render to more than ``max_length`` tokens, the survey body is cut at a token boundary (its end is
removed) until the example fits; the instruction, the knowledge-augmentation block and the completion
(rationale + score) are never cut. TRL then truncates nothing, which the recipe checks.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from datasets import Dataset

from surveyalign.prompts import (
    build_judge_prompt,
    build_sft_example,
    count_chat_tokens,
    fit_survey_text,
)

logger = logging.getLogger(__name__)


@dataclass
class LengthReport:
    """How many examples had their survey body shortened to fit ``max_length``.

    Attributes:
        max_length: the token budget of one rendered example (prompt + completion).
        n_units: examples built.
        n_shortened: examples whose survey text was cut.
        removed_tokens: survey tokens removed over all examples.
        longest: longest rendered example after fitting, in tokens (<= max_length when max_length is set).
        shortened_unit_ids: unit ids of the shortened examples, in dataset order.
        n_missing_text: rows left out because their survey text is empty (evaluation marks them
            ``missing_text`` too).
        missing_text_unit_ids: their unit ids.
        n_with_knowledge: examples whose prompt carries a knowledge-augmentation block.
    """

    max_length: int | None
    n_units: int = 0
    n_shortened: int = 0
    removed_tokens: int = 0
    longest: int = 0
    shortened_unit_ids: list[str] = field(default_factory=list)
    n_missing_text: int = 0
    n_with_knowledge: int = 0
    missing_text_unit_ids: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable copy."""
        return asdict(self)


def _knowledge(row: dict, use_knowledge: bool) -> str | None:
    value = row.get("knowledge") if use_knowledge else None
    return value or None


def prepare_sft_dataset(
    dataset,
    tokenizer,
    *,
    dimension: str,
    protocol: str = "v1.0",
    enable_thinking: bool = False,
    max_length: int | None,
    use_knowledge: bool = True,
):
    """Turn SurveyReview rows into TRL prompt-completion examples that fit ``max_length``.

    Args:
        dataset: a ``datasets.Dataset`` with the dataset columns (``surveyalign/data/schema.py``) (``unit_id``, ``dimension``, ``text``,
            ``rationales``, ``score``; optional ``knowledge``).
        tokenizer: the tokenizer of the model to train (its chat template renders the examples).
        dimension: the dimension trained; rows of other dimensions raise.
        protocol: prompt/answer protocol version (``surveyalign.prompts.PROTOCOLS``).
        enable_thinking: chat-template thinking switch stored in every example's ``chat_template_kwargs``.
        max_length: token budget of prompt + completion (the ``SFTConfig.max_length``); None = no fitting.
        use_knowledge: put a non-empty ``knowledge`` value before the survey (Comp-KA / Crit-KA).

    Returns:
        (``datasets.Dataset`` with columns ``unit_id``, ``prompt``, ``completion``, ``chat_template_kwargs``,
        :class:`LengthReport`). Rows with an empty survey text are left out and counted in the report.

    Raises:
        ValueError: naming the unit when a row has another dimension, or when an example cannot fit.
    """
    report = LengthReport(max_length=max_length)
    rows: list[dict[str, Any]] = []
    for row in dataset:
        unit = row.get("unit_id", "?")
        if row["dimension"] != dimension:
            raise ValueError(f"unit {unit}: dimension {row['dimension']!r}, expected {dimension!r}")
        if not (row.get("text") or "").strip():
            report.n_missing_text += 1
            report.missing_text_unit_ids.append(unit)
            continue
        knowledge = _knowledge(row, use_knowledge)

        def build(text: str, row=row, knowledge=knowledge) -> dict:
            return build_sft_example(dimension, text, row["rationales"], int(row["score"]), protocol=protocol,
                                     knowledge=knowledge, title=row.get("title") or None)

        def count(text: str) -> int:
            example = build(text)
            return count_chat_tokens(tokenizer, example["prompt"] + example["completion"],
                                     enable_thinking=enable_thinking)

        try:
            text, n_tokens, removed = fit_survey_text(row["text"], count, max_length, tokenizer)
        except ValueError as err:
            raise ValueError(f"unit {unit}: {err}") from None
        example = build(text)
        report.n_units += 1
        report.n_with_knowledge += knowledge is not None
        report.longest = max(report.longest, n_tokens)
        if removed:
            report.n_shortened += 1
            report.removed_tokens += removed
            report.shortened_unit_ids.append(unit)
        rows.append({
            "unit_id": unit,
            "prompt": example["prompt"],
            "completion": example["completion"],
            "chat_template_kwargs": {"enable_thinking": bool(enable_thinking)},
        })
    # the caller reports these counts once (the recipe prints one line per split); here only at INFO level
    if report.n_missing_text:
        logger.info("left out %d %s units with an empty survey text: %s", report.n_missing_text, dimension,
                    report.missing_text_unit_ids)
    if report.n_shortened:
        logger.info(
            "shortened the survey body of %d/%d %s examples to fit max_length=%s (%d tokens removed)",
            report.n_shortened, report.n_units, dimension, max_length, report.removed_tokens,
        )
    return Dataset.from_list(rows), report


def describe_split(report: LengthReport, split: str, *, what: str = "training") -> str:
    """One line on how a split's examples were built: shortened bodies and units left out without text.

    Args:
        report: the :class:`LengthReport` of :func:`prepare_sft_dataset` for that split.
        split: split name shown in the line (``train``, ``validation``).
        what: noun for the examples (``training``, ``evaluation``).

    Returns:
        e.g. ``"shortened the survey body of 3/16 training examples to fit max_length=512 (completions are never
        cut); 1 train unit without survey text left out"``.
    """
    line = (f"shortened the survey body of {report.n_shortened}/{report.n_units} {what} examples to fit "
            f"max_length={report.max_length} (completions are never cut)")
    if report.n_missing_text:
        line += f"; {report.n_missing_text} {split} unit(s) without survey text left out"
    return line


def require_examples(report: LengthReport, n_rows: int, *, dataset_path: str, dimension: str, split: str,
                     what: str = "training", hint: str = "") -> None:
    """Fail early, with the counts, when a split gives no example (TRL would stop with a bare StopIteration).

    Args:
        report: the :class:`LengthReport` of :func:`prepare_sft_dataset` for that split.
        n_rows: rows of the split handed to it (after ``max_*_samples``).
        dataset_path: the dataset folder (named in the message).
        dimension: the dimension trained.
        split: the split name.
        what: ``"training"`` or ``"evaluation"``.
        hint: appended to the message (how to go on without this split).

    Raises:
        ValueError: e.g. ``no training examples for criticalness in DIR (train split: 1 unit, 1 without survey
            text)`` when ``report.n_units == 0``.
    """
    if report.n_units:
        return
    units = f"{n_rows} unit" + ("" if n_rows == 1 else "s")
    raise ValueError(f"no {what} examples for {dimension} in {dataset_path} ({split} split: {units}, "
                     f"{report.n_missing_text} without survey text){hint}")


#: The KA config named in the command that builds a dataset's ``knowledge`` column (SurveyReview App. F).
KA_CONFIG = "configs/ka/default.yaml"


def ka_dataset_path(dataset_path: str | os.PathLike) -> str:
    """The folder ``surveyalign ka build`` writes for a dataset folder: its path with ``-ka`` appended.

    Args:
        dataset_path: a SurveyReview dataset folder, e.g. ``data/surveyreview``.

    Returns:
        e.g. ``"data/surveyreview-ka"`` (a trailing ``/`` is dropped first); the shipped configs of the
        knowledge-augmented dimensions read this folder.
    """
    return str(dataset_path).rstrip("/\\") + "-ka"


def ka_build_command(dataset_path: str | os.PathLike) -> str:
    """The command that adds the ``knowledge`` column (Comp-KA / Crit-KA, SurveyAlign §5.2, App. F) to a dataset.

    Args:
        dataset_path: the dataset folder without knowledge.

    Returns:
        ``surveyalign ka build --dataset PATH --graph GRAPH --out PATH-ka --config configs/ka/default.yaml``.
    """
    path = str(dataset_path).rstrip("/\\")
    return f"surveyalign ka build --dataset {path} --graph GRAPH --out {ka_dataset_path(path)} --config {KA_CONFIG}"


def count_knowledge(rows: Any) -> int:
    """Rows whose ``knowledge`` text is non-empty (after stripping white space).

    Args:
        rows: a ``datasets.Dataset`` or a list of row dicts; a dataset without a ``knowledge`` column counts 0.

    Returns:
        The count, in [0, len(rows)].
    """
    names = getattr(rows, "column_names", None)
    if names is not None:
        values = rows["knowledge"] if "knowledge" in names else []
    else:
        values = [row.get("knowledge") for row in rows]
    return sum(1 for value in values if str(value or "").strip())


def require_knowledge(rows: Any, *, dataset_path: str | os.PathLike, dimension: str, split: str,
                      allow_missing: bool, fix: str) -> int:
    """Refuse to build knowledge-augmented training prompts from rows that carry no knowledge (SurveyAlign §5.2.3).

    With ``use_knowledge`` on, a row's non-empty ``knowledge`` text goes before its survey; on a dataset without the
    column (or with only empty values) every prompt would be plain while the training record says
    ``use_knowledge: true``. Called by the SFT recipe, the DPO recipe's pair check and ``train dpo-pairs``.

    Args:
        rows: the split's rows (after any sample limit).
        dataset_path: the dataset folder (named in the message, with the command that builds its KA version).
        dimension: the dimension trained.
        split: the split name.
        allow_missing: the override (``allow_missing_knowledge``): return the count (0) instead of raising.
        fix: how the caller turns knowledge off or allows its absence, appended to the message.

    Returns:
        The number of rows with a non-empty ``knowledge`` text (> 0 unless ``allow_missing``).

    Raises:
        ValueError: one line, when no row carries knowledge and ``allow_missing`` is false, e.g. ``data/surveyreview:
            use_knowledge is true but no train row of criticalness carries a knowledge text (the dataset has no
            `knowledge` column); build the KA dataset with `surveyalign ka build --dataset data/surveyreview --graph
            GRAPH --out data/surveyreview-ka --config configs/ka/default.yaml` and train on data/surveyreview-ka, or
            <fix>``.
    """
    n_with = count_knowledge(rows)
    if n_with or allow_missing:
        return n_with
    names = getattr(rows, "column_names", None)
    has_column = "knowledge" in names if names is not None else any("knowledge" in row for row in rows)
    why = (f"the `knowledge` column is empty in all {len(rows)} rows" if has_column
           else "the dataset has no `knowledge` column")
    raise ValueError(f"{dataset_path}: use_knowledge is true but no {split} row of {dimension} carries a knowledge "
                     f"text ({why}); build the KA dataset with `{ka_build_command(dataset_path)}` and train on "
                     f"{ka_dataset_path(dataset_path)}, or {fix}")


def data_hash(dataset: Iterable[dict], columns: tuple[str, ...] = ("unit_id", "score", "rationales", "text",
                                                                   "knowledge")) -> str:
    """sha256 hex digest of the listed columns of every row, in order (a stable training-data id).

    Args:
        dataset: rows (a ``datasets.Dataset`` or list of dicts); missing columns count as null.
        columns: columns hashed.

    Returns:
        64-character hex digest.
    """
    digest = hashlib.sha256()
    for row in dataset:
        digest.update(json.dumps([row.get(c) for c in columns], ensure_ascii=False).encode("utf-8"))
        digest.update(b"\n")
    return digest.hexdigest()


def check_prepared_lengths(prepared, n_expected: int, max_length: int | None, name: str) -> None:
    """Check TRL's tokenised dataset: nothing dropped, nothing longer than ``max_length``, labels present.

    Args:
        prepared: the dataset held by the trainer after its preprocessing (columns ``input_ids`` and
            ``labels`` or ``completion_mask``).
        n_expected: number of examples we handed to the trainer.
        max_length: the configured token budget (None: no length check).
        name: split name used in messages.

    Raises:
        RuntimeError: when TRL dropped examples, or an example is longer than ``max_length`` or has no
            completion token to learn from.
    """
    if len(prepared) != n_expected:
        raise RuntimeError(f"{name}: TRL kept {len(prepared)} of {n_expected} examples; none may be dropped")
    for i, row in enumerate(prepared):
        if max_length is not None and len(row["input_ids"]) > max_length:
            raise RuntimeError(f"{name} example {i}: {len(row['input_ids'])} tokens > max_length={max_length}")
        labels = row.get("labels")
        if labels is not None and not any(t != -100 for t in labels):
            raise RuntimeError(f"{name} example {i}: no completion token left in the labels")


def template_hash(dimension: str, protocol: str) -> str:
    """The judge-prompt template hash (``JudgePrompt.template_hash``: template + protocol, not the survey).

    Recorded in ``surveyalign_training.json`` so evaluation can tell whether it prompts the adapter with the
    template it was trained on (SurveyAlign §5.1; ``surveyalign/prompts/builder.py``).

    Args:
        dimension: one of ``surveyalign.constants.DIMENSIONS``.
        protocol: prompt/answer protocol version (``surveyalign.prompts.PROTOCOLS``, e.g. ``"v1.0"``).

    Returns:
        The sha256 hex string.
    """
    return build_judge_prompt(dimension, "", protocol=protocol).template_hash

"""Script arguments of the SurveyAlign training recipes and the parsers that read their YAML files.

The recipes (``recipes/sft.py``, ``recipes/dpo.py``) parse three dataclasses with TRL's ``TrlParser``: our
script arguments below (subclasses of ``trl.ScriptArguments``, which brings ``dataset_train_split`` and the other
dataset fields), TRL's ``SFTConfig``/``DPOConfig`` and TRL's ``ModelConfig`` (LoRA settings live there:
``use_peft``, ``lora_r``, ``lora_alpha``, ``lora_dropout``, ``lora_target_modules``). Nothing of TRL is
re-declared here. SurveyReview App. D / SurveyAlign §5. This module needs TRL (the ``train`` extra):
``surveyalign.training`` imports it on first use of one of its names.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trl import ScriptArguments

from surveyalign.yamlconfig import dimension_setting


@dataclass
class SFTScriptArguments(ScriptArguments):
    """What the SFT recipe trains on: one dimension of a SurveyReview dataset folder (``surveyalign/data/schema.py``).

    The survey body is shortened (never the completion) so that prompt + completion fit ``max_length`` of the
    ``SFTConfig``; see :func:`surveyalign.training.prepare_sft_dataset`. SurveyAlign §5.1-§5.2, App. D.
    """

    dataset_path: str | None = field(
        default=None,
        metadata={"help": "SurveyReview dataset folder written by `surveyalign data build` (or a Hub id); "
                          "TRL's `dataset_name` is taken when this is not set."},
    )
    dimension: str = field(
        default="readability",
        metadata={"help": "Dimension to train: readability, structure, comprehensiveness or criticalness."},
    )
    protocol: str = field(
        default="v1.0",
        metadata={"help": "Prompt/answer protocol version (v1.0: `Reason$$$X$$$`; v1.1: <reason>/<score> tags)."},
    )
    enable_thinking: bool = field(
        default=False,
        metadata={
            "help": "Value of the chat template's `enable_thinking` when rendering training examples; evaluation "
            "must use the same value (it is recorded in surveyalign_training.json)."
        },
    )
    use_knowledge: bool = field(
        default=True,
        metadata={
            "help": "Put the row's knowledge-augmentation text (column `knowledge`) before the survey when it is "
            "non-empty (Comp-KA / Crit-KA, SurveyAlign §5.2.3)."
        },
    )
    allow_missing_knowledge: bool = field(
        default=False,
        metadata={
            "help": "With use_knowledge, train even when no training row carries a `knowledge` text (a dataset not "
            "built by `surveyalign ka build`); recorded in surveyalign_training.json. Off: such a run is refused."
        },
    )
    dataset_eval_split: str = field(
        default="validation",
        metadata={"help": "Split used for evaluation loss and best-checkpoint selection (paper-level 10%%)."},
    )
    max_train_samples: int | None = field(
        default=None, metadata={"help": "Keep only the first N training units (tiny runs); None keeps all."}
    )
    max_eval_samples: int | None = field(
        default=None, metadata={"help": "Keep only the first N evaluation units; None keeps all."}
    )
    data_version: str | None = field(
        default=None,
        metadata={"help": "Data version for the model card; default: read from the dataset folder's "
                          "build_report.json as `surveyreview@<sha12> seed N builder X` (the data hash is always "
                          "recorded)."},
    )
    model_card_template: str | None = field(
        default=None,
        metadata={"help": "Model card template; defaults to hub_cards/model_card.md of this repository."},
    )
    resume: bool = field(
        default=False,
        metadata={"help": "Continue the checkpoint in output_dir although it was trained with other settings (the "
                          "changed fields are recorded); without it such a folder is refused."},
    )
    overwrite: bool = field(
        default=False,
        metadata={"help": "Delete the checkpoints and training record an earlier run left in output_dir and start "
                          "again there."},
    )

    def __post_init__(self) -> None:
        self.dimension = dimension_setting(self.dimension)  # the recipe YAML / flag: the config edge
        self.dataset_path = self.dataset_path or self.dataset_name


@dataclass
class DPOScriptArguments(ScriptArguments):
    """What the DPO recipe trains on: preference pairs made by ``surveyalign train dpo-pairs``.

    DPO starts from the SFT adapter (``sft_adapter``), loaded as a trainable PEFT model; TRL then keeps a frozen
    copy of it as the reference. Without ``sft_adapter`` a fresh LoRA adapter is trained on the base model and the
    adapter-disabled base model is the reference. SurveyAlign §5.2.3 (Criticalness: SFT, then DPO).
    """

    pairs_path: str | None = field(
        default=None, metadata={"help": "JSONL of preference pairs written by `surveyalign train dpo-pairs`."}
    )
    eval_pairs_path: str | None = field(
        default=None, metadata={"help": "Optional JSONL of held-out pairs for the evaluation loss."}
    )
    sft_adapter: str | None = field(
        default=None,
        metadata={"help": "SFT adapter folder to continue from (its frozen copy is the DPO reference)."},
    )
    dimension: str = field(default="criticalness", metadata={"help": "Dimension of the pairs (checked)."})
    allow_missing_knowledge: bool = field(
        default=False,
        metadata={
            "help": "Train even when the pairs say use_knowledge but no pair's prompt carries a knowledge block "
            "(pairs made from a dataset without a `knowledge` column); recorded. Off: such a run is refused."
        },
    )
    max_train_samples: int | None = field(
        default=None, metadata={"help": "Keep only the first N pairs (tiny runs); None keeps all."}
    )
    data_version: str | None = field(
        default=None, metadata={"help": "Data version for the card; default: the SFT adapter's recorded one."}
    )
    model_card_template: str | None = field(
        default=None,
        metadata={"help": "Model card template; defaults to hub_cards/model_card.md of this repository."},
    )
    resume: bool = field(
        default=False,
        metadata={"help": "Continue the checkpoint in output_dir although it was trained with other settings (the "
                          "changed fields are recorded); without it such a folder is refused."},
    )
    overwrite: bool = field(
        default=False,
        metadata={"help": "Delete the checkpoints and training record an earlier run left in output_dir and start "
                          "again there."},
    )

    def __post_init__(self) -> None:
        self.dimension = dimension_setting(self.dimension)  # the recipe YAML / flag: the config edge


_RECIPE_EPILOG = """\
Every option above is also a key of the YAML given with --config; options on the command line override it.
The option list is TRL's and transformers' (SFTConfig/DPOConfig, ModelConfig) plus ours (dataset, dimension,
protocol, ...); `surveyalign train {sft,dpo} --config YAML` launches a recipe with accelerate."""


def _recipe_parser(dataclass_types: tuple, prog: str | None, description: str | None):
    """A ``TrlParser`` whose help starts with the recipe's usage examples and lists ``--config`` first.

    ``--config`` is read (and removed from the arguments) by ``TrlParser.parse_args_and_config`` itself; it is
    declared here only for ``--help``, with a suppressed default so it never reaches the dataclasses.
    """
    import argparse

    from trl import TrlParser

    class _Formatter(argparse.RawDescriptionHelpFormatter, argparse.ArgumentDefaultsHelpFormatter):
        pass

    text = None
    if description:  # the recipe's module docstring, without the markdown code fences
        lines = [line for line in description.strip().splitlines() if not line.startswith("```")]
        # a `\`-newline in a (non-raw) docstring joins a shell command's lines: break them again for display
        text = "\n".join(re.sub(r" {3,}(?=--)", " \\\n    ", line) for line in lines)
    parser = TrlParser(dataclass_types, prog=prog, description=text, epilog=_RECIPE_EPILOG,
                       formatter_class=_Formatter, usage="%(prog)s --config YAML [--FIELD VALUE ...]")
    parser.add_argument(
        "--config", metavar="YAML", default=argparse.SUPPRESS,
        help="recipe YAML (configs/sft/*.yaml or configs/dpo/*.yaml) whose keys are the options below",
    )
    return parser


def make_sft_parser(prog: str | None = None, description: str | None = None):
    """Return the ``TrlParser`` of ``recipes/sft.py`` over (SFTScriptArguments, SFTConfig, ModelConfig).

    Args:
        prog: program name shown in ``--help``.
        description: text shown at the top of ``--help`` (the recipe passes its module docstring: usage
            examples), markdown code fences removed.

    Returns:
        ``trl.TrlParser``; ``parse_args_and_config()`` returns the three dataclass instances in that order.
    """
    from trl import ModelConfig, SFTConfig

    return _recipe_parser((SFTScriptArguments, SFTConfig, ModelConfig), prog, description)


def make_dpo_parser(prog: str | None = None, description: str | None = None):
    """Return the ``TrlParser`` of ``recipes/dpo.py`` over (DPOScriptArguments, DPOConfig, ModelConfig).

    Args:
        prog: program name shown in ``--help``.
        description: text shown at the top of ``--help`` (the recipe's module docstring), code fences removed.

    Returns:
        ``trl.TrlParser``; ``parse_args_and_config()`` returns the three dataclass instances in that order.
    """
    from trl import DPOConfig, ModelConfig

    return _recipe_parser((DPOScriptArguments, DPOConfig, ModelConfig), prog, description)


def recipe_kind(path: str | os.PathLike) -> str:
    """Say which recipe a YAML belongs to, from its path.

    Args:
        path: a recipe YAML (e.g. ``configs/dpo/criticalness.yaml``); resolved to an absolute path first.

    Returns:
        ``"dpo"`` when a folder of the path is named ``dpo``, else ``"sft"``.
    """
    return "dpo" if "dpo" in Path(path).resolve().parts else "sft"


def parse_recipe_yaml(path: str | os.PathLike, kind: str | None = None, *,
                      check_device: bool = True) -> tuple[Any, Any, Any]:
    """Parse a recipe YAML through the recipe's real parser, rejecting unknown keys.

    Args:
        path: a YAML under ``configs/sft/`` or ``configs/dpo/``.
        kind: ``"sft"`` or ``"dpo"``; inferred from the path (:func:`recipe_kind`) when None.
        check_device: let transformers refuse ``bf16: true`` on a machine without a bf16 GPU (as the recipe
            does); False parses a GPU config on any machine (memory planning, config checks on CPU).

    Returns:
        (script_args, training_args, model_args) dataclass instances, exactly as the recipe would see them
        without command-line overrides.

    Raises:
        FileNotFoundError: no such file.
        ValueError: naming the file when it is not valid YAML (line and column), not a mapping, or holds keys no
            dataclass knows or a value a field rejects.
    """
    from surveyalign.yamlconfig import read_yaml_mapping

    kind = kind or recipe_kind(path)
    parser = make_dpo_parser() if kind == "dpo" else make_sft_parser()
    config = read_yaml_mapping(path, "recipe config")
    config.pop("env", None)  # TrlParser applies `env:` to os.environ; not a dataclass field
    import dataclasses

    known = {f.name for dtype in parser.dataclass_types for f in dataclasses.fields(dtype)}
    unknown = sorted(set(config) - known)
    if unknown:
        raise ValueError(f"{path}: unknown key(s) {unknown}; no field of the {kind} recipe has these names")
    import contextlib
    from unittest import mock

    no_device_check = (contextlib.nullcontext() if check_device else
                       mock.patch("transformers.training_args.is_torch_bf16_gpu_available", return_value=True))
    try:
        with no_device_check:
            return tuple(parser.parse_dict(config, allow_extra_keys=False))
    except ValueError as err:
        raise ValueError(f"{path}: {err}") from err

"""surveyalign.training: SurveyAlign SFT and DPO recipes' library side (SurveyAlign §5, App. D).

The recipes live in ``recipes/sft.py`` and ``recipes/dpo.py`` (TRL + PEFT + accelerate); this package holds
what they share: script arguments and parsers, the SFT example builder with the length rule, DPO pair
construction, saved-adapter checks and the model card. The training record (one writer, one reader), the base
identity and the quantisation live in :mod:`surveyalign.models`.
"""

import lazy_loader

from surveyalign.training.adapter import (
    AdapterReport,
    dataset_version,
    finalize_adapter,
    hyperparameters,
    init_deepspeed_comm,
    inspect_adapter,
    push_adapter_to_hub,
    render_model_card,
    write_model_card,
)
from surveyalign.training.entry import recipe_usage, run_recipe
from surveyalign.training.packing import check_packing, check_rows, check_trainer
from surveyalign.training.pairs import (
    PairsSummary,
    choose_rejected,
    make_dpo_pairs,
    read_pairs,
)
from surveyalign.training.progress import (
    LOG_FILE,
    checkpoint_step,
    quiet_library_bars,
    rates_over_this_run,
    use_log_file,
)
from surveyalign.training.rundir import RUN_SETTINGS, OutputDirCheck, guard_output_dir
from surveyalign.training.steps import model_init_kwargs, provenance, train_with_resume

# Loaded on first use (lazy_loader): :mod:`surveyalign.training.arguments` needs TRL (the ``train`` extra), so
# evaluation and the data commands work without TRL installed; the SFT / DPO data builders import datasets, so
# building the CLI parser stays light.
__getattr__ = lazy_loader.attach(
    __name__,
    submodules=["arguments", "data", "dpo", "sft"],
    submod_attrs={
        "arguments": ["DPOScriptArguments", "SFTScriptArguments", "make_dpo_parser", "make_sft_parser",
                      "parse_recipe_yaml"],
        "data": ["LengthReport", "check_prepared_lengths", "count_knowledge", "data_hash", "describe_split",
                 "ka_build_command", "ka_dataset_path", "prepare_sft_dataset", "require_examples",
                 "require_knowledge", "template_hash"],
        "dpo": ["DPOInputs", "check_reference", "dpo_datasets", "dpo_policy", "dpo_record", "read_dpo_inputs"],
        "sft": ["SFTData", "check_sft_inputs", "load_sft_data", "sft_record"]})[0]

__all__ = [
    "LOG_FILE",
    "RUN_SETTINGS",
    "AdapterReport",
    "DPOInputs",
    "DPOScriptArguments",
    "LengthReport",
    "OutputDirCheck",
    "PairsSummary",
    "SFTData",
    "SFTScriptArguments",
    "check_packing",
    "check_prepared_lengths",
    "check_reference",
    "check_rows",
    "check_trainer",
    "checkpoint_step",
    "choose_rejected",
    "count_knowledge",
    "data_hash",
    "dataset_version",
    "describe_split",
    "dpo_datasets",
    "dpo_policy",
    "dpo_record",
    "finalize_adapter",
    "guard_output_dir",
    "hyperparameters",
    "init_deepspeed_comm",
    "inspect_adapter",
    "ka_build_command",
    "ka_dataset_path",
    "load_sft_data",
    "make_dpo_pairs",
    "make_dpo_parser",
    "make_sft_parser",
    "model_init_kwargs",
    "parse_recipe_yaml",
    "prepare_sft_dataset",
    "provenance",
    "push_adapter_to_hub",
    "quiet_library_bars",
    "rates_over_this_run",
    "read_dpo_inputs",
    "read_pairs",
    "recipe_usage",
    "render_model_card",
    "require_examples",
    "require_knowledge",
    "run_recipe",
    "sft_record",
    "template_hash",
    "train_with_resume",
    "use_log_file",
    "write_model_card",
]

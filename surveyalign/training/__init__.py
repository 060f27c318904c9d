"""surveyalign.training: SurveyAlign SFT and DPO recipes' library side (SurveyAlign §5, App. D).

The recipes live in ``recipes/sft.py`` and ``recipes/dpo.py`` (TRL + PEFT + accelerate); this package holds
what they share and what others read: script arguments and parsers, the SFT example builder with the length
rule, DPO pair construction, saved-adapter checks, the training record and the model card.
"""

from surveyalign.training.adapter import (
    RECORD_KEYS,
    TRAINING_RECORD,
    AdapterReport,
    dataset_version,
    finalize_adapter,
    hyperparameters,
    init_deepspeed_comm,
    inspect_adapter,
    push_adapter_to_hub,
    read_training_record,
    render_model_card,
    write_model_card,
    write_training_record,
)
from surveyalign.training.arguments import (
    LORA_ALPHA,
    LORA_DROPOUT,
    LORA_RANK,
    LORA_TARGET_MODULES,
    DPOScriptArguments,
    SFTScriptArguments,
    make_dpo_parser,
    make_sft_parser,
    parse_recipe_yaml,
)
from surveyalign.training.data import (
    LengthReport,
    check_prepared_lengths,
    data_hash,
    describe_split,
    prepare_sft_dataset,
    require_examples,
    template_hash,
)
from surveyalign.training.packing import check_packing, check_rows, check_trainer
from surveyalign.training.pairs import (
    PairsSummary,
    choose_rejected,
    make_dpo_pairs,
    read_pairs,
)

__all__ = [
    "LORA_ALPHA",
    "LORA_DROPOUT",
    "LORA_RANK",
    "LORA_TARGET_MODULES",
    "RECORD_KEYS",
    "TRAINING_RECORD",
    "AdapterReport",
    "DPOScriptArguments",
    "LengthReport",
    "PairsSummary",
    "SFTScriptArguments",
    "check_packing",
    "check_prepared_lengths",
    "check_rows",
    "check_trainer",
    "choose_rejected",
    "data_hash",
    "dataset_version",
    "describe_split",
    "finalize_adapter",
    "hyperparameters",
    "init_deepspeed_comm",
    "inspect_adapter",
    "make_dpo_pairs",
    "make_dpo_parser",
    "make_sft_parser",
    "parse_recipe_yaml",
    "prepare_sft_dataset",
    "push_adapter_to_hub",
    "read_pairs",
    "read_training_record",
    "render_model_card",
    "require_examples",
    "template_hash",
    "write_model_card",
    "write_training_record",
]

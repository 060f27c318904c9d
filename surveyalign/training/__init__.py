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
    count_chat_tokens,
    data_hash,
    describe_split,
    fit_survey_text,
    prepare_sft_dataset,
    prompt_hash,
    require_examples,
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
    "count_chat_tokens",
    "data_hash",
    "dataset_version",
    "describe_split",
    "finalize_adapter",
    "fit_survey_text",
    "hyperparameters",
    "init_deepspeed_comm",
    "inspect_adapter",
    "make_dpo_pairs",
    "make_dpo_parser",
    "make_sft_parser",
    "parse_recipe_yaml",
    "prepare_sft_dataset",
    "prompt_hash",
    "push_adapter_to_hub",
    "read_pairs",
    "read_training_record",
    "render_model_card",
    "require_examples",
    "write_model_card",
    "write_training_record",
]

"""surveyalign.evaluation: run a judge over SurveyReview, resumably, and write a run folder (contract 4).

Public surface:

- :class:`EvalConfig` (typed YAML config, ``EvalConfig.from_yaml(path, overrides)``),
- :func:`run_evaluation` -> :class:`RunResult` (``run_dir``, ``metrics``, ``counts``),
- :func:`majority_vote` / :class:`Vote` (K-sample aggregation, SurveyReview App. E),
- :class:`CallCache` (the append-only ``calls.jsonl``),
- :func:`build_consistency_messages` / :func:`parse_consistency` (the RQS consistency judge, App. G).

CLI: ``surveyalign evaluate --config configs/eval/NAME.yaml [--set key=value ...]``.
"""

from surveyalign.evaluation.cache import CallCache, call_key, stable_hash
from surveyalign.evaluation.config import (
    BackendConfig,
    EvalConfig,
    EvalConfigError,
    GenerationConfig,
    RQSConfig,
    apply_overrides,
)
from surveyalign.evaluation.consistency import (
    CONSISTENCY_LEVELS,
    ConsistencyParse,
    build_consistency_messages,
    parse_consistency,
)
from surveyalign.evaluation.runner import (
    STATUSES,
    RunResult,
    TrainingMismatchError,
    run_evaluation,
)
from surveyalign.evaluation.voting import Vote, majority_vote

__all__ = [
    "CONSISTENCY_LEVELS",
    "STATUSES",
    "BackendConfig",
    "CallCache",
    "ConsistencyParse",
    "EvalConfig",
    "EvalConfigError",
    "GenerationConfig",
    "RQSConfig",
    "RunResult",
    "TrainingMismatchError",
    "Vote",
    "apply_overrides",
    "build_consistency_messages",
    "call_key",
    "majority_vote",
    "parse_consistency",
    "run_evaluation",
    "stable_hash",
]

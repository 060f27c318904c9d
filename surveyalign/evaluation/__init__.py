"""surveyalign.evaluation: run a judge over SurveyReview, resumably, and write a run folder (SurveyReview §6.1).

Public surface:

- :class:`EvalConfig` (typed YAML config, ``EvalConfig.from_yaml(path, overrides)``),
- :func:`run_evaluation` -> :class:`RunResult` (``run_dir``, ``metrics``, ``counts``),
- :class:`TrainingMismatchError` (an adapter trained with other prompt settings),
- :func:`build_rqs_messages` / :func:`parse_rqs_rating` (the RQS stage's rating judge, App. G).

The judge itself, voting and the call cache live in :mod:`surveyalign.judge`.

CLI: ``surveyalign evaluate --config configs/eval/NAME.yaml [--set key=value ...]``.
"""

from surveyalign.evaluation.adapters import TrainingMismatchError
from surveyalign.evaluation.config import (
    BackendConfig,
    EvalConfig,
    EvalConfigError,
    RQSConfig,
    apply_overrides,
)
from surveyalign.evaluation.rqs import (
    RQS_LEVELS,
    RQSRating,
    build_rqs_messages,
    parse_rqs_rating,
)
from surveyalign.evaluation.runner import RunResult, run_evaluation

__all__ = [
    "RQS_LEVELS",
    "BackendConfig",
    "EvalConfig",
    "EvalConfigError",
    "RQSConfig",
    "RQSRating",
    "RunResult",
    "TrainingMismatchError",
    "apply_overrides",
    "build_rqs_messages",
    "parse_rqs_rating",
    "run_evaluation",
]

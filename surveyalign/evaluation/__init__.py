"""surveyalign.evaluation: run a judge over SurveyReview, resumably, and write a run folder (SurveyReview §6.1).

Public surface:

- :class:`EvalConfig` (typed YAML config, ``EvalConfig.from_yaml(path, overrides)``),
- :func:`run_evaluation` -> :class:`RunResult` (``run_dir``, ``metrics``, ``counts``),
- :class:`TrainingMismatchError` (an adapter trained with other prompt settings),
- :func:`build_rqs_messages` / :func:`parse_rqs_rating` (the RQS stage's rating judge, App. G),
- studies over runs (``studies.py``): :func:`run_rqs_judges` (App. I.4), :func:`run_jury` (a jury of judges),
  :func:`rating_sheet` (pairs to rate for the RQS meta-evaluation, App. I.2); ablation sweeps (``sweep.py``,
  §6.3): :class:`SweepConfig`, :func:`run_sweep`.

The judge itself, voting and the call cache live in :mod:`surveyalign.judge`.

CLI: ``surveyalign evaluate --config configs/eval/NAME.yaml [--set key=value ...]``; ``surveyalign rqs-judges``,
``jury``, ``meta-eval`` (``study_cli.py``) and ``sweep``.
"""

import lazy_loader

from surveyalign.evaluation.config import (
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

# The runner and the adapter checks load on first use (lazy_loader), so building the CLI parser does not import
# datasets or the training stack.
__getattr__ = lazy_loader.attach(
    __name__,
    submodules=["adapters", "runner", "studies"],
    submod_attrs={
    "adapters": ["TrainingMismatchError"], "outputs": ["RunResult"], "runner": ["run_evaluation"],
    "studies": ["JuryConfig", "ModelRoleConfig", "RQSJudgesConfig", "rating_sheet", "run_jury", "run_rqs_judges",
                "write_rating_project", "write_rating_sheet"],
    "sweep": ["SweepConfig", "run_sweep"]})[0]

__all__ = [
    "RQS_LEVELS",
    "EvalConfig",
    "EvalConfigError",
    "JuryConfig",
    "ModelRoleConfig",
    "RQSConfig",
    "RQSJudgesConfig",
    "RQSRating",
    "RunResult",
    "SweepConfig",
    "TrainingMismatchError",
    "apply_overrides",
    "build_rqs_messages",
    "parse_rqs_rating",
    "rating_sheet",
    "run_evaluation",
    "run_jury",
    "run_rqs_judges",
    "run_sweep",
    "write_rating_project",
    "write_rating_sheet",
]

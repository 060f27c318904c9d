"""Typed configuration of an evaluation run (``surveyalign evaluate --config configs/eval/NAME.yaml``).

One YAML per judge; every key is validated (unknown keys are rejected with the file and the key named).
Command-line overrides use dotted keys (``--set generation.temperature=0.7``) and are applied to the YAML
mapping before validation, so they are checked the same way.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import (
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from surveyalign.backends import ModelRole
from surveyalign.constants import DIMENSIONS, SPLITS
from surveyalign.models import MaxLength
from surveyalign.scoring.weights import HASWeights
from surveyalign.yamlconfig import DimensionName, read_yaml_mapping
from surveyalign.yamlconfig import apply_overrides as _apply_overrides

__all__ = [
    "EvalConfig",
    "EvalConfigError",
    "RQSConfig",
    "apply_overrides",
    "takes_batch",
]


def takes_batch(kind: str) -> bool:
    """Whether backends of ``kind`` can send calls through a provider batch API (their ``batch`` option)."""
    import inspect

    from surveyalign.backends.registry import backend_class

    try:
        return "batch" in inspect.signature(backend_class(kind).__init__).parameters
    except (ImportError, ValueError, KeyError):
        return False


class EvalConfigError(ValueError):
    """An evaluation config that does not validate; the message names the file, the key and the problem."""


class RQSConfig(ModelRole):
    """Optional reason-quality stage (SurveyReview §3, App. G): a judge rates each predicted rationale
    against the reference rationale with a score in {0.0, 0.2, ..., 1.0}.

    A model role (``backend`` = the consistency judge, paper: GPT-5.2; ``generation`` default
    ``max_new_tokens: 256``) plus ``enabled``.
    """

    generation_defaults: ClassVar[dict[str, Any]] = {"max_new_tokens": 256}

    enabled: bool = Field(True, description="run the RQS stage after the judge stage")
    name: str | None = Field(None, description="how leaderboards name the RQS judge (metrics.json / run_config.json "
                             "rqs_judge.name); default: the backend's model id")


class EvalConfig(ModelRole):
    """Everything one evaluation run needs (SurveyReview §3, §5.3, §6.1).

    The judge is a model role (``backend`` + ``generation``, :class:`~surveyalign.backends.ModelRole`); the
    other keys are the run's.

    Load with :meth:`from_yaml` (file + overrides) or ``EvalConfig.model_validate(dict)``.
    """

    name: str = Field(..., min_length=1, description="judge name shown in the leaderboard")
    dataset: str = Field(..., description="dataset folder built by `surveyalign data build`")
    split: str = Field("test", description="split to evaluate: train | validation | test")
    dimensions: list[DimensionName] = Field(default_factory=lambda: list(DIMENSIONS), description="dimensions to judge")
    protocol: Literal["v1.0", "v1.1"] = Field("v1.0", description="prompt/answer protocol version")
    layout: Literal["app_c", "shared"] = Field(
        "app_c", description="prompt layout: app_c (SurveyReview App. C order; what adapters are trained on) or shared "
        "(the survey first, the dimension's instructions after it: a survey's four dimensions share a cached prefix; "
        "zero-shot judges only; CLI --layout)")
    samples_per_unit: int = Field(1, ge=1, description="K judgements per unit (paper App. E: K=5 at T=0.7)")
    aggregation: Literal["majority"] = Field(
        "majority", description="K>1: majority vote, tie -> highest mean log-probability (App. E)"
    )
    synthesis: bool = Field(
        True, description="K>1: merge the winning samples' rationales into one consistent with the voted score, by "
        "one more call of the judge (App. E); false (CLI --no-synthesis): keep the winning sample with the highest "
        "mean log-probability"
    )
    batch: bool | None = Field(
        None, description="send every stage (judge, synthesis, RQS) through the provider batch API where its backend "
        "has one (CLI --batch); unset: the judge's backend.options.batch decides and the RQS stage follows it"
    )
    knowledge_dimensions: list[DimensionName] = Field(
        default_factory=lambda: ["comprehensiveness", "criticalness"],
        description="dimensions whose prompt includes the dataset's `knowledge` column when non-empty (§5.2)",
    )
    limit: int | None = Field(None, ge=1, description="at most this many units per dimension (smoke runs)")
    output_dir: str = Field("runs/eval", description="parent folder of the run folder")
    run_name: str | None = Field(None, description="run folder name under output_dir (default: name)")
    resume: bool = Field(True, description="reuse calls.jsonl of an earlier run in the same folder")
    retry_errors: bool = Field(True, description="on resume, call again where the cached answer was an API error or gave no "
                                                    "score (unparseable, truncated, refused)")
    concurrency: int | None = Field(
        None, ge=1, description="requests in flight (API backends), overriding the backend's own option `concurrency`; "
        "default: that option, or 32"
    )
    batch_size: int | None = Field(
        None, ge=1, description="prompts per generate() call (sync backends); default: option `batch_size` or 8"
    )
    fsync: bool = Field(False, description="os.fsync calls.jsonl after every call (survives power loss)")
    prices: str | None = Field(
        None, description="a price table merged over configs/prices.yaml (same shape; CLI --prices FILE)"
    )
    max_cost: float | None = Field(
        None, gt=0, description="USD cap of the run (CLI --max-cost): no new call is sent once spent + the estimate "
        "of the next calls would pass it; what is done is kept and a re-run with a higher cap continues"
    )
    progress: bool = Field(True, description="show a progress bar with rate and ETA")
    bootstrap: int = Field(1000, ge=0, description="bootstrap resamples for confidence intervals in metrics")
    rqs: RQSConfig | None = Field(None, description="optional reason-quality (consistency) stage")
    has: HASWeights = Field(
        default_factory=HASWeights,
        description="HAS weights (SurveyReview Eq. 6-8): {alpha: [a1, a2], beta: [b1, b2]}, each pair >= 0 summing to 1; "
        "default the paper's alpha [0.4, 0.6], beta [0.75, 0.25]; written to metrics.json `weights`",
    )
    max_length: MaxLength | None = Field(
        None,
        description="token budget of a judge call: prompt + generation.max_new_tokens. A longer prompt gets its "
        "survey body cut at a token boundary (its end removed; the instruction never) by the training length rule "
        "(surveyalign.prompts.fit_survey_text). Default: the adapter's training record `max_length` when it "
        "has one, else no shortening",
    )
    tokenizer: str | None = Field(
        None,
        description="tokenizer folder used to count prompt tokens for `max_length` (default: the local backend's "
        "own tokenizer; API backends are shortened only when this is set)",
    )
    allow_training_mismatch: bool = Field(
        False,
        description="evaluate an adapter even when its training record (surveyalign_training.json) disagrees "
        "with this config on dimension, protocol, enable_thinking, use_knowledge or the knowledge counts of its "
        "training examples vs the evaluated units (mismatches are recorded)",
    )

    @field_validator("dimensions", "knowledge_dimensions")
    @classmethod
    def _once_each(cls, value: list[str]) -> list[str]:
        return list(dict.fromkeys(value))  # parsed by DimensionName; a repeated name is judged once

    @field_validator("dimensions")
    @classmethod
    def _non_empty(cls, value: list[str]) -> list[str]:
        if not value:
            raise ValueError("at least one dimension is needed")
        return value

    @model_validator(mode="after")
    def _one_batch_switch(self) -> EvalConfig:
        """``batch`` sets the ``batch`` option of every stage whose backend has a batch API (the judge, hence its
        synthesis calls, and the RQS judge); unset, the RQS judge follows the judge's ``backend.options.batch``
        unless its own options set it."""
        stages = [("backend", self.backend)] + ([("rqs", self.rqs.backend)] if self.rqs is not None else [])
        able = [(name, cfg) for name, cfg in stages if takes_batch(cfg.kind)]
        if self.batch is None:
            judge = self.backend.options.get("batch")
            if judge and self.rqs is not None and takes_batch(self.rqs.backend.kind) \
                    and "batch" not in self.rqs.backend.options:
                self.rqs.backend = self.rqs.backend.model_copy(
                    update={"options": {**self.rqs.backend.options, "batch": judge}})
            return self
        if self.batch and not able:
            raise ValueError(f"batch: true, but no stage's backend has a provider batch API (judge: "
                             f"{self.backend.kind}" + (f", rqs: {self.rqs.backend.kind}" if self.rqs else "")
                             + "; the openai kind has one)")
        for name, cfg in able:
            value = (cfg.options.get("batch") or True) if self.batch else False
            new = cfg.model_copy(update={"options": {**cfg.options, "batch": value}})
            if name == "backend":
                self.backend = new
            else:
                self.rqs.backend = new
        return self

    def batch_stages(self) -> dict[str, Any]:
        """Which stages go through a provider batch API (``run_config.json`` ``batch``): ``{"switch": the top-level
        ``batch`` key, "judge", "synthesis" (the judge's own backend), "rqs" (``None`` without an RQS stage)}``."""
        judge = bool(self.backend.options.get("batch"))
        rqs = None if self.rqs is None or not self.rqs.enabled else bool(self.rqs.backend.options.get("batch"))
        return {"switch": self.batch, "judge": judge, "synthesis": judge and self.samples_per_unit > 1
                and self.synthesis, "rqs": rqs}

    @field_validator("split")
    @classmethod
    def _split(cls, value: str) -> str:
        if value not in SPLITS:
            raise ValueError(f"unknown split {value!r}; expected one of {', '.join(SPLITS)}")
        return value

    @property
    def run_dir(self) -> Path:
        """``output_dir / (run_name or name)``."""
        return Path(self.output_dir) / (self.run_name or run_slug(self.name))

    @classmethod
    def from_yaml(cls, path: str | os.PathLike, overrides: dict[str, Any] | None = None, *,
                  flags: dict[str, str] | None = None) -> EvalConfig:
        """Read a YAML file, apply ``overrides``, validate.

        Args:
            path: YAML file whose top level is a mapping of the fields of this class.
            overrides: ``{"generation.temperature": 0.7, "dataset": "data/x"}``: dotted keys (or nested
                dicts) replacing values of the YAML before validation. ``None`` values are ignored.
            flags: dotted key -> the command-line flag that set it (``{"limit": "--limit 0"}``); an invalid value
                of such a key is reported as that flag, not as a key of the YAML file.

        Returns:
            The validated :class:`EvalConfig`.

        Raises:
            FileNotFoundError: if ``path`` does not exist.
            EvalConfigError: (a ``ValueError``) naming the file and each offending key, e.g.
                ``configs/eval/x.yaml: generation.temprature: Extra inputs are not permitted``.
        """
        p = Path(path)
        try:
            data = read_yaml_mapping(p, "evaluation config")
        except ValueError as err:  # bad YAML or not a mapping (a missing file stays a FileNotFoundError)
            raise EvalConfigError(str(err)) from None
        return cls.from_dict(data, overrides, source=str(p), flags=flags)

    @classmethod
    def from_dict(
        cls, data: dict[str, Any], overrides: dict[str, Any] | None = None, *, source: str = "<dict>",
        flags: dict[str, str] | None = None,
    ) -> EvalConfig:
        """Validate a mapping (after applying dotted ``overrides``); errors name ``source`` and the keys.

        Args:
            data: the configuration mapping (the parsed YAML).
            overrides: dotted keys replacing values of ``data`` (see :func:`apply_overrides`).
            source: name of where ``data`` came from, used in error messages (the YAML path).
            flags: dotted key -> command-line flag (see :meth:`from_yaml`); errors under such a key name the flag.

        Returns:
            The validated :class:`EvalConfig`.

        Raises:
            EvalConfigError: when a key is unknown or a value is invalid.
        """
        merged = apply_overrides(data, overrides or {})
        try:
            return cls.model_validate(merged)
        except ValidationError as err:
            lines = []
            for e in err.errors():
                loc = ".".join(str(x) for x in e["loc"]) or "<top level>"
                flag = _flag_for(loc, flags or {}, e["msg"])
                msg = str(e["msg"]).removeprefix("Value error, ")
                lines.append(f"{flag}: {msg}" if flag else f"{source}: {loc}: {msg}")
            raise EvalConfigError("invalid evaluation config:\n  " + "\n  ".join(lines)) from None

    def describe(self) -> dict[str, Any]:
        """This config as a JSON-ready dict with credential-like backend options redacted."""
        data = self.model_dump(mode="json")
        data["backend"] = self.backend.redacted()
        if self.rqs is not None:
            data["rqs"]["backend"] = self.rqs.backend.redacted()
        return data


def _flag_for(loc: str, flags: dict[str, str], message: str = "") -> str | None:
    """The flag that set the value at dotted ``loc`` (the longest key equal to or above it), or None.

    A check of a whole section (``loc`` = ``backend``) is attributed to a flag below it when the message names
    that flag's key (``backend 'openai' takes no option allow_base_mismatch``).
    """
    best = None
    for key, flag in flags.items():
        if (loc == key or loc.startswith(key + ".")) and (best is None or len(key) > len(best[0])):
            best = (key, flag)
    if best is None:
        below = [(key, flag) for key, flag in flags.items()
                 if key.startswith(loc + ".") and key.rsplit(".", 1)[-1] in message]
        best = max(below, key=lambda item: len(item[0]), default=None)
    return best[1] if best else None


def run_slug(name: str) -> str:
    """A file-system friendly version of a judge name ("GPT-5.2 (zero-shot)" -> "GPT-5.2-zero-shot")."""
    slug = re.sub(r"[^A-Za-z0-9._+-]+", "-", name).strip("-.")
    return slug or "run"


def apply_overrides(data: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    """:func:`surveyalign.yamlconfig.apply_overrides` with its error as an :class:`EvalConfigError`.

    Raises:
        EvalConfigError: when a dotted key walks into a value that is not a mapping.
    """
    try:
        return _apply_overrides(data, overrides)
    except ValueError as err:
        raise EvalConfigError(str(err)) from None

"""Typed configuration of ``surveyalign paper`` (one YAML per profile under ``configs/paper/``)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from surveyalign.constants import DIMENSIONS
from surveyalign.yamlconfig import (
    DimensionName,
    apply_overrides,
    read_yaml_mapping,
    validation_line,
)

#: Stage names in the order they run (``--from`` / ``--until`` take these).
STAGES: tuple[str, ...] = ("data", "ka", "sft", "dpo-pairs", "dpo", "evaluate", "tables")

_REPO_ROOT = Path(__file__).resolve().parents[2]


def resolve_path(path: str | os.PathLike) -> Path:
    """A path named in a config: as given when it exists (relative to the cwd), else relative to the repository
    root (so ``configs/...`` works from any folder)."""
    p = Path(path)
    if p.is_absolute() or p.exists():
        return p
    alt = _REPO_ROOT / p
    return alt if alt.exists() else p


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class LauncherSettings(_Strict):
    """How training stages are launched: ``local`` (``accelerate launch`` here) or ``slurm`` (``sbatch --wait`` of
    ``slurm/train.slurm``, one job per training run)."""

    kind: Literal["local", "slurm"] = Field("local", description="local | slurm")
    accelerate_config: str | None = Field(None, description="accelerate config file (None = one local process)")
    nodes: int = Field(1, ge=1, description="SLURM nodes per training job")
    gpus_per_node: int = Field(8, ge=1, description="SLURM GPUs per node")


class KnowledgeSettings(_Strict):
    """The KA stage (``surveyalign ka build``, SurveyReview §5.2, App. F)."""

    config: str = Field("configs/ka/default.yaml", description="KA config YAML (surveyalign.knowledge.KAConfig)")
    graph: str = Field(..., description="citation graph file (JSONL), or 'sample' (made up around the dataset)")
    summariser: Literal["config", "extractive"] = Field(
        "config", description="Crit-KA summaries: 'config' = the KA config's summariser model role; 'extractive' = "
        "the offline stand-in of surveyalign.testing (last words of each prompt; tiny profile only)")


class PairSettings(_Strict):
    """``surveyalign train dpo-pairs`` settings (SurveyReview §5.1; how a pair is made: SPEC section 4)."""

    k: int = Field(4, ge=1, description="answers sampled per training unit")
    temperature: float = Field(1.0, ge=0, description="sampling temperature of the SFT model")
    max_new_tokens: int = Field(512, ge=1)
    max_length: int = Field(16384, ge=64)
    limit: int | None = Field(None, ge=1, description="only the first N training units")
    batch_size: int = Field(4, ge=1)
    device: str = Field("auto")
    fallback_model: str | None = Field(None, description="zero-shot judge folder sampled when the SFT model gives "
                                                           "no rejected answer")


class DPOSettings(_Strict):
    """The DPO stage (Criticalness, SurveyReview §5.1)."""

    config: str = Field(..., description="recipe YAML for recipes/dpo.py")
    pairs: PairSettings = Field(default_factory=PairSettings)
    overrides: list[str] = Field(default_factory=list, description="extra recipe flags")


class PriorImport(_Strict):
    """One prior evaluator's output imported as a Table 2 "Prior Work" row (``surveyalign import-scores``, App. H)."""

    tool: Literal["llmxmapreduce", "drbench", "surveyx", "generic"]
    scores: str = Field(..., description="the tool's output file (its per-survey scores)")
    model: str | None = Field(None, description="the LLM the tool ran with, e.g. GPT-5.2 (recorded)")
    name: str | None = Field(None, description="row name (default: the tool's label and model)")


class EvalSettings(_Strict):
    """The evaluation stage: SurveyAlign (K samples, vote, consolidated rationale) and the baselines."""

    split: str = Field("test")
    samples_per_unit: int = Field(5, ge=1, description="K (App. E: 5)")
    generation: dict[str, Any] = Field(
        default_factory=lambda: {"temperature": 0.7, "top_p": 1.0, "max_new_tokens": 1024, "seed": 0,
                                 "enable_thinking": False},
        description="SurveyAlign's decoding settings (App. E: T=0.7)")
    backend: dict[str, Any] = Field(
        default_factory=lambda: {"kind": "transformers", "options": {"device": "auto", "dtype": "auto",
                                                                     "batch_size": 4}},
        description="backend of the SurveyAlign judge; the base model and per-dimension adapters are filled in")
    baselines: list[str] = Field(default_factory=list, description="evaluation configs of the other Table 2 rows")
    prior: list[PriorImport] = Field(default_factory=list,
                                     description="prior evaluators' outputs imported as Table 2 rows (App. H)")
    limit: int | None = Field(None, ge=1, description="at most this many units per dimension")
    bootstrap: int = Field(1000, ge=0)
    extra: dict[str, Any] = Field(default_factory=dict,
                                  description="other evaluation config keys applied to every run (dotted)")


class RQSSettings(_Strict):
    """The RQS judge of every row (App. G): one judge for all rows keeps RQS / HAS comparable."""

    judge: Literal["model", "lexical"] = Field(
        "model", description="'model' = the model role below (paper: GPT-5.2); 'lexical' = the offline word-overlap "
        "stand-in of surveyalign.testing (not an LLM; marked in every table)")
    backend: dict[str, Any] | None = Field(None, description="model role backend of the RQS judge")
    generation: dict[str, Any] | None = Field(None, description="its generation settings")

    @model_validator(mode="after")
    def _needs_backend(self) -> RQSSettings:
        if self.judge == "model" and not self.backend:
            raise ValueError("rqs.judge 'model' needs rqs.backend (e.g. the GPT-5.2 block of configs/eval/gpt-5.2.yaml)")
        return self


class HASWeights(_Strict):
    """HAS weights (SurveyReview §3): Align = a1*A_MSE + a2*A_MAE, HAS = b1*Align + b2*RQS."""

    alpha: tuple[float, float] = Field((0.4, 0.6))
    beta: tuple[float, float] = Field((0.75, 0.25))
    table8_betas: list[float] = Field(default_factory=lambda: [0.25, 0.40, 0.60, 0.75],
                                      description="RQS weights of Table 8 (App. I.3)")

    @field_validator("alpha", "beta")
    @classmethod
    def _pair(cls, value: tuple[float, float]) -> tuple[float, float]:
        if min(value) < 0 or abs(sum(value) - 1.0) > 1e-9:
            raise ValueError(f"weights {list(value)} must be non-negative and sum to 1")
        return value


class Variant(_Strict):
    """One training-time variant of Tables 3 and 4 (SurveyReview §6.3)."""

    name: str = Field(..., pattern=r"^[a-z0-9][a-z0-9_-]*$")
    table: Literal[3, 4]
    label: str = Field(..., description="row label, e.g. '+Crit-KA+DPO'")
    dimension: DimensionName
    knowledge: bool = Field(..., description="trained and evaluated on the KA dataset")
    dpo: bool = Field(False, description="DPO after SFT")


def paper_variants() -> list[Variant]:
    """The ablation rows of SurveyReview Tables 3 and 4 (Comp: SFT, +Comp-KA; Crit: SFT, +Crit-KA, +DPO,
    +Crit-KA+DPO)."""
    rows = [("comp-sft", 3, "SFT", "comprehensiveness", False, False),
            ("comp-sft-ka", 3, "SFT + Comp-KA", "comprehensiveness", True, False),
            ("crit-sft", 4, "SFT", "criticalness", False, False),
            ("crit-sft-ka", 4, "+ Crit-KA", "criticalness", True, False),
            ("crit-dpo", 4, "+ DPO", "criticalness", False, True),
            ("crit-ka-dpo", 4, "+ Crit-KA + DPO", "criticalness", True, True)]
    return [Variant(name=n, table=t, label=lab, dimension=d, knowledge=k, dpo=p) for n, t, lab, d, k, p in rows]


class PlanSettings(_Strict):
    """Figures of the ``--plan`` GPU-hour estimate (6 x parameters x tokens FLOPs per training token)."""

    base_params_b: float | None = Field(None, gt=0, description="base parameters in billions (None: read from the "
                                                                 "model folder's config.json when local)")
    gpu_tflops: float = Field(989.0, gt=0, description="dense 16-bit TFLOP/s of one GPU (H100 SXM: 989)")
    mfu: float = Field(0.35, gt=0, le=1, description="assumed model FLOPs utilisation")


class PaperConfig(_Strict):
    """``surveyalign paper``: SurveyReview end to end (§4-§6, App. C-I), one YAML per profile.

    The stages (:data:`STAGES`) run in order; each writes what the next reads inside ``workdir``.
    """

    profile: str = Field(..., description="profile name (paper, qlora, tiny, ...)")
    workdir: str = Field(..., description="run folder of the whole job")
    release: str | None = Field(None, description="release folder in the official layout (None = shipped sample)")
    sources: str | None = Field(None, description="optional JSON mapping uid -> review source")
    seed: int = Field(42)
    base_model: str | None = Field(None, description="base model folder or Hub id (None = the tiny random Qwen3)")
    cache_dir: str = Field(".cache", description="where the tiny model is built")
    launcher: LauncherSettings = Field(default_factory=LauncherSettings)
    knowledge: KnowledgeSettings
    knowledge_dimensions: list[DimensionName] = Field(
        default_factory=lambda: ["comprehensiveness", "criticalness"],
        description="dimensions trained and judged on the KA dataset (§5.2)")
    sft: dict[DimensionName, str] = Field(..., description="SFT recipe YAML per dimension")
    sft_overrides: list[str] = Field(default_factory=list, description="extra recipe flags for every SFT run")
    dpo: DPOSettings
    dpo_dimensions: list[DimensionName] = Field(default_factory=lambda: ["criticalness"],
                                                description="dimensions whose SurveyAlign adapter is SFT + DPO")
    evaluate: EvalSettings = Field(default_factory=EvalSettings)
    rqs: RQSSettings
    has: HASWeights = Field(default_factory=HASWeights)
    variants: list[Variant] = Field(default_factory=paper_variants,
                                    description="training-time variants of Tables 3 and 4 ([] = none)")
    plan: PlanSettings = Field(default_factory=PlanSettings)
    source: str | None = Field(None, description="the YAML file read (set by from_yaml)")

    @model_validator(mode="after")
    def _complete(self) -> PaperConfig:
        missing = [d for d in DIMENSIONS if d not in self.sft]
        if missing:
            raise ValueError(f"sft: no recipe for {', '.join(missing)} (one adapter per dimension)")
        names = [v.name for v in self.variants]
        if len(set(names)) != len(names):
            raise ValueError("variants: names must be unique")
        return self

    @classmethod
    def from_yaml(cls, path: str | os.PathLike, overrides: dict[str, Any] | None = None) -> PaperConfig:
        """Read and validate a paper config; ``overrides`` are dotted keys applied before validation.

        Raises:
            FileNotFoundError: ``path`` does not exist.
            ValueError: one line naming the file and each offending key.
        """
        data = read_yaml_mapping(path, "paper config")
        data = apply_overrides(data, overrides or {})
        try:
            return cls.model_validate({**data, "source": str(path)})
        except ValidationError as err:
            raise ValueError(validation_line(err, str(path), "paper config")) from None

    def resolve(self, path: str) -> Path:
        """A path of the config (:func:`resolve_path`)."""
        return resolve_path(path)

    def adapter_key(self, dimension: str, knowledge: bool, dpo: bool) -> str:
        """Folder name of one trained adapter under ``WORKDIR/adapters``: ``sft-criticalness-ka``, ``dpo-...``."""
        return f"{'dpo' if dpo else 'sft'}-{dimension}{'-ka' if knowledge else ''}"

    def main_adapters(self) -> dict[str, tuple[str, bool, bool]]:
        """SurveyAlign's adapter per dimension: ``{dimension: (dimension, knowledge, dpo)}``."""
        return {d: (d, d in self.knowledge_dimensions, d in self.dpo_dimensions) for d in DIMENSIONS}

    def trainings(self) -> list[tuple[str, bool, bool]]:
        """Every adapter to train, SFT before DPO: the main ones, the variants' and the SFT each DPO starts from."""
        wanted = list(self.main_adapters().values()) + [(v.dimension, v.knowledge, v.dpo) for v in self.variants]
        out: list[tuple[str, bool, bool]] = []
        for dim, ka, dpo in wanted:
            for item in ([(dim, ka, False), (dim, ka, True)] if dpo else [(dim, ka, False)]):
                if item not in out:
                    out.append(item)
        return sorted(out, key=lambda t: (t[2], DIMENSIONS.index(t[0]), t[1]))

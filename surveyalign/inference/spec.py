"""What "SurveyAlign as one judge" is made of: one base model, one adapter per dimension, K-sample voting, KA.

A :class:`JudgeSpec` is read from a YAML/JSON config, from a folder of dimension adapters, or from a Hub repo with
that layout (:func:`load_judge_spec`), and :func:`build_dimension_backends` turns it into one backend per
dimension that share a single loaded base: PEFT adapters switched per dimension (transformers), one vLLM engine
with one ``LoRARequest`` per dimension, or the adapters' model names on ``surveyalign serve`` / vLLM servers
(openai backend, several base URLs allowed). Defaults follow SurveyReview §5.3 and App. E: K=5 samples at
temperature 0.7, majority vote with the log-probability tie-break, rationales merged after the vote.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Literal

from pydantic import ConfigDict, Field, ValidationError, field_validator

from surveyalign.backends import GenerationSettings
from surveyalign.constants import DIMENSIONS
from surveyalign.prompts import DEFAULT_PROTOCOL
from surveyalign.yamlconfig import read_yaml_mapping

__all__ = ["JUDGE_FILES", "JudgeSpec", "adapter_record", "build_dimension_backends", "load_judge_spec"]

#: File names read as the judge config when ``--judge`` is a folder or a Hub repo.
JUDGE_FILES = ("surveyalign_judge.yaml", "judge.yaml")
#: Dimensions SurveyAlign trains with knowledge augmentation (SurveyReview §5.2) when no training record says.
KA_DIMENSIONS = ("comprehensiveness", "criticalness")


class JudgeSpec(GenerationSettings):
    """One SurveyAlign judge: base model + dimension adapters + sampling (SurveyReview §5, App. E).

    The sampling fields (``temperature``, ``top_p``, ``max_new_tokens``, ``seed``, ``enable_thinking``,
    ``want_logprobs``) are those of :class:`~surveyalign.backends.GenerationSettings`, with the judge's defaults:
    temperature 0.7 (App. E) and log-probabilities requested (the vote's tie-break reads them). Paths in a config
    file are relative to the file's folder; an unknown key is refused.
    """

    model_config = ConfigDict(extra="forbid", frozen=False)

    name: str = Field("surveyalign", description="Name of the judge in reports.")
    backend: Literal["transformers", "vllm", "openai"] = Field(
        "transformers", description="transformers (PEFT adapters switched per dimension), vllm (one engine, one "
        "LoRARequest per dimension) or openai (each adapter a model name on surveyalign serve / vLLM servers).")
    model: str = Field(..., description="Base model folder or Hub id (openai: the served base model id).")
    adapters: dict[str, str] = Field(default_factory=dict, description="dimension -> adapter folder or Hub id "
                                     "(openai: the served model name); a dimension without one uses the base.")
    base_url: str | list[str] | None = Field(None, description="openai: API root(s), e.g. http://127.0.0.1:8000/v1.")
    api_key_env: str | None = Field(None, description="openai: environment variable holding the API key.")
    backend_options: dict[str, Any] = Field(default_factory=dict, description="Further backend options.")
    dimensions: list[str] = Field(default_factory=lambda: list(DIMENSIONS), description="Dimensions to judge.")
    protocol: str = Field(DEFAULT_PROTOCOL, description="Answer protocol (v1.0 Reason$$$X$$$, v1.1 tags).")
    samples: int = Field(5, ge=1, le=64, description="K samples per dimension (App. E: 5).")
    temperature: float = Field(0.7, ge=0.0, description="Sampling temperature (App. E: 0.7).")
    want_logprobs: bool = Field(True, description="Ask API backends for log-probs (the vote's tie-break).")
    synthesis: bool = Field(True, description="Merge the winning rationales into one (App. E).")
    max_length: int | None = Field(None, ge=16, description="Token budget prompt + answer; default: the "
                                   "adapter's training record (the training length rule), else no cut.")
    knowledge_dimensions: list[str] | None = Field(None, description="Dimensions whose adapters expect KA; "
                                                   "default: from the training records, else comp + crit.")

    @property
    def settings(self) -> GenerationSettings:
        """The sampling fields as the backends' :class:`~surveyalign.backends.GenerationSettings`."""
        return GenerationSettings(**self.model_dump(include=set(GenerationSettings.model_fields)))

    @field_validator("dimensions", "knowledge_dimensions")
    @classmethod
    def _known(cls, value: list[str] | None) -> list[str] | None:
        for dim in value or []:
            if dim not in DIMENSIONS:
                raise ValueError(f"unknown dimension {dim!r}; expected some of {list(DIMENSIONS)}")
        return value

    @field_validator("adapters")
    @classmethod
    def _adapter_dims(cls, value: dict[str, str]) -> dict[str, str]:
        unknown = sorted(set(value) - set(DIMENSIONS))
        if unknown:
            raise ValueError(f"adapters for unknown dimension(s) {unknown}; expected some of {list(DIMENSIONS)}")
        return value


def _resolve(path: str, root: Path) -> str:
    candidate = Path(path).expanduser()
    if not candidate.is_absolute() and (root / candidate).exists():
        return str((root / candidate).resolve())
    return str(candidate) if candidate.exists() else path


def _from_file(path: Path) -> JudgeSpec:
    if path.suffix != ".json":
        raw = read_yaml_mapping(path, "judge config")
    else:
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
        except ValueError as exc:
            raise ValueError(f"{path}: not valid JSON: {exc}") from None
    if not isinstance(raw, dict):
        raise ValueError(f"{path}: a judge config is a mapping (model, adapters, samples, ...)")  # noqa: TRY004
    try:
        spec = JudgeSpec.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first.get("loc", ()))
        raise ValueError(f"{path}: field {field or '(top level)'}: {first.get('msg')}") from None
    root = path.resolve().parent
    if spec.backend != "openai":
        spec = spec.model_copy(update={"model": _resolve(spec.model, root),
                                       "adapters": {d: _resolve(p, root) for d, p in spec.adapters.items()}})
    return spec


def _from_adapter_folder(folder: Path) -> JudgeSpec:
    """A folder holding one adapter per dimension (``readability/``, ``structure/``...) on one base model."""
    adapters, bases = {}, {}
    for dim in DIMENSIONS:
        config = folder / dim / "adapter_config.json"
        if config.is_file():
            adapters[dim] = str((folder / dim).resolve())
            try:
                bases[dim] = json.loads(config.read_text(encoding="utf-8")).get("base_model_name_or_path")
            except ValueError as exc:
                raise ValueError(f"{config}: unreadable adapter config: {exc}") from exc
    if not adapters:
        raise ValueError(f"{folder}: no judge config ({' or '.join(JUDGE_FILES)}) and no dimension adapter folders "
                         f"({', '.join(f'{d}/adapter_config.json' for d in DIMENSIONS)})")
    distinct = {b for b in bases.values() if b}
    if len(distinct) != 1:
        raise ValueError(f"{folder}: the adapters name {len(distinct)} base models ({sorted(distinct)}); write a judge "
                         f"config ({JUDGE_FILES[0]}) with `model:`")
    return JudgeSpec(name=folder.resolve().name, model=distinct.pop(), adapters=adapters)


def load_judge_spec(judge: str | os.PathLike, **overrides: Any) -> JudgeSpec:
    """Read the judge of ``surveyalign score --judge CONFIG|DIR|HUB_ID``.

    Args:
        judge: a YAML/JSON config file; a folder with :data:`JUDGE_FILES` or with one adapter subfolder per
            dimension (base model read from their ``adapter_config.json``); or a Hub repo id with that layout
            (downloaded with ``huggingface_hub.snapshot_download``; needs ``HF_HUB_OFFLINE=0``).
        **overrides: fields replacing the config's (e.g. ``samples=1``); ``None`` values are ignored.

    Returns:
        The :class:`JudgeSpec`.

    Raises:
        FileNotFoundError: a local-looking path that does not exist.
        ValueError: an invalid config (file and field named), a folder without config or adapters, adapters on
            different base models, or a Hub id that cannot be fetched (the message says why).
    """
    from surveyalign.models.paths import looks_local

    text = str(judge)
    path = Path(text).expanduser()
    if path.is_file():
        spec = _from_file(path)
    elif path.is_dir():
        named = next((path / name for name in JUDGE_FILES if (path / name).is_file()), None)
        spec = _from_file(named) if named else _from_adapter_folder(path)
    elif looks_local(text) or text.endswith((".yaml", ".yml", ".json")):
        raise FileNotFoundError(f"judge {text}: no such file or folder")
    else:
        from huggingface_hub import snapshot_download

        try:
            local = snapshot_download(repo_id=text)
        except Exception as exc:  # noqa: BLE001 - offline, unknown repo, no access: one clear line
            raise ValueError(f"judge {text!r}: not a local file or folder, and the Hub repo cannot be fetched "
                             f"({type(exc).__name__}: {exc}); set HF_HUB_OFFLINE=0 to download") from None
        return load_judge_spec(local, **overrides)
    updates = {k: v for k, v in overrides.items() if v is not None}
    return JudgeSpec.model_validate({**spec.model_dump(), **updates}) if updates else spec


def adapter_record(adapter: str | None) -> dict[str, Any] | None:
    """The training record (``surveyalign_training.json``) of a local adapter folder, or ``None`` (no folder, a Hub
    id or a served model name, or no record).

    Raises:
        ValueError: the record exists but is unreadable (file and field named).
    """
    if not adapter or not Path(adapter).is_dir():
        return None
    from surveyalign.evaluation.adapters import training_record

    return training_record(adapter)


def build_dimension_backends(spec: JudgeSpec) -> tuple[Any, dict[str, Any]]:
    """Load the base once and return ``(owner, {dimension: backend})`` (close ``owner`` when done).

    Args:
        spec: the judge.

    Returns:
        The backend that owns the model (transformers / vllm: the multi-adapter backend; openai: the base-model
        client) and one backend per dimension of ``spec.dimensions``: an adapter view, or the owner itself for a
        dimension without adapter.

    Raises:
        ValueError / OSError / ImportError: from the backend (missing folders, vLLM not installed...).
    """
    from surveyalign.backends import load_backend

    adapters = {d: spec.adapters[d] for d in spec.dimensions if d in spec.adapters}
    if spec.backend == "openai":
        common = {"base_url": spec.base_url or "http://127.0.0.1:8000/v1", "api_key_env": spec.api_key_env,
                  **spec.backend_options}
        owner = load_backend("openai", model=spec.model, **common)
        per_dim = {d: load_backend("openai", model=adapters[d], **common) if d in adapters else owner
                   for d in spec.dimensions}
        return owner, per_dim
    options = dict(spec.backend_options)
    if adapters:
        options["adapters"] = adapters
    owner = load_backend(spec.backend, model=spec.model, **options)
    return owner, {d: owner.adapter_view(d) if d in adapters else owner for d in spec.dimensions}

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
from typing import Any, ClassVar

from pydantic import Field, ValidationError, model_validator

from surveyalign.backends import GenerationSettings, ModelRole, backend_capabilities, score_judge_kinds
from surveyalign.constants import DIMENSIONS
from surveyalign.models import MaxLength
from surveyalign.prompts import DEFAULT_PROTOCOL
from surveyalign.yamlconfig import DimensionName, read_yaml_mapping

__all__ = ["JUDGE_FILES", "JudgeSpec", "build_dimension_backends", "load_judge_spec"]

#: File names read as the judge config when ``--judge`` is a folder or a Hub repo.
JUDGE_FILES = ("surveyalign_judge.yaml", "judge.yaml")


class JudgeSpec(ModelRole):
    """One SurveyAlign judge: a model role (base model + dimension adapters + sampling) plus the judge's own keys
    (SurveyReview §5, App. E).

    YAML shape (``configs/judge/*.yaml``)::

        name: surveyalign-qwen3-32b
        backend:
          kind: transformers            # transformers | vllm | openai
          options: {model: Qwen/Qwen3-32B, dtype: bfloat16}
          per_dimension:                # one adapter per dimension; a dimension without one uses the base
            readability: {adapter: runs/sft/readability}    # openai: {model: SERVED_ADAPTER_NAME}
        generation: {temperature: 0.7, max_new_tokens: 512, seed: 0}
        samples: 5
        synthesis: true
        # tokenizer: tok/                # API judges: counts tokens so max_length cuts the survey (--tokenizer)
        # max_length: 700                # prompt + answer budget (--max-length)

    The adapters live in ``backend.per_dimension`` (the same place as in an evaluation config): ``adapter:`` (a
    folder or Hub id) for transformers / vLLM, which load the base once and switch adapters per call; ``model:``
    (the served adapter's name) for openai. ``generation`` defaults to temperature 0.7 (App. E) with
    log-probabilities requested (the vote's tie-break reads them); the keys a YAML gives are merged over these.
    openai judges default to ``base_url: http://127.0.0.1:8000/v1`` and no API key. Paths in a config file are
    relative to the file's folder; an unknown key, or the old flat shape (``model:``, ``adapters:``,
    ``temperature:`` at the top), is refused.
    """

    generation_defaults: ClassVar[dict[str, Any]] = {"temperature": 0.7, "want_logprobs": True}

    name: str = Field("surveyalign", description="Name of the judge in reports.")
    dimensions: list[DimensionName] = Field(default_factory=lambda: list(DIMENSIONS), description="Dimensions to judge.")
    protocol: str = Field(DEFAULT_PROTOCOL, description="Answer protocol (v1.0 Reason$$$X$$$, v1.1 tags).")
    samples: int = Field(5, ge=1, le=64, description="K samples per dimension (App. E: 5).")
    synthesis: bool = Field(True, description="Merge the winning rationales into one (App. E).")
    max_length: MaxLength | None = Field(None, description="Token budget prompt + answer (>= MIN_MAX_LENGTH); "
                                         "default: the adapter's training record (the training length rule), else "
                                         "no cut.")
    tokenizer: str | None = Field(None, description="Tokenizer folder (or Hub id) counting prompt tokens so "
                                  "max_length cuts the survey by the training length rule (CLI: --tokenizer); "
                                  "default: the local backend's own, none for an API judge (no cut).")
    knowledge_dimensions: list[DimensionName] | None = Field(None, description="Dimensions whose adapters expect KA; "
                                                   "default: from the training records, else comp + crit.")

    @model_validator(mode="after")
    def _judge_backend(self) -> JudgeSpec:
        """A judge runs on a kind that can (``score_judge``: transformers, vLLM, an OpenAI-compatible server), names
        its base model, and holds only its adapter per dimension (``adapter``; ``model``, the served adapter's name,
        where the server serves adapters by name)."""
        kind = self.backend.kind
        kinds = score_judge_kinds()
        if kind not in kinds:
            raise ValueError(f"backend.kind: a score judge runs on {', '.join(kinds)}, not {kind!r}")
        if not self.backend.options.get("model"):
            raise ValueError("backend.options.model: the judge's base model (folder, Hub id or served name) is needed")
        key = "model" if self.served else "adapter"
        for dim, opts in self.backend.per_dimension.items():
            other = sorted(set(opts) - {key})
            if other or not opts.get(key):
                raise ValueError(f"backend.per_dimension.{dim}: a {kind} judge takes only `{key}:` per dimension "
                                 f"(the base is shared){'; not ' + ', '.join(other) if other else ''}")
        return self

    @property
    def model(self) -> str:
        """The base model (``backend.options.model``): folder, Hub id, or the served base name (openai)."""
        return str(self.backend.options["model"])

    @property
    def served(self) -> bool:
        """Whether the judge's server serves its adapters by name (an OpenAI-compatible server: each adapter is a
        model id, no folder is read here); False for a local engine reading adapter folders."""
        return bool(backend_capabilities(self.backend.kind).serves_adapters_by_name)

    @property
    def adapters(self) -> dict[str, str]:
        """dimension -> adapter folder / Hub id (transformers, vLLM) or served adapter name (openai)."""
        key = "model" if self.served else "adapter"
        return {d: str(o[key]) for d, o in self.backend.per_dimension.items()}

    @property
    def settings(self) -> GenerationSettings:
        """The sampling settings (``generation``) as the backends' :class:`~surveyalign.backends.GenerationSettings`."""
        return self.generation


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
        message = str(first.get("msg")).removeprefix("Value error, ")
        raise ValueError(f"{path}: field {field or '(top level)'}: {message}") from None
    root = path.resolve().parent
    if spec.tokenizer:  # a folder beside the config, like the adapters
        spec = spec.model_copy(update={"tokenizer": _resolve(spec.tokenizer, root)})
    if spec.served:
        return spec
    backend = spec.backend.model_copy(update={
        "options": {**spec.backend.options, "model": _resolve(spec.model, root)},
        "per_dimension": {d: {"adapter": _resolve(p, root)} for d, p in spec.adapters.items()}})
    return spec.model_copy(update={"backend": backend})


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
    return JudgeSpec(name=folder.resolve().name,
                     backend={"kind": "transformers", "options": {"model": distinct.pop()},
                              "per_dimension": {d: {"adapter": p} for d, p in adapters.items()}})


def load_judge_spec(judge: str | os.PathLike, **overrides: Any) -> JudgeSpec:
    """Read the judge of ``surveyalign score --judge CONFIG|DIR|HUB_ID``.

    Args:
        judge: a YAML/JSON config file; a folder with :data:`JUDGE_FILES` or with one adapter subfolder per
            dimension (base model read from their ``adapter_config.json``); or a Hub repo id with that layout
            (downloaded with ``huggingface_hub.snapshot_download``; needs ``HF_HUB_OFFLINE=0``).
        **overrides: values replacing the config's (e.g. ``samples=1``); ``None`` values are ignored. Generation
            keys (``temperature``, ``seed``, ``max_new_tokens``...) go to ``generation``, ``base_url`` to
            ``backend.options``, the rest to the judge's own keys.

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
        from surveyalign.models import NotCachedError, hub_folder

        try:
            local = hub_folder(text, "judge")  # uncached while offline: the one line every Hub load says
        except NotCachedError:
            raise
        except Exception as exc:  # noqa: BLE001 - unknown repo, no access: one clear line
            raise ValueError(f"judge {text!r}: not a local file or folder, and the Hub repo cannot be fetched "
                             f"({type(exc).__name__}: {exc}); set HF_HUB_OFFLINE=0 to download") from None
        return load_judge_spec(local, **overrides)
    updates = {k: v for k, v in overrides.items() if v is not None}
    if not updates:
        return spec
    data = spec.model_dump()
    for key, value in updates.items():
        if key in GenerationSettings.model_fields:
            data["generation"][key] = value
        elif key == "base_url":
            data["backend"]["options"][key] = value
        else:
            data[key] = value
    return JudgeSpec.model_validate(data)


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
    if spec.served:
        common = {"base_url": "http://127.0.0.1:8000/v1", "api_key_env": None, **spec.backend.options}
        owner = load_backend(spec.backend.kind, **common)
        per_dim = {d: load_backend(spec.backend.kind, **{**common, "model": adapters[d]}) if d in adapters else owner
                   for d in spec.dimensions}
        return owner, per_dim
    options = dict(spec.backend.options)
    if adapters:
        options["adapters"] = adapters
    owner = load_backend(spec.backend.kind, **options)
    return owner, {d: owner.adapter_view(d) if d in adapters else owner for d in spec.dimensions}

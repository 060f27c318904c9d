"""One model-role config: which backend, which model, which generation settings (STYLE 18).

Every place that names a model reads the same YAML block, validated by :class:`ModelRole`::

    backend:
      kind: openai            # a key of surveyalign.backends.BACKENDS: openai | transformers | vllm | constant | scripted
      options: {model: gpt-5.2, base_url: https://api.openai.com/v1, api_key_env: OPENAI_API_KEY, concurrency: 16}
      per_dimension:          # optional: options merged over `options` for one survey dimension
        criticalness: {adapter: runs/dpo/criticalness}
    generation: {temperature: 0.0, max_new_tokens: 1024, seed: 0}

Users: the evaluation judge and the RQS judge (``configs/eval``), the ``score`` judge (``configs/judge``, which adds
judge-only keys such as ``samples``), the KA summariser (``summariser:`` in ``configs/ka``), the PRISM extractor
(``configs/prism``) and the autorater judge (``surveyalign autorate --judge``). Per-dimension adapters live in
``backend.per_dimension.<dimension>`` (``adapter:`` for transformers / vLLM, ``model:`` for a served adapter name).
Unknown keys are refused; an old flat shape (``model:`` / ``temperature:`` at the top, ``backend: transformers``,
the KA summariser's ``kind:``) is refused with a one-line hint naming this shape.
"""

from __future__ import annotations

import inspect
import os
from typing import Any, ClassVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    model_validator,
)

from surveyalign.backends.base import Backend, GenerationSettings
from surveyalign.backends.registry import BACKENDS, backend_class, load_backend
from surveyalign.constants import SECRET_NAME
from surveyalign.yamlconfig import DimensionName, read_yaml_mapping, validation_line

__all__ = ["ROLE_SHAPE", "BackendConfig", "ModelRole"]

#: The model-role shape in one line, named by every migration hint.
ROLE_SHAPE = ("backend: {kind: KIND, options: {model: ..., base_url: ..., api_key_env: ...}, "
              "per_dimension: {DIMENSION: {adapter: ...}}} + generation: {temperature: ..., max_new_tokens: ..., "
              "seed: ...}")

#: Top-level keys of the old flat shapes (score's JudgeSpec, the KA summariser): refused with a hint.
_FLAT_KEYS = frozenset({"kind", "options", "model", "adapters", "base_url", "api_key_env", "backend_options",
                        *GenerationSettings.model_fields})


class BackendConfig(BaseModel):
    """Which backend answers: ``load_backend(kind, **options)`` (see ``surveyalign.backends``).

    ``per_dimension`` merges extra options for one survey dimension over ``options`` (e.g. one LoRA adapter per
    dimension, SurveyReview §5: ``per_dimension: {criticalness: {adapter: runs/crit-dpo}}``; a served adapter:
    ``{criticalness: {model: criticalness}}``). Keys are dimension names (any case, parsed by ``DimensionName``); option names are checked
    against the backend's constructor.
    """

    model_config = ConfigDict(extra="forbid")

    kind: str = Field(..., description="openai | transformers | vllm | ray | constant | scripted")
    options: dict[str, Any] = Field(default_factory=dict, description="keyword arguments of load_backend")
    per_dimension: dict[DimensionName, dict[str, Any]] = Field(
        default_factory=dict, description="dimension -> options merged over `options` for that dimension"
    )

    @model_validator(mode="after")
    def _known_kind_and_options(self) -> BackendConfig:
        """Reject an unknown kind or option name now (naming the key), not after the data is loaded."""
        if self.kind not in BACKENDS:
            raise ValueError(f"unknown backend kind {self.kind!r}; expected one of {', '.join(sorted(BACKENDS))}")
        try:
            cls = backend_class(self.kind)
        except ImportError:  # an optional backend (vllm) without its extra: checked when it is built
            return self
        valid = set(inspect.signature(cls.__init__).parameters) - {"self"}
        for where, opts in [("options", self.options)] + [
            (f"per_dimension.{d}", o) for d, o in self.per_dimension.items()
        ]:
            unknown = sorted(set(opts) - valid)
            if unknown:
                raise ValueError(
                    f"{where}: backend {self.kind!r} takes no option(s) {', '.join(unknown)}; "
                    f"valid: {', '.join(sorted(valid))}"
                )
        return self

    def options_for(self, dimension: str | None) -> dict[str, Any]:
        """The options for ``dimension`` (``None`` = the shared options), per-dimension ones merged in."""
        merged = dict(self.options)
        if dimension is not None:
            merged.update(self.per_dimension.get(dimension, {}))
        return merged

    def redacted(self) -> dict[str, Any]:
        """This config as a dict with every credential-like option value replaced by ``"<redacted>"``.

        Nested mappings (``extra_body``) are cleaned too; ``api_key_env`` (the *name* of an environment
        variable) is kept.
        """

        def clean(value: Any) -> Any:
            if isinstance(value, dict):
                return {
                    k: ("<redacted>" if SECRET_NAME.search(str(k)) and k != "api_key_env" else clean(v))
                    for k, v in value.items()
                }
            if isinstance(value, list):
                return [clean(v) for v in value]
            return value

        return {
            "kind": self.kind,
            "options": clean(self.options),
            "per_dimension": {d: clean(o) for d, o in self.per_dimension.items()},
        }


class ModelRole(BaseModel):
    """A model role: ``backend`` (:class:`BackendConfig`) + ``generation`` (:class:`GenerationSettings`).

    Consumers subclass it (adding their own keys) or hold it as a field. A subclass sets
    :attr:`generation_defaults` to change the defaults of ``generation``: the keys a YAML gives are merged over
    them (a judge keeps its temperature 0.7 when the YAML sets only ``max_new_tokens``).

    Raises (at validation):
        pydantic.ValidationError: an unknown key, an invalid value, or an old flat shape (the message names
            :data:`ROLE_SHAPE`).
    """

    model_config = ConfigDict(extra="forbid")

    #: Defaults of ``generation`` for this role (merged under the YAML's keys).
    generation_defaults: ClassVar[dict[str, Any]] = {}

    backend: BackendConfig = Field(..., description="which backend and model: load_backend(kind, **options)")
    generation: GenerationSettings = Field(default_factory=GenerationSettings,
                                           description="decoding settings of every call of this role")

    @model_validator(mode="before")
    @classmethod
    def _one_shape(cls, data: Any) -> Any:
        """Refuse the old flat shapes with a hint; merge ``generation`` over :attr:`generation_defaults`."""
        if not isinstance(data, dict):
            return data
        flat = sorted(k for k in data if k in _FLAT_KEYS and k not in cls.model_fields)
        if isinstance(data.get("backend"), str) or flat:
            keys = ", ".join(flat or ["backend"])
            raise ValueError(f"old flat model-role key(s) {keys}: a model role is now {ROLE_SHAPE}")
        if cls.generation_defaults and (data.get("generation") is None or isinstance(data["generation"], dict)):
            data = {**data, "generation": {**cls.generation_defaults, **(data.get("generation") or {})}}
        return data

    def build(self, dimension: str | None = None) -> Backend:
        """Build the backend (``load_backend(kind, **options_for(dimension))``); the caller closes it.

        Raises:
            ValueError / ImportError / OSError: from :func:`~surveyalign.backends.load_backend`.
        """
        return load_backend(self.backend.kind, **self.backend.options_for(dimension))

    def describe(self) -> dict[str, Any]:
        """The role as a JSON-ready dict, credential-like options redacted (for run records)."""
        return {"backend": self.backend.redacted(), "generation": self.generation.model_dump()}

    @classmethod
    def from_yaml(cls, path: str | os.PathLike, what: str = "model role") -> ModelRole:
        """Read and validate a YAML file holding one role (``backend:`` + ``generation:``).

        Raises:
            FileNotFoundError: no such file.
            ValueError: invalid YAML, an unknown key, a bad value or an old flat shape, in one line naming the
                file and the key (``surveyalign.yamlconfig.validation_line``).
        """
        data = read_yaml_mapping(path, what)
        try:
            return cls.model_validate(data)
        except ValidationError as err:
            raise ValueError(validation_line(err, str(path), what)) from None

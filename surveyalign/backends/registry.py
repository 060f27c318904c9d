"""The backend kinds and how one is built: ``load_backend(kind, **options)`` (heavy modules imported lazily)."""

from __future__ import annotations

import importlib
import inspect
from typing import Any

from surveyalign.backends.base import Backend

__all__ = ["BACKENDS", "backend_capabilities", "backend_class", "load_backend", "score_judge_kinds"]

#: Backend kinds and the ``module:Class`` implementing each (imported lazily).
BACKENDS: dict[str, str] = {
    "openai": "surveyalign.backends.openai_api:OpenAIBackend",
    "anthropic": "surveyalign.backends.anthropic_api:AnthropicBackend",
    "transformers": "surveyalign.backends.hf:TransformersBackend",
    "vllm": "surveyalign.backends.vllm_backend:VLLMBackend",
    "constant": "surveyalign.backends.simple:ConstantBackend",
    "scripted": "surveyalign.backends.simple:ScriptedBackend",
    "ray": "surveyalign.backends.ray_backend:RayBackend",
}


def backend_class(kind: str) -> type[Backend]:
    """Return the class implementing backend ``kind`` (see :data:`BACKENDS`).

    Raises:
        ValueError: unknown kind (the message lists the known ones).
    """
    if kind not in BACKENDS:
        raise ValueError(f"unknown backend kind {kind!r}; choose one of {sorted(BACKENDS)}")
    module_name, class_name = BACKENDS[kind].split(":")
    return getattr(importlib.import_module(module_name), class_name)


def backend_capabilities(kind: str | None) -> type[Backend]:
    """What backends of ``kind`` can do, without building one: the class whose capability attributes answer
    (``local_engine``, ``serves_adapters_by_name``, ``score_judge``, ``answers_from_model``, ``default_batch_size``,
    ... : :class:`~surveyalign.backends.base.Backend`), imported lazily.

    Example: ``backend_capabilities("openai").serves_adapters_by_name`` is ``True`` (an adapter is a served model
    id); ``backend_capabilities("vllm").default_batch_size`` is 256.

    Args:
        kind: a kind of :data:`BACKENDS` (a config's ``backend.kind``, a ``describe()["backend"]``, a backend's
            ``name``); ``None`` or a kind this install does not know (a server recorded in an older run) answers
            with :class:`Backend`'s defaults (a model-backed backend that is neither a local engine nor served).

    Returns:
        The backend class (read its attributes; do not build it from here).
    """
    if kind not in BACKENDS:
        return Backend
    return backend_class(kind)


def score_judge_kinds() -> tuple[str, ...]:
    """The kinds a ``score`` judge runs on (``score_judge``), local engines first, each group in :data:`BACKENDS`
    order: ``("transformers", "vllm", "openai")``."""
    kinds = [kind for kind in BACKENDS if backend_capabilities(kind).score_judge]
    return tuple(sorted(kinds, key=lambda kind: not backend_capabilities(kind).local_engine))


def load_backend(kind: str, **options: Any) -> Backend:
    """Build a backend of ``kind`` with ``options`` (``surveyalign/backends/base.py``).

    Kinds and their main options: ``"openai"`` (model, base_url, api_key_env="OPENAI_API_KEY", concurrency,
    timeout, max_retries), ``"transformers"`` (model, adapter=None, device="auto", dtype="auto", batch_size),
    ``"vllm"`` (model, adapter=None, ...), ``"constant"`` (score, rationale, protocol), ``"scripted"``
    (replies). See each class for the full list.

    Args:
        kind: one of :data:`BACKENDS` (``"openai"``, ``"anthropic"``, ``"transformers"``, ``"vllm"``, ``"constant"``,
            ``"scripted"``).
        **options: keyword arguments of that backend's class.

    Returns:
        The built :class:`Backend` (local models are loaded now).

    Raises:
        ValueError: unknown kind, an option the backend does not take (the message lists valid ones), or a
            required option missing (e.g. ``model``).
        ImportError: the backend's optional dependency is missing (e.g. vllm).
    """
    cls = backend_class(kind)
    parameters = inspect.signature(cls.__init__).parameters
    valid = [name for name in parameters if name != "self"]
    unknown = sorted(set(options) - set(valid))
    if unknown:
        raise ValueError(f"backend {kind!r} does not take option(s) {unknown}; valid options: {valid}")
    missing = [name for name, p in parameters.items() if name != "self" and p.default is p.empty
               and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and name not in options]
    if missing:
        hint = " (--model NAME on the command line, `model:` under backend.options in a config)" if "model" in missing else ""
        raise ValueError(f"backend {kind!r} needs option(s) {missing}{hint}")
    return cls(**options)

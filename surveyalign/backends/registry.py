"""The backend kinds and how one is built: ``load_backend(kind, **options)`` (heavy modules imported lazily)."""

from __future__ import annotations

import importlib
import inspect
from typing import Any

from surveyalign.backends.base import Backend

__all__ = ["BACKENDS", "backend_class", "load_backend"]

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

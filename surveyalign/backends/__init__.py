"""Judge backends behind one small interface (``surveyalign/backends/base.py``): API, local transformers, vLLM, baselines.

``load_backend(kind, **options)`` builds one; every backend answers
``generate(prompts, settings, n) -> list[list[Generation]]``. Heavy libraries (torch, transformers, vllm)
are imported only when a backend that needs them is built.

A *model role* (:class:`ModelRole`, ``surveyalign/backends/role.py``) is the one YAML shape wherever a model is
named (evaluation judge, RQS judge, ``score`` judge, KA summariser, PRISM extractor, autorater judge)::

    backend: {kind: openai, options: {model: ..., base_url: ..., api_key_env: ...}, per_dimension: {...}}
    generation: {temperature: 0.0, max_new_tokens: 1024, seed: 0}   # omit: [temperature, top_p] for the GPT-5 family

What a backend can do (a local engine, adapters served by name, a ``score`` judge, its default batch size, ...) is
said by class attributes of :class:`Backend`, asked of a config's kind with :func:`backend_capabilities` (a new kind
registered in :data:`BACKENDS` is handled everywhere without other edits).

Chat-template rendering for local models lives in ``surveyalign/backends/chat.py``. ``surveyalign serve``
(``server.py``) is guarded by an API key, request limits and timeouts (``server_guard.py``: :class:`ServerLimits`).
Beyond one process: kind ``ray`` (``ray_backend.py``: the transformers / vLLM engine on Ray workers), the
providers' batch APIs (``batch_api.py``: :func:`make_batch_api`, OpenAI Batch and Anthropic Message Batches through
the official SDKs), and :func:`serving_plan` (``serving_plan.py``: memory per GPU of tensor / data parallel layouts).
"""

from __future__ import annotations

from surveyalign.backends.base import (
    OMITTABLE,
    Backend,
    Generation,
    GenerationSettings,
    Messages,
    preflight,
)
from surveyalign.backends.batch_anthropic import AnthropicBatchAPI
from surveyalign.backends.batch_api import (
    BatchRequest,
    BatchResult,
    BatchStatus,
    OpenAIBatchAPI,
)
from surveyalign.backends.batch_clients import make_batch_api
from surveyalign.backends.batch_split import split_requests
from surveyalign.backends.registry import (
    BACKENDS,
    backend_capabilities,
    backend_class,
    load_backend,
    score_judge_kinds,
)
from surveyalign.backends.role import ROLE_SHAPE, BackendConfig, ModelRole
from surveyalign.backends.server import ServerHandle, serve_in_thread
from surveyalign.backends.server_guard import API_KEY_ENV, ServerLimits
from surveyalign.backends.serving_plan import ServingPlan, serving_plan

__all__ = [
    "API_KEY_ENV",
    "BACKENDS",
    "OMITTABLE",
    "ROLE_SHAPE",
    "AnthropicBatchAPI",
    "Backend",
    "BackendConfig",
    "BatchRequest",
    "BatchResult",
    "BatchStatus",
    "Generation",
    "GenerationSettings",
    "Messages",
    "ModelRole",
    "OpenAIBatchAPI",
    "ServerHandle",
    "ServerLimits",
    "ServingPlan",
    "backend_capabilities",
    "backend_class",
    "load_backend",
    "make_batch_api",
    "preflight",
    "score_judge_kinds",
    "serve_in_thread",
    "serving_plan",
    "split_requests",
]

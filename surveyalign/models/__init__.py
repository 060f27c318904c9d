"""Model helpers: the tiny random Qwen3 used by tests and ``make demo``; model locations (local vs Hub)."""

from surveyalign.models.paths import default_offline, looks_local, resolve_model_path
from surveyalign.models.tiny import CHAT_TEMPLATE, TinyModelSpec, build_tiny_model

__all__ = ["CHAT_TEMPLATE", "TinyModelSpec", "build_tiny_model", "default_offline", "looks_local",
           "resolve_model_path"]

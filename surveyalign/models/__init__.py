"""Model helpers: the tiny random Qwen3 used by tests and ``make demo``."""

from surveyalign.models.tiny import CHAT_TEMPLATE, TinyModelSpec, build_tiny_model

__all__ = ["CHAT_TEMPLATE", "TinyModelSpec", "build_tiny_model"]

"""The request schema of ``surveyalign serve``: the subset of the OpenAI chat-completions request it implements."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from surveyalign.backends.server_guard import REFUSED_FIELDS

__all__ = ["MAX_N", "MAX_STOP", "MAX_TOP_LOGPROBS", "REFUSED_FIELDS", "ChatRequest"]

#: Largest ``n`` one request may ask for.
MAX_N = 64
#: Largest ``top_logprobs`` (as the OpenAI API).
MAX_TOP_LOGPROBS = 20
#: Most stop strings per request (as the OpenAI API).
MAX_STOP = 4


class _ContentPart(BaseModel):
    model_config = ConfigDict(extra="ignore")
    type: Literal["text"]
    text: str


class _Message(BaseModel):
    model_config = ConfigDict(extra="ignore")
    role: Literal["system", "user", "assistant"]
    content: str | list[_ContentPart]

    def as_dict(self) -> dict[str, str]:
        text = self.content if isinstance(self.content, str) else "".join(part.text for part in self.content)
        return {"role": self.role, "content": text}


class _TemplateKwargs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    enable_thinking: bool = False


class _StreamOptions(BaseModel):
    model_config = ConfigDict(extra="ignore")
    include_usage: bool = False


class _ResponseFormat(BaseModel):
    model_config = ConfigDict(extra="ignore")
    type: Literal["text"] = "text"


class ChatRequest(BaseModel):
    """The subset of the OpenAI chat-completions request that ``surveyalign serve`` implements.

    Unknown fields are ignored (clients send ``user``, ``metadata``...); fields whose non-default values we
    cannot honour (:data:`REFUSED_FIELDS`: tools, penalties, ``logit_bias``, a JSON ``response_format``) are
    rejected. ``stream`` (server-sent events in the OpenAI chunk format, ``stream_options.include_usage``),
    ``top_logprobs`` (0-20, needs ``logprobs``) and ``stop`` (a string or a list of up to 4 non-empty strings,
    possibly empty) are honoured.
    """

    model_config = ConfigDict(extra="ignore")

    model: str | None = None
    messages: list[_Message] = Field(min_length=1)
    temperature: float = Field(1.0, ge=0.0, le=2.0)
    top_p: float = Field(1.0, gt=0.0, le=1.0)
    max_tokens: int | None = Field(None, ge=1)
    max_completion_tokens: int | None = Field(None, ge=1)
    n: int = Field(1, ge=1, le=MAX_N)
    seed: int | None = Field(None, ge=0)
    logprobs: bool = False
    top_logprobs: int | None = Field(None, ge=0, le=MAX_TOP_LOGPROBS)
    chat_template_kwargs: _TemplateKwargs = Field(default_factory=_TemplateKwargs)
    stream: bool = False
    stream_options: _StreamOptions | None = None
    stop: str | list[str] | None = None
    tools: None = None
    tool_choice: None = None
    functions: None = None
    logit_bias: None = None
    response_format: _ResponseFormat | None = None
    frequency_penalty: float = Field(0.0, ge=0.0, le=0.0)
    presence_penalty: float = Field(0.0, ge=0.0, le=0.0)

    @field_validator("stop")
    @classmethod
    def _stop_list(cls, stop: str | list[str] | None) -> list[str]:
        values = [] if stop is None else [stop] if isinstance(stop, str) else list(stop)
        if len(values) > MAX_STOP:
            raise ValueError(f"at most {MAX_STOP} stop strings, got {len(values)}")
        if any(not v for v in values):
            raise ValueError("stop strings must not be empty")
        return values

    @model_validator(mode="after")
    def _top_needs_logprobs(self) -> ChatRequest:
        if self.top_logprobs and not self.logprobs:
            raise ValueError("top_logprobs needs logprobs: true")
        return self

    @property
    def stop_strings(self) -> list[str]:
        """The stop strings as a list (``[]`` when none)."""
        return list(self.stop or [])

    @field_validator("messages")
    @classmethod
    def _last_not_assistant(cls, messages: list[_Message]) -> list[_Message]:
        if messages[-1].role == "assistant":
            raise ValueError("the last message must not be an assistant turn (no prefill support)")
        return messages

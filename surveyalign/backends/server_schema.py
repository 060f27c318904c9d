"""The request schema of ``surveyalign serve``: the subset of the OpenAI chat-completions request it implements."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = ["MAX_N", "ChatRequest"]

#: Largest ``n`` one request may ask for.
MAX_N = 64


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


class ChatRequest(BaseModel):
    """The subset of the OpenAI chat-completions request that ``surveyalign serve`` implements.

    Unknown fields are ignored (clients send ``user``, ``metadata``...); fields whose non-default values we
    cannot honour (``stream``, ``stop``, tools, penalties, ``top_logprobs`` > 0) are rejected.
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
    top_logprobs: int | None = Field(None, ge=0, le=0)
    chat_template_kwargs: _TemplateKwargs = Field(default_factory=_TemplateKwargs)
    stream: Literal[False] = False
    stop: None = None
    tools: None = None
    frequency_penalty: float = Field(0.0, ge=0.0, le=0.0)
    presence_penalty: float = Field(0.0, ge=0.0, le=0.0)

    @field_validator("messages")
    @classmethod
    def _last_not_assistant(cls, messages: list[_Message]) -> list[_Message]:
        if messages[-1].role == "assistant":
            raise ValueError("the last message must not be an assistant turn (no prefill support)")
        return messages

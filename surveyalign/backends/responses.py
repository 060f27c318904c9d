"""Normalise the ``message`` of an OpenAI-compatible chat completion into answer, reasoning and refusal.

Servers differ in how they shape one assistant message:

* ``content`` is a string (OpenAI, ``surveyalign serve``, vLLM without a reasoning parser);
* ``content`` is a list of typed parts: ``{"type": "text", "text": ...}`` (also ``output_text``), reasoning parts
  (``{"type": "thinking", "thinking": ...}``, ``{"type": "reasoning", "text" | "reasoning" | "summary": ...}``) and
  ``{"type": "refusal", "refusal": ...}``;
* ``content`` is empty or ``null`` while ``reasoning_content`` (vLLM's and DeepSeek's reasoning parsers) or
  ``reasoning`` holds the model's thinking, or ``refusal`` holds why the model declined.

:func:`normalise_message` turns each of these into one :class:`NormalisedMessage`: the answer text (text parts
joined in order), the reasoning kept apart (it is recorded, never searched for a score) and the refusal text
(which becomes the unit's failure reason). A part of an unknown type is an error, not silently skipped.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["NormalisedMessage", "normalise_message"]

#: Part types whose text is the answer.
TEXT_PARTS = frozenset({"text", "output_text"})
#: Part types that carry the model's reasoning, and the fields their text may sit in (first present wins).
REASONING_PARTS = {"thinking": ("thinking", "text"), "reasoning": ("text", "reasoning", "summary", "content"),
                   "reasoning_text": ("text",), "redacted_thinking": ("data",)}
#: Message fields (beside ``content``) that servers use for reasoning returned apart from the answer.
REASONING_FIELDS = ("reasoning_content", "reasoning")


@dataclass(frozen=True)
class NormalisedMessage:
    """One assistant message in the shape the judge harness reads.

    Attributes:
        text: the answer: the string ``content``, or the text parts joined in order (``""`` when none).
        reasoning: reasoning returned apart from the answer (parts or ``reasoning_content``), joined with blank
            lines; ``None`` when the server sent none.
        refusal: the refusal text (``message.refusal`` or refusal parts); ``None`` when the model did not refuse.
    """

    text: str
    reasoning: str | None = None
    refusal: str | None = None


def _flatten(value: Any) -> str:
    """Text of a part field that may itself be a string, a list of strings or of ``{"text": ...}`` items."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "".join(_flatten(item.get("text") if isinstance(item, dict) else item) for item in value)
    if isinstance(value, dict):
        return _flatten(value.get("text"))
    return str(value)


def normalise_message(message: Any) -> NormalisedMessage:
    """Split an OpenAI-compatible assistant ``message`` into answer text, reasoning and refusal.

    Args:
        message: the ``choices[i].message`` object of a chat completion (a dict; ``None`` counts as empty).

    Returns:
        :class:`NormalisedMessage`. Examples: ``{"content": "Fine.$$$1$$$"}`` -> text ``"Fine.$$$1$$$"``;
        ``{"content": [{"type": "thinking", "thinking": "hm"}, {"type": "text", "text": "Fine."}]}`` -> text
        ``"Fine."``, reasoning ``"hm"``; ``{"content": None, "reasoning_content": "hm"}`` -> text ``""``,
        reasoning ``"hm"``; ``{"content": None, "refusal": "I can't"}`` -> refusal ``"I can't"``.

    Raises:
        ValueError: ``message`` is not a mapping, ``content`` is neither a string, a list nor null, or a content
            part is not a mapping / a string or has a type not listed above (the message names the type).
    """
    if message is None:
        return NormalisedMessage("")
    if not isinstance(message, dict):
        raise ValueError(f"message is a {type(message).__name__}, expected an object")  # noqa: TRY004
    content = message.get("content")
    texts: list[str] = []
    reasoning: list[str] = []
    refusals: list[str] = []
    if isinstance(content, str):
        texts.append(content)
    elif isinstance(content, list):
        for index, part in enumerate(content):
            if isinstance(part, str):
                texts.append(part)
                continue
            if not isinstance(part, dict):
                raise ValueError(f"content part {index} is a {type(part).__name__}, expected an object")  # noqa: TRY004
            kind = part.get("type")
            if kind in TEXT_PARTS:
                texts.append(_flatten(part.get("text")))
            elif kind in REASONING_PARTS:
                field = next((f for f in REASONING_PARTS[kind] if part.get(f) is not None), None)
                reasoning.append(_flatten(part.get(field)) if field else "")
            elif kind == "refusal":
                refusals.append(_flatten(part.get("refusal") or part.get("text")))
            else:
                raise ValueError(f"content part {index} has type {kind!r}; known: "
                                 f"{sorted(TEXT_PARTS | set(REASONING_PARTS) | {'refusal'})}")
    elif content is not None:
        raise ValueError(f"content is a {type(content).__name__}, expected a string, a list of parts or null")
    for name in REASONING_FIELDS:
        value = message.get(name)
        if value:
            reasoning.append(_flatten(value))
    if message.get("refusal"):
        refusals.insert(0, _flatten(message["refusal"]))
    kept_reasoning = "\n\n".join(r for r in reasoning if r) or None
    refusal = "\n".join(dict.fromkeys(r for r in refusals if r)) or None
    return NormalisedMessage("".join(texts), kept_reasoning, refusal)

"""Chat-template rendering for local backends (transformers, vLLM, ``surveyalign serve``) and training.

:func:`render_chat` is the one place a list of chat messages becomes a model's prompt string, with the
thinking switch always explicit, so training, local inference and the local server render a prompt the same
way. :func:`check_template_settings` refuses a chat-template setting the template cannot apply.
``surveyalign.prompts`` re-exports these names for training code.
"""

from __future__ import annotations

from typing import Any

__all__ = ["chat_template_variables", "check_template_settings", "render_chat"]


def render_chat(
    tokenizer: Any,
    messages: list[dict[str, str]],
    *,
    enable_thinking: bool,
    add_generation_prompt: bool = True,
) -> str:
    """Render chat messages to the model's prompt string with the thinking switch explicit.

    Training, local inference and the local server all call this, so a prompt is rendered the same way
    everywhere. For Qwen3-style templates ``enable_thinking=False`` adds an empty think block after the
    generation prompt.

    Args:
        tokenizer: a transformers tokenizer (or processor) with a chat template.
        messages: list of ``{"role", "content"}`` dicts, e.g. ``JudgePrompt.messages()``.
        enable_thinking: passed to the chat template; required so no caller relies on a default.
        add_generation_prompt: append the assistant header (True for inference, False when the last
            message is the assistant answer).

    Returns:
        The rendered text (not tokenized).

    Raises:
        ValueError: if the tokenizer has no chat template (raised by transformers).
    """
    return tokenizer.apply_chat_template(
        messages,
        tokenize=False,
        add_generation_prompt=add_generation_prompt,
        enable_thinking=bool(enable_thinking),
    )


def chat_template_variables(tokenizer: Any) -> set[str]:
    """Names a tokenizer's chat template reads from its caller (e.g. ``{"messages", "enable_thinking"}``).

    Used by local backends to refuse a chat-template setting the template ignores (``enable_thinking=True``
    with a template that has no such switch would be recorded but change nothing).

    Args:
        tokenizer: a transformers tokenizer; its ``chat_template`` may be a string or a ``{name: template}`` dict.

    Returns:
        The undeclared variables of every template (jinja2's ``meta.find_undeclared_variables``); an empty set
        when the tokenizer has no chat template.

    Raises:
        jinja2.TemplateSyntaxError: the template does not parse.
    """
    from jinja2 import meta
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    templates = getattr(tokenizer, "chat_template", None) or {}
    if isinstance(templates, str):
        templates = {"default": templates}
    env = ImmutableSandboxedEnvironment(extensions=["jinja2.ext.loopcontrols"])
    names: set[str] = set()
    for template in templates.values():
        names |= meta.find_undeclared_variables(env.parse(template))
    return names


def check_template_settings(tokenizer: Any, *, enable_thinking: bool, where: str) -> None:
    """Refuse ``enable_thinking=True`` when the tokenizer's chat template has no ``enable_thinking`` switch.

    Args:
        tokenizer: the local backend's tokenizer.
        enable_thinking: the recorded setting.
        where: what is rendering (named in the message), e.g. ``"transformers backend (models/x)"``.

    Raises:
        ValueError: ``enable_thinking`` is true and the template never reads it (the setting could not apply).
    """
    if enable_thinking and "enable_thinking" not in chat_template_variables(tokenizer):
        raise ValueError(f"{where}: enable_thinking=true has no effect: the tokenizer's chat template has no "
                         "enable_thinking switch; use enable_thinking: false or a model whose template has one")

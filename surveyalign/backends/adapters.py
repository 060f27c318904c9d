"""Several PEFT adapters on one base model: load once, switch per dimension (SurveyReview §5: one LoRA adapter
per dimension on a shared base).

:func:`load_adapters` wraps the base in a ``peft.PeftModel`` holding every adapter under its own name;
:func:`adapter_scope` switches one on for a call (or turns them all off for the base model);
:class:`AdapterView` is the :class:`~surveyalign.backends.base.Backend` of one adapter, so a judge can give each
dimension its own backend while the weights are loaded once.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from surveyalign.backends.base import CAPABILITIES, Backend, Generation, GenerationSettings, Messages

__all__ = ["AdapterView", "adapter_scope", "load_adapters"]


def load_adapters(base: Any, adapters: Mapping[str, str]) -> Any:
    """Load every adapter of ``adapters`` onto ``base`` under its name (nothing merged).

    Args:
        base: a transformers causal LM.
        adapters: ``{name: folder}``, at least one; names like ``"readability"``.

    Returns:
        A ``peft.PeftModel`` with all adapters loaded (the first one active).

    Raises:
        ValueError: ``adapters`` is empty.
        OSError / ValueError from PEFT: a folder that is not a PEFT adapter for this base.
    """
    from peft import PeftModel

    if not adapters:
        raise ValueError("load_adapters: no adapter given")
    items = list(adapters.items())
    first_name, first_path = items[0]
    model = PeftModel.from_pretrained(base, first_path, adapter_name=first_name)
    for name, path in items[1:]:
        model.load_adapter(path, adapter_name=name)
    return model


@contextlib.contextmanager
def adapter_scope(model: Any, name: str | None, multi: bool) -> Iterator[None]:
    """Run the block with adapter ``name`` active (``None``: the base model with adapters disabled).

    Args:
        model: the model of a backend; only a multi-adapter ``PeftModel`` is switched.
        name: adapter name, or ``None`` for the base model.
        multi: whether ``model`` holds named adapters (a single merged adapter is left alone).

    Yields:
        Nothing; the caller must hold the backend's lock for the whole block.
    """
    if not multi:
        yield
        return
    if name is None:
        with model.disable_adapter():
            yield
        return
    model.set_adapter(name)
    yield


class AdapterView(Backend):
    """One named adapter of a multi-adapter backend (transformers: PEFT adapters; vLLM: LoRA requests).

    Generation goes to the parent with ``adapter_name=`` (transformers switches the adapter on under its lock,
    vLLM attaches the adapter's ``LoRARequest``); ``describe()`` is the parent's with ``adapter``/``adapter_name``
    and the adapter's own fingerprint, so each dimension has its own cache identity. Closing a view does not close
    the parent.

    Args:
        parent: the backend holding the model and its adapters.
        adapter_name: one of ``parent.adapter_paths``.
    """

    def __init__(self, parent: Any, adapter_name: str) -> None:
        self.name = parent.name
        for capability in CAPABILITIES:  # the view answers as its parent engine does
            setattr(self, capability, getattr(parent, capability, getattr(Backend, capability)))
        self.parent = parent
        self.adapter_name = adapter_name
        self.tokenizer = parent.tokenizer
        self.model_path = parent.model_path
        self.adapter_path = parent.adapter_paths[adapter_name]
        self.batch_size = getattr(parent, "batch_size", 8)
        self.max_positions = getattr(parent, "max_positions", None)

    def describe(self) -> dict[str, Any]:
        """The parent's description narrowed to this adapter (path, name, content fingerprint)."""
        out = {k: v for k, v in self.parent.describe().items() if k not in ("adapters", "adapter_fingerprints")}
        fingerprints = dict(out.get("fingerprints") or {})
        fingerprints["adapter"] = self.parent.adapter_fingerprints[self.adapter_name]
        out.update(adapter=self.adapter_path, adapter_name=self.adapter_name, fingerprints=fingerprints,
                   merge_adapter=False)
        return out

    def check_settings(self, settings: GenerationSettings) -> None:
        """The parent's check (same tokenizer and chat template)."""
        self.parent.check_settings(settings)

    def render(self, messages: Messages, settings: GenerationSettings) -> str:
        """The parent's chat rendering."""
        return self.parent.render(messages, settings)

    def generate(self, prompts: Sequence[Messages], settings: GenerationSettings | None = None, n: int = 1
                 ) -> list[list[Generation]]:
        """Generate with this adapter active (see :meth:`TransformersBackend.generate`).

        Args:
            prompts: P chat prompts.
            settings: sampling settings.
            n: samples per prompt (one shared prefill per prompt).

        Returns:
            P lists of ``n`` generations.

        Raises:
            ValueError: invalid ``prompts`` or ``n``.
        """
        return self.parent.generate(prompts, settings, n, adapter_name=self.adapter_name)

    def generate_detailed(self, prompts: Sequence[Messages], settings: GenerationSettings | None = None,
                          n: int = 1, seeds: Sequence[int] | None = None, top_logprobs: int = 0,
                          on_token: Any = None, cancelled: Any = None) -> list[list[Any]]:
        """:meth:`TransformersBackend.generate_detailed` with this adapter (used by ``surveyalign serve``).

        Args:
            prompts: P chat prompts.
            settings: sampling settings.
            n: samples per prompt.
            seeds: optional base seed per prompt.
            top_logprobs: most likely alternatives recorded per generated token (0-20).
            on_token: called with each token as it is generated (see the parent's method).
            cancelled: ``prompt index -> True`` once nobody waits for it (see the parent's method).

        Returns:
            P lists of ``n`` detailed generations.

        Raises:
            ValueError: invalid arguments.
        """
        return self.parent.generate_detailed(prompts, settings, n, seeds, adapter_name=self.adapter_name,
                                             top_logprobs=top_logprobs, on_token=on_token, cancelled=cancelled)

    def close(self) -> None:
        """Release this view's own loop thread only; the parent keeps the model."""
        super().close()

"""The ``--judge`` config of ``surveyalign data identify`` / ``annotate``: a model role (backend + generation).

The one model-role shape of the project (``surveyalign.backends.ModelRole``)::

    backend:
      kind: openai            # openai | transformers | vllm | constant | scripted
      options: {model: gpt-5.2, api_key_env: OPENAI_API_KEY, concurrency: 16}
    generation: {temperature: 0.0, max_new_tokens: 2048, seed: 0}
"""

from __future__ import annotations

import os
from typing import Any, ClassVar

from surveyalign.backends import ModelRole


class AnnotationJudge(ModelRole):
    """The screening / pre-annotation judge: a :class:`~surveyalign.backends.ModelRole` whose ``generation``
    defaults to ``max_new_tokens: 2048`` (four dimensions with their snippets in one answer) at temperature 0."""

    generation_defaults: ClassVar[dict[str, Any]] = {"max_new_tokens": 2048}

    @classmethod
    def from_yaml(cls, path: str | os.PathLike, what: str = "judge config") -> AnnotationJudge:
        """Read and check a judge YAML.

        Raises:
            FileNotFoundError: no such file.
            ValueError: bad YAML, an unknown key or backend kind, an old flat shape (one line naming file and key).
        """
        return super().from_yaml(path, what)  # type: ignore[return-value]

"""Knowledge augmentation of the reward (SurveyReview §5.2, App. F): the KA text of each (completion, dimension).

A dimension whose judge was trained with KA gets, before the completion, the row's ``knowledge`` text or the KA
built from the row's ``references`` with the configured citation graph, through the same source ``surveyalign
score --graph`` uses (:func:`surveyalign.inference.knowledge.knowledge_source`, :func:`~surveyalign.inference.
knowledge.knowledge_record`). Built KA records are kept by content (dimension, title, references), so the G
completions of one prompt cost one build. Without a KA text the dimension is refused unless the config allows it.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from surveyalign.calls import CallCache, stable_hash
from surveyalign.documents import Document, read_reference_value
from surveyalign.inference.knowledge import KnowledgeRecord, knowledge_record, needs_knowledge
from surveyalign.models import read_training_record
from surveyalign.rewards._config import RewardJudge, RewardKnowledge

__all__ = ["CompletionKnowledge"]


class CompletionKnowledge:
    """The KA texts of the reward's completions.

    Args:
        settings: the reward's ``knowledge:`` block.
        role: the reward's judge (its per-dimension adapters, their training records, its base model's tokenizer).
        dimensions: the judged dimensions.
        cache: the call cache the Crit-KA summariser shares with the judge.

    Attributes:
        source: the KA source (``None``: no graph configured).
        required: ``{dimension: whether its judge was trained with KA}``.
        builds: KA records built (the rest came from the content cache).

    Raises:
        ValueError / FileNotFoundError: a bad ``graph`` / ``ka_config`` (as ``score --graph``).
    """

    def __init__(self, settings: RewardKnowledge, role: RewardJudge, dimensions: Sequence[str],
                 cache: CallCache) -> None:
        self.settings = settings
        per_dim = role.backend.per_dimension
        records = {d: read_training_record(o["adapter"], required=False) or None
                   for d, o in per_dim.items() if o.get("adapter") and Path(str(o["adapter"])).is_dir()}
        self.required = {d: needs_knowledge(d, record=records.get(d), knowledge_dimensions=settings.dimensions,
                                            adapters=list(per_dim)) for d in dimensions}
        model = str(role.backend.options.get("model") or "")
        self.source = settings.build(model, cache) if any(self.required.values()) else None
        self.builds = 0
        self._memo: dict[str, KnowledgeRecord] = {}
        self._lock = threading.Lock()

    def describe(self) -> dict[str, Any]:
        """The config record's ``knowledge`` entry: the block's keys and the dimensions needing KA."""
        return {**self.settings.model_dump(exclude={"folder"}),
                "required": [d for d, r in self.required.items() if r], "source": getattr(self.source, "name", None)}

    def lookup(self, text: str, dimension: str, *, title: str | None, knowledge: str | None, references: Any,
               where: str) -> KnowledgeRecord:
        """The KA record of one completion on ``dimension``.

        Args:
            text: the completion (judged as a survey).
            dimension: the dimension.
            title: the row's title (finds the survey's own node in the graph, which is left out), or ``None``.
            knowledge: the row's KA text, or ``None``; used as given on every dimension.
            references: the row's ``references`` value (BibTeX, markdown list, titles), or ``None``.
            where: the row, for errors (``"completion 3"``).

        Returns:
            The :class:`~surveyalign.inference.knowledge.KnowledgeRecord`; ``required and not used`` with
            ``allow_no_knowledge`` off means the dimension is refused (its note starts ``not judged:``).

        Raises:
            ValueError: a ``references`` value that cannot be read (naming ``where``).
        """
        required = self.required.get(dimension, False)
        if knowledge:
            return KnowledgeRecord(knowledge, "column", required=required, used=True)
        if not required:
            return KnowledgeRecord(None, "none", required=False)
        refs = read_reference_value(references, where=f"{where}: references").references
        if not refs and not self.settings.completion_references:
            source: Any = None if self.source is None else (lambda _doc, _dim: KnowledgeRecord(
                None, getattr(self.source, "name", "graph"), note="the row has no `references` (the completion's "
                "own list is read with knowledge.completion_references: true)"))
            key = None
        else:
            source = self.source
            key = stable_hash([dimension, title or "", [asdict(r) for r in refs], "" if refs else text])
        with self._lock:
            hit = self._memo.get(key) if key is not None else None
        if hit is not None:
            return KnowledgeRecord(**{**asdict(hit), "details": dict(hit.details)})
        document = Document(text=text, format="markdown", title=title or "",
                            source=Path(f"completion-{stable_hash(text)[:12]}"))
        record = knowledge_record(source, document, dimension, required=True,
                                  allow=self.settings.allow_no_knowledge, references=refs or None,
                                  configure="knowledge.graph in the reward config (or a `knowledge` column)",
                                  allow_flag="knowledge.allow_no_knowledge: true")
        if key is not None and source is not None:
            with self._lock:
                self._memo[key] = record
                self.builds += 1
        return record


def knowledge_summary(record: KnowledgeRecord) -> dict[str, Any]:
    """What the reward log keeps of one dimension's KA: ``required``, ``used``, ``source``, ``chars``, ``note`` and
    the graph build's ``n_references`` / ``n_resolved`` (``None`` when not built)."""
    return {"required": record.required, "used": record.used, "source": record.source,
            "chars": len(record.text or ""), "note": record.note,
            "n_references": record.details.get("n_references"), "n_resolved": record.details.get("n_resolved")}

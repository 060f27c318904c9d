"""Knowledge augmentation for a survey being reviewed (SurveyReview §5.2, App. F): where the KA text comes from.

SurveyAlign's Comprehensiveness and Criticalness adapters were trained with a KA block before the survey (Comp-KA:
the expanded reference neighbourhood; Crit-KA: year-stamped summaries of related work). Judging with them without
that block gives them inputs they never saw, so ``surveyalign score`` refuses those dimensions unless knowledge
is available or the user passes ``--allow-no-knowledge`` (and the output then says so).

Two sources: :class:`FileKnowledge` (KA texts prepared beforehand, one file per survey and dimension) and
:class:`GraphKnowledge` (built from the survey's reference list with a citation graph, through
:func:`surveyalign.knowledge.build_survey_ka`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

from surveyalign.documents import Document

__all__ = ["FileKnowledge", "GraphKnowledge", "KnowledgeRecord", "KnowledgeSource"]


@dataclass
class KnowledgeRecord:
    """The KA of one (survey, dimension) as the report records it.

    Attributes:
        text: the KA text put before the survey (``None``: no KA).
        source: ``"file"``, ``"graph"`` or ``"none"``.
        required: whether the dimension's adapter was trained with KA.
        used: whether ``text`` went into the prompt.
        note: why there is no KA, or what was done without it (``None`` when KA was used).
        details: the builder's record (references resolved, neighbourhood size, ...) or the file read.
    """

    text: str | None
    source: str
    required: bool = False
    used: bool = False
    note: str | None = None
    details: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON fields (the text itself as ``text``; ``chars`` its length)."""
        out = asdict(self)
        out["chars"] = len(self.text or "")
        return out


class KnowledgeSource(Protocol):
    """Gives the KA text of one survey for one dimension (``None`` text with a ``note`` when there is none)."""

    name: str

    def __call__(self, document: Document, dimension: str) -> KnowledgeRecord:
        """Return the KA record of ``document`` for ``dimension``."""
        ...


class FileKnowledge:
    """KA texts prepared beforehand: ``DIR/<survey stem>.<dimension>.txt`` (or ``.md``); two surveys sharing a stem
    each read their own ``DIR/<stem>-<hash>.<dimension>.txt`` when it is there (the name of their report).

    Args:
        folder: the folder holding the files.

    Raises:
        NotADirectoryError: ``folder`` is not a folder.
    """

    name = "file"

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)
        if not self.folder.is_dir():
            raise NotADirectoryError(f"--knowledge {self.folder}: not a folder of <survey>.<dimension>.txt files")

    def __call__(self, document: Document, dimension: str) -> KnowledgeRecord:
        """Read ``<stem>-<hash>.<dimension>.txt`` (``<hash>``: 8 hex digits of the SHA-256 of the survey's text,
        the name ``score`` gives a survey whose stem another survey shares), else
        ``<stem>.<dimension>.txt`` (``.md`` too); an absent or empty file gives no KA (with a note)."""
        from surveyalign.paths import content_sha256

        stem = document.source.stem
        own = f"{stem}-{content_sha256(document.text)[:8]}"
        for name, suffix in ((own, ".txt"), (own, ".md"), (stem, ".txt"), (stem, ".md")):
            path = self.folder / f"{name}.{dimension}{suffix}"
            if path.is_file():
                text = path.read_text(encoding="utf-8", errors="replace").strip()
                if text:
                    return KnowledgeRecord(text, "file", details={"path": str(path)})
                return KnowledgeRecord(None, "file", note=f"{path} is empty", details={"path": str(path)})
        return KnowledgeRecord(None, "file", note=f"no {stem}.{dimension}.txt in {self.folder}")


class GraphKnowledge:
    """Comp-KA / Crit-KA built from the survey's references and a citation graph (SurveyReview App. F).

    Args:
        graph: a ``surveyalign.knowledge.CitationGraph``.
        config: a ``surveyalign.knowledge.KAConfig``.
        summariser: a ``surveyalign.knowledge.Summariser`` (needed for Crit-KA; ``None``: Crit-KA not built).
        counter: a token counter of the judge tokenizer (records the KA length), or ``None``.

    Attributes:
        summariser_calls: key -> call of every Crit-KA summariser call the KA texts built so far took (answered,
            from the cache or just now; read back through :meth:`plan`, which sends nothing), in first-seen order:
            what ``score`` counts as the summariser's tokens and cost.
    """

    name = "graph"

    def __init__(self, graph: Any, config: Any, *, summariser: Any | None = None, counter: Any | None = None) -> None:
        from surveyalign.knowledge import Resolver

        self.graph = graph
        self.config = config
        self.summariser = summariser
        self.counter = counter
        self.resolver = Resolver(graph.papers)
        self.summariser_calls: dict[str, Any] = {}

    def __call__(self, document: Document, dimension: str) -> KnowledgeRecord:
        """Resolve the survey's references in the graph and build its KA text for ``dimension``.

        Raises:
            CostCapReached: the summariser's ``budget`` held its calls back (``score --max-cost``).
        """
        record = self.plan(document, dimension, send=True)[0]
        if dimension == "criticalness" and self.summariser is not None:  # the calls it took, now all in the cache
            self.summariser_calls.update((c.key, c) for c in self.plan(document, dimension)[1])
        return record

    def plan(self, document: Document, dimension: str, *, send: bool = False) -> tuple[KnowledgeRecord, list[Any]]:
        """The KA record of ``document`` for ``dimension`` and the summariser calls it takes (Crit-KA; answered or
        not), sending nothing unless ``send``. Unsent, a Crit-KA whose calls are not all in the cache gets a
        stand-in text of ``length`` tokens (``details["stand_in"]``): what the judge prompt will hold at most."""
        from surveyalign.knowledge.build import SurveyKAInput, build_survey_ka

        if dimension == "criticalness" and self.summariser is None:
            return KnowledgeRecord(None, "graph", note="Crit-KA needs a summariser backend (KA config `summariser`)"), []
        survey = SurveyKAInput(paper_id=document.source.stem, title=document.title, text=document.text)
        record = build_survey_ka(self.graph, self.resolver, survey, dimension, self.config,
                                 summariser=self.summariser, counter=self.counter,
                                 plan=not send and dimension == "criticalness")
        calls = record.pop("planned_calls", [])
        text = record.get("text") or None
        return KnowledgeRecord(text, "graph", note=None if text else record.get("reason"),
                               details={k: v for k, v in record.items() if k != "text"}), calls

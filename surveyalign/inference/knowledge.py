"""Knowledge augmentation for a survey being reviewed (SurveyReview §5.2, App. F): where the KA text comes from.

SurveyAlign's Comprehensiveness and Criticalness adapters were trained with a KA block before the survey (Comp-KA:
the expanded reference neighbourhood; Crit-KA: year-stamped summaries of related work). Judging with them without
that block gives them inputs they never saw, so ``surveyalign score`` refuses those dimensions unless knowledge
is available or the user passes ``--allow-no-knowledge`` (and the output then says so).

Two sources: :class:`FileKnowledge` (KA texts prepared beforehand, one file per survey and dimension) and
:class:`GraphKnowledge` (built from the survey's reference list with a citation graph, through
:func:`surveyalign.knowledge.build_survey_ka`). :func:`knowledge_source` builds one from ``score``'s options
(``--knowledge`` / ``--graph`` / ``--ka-config``) or a config's ``knowledge:`` block (:class:`KnowledgeSettings`);
:func:`needs_knowledge` says which dimensions need KA and :func:`knowledge_record` looks it up and words the
refusal. ``score``, the training reward (:mod:`surveyalign.rewards`) and ``systems`` all go through these.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import BaseModel, ConfigDict, Field

from surveyalign.knowledge.config import KA_DIMENSIONS

if TYPE_CHECKING:  # the documents face loads every reader (lxml, pypdf): not at import, so `--help` stays light
    from surveyalign.documents import Document

__all__ = ["KA_DIMENSIONS", "FileKnowledge", "GraphKnowledge", "KnowledgeRecord", "KnowledgeSettings",
           "KnowledgeSource", "knowledge_record", "knowledge_source", "needs_knowledge"]



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

    def __call__(self, document: Document, dimension: str, *, references: Any = None) -> KnowledgeRecord:
        """Return the KA record of ``document`` for ``dimension`` (``references``: the survey's reference
        entries given apart from its text, ``None``: read from the text)."""
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

    def __call__(self, document: Document, dimension: str, *, references: Any = None) -> KnowledgeRecord:
        """Read ``<stem>-<hash>.<dimension>.txt`` (``<hash>``: 8 hex digits of the SHA-256 of the survey's text,
        the name ``score`` gives a survey whose stem another survey shares), else
        ``<stem>.<dimension>.txt`` (``.md`` too); an absent or empty file gives no KA (with a note).
        ``references`` is not read (the files are prepared)."""
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

    def __call__(self, document: Document, dimension: str, *, references: Any = None) -> KnowledgeRecord:
        """Resolve the survey's references in the graph and build its KA text for ``dimension``.

        Args:
            document: the survey.
            dimension: ``"comprehensiveness"`` or ``"criticalness"``.
            references: the survey's reference entries (:class:`~surveyalign.documents.Reference` or raw text)
                given apart from its text; ``None`` or empty: the reference section of ``document.text``.

        Raises:
            CostCapReached: the summariser's ``budget`` held its calls back (``score --max-cost``).
        """
        record = self.plan(document, dimension, send=True, references=references)[0]
        if dimension == "criticalness" and self.summariser is not None:  # the calls it took, now all in the cache
            self.summariser_calls.update((c.key, c) for c in self.plan(document, dimension,
                                                                       references=references)[1])
        return record

    def plan(self, document: Document, dimension: str, *, send: bool = False, references: Any = None
             ) -> tuple[KnowledgeRecord, list[Any]]:
        """The KA record of ``document`` for ``dimension`` and the summariser calls it takes (Crit-KA; answered or
        not), sending nothing unless ``send``. Unsent, a Crit-KA whose calls are not all in the cache gets a
        stand-in text of ``length`` tokens (``details["stand_in"]``): what the judge prompt will hold at most.
        ``references`` as in :meth:`__call__`."""
        from surveyalign.knowledge.build import SurveyKAInput, build_survey_ka

        if dimension == "criticalness" and self.summariser is None:
            return KnowledgeRecord(None, "graph", note="Crit-KA needs a summariser backend (KA config `summariser`)"), []
        survey = SurveyKAInput(paper_id=document.source.stem, title=document.title, text=document.text,
                               references=tuple(references or ()))
        record = build_survey_ka(self.graph, self.resolver, survey, dimension, self.config,
                                 summariser=self.summariser, counter=self.counter,
                                 plan=not send and dimension == "criticalness")
        calls = record.pop("planned_calls", [])
        text = record.get("text") or None
        return KnowledgeRecord(text, "graph", note=None if text else record.get("reason"),
                               details={k: v for k, v in record.items() if k != "text"}), calls


def needs_knowledge(dimension: str, *, record: dict[str, Any] | None = None,
                    knowledge_dimensions: Any = None, adapters: Any = ()) -> bool:
    """Whether the judge of ``dimension`` was trained with KA (SurveyReview §5.2: SurveyAlign's Comprehensiveness
    and Criticalness adapters are trained on [KA text; survey]).

    Args:
        dimension: the dimension.
        record: its adapter's training record (``use_knowledge`` decides when present), or ``None``.
        knowledge_dimensions: the dimensions a config says expect KA (decides when not ``None``).
        adapters: the dimensions judged by an adapter; without a record or config, those of
            :data:`KA_DIMENSIONS` need KA (a base model judging zero-shot does not).

    Returns:
        True when a KA text must go before the survey.
    """
    if record is not None and "use_knowledge" in record:
        return bool(record["use_knowledge"])
    if knowledge_dimensions is not None:
        return dimension in knowledge_dimensions
    return dimension in adapters and dimension in KA_DIMENSIONS


def knowledge_record(source: Any, document: Document, dimension: str, *, required: bool, allow: bool,
                     references: Any = None, configure: str = "--graph/--knowledge",
                     allow_flag: str = "--allow-no-knowledge") -> KnowledgeRecord:
    """The KA record of ``document`` on ``dimension``, with the note saying what happens without one.

    Args:
        source: a :class:`KnowledgeSource` (or a callable of that shape), or ``None`` (none configured).
        document: the survey.
        dimension: the dimension.
        required: whether the dimension's judge was trained with KA (:func:`needs_knowledge`); when not, no KA
            is looked for (``source "none"``).
        allow: judge without KA when it is required and missing (recorded) instead of refusing.
        references: the survey's reference entries given apart from its text (passed to ``source``).
        configure: how a user configures a source (named in the notes).
        allow_flag: the option that allows judging without KA (named in the notes).

    Returns:
        The :class:`KnowledgeRecord`: ``required``, ``used`` (a non-empty text), and when not used a note
        that starts ``judged WITHOUT knowledge augmentation`` (``allow``) or ``not judged:`` (a refusal: the
        caller makes no judge call for it).
    """
    if not required:  # trained on plain inputs: no KA is looked for
        return KnowledgeRecord(None, "none", required=False)
    if source is None:
        record = KnowledgeRecord(None, "none", note=f"no knowledge source configured ({configure})")
    elif references is not None:
        record = source(document, dimension, references=references)
    else:
        record = source(document, dimension)
    record.required = True
    record.used = bool(record.text)
    if not record.used:
        why = record.note or "no KA text"
        record.note = (f"judged WITHOUT knowledge augmentation although the adapter was trained with it "
                       f"({allow_flag}): {why}" if allow else
                       f"not judged: the adapter was trained with knowledge augmentation and none is available "
                       f"({why}); configure {configure} or pass {allow_flag}")
    return record


class KnowledgeSettings(BaseModel):
    """Where KA texts come from, as a config block (``knowledge:``); the keys of ``score``'s options.

    Attributes:
        folder: prepared KA texts, ``<folder>/<survey stem>.<dimension>.txt`` (``score --knowledge``).
        graph: a citation graph file (``surveyalign ka graph`` output) to build Comp-KA / Crit-KA from each
            survey's references (``score --graph``).
        ka_config: KA settings (``configs/ka/*.yaml``) with ``graph`` (``score --ka-config``; default: the built-in
            settings).

    Paths are as written; :meth:`resolved` reads relative ones from a config file's folder.
    """

    model_config = ConfigDict(extra="forbid")

    folder: str | None = Field(None, description="prepared KA texts: <folder>/<survey stem>.<dimension>.txt")
    graph: str | None = Field(None, description="citation graph file to build Comp-KA / Crit-KA from the references")
    ka_config: str | None = Field(None, description="KA settings (configs/ka/*.yaml) with graph")

    def resolved(self, root: str | Path) -> KnowledgeSettings:
        """This block with each relative path that exists under ``root`` made absolute (the others as written)."""
        def fix(value: str | None) -> str | None:
            if value is None or Path(value).is_absolute() or not (Path(root) / value).exists():
                return value
            return str((Path(root) / value).resolve())
        return self.model_copy(update={k: fix(getattr(self, k)) for k in ("folder", "graph", "ka_config")})

    def build(self, model: str, cache: Any = None, *, where: str = "knowledge") -> KnowledgeSource | None:
        """The KA source of this block (:func:`knowledge_source`; keys named ``<where>.<key>`` in errors)."""
        return knowledge_source(folder=self.folder, graph=self.graph, ka_config=self.ka_config, model=model,
                                cache=cache, names=(f"{where}.folder", f"{where}.graph", f"{where}.ka_config"))


def knowledge_source(*, folder: str | Path | None = None, graph: str | Path | None = None,
                     ka_config: str | Path | None = None, model: str | None = None, cache: Any = None,
                     names: tuple[str, str, str] = ("--knowledge", "--graph", "--ka-config")
                     ) -> KnowledgeSource | None:
    """The KA source of ``score --knowledge DIR`` / ``--graph FILE [--ka-config FILE]`` or a ``knowledge:`` block.

    Args:
        folder: prepared KA texts (:class:`FileKnowledge`).
        graph: a citation graph file (:class:`GraphKnowledge`, SurveyReview App. F).
        ka_config: the KA settings with ``graph`` (``None``: the built-in ones).
        model: the judge's base model: its tokenizer counts KA tokens unless the KA config names one.
        cache: the call cache the Crit-KA summariser shares (its calls planned and capped with the judge's).
        names: how the three options are called in messages (flags or config keys).

    Returns:
        The source, or ``None`` when neither ``folder`` nor ``graph`` is given.

    Raises:
        ValueError: both ``folder`` and ``graph``; ``ka_config`` without ``graph``; a tokenizer that cannot be
            loaded offline (one line saying what the KA config needs).
        NotADirectoryError / FileNotFoundError: a missing folder, graph or KA config.
    """
    if folder and graph:
        raise ValueError(f"give {names[0]} DIR or {names[1]} FILE, not both")
    if folder:
        return FileKnowledge(folder)
    if not graph:
        if ka_config:
            raise ValueError(f"{names[2]} needs {names[1]} FILE")
        return None
    from surveyalign.knowledge import CitationGraph, KAConfig, Summariser, TokenCounter
    from surveyalign.models import NotCachedError

    config = KAConfig.from_yaml(ka_config)
    where = str(ka_config) if ka_config else f"the built-in KA settings (no {names[2]})"
    tokenizer = config.tokenizer or model
    try:
        counter = TokenCounter(tokenizer)
    except NotCachedError as err:
        url = (config.summariser.backend.options.get("base_url") if config.summariser is not None else None)
        needs = [(f"the judge's tokenizer {tokenizer!r} (`tokenizer:`; a local folder, or 'whitespace' to count "
                 "words)")]
        if "criticalness" in config.dimensions:
            needs.append(f"for Crit-KA a summariser server at {url or '(none set)'} (`summariser:`)")
        raise ValueError(f"{names[1]}: {where} needs {' and '.join(needs)}; {err}. Offline, use a KA config with a "
                         "local tokenizer folder (README: 'Knowledge augmentation offline')") from None
    summariser = None
    if config.summariser is not None:
        summariser = Summariser(config.summariser.build(), config, counter, cache)
    return GraphKnowledge(CitationGraph.load(graph), config, summariser=summariser, counter=counter)

"""The corpus of ``surveyalign systems``: survey writers on shared topics.

Layout::

    DIR/<system>/<topic>.{md,markdown,txt,tex,pdf,xml}   one survey per (system, topic); a folder <topic>/ (a LaTeX
                                                        project) counts too
    DIR/_reference/<topic>.*                            optional: a human-written survey of the topic
    DIR/_topics.yaml                                    optional: {topics: {<topic>: {title, references: [...]}}}

A reference of ``_topics.yaml`` is a title string or a mapping with ``title``, ``doi``, ``arxiv`` (or
``arxiv_id``), ``year`` and ``authors``. Folders whose names start with ``_`` or ``.`` other than the reference
are not systems. A (system, topic) pair without a file is counted as missing, never imputed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from surveyalign.documents import Reference
from surveyalign.yamlconfig import read_yaml_mapping

__all__ = ["SURVEY_SUFFIXES", "Corpus", "Topic", "read_corpus"]

#: File suffixes read as surveys (through :func:`surveyalign.documents.read_document`).
SURVEY_SUFFIXES = (".md", ".markdown", ".txt", ".tex", ".pdf", ".xml")
TOPICS_FILE = "_topics.yaml"


@dataclass
class Topic:
    """One topic: its name (the file stem), title and the references a survey of it should cite.

    Attributes:
        name: the file stem shared by the systems' surveys.
        title: from ``_topics.yaml``, else the name.
        references: the topic's reference list from ``_topics.yaml`` (``None``: not given there; the human
            reference survey's own list is used then).
    """

    name: str
    title: str
    references: list[Reference] | None = None


@dataclass
class Corpus:
    """What :func:`read_corpus` found.

    Attributes:
        root: the corpus folder.
        systems: the system names, sorted.
        topics: every topic, sorted by name.
        files: ``{system: {topic: path}}`` (the reference under its folder name).
        reference: the reference folder's name (a key of ``files`` when it exists).
        missing: ``[(system, topic)]`` pairs without a survey (systems only, not the reference).
    """

    root: Path
    systems: list[str]
    topics: list[Topic]
    files: dict[str, dict[str, Path]]
    reference: str
    missing: list[tuple[str, str]] = field(default_factory=list)

    @property
    def has_reference(self) -> bool:
        """Whether the corpus holds human reference surveys."""
        return bool(self.files.get(self.reference))


def _surveys(folder: Path) -> dict[str, Path]:
    found: dict[str, Path] = {}
    for path in sorted(folder.iterdir()):
        if path.name.startswith((".", "_")):
            continue
        if path.is_file() and path.suffix.lower() not in SURVEY_SUFFIXES:
            continue
        stem = path.stem if path.is_file() else path.name
        if stem in found:
            raise ValueError(f"{folder}: two surveys of topic {stem!r} ({found[stem].name}, {path.name}); keep one")
        found[stem] = path
    return found


def _reference_entry(entry: Any, where: str) -> Reference:
    if isinstance(entry, str):
        if not entry.strip():
            raise ValueError(f"{where}: an empty reference")
        return Reference(key=where.rsplit("[", 1)[-1].rstrip("]"), title=entry.strip(), raw=entry, source="topics")
    if not isinstance(entry, dict):
        raise ValueError(f"{where}: a reference is a title or a mapping (title, doi, arxiv, year, authors)")  # noqa: TRY004
    unknown = sorted(set(entry) - {"title", "doi", "arxiv", "arxiv_id", "year", "authors"})
    if unknown:
        raise ValueError(f"{where}: unknown field(s) {', '.join(unknown)} (title, doi, arxiv, year, authors)")
    if not any(entry.get(k) for k in ("title", "doi", "arxiv", "arxiv_id")):
        raise ValueError(f"{where}: a reference needs a title, a doi or an arxiv id")
    year = entry.get("year")
    if year is not None and not isinstance(year, int):
        raise ValueError(f"{where}: field year: a whole number, got {year!r}")
    authors = entry.get("authors") or []
    authors = [authors] if isinstance(authors, str) else [str(a) for a in authors]
    return Reference(key=where.rsplit("[", 1)[-1].rstrip("]"), title=str(entry.get("title") or ""), authors=authors,
                     year=year, doi=entry.get("doi"), arxiv_id=entry.get("arxiv") or entry.get("arxiv_id"),
                     raw=str(entry), source="topics")


def _read_topics(path: Path) -> dict[str, dict[str, Any]]:
    if not path.is_file():
        return {}
    data = read_yaml_mapping(path, "topics file")
    topics = data.get("topics", {})
    if set(data) - {"topics"} or not isinstance(topics, dict):
        raise ValueError(f"{path}: expected `topics: {{<topic>: {{title, references}}}}`")
    out = {}
    for name, spec in topics.items():
        spec = spec or {}
        if not isinstance(spec, dict) or set(spec) - {"title", "references"}:
            raise ValueError(f"{path}: topic {name}: a mapping with `title` and `references`")
        refs = spec.get("references")
        if refs is not None and not isinstance(refs, list):
            raise ValueError(f"{path}: topic {name}: field references: a list")
        out[str(name)] = {"title": str(spec.get("title") or name),
                          "references": None if refs is None else
                          [_reference_entry(e, f"{path}: topic {name}: references[{i + 1}]") for i, e in enumerate(refs)]}
    return out


def read_corpus(root: str | Path, reference: str = "_reference") -> Corpus:
    """Find the systems, topics and files of a corpus (module docstring); nothing is read yet.

    Args:
        root: the corpus folder.
        reference: the folder of the human-written reference surveys.

    Returns:
        The :class:`Corpus`.

    Raises:
        FileNotFoundError: ``root`` is not a folder.
        ValueError: no system folder with a survey, two surveys of one topic in one folder, or a bad
            ``_topics.yaml`` (file, topic and field named).
    """
    folder = Path(root)
    if not folder.is_dir():
        raise FileNotFoundError(f"--corpus {folder}: not a folder")
    files: dict[str, dict[str, Path]] = {}
    for sub in sorted(p for p in folder.iterdir() if p.is_dir()):
        if sub.name == reference or not sub.name.startswith((".", "_")):
            found = _surveys(sub)
            if found:
                files[sub.name] = found
    systems = sorted(s for s in files if s != reference)
    if not systems:
        raise ValueError(f"--corpus {folder}: no system folder with a survey (DIR/<system>/<topic>.md|.tex|.pdf)")
    declared = _read_topics(folder / TOPICS_FILE)
    names = sorted({t for per in files.values() for t in per} | set(declared))
    topics = [Topic(n, declared.get(n, {}).get("title", n), declared.get(n, {}).get("references")) for n in names]
    missing = [(s, t) for s in systems for t in names if t not in files[s]]
    return Corpus(folder, systems, topics, files, reference, missing)

"""Read a document (markdown, a LaTeX project, a PDF, a JATS XML article, or a folder of them) into a Document.

Every reader returns a :class:`Document` whose ``text`` is markdown, the form SurveyReview stores survey texts in
(SurveyReview §4.2: full text as markdown), with the venue's published review record removed by the same
leakage guard the dataset build applies (:func:`surveyalign.documents.strip_review_record`), so a survey is
judged on the same kind of input as the benchmark. ``Document.sections`` splits the text at its headings (with
character offsets into ``text``) and ``Document.references()`` reads its reference list. The training length
rule is applied later, when the prompt is built.

* markdown (``.md``, ``.markdown``, ``.txt``): read as is.
* LaTeX (``.tex``, the main file): includes resolved, user macros expanded with ``pylatexenc``, the bibliography
  rendered as a ``## References`` list and kept raw for knowledge augmentation
  (:mod:`surveyalign.documents.latex`).
* JATS XML (``.xml`` with an ``<article>`` root: F1000Research, PeerJ, Europe PMC): the article alone
  (:func:`surveyalign.documents.jats.parse_jats`); its sub-articles (referee reports, responses) are never read
  into the text.
* PDF: ``pypdf`` (BSD licence) by default; ``extractor="pymupdf4llm"`` (AGPL) or ``"marker"`` (GPL) use those
  optional packages when installed. pypdf's text gets its end-of-line hyphenation undone and its lone
  "Abstract"/"References" and numbered heading lines marked as markdown headings.
* a folder: the documents found by :func:`find_documents` (``read_documents``), or the single one
  (``read_document``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from surveyalign.documents.hidden import HiddenText, PdfHiddenText, clean_title, hidden_summary, scan_unicode
from surveyalign.documents.jats import JatsError, parse_jats
from surveyalign.documents.latex import latex_to_markdown
from surveyalign.documents.leakage import LeakageEdit, strip_review_record
from surveyalign.documents.limits import DocumentLimits
from surveyalign.documents.papers import ReferenceList, fix_ligatures
from surveyalign.documents.pdf import _optional_pdf_markdown, _pypdf_markdown
from surveyalign.documents.references import (
    parse_bibtex,
    parse_latex_bibliography,
    parse_markdown_references,
)
from surveyalign.documents.sections import Section, split_sections
from surveyalign.documents.text import extract_references, extract_title
from surveyalign.paths import inside_folder

__all__ = ["DOCUMENT_SUFFIXES", "PDF_EXTRACTORS", "Document", "find_documents", "read_document", "read_documents"]

#: File suffix -> document format.
DOCUMENT_SUFFIXES: dict[str, str] = {".md": "markdown", ".markdown": "markdown", ".txt": "markdown",
                                     ".tex": "latex", ".pdf": "pdf", ".xml": "jats"}
#: PDF text extractors: the default (permissive licence) first; the others are optional extras.
PDF_EXTRACTORS = ("pypdf", "pymupdf4llm", "marker")

DocumentFormat = Literal["markdown", "latex", "pdf", "jats"]


@dataclass
class Document:
    """A survey read from disk, as the judge will see it.

    Attributes:
        text: the survey as markdown, with the published review record removed (leakage guard).
        format: ``"markdown"``, ``"latex"``, ``"pdf"`` or ``"jats"``.
        title: the survey's title (``\\title``, PDF metadata, JATS ``article-title``, else the first heading or
            line).
        source: the file read (the main ``.tex`` for LaTeX).
        bibliography: raw bibliography for knowledge augmentation (LaTeX: the ``.bib`` text or the
            ``thebibliography`` block); ``None`` for markdown, PDF and JATS, whose references are in ``text``.
        bibliography_paths: the ``.bib``/``.bbl`` files read.
        bibliography_format: ``"bibtex"``, ``"thebibliography"``, ``"markdown"`` (the reference list is part of
            ``text``) or ``None`` (no reference list found).
        cited_keys: LaTeX citation keys in citation order (empty for other formats).
        files: every file read (LaTeX: the main file and its includes).
        extractor: the PDF extractor used (``None`` for other formats).
        leakage: what the leakage guard removed.
        warnings: problems met while reading (unresolved ``\\input``, missing ``.bib``, pages without text...).
        hidden: text a reader of the rendered document would not see
            (:class:`~surveyalign.documents.hidden.HiddenText`: LaTeX never rendered (dropped) or invisible
            (kept), white / tiny / invisible PDF text (kept), Unicode tags (removed), zero-width and bidi
            characters (kept in the text, removed from the title)).
    """

    text: str
    format: DocumentFormat
    title: str
    source: Path
    bibliography: str | None = None
    bibliography_paths: list[Path] = field(default_factory=list)
    bibliography_format: str | None = None
    cited_keys: list[str] = field(default_factory=list)
    files: list[Path] = field(default_factory=list)
    extractor: str | None = None
    leakage: LeakageEdit = field(default_factory=LeakageEdit)
    warnings: list[str] = field(default_factory=list)
    hidden: list[HiddenText] = field(default_factory=list)

    @property
    def bibliography_path(self) -> Path | None:
        """The first bibliography file read, or ``None``."""
        return self.bibliography_paths[0] if self.bibliography_paths else None

    @property
    def sections(self) -> list[Section]:
        """The sections of ``text`` (markdown headings; :func:`surveyalign.documents.split_sections`), each with
        its character offsets into ``text``."""
        return split_sections(self.text, latex=False)

    def references(self) -> ReferenceList:
        """The document's reference list as typed records.

        LaTeX with a bibliography: its ``.bib`` entries (:func:`parse_bibtex`) or ``\\bibitem`` entries
        (:func:`parse_latex_bibliography`); otherwise the ``References`` section of ``text``
        (:func:`parse_markdown_references`).

        Returns:
            The :class:`ReferenceList` (``path`` = ``source``; an empty list with a problem line when there is
            no reference list).
        """
        where = str(self.source)
        if self.format == "latex" and self.bibliography:
            if self.bibliography_format == "bibtex":
                return parse_bibtex(self.bibliography, path=where)
            return parse_latex_bibliography(self.bibliography, path=where)
        return parse_markdown_references(self.text, path=where)

    def to_dict(self, *, with_text: bool = False) -> dict[str, Any]:
        """A JSON-serialisable description (paths as strings; the text only when ``with_text``).

        Args:
            with_text: include ``text`` and ``bibliography``.

        Returns:
            Dict with format, title, source, files, bibliography paths/format, number of cited keys, extractor,
            characters, leakage counts and warnings.
        """
        out: dict[str, Any] = {
            "format": self.format, "title": self.title, "source": str(self.source),
            "files": [str(p) for p in self.files], "bibliography_paths": [str(p) for p in self.bibliography_paths],
            "bibliography_format": self.bibliography_format, "n_cited_keys": len(self.cited_keys),
            "extractor": self.extractor, "chars": len(self.text),
            "leakage": asdict(self.leakage),
            "warnings": list(self.warnings),
            "hidden_text": hidden_summary(self.hidden),
        }
        if with_text:
            out["text"], out["bibliography"] = self.text, self.bibliography
        return out


def _is_jats(path: Path) -> bool:
    with path.open("rb") as handle:
        head = handle.read(4096)
    return re.search(rb"<article[\s>]", head) is not None


def _is_latex_main(path: Path) -> bool:
    with path.open(encoding="utf-8", errors="replace") as handle:
        head = handle.read(200_000)
    return re.search(r"^[^%\n]*\\documentclass", head, re.MULTILINE) is not None


def find_documents(folder: Path | str) -> list[Path]:
    """The survey files under ``folder`` (recursively, hidden folders skipped), sorted by path.

    A ``.tex`` file counts only when it is a main file (it has ``\\documentclass``); the files it includes are
    read as part of it. A ``.md``/``.txt`` file next to a PDF or main ``.tex`` of the same stem is kept too (it is
    a document of its own: the caller decides).

    Args:
        folder: a directory.

    Returns:
        Paths of the markdown, main LaTeX, PDF and JATS (``<article>`` root) files found.

    Raises:
        NotADirectoryError: ``folder`` is not a directory.
        OutsideFolderError: a symlink under ``folder`` resolves outside it (named; nothing is read).
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise NotADirectoryError(f"{folder} is not a folder")
    found = []
    for path in inside_folder(folder, sorted(folder.rglob("*")), "survey folder"):
        if any(part.startswith(".") for part in path.relative_to(folder).parts) or not path.is_file():
            continue
        kind = DOCUMENT_SUFFIXES.get(path.suffix.lower())
        if kind is None or (kind == "latex" and not _is_latex_main(path)) or (kind == "jats" and not _is_jats(path)):
            continue
        found.append(path)
    return found


def _guarded(document: Document) -> Document:
    document.text, document.leakage = strip_review_record(document.text)
    if document.title:  # a \\title or JATS article-title can carry the status mark too
        document.title = " ".join(strip_review_record(document.title)[0].split())
    if document.leakage.changed:
        document.warnings.append(
            f"leakage guard removed {document.leakage.status_lines} peer-review status line(s) and "
            f"{document.leakage.record_sections} review-record section(s) ({document.leakage.chars_removed} chars)")
    return document


def _markdown_bibliography(text: str) -> str | None:
    return "markdown" if extract_references(text) else None


def _read_markdown(path: Path) -> Document:
    text = path.read_text(encoding="utf-8", errors="replace")
    if not text.strip():
        raise ValueError(f"{path}: the file is empty")
    return Document(text=text, format="markdown", title="", source=path, files=[path],
                    bibliography_format=_markdown_bibliography(text))


def _read_latex(path: Path, limits: DocumentLimits) -> Document:
    result = latex_to_markdown(path, limits=limits)
    return Document(text=result.text, format="latex", title=result.title, source=path,
                    bibliography=result.bibliography, bibliography_paths=result.bibliography_paths,
                    bibliography_format=result.bibliography_format, cited_keys=result.cited_keys,
                    files=result.files, warnings=result.warnings, hidden=list(result.hidden))


def _read_jats(path: Path) -> Document:
    try:
        article = parse_jats(path.read_bytes(), source=str(path))
    except JatsError as err:  # names the file already
        raise ValueError(f"not a readable JATS article: {err}") from None
    text = article.to_markdown()  # the article alone: sub-articles are never rendered
    warnings = [(f"{path.name}: {len(article.sub_articles)} sub-article(s) (referee reports, responses, decision "
                f"letters) left out of the text")] if article.sub_articles else []
    return Document(text=text, format="jats", title=article.title, source=path, files=[path],
                    bibliography_format=_markdown_bibliography(text), warnings=warnings)


def _read_pdf(path: Path, extractor: str, limits: DocumentLimits) -> Document:
    warnings: list[str] = []
    hidden = PdfHiddenText()
    text = (_pypdf_markdown(path, warnings, limits, hidden) if extractor == "pypdf"
            else _optional_pdf_markdown(path, extractor))
    return Document(text=text, format="pdf", title="", source=path, files=[path], extractor=extractor,
                    bibliography_format=_markdown_bibliography(text), warnings=warnings, hidden=hidden.found)


def read_document(path: Path | str, *, pdf_extractor: str = "pypdf", guard: bool = True,
                  limits: DocumentLimits | None = None) -> Document:
    """Read one document from a markdown, LaTeX, PDF or JATS XML file, or from a folder holding exactly one.

    Args:
        path: a ``.md``/``.markdown``/``.txt``, main ``.tex``, ``.pdf`` or JATS ``.xml`` file, or a folder with one
            of them (e.g. a LaTeX project folder).
        pdf_extractor: one of :data:`PDF_EXTRACTORS`; ``"pypdf"`` (default, BSD), ``"pymupdf4llm"`` (AGPL extra
            ``surveyalign[pdf-mupdf]``) or ``"marker"`` (GPL extra ``surveyalign[pdf-marker]``).
        guard: apply the leakage guard (:func:`surveyalign.documents.strip_review_record`), as the dataset build does;
            turn off only to inspect the raw conversion.
        limits: resource bounds for untrusted files (LaTeX include fan-out; PDF pages, decompressed bytes,
            seconds); default :meth:`DocumentLimits.from_env` (``SURVEYALIGN_DOCUMENT_LIMITS``).

    Returns:
        The :class:`Document` (markdown text, title, bibliography, files read, leakage counts, warnings).

    Raises:
        FileNotFoundError: ``path`` does not exist.
        ValueError: unsupported suffix, empty file, a ``.tex`` that is not a main file, an unreadable, encrypted
            or text-less PDF, malformed JATS XML, an unknown extractor, or a folder with no or several documents
            (the message names the path and what was found); :class:`DocumentLimitError` (a ``ValueError``) for
            a PDF over a limit (one line naming the file and the limit).
        ImportError: an optional PDF extractor that is not installed (the message names the extra).
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"survey {path} does not exist")
    if pdf_extractor not in PDF_EXTRACTORS:
        raise ValueError(f"unknown PDF extractor {pdf_extractor!r}; choose one of {list(PDF_EXTRACTORS)}")
    if path.is_dir():
        found = find_documents(path)
        if len(found) != 1:
            listed = ", ".join(str(p.relative_to(path)) for p in found[:10]) or "none"
            raise ValueError(f"{path}: expected one survey in the folder, found {len(found)} ({listed}); "
                             f"pass a file, or read them all with read_documents")
        path = found[0]
    kind = DOCUMENT_SUFFIXES.get(path.suffix.lower())
    if kind is None:
        raise ValueError(f"{path}: unsupported file type {path.suffix!r}; expected one of "
                         f"{sorted(DOCUMENT_SUFFIXES)}")
    if kind == "markdown":
        document = _read_markdown(path)
    elif kind == "latex":
        document = _read_latex(path, limits or DocumentLimits.from_env())
    elif kind == "jats":
        document = _read_jats(path)
    else:
        document = _read_pdf(path, pdf_extractor, limits or DocumentLimits.from_env())
    # ligature code points (U+FB00-FB06, left by PDF converters) spelled out in everything extracted
    document.text, document.title = fix_ligatures(document.text), fix_ligatures(document.title)
    document.bibliography = fix_ligatures(document.bibliography) if document.bibliography else document.bibliography
    document = _guarded(document) if guard else document
    document.text, in_text = scan_unicode(document.text, "text")
    document.title = document.title or extract_title(document.text)
    in_title = scan_unicode(document.title, "title")[1]
    document.hidden += in_text + in_title
    document.title = clean_title(document.title)
    if document.hidden:
        kinds = hidden_summary(document.hidden)["counts"]
        document.warnings.append(f"{path.name}: hidden text: " + ", ".join(f"{n} {k}" for k, n in kinds.items()))
    return document


def read_documents(paths: Iterable[Path | str], *, pdf_extractor: str = "pypdf", guard: bool = True,
                   limits: DocumentLimits | None = None, errors: list[str] | None = None) -> list[Document]:
    """Read several surveys; a folder contributes every document :func:`find_documents` finds in it.

    Args:
        paths: files and/or folders.
        pdf_extractor: see :func:`read_document`.
        guard: see :func:`read_document`.
        limits: see :func:`read_document`.
        errors: when a list is given, a file that cannot be read (``ValueError``: unreadable, over a limit) adds
            its one-line message here and the other files are still read; when ``None`` the first such file
            raises.

    Returns:
        One :class:`Document` per readable survey file, in the order given (folders in sorted path order).

    Raises:
        FileNotFoundError, ValueError, ImportError: as :func:`read_document` (the first failing file is named;
            with ``errors`` only a missing file, a folder without any document and a missing extra raise).
    """
    files: list[Path] = []
    for item in paths:
        item = Path(item)
        if item.is_dir():
            found = find_documents(item)
            if not found:
                raise ValueError(f"{item}: no survey found (looked for {', '.join(sorted(DOCUMENT_SUFFIXES))}; "
                                 f".tex files count only with \\documentclass)")
            files.extend(found)
        else:
            files.append(item)
    limits = limits or DocumentLimits.from_env()
    documents = []
    for path in files:
        if errors is None or not path.exists():
            documents.append(read_document(path, pdf_extractor=pdf_extractor, guard=guard, limits=limits))
            continue
        try:
            documents.append(read_document(path, pdf_extractor=pdf_extractor, guard=guard, limits=limits))
        except ValueError as exc:
            message = " ".join(str(exc).split())
            errors.append(message if str(path) in message else f"{path}: {message}")
    return documents

"""PDF text into markdown for :func:`~surveyalign.documents.readers.read_document`.

``_pypdf_markdown`` extracts the pages with pypdf inside the reading limits (:class:`DocumentLimits`: pages,
decompressed content bytes, seconds; over a limit raises :class:`DocumentLimitError` naming the file), drops control
characters, rejoins hyphenated line breaks and turns numbered and lone section headings into markdown headings.
``_optional_pdf_markdown`` runs the optional extractors (``pymupdf4llm``, ``marker``) when installed.
"""

from __future__ import annotations

import contextlib
import re
import time
import zlib
from pathlib import Path
from typing import Any

from surveyalign.documents.hidden import PdfHiddenText
from surveyalign.documents.limits import (
    DOCUMENT_LIMITS_ENV,
    DocumentLimitError,
    DocumentLimits,
)

_CONTROL_RE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
_HYPHEN_RE = re.compile(r"(?<=[a-z])-\n(?=[a-z])")
_NUMBERED_HEADING_RE = re.compile(r"^(?P<num>\d{1,2}(?:\.\d{1,2}){0,2})\.?[ \t]+(?P<title>[A-Z][^\n]{1,80})$",
                                  re.MULTILINE)
_LONE_SECTION_RE = re.compile(r"^[ \t]*(?P<name>Abstract|References|Bibliography|Acknowledge?ments?)[ \t]*$",
                              re.MULTILINE | re.IGNORECASE)


class _OutOfTime(Exception):
    """Raised inside pypdf's text extraction when a PDF's time budget is spent."""


def _content_bytes(page: Any) -> int:
    """Decompressed bytes of a page's content stream(s) (decoding is bounded by pypdf's configured limits)."""
    contents = page.get("/Contents")
    if contents is None:
        return 0
    contents = contents.get_object()
    streams = contents if isinstance(contents, list) else [contents]
    return sum(len(s.get_object().get_data()) for s in streams)


def _shared_stream(reader: Any, limits: DocumentLimits) -> str | None:
    """The first content stream over ``pdf_max_shared_stream_bytes`` that two or more pages use, described as
    ``"pages 1, 2, ... share one content stream of N bytes"``; ``None`` when there is none."""
    users: dict[tuple[int, int], list[int]] = {}
    for number, page in enumerate(reader.pages, 1):
        raw = dict.get(page, "/Contents")  # the reference as written, not resolved
        for ref in (raw if isinstance(raw, list) else [raw]):
            if hasattr(ref, "idnum"):
                users.setdefault((ref.idnum, ref.generation), []).append(number)
    for (idnum, generation), numbers in users.items():
        if len(numbers) > 1:
            size = len(reader.get_object(idnum).get_data())
            if size > limits.pdf_max_shared_stream_bytes:
                shown = ", ".join(map(str, numbers[:10])) + (", ..." if len(numbers) > 10 else "")
                return f"pages {shown} share one content stream of {size:,} bytes"
    return None


def _pdf_limited(path: Path, limits: DocumentLimits, hidden: PdfHiddenText | None = None) -> tuple[list[str], str]:
    """Page texts and metadata title of a PDF, within ``limits`` (pages, decompressed bytes, seconds); ``hidden``
    lists the white, tiny and invisible text it meets."""
    from pypdf import PdfReader
    from pypdf.errors import DependencyError

    def over(what: str) -> DocumentLimitError:
        return DocumentLimitError(f"{path}: {what}; not read (set {DOCUMENT_LIMITS_ENV} to raise the limit)")

    start = time.monotonic()
    reader = PdfReader(path)
    if reader.is_encrypted:  # an empty user password (owner-only restrictions) opens; a real one is refused
        try:
            opened = reader.decrypt("")
        except (DependencyError, NotImplementedError) as exc:
            raise ValueError(f"{path}: the PDF is encrypted with a scheme pypdf cannot open here "
                             f"({' '.join(str(exc).split())}); decrypt it first (e.g. qpdf --decrypt)") from None
        if not opened:
            raise ValueError(f"{path}: the PDF is protected by a password; decrypt it first "
                             f"(e.g. qpdf --password=... --decrypt)")
    n_pages = len(reader.pages)
    if n_pages > limits.pdf_max_pages:
        raise over(f"{n_pages} pages, above pdf_max_pages={limits.pdf_max_pages}")
    content = 0
    for number, page in enumerate(reader.pages, 1):  # decompression only (bounded per stream): no parsing yet
        content += _content_bytes(page)
        if content > limits.pdf_max_content_bytes:
            raise over(f"the content of pages 1-{number} decompresses to over {limits.pdf_max_content_bytes:,} "
                       f"bytes (pdf_max_content_bytes; a decompression bomb or a stream shared by many pages?)")
        if time.monotonic() - start > limits.pdf_max_seconds:
            raise over(f"decompressing took over pdf_max_seconds={limits.pdf_max_seconds:g} s")
    if (shared := _shared_stream(reader, limits)) is not None:  # parsed once per page: refused before parsing
        raise over(f"{shared}, above pdf_max_shared_stream_bytes={limits.pdf_max_shared_stream_bytes:,} (a PDF "
                   "built to make the reader parse one stream once per page?)")
    deadline = start + limits.pdf_max_seconds

    def check(*args: object) -> None:  # called by pypdf before every content operator
        if time.monotonic() > deadline:
            raise _OutOfTime
        if hidden is not None and len(args) == 4:
            hidden.operator(*args)

    pages = []
    for number, page in enumerate(reader.pages, 1):
        try:
            check()
            if hidden is not None:
                hidden.start_page(number)
            pages.append(page.extract_text(visitor_operand_before=check) or "")
            if hidden is not None:
                hidden.end_page()
        except _OutOfTime:
            raise over(f"text extraction took over pdf_max_seconds={limits.pdf_max_seconds:g} s "
                       f"(stopped in page {number} of {n_pages})") from None
    meta_title = (reader.metadata.title or "").strip() if reader.metadata else ""
    return pages, meta_title


def _pypdf_markdown(path: Path, warnings: list[str], limits: DocumentLimits | None = None,
                    hidden: PdfHiddenText | None = None) -> str:
    import pypdf
    from pypdf.errors import LimitReachedError, PdfReadError, PyPdfError

    limits = limits or DocumentLimits.from_env()
    cap = limits.pdf_max_content_bytes
    bounded = {"zlib_maximum_output_length": cap, "lzw_maximum_output_length": cap,
               "run_length_maximum_output_length": cap, "maximum_declared_stream_length": cap,
               "array_based_stream_maximum_output_length": cap, "stream_decoding_work_maximum_length": 4 * cap}
    config = (pypdf.apply_configuration(**bounded) if hasattr(pypdf, "apply_configuration")
              else contextlib.nullcontext())
    try:
        with config:
            pages, meta_title = _pdf_limited(path, limits, hidden)
    except LimitReachedError as exc:
        raise DocumentLimitError(f"{path}: a stream decompresses to over {cap:,} bytes (pdf_max_content_bytes; a "
                                 f"decompression bomb?): {' '.join(str(exc).split())}; not read") from None
    except (PdfReadError, PyPdfError) as exc:
        raise ValueError(f"{path}: not a readable PDF ({' '.join(str(exc).split())})") from None
    except (MemoryError, RecursionError, zlib.error, KeyError, TypeError, AttributeError) as exc:
        raise ValueError(f"{path}: not a readable PDF ({type(exc).__name__}: {' '.join(str(exc).split())})") from None
    empty = [i + 1 for i, page in enumerate(pages) if not page.strip()]
    if len(empty) == len(pages):
        raise ValueError(f"{path}: no extractable text in {len(pages)} page(s) (a scanned PDF?); run OCR first or "
                         f"use --pdf-extractor marker (pip install surveyalign[pdf-marker])")
    if empty:
        warnings.append(f"{path.name}: {len(empty)} of {len(pages)} page(s) have no extractable text: "
                        f"{', '.join(map(str, empty[:20]))}")
    text = _HYPHEN_RE.sub("", _CONTROL_RE.sub("", "\n\n".join(page.strip() for page in pages)))

    def heading(match: re.Match) -> str:
        title = match.group("title").strip()
        if len(title.split()) > 12 or title[-1] in ".,;:" or re.search(r"\d{3,}", title):
            return match.group(0)
        depth = match.group("num").count(".") + 2
        return f"\n{'#' * depth} {match.group('num')} {title}\n"

    text = _NUMBERED_HEADING_RE.sub(heading, text)
    text = _LONE_SECTION_RE.sub(lambda m: f"\n## {m.group('name').strip()}\n", text)
    # the title becomes the level-1 heading: the first line when it is the metadata title (or there is none)
    first = re.search(r"^[ \t]*(\S[^\n]*)$", text, re.MULTILINE)
    if first and (not meta_title or " ".join(first.group(1).split()) == " ".join(meta_title.split())):
        text = f"{text[:first.start()]}# {first.group(1).strip()}\n{text[first.end():]}"
    elif meta_title:
        text = f"# {meta_title}\n\n{text}"
    return re.sub(r"\n{3,}", "\n\n", text).strip() + "\n"


def _optional_pdf_markdown(path: Path, extractor: str) -> str:
    try:
        if extractor == "pymupdf4llm":
            import pymupdf4llm

            return pymupdf4llm.to_markdown(str(path))
        from marker.converters.pdf import PdfConverter
        from marker.models import create_model_dict
        from marker.output import text_from_rendered
    except ImportError as exc:
        extra = "pdf-mupdf" if extractor == "pymupdf4llm" else "pdf-marker"
        raise ImportError(f"PDF extractor {extractor!r} is not installed: pip install surveyalign[{extra}] "
                          f"(its licence is {'AGPL' if extra == 'pdf-mupdf' else 'GPL'}; pypdf is the default)"
                          ) from exc
    rendered = PdfConverter(artifact_dict=create_model_dict())(str(path))
    return text_from_rendered(rendered)[0]

"""Resource limits for reading untrusted documents: LaTeX include fan-out and PDF bombs.

A downloaded LaTeX project or PDF can be built to exhaust the reader: 31 small ``.tex`` files that each include the
next twice splice 2^31 copies; a 290 KB PDF stream inflates to 300 MB; a 12.5 KB, 16-page PDF whose pages share
one 4 MB content stream makes the text extractor parse 64 MB. :class:`DocumentLimits` bounds each of these per
document; every limit reached becomes a one-line ``ValueError`` naming the file (PDF) or a warning naming the file
and line (LaTeX includes), and a batch read with :func:`surveyalign.documents.read_documents` goes on with the
other files.

Defaults are far above any real survey (a 100-page survey has about 2 MB of page content and under 100 include
files) and can be changed per call (``read_document(..., limits=DocumentLimits(pdf_max_pages=50))``) or for a
whole command with the environment variable ``SURVEYALIGN_DOCUMENT_LIMITS``, e.g.
``SURVEYALIGN_DOCUMENT_LIMITS="pdf_max_pages=500,latex_max_files=100"``.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass

__all__ = ["DOCUMENT_LIMITS_ENV", "DocumentLimitError", "DocumentLimits"]

#: Environment variable read by :meth:`DocumentLimits.from_env` (``name=value`` pairs, comma-separated).
DOCUMENT_LIMITS_ENV = "SURVEYALIGN_DOCUMENT_LIMITS"


class DocumentLimitError(ValueError):
    """A document reached one of its :class:`DocumentLimits`; the message is one line naming the file."""


@dataclass(frozen=True)
class DocumentLimits:
    """Per-document bounds for the LaTeX and PDF readers.

    Attributes:
        latex_max_files: most include splices per project (each ``\\input``/``\\include``/``\\subfile``/``\\import``
            that is spliced counts once, also when the same file is spliced again); >= 1.
        latex_max_chars: most characters in the spliced text; >= 1.
        latex_max_depth: deepest include nesting (the main file is depth 0); deeper includes are a *depth stop*
            (a warning), not a cycle; >= 1.
        pdf_max_pages: most pages in one PDF; >= 1.
        pdf_max_content_bytes: most decompressed page-content bytes over the whole PDF (a content stream shared by
            several pages counts once per page, as the extractor parses it once per page); also the cap on any
            single decompressed stream; >= 1.
        pdf_max_seconds: most wall-clock seconds of text extraction per PDF (checked between pages); > 0.
        pdf_max_shared_stream_bytes: most decompressed bytes of a content stream that several pages use (the
            extractor parses it once per page: 8 pages sharing a 4 MB stream take minutes, while real pages share
            only small streams); a PDF over it is refused before any page is parsed; >= 1.
    """

    latex_max_files: int = 500
    latex_max_chars: int = 20_000_000
    latex_max_depth: int = 32
    pdf_max_pages: int = 2_000
    pdf_max_content_bytes: int = 32_000_000
    pdf_max_seconds: float = 120.0
    pdf_max_shared_stream_bytes: int = 1_000_000

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
                raise ValueError(f"document limit {f.name} must be a positive number, got {value!r}")

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None) -> DocumentLimits:
        """The defaults, overridden by ``SURVEYALIGN_DOCUMENT_LIMITS`` (``name=value,...``) when set.

        Raises:
            ValueError: an unknown name or a value that is not a positive number (the message names the variable).
        """
        raw = (os.environ if environ is None else environ).get(DOCUMENT_LIMITS_ENV, "").strip()
        if not raw:
            return cls()
        names = {f.name: f.type for f in dataclasses.fields(cls)}
        values: dict[str, float | int] = {}
        for part in filter(None, (p.strip() for p in raw.split(","))):
            name, _, value = part.partition("=")
            name = name.strip()
            if name not in names:
                raise ValueError(f"{DOCUMENT_LIMITS_ENV}: unknown limit {name!r}; known: {', '.join(names)}")
            try:
                values[name] = float(value) if name == "pdf_max_seconds" else int(value)
            except ValueError:
                raise ValueError(f"{DOCUMENT_LIMITS_ENV}: {name}={value!r} is not a number") from None
        try:
            return cls(**values)
        except ValueError as exc:
            raise ValueError(f"{DOCUMENT_LIMITS_ENV}: {exc}") from None

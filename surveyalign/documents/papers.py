"""The typed paper and reference records shared by the scholarly API clients, the citation graph and the KA builders.

One :class:`Paper` holds what SurveyReview §5.2 needs of a node of the citation graph: its identifiers (DOI,
OpenAlex, Semantic Scholar, arXiv), title, year, citation count, abstract, authors, and the ids of the papers
it cites (``reference_ids``) and of those citing it (``citing_ids``). The count an API *reports*
(``reference_count``) is kept apart from the list it *returned*, so a record whose list came back empty while
its count is not is marked incomplete (:attr:`Paper.references_status`) instead of being read as "cites
nothing".
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = [
    "LIGATURES",
    "REFERENCE_FORMATS",
    "REFERENCE_STATUSES",
    "Paper",
    "Reference",
    "ReferenceList",
    "first_author_surname",
    "fix_ligatures",
    "normalise_arxiv",
    "normalise_doi",
    "year_in_text",
]

#: Input formats a reference list can come from (values of :attr:`Reference.source`).
REFERENCE_FORMATS: tuple[str, ...] = ("bibtex", "latex", "markdown", "tei", "jats")

#: Latin ligature code points U+FB00-FB06 (what PDF text extraction leaves: "Eﬃcient") -> their letters.
LIGATURES: dict[str, str] = {"\ufb00": "ff", "\ufb01": "fi", "\ufb02": "fl", "\ufb03": "ffi", "\ufb04": "ffl",
                             "\ufb05": "st", "\ufb06": "st"}
_LIGATURE_TABLE = str.maketrans(LIGATURES)


def fix_ligatures(text: str) -> str:
    """Replace the ligature code points U+FB00-FB06 by their letters ("Eﬃcient" -> "Efficient").

    Args:
        text: any extracted text (PDF page text, a title, a reference entry).

    Returns:
        The text with every ligature spelled out (other characters untouched; same text when there is none).
    """
    return text.translate(_LIGATURE_TABLE) if text else text

#: Values of :attr:`Paper.references_status`.
REFERENCE_STATUSES: tuple[str, ...] = ("complete", "partial", "incomplete", "unknown")

_YEAR = re.compile(r"(?<![\d.])((?:19|20)\d\d)(?![\d])")
_DOI_PREFIX = re.compile(r"^(?:https?://(?:dx\.)?doi\.org/|doi:\s*)", re.IGNORECASE)
_DOI_SHAPE = re.compile(r"^10\.\d{4,9}/\S+$")
_ARXIV_PREFIX = re.compile(r"^(?:https?://arxiv\.org/(?:abs|pdf)/|arxiv:\s*)", re.IGNORECASE)
_ARXIV_NEW = re.compile(r"^(\d{4}\.\d{4,5})(?:v\d+)?(?:\.pdf)?$")
_ARXIV_OLD = re.compile(r"^([a-z\-]+(?:\.[A-Z]{2})?/\d{7})(?:v\d+)?$", re.IGNORECASE)


def year_in_text(text: str | None) -> int | None:
    """The first year 1900-2099 written in ``text`` (``"June 2016"`` -> 2016), or ``None``.

    Args:
        text: any text: a BibTeX ``year`` field, a TEI ``when`` attribute, a free-text reference.

    Returns:
        The year, or ``None`` when none is written (digits inside a longer number do not count).
    """
    found = _YEAR.search(text or "")
    return int(found.group(1)) if found else None


def normalise_doi(value: str | None) -> str | None:
    """Return a DOI in canonical form (lower case, no resolver prefix), or ``None``.

    Args:
        value: a DOI as found in a record: ``"10.1038/X"``, ``"https://doi.org/10.1038/x"``, ``"doi:10..."``.

    Returns:
        ``"10.1038/x"``; ``None`` for empty input or a string that is not shaped like a DOI (``10.NNNN/...``).
    """
    if not value:
        return None
    text = unicodedata.normalize("NFKC", str(value)).strip().rstrip(".,;")
    text = _DOI_PREFIX.sub("", text).strip().lower()
    return text if _DOI_SHAPE.match(text) else None


def normalise_arxiv(value: str | None) -> str | None:
    """Return an arXiv identifier without version or URL (``"2106.01234"``, ``"cs.cl/0101001"``), or ``None``.

    Args:
        value: ``"arXiv:2106.01234v2"``, ``"https://arxiv.org/abs/2106.01234"``, ``"hep-th/9901001"``...

    Returns:
        The bare identifier in lower case; ``None`` for empty input or anything not shaped like one.
    """
    if not value:
        return None
    text = _ARXIV_PREFIX.sub("", str(value).strip())
    for pattern in (_ARXIV_NEW, _ARXIV_OLD):
        found = pattern.match(text)
        if found:
            return found.group(1).lower()
    return None


def first_author_surname(authors: list[str]) -> str | None:
    """The family name of the first author in ``authors``.

    Args:
        authors: names as written: ``"Ashish Vaswani"``, ``"A. Vaswani"`` or ``"Vaswani, Ashish"``.

    Returns:
        ``"Vaswani"`` for each of those; ``None`` for an empty list or a name made only of initials.
    """
    if not authors:
        return None
    name = authors[0].strip()
    if "," in name:
        return name.split(",", 1)[0].strip() or None
    parts = [part for part in name.replace(".", ". ").split() if not part.endswith(".")]
    return parts[-1] if parts else None


@dataclass(slots=True)
class Paper:
    """One paper of a citation graph (a node), as returned by the clients and stored by the graph.

    Attributes:
        id: the graph id (unique within one graph): an OpenAlex id (``"W2741809807"``), a Semantic Scholar
            paper id (40 hex chars), a DOI, or any other stable string; never empty.
        title: the title as published (``""`` when the source has none; kept and counted, never dropped).
        year: publication year, or ``None`` when unknown.
        citation_count: number of citing papers the source reports (>= 0), or ``None`` when unknown.
        reference_count: number of references the source reports (>= 0), or ``None`` when unknown. Kept apart
            from ``reference_ids`` on purpose: see :attr:`references_status`.
        abstract: the abstract (``""`` when unknown).
        authors: author names in order, ``"Given Family"`` or as the source writes them.
        doi: canonical DOI (:func:`normalise_doi`) or ``None``.
        openalex_id: ``"W..."`` or ``None``.
        s2_id: Semantic Scholar ``paperId`` or ``None``.
        arxiv_id: canonical arXiv id (:func:`normalise_arxiv`) or ``None``.
        reference_ids: graph ids of the papers this one cites, in source order; empty strings from the source
            (an unresolved reference) are kept so they can be counted.
        citing_ids: graph ids of papers citing this one that the source listed (usually a sample).
        source: where the record came from (``"openalex"``, ``"semanticscholar"``, ``"opencitations"``,
            ``"jsonl"``...).
    """

    id: str
    title: str = ""
    year: int | None = None
    citation_count: int | None = None
    reference_count: int | None = None
    abstract: str = ""
    authors: list[str] = field(default_factory=list)
    doi: str | None = None
    openalex_id: str | None = None
    s2_id: str | None = None
    arxiv_id: str | None = None
    reference_ids: list[str] = field(default_factory=list)
    citing_ids: list[str] = field(default_factory=list)
    source: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.id, str) or not self.id.strip():
            raise ValueError(f"a paper needs a non-empty id (title {self.title!r})")
        self.title = fix_ligatures(self.title or "")
        self.abstract = fix_ligatures(self.abstract or "")
        self.doi = normalise_doi(self.doi)
        self.arxiv_id = normalise_arxiv(self.arxiv_id)

    @property
    def first_author_surname(self) -> str | None:
        """The first author's family name (``"Vaswani"`` of ``"Ashish Vaswani"``), or ``None``."""
        return first_author_surname(self.authors)

    @property
    def n_empty_reference_ids(self) -> int:
        """How many entries of ``reference_ids`` are empty strings (references the source could not resolve)."""
        return sum(1 for ref in self.reference_ids if not ref)

    @property
    def references_status(self) -> str:
        """How far ``reference_ids`` can be trusted as the paper's reference list.

        Returns:
            ``"complete"``: the list has at least as many resolved ids as the reported count;
            ``"partial"``: fewer resolved ids than the reported count, but some;
            ``"incomplete"``: no resolved id although the reported count is > 0 (never read this as
            "0 references");
            ``"unknown"``: neither a count nor ids.
        """
        resolved = len(self.reference_ids) - self.n_empty_reference_ids
        if self.reference_count is None:
            return "complete" if resolved else "unknown"
        if resolved >= self.reference_count:
            return "complete"
        return "partial" if resolved else "incomplete"

    def to_dict(self) -> dict[str, Any]:
        """Return the record as a JSON-serialisable dict (the JSONL / parquet row)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, row: dict[str, Any], *, where: str = "record") -> Paper:
        """Build a record from a dict with the field names of :class:`Paper` (unknown keys are an error).

        Args:
            row: the mapping (a JSONL line, a parquet row).
            where: names the file and line in error messages, e.g. ``"graph.jsonl line 7"``.

        Returns:
            The paper.

        Raises:
            ValueError: a missing/empty ``id``, an unknown field or a field of the wrong type (the message
                names ``where`` and the field).
        """
        if not isinstance(row, dict):
            raise ValueError(f"{where}: expected a JSON object, got {type(row).__name__}")  # noqa: TRY004 (bad input file: a user error, exit 2)
        unknown = sorted(set(row) - set(cls.__dataclass_fields__))
        if unknown:
            raise ValueError(f"{where}: unknown field(s) {unknown}; known: {sorted(cls.__dataclass_fields__)}")
        values = dict(row)
        for name in ("year", "citation_count", "reference_count"):
            value = values.get(name)
            if value is not None and not isinstance(value, bool):
                try:
                    values[name] = int(value)
                except (TypeError, ValueError):
                    raise ValueError(f"{where}: field {name!r} must be an integer, got {value!r}") from None
        for name in ("authors", "reference_ids", "citing_ids"):
            value = values.get(name)
            if value is None:
                values[name] = []
            elif not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
                raise ValueError(f"{where}: field {name!r} must be a list of strings")
            else:
                values[name] = list(value)
        for name in ("title", "abstract", "source"):
            values[name] = values.get(name) or ""
        try:
            return cls(**values)
        except (TypeError, ValueError) as err:
            raise ValueError(f"{where}: {err}") from None


@dataclass(slots=True)
class Reference:
    """One entry of a survey's reference list.

    Attributes:
        key: the entry's key: the BibTeX / ``\\bibitem`` key, the number label of a numbered list (``"12"``),
            or ``"ref-N"`` (N = position, from 1) when the source has none.
        title: the cited work's title (``""`` when it could not be read).
        authors: author names as written (``"Ashish Vaswani"`` or ``"Vaswani, Ashish"``).
        year: publication year, or ``None``.
        doi: canonical DOI or ``None``.
        arxiv_id: canonical arXiv id or ``None``.
        venue: journal / proceedings / publisher as written (``""`` when unknown).
        raw: the entry's source text (for reports and manual checks).
        source: one of :data:`REFERENCE_FORMATS`.
    """

    key: str
    title: str = ""
    authors: list[str] = field(default_factory=list)
    year: int | None = None
    doi: str | None = None
    arxiv_id: str | None = None
    venue: str = ""
    raw: str = ""
    source: str = ""

    def __post_init__(self) -> None:
        self.title, self.venue, self.raw = (fix_ligatures(self.title), fix_ligatures(self.venue),
                                            fix_ligatures(self.raw))
        self.authors = [fix_ligatures(name) for name in self.authors]
        self.doi = normalise_doi(self.doi)
        self.arxiv_id = normalise_arxiv(self.arxiv_id)

    @property
    def first_author_surname(self) -> str | None:
        """The first author's family name (``"Vaswani"``), or ``None`` when no author was read."""
        return first_author_surname(self.authors)

    def to_dict(self) -> dict[str, Any]:
        """Return the entry as a JSON-serialisable dict."""
        return asdict(self)


@dataclass
class ReferenceList:
    """What a reader found: the entries in source order and the entries it could not read.

    Attributes:
        references: the parsed entries.
        problems: one line per entry that could not be read (position and reason); those entries are
            not in ``references``.
        format: the input format (one of :data:`REFERENCE_FORMATS`).
        path: the file read, when the list came from a file.
        cited_up_to: the highest citation number (``[n]``) found in the document's text when the list was checked
            against it (:func:`surveyalign.documents.check_reference_count`), else ``None``.
    """

    references: list[Reference]
    problems: list[str] = field(default_factory=list)
    format: str = ""
    path: str | None = None
    cited_up_to: int | None = None

    @property
    def shortfall(self) -> int | None:
        """How many entries fewer than the highest citation number in the text (``[1]``-``[6]`` cited, 3 entries
        read: 3); 0 when the list is long enough, ``None`` when the text was not checked (:attr:`cited_up_to`)."""
        return None if self.cited_up_to is None else max(0, self.cited_up_to - len(self.references))

    def summary(self) -> dict[str, Any]:
        """What a report shows: entries read, the highest citation number in the text, the shortfall, problems."""
        return {"path": self.path, "format": self.format, "n_references": len(self.references),
                "cited_up_to": self.cited_up_to, "shortfall": self.shortfall,
                "n_problems": len(self.problems), "problems": list(self.problems)}

    def __len__(self) -> int:
        return len(self.references)

    def keys(self) -> list[str]:
        """The entries' keys in order."""
        return [ref.key for ref in self.references]

    def select(self, keys: list[str]) -> tuple[list[Reference], list[str]]:
        """Return the entries whose key is in ``keys`` (in ``keys`` order) and the keys with no entry.

        Args:
            keys: cited keys, e.g. from :func:`cited_keys` (compared case-insensitively, as BibTeX does;
                a key given twice in the list gives its entry twice).

        Returns:
            ``(found, missing)``: the matching entries, and the keys that have none (kept, to report).
        """
        by_key: dict[str, Reference] = {}
        for ref in self.references:
            by_key.setdefault(ref.key.lower(), ref)
        found = [by_key[key.lower()] for key in keys if key.lower() in by_key]
        return found, [key for key in keys if key.lower() not in by_key]

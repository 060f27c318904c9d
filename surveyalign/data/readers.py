"""Readers for the two SurveyReview release layouts (SurveyReview §4, App. A-B).

* Per-dimension layout: ``<folder>/<dimension>.json`` arrays of ``{"uid", "score", "reasons"}`` (one record per
  review; a uid may repeat) plus ``articles*.json`` objects ``{uid: markdown}``.
* Raw/grouped layout: JSON arrays (or JSON lines) of one review per record ``{"uid", "paper_title",
  "paper_abstract", "review_content", "source", "result": [{"dimension", "score", "reasons"}]}``.

Both are read into :class:`RawUnit` objects; score 0 and -3 units are counted, not kept.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from surveyalign.constants import DIMENSIONS, SOURCES, Dimension

from .layout import (
    RECORD_SETS,
    declared_split,
    is_sample_file,
    portable_names,
    record_set_of,
)
from .schema import ReleaseFormatError, row_dimension

#: Raw annotation space (App. A): 0 = not mentioned, -3 = unjudgeable, both excluded.
RAW_SCORES = (-3, -2, -1, 0, 1, 2)
EXCLUDED_SCORES = (0, -3)

_SOURCE_ALIASES = {
    "f1000": "f1000",
    "f1000research": "f1000",
    "f1000 research": "f1000",
    "moprd": "moprd",
    "openreview": "openreview",
    "open review": "openreview",
    "unknown": "unknown",
}
_UID_SOURCE_RE = re.compile(r"^(f1000|moprd|openreview)[-_]", re.IGNORECASE)
#: MOPRD review uids "<source>-<paper>-<version>-r<reviewer>" encode the paper.
_UID_PAPER_RE = re.compile(r"^(?P<paper>[A-Za-z0-9]+[-_][A-Za-z0-9.]+)[-_](?:v?(?P<version>\d+))[-_]r\d+$")
_F1000_DOI_RE = re.compile(r"10\.12688/f1000research\.\d+", re.IGNORECASE)
#: Files our own commands write next to release files (`data fetch-texts` may write into the release folder);
#: never read as release data.
FETCH_REPORT_FILE = "fetch_report.json"
FETCH_STATE_FILE = "fetch_state.jsonl"
#: The provenance file `surveyalign data release` writes into a release it makes (surveyalign.annotation).
PROVENANCE_FILE = "provenance.json"
#: Each unit's final label with the rule that decided it, written by `surveyalign data release` beside the release.
FINAL_LABELS_FILE = "final_labels.jsonl"
TOOL_REPORT_FILES = ("build_report.json", FETCH_REPORT_FILE, FETCH_STATE_FILE, PROVENANCE_FILE, FINAL_LABELS_FILE)
_TEXT_FIELDS = ("paper_text", "paper_content", "paper_markdown", "text", "markdown")


@dataclass
class RawUnit:
    """One annotated (review, dimension) record before paper identity and splitting.

    Attributes:
        review_id: review identifier (raw layout: the uid; per-dimension layout: ``f"{uid}-r{k}"``,
            k = 1-based occurrence of the uid in that dimension's files).
        article_key: key of the survey text (uid or the paper key the uid encodes).
        paper_key: paper identifier the uid encodes, or None.
        dimension: lower-case dimension name.
        score: raw score in {-3,-2,-1,0,1,2}.
        rationales: rationale snippets.
        title: paper title from the record ("" when absent).
        abstract: paper abstract from the record ("" when absent).
        source: source named by the record (normalised) or None.
        text: text carried by the record itself, or None.
        origin: "file#index" of the record (index counted from 0), for error messages and reports.
        uid: the record's uid as written in the release.
        declared_split: "train" or "test" when the record's file names its split, else None
            (:func:`declared_split`).
    """

    review_id: str
    article_key: str
    paper_key: str | None
    dimension: str
    score: int
    rationales: list[str]
    title: str = ""
    abstract: str = ""
    source: str | None = None
    text: str | None = None
    origin: str = ""
    uid: str = ""
    declared_split: str | None = None


@dataclass
class Release:
    """Everything read from one release folder.

    Attributes:
        units: every record with a valid score, including 0/-3 (filtered by the builder).
        articles: ``{key: markdown}`` merged from every articles file.
        source_map: ``{uid or paper key: source}`` from a mapping file.
        files: input files read (sorted), for hashing and the report.
        records_read: per input file, number of records read.
        layouts: layouts found ("per_dimension", "raw").
        record_set: annotation set of the review-sample files used ("grouped" or "raw"), or None when there are
            none.
        record_set_reason: why that set was used.
        ignored_files: sample files of the other annotation set, not read.
        declared_files: ``{file: declared split}`` of the label files that name one.
        warnings: problems that do not stop the build (e.g. a dimension file holding ``[]``).
    """

    units: list[RawUnit] = field(default_factory=list)
    articles: dict[str, str] = field(default_factory=dict)
    source_map: dict[str, str] = field(default_factory=dict)
    files: list[Path] = field(default_factory=list)
    records_read: dict[str, int] = field(default_factory=dict)
    layouts: list[str] = field(default_factory=list)
    record_set: str | None = None
    record_set_reason: str = ""
    ignored_files: list[Path] = field(default_factory=list)
    declared_files: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


def normalise_source(value: object, *, path: Path | str, record: str | None, field_name: str) -> str:
    """Map a source name ("F1000Research", "OpenReview", "moprd", ...) onto :data:`SOURCES`.

    Args:
        value: the raw source value of a record or mapping file (case and spaces ignored).
        path: file the value came from (named in the error).
        record: record index or uid (named in the error), or None.
        field_name: field the value came from (named in the error).

    Returns:
        One of "f1000", "moprd", "openreview", "unknown" (the sources of SurveyReview §4).

    Raises:
        ReleaseFormatError: for any other value.
    """
    key = str(value).strip().lower() if isinstance(value, str) else None
    if key is None or key not in _SOURCE_ALIASES:
        raise ReleaseFormatError(
            path, f"unknown source {value!r}; expected one of {', '.join(SOURCES)}", record=record, field=field_name
        )
    return _SOURCE_ALIASES[key]


def source_from_uid(uid: str) -> str | None:
    """Source encoded as a uid prefix ("f1000-12", "moprd-9001-1-r1", "openreview-77"), else None."""
    m = _UID_SOURCE_RE.match(uid)
    return m.group(1).lower() if m else None


def paper_key_from_uid(uid: str) -> str | None:
    """Paper key encoded by a MOPRD-style review uid ("moprd-9001-1-r1" -> "moprd-9001"), else None."""
    m = _UID_PAPER_RE.match(uid)
    return m.group("paper") if m else None


def version_from_uid(uid: str) -> int | None:
    """Paper version a MOPRD-style review uid names ("moprd-9001-2-r1" -> 2), else None."""
    m = _UID_PAPER_RE.match(uid)
    return int(m.group("version")) if m else None


def source_from_text(text: str) -> str | None:
    """"f1000" when the text carries an F1000Research DOI (10.12688/f1000research.N), else None."""
    return "f1000" if text and _F1000_DOI_RE.search(text) else None


def _parse_score(value: object, *, path: Path, record: str, field_name: str = "score") -> int:
    if value is None:
        raise ReleaseFormatError(path, "missing score", record=record, field=field_name)
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ReleaseFormatError(path, f"score must be a number, got {value!r}", record=record, field=field_name)
    try:
        number = float(value)
    except ValueError:
        raise ReleaseFormatError(path, f"score must be a number, got {value!r}", record=record, field=field_name)
    if not math.isfinite(number) or number != int(number) or int(number) not in RAW_SCORES:
        raise ReleaseFormatError(
            path,
            f"score {value!r} is outside the annotation space {{-3,-2,-1,0,1,2}}",
            record=record,
            field=field_name,
        )
    return int(number)


def _parse_reasons(value: object, *, path: Path, record: str, field_name: str = "reasons") -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value] if value.strip() else []
    if not isinstance(value, list) or not all(isinstance(r, str) for r in value):
        raise ReleaseFormatError(path, "reasons must be a list of strings", record=record, field=field_name)
    return [r.strip() for r in value if r.strip()]


def _load_json(path: Path):
    try:
        text = path.read_text(encoding="utf-8")
        if not text.strip():
            raise ReleaseFormatError(path, "the file is empty (0 bytes or only whitespace); expected JSON")
        if path.suffix == ".jsonl":
            return [json.loads(line) for line in text.splitlines() if line.strip()]
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ReleaseFormatError(path, f"not valid JSON ({exc})") from exc


def load_source_map(path: Path | str) -> dict[str, str]:
    """Read a ``{uid or paper key: source}`` JSON object (e.g. ``sources.json``).

    Raises:
        ReleaseFormatError: when the file is not such an object or names an unknown source.
    """
    path = Path(path)
    data = _load_json(path)
    if not isinstance(data, dict):
        raise ReleaseFormatError(path, "a source mapping must be a JSON object {uid: source}")
    return {str(k): normalise_source(v, path=path, record=str(k), field_name="source") for k, v in data.items()}


def _dimension_of(stem: str) -> Dimension | None:
    """The dimension a file name or record names (any case), or None when it names none."""
    try:
        return row_dimension(stem)
    except ValueError:
        return None


def read_release(path: Path | str, *, sources: Path | str | None = None, records: str | None = None) -> Release:
    """Read every release file under ``path`` (a folder, or a single raw-layout JSON file).

    Files are recognised by name and content: ``<dimension>.json`` (per-dimension layout), ``sources.json``
    (source mapping, unless ``sources`` is given), a JSON object of strings (articles, e.g.
    ``articles/articles4test.json`` or the shards ``articles_part*.json``), and a JSON array/JSON lines whose
    records carry a ``result`` list (review samples). Other JSON files are rejected with an error. Every label
    file's declared split is taken from its name (:func:`declared_split`).

    The review-sample files come in two annotation sets with different labels for some uids: ``raw/`` and the
    grouped files (``*grouped*``). Exactly one set is read (``records``); the other set's files are listed in
    :attr:`Release.ignored_files`, never mixed in.

    Args:
        path: release folder or file.
        sources: optional ``{uid: source}`` mapping file; overrides a ``sources.json`` in the folder.
        records: "grouped" or "raw": the annotation set of the sample files to read. None (default): grouped
            when the release has grouped files, else raw.

    Returns:
        A :class:`Release`.

    Raises:
        FileNotFoundError: when ``path`` does not exist or holds no release file.
        ReleaseFormatError: on any malformed record (naming file, 0-based record index/uid and field), an empty
            file, or a dimension file of an unknown dimension (listing the valid names).
        ValueError: ``records`` names a set the release does not have, or is not one of :data:`RECORD_SETS`.
    """
    if records is not None and records not in RECORD_SETS:
        raise ValueError(f"unknown record set {records!r}; expected one of {', '.join(RECORD_SETS)}")
    root = Path(path)
    if not root.exists():
        raise FileNotFoundError(f"release path {root} does not exist")
    files = [root] if root.is_file() else sorted(
        p for p in root.rglob("*") if p.is_file() and p.suffix in (".json", ".jsonl")
    )
    release = Release()
    occurrences: dict[tuple[str, str], int] = defaultdict(int)
    sources_path = Path(sources) if sources else None
    if sources_path is not None:
        release.source_map = load_source_map(sources_path)
        release.files.append(sources_path)
    loaded: list[tuple[Path, object]] = []
    for file in files:
        if file.name in TOOL_REPORT_FILES:
            continue
        if file.name == "sources.json":
            if sources_path is None:
                release.source_map = load_source_map(file)
                release.files.append(file)
            continue
        loaded.append((file, _load_json(file)))
    samples = [f for f, data in loaded if is_sample_file(data)]
    sets = {record_set_of(f, root) for f in samples}
    if records is not None and samples and records not in sets:
        raise ValueError(f"--records {records}: the release has no {records} sample files (it has: "
                         f"{', '.join(portable_names(samples, root))})")
    if samples:
        release.record_set = records or ("grouped" if "grouped" in sets else "raw")
        other = sorted(sets - {release.record_set})
        release.record_set_reason = (
            ("chosen with --records" if records else "the default") + (f"; the {other[0]} files are not read"
                                                                        if other else "")
            if len(sets) > 1 else f"the only review-sample set in the release ({release.record_set})")
    for file, data in loaded:
        dimension = _dimension_of(file.stem)
        split = declared_split(file, root)
        if dimension is not None and isinstance(data, list):
            if not data:
                release.warnings.append(f"{portable_names([file], root)[0]}: dimension file holds no record ([])")
            _read_dimension_file(file, data, dimension, release, occurrences, split)
            _note_layout(release, "per_dimension")
        elif isinstance(data, dict):
            bad = next((k for k, v in data.items() if not isinstance(v, str)), None)
            if bad is not None:
                raise ReleaseFormatError(file, "an articles file maps uid -> markdown text", record=bad, field=bad)
            for key, text in data.items():
                if key in release.articles and release.articles[key] != text:
                    raise ReleaseFormatError(file, "uid has a different text in another articles file", record=key)
                release.articles[key] = text
            release.records_read[str(file)] = len(data)
        elif is_sample_file(data):
            if record_set_of(file, root) != release.record_set:
                release.ignored_files.append(file)
                continue
            _read_raw_file(file, data, release, split)
            _note_layout(release, "raw")
        elif isinstance(data, list) and not data:
            release.records_read[str(file)] = 0
            release.warnings.append(f"{portable_names([file], root)[0]}: file holds an empty array ([])")
        elif isinstance(data, list) and data and all(isinstance(r, dict) and "score" in r for r in data):
            raise ReleaseFormatError(
                file, f"unknown dimension file {file.name!r}: a dimension file is named after its dimension, one "
                f"of {', '.join(d + '.json' for d in DIMENSIONS)}")
        else:
            raise ReleaseFormatError(
                file,
                "unrecognised release file: expected <dimension>.json, an articles object {uid: text}, "
                "a raw sample array with 'result' lists, or sources.json",
            )
        if split is not None and (dimension is not None or is_sample_file(data)):
            release.declared_files[str(file)] = split
        release.files.append(file)
    if not release.units and not release.articles:
        raise FileNotFoundError(f"no SurveyReview release files found under {root}")
    return release


def _note_layout(release: Release, layout: str) -> None:
    if layout not in release.layouts:
        release.layouts.append(layout)


def _read_dimension_file(
    file: Path, data: list, dimension: str, release: Release, occurrences: dict[tuple[str, str], int],
    split: str | None,
) -> None:
    for index, record in enumerate(data):
        if not isinstance(record, dict):
            raise ReleaseFormatError(file, "each record must be a JSON object", record=f"{index} (0-based)")
        uid = record.get("uid")
        if not isinstance(uid, (str, int)) or isinstance(uid, bool) or str(uid).strip() == "":
            raise ReleaseFormatError(file, "missing or empty uid", record=f"{index} (0-based)", field="uid")
        uid = str(uid).strip()
        where = f"{index} (0-based, uid {uid})"
        score = _parse_score(record.get("score"), path=file, record=where)
        reasons = _parse_reasons(record.get("reasons"), path=file, record=where)
        occurrences[(dimension, uid)] += 1
        source = record.get("source")
        release.units.append(
            RawUnit(
                review_id=f"{uid}-r{occurrences[(dimension, uid)]}",
                article_key=uid,
                paper_key=uid,
                dimension=dimension,
                score=score,
                rationales=reasons,
                source=normalise_source(source, path=file, record=where, field_name="source") if source else None,
                origin=f"{file.name}#{index}",
                uid=uid,
                declared_split=split,
            )
        )
    release.records_read[str(file)] = len(data)


def _read_raw_file(file: Path, data: list, release: Release, split: str | None) -> None:
    seen: Counter[str] = Counter()
    for index, record in enumerate(data):
        uid = record.get("uid")
        if not isinstance(uid, (str, int)) or isinstance(uid, bool) or str(uid).strip() == "":
            raise ReleaseFormatError(file, "missing or empty uid", record=f"{index} (0-based)", field="uid")
        uid = str(uid).strip()
        where = f"{index} (0-based, uid {uid})"
        seen[uid] += 1
        if seen[uid] > 1:
            raise ReleaseFormatError(file, "duplicate review uid in one raw file", record=where, field="uid")
        source = record.get("source")
        source = normalise_source(source, path=file, record=where, field_name="source") if source else None
        text = next((record[f] for f in _TEXT_FIELDS if isinstance(record.get(f), str) and record[f].strip()), None)
        results = record.get("result")
        if results is None:
            raise ReleaseFormatError(file, "missing result list", record=where, field="result")
        if not isinstance(results, list):
            raise ReleaseFormatError(file, "result must be a list", record=where, field="result")
        dims_seen: set[str] = set()
        for j, item in enumerate(results):
            fld = f"result[{j}]"
            if not isinstance(item, dict):
                raise ReleaseFormatError(file, "each result must be an object", record=where, field=fld)
            if item.get("dimension") is None:
                raise ReleaseFormatError(file, "missing dimension", record=where, field=f"{fld}.dimension")
            try:
                dimension = _dimension_of(str(item.get("dimension", "")))
                if dimension is None:
                    raise ValueError
            except ValueError:
                raise ReleaseFormatError(
                    file,
                    f"unknown dimension {item.get('dimension')!r}; expected one of {', '.join(DIMENSIONS)}",
                    record=where,
                    field=f"{fld}.dimension",
                )
            if dimension in dims_seen:
                raise ReleaseFormatError(file, f"dimension {dimension} appears twice", record=where, field=fld)
            dims_seen.add(dimension)
            score = _parse_score(item.get("score"), path=file, record=where, field_name=f"{fld}.score")
            reasons = _parse_reasons(item.get("reasons"), path=file, record=where, field_name=f"{fld}.reasons")
            release.units.append(
                RawUnit(
                    review_id=uid,
                    article_key=uid,
                    paper_key=paper_key_from_uid(uid),
                    dimension=dimension,
                    score=score,
                    rationales=reasons,
                    title=str(record.get("paper_title") or "").strip(),
                    abstract=str(record.get("paper_abstract") or "").strip(),
                    source=source,
                    text=text,
                    origin=f"{file.name}#{index}",
                    uid=uid,
                    declared_split=split,
                )
            )
    release.records_read[str(file)] = len(data)

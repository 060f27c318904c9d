"""Row schema of the SurveyReview dataset folder (SurveyReview §4, App. A-B).

One row is one *unit*: (paper, review, dimension) with the human score and its rationale snippets.
"""

from __future__ import annotations

import json
from typing import Any

from surveyalign.constants import Dimension, parse_dimension

#: Column name -> type ("string", "int64", or "list" = list of strings), in the order they are written.
_COLUMN_TYPES: tuple[tuple[str, str], ...] = (
    ("unit_id", "string"),
    ("paper_id", "string"),
    ("review_id", "string"),
    ("source", "string"),
    ("dimension", "string"),
    ("score", "int64"),
    ("rationales", "list"),
    ("title", "string"),
    ("text", "string"),
    ("abstract", "string"),
    ("references", "list"),
)

#: Column names of every config, in the order they are written.
COLUMNS: tuple[str, ...] = tuple(name for name, _ in _COLUMN_TYPES)

#: Config holding the units of every dimension.
ALL_CONFIG = "all"


def row_dimension(value: object) -> Dimension:
    """Parse the dimension of a data row: any case -> :data:`~surveyalign.constants.Dimension`.

    The row edge parser (one of the three callers of :func:`~surveyalign.constants.parse_dimension`): release
    records and dimension file names (``surveyalign.data.readers``), prediction records
    (``surveyalign.scoring.validate_records``), training-label files and the ``dimensions`` column given to the
    metric functions. The caller adds the file / record / field to the message.

    Args:
        value: the row's dimension, e.g. ``"Readability"`` (official raw release) or ``"criticalness"``.

    Returns:
        One of :data:`~surveyalign.constants.DIMENSIONS`.

    Raises:
        ValueError: ``unknown dimension 'novelty'; expected one of readability, structure, ...``.
    """
    return parse_dimension(value)


class ReleaseFormatError(ValueError):
    """A release file breaks the documented format; the message names file, record and field.

    Attributes:
        path: the offending file.
        record: the record index (0-based) and/or uid, or None for file-level problems.
        field: the offending field, or None.
    """

    def __init__(self, path: Any, message: str, *, record: str | None = None, field: str | None = None):
        self.path = str(path)
        self.record = record
        self.field = field
        where = self.path
        if record is not None:
            where += f", record {record}"
        if field is not None:
            where += f", field {field!r}"
        super().__init__(f"{where}: {message}")


def features_yaml() -> list[dict[str, str]]:
    """The row features in the YAML form of a dataset card's ``dataset_info.features`` (no import of datasets).

    Returns:
        ``[{"name": "unit_id", "dtype": "string"}, ..., {"name": "rationales", "list": "string"}, ...]``;
        equal to ``surveyreview_features()._to_yaml_list()`` (checked by the tests).
    """
    return [{"name": n, "list": "string"} if t == "list" else {"name": n, "dtype": t} for n, t in _COLUMN_TYPES]


def arrow_schema():
    """``pyarrow.Schema`` of one row, carrying the ``huggingface`` features metadata that ``datasets`` reads.

    Built with pyarrow alone so that building a dataset does not import ``datasets`` (seconds on a busy CPU);
    equal to ``surveyreview_features().arrow_schema`` (checked by the tests).
    """
    import pyarrow as pa

    value = {"string": {"dtype": "string", "_type": "Value"}, "int64": {"dtype": "int64", "_type": "Value"}}
    value["list"] = {"feature": value["string"], "_type": "List"}
    arrow = {"string": pa.string(), "int64": pa.int64(), "list": pa.list_(pa.string())}
    meta = {"info": {"features": {n: value[t] for n, t in _COLUMN_TYPES}}}
    return pa.schema(
        [pa.field(n, arrow[t]) for n, t in _COLUMN_TYPES], metadata={"huggingface": json.dumps(meta)}
    )


def surveyreview_features():
    """Return the typed ``datasets.Features`` of one SurveyReview row (``surveyalign/data/schema.py``).

    Returns:
        ``datasets.Features`` with string ids, ``score`` as int64 in {-2,-1,1,2}, ``rationales`` and
        ``references`` as lists of strings, and ``title``/``text``/``abstract`` as strings ("" when unknown).
    """
    from datasets import Features, List, Value

    return Features(
        {
            "unit_id": Value("string"),
            "paper_id": Value("string"),
            "review_id": Value("string"),
            "source": Value("string"),
            "dimension": Value("string"),
            "score": Value("int64"),
            "rationales": List(Value("string")),
            "title": Value("string"),
            "text": Value("string"),
            "abstract": Value("string"),
            "references": List(Value("string")),
        }
    )

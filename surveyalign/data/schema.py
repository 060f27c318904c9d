"""Row schema of the SurveyReview dataset folder (contract 1; SurveyReview §4, App. A-B).

One row is one *unit*: (paper, review, dimension) with the human score and its rationale snippets.
"""

from __future__ import annotations

from typing import Any

#: Column names of every config, in the order they are written.
COLUMNS: tuple[str, ...] = (
    "unit_id",
    "paper_id",
    "review_id",
    "source",
    "dimension",
    "score",
    "rationales",
    "title",
    "text",
    "abstract",
    "references",
)

#: Split names of the dataset folder, in the order they are written.
SPLITS: tuple[str, ...] = ("train", "validation", "test")

#: Config holding the units of every dimension.
ALL_CONFIG = "all"


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


def surveyreview_features():
    """Return the typed ``datasets.Features`` of one SurveyReview row (contract 1).

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

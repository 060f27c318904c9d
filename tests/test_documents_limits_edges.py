"""Edges of the document resource limits (surveyalign/documents/limits.py): which values are refused, and how
SURVEYALIGN_DOCUMENT_LIMITS is read (issue 27)."""

from __future__ import annotations

import dataclasses

import pytest

from surveyalign.documents import DOCUMENT_LIMITS_ENV, DocumentLimits

DEFAULTS = {"latex_max_files": 500, "latex_max_chars": 20_000_000, "latex_max_depth": 32, "pdf_max_pages": 2_000,
            "pdf_max_content_bytes": 32_000_000, "pdf_max_seconds": 120.0, "pdf_max_shared_stream_bytes": 1_000_000}


@pytest.mark.parametrize(("field", "value"), [("pdf_max_pages", 0), ("latex_max_depth", -1),
                                              ("pdf_max_seconds", 0.0), ("latex_max_files", True),
                                              ("pdf_max_content_bytes", "10"), ("latex_max_chars", None)])
def test_a_limit_must_be_a_positive_number(field, value):
    with pytest.raises(ValueError) as err:
        DocumentLimits(**{field: value})
    assert str(err.value) == f"document limit {field} must be a positive number, got {value!r}"


def test_the_smallest_limits_are_accepted():
    limits = DocumentLimits(latex_max_files=1, latex_max_chars=1, latex_max_depth=1, pdf_max_pages=1,
                            pdf_max_content_bytes=1, pdf_max_seconds=0.001, pdf_max_shared_stream_bytes=1)
    assert dataclasses.astuple(limits) == (1, 1, 1, 1, 1, 0.001, 1)


@pytest.mark.parametrize("environ", [{}, {DOCUMENT_LIMITS_ENV: ""}, {DOCUMENT_LIMITS_ENV: "  \t"},
                                     {"OTHER": "pdf_max_pages=1"}])
def test_no_setting_gives_the_defaults(environ):
    assert dataclasses.asdict(DocumentLimits.from_env(environ)) == DEFAULTS


def test_the_process_environment_is_read_by_default(monkeypatch):
    monkeypatch.setenv(DOCUMENT_LIMITS_ENV, "pdf_max_pages=3")
    assert DocumentLimits.from_env().pdf_max_pages == 3
    monkeypatch.delenv(DOCUMENT_LIMITS_ENV)
    assert DocumentLimits.from_env() == DocumentLimits()


def test_pairs_are_trimmed_and_empty_parts_skipped():
    limits = DocumentLimits.from_env({DOCUMENT_LIMITS_ENV: " pdf_max_seconds = 0.5 ,, latex_max_depth=4 ,"})
    assert (limits.pdf_max_seconds, limits.latex_max_depth, limits.pdf_max_pages) == (0.5, 4, 2_000)
    assert isinstance(limits.latex_max_depth, int)


def test_unknown_names_list_the_known_ones():
    with pytest.raises(ValueError) as err:
        DocumentLimits.from_env({DOCUMENT_LIMITS_ENV: "pdf_max_pages=3,pages=7"})
    assert str(err.value) == (f"{DOCUMENT_LIMITS_ENV}: unknown limit 'pages'; known: latex_max_files, "
                              "latex_max_chars, latex_max_depth, pdf_max_pages, pdf_max_content_bytes, pdf_max_seconds, "
                              "pdf_max_shared_stream_bytes")


@pytest.mark.parametrize(("pair", "message"), [
    ("pdf_max_pages=7.5", "pdf_max_pages='7.5' is not a number"),  # counts are whole numbers
    ("pdf_max_seconds=soon", "pdf_max_seconds='soon' is not a number"),
    ("latex_max_files", "latex_max_files='' is not a number"),
    ("pdf_max_pages=7=8", "pdf_max_pages='7=8' is not a number"),  # the name ends at the first '='
])
def test_values_that_are_not_numbers(pair, message):
    with pytest.raises(ValueError) as err:
        DocumentLimits.from_env({DOCUMENT_LIMITS_ENV: pair})
    assert str(err.value) == f"{DOCUMENT_LIMITS_ENV}: {message}"
    assert err.value.__cause__ is None and err.value.__suppress_context__


def test_a_non_positive_value_names_the_variable():
    with pytest.raises(ValueError) as err:
        DocumentLimits.from_env({DOCUMENT_LIMITS_ENV: "pdf_max_pages=0"})
    assert str(err.value) == f"{DOCUMENT_LIMITS_ENV}: document limit pdf_max_pages must be a positive number, got 0"
    assert err.value.__cause__ is None and err.value.__suppress_context__

"""CSV cells a spreadsheet would run, escaped on write and restored on read (OWASP "CSV Injection").

The CSV files people open in a spreadsheet (``verification.csv``, ``disagreements.csv``, the meta-evaluation
rating sheet) hold text written by others: paper titles, LLM reasons, annotator names, rationales. A cell that
starts with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return is read by Excel, LibreOffice and Google Sheets as a
formula. OWASP's rule: prefix such a cell with a single quote, which the spreadsheet shows as text.

* :func:`escape_cell`: ``"=HYPERLINK(...)"`` -> ``"'=HYPERLINK(...)"``. A plain number (``-1``, ``+2``, ``-0.5``)
  is left as it is (a spreadsheet reads it as a number, never runs it). A cell that already starts with quotes
  followed by a trigger character gets one more quote, so reading gives back exactly what was written.
* :func:`unescape_cell`: the inverse (one leading quote removed when the quotes are followed by a trigger).
* :func:`escape_row` / :func:`unescape_rows`: the same over ``csv.DictWriter`` rows and ``csv.DictReader`` rows;
  :func:`read_csv_rows`: a file's rows, read with ``newline=""`` (a tab or line break inside a quoted cell stays in
  its cell) and restored.
"""

from __future__ import annotations

import csv
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

__all__ = ["FORMULA_START", "escape_cell", "escape_row", "is_formula", "read_csv_rows", "unescape_cell",
           "unescape_rows"]

#: First characters that make a spreadsheet read a cell as a formula (OWASP's list).
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")

_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")


def is_formula(value: str) -> bool:
    """Whether a spreadsheet would run ``value``: it starts with one of :data:`FORMULA_START` and is not a plain
    number."""
    return value[:1] in FORMULA_START and _NUMBER.fullmatch(value) is None


def escape_cell(value: Any) -> Any:
    """``value`` safe to open in a spreadsheet (non-strings are returned unchanged).

    Returns:
        ``"'" + value`` when ``value`` would run as a formula, or is quotes followed by such a start; else
        ``value``.
    """
    if not isinstance(value, str) or not value:
        return value
    if is_formula(value) or (value[0] == "'" and is_formula(value.lstrip("'"))):
        return "'" + value
    return value


def unescape_cell(value: Any) -> Any:
    """The inverse of :func:`escape_cell`: one leading quote removed when the quotes are followed by a formula
    start (non-strings unchanged)."""
    if isinstance(value, str) and value.startswith("'") and is_formula(value.lstrip("'")):
        return value[1:]
    return value


def escape_row(row: Mapping[str, Any]) -> dict[str, Any]:
    """Every cell of a ``csv.DictWriter`` row through :func:`escape_cell`."""
    return {k: escape_cell(v) for k, v in row.items()}


def unescape_rows(rows: Iterable[Mapping[str, Any]]) -> Iterator[dict[str, Any]]:
    """Every cell of ``csv.DictReader`` rows, and every column name, through :func:`unescape_cell` (a row's extra
    cells, under the key ``None``, are a list and are restored one by one)."""
    for row in rows:
        yield {unescape_cell(k): ([unescape_cell(x) for x in v] if isinstance(v, list) else unescape_cell(v))
               for k, v in row.items()}


def read_csv_rows(path: str | os.PathLike) -> list[dict[str, Any]]:
    """The rows of a CSV file with a header (UTF-8; ``csv.DictReader``), each cell through :func:`unescape_cell`.

    Raises:
        FileNotFoundError: no such file.
    """
    with open(path, encoding="utf-8", newline="") as fh:
        return list(unescape_rows(csv.DictReader(fh)))

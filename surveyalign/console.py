"""The one way commands make their ``rich`` console: tables keep their width when the output is piped.

``rich`` falls back to 80 columns when stdout is not a terminal, which wraps the leaderboard and the statistics
tables of a command whose output goes to a file or a pipe (``surveyalign evaluate ... | tee log``) into
unreadable cells. :func:`make_console` keeps the terminal's width on a terminal and uses :data:`PIPED_WIDTH`
otherwise (or the ``COLUMNS`` environment variable, or an explicit width).
"""

from __future__ import annotations

import os
import sys
from typing import IO, Any

__all__ = ["PIPED_WIDTH", "make_console"]

#: Console width (characters) when the output is not a terminal: wide enough for every table we print.
PIPED_WIDTH = 200


def make_console(width: int | None = None, *, file: IO[str] | None = None, **options: Any) -> Any:
    """A ``rich.console.Console`` whose tables are not wrapped at 80 columns when output is piped.

    Args:
        width: explicit width in characters (a ``--width`` flag); ``None`` picks it (see below).
        file: where to print (default ``sys.stdout``).
        **options: further ``Console`` options.

    Returns:
        The console: ``width`` if given; else the terminal's width on a terminal; else ``COLUMNS`` when set, else
        :data:`PIPED_WIDTH`.
    """
    from rich.console import Console

    stream = file if file is not None else sys.stdout
    if width is None and not (hasattr(stream, "isatty") and stream.isatty()):
        columns = os.environ.get("COLUMNS", "")
        width = int(columns) if columns.isdigit() and int(columns) > 0 else PIPED_WIDTH
    return Console(width=width, file=file, **options)

"""The one way commands make their ``rich`` console: tables keep their width when the output is piped.

``rich`` falls back to 80 columns when stdout is not a terminal, which wraps the leaderboard and the statistics
tables of a command whose output goes to a file or a pipe (``surveyalign evaluate ... | tee log``) into
unreadable cells. :func:`make_console` keeps the terminal's width on a terminal and uses :data:`PIPED_WIDTH`
otherwise (or the ``COLUMNS`` environment variable, or an explicit width).
"""

from __future__ import annotations

import logging
import os
import sys
from typing import IO, Any

__all__ = ["PIPED_WIDTH", "THIRD_PARTY_NOISE", "make_console", "quiet_third_party", "stdout_to_stderr"]

#: Third-party log lines that do not concern a surveyalign user, by logger name -> message fragments. Each is
#: dropped at its own logger (a ``logging.Filter``), so every other line of that logger, and all of ours, stay.
THIRD_PARTY_NOISE: dict[str, tuple[str, ...]] = {
    # bitsandbytes' optional CPU kernel, tried at every 4-bit model load on CPUs with AVX512-BF16
    "bitsandbytes.backends.cpu.ops": ("pip install kernels",),
    # transformers warns when a text is longer than the tokenizer's model_max_length, before our own cut
    # (the judge and KA cut texts to their token budgets and report the cut themselves)
    "transformers.tokenization_utils_base": ("Token indices sequence length is longer than the specified maximum",),
}

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


class _DropMessages(logging.Filter):
    def __init__(self, fragments: tuple[str, ...]) -> None:
        super().__init__()
        self.fragments = fragments

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except (TypeError, ValueError):  # a malformed record is not ours to judge
            return True
        return not any(fragment in message for fragment in self.fragments)


def quiet_third_party() -> list[str]:
    """Silence the third-party lines of :data:`THIRD_PARTY_NOISE` at their loggers (idempotent).

    Returns:
        The logger names a filter was added to by this call (empty when all were already quiet).
    """
    added = []
    for name, fragments in THIRD_PARTY_NOISE.items():
        logger = logging.getLogger(name)
        if not any(isinstance(f, _DropMessages) for f in logger.filters):
            logger.addFilter(_DropMessages(fragments))
            added.append(name)
    return added


def stdout_to_stderr() -> Any:
    """A context manager sending what is printed to standard output inside it to standard error.

    For commands whose standard output is machine-read (``--json``): a library that prints at import (transformers
    prints ``[INFO] Running in WANDB offline mode`` when ``WANDB_MODE=offline``) would otherwise make that output
    unreadable. The JSON itself is printed after the block.
    """
    import contextlib

    return contextlib.redirect_stdout(sys.stderr)

"""`surveyalign` subcommands owned by `surveyalign.backends` (none yet)."""

from __future__ import annotations

import argparse


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add this sub-package's subcommands to the top-level parser."""

"""``surveyalign demo``: the main job end to end on the embedded default (filled in by the skeleton)."""

from __future__ import annotations

import argparse


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``demo`` subcommand."""
    p = subparsers.add_parser("demo", help="run the whole pipeline small: data, SFT adapter, evaluation, leaderboard")
    p.set_defaults(handler=lambda a: 0)

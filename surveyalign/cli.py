"""The ``surveyalign`` command line: one subcommand group per sub-package.

Each sub-package exposes ``register(subparsers)`` in its ``cli`` module; heavy imports (torch, transformers,
trl, datasets, scikit-learn, scipy, matplotlib, lxml, pypdf) happen inside the command handlers or in
submodules that the sub-packages load on first use (lazy_loader), so ``surveyalign --help`` stays fast.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from surveyalign import __version__

#: Sub-packages whose ``cli.register`` adds subcommands, in help order.
_COMMAND_MODULES = (
    "surveyalign.demo",
    "surveyalign.data.cli",
    "surveyalign.prompts.cli",
    "surveyalign.evaluation.cli",
    "surveyalign.scoring.cli",
    "surveyalign.backends.cli",
    "surveyalign.inference.cli",
    "surveyalign.training.cli",
    "surveyalign.prism.cli",
    "surveyalign.autoraters.cli",
    "surveyalign.knowledge.cli",
)


#: Exceptions that mean "the input or a step failed", reported as one line. Anything else is a bug and keeps
#: its traceback.
_USER_ERRORS = (ValueError, OSError, RuntimeError)  # OSError covers missing files, folders, permissions


def build_parser() -> argparse.ArgumentParser:
    """Return the top-level parser with every registered subcommand."""
    parser = argparse.ArgumentParser(
        prog="surveyalign",
        description="Train and evaluate LLM judges of survey papers against human reviewers (SurveyReview).",
    )
    parser.add_argument("--version", action="version", version=f"surveyalign {__version__}")
    parser.add_argument("--traceback", action="store_true",
                        help="show the full Python traceback when a command fails (also SURVEYALIGN_TRACEBACK=1)")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in _COMMAND_MODULES:
        importlib.import_module(name).register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``surveyalign`` console script; returns the process exit code."""
    from surveyalign.models.paths import default_offline

    default_offline()  # offline unless HF_HUB_OFFLINE is set (HF_HUB_OFFLINE=0 downloads from the Hub)
    parser = build_parser()
    args = parser.parse_args(argv)
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return 0 if args.command is None else 2
    try:
        result = handler(args)
    except KeyboardInterrupt:
        print("interrupted; completed work is saved and a re-run resumes it", file=sys.stderr)
        return 130
    except _USER_ERRORS as err:
        # bad input, missing files, failed steps: one clear line instead of a traceback (unless asked for)
        if args.traceback or os.environ.get("SURVEYALIGN_TRACEBACK"):
            raise
        print(f"surveyalign {args.command}: error: {type(err).__name__}: {err}", file=sys.stderr)
        print("(run with `surveyalign --traceback ...` for the full traceback)", file=sys.stderr)
        return 2
    return int(result or 0)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

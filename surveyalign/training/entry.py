"""How a recipe script starts and fails: usage without ``--config``, one-line errors (also under accelerate).

Without it, ``python recipes/sft.py`` with no arguments would parse the dataclass defaults and stop in
transformers' bf16 check with a traceback, and our own ``ValueError`` (unknown dimension, no dataset, no DPO pairs)
would come out as a traceback once per process under ``accelerate launch``. :func:`run_recipe` runs a recipe's
``main``:

* no ``--config`` (and no ``--help``): the usage and the copy-paste commands of the recipe's docstring are
  printed, exit status 2;
* ``ValueError`` / ``OSError`` / ``RuntimeError`` from parsing or training: one line
  ``recipes/sft.py: error: ValueError: ...`` on stderr from the first process only, exit status 2 (set
  ``SURVEYALIGN_TRACEBACK=1`` for the traceback). ``accelerate launch`` then adds its own
  ``CalledProcessError`` traceback unless it runs with ``--quiet``, which ``surveyalign train sft|dpo`` passes.

Recipes run offline unless ``HF_HUB_OFFLINE`` is set (:func:`surveyalign.models.default_offline`).
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["USER_ERRORS", "recipe_usage", "run_recipe"]

#: Exceptions reported as one line (bad input or a failed step); anything else keeps its traceback.
USER_ERRORS = (ValueError, OSError, RuntimeError)


def recipe_usage(doc: str, prog: str) -> str:
    """The usage text of a recipe: how to call it and the commands of its docstring's ``bash`` blocks.

    Args:
        doc: the recipe module's docstring (``# title`` lines followed by fenced ``bash`` blocks).
        prog: the script path shown (``recipes/sft.py``).

    Returns:
        ``usage: accelerate launch [...] PROG --config YAML [--FIELD VALUE ...]``, then each titled command block.
    """
    lines = [f"usage: accelerate launch [ACCELERATE OPTIONS] {prog} --config YAML [--FIELD VALUE ...]",
             f"       ({prog} --help lists every field; a field given on the command line overrides the YAML)",
             "", "--config is required. Copy-paste commands:"]
    for title, block in re.findall(r"^#\s*(.+?)\n```bash\n(.*?)```", doc or "", flags=re.MULTILINE | re.DOTALL):
        lines += ["", f"# {title.strip()}", block.rstrip()]
    return "\n".join(lines)


def _has_config(argv: Sequence[str]) -> bool:
    return any(arg == "--config" or arg.startswith("--config=") for arg in argv)


def _first_process() -> bool:
    return os.environ.get("RANK", os.environ.get("LOCAL_RANK", "0")) in ("0", "")


def run_recipe(main: Callable[..., Any], make_parser: Callable[[], Any], *, prog: str, doc: str,
               argv: Sequence[str] | None = None) -> int:
    """Parse a recipe's command line and run its ``main``, with usage and one-line errors.

    Args:
        main: the recipe's ``main(script_args, training_args, model_args)``.
        make_parser: builds its ``TrlParser``.
        prog: the script path for messages (``recipes/sft.py``).
        doc: the recipe's docstring (usage and commands).
        argv: the arguments (default ``sys.argv[1:]``).

    Returns:
        The exit status: 0 after a finished run, 2 without ``--config`` or after a user error.

    Raises:
        Anything that is not a :data:`USER_ERRORS` exception (a bug keeps its traceback), and every exception when
        ``SURVEYALIGN_TRACEBACK`` is set.
    """
    from surveyalign.models.paths import default_offline

    argv = list(sys.argv[1:] if argv is None else argv)
    if not _has_config(argv) and not {"-h", "--help"} & set(argv):
        if _first_process():
            print(recipe_usage(doc, prog), file=sys.stderr)
        return 2
    default_offline()
    from surveyalign.console import quiet_third_party

    quiet_third_party()  # third-party lines that do not concern the user (surveyalign.console.THIRD_PARTY_NOISE)
    where = ""
    try:
        try:
            parsed = make_parser().parse_args_and_config(argv)
        except ValueError as err:  # a field's check: name the flag that set it, else the YAML
            where = _origin(str(err), argv)
            raise
        main(*parsed)
    except USER_ERRORS as err:
        if os.environ.get("SURVEYALIGN_TRACEBACK"):
            raise
        if _first_process():
            message = "; ".join(line.strip() for line in str(err).splitlines() if line.strip())
            print(f"{prog}: error: {where}{type(err).__name__}: {message}", file=sys.stderr, flush=True)
        return 2
    return 0


def _origin(message: str, argv: Sequence[str]) -> str:
    """``"--dimension clarity: "`` when a command-line flag's name or value is in ``message``, else
    ``"configs/x.yaml: "`` (the value came from the YAML), or ``""`` when neither is known."""
    pairs = []
    for index, arg in enumerate(argv):
        if arg.startswith("--") and arg != "--config":
            name, eq, value = arg[2:].partition("=")
            if not eq and index + 1 < len(argv) and not argv[index + 1].startswith("--"):
                value = argv[index + 1]
            pairs.append((name, value))
    lowered = message.lower()
    for name, value in pairs:
        if name.lower() in lowered or (value and f"'{value.lower()}'" in lowered):  # messages quote values
            return f"--{name} {value}: ".replace(" : ", ": ")
    config = next((argv[i + 1] for i, arg in enumerate(argv[:-1]) if arg == "--config"),
                  next((arg.split("=", 1)[1] for arg in argv if arg.startswith("--config=")), None))
    return f"{config}: " if config else ""

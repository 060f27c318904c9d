"""Value checks for command-line flags, so a bad value is reported as the flag (``argument --k: ...``).

argparse names the flag in the message of an ``ArgumentTypeError`` raised by a ``type=`` function and exits
with status 2; using these instead of ``type=int`` keeps the value from reaching a config or a library that
would report it under another name (a YAML key, a keyword argument).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from surveyalign.constants import Dimension, parse_dimension

__all__ = ["add_cost_arguments", "bool_value", "dimension_list", "dimension_value", "int_at_least", "non_negative_float", "number_between",
           "positive_float", "positive_int", "probability"]


def _checked(kind: Callable[[str], Any], accept: Callable[[Any], bool], wanted: str) -> Callable[[str], Any]:
    """A ``type=`` function: ``kind(text)`` when ``accept`` holds, else ``ArgumentTypeError("expected WANTED")``."""

    def check(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            value = None
        if value is None or not accept(value):
            raise argparse.ArgumentTypeError(f"expected {wanted}, got {text!r}")
        return value

    check.__name__ = wanted
    return check


def int_at_least(minimum: int) -> Callable[[str], int]:
    """A ``type=`` function accepting integers >= ``minimum``.

    Args:
        minimum: the smallest accepted value.

    Returns:
        A function ``str -> int`` raising ``argparse.ArgumentTypeError`` ("expected an integer >= 1, got '0'").
    """
    return _checked(int, lambda value: value >= minimum, f"an integer >= {minimum}")


def number_between(low: float, high: float) -> Callable[[str], float]:
    """A ``type=`` function accepting numbers in ``[low, high]`` (fractions, thresholds).

    Args:
        low: the smallest accepted value; high: the largest.

    Returns:
        A function ``str -> float`` raising ``argparse.ArgumentTypeError`` ("expected a number in [0, 1], got '2'").
    """
    return _checked(float, lambda value: low <= value <= high, f"a number in [{low:g}, {high:g}]")


#: Integers >= 1 (counts, sizes, token budgets).
positive_int = int_at_least(1)
#: Floats >= 0 (temperatures).
non_negative_float = _checked(float, lambda value: value >= 0, "a number >= 0")
#: Floats > 0 (rates, delays).
positive_float = _checked(float, lambda value: value > 0, "a number > 0")
#: A probability mass in (0, 1] (top_p).
probability = _checked(float, lambda value: 0 < value <= 1, "a number in (0, 1]")


def bool_value(text: str) -> bool:
    """A ``type=`` function for ``true``/``false`` (any case).

    Raises:
        argparse.ArgumentTypeError: anything else.
    """
    lowered = text.strip().lower()
    if lowered not in ("true", "false"):
        raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")
    return lowered == "true"


def dimension_value(text: str) -> Dimension:
    """A ``type=`` function for one dimension name (any case) -> its :data:`~surveyalign.constants.Dimension`.

    The command-line edge parser of a dimension (one of the three callers of
    :func:`~surveyalign.constants.parse_dimension`); handlers pass the parsed value on unchanged.

    Raises:
        argparse.ArgumentTypeError: not one of the four SurveyReview dimensions (argparse prints
            ``argument --dimension: unknown dimension 'x'; expected one of ...`` and exits 2).
    """
    try:
        return parse_dimension(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def dimension_list(text: str) -> list[Dimension]:
    """A ``type=`` function for comma-separated dimension names (``readability,Structure``).

    Raises:
        argparse.ArgumentTypeError: an unknown name, or no name at all.
    """
    names = [dimension_value(part) for part in text.split(",") if part.strip()]
    if not names:
        raise argparse.ArgumentTypeError(f"expected comma-separated dimensions, got {text!r}")
    return list(dict.fromkeys(names))



def add_cost_arguments(parser: argparse.ArgumentParser, *, kept: str = "the answers so far are kept",
                       config_keys: bool = False) -> None:
    """Adds the spending flags shared by ``evaluate`` and ``score``: ``--plan``, ``--max-cost``, ``--prices``.

    Args:
        parser: the command's parser; gets ``plan`` (bool), ``max_cost`` (float USD > 0 or None) and ``prices``
            (a YAML path or None).
        kept: what the help says survives a stop at the cap.
        config_keys: the command also reads ``max_cost`` / ``prices`` from its YAML config: the help says the
            flags override them.
    """
    def overrides(key: str) -> str:
        return f" (overrides `{key}`)" if config_keys else ""

    parser.add_argument("--plan", action="store_true",
                        help="print the calls still to make, their prompt / completion tokens, estimated cost (price "
                        "table configs/prices.yaml) and time, then stop: nothing is sent")
    parser.add_argument("--max-cost", type=positive_float, metavar="USD",
                        help=f"stop sending new calls when the projected total cost would pass USD: {kept}, exit 4 "
                        f"with what is left; a re-run with a higher cap continues{overrides('max_cost')}")
    parser.add_argument("--prices", metavar="FILE",
                        help="price table merged over configs/prices.yaml, same shape (cost per dimension in the "
                        f"reports){overrides('prices')}")

"""The token budget ``max_length`` of a judge call: one origin rule and one lower bound (SurveyAlign App. D).

``max_length`` counts prompt + answer tokens (the training length rule: the end of the survey body is cut until
prompt + ``max_new_tokens`` fit, :func:`surveyalign.prompts.fit_survey_text`). Every place that takes one
(``evaluate`` config and ``--max-length``, ``score --max-length`` and the judge YAML, ``autorate --max-length`` and
the autorater judge, the training record) checks it against the same floor, :data:`MIN_MAX_LENGTH`, through
one of three doors built on it: :data:`MaxLength` (pydantic fields), :data:`max_length_arg` (argparse ``type=``)
and :func:`check_max_length` (Python arguments; it also holds the relation ``max_length > max_new_tokens`` where
the caller knows ``max_new_tokens``).

Where a budget comes from is decided once, by :func:`surveyalign.models.record.resolve_max_length`: the
configured value, else the ``max_length`` of the adapter's training record (judge on the length it was trained
on), else none (no cut).
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from surveyalign.argtypes import int_at_least

__all__ = ["MIN_MAX_LENGTH", "MaxLength", "check_max_length", "max_length_arg", "max_length_problem"]

#: The smallest ``max_length`` accepted anywhere (tokens of prompt + answer). Why 2: a budget must hold at least
#: one prompt token and one answer token; any larger floor depends on the prompt and on ``max_new_tokens``, which
#: are checked where they are known (the relation ``max_length > max_new_tokens`` in :func:`check_max_length`,
#: the prompt fit of the judge and of training, which report a prompt that cannot fit by name).
MIN_MAX_LENGTH = 2

#: A pydantic field type for a configured ``max_length`` (``MaxLength | None = None``): an int >= the floor.
MaxLength = Annotated[int, Field(ge=MIN_MAX_LENGTH)]

#: argparse ``type=`` of every ``--max-length`` flag: "expected an integer >= 2, got '1'" (exit 2).
max_length_arg = int_at_least(MIN_MAX_LENGTH)


def max_length_problem(value: Any) -> str | None:
    """What is wrong with ``value`` as a ``max_length``, or None when it is an integer >= :data:`MIN_MAX_LENGTH`.

    Args:
        value: the value to check (a bool is no integer here).

    Returns:
        ``None``, or a phrase such as ``"is 1, expected an integer >= 2"`` to put after the field's name.
    """
    if isinstance(value, int) and not isinstance(value, bool) and value >= MIN_MAX_LENGTH:
        return None
    return f"is {value!r}, expected an integer >= {MIN_MAX_LENGTH}"


def check_max_length(value: Any, *, max_new_tokens: int | None = None, what: str = "max_length") -> int:
    """Check a ``max_length`` given to a Python API against the floor and, when known, ``max_new_tokens``.

    Args:
        value: the token budget.
        max_new_tokens: the answer budget it must exceed (None: the floor alone).
        what: the name used in the error (``"max_length"``).

    Returns:
        ``value`` (an int).

    Raises:
        ValueError: ``value`` is not an integer >= :data:`MIN_MAX_LENGTH`, or not above ``max_new_tokens``.
    """
    problem = max_length_problem(value)
    if problem:
        raise ValueError(f"{what} {problem}")
    if max_new_tokens is not None and value <= max_new_tokens:
        raise ValueError(f"{what} {value} must exceed max_new_tokens {max_new_tokens}")
    return value

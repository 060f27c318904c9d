"""Reading the YAML config files of every command (evaluation, demo, KA, PRISM, recipes, accelerate).

:func:`read_yaml_mapping` is the one reader: a missing file, a YAML syntax error and a top level that is not a
mapping each give a one-line error naming the file (and, for a syntax error, the line and column), so the
command line reports them as a user error instead of a traceback.

:data:`DimensionName` is the config edge parser of a dimension: every config field (or mapping key) that names a
dimension has this type, so a YAML value in any case becomes a canonical
:data:`~surveyalign.constants.Dimension` when the config is validated, and an unknown name is reported under
its key (``dimensions.1: unknown dimension 'novelty'; expected one of ...``).
"""

from __future__ import annotations

import copy
import os
from pathlib import Path
from typing import Annotated, Any

import yaml
from pydantic import BeforeValidator

from surveyalign.constants import Dimension, parse_dimension

__all__ = ["DimensionName", "apply_overrides", "dimension_setting", "read_yaml_mapping", "validation_line",
           "yaml_error_line"]


def dimension_setting(value: object) -> Dimension:
    """Parse a dimension named in a config (a YAML value or key, a recipe argument): any case -> :data:`Dimension`.

    The config edge parser (one of the three callers of :func:`~surveyalign.constants.parse_dimension`); used by
    :data:`DimensionName` and by the recipe dataclasses of ``surveyalign.training.arguments``.

    Raises:
        ValueError: ``unknown dimension 'novelty'; expected one of readability, structure, ...``.
    """
    return parse_dimension(value)


#: The pydantic type of a config field (or mapping key) naming a dimension: any case in, a canonical
#: :data:`~surveyalign.constants.Dimension` out; an unknown name is a validation error naming the value.
DimensionName = Annotated[Dimension, BeforeValidator(dimension_setting)]


def yaml_error_line(err: yaml.YAMLError) -> str:
    """Say what is wrong with a YAML text in one line.

    Args:
        err: the error PyYAML raised.

    Returns:
        e.g. ``"line 2, column 10: expected ',' or '}', but got ':'"`` (1-based line and column, where PyYAML
        knows them).
    """
    mark = getattr(err, "problem_mark", None)
    problem = getattr(err, "problem", None) or str(err).splitlines()[0]
    where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
    return f"{where}{problem}"


def read_yaml_mapping(path: str | os.PathLike, what: str = "config") -> dict[str, Any]:
    """Read a YAML file whose top level is a mapping (an empty file reads as ``{}``).

    Args:
        path: the YAML file.
        what: what the file is, for the messages (e.g. ``"KA config"``).

    Returns:
        The mapping.

    Raises:
        FileNotFoundError: ``path`` is not a file (``"<what> not found: <path>"``).
        ValueError: the text is not valid YAML (file, line and column named) or its top level is not a mapping.
    """
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"{what} not found: {p}")
    try:
        data = yaml.safe_load(p.read_text(encoding="utf-8"))
    except yaml.YAMLError as err:
        raise ValueError(f"{p}: not valid YAML: {yaml_error_line(err)}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ValueError(f"{p}: the top level of a {what} must be a mapping, got {type(data).__name__}")  # noqa: TRY004
    return data


def validation_line(err: Any, source: str, what: str = "config") -> str:
    """Say in one line what a pydantic ``ValidationError`` of a config found.

    Args:
        err: the ``pydantic.ValidationError``.
        source: where the values came from (the YAML path, or ``"<defaults>"`` plus flags).
        what: what the config is (e.g. ``"KA config"``).

    Returns:
        e.g. ``"configs/ka/x.yaml: invalid KA config: dimensions: knowledge augmentation is defined for ..."``,
        every error joined with ``"; "``.
    """
    parts = []
    for item in err.errors():
        where = ".".join(str(p) for p in item.get("loc", ())) or "(top level)"
        parts.append(f"{where}: {str(item.get('msg', '')).removeprefix('Value error, ')}")
    return f"{source}: invalid {what}: " + "; ".join(parts)


def apply_overrides(data: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    """Return a copy of ``data`` with dotted-key ``overrides`` set (``{"a.b": 1}`` sets ``data["a"]["b"]``).

    Nested dict values of ``overrides`` are applied key by key; ``None`` values are skipped (so unset
    command-line flags change nothing). Intermediate mappings are created when missing.

    Args:
        data: the configuration mapping (not modified).
        overrides: ``{"dotted.key": value}`` (or nested dicts of the same).

    Returns:
        A deep copy of ``data`` with the overrides set.

    Raises:
        ValueError: when a dotted key walks into a value that is not a mapping.
    """
    out = copy.deepcopy(data)

    def flatten(prefix: str, value: Any):
        if isinstance(value, dict) and value:
            for k, v in value.items():
                yield from flatten(f"{prefix}.{k}" if prefix else str(k), v)
        else:
            yield prefix, value

    for key, value in overrides.items():
        for dotted, leaf in flatten(key, value):
            if leaf is None:
                continue
            parts = dotted.split(".")
            node = out
            for i, part in enumerate(parts[:-1]):
                nxt = node.get(part)
                if nxt is None:
                    nxt = node[part] = {}
                if not isinstance(nxt, dict):
                    raise ValueError(f"override {dotted}: {'.'.join(parts[: i + 1])} is not a mapping")  # noqa: TRY004
                node = nxt
            node[parts[-1]] = leaf
    return out

"""Where the files shipped with the package are: one lookup for checkouts, editable installs and wheels.

``surveyalign/resources/`` holds the sample release, the HTML report templates, and (as links to the repository's
top-level folders, copied into a wheel) the evaluate modules ``metrics/`` and the card templates ``hub_cards/``.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

__all__ = ["resource_path"]


def resource_path(*parts: str) -> Path:
    """The path of a file or folder under ``surveyalign/resources``.

    Args:
        *parts: path parts below ``resources``, e.g. ``("hub_cards", "model_card.md")`` or ``("metrics",)``.

    Returns:
        The path (it exists in a checkout, an editable install and a wheel install alike).
    """
    return Path(str(files("surveyalign"))).joinpath("resources", *parts)

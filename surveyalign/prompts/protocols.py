"""Named output protocols of the judge: how the answer is asked for, written and recognised.

``v1.0`` is the format printed in SurveyReview App. C (``Reason$$$X$$$``); ``v1.1`` is the tagged format of
the authors' later data release (``<reason>...</reason> <score>X</score>``). A protocol bundles the
"Answer format" paragraph of the prompt, the target template used for SFT examples and the patterns
:func:`surveyalign.prompts.parse_judgement` uses to find a score marker, so the three cannot disagree.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from surveyalign.constants import TARGET_TEMPLATES

__all__ = ["DEFAULT_PROTOCOL", "PROTOCOLS", "Protocol", "get_protocol"]

# A score token inside a marker: optional sign (ASCII or U+2212 minus), digits, optional decimals,
# padded with spaces, markdown emphasis or inline-code characters ("**-1**", "` 2 `"). One character
# class per side keeps matching linear (no nested `\s*` runs to backtrack over).
_PAD = r"[\s*_`]*"
_NUM = _PAD + r"(?P<num>[+\-\u2212]?\d+(?:\.\d+)?)" + _PAD
# The start of a score token that may have been cut: "-", "1", "-1.", "+2".
_PARTIAL_NUM = r"(?:(?:[+\-\u2212]\d*|\d+)(?:\.\d*)?" + _PAD + r")?"


@dataclass(frozen=True)
class Protocol:
    """One output protocol (SurveyReview App. C; v1.1 from the authors' later release).

    Attributes:
        name: protocol version, "v1.0" or "v1.1".
        format_text: the "Answer format" paragraph shown to the judge (no heading).
        target_template: ``str.format`` template with ``{rationale}`` and ``{score}`` for targets.
        marker: compiled pattern of one well-formed score marker; group ``num`` holds the score token.
        cut_tail: compiled pattern that matches when the (right-stripped) text ends inside an unfinished
            marker. With ``paired_delimiter`` set it is matched from the last unpaired delimiter onwards.
        paired_delimiter: a symmetric delimiter ("$$$" for v1.0). Occurrences pair up left to right, so
            only an odd one out can open a cut-off marker (a closed "$$$high$$$" is not cut off).
        reason_tags: (opening, closing) tags around an explicit rationale (matched case-insensitively),
            or None when the rationale is simply the text before the marker.
    """

    name: str
    format_text: str
    target_template: str
    marker: re.Pattern[str]
    cut_tail: re.Pattern[str]
    reason_tags: tuple[str, str] | None = None
    paired_delimiter: str | None = None

    def render_target(self, rationale: str, score: int) -> str:
        """Write ``rationale`` and an already validated ``score`` in this protocol's answer format.

        The SFT target of SurveyReview App. C (v1.0 ``Reason$$$X$$$``; v1.1 tagged). Validation of the
        score and joining of rationale snippets happen in :func:`surveyalign.prompts.format_target`.

        Args:
            rationale: the rationale text, inserted as is.
            score: one of -2, -1, 1, 2 (not checked here).

        Returns:
            The target string, e.g. ``"Clear.$$$1$$$"`` (v1.0) or
            ``"<reason>Clear.</reason> <score>1</score>"`` (v1.1).
        """
        return self.target_template.format(rationale=rationale, score=score)


_V10 = Protocol(
    name="v1.0",
    format_text=(
        "Write your rationale first, then close the answer with the score wrapped in triple dollar "
        "signs, and add nothing after it:\n"
        "Reason$$$X$$$\n"
        "Here X stands for -2, -1, 1 or 2 (so an answer ends like ...$$$-1$$$)."
    ),
    target_template=TARGET_TEMPLATES["v1.0"],
    marker=re.compile(r"\$\$\$" + _NUM + r"\$\$\$"),
    cut_tail=re.compile(r"\$\$\$" + _PAD + _PARTIAL_NUM + r"(?:\$\$?)?\Z"),
    paired_delimiter="$$$",
)

_V11 = Protocol(
    name="v1.1",
    format_text=(
        "Put your rationale between reason tags and the score between score tags, in this order, and "
        "add nothing after them:\n"
        "<reason>Reason</reason> <score>X</score>\n"
        "Here X stands for -2, -1, 1 or 2."
    ),
    target_template=TARGET_TEMPLATES["v1.1"],
    marker=re.compile(r"<score>" + _NUM + r"</score>", re.IGNORECASE),
    cut_tail=re.compile(
        r"(?:<score>" + _PAD + _PARTIAL_NUM + r"(?:<(?:/(?:s(?:c(?:o(?:r(?:e)?)?)?)?)?)?)?"
        r"|<(?:s(?:c(?:o(?:r(?:e)?)?)?)?)?)\Z",
        re.IGNORECASE,
    ),
    reason_tags=("<reason>", "</reason>"),
)

#: Protocol versions by name. "v1.0" is the paper's default.
PROTOCOLS: Mapping[str, Protocol] = MappingProxyType({p.name: p for p in (_V10, _V11)})

#: Protocol used when none is named (the format printed in SurveyReview App. C).
DEFAULT_PROTOCOL = "v1.0"


def get_protocol(name: str | Protocol) -> Protocol:
    """Return the :class:`Protocol` called ``name`` (a Protocol passes through unchanged).

    Raises:
        ValueError: if ``name`` is not a key of :data:`PROTOCOLS`.
    """
    if isinstance(name, Protocol):
        return name
    try:
        return PROTOCOLS[name]
    except (KeyError, TypeError):
        raise ValueError(f"unknown protocol {name!r}; expected one of {', '.join(PROTOCOLS)}") from None

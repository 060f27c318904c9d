"""The one parser of judge answers (SurveyReview App. C output format).

Rules:

* Reasoning is ignored: closed ``<think>...</think>`` blocks are removed; text before a lone ``</think>``
  (the opening tag was in the prompt) is reasoning too. An unclosed ``<think>`` means the answer was cut
  off while thinking: no score.
* Only the LAST well-formed score marker of the visible text counts (``$$$X$$$`` for v1.0,
  ``<score>X</score>`` for v1.1, either for "auto"). X may carry a sign, spaces, a ``.0`` decimal part
  and markdown emphasis (``+1``, ``1``, `` -2 ``, ``1.0``, ``**-1**``).
* The value must be exactly one of -2, -1, 1, 2. 0, -0, 3, 2.5 give no score; so does a missing
  marker or one cut off at the end of the text. Nothing is clamped, rounded or defaulted.
* Every failure returns ``score=None`` with a human-readable ``error``; the parser never raises on
  model output.
* The rationale is the visible text before the counted marker (v1.1: inside the last reason tags), with
  the earlier well-formed markers taken out (an earlier, revised score is not part of the rationale;
  "Fine, $$$1$$$ then; on reflection weak.$$$-1$$$" -> "Fine, then; on reflection weak."), and labels,
  emphasis and fences around it removed. When nothing but a label precedes the marker
  ("**Score:** $$$-1$$$") the score stands and the rationale is "" (``ParsedAnswer.has_rationale`` is
  False; ``surveyalign report`` counts such units per dimension).
* Text the judge quotes from its input never decides: given the input (``untrusted``), an answer-format token
  written as part of a quote of it (:func:`surveyalign.documents.untrusted.mask_quoted`) is neutralised first, so
  a quoted ``</think>`` drops nothing and a quoted ``$$$2$$$`` is not a marker; the tokens are named in
  ``ParsedAnswer.quoted``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from decimal import Decimal

from surveyalign.constants import VALID_SCORES
from surveyalign.documents.untrusted import mask_quoted
from surveyalign.prompts.protocols import PROTOCOLS, Protocol, get_protocol

__all__ = ["ParsedAnswer", "parse_judgement", "strip_reasoning"]

_THINK_TAG = re.compile(r"<(/?)think>", re.IGNORECASE)

# Cosmetics around a rationale: a leading "Reason:"/"Rationale:" label, a trailing "Score:" label,
# markdown emphasis and code-fence lines that belonged to the marker rather than to the rationale.
# They are looked for only in the first/last _WINDOW characters, which keeps the parser linear.
_WINDOW = 200
_LEAD_LABEL = re.compile(
    r"^(?:[*_#]+\s*)?(?:reason|rationale)\s*(?:[:\uff1a]\s*(?:[*_]+)?|(?:[*_]+)?\s*\n)\s*", re.IGNORECASE
)
_TRAIL_LABEL = re.compile(
    r"(?:^|(?<=\s))(?:(?:[*_#]+\s*)?(?:final\s+)?(?:score|rating|answer|verdict)\s*[:\uff1a=]\s*(?:[*_]+)?"
    r"|[*_#]+\s*(?:final\s+)?(?:score|rating)\s*(?:[*_]+)?)\s*$",
    re.IGNORECASE,
)
_LEAD_FENCE = re.compile(r"^```[^\n]*\n")
_TRAIL_FENCE = re.compile(r"\n?```[^\n]*$")


@dataclass(frozen=True)
class ParsedAnswer:
    """A parsed judge answer (SurveyReview App. C).

    Attributes:
        score: one of -2, -1, 1, 2, or None when no valid score could be read.
        rationale: the judge's rationale, stripped (v1.0: the visible text before the last marker;
            v1.1: the text inside the reason tags). On failure, the visible text (reasoning removed) so
            it can be inspected; "" when nothing is visible.
        error: None when ``score`` is set; otherwise why not (missing, cut off, invalid value, ...).
        quoted: answer-format tokens the judge quoted from its input, ignored (empty when none).
    """

    score: int | None
    rationale: str
    error: str | None = None
    quoted: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        """True when a valid score was read."""
        return self.score is not None

    @property
    def has_rationale(self) -> bool:
        """True when the answer carried a rationale (False for a bare "**Score:** $$$-1$$$" or a failure
        with nothing visible). A scored unit without rationale still counts for MSE/MAE; its RQS rating
        is up to the consistency judge."""
        return bool(self.rationale)


def strip_reasoning(text: str) -> tuple[str, str | None]:
    """Remove reasoning blocks from a model answer (the rule every answer reader shares).

    One left-to-right pass: a ``<think>`` opens a block (nested openers are part of it), the next
    ``</think>`` closes it; a ``</think>`` with no open block ends reasoning whose opener was in the
    prompt, so everything visible before it is dropped.

    Args:
        text: the raw answer.

    Returns:
        ``(visible_text, error)``: ``error`` is set (and the text ``""``) when a think block was left open,
        i.e. the answer was cut off while reasoning; else ``None``.
    """
    parts: list[str] = []
    pos = 0
    open_at: int | None = None
    for tag in _THINK_TAG.finditer(text):
        closing = tag.group(1) == "/"
        if not closing:
            if open_at is None:
                parts.append(text[pos : tag.start()])
                open_at = tag.start()
        elif open_at is not None:
            open_at = None
            pos = tag.end()
        else:
            parts = []
            pos = tag.end()
    if open_at is not None:
        return "", "unclosed <think> block: the output was cut off while reasoning"
    parts.append(text[pos:])
    return "".join(parts), None


def _ends_cut_off(protocol: Protocol, tail: str) -> bool:
    """True when ``tail`` (the text after the last well-formed marker) ends inside a started marker."""
    tail = tail.rstrip()
    if protocol.paired_delimiter is None:
        return protocol.cut_tail.search(tail) is not None
    delims = [m.start() for m in re.finditer(re.escape(protocol.paired_delimiter), tail)]
    if len(delims) % 2 == 0:
        return False
    return protocol.cut_tail.match(tail, delims[-1]) is not None


def _score_value(token: str) -> tuple[int | None, str | None]:
    """Turn a marker token such as '+1', '1.0' or '-2' into a valid score, or explain why not."""
    normalised = token.replace("\u2212", "-")
    value = Decimal(normalised)  # the marker pattern only admits numbers
    if value != value.to_integral_value():
        return None, f"score {token!r} is not an integer; expected one of -2, -1, 1, 2"
    as_int = int(value)
    if as_int not in VALID_SCORES:
        return None, f"score {token!r} is outside {{-2, -1, 1, 2}}"
    return as_int, None


def _strip_unbalanced_emphasis(text: str) -> str:
    """Drop a trailing run of ``*``/``_`` that has no partner ("Clear. **" -> "Clear.")."""
    i = len(text)
    while i > 0 and text[i - 1] in "*_":
        i -= 1
    run = text[i:]
    if run and text.count(run) % 2 == 1:
        return text[:i].rstrip()
    return text


def _clean_rationale(text: str) -> str:
    """Strip the cosmetics around a rationale: at most three nested layers of fences, labels and emphasis at each
    end (the patterns are anchored at the start / end of the text, so each removes one occurrence per layer)."""
    out = text.strip()
    for _ in range(3):  # labels, fences and emphasis can nest ("```\n**Score:** ")
        before = out
        head, tail = out[:-_WINDOW], out[-_WINDOW:]
        tail = _TRAIL_FENCE.sub("", tail).rstrip()
        tail = _TRAIL_LABEL.sub("", tail).rstrip()
        out = _strip_unbalanced_emphasis((head + tail).rstrip())
        # a lone inline-code backtick without a partner; a run of two or three is a fence (next layer)
        if out.endswith("`") and not out.endswith("``") and out.count("`") % 2 == 1:
            out = out[:-1].rstrip()
        head, rest = out[:_WINDOW], out[_WINDOW:]
        head = _LEAD_FENCE.sub("", head)
        head = _LEAD_LABEL.sub("", head)
        out = (head + rest).strip()
        if out == before:
            break
    return out


_JOIN_PUNCT = ".,;:!?"


def _drop_markers(text: str, protocols: tuple[Protocol, ...]) -> str:
    """Remove the well-formed score markers of ``protocols`` from ``text`` and tidy each join.

    Spaces around a removed marker collapse to one (none before punctuation: "First $$$2$$$, but" ->
    "First, but"); a punctuation mark right after it is dropped when the text before already ends in
    punctuation ("impression: $$$1$$$. Then" -> "impression: Then").
    """
    spans = sorted(m.span() for proto in protocols for m in proto.marker.finditer(text))
    if not spans:
        return text
    out, pos = "", 0
    for start, end in spans:
        if start < pos:  # overlapping matches of two protocols: the first one wins
            continue
        out += text[pos:start]
        pos = end
        rest = text[pos:]
        left, right = out.rstrip(" \t"), rest.lstrip(" \t")
        skipped = len(rest) - len(right)
        if right[:1] and right[0] in _JOIN_PUNCT and (not left or left[-1] in _JOIN_PUNCT + "\n"):
            right = right[1:].lstrip(" \t")
            skipped = len(rest) - len(right)
        pos += skipped
        gap = " " if left and right and left[-1] != "\n" and right[0] not in "\n)" + _JOIN_PUNCT else ""
        out = left + gap
    return out + text[pos:]


def _rationale_for(protocol: Protocol, visible: str, start: int, protocols: tuple[Protocol, ...]) -> str:
    """The rationale of the answer whose counted marker of ``protocol`` starts at ``start``.

    Earlier well-formed markers of any of ``protocols`` are removed; in "auto" mode a v1.0 answer also
    loses stray v1.1 reason tags.
    """
    before = visible[:start]
    if protocol.reason_tags is not None:
        opening, closing = protocol.reason_tags
        lowered = before.lower()
        close = lowered.rfind(closing)
        if close >= 0:
            open_ = lowered.rfind(opening, 0, close)
            if open_ >= 0:
                return _clean_rationale(_drop_markers(before[open_ + len(opening) : close], protocols))
        return _clean_rationale(_drop_markers(_tag_free(before, protocol.reason_tags), protocols))
    text = _drop_markers(before, protocols)
    for other in protocols:
        if other.reason_tags is not None:
            text = _tag_free(text, other.reason_tags)
    return _clean_rationale(text)


def _tag_free(text: str, tags: tuple[str, str]) -> str:
    for tag in tags:
        text = re.sub(re.escape(tag), "", text, flags=re.IGNORECASE)
    return text


def parse_judgement(text: str | None, protocol: str = "auto", *,
                    untrusted: Sequence[str] | None = None) -> ParsedAnswer:
    """Read the score and rationale out of one judge answer (SurveyReview App. C).

    Args:
        text: the raw generated text (may contain ``<think>`` blocks, markdown, code fences).
        protocol: "v1.0" (``Reason$$$X$$$``), "v1.1" (``<reason>...</reason> <score>X</score>``) or
            "auto" (whichever well-formed marker comes last).
        untrusted: the input texts the judge read (survey, title, knowledge); tokens the answer quotes from them
            are ignored (``ParsedAnswer.quoted``). ``None``: the answer is read as is.

    Returns:
        :class:`ParsedAnswer`; ``score`` in {-2, -1, 1, 2} or None with ``error`` set. Never raises for
        any model output.

    Raises:
        ValueError: only for an unknown ``protocol`` name (named in the message).
    """
    if protocol == "auto":
        protocols = tuple(PROTOCOLS.values())
    else:
        protocols = (get_protocol(protocol),)
    names = "/".join(p.name for p in protocols)
    if text is None or not str(text).strip():
        return ParsedAnswer(None, "", "empty output")
    answer, quoted = mask_quoted(str(text), untrusted)
    parsed = _parse(answer, protocols, names)
    return replace(parsed, quoted=quoted) if quoted else parsed


def _parse(text: str, protocols: tuple[Protocol, ...], names: str) -> ParsedAnswer:
    visible, error = strip_reasoning(text)
    if error is not None:
        return ParsedAnswer(None, "", error)
    shown = visible.strip()
    if not shown:
        return ParsedAnswer(None, "", "no answer after the reasoning block")

    best: tuple[Protocol, re.Match[str]] | None = None
    for proto in protocols:
        matches = list(proto.marker.finditer(visible))
        if matches and (best is None or matches[-1].start() > best[1].start()):
            best = (proto, matches[-1])

    tail_from = best[1].end() if best is not None else 0
    tail = visible[tail_from:]
    for proto in protocols:
        if _ends_cut_off(proto, tail):
            return ParsedAnswer(None, _clean_rationale(shown), f"score marker cut off at the end of the output ({proto.name})")
    if best is None:
        for proto in protocols:
            if proto.reason_tags is not None:
                lowered = visible.lower()
                opening, closing = proto.reason_tags
                last_open = lowered.rfind(opening)
                if last_open >= 0 and lowered.find(closing, last_open) < 0:
                    return ParsedAnswer(
                        None, _clean_rationale(shown), f"unclosed {opening} tag and no score: the output was cut off"
                    )
        return ParsedAnswer(None, _clean_rationale(shown), f"no score marker found ({names})")

    proto, match = best
    rationale = _rationale_for(proto, visible, match.start(), protocols)
    score, error = _score_value(match.group("num"))
    if error is not None:
        return ParsedAnswer(None, rationale, error)
    return ParsedAnswer(score, rationale, None)

"""Untrusted text is data: the answer-format tokens of every protocol, neutralised before a prompt and ignored
when a judge quotes them back (SurveyReview App. C answer formats; PaperOrchestra App. F.3 and PRISM JSON answers).

A survey, a paper or a review is written by the people it judges. Whatever in it looks like the answer a judge is
asked to give could decide the judge's score once the answer is read back. Two rules keep it data:

* :func:`neutralise` (before a prompt): every answer-format token of every protocol is changed into a look-alike
  that no answer reader accepts, with the same length, so offsets into the text stay valid and a reader still
  sees what was written:

  - score markers and stray ``$$$`` delimiters: ``$`` becomes ``＄`` (U+FF04) (``$$$2$$$`` -> ``＄＄＄2＄＄＄``);
  - ``<think>``, ``</think>``, ``<reason>``, ``</reason>``, ``<score>``, ``</score>``, ``<consistency>``,
    ``</consistency>`` (any case, inner spaces): ``<``/``>`` become ``‹``/``›`` (U+2039/U+203A); a whole RQS
    rating ``<consistency>0.6</consistency>`` is one token (kind ``"consistency rating"``), so the judge's own
    rating is told from a quoted one by the text around it (SurveyReview App. G);
  - a JSON key at the start of a line or right after ``{`` (``{"winner": "paper_2"}``, ``"score": 2``): its
    quotes become ``＂`` (U+FF02), so the object is no longer JSON.

  Each neutralised span is counted and named (:class:`NeutralisedSpan`) for the reports.
* :func:`mask_quoted` (when an answer is read): an answer-format token the judge wrote as part of a quote from the
  input (the token with at least :data:`MIN_CONTEXT` characters of the text next to it, on either side, occurs in
  the input once both are neutralised, case and spacing ignored) is neutralised in the answer before it is parsed,
  so it cannot close reasoning, count as the score or be the JSON verdict. The judge's own tokens stay as App. C
  defines them.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

__all__ = ["MIN_CONTEXT", "Neutralised", "NeutralisedSpan", "mask_quoted", "neutralise", "neutralise_text"]

#: Characters of neighbouring text (spaces not counted) a token needs, on one side, to count as quoted.
MIN_CONTEXT = 12
_WINDOW = 48  # characters read on each side of a token when looking for its context

_TOKEN = re.compile(
    r"(?P<marker>\$\$\$(?:[^$\n]{0,24}?\$\$\$)?)"
    r"|(?P<rating><\s*consistency\s*>[^<>\n]{0,24}<\s*/\s*consistency\s*>)"
    r"|(?P<tag><\s*/?\s*(?P<tagname>think|reason|score|consistency)\s*>)"
    r"|(?P<json>(?:^|(?<=\{))[ \t]*\"[^\"\n]{1,60}\"(?=[ \t]*:))",
    re.IGNORECASE | re.MULTILINE,
)
_SWAP = str.maketrans({"$": "\uff04", "<": "\u2039", ">": "\u203a", '"': "\uff02"})


@dataclass(frozen=True)
class NeutralisedSpan:
    """One answer-format token found in untrusted text.

    Attributes:
        kind: ``"score marker"``, ``"think tag"``, ``"reason tag"``, ``"score tag"``, ``"consistency tag"``,
            ``"consistency rating"`` or ``"json key"``.
        start: character offset in the text (the neutralised text has the same length).
        text: the token as written (e.g. ``"$$$2$$$"``, ``"</think>"``, ``'"winner"'``).
    """

    kind: str
    start: int
    text: str

    def to_dict(self) -> dict[str, object]:
        """``{"kind", "start", "text"}``."""
        return {"kind": self.kind, "start": self.start, "text": self.text}


@dataclass(frozen=True)
class Neutralised:
    """Untrusted text with its answer-format tokens neutralised.

    Attributes:
        text: the text, same length as the input, tokens changed into look-alikes no answer reader accepts.
        spans: every neutralised token, in text order.
    """

    text: str
    spans: tuple[NeutralisedSpan, ...] = ()

    def counts(self) -> dict[str, int]:
        """Neutralised tokens per kind (kinds in first-seen order)."""
        return dict(Counter(s.kind for s in self.spans))

    def summary(self, limit: int = 5) -> dict[str, object]:
        """The report view: ``{"n": int, "counts": {kind: n}, "examples": [token text, ...]}`` (at most
        ``limit`` distinct examples)."""
        examples = list(dict.fromkeys(s.text for s in self.spans))[:limit]
        return {"n": len(self.spans), "counts": self.counts(), "examples": examples}


def _kind(match: re.Match[str]) -> str:
    if match.group("marker") is not None:
        return "score marker"
    if match.group("rating") is not None:
        return "consistency rating"
    if match.group("tag") is not None:
        return f"{match.group('tagname').lower()} tag"
    return "json key"


def neutralise(text: str) -> Neutralised:
    """Neutralise every answer-format token of ``text`` (score markers, think/reason/score tags, JSON keys).

    Args:
        text: untrusted text (a survey, a paper, a review, a title, a knowledge block).

    Returns:
        :class:`Neutralised` with a text of the same length (``len(out.text) == len(text)``) and the spans.
        Neutralising twice changes nothing more.
    """
    if not text:
        return Neutralised(text or "")
    spans: list[NeutralisedSpan] = []
    parts: list[str] = []
    pos = 0
    for match in _TOKEN.finditer(text):
        token = match.group(0)
        stripped = token.lstrip(" \t")
        start = match.start() + len(token) - len(stripped)
        spans.append(NeutralisedSpan(_kind(match), start, stripped))
        parts += [text[pos:match.start()], token.translate(_SWAP)]
        pos = match.end()
    if not spans:
        return Neutralised(text)
    parts.append(text[pos:])
    return Neutralised("".join(parts), tuple(spans))


def neutralise_text(text: str | None) -> str | None:
    """:func:`neutralise` returning the text alone (``None`` stays ``None``)."""
    return None if text is None else neutralise(text).text


def _norm(text: str) -> str:
    return " ".join(neutralise(text).text.casefold().split())


def _quoted(answer: str, start: int, end: int, sources: Sequence[str]) -> bool:
    token = answer[start:end]
    left = answer[max(0, start - _WINDOW):start]
    right = answer[end:end + _WINDOW]
    pieces = []
    for side, piece in (("left", left), ("right", right)):
        context = " ".join(piece.split())
        if len(context.replace(" ", "")) < MIN_CONTEXT:
            continue
        # the context's first (right) / last (left) MIN_CONTEXT non-space characters next to the token
        words, kept = [], 0
        seq = context.split(" ")
        for word in (seq if side == "right" else reversed(seq)):
            words.append(word)
            kept += len(word)
            if kept >= MIN_CONTEXT:
                break
        near = " ".join(words if side == "right" else reversed(words))
        pieces.append(_norm(token + " " + near) if side == "right" else _norm(near + " " + token))
        pieces.append(_norm(token + near) if side == "right" else _norm(near + token))
    return any(piece in source for piece in pieces for source in sources)


def mask_quoted(answer: str, untrusted: Iterable[str] | None) -> tuple[str, tuple[str, ...]]:
    """Neutralise the answer-format tokens of ``answer`` that quote the untrusted input.

    Args:
        answer: a judge's raw answer.
        untrusted: the input texts the judge read (the survey, the papers, the review) as given to the prompt
            builder, before or after :func:`neutralise`; ``None`` or empty: nothing is masked.

    Returns:
        ``(answer, quoted)``: the answer with its quoted tokens neutralised (same length) and the quoted tokens in
        answer order (empty when none).
    """
    sources = [_norm(s) for s in (untrusted or ()) if s]
    if not sources or not answer:
        return answer, ()
    out: list[str] = []
    quoted: list[str] = []
    pos = 0
    for match in _TOKEN.finditer(answer):
        token = match.group(0)
        core = token.lstrip(" \t")
        start = match.start() + len(token) - len(core)
        if not _quoted(answer, start, match.end(), sources):
            continue
        quoted.append(core)
        out += [answer[pos:match.start()], token.translate(_SWAP)]
        pos = match.end()
    if not quoted:
        return answer, ()
    out.append(answer[pos:])
    return "".join(out), tuple(quoted)

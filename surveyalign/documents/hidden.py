"""What a reader of the rendered document cannot see: found, reported, and dropped only when it never renders.

A survey can carry text its human readers never see and its judge reads all the same. Every reader of a document
reports it as :class:`HiddenText` records (``Document.hidden``, the "hidden text" section of every report):

* LaTeX that never renders is dropped from the text: ``\\iffalse ... \\fi`` and the false branch of a conditional
  made with ``\\newif\\ifX`` whose ``\\Xtrue`` is never given (a new conditional starts false).
* LaTeX that renders invisibly is kept but listed: ``\\phantom``/``\\hphantom``/``\\vphantom`` arguments,
  ``\\textcolor{white}{...}``, ``\\color{white}`` (to the end of its group).
* PDF text that is white, at most 1 pt or in render mode 3 (invisible) is kept but listed
  (:mod:`surveyalign.documents.pdf`): a scanned PDF's OCR layer is invisible text and is the document's text.
* Unicode tag characters (U+E0000-U+E007F) are removed; zero-width characters and bidi controls are listed and
  kept in the text, and :func:`clean_title` keeps them out of a title shown in a report.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

__all__ = ["EXCERPT_CHARS", "HiddenText", "PdfHiddenText", "clean_title", "document_hidden", "hidden_lines",
           "hidden_section", "hidden_summary", "scan_latex", "scan_unicode"]

#: Characters of hidden text quoted in a record's excerpt.
EXCERPT_CHARS = 80

_TAG_CHARS = re.compile("[\U000e0000-\U000e007f]+")
_ZERO_WIDTH = "\u200b\u200c\u200d\u2060\ufeff\u180e"
_BIDI = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c"
_INVISIBLE = re.compile(f"[{_ZERO_WIDTH}{_BIDI}]+")


@dataclass(frozen=True)
class HiddenText:
    """One piece of text a reader of the rendered document would not see.

    Attributes:
        kind: what hides it (``"latex \\iffalse"``, ``"latex false \\newif"``, ``"latex phantom"``, ``"latex white
            text"``, ``"pdf white text"``, ``"pdf tiny text"``, ``"pdf invisible text"``, ``"unicode tag
            characters"``, ``"zero-width characters"``, ``"bidi controls"``).
        action: ``"dropped"`` (never renders: not in the text), ``"removed"`` (Unicode tags) or ``"kept"``
            (in the text the judge reads, listed here).
        excerpt: the hidden text, at most :data:`EXCERPT_CHARS` characters, invisible characters written as
            ``<U+XXXX>``.
        chars: its length in characters.
        where: where it was found (``"line 12"``, ``"page 3"``, ``"title"``), ``""`` when unknown.
    """

    kind: str
    action: str
    excerpt: str
    chars: int
    where: str = ""

    def to_dict(self) -> dict[str, object]:
        """``{"kind", "action", "excerpt", "chars", "where"}``."""
        return {"kind": self.kind, "action": self.action, "excerpt": self.excerpt, "chars": self.chars,
                "where": self.where}


def _show(text: str) -> str:
    return "".join(f"<U+{ord(c):04X}>" if c in _ZERO_WIDTH or c in _BIDI or 0xE0000 <= ord(c) <= 0xE007F else c
                   for c in text)


def _excerpt(text: str) -> str:
    flat = " ".join(text.split())
    return _show(flat[:EXCERPT_CHARS] + ("..." if len(flat) > EXCERPT_CHARS else ""))


def _line(text: str, index: int) -> str:
    return f"line {text.count(chr(10), 0, index) + 1}"


def _group_end(text: str, start: int) -> int:
    """Index after the brace group opening at ``text[start] == "{"`` (the text's end when unbalanced)."""
    depth = 0
    for i in range(start, len(text)):
        if text[i] == "\\":
            continue
        if text[i] == "{" and (i == 0 or text[i - 1] != "\\"):
            depth += 1
        elif text[i] == "}" and text[i - 1] != "\\":
            depth -= 1
            if depth == 0:
                return i + 1
    return len(text)


def _conditional_end(text: str, start: int) -> tuple[int, int, int]:
    """For a conditional whose ``\\if...`` ends at ``start``: ``(else_at, fi_at, after_fi)``; nested ``\\if``s
    are skipped; ``else_at`` is -1 without an ``\\else``; a missing ``\\fi`` ends at the text's end."""
    depth, else_at = 0, -1
    for match in re.finditer(r"\\(if[a-zA-Z@]*|else|fi)(?![a-zA-Z@])", text[start:]):
        word = match.group(1)
        if word == "fi":
            if depth == 0:
                return else_at, start + match.start(), start + match.end()
            depth -= 1
        elif word == "else":
            if depth == 0 and else_at < 0:
                else_at = start + match.start()
        elif word not in ("ifthenelse",):
            depth += 1
    return else_at, len(text), len(text)


def scan_latex(source: str) -> tuple[str, list[HiddenText]]:
    """Drop LaTeX that never renders and list LaTeX that renders invisibly (comments already removed).

    Args:
        source: the flattened LaTeX project (preamble and body).

    Returns:
        ``(source, found)``: the source without ``\\iffalse`` blocks and false ``\\newif`` branches (their
        ``\\else`` branch kept), and one :class:`HiddenText` per dropped block, phantom, or white text.
    """
    found: list[HiddenText] = []
    false_ifs = {name for name in re.findall(r"\\newif\s*\\if([a-zA-Z@]+)", source)
                 if not re.search(r"\\" + re.escape(name) + r"true(?![a-zA-Z@])", source)}
    names = ["false", *sorted(false_ifs)]
    pattern = re.compile(r"\\if(" + "|".join(re.escape(n) for n in names) + r")(?![a-zA-Z@])")
    out, pos = [], 0
    for match in pattern.finditer(source):
        if match.start() < pos or source[max(0, match.start() - 6):match.start()].endswith("\\newif"):
            continue
        else_at, fi_at, after = _conditional_end(source, match.end())
        hidden = source[match.end():else_at if else_at >= 0 else fi_at]
        kind = "latex \\iffalse" if match.group(1) == "false" else "latex false \\newif"
        found.append(HiddenText(kind, "dropped", _excerpt(hidden), len(hidden), _line(source, match.start())))
        out.append(source[pos:match.start()])
        if else_at >= 0:
            out.append(source[else_at + len("\\else"):fi_at])
        pos = after
    out.append(source[pos:])
    source = "".join(out)
    for match in re.finditer(r"\\(?:h|v)?phantom\s*(?=\{)|\\textcolor\s*\{\s*white\s*\}\s*(?=\{)", source):
        end = _group_end(source, match.end())
        inner = source[match.end() + 1:end - 1]
        kind = "latex phantom" if "phantom" in match.group(0) else "latex white text"
        found.append(HiddenText(kind, "kept", _excerpt(inner), len(inner), _line(source, match.start())))
    for match in re.finditer(r"\\color\s*\{\s*white\s*\}", source):
        depth, end = 0, len(source)
        for i in range(match.end(), len(source)):  # to the end of the enclosing group
            if source[i] == "{" and source[i - 1] != "\\":
                depth += 1
            elif source[i] == "}" and source[i - 1] != "\\":
                if depth == 0:
                    end = i
                    break
                depth -= 1
        inner = source[match.end():end]
        found.append(HiddenText("latex white text", "kept", _excerpt(inner), len(inner), _line(source, match.start())))
    return source, found


def scan_unicode(text: str, where: str = "") -> tuple[str, list[HiddenText]]:
    """Remove Unicode tag characters and list zero-width characters and bidi controls.

    Args:
        text: a document's text (or title).
        where: where the text is (``"text"``, ``"title"``), recorded with each finding.

    Returns:
        ``(text, found)``: the text without tag characters (zero-width and bidi characters kept), and one
        :class:`HiddenText` per run of tag characters (removed) and per kind of invisible character (kept,
        with its count and the first run's neighbourhood as the excerpt).
    """
    found: list[HiddenText] = []
    for match in _TAG_CHARS.finditer(text):
        decoded = "".join(chr(ord(c) - 0xE0000) if 0x20 <= ord(c) - 0xE0000 < 0x7F else "?" for c in match.group(0))
        found.append(HiddenText("unicode tag characters", "removed", _excerpt(decoded), len(match.group(0)),
                                where or _line(text, match.start())))
    if found:
        text = _TAG_CHARS.sub("", text)
    for kind, chars in (("zero-width characters", _ZERO_WIDTH), ("bidi controls", _BIDI)):
        hits = [i for i, c in enumerate(text) if c in chars]
        if hits:
            first = hits[0]
            found.append(HiddenText(kind, "kept", _excerpt(text[max(0, first - 20):first + 20]), len(hits),
                                    where or _line(text, first)))
    return text, found


def clean_title(title: str | None) -> str:
    """A title for a report: tag, zero-width and bidi characters removed (an RLO cannot reverse a report)."""
    return _INVISIBLE.sub("", _TAG_CHARS.sub("", title or ""))


def hidden_summary(found: Iterable[HiddenText | dict], limit: int = 20) -> dict[str, object]:
    """The report/JSON view of hidden text: ``{"n", "counts": {kind: n}, "chars": {kind: chars}, "items":
    [record dict, ...] (the first ``limit``)}``."""
    items = [f.to_dict() if isinstance(f, HiddenText) else dict(f) for f in found]
    counts, chars = Counter(), Counter()
    for item in items:
        counts[str(item["kind"])] += 1
        chars[str(item["kind"])] += int(item.get("chars") or 0)
    return {"n": len(items), "counts": dict(counts), "chars": dict(chars), "items": items[:limit]}


def hidden_lines(summary: dict | None) -> Sequence[str]:
    """Markdown lines of a "hidden text" section from :func:`hidden_summary` (and the neutralised answer tokens
    under ``"neutralised"`` when given): ``[]`` when there is nothing to show."""
    if not summary:
        return []
    lines = []
    for item in summary.get("items") or []:
        lines.append(f"- {item['kind']} ({item['action']}, {item['chars']} chars{', ' + item['where'] if item.get('where') else ''}): "
                     f"`{item['excerpt']}`")
    neutral = summary.get("neutralised") or {}
    if neutral.get("n"):
        kinds = ", ".join(f"{n} {k}" for k, n in (neutral.get("counts") or {}).items())
        lines.append(f"- answer-format tokens neutralised before the judge read them: {kinds} "
                     f"({', '.join('`' + e + '`' for e in neutral.get('examples') or [])})")
    return lines


def _text_of(operand: object) -> str:
    if isinstance(operand, bytes):
        return operand.decode("latin-1")
    return operand if isinstance(operand, str) else ""


class PdfHiddenText:
    """Lists the text of a PDF page that is drawn invisibly (render mode 3), white, or at most 1 pt high.

    Fed by pypdf's ``visitor_operand_before(operator, operands, cm, tm)`` (:meth:`operator`); the graphics state
    (fill colour, render mode, font size) follows ``q``/``Q``. Call :meth:`start_page` before a page and
    :meth:`end_page` after it; :attr:`found` then holds one :class:`HiddenText` (action ``"kept"``) per kind and
    page.
    """

    _WHITE_MIN = 0.999
    #: Effective text height (points) at or below which text counts as tiny.
    TINY_POINTS = 1.0

    def __init__(self) -> None:
        self.found: list[HiddenText] = []
        self.start_page(0)

    def start_page(self, number: int) -> None:
        """Reset the state for page ``number`` (1-based)."""
        self.number, self.white, self.mode, self.size = number, False, 0, 12.0
        self.stack: list[tuple[bool, int, float]] = []
        self.runs: dict[str, list[str]] = {}

    def end_page(self) -> None:
        """Record the page's hidden runs."""
        for kind, texts in self.runs.items():
            joined = " ".join(" ".join(texts).split())
            if joined:
                self.found.append(HiddenText(kind, "kept", _excerpt(joined), len(joined), f"page {self.number}"))
        self.runs = {}

    def operator(self, op: bytes, operands: Sequence[object], cm: Sequence[float], tm: Sequence[float]) -> None:
        """Follow one content operator (pypdf's ``visitor_operand_before``)."""
        try:
            self._operator(op, operands, cm, tm)
        except (TypeError, ValueError, IndexError):  # a malformed operand: the state is left as it was
            return

    def _operator(self, op: bytes, operands: Sequence[object], cm: Sequence[float], tm: Sequence[float]) -> None:
        if op == b"q":
            self.stack.append((self.white, self.mode, self.size))
        elif op == b"Q" and self.stack:
            self.white, self.mode, self.size = self.stack.pop()
        elif op == b"Tr":
            self.mode = int(operands[0])
        elif op == b"Tf":
            self.size = float(operands[1])
        elif op in (b"rg", b"g", b"sc", b"scn") and operands:
            values = [float(v) for v in operands if isinstance(v, (int, float))]
            self.white = bool(values) and len(values) in (1, 3) and min(values) >= self._WHITE_MIN
        elif op == b"k":
            self.white = all(float(v) <= 1 - self._WHITE_MIN for v in operands[:4])
        elif op in (b"Tj", b"'", b'"', b"TJ") and operands:
            last = operands[-1]
            text = "".join(_text_of(p) for p in last) if op == b"TJ" else _text_of(last)
            if not text.strip():
                return
            height = abs(self.size) * math.hypot(float(tm[2]), float(tm[3])) * math.hypot(float(cm[2]), float(cm[3]))
            kind = ("pdf invisible text" if self.mode == 3 else "pdf white text" if self.white
                    else "pdf tiny text" if height <= self.TINY_POINTS else None)
            if kind is not None:
                self.runs.setdefault(kind, []).append(text)


def document_hidden(text: str | None, hidden: Iterable[HiddenText | dict] = (), *, title: str | None = None,
                    scan: bool = False) -> dict[str, object]:
    """The hidden-text record of one document for a report's JSON: what its reader listed, and the answer-format
    tokens neutralised before a judge read it (:func:`surveyalign.documents.untrusted.neutralise`).

    Args:
        text: the document's text as the judge reads it.
        hidden: the reader's records (``Document.hidden``).
        title: its title, when the judge reads one.
        scan: also list the Unicode tag, zero-width and bidi characters of ``text`` and ``title``
            (:func:`scan_unicode`): for texts that did not come through a reader (a dataset's text column).

    Returns:
        :func:`hidden_summary` of the records plus ``"neutralised"``: ``{"n", "counts", "examples"}``.
    """
    from surveyalign.documents.untrusted import neutralise

    found = list(hidden)
    if scan:
        found += scan_unicode(text or "", "text")[1] + (scan_unicode(title, "title")[1] if title else [])
    return {**hidden_summary(found), "neutralised": neutralise((text or "") + "\n" + (title or "")).summary()}


def hidden_section(documents: dict[str, dict] | None) -> list[str]:
    """Markdown lines of the "hidden text" section of a report over several documents: each line of
    :func:`hidden_lines` led by the document's name; ``["none found"]`` when no document has anything.

    Args:
        documents: document name -> :func:`document_hidden` record.
    """
    lines = [f"- {name}: {line[2:]}" for name, record in (documents or {}).items() for line in hidden_lines(record)]
    return lines or ["none found"]

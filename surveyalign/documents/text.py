"""Light markdown helpers: title, abstract and reference list of a survey text (SurveyReview §4.2).

Whole-text regular expressions (no line-by-line Python loops), so 100 kB texts cost well under a millisecond.
"""

from __future__ import annotations

import hashlib
import re

__all__ = ["extract_abstract", "extract_references", "extract_title", "fingerprint"]

_H1_RE = re.compile(r"^[ \t]{0,3}#[ \t]+(\S[^\n]*?)[ \t#]*$", re.MULTILINE)
_ANY_HEADING_RE = re.compile(r"^[ \t]{0,3}#{1,6}[ \t]+(\S[^\n]*?)[ \t#]*$", re.MULTILINE)
_NEXT_HEADING_RE = re.compile(r"^[ \t]{0,3}#{1,6}[ \t]", re.MULTILINE)
#: A section title line: a markdown heading or a bold line, e.g. "## Abstract", "**References**", "# 7 References".
_SECTION_TMPL = r"^[ \t]{{0,3}}(?:#{{1,6}}[ \t]+|(?:\*\*|__))[*_ ]*(?:\d+\.?[ \t]*)?(?:{names})[*_:. \t]*$"
_ABSTRACT_RE = re.compile(_SECTION_TMPL.format(names="abstract"), re.IGNORECASE | re.MULTILINE)
_REF_NAMES = ("references", "bibliography", "works cited", "literature cited", "cited literature")
_REFS_RE = re.compile(
    _SECTION_TMPL.format(names="|".join(_REF_NAMES)),
    re.IGNORECASE | re.MULTILINE,
)
_ENTRY_RE = re.compile(r"^\s*(?:\[\d+\]|\d+[.)]|[-*+]\s)\s*")


def extract_title(text: str) -> str:
    """First level-1 markdown heading, else the first heading, else the first non-empty line ("" if none)."""
    m = _H1_RE.search(text) or _ANY_HEADING_RE.search(text)
    if m:
        return m.group(1).strip()
    return next((line.strip()[:300] for line in text.split("\n", 50) if line.strip()), "")


def _section_body(text: str, pattern: re.Pattern, names: tuple[str, ...]) -> str | None:
    """Body of the first section whose title line matches ``pattern``; lines are located by a plain
    case-insensitive search for ``names`` first (a whole-text multiline regex is slow on 100 kB texts)."""
    lowered = text.lower()
    best: tuple[int, int] | None = None
    for name in names:
        i = lowered.find(name)
        while i >= 0 and (best is None or i < best[0]):
            start = text.rfind("\n", 0, i) + 1
            end = text.find("\n", i)
            end = len(text) if end < 0 else end
            if pattern.match(text, start, end):
                best = (start, end)
                break
            i = lowered.find(name, end)
    if best is None:
        return None
    nxt = _NEXT_HEADING_RE.search(text, best[1])
    return text[best[1] : nxt.start() if nxt else len(text)]


def extract_abstract(text: str) -> str:
    """Body of the section headed "Abstract" (markdown heading or bold line), "" when there is none."""
    body = _section_body(text, _ABSTRACT_RE, ("abstract",))
    return body.strip() if body else ""


def extract_references(text: str) -> list[str]:
    """Entries of the first "References"/"Bibliography" section, list markers ("1.", "[1]", "-") removed.

    Returns:
        One string per entry, in order; [] when the text has no reference section. A line that does not start
        with a list marker continues the previous entry (wrapped entries) when the section uses markers;
        otherwise every non-empty line is an entry.
    """
    body = _section_body(text, _REFS_RE, _REF_NAMES)
    if not body:
        return []
    lines = [line for line in body.split("\n") if line.strip()]
    marked = any(_ENTRY_RE.match(line) for line in lines)
    entries: list[str] = []
    for line in lines:
        if not marked or _ENTRY_RE.match(line) or not entries:
            entries.append(_ENTRY_RE.sub("", line, count=1).strip())
        else:  # continuation line of a wrapped entry
            entries[-1] = f"{entries[-1]} {line.strip()}"
    return [e for e in entries if e]


def fingerprint(value: str) -> str:
    """sha256 hex of ``value`` lower-cased with every non-alphanumeric character removed ("" for empty)."""
    norm = re.sub(r"[\W_]+", "", value.lower())
    return hashlib.sha256(norm.encode("utf-8")).hexdigest() if norm else ""

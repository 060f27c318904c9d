"""Light markdown helpers: title, abstract and reference list of a survey text (SurveyReview §4.2)."""

from __future__ import annotations

import hashlib
import re

_HEADING_RE = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_BOLD_LINE_RE = re.compile(r"^\s*(?:\*\*|__)(.+?)(?:\*\*|__)\s*:?\s*$")
_ABSTRACT_RE = re.compile(r"^[*_\s]*abstract[*_:.\s]*$", re.IGNORECASE)
_REFS_RE = re.compile(r"^[*_\s]*(?:\d+\.?\s*)?(references|bibliography|works cited|literature cited|cited literature)"
                      r"[*_:.\s]*$", re.IGNORECASE)
_ENTRY_RE = re.compile(r"^\s*(?:\[\d+\]|\d+[.)]|[-*+]\s)\s*")


def _section_name(line: str) -> str | None:
    m = _HEADING_RE.match(line)
    if m:
        return m.group(2)
    m = _BOLD_LINE_RE.match(line)
    return m.group(1) if m else None


def extract_title(text: str) -> str:
    """First level-1 markdown heading, else the first heading, else the first non-empty line ("" if none)."""
    first_heading = None
    for line in text.split("\n"):
        m = _HEADING_RE.match(line)
        if m:
            if len(m.group(1)) == 1 and m.group(2).strip():
                return m.group(2).strip()
            first_heading = first_heading or m.group(2).strip()
    if first_heading:
        return first_heading
    return next((line.strip()[:300] for line in text.split("\n") if line.strip()), "")


def _section_lines(text: str, pattern: re.Pattern) -> list[str] | None:
    lines = text.split("\n")
    for i, line in enumerate(lines):
        name = _section_name(line)
        if name is not None and pattern.match(name):
            body = []
            for nxt in lines[i + 1 :]:
                if _HEADING_RE.match(nxt):
                    break
                body.append(nxt)
            return body
    return None


def extract_abstract(text: str) -> str:
    """Body of the section headed "Abstract" (markdown heading or bold line), "" when there is none."""
    body = _section_lines(text, _ABSTRACT_RE)
    return "\n".join(body).strip() if body else ""


def extract_references(text: str) -> list[str]:
    """Entries of the "References"/"Bibliography" section, list markers ("1.", "[1]", "-") removed.

    Returns:
        One string per entry, in order; [] when the text has no reference section.
    """
    body = _section_lines(text, _REFS_RE)
    if not body:
        return []
    entries: list[str] = []
    marked = any(_ENTRY_RE.match(line) for line in body)
    for line in body:
        if not line.strip():
            continue
        if not marked or _ENTRY_RE.match(line) or not entries:
            entries.append(_ENTRY_RE.sub("", line, count=1).strip())
        else:  # continuation line of a wrapped entry
            entries[-1] = f"{entries[-1]} {line.strip()}"
    return [e for e in entries if e]


def fingerprint(value: str) -> str:
    """sha256 hex of ``value`` lower-cased with every non-alphanumeric character removed ("" for empty)."""
    norm = re.sub(r"[\W_]+", "", value.lower())
    return hashlib.sha256(norm.encode("utf-8")).hexdigest() if norm else ""

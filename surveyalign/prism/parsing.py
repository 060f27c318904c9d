"""Strict readers of the extraction answers (one JSON object per answer; PRISM pipelines).

:func:`parse_json_object` reads an answer with the shared :func:`surveyalign.prompts.read_json_answer`
(reasoning blocks removed, exactly one JSON object, bare or in one fence); an unreadable answer is a failure with
a reason, never a guess, and what the reader tolerates but reports (text around the object, duplicate keys)
goes to ``notes`` and from there to the extraction log. The per-stage readers then check each item: an item with a bad
label falls back to the documented default and the fallback is recorded in ``defaults``; an item that cannot
be used at all is left out and recorded in ``invalid``. Nothing is filled silently.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from surveyalign.prism.units import (
    ADU,
    ASPECTS,
    COMMENT_TYPES,
    CONSTRUCTIVENESS_AXES,
    GROUNDING_LEVELS,
    REVIEW_SECTIONS,
    ROLES,
    SEVERITY_WEIGHTS,
    STANCES,
    VERDICT_SCORES,
    ReviewComment,
)
from surveyalign.prompts import read_json_answer

__all__ = [
    "Parsed",
    "parse_adus",
    "parse_claims",
    "parse_comments",
    "parse_flaws",
    "parse_groups",
    "parse_json_object",
    "parse_validation",
    "parse_verdict",
]

@dataclass
class Parsed:
    """The result of reading one answer.

    Attributes:
        value: the extracted value (a list of units, a verdict, ...); None when the answer was unusable.
        error: why the answer was unusable (None on success).
        defaults: one line per item field that fell back to its default (e.g. ``"unit 3: role 'fact' -> claim"``).
        invalid: one line per item that was left out (e.g. ``"comment 2: tone 5 not in {0, 1, 2}"``).
        notes: what the JSON reader tolerated but reported (``"extra text around the JSON object"``,
            ``"duplicate key(s): units"``).
    """

    value: Any = None
    error: str | None = None
    defaults: list[str] = field(default_factory=list)
    invalid: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when the answer was read (items may still have defaults or be invalid)."""
        return self.error is None


def parse_json_object(text: str | None, key: str | None = None, *, untrusted: Sequence[str] | None = None) -> Parsed:
    """Read an answer that must hold one JSON object (via :func:`surveyalign.prompts.read_json_answer`).

    Args:
        text: the model's answer.
        key: a key the object must have (its value is returned), or None to return the whole object.
        untrusted: the inputs the model read (the review, the paper); what the answer quotes from them never
            decides (reported in ``notes``).

    Returns:
        :class:`Parsed` with ``value`` the object (or ``object[key]``) and the reader's reported problems in
        ``notes``, or ``error`` saying what was wrong.
    """
    answer = read_json_answer(text, untrusted=untrusted)
    if not answer.ok:
        return Parsed(error="; ".join(answer.problems))
    obj, notes = answer.data, list(answer.problems)
    if key is not None:
        if key not in obj:
            return Parsed(error=f"JSON object has no key {key!r} (keys: {sorted(obj)})", notes=notes)
        return Parsed(value=obj[key], notes=notes)
    return Parsed(value=obj, notes=notes)


def _items(text: str | None, key: str, untrusted: Sequence[str] | None = None) -> tuple[Parsed, list[Any]]:
    parsed = parse_json_object(text, key, untrusted=untrusted)
    if parsed.ok and not isinstance(parsed.value, list):
        return Parsed(notes=parsed.notes, error=f"{key!r} must be a list, got {type(parsed.value).__name__}"), []
    return parsed, (parsed.value if parsed.ok else [])


def _with_text(items: list[Any], what: str, out: Parsed):
    """``(index, item)`` for each item that is an object with a non-empty ``text``; the others are recorded."""
    for i, item in enumerate(items):
        if not isinstance(item, dict) or not str(item.get("text") or "").strip():
            out.invalid.append(f"{what} {i}: no text")
            continue
        yield i, item


def _label(value: Any) -> str:
    return str(value).strip().lower().replace("_", " ") if value is not None else ""


def parse_adus(text: str | None, *, untrusted: Sequence[str] | None = None) -> Parsed:
    """ADUs of a review: a bad role / aspect becomes claim / other (recorded, :attr:`ADU.defaulted`); a bad
    premise grounding becomes None (ungraded, recorded); a unit without text is left out (recorded)."""
    parsed, items = _items(text, "units", untrusted)
    if not parsed.ok:
        return parsed
    out = Parsed(notes=parsed.notes, value=[])
    for i, item in _with_text(items, "unit", out):
        role, aspect, defaulted = _label(item.get("role")), _label(item.get("aspect")), False
        if role not in ROLES or aspect not in ASPECTS:
            out.defaults.append(f"unit {i}: role {item.get('role')!r} / aspect {item.get('aspect')!r} -> claim / other")
            role, aspect, defaulted = "claim", "other", True
        grounding = item.get("grounding")
        if role == "claim":
            grounding = None
        elif isinstance(grounding, bool) or grounding not in GROUNDING_LEVELS:
            out.defaults.append(f"unit {i}: premise grounding {grounding!r} -> ungraded")
            grounding = None
        out.value.append(ADU(str(item["text"]).strip(), role, aspect, grounding, defaulted))
    return out


def parse_claims(text: str | None, *, untrusted: Sequence[str] | None = None) -> Parsed:
    """Novelty claims as ``(text, stance)``; a bad stance becomes "somewhat novel" (recorded)."""
    parsed, items = _items(text, "claims", untrusted)
    if not parsed.ok:
        return parsed
    out = Parsed(notes=parsed.notes, value=[])
    for i, item in _with_text(items, "claim", out):
        stance = _label(item.get("stance"))
        if stance not in STANCES:
            out.defaults.append(f"claim {i}: stance {item.get('stance')!r} -> somewhat novel")
            stance = "somewhat novel"
        out.value.append((str(item["text"]).strip(), stance))
    return out


def parse_verdict(text: str | None, *, untrusted: Sequence[str] | None = None) -> Parsed:
    """A (claim, prior paper) verdict -> its score in -2..2 (an unknown verdict is a failure, never 0)."""
    parsed = parse_json_object(text, "verdict", untrusted=untrusted)
    if not parsed.ok:
        return parsed
    verdict = _label(parsed.value)
    if verdict not in VERDICT_SCORES:
        return Parsed(notes=parsed.notes, error=f"verdict {parsed.value!r} not one of {list(VERDICT_SCORES)}")
    return Parsed(notes=parsed.notes, value=VERDICT_SCORES[verdict])


def parse_flaws(text: str | None, *, untrusted: Sequence[str] | None = None) -> Parsed:
    """Atomic flaws as dicts ``{text, quote, section}``; a bad section becomes "weaknesses" (recorded)."""
    parsed, items = _items(text, "flaws", untrusted)
    if not parsed.ok:
        return parsed
    out = Parsed(notes=parsed.notes, value=[])
    for i, item in _with_text(items, "flaw", out):
        section = _label(item.get("section"))
        if section not in REVIEW_SECTIONS:
            out.defaults.append(f"flaw {i}: section {item.get('section')!r} -> weaknesses")
            section = "weaknesses"
        out.value.append({"text": str(item["text"]).strip(), "quote": str(item.get("quote") or "").strip(),
                          "section": section})
    return out


def parse_groups(text: str | None, n: int, *, untrusted: Sequence[str] | None = None) -> Parsed:
    """Flaw groups: a partition of ``range(n)`` into lists of entry numbers (anything else is a failure)."""
    parsed, items = _items(text, "groups", untrusted)
    if not parsed.ok:
        return parsed
    seen: list[int] = []
    groups = []
    for g, group in enumerate(items):
        if not isinstance(group, list) or not group or not all(isinstance(x, int) and not isinstance(x, bool)
                                                               for x in group):
            return Parsed(notes=parsed.notes, error=f"group {g} is not a non-empty list of entry numbers")
        groups.append(sorted(group))
        seen.extend(group)
    if sorted(seen) != list(range(n)):
        return Parsed(notes=parsed.notes, error=f"groups do not cover entries 0..{n - 1} exactly once")
    return Parsed(notes=parsed.notes, value=groups)


def parse_validation(text: str | None, *, untrusted: Sequence[str] | None = None) -> Parsed:
    """Flaw validation -> ``(valid: bool, severity: "critical" | "minor" | "none")``; anything else fails."""
    parsed = parse_json_object(text, untrusted=untrusted)
    if not parsed.ok:
        return parsed
    obj = parsed.value
    valid, severity = obj.get("valid"), _label(obj.get("severity"))
    if not isinstance(valid, bool):
        return Parsed(notes=parsed.notes, error=f"'valid' must be true or false, got {valid!r}")
    if severity not in (*SEVERITY_WEIGHTS, "none"):
        return Parsed(notes=parsed.notes, error=f"severity {obj.get('severity')!r} not critical / minor / none")
    return Parsed(notes=parsed.notes, value=(valid, severity))


def parse_comments(text: str | None, *, untrusted: Sequence[str] | None = None) -> Parsed:
    """Atomic comments with their five scores; a bad type becomes "observation" (recorded); a comment with a
    missing or out-of-range score is left out (recorded), never given a default score."""
    parsed, items = _items(text, "comments", untrusted)
    if not parsed.ok:
        return parsed
    out = Parsed(notes=parsed.notes, value=[])
    for i, item in _with_text(items, "comment", out):
        bad = [f"{a} {item.get(a)!r}" for a in CONSTRUCTIVENESS_AXES
               if isinstance(item.get(a), bool) or item.get(a) not in (0, 1, 2)]
        if bad:
            out.invalid.append(f"comment {i}: {', '.join(bad)} not in {{0, 1, 2}}")
            continue
        kind = _label(item.get("type"))
        if kind not in COMMENT_TYPES:
            out.defaults.append(f"comment {i}: type {item.get('type')!r} -> observation")
            kind = "observation"
        out.value.append(ReviewComment(str(item["text"]).strip(), kind,
                                       *(int(item[a]) for a in CONSTRUCTIVENESS_AXES)))
    return out

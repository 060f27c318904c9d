"""Leakage guard: remove the venue's published review record from survey texts (SurveyReview §4.1-4.2).

F1000Research publishes the referee reports with the article: a status line such as
"[version 1; peer review: 2 approved]" next to the title and an "Open Peer Review" section (first-page box
and/or the full referee reports at the end). Those reports are the very reviews whose sentences are the gold
rationales, so a judge reading them would copy the answer. :func:`strip_review_record` removes both;
:func:`find_verbatim` counts gold snippets that still occur verbatim in any input text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

#: "[version 2; peer review: 1 approved, 1 approved with reservations]" and the older
#: "[version 1; referees: 2 approved]" forms.
_STATUS_RE = re.compile(
    r"\[\s*version\s+\d+\s*;\s*(?:open\s+)?(?:peer\s+review|referees?|reviewers?)\s*:[^\]\n]*\]",
    re.IGNORECASE,
)

#: A line that opens the published review record.
_RECORD_START_RE = re.compile(
    r"^\s*(?:#{1,6}\s*)?[*_]*\s*(?:open\s+peer\s+review|referee\s+(?:report|status|responses?)|"
    r"reviewer\s+(?:report|status|responses?)|peer\s+review\s+(?:report|history|status))\b[^\n]*$",
    re.IGNORECASE,
)

#: Headings that still belong to the review record (reports, responses, reviewer metadata).
_RECORD_HEADING_RE = re.compile(
    r"referee|reviewer|peer\s+review|author\s+response|response\s+to|report|approved|competing\s+interests|"
    r"version\s+\d|invited|comments?\b|expertise|reader\s+comments|reservations",
    re.IGNORECASE,
)

_HEADING_RE = re.compile(r"^\s*#{1,6}\s+(.*)$")


@dataclass
class LeakageEdit:
    """What :func:`strip_review_record` removed from one text.

    Attributes:
        status_lines: number of peer-review status brackets removed.
        record_sections: number of review-record sections removed.
        chars_removed: characters removed in total (>= 0).
    """

    status_lines: int = 0
    record_sections: int = 0
    chars_removed: int = 0

    @property
    def changed(self) -> bool:
        """True when anything was removed."""
        return self.status_lines > 0 or self.record_sections > 0


def strip_review_record(text: str) -> tuple[str, LeakageEdit]:
    """Remove the peer-review status line(s) and the published review record from a survey text.

    A review-record section starts at a line reading "Open Peer Review", "Referee Report ...", "Reviewer
    Report ...", "Referee Status" or "Reviewer Status" (bold or as a markdown heading) and runs to the next
    markdown heading that is not itself part of the record (a heading naming referees, reports, responses,
    approvals, competing interests, ...), or to the end of the text.

    Args:
        text: survey full text (markdown).

    Returns:
        ``(cleaned_text, edit)``; ``cleaned_text`` equals ``text`` when nothing matched.
    """
    edit = LeakageEdit()
    original_len = len(text)
    text, edit.status_lines = _STATUS_RE.subn("", text)
    lines = text.split("\n")
    kept: list[str] = []
    i = 0
    while i < len(lines):
        if _RECORD_START_RE.match(lines[i]):
            edit.record_sections += 1
            i += 1
            while i < len(lines):
                heading = _HEADING_RE.match(lines[i])
                if heading and not _RECORD_HEADING_RE.search(heading.group(1)):
                    break
                i += 1
            continue
        kept.append(lines[i])
        i += 1
    if edit.record_sections:
        text = "\n".join(kept).rstrip() + "\n"
    if edit.changed:
        text = re.sub(r"[ \t]+\n", "\n", text)
    edit.chars_removed = max(0, original_len - len(text))
    return text, edit


_ANCHOR = 16  # bytes hashed per candidate position (two little-endian uint64 words)
_MULT = np.uint64(0x9E3779B97F4A7C15)


def _mix(w1, w2):
    """Combine two uint64 words into one key (same arithmetic for numpy arrays and Python ints)."""
    if isinstance(w1, int):
        return (w1 ^ ((w2 * 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF)) & 0xFFFFFFFFFFFFFFFF
    with np.errstate(over="ignore"):
        return w1 ^ (w2 * _MULT)


def find_verbatim(snippets: list[str], texts: list[str], *, min_chars: int = 20) -> list[int | None]:
    """For every snippet, find one text that contains it verbatim (exact substring).

    Runs in roughly linear time in the total text size: every position after a space in the
    concatenated texts is keyed by the 16 bytes that follow it, matched against the same key taken
    after the first space of each snippet, and every key hit is confirmed by exact comparison. Snippets
    without such an anchor fall back to ``bytes.find``.

    Args:
        snippets: gold rationale snippets.
        texts: input texts.
        min_chars: snippets shorter than this (after stripping) are not checked: a very short
            snippet ("Yes.") occurs anywhere and says nothing about leakage.

    Returns:
        One entry per snippet: the index of a text holding it, -1 when no text does, or None when the
        snippet was too short to check.
    """
    result: list[int | None] = [None] * len(snippets)
    if not snippets:
        return result
    encoded = [t.encode("utf-8") for t in texts]
    big = b"\x00".join(encoded)
    starts = np.zeros(len(encoded), dtype=np.int64)
    if encoded:
        starts[1:] = np.cumsum([len(e) + 1 for e in encoded[:-1]])

    def text_of(pos: int) -> int:
        return int(np.searchsorted(starts, pos, side="right") - 1)

    by_key: dict[int, list[tuple[int, int, bytes]]] = {}
    fallback: list[tuple[int, bytes]] = []
    for k, snippet in enumerate(snippets):
        s = snippet.strip()
        if len(s) < min_chars:
            continue
        sb = s.encode("utf-8")
        result[k] = -1
        space = sb.find(b" ")
        if space < 0 or len(sb) < space + 1 + _ANCHOR:
            fallback.append((k, sb))
            continue
        anchor = sb[space + 1 : space + 1 + _ANCHOR]
        key = _mix(int.from_bytes(anchor[:8], "little"), int.from_bytes(anchor[8:], "little"))
        by_key.setdefault(key, []).append((k, space, sb))

    for k, sb in fallback:
        pos = big.find(sb)
        if pos >= 0:
            result[k] = text_of(pos)

    if by_key and len(big) > _ANCHOR + 1:
        arr = np.frombuffer(big, dtype=np.uint8)
        n = len(arr)
        pos = np.flatnonzero(arr == 32)
        pos = pos[pos + 1 + _ANCHOR <= n]
        if len(pos):
            w1 = _words_at(arr, pos + 1)
            w2 = _words_at(arr, pos + 9)
            keys = _mix(w1, w2)
            wanted = np.array(sorted(by_key), dtype=np.uint64)
            idx = np.searchsorted(wanted, keys)
            idx[idx >= len(wanted)] = 0
            hits = np.flatnonzero(wanted[idx] == keys)
            for h in hits:
                p = int(pos[h])
                for k, space, sb in by_key[int(keys[h])]:
                    if result[k] != -1:
                        continue
                    begin = p - space
                    if begin >= 0 and big[begin : begin + len(sb)] == sb:
                        result[k] = text_of(begin)
    return result


def _words_at(arr: np.ndarray, pos: np.ndarray) -> np.ndarray:
    """Little-endian uint64 made of ``arr[p:p+8]`` for every p in ``pos`` (all p + 8 <= len(arr))."""
    out = np.empty(len(pos), dtype=np.uint64)
    n = len(arr)
    for a in range(8):
        m = (n - a) // 8
        view = arr[a : a + 8 * m].view("<u8")
        sel = (pos % 8) == a
        out[sel] = view[(pos[sel] - a) // 8]
    return out

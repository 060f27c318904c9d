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

#: "[version 2; peer review: 1 approved, 1 approved with reservations]" and the older
#: "[version 1; referees: 2 approved]" forms.
_STATUS_RE = re.compile(
    r"\[\s*version\s+\d+\s*;\s*(?:open\s+)?(?:peer\s+review|referees?|reviewers?)\s*:[^\]\n]*\]",
    re.IGNORECASE,
)

#: A line that opens the published review record.
_RECORD_START_RE = re.compile(
    r"^[ \t]*(?:#{1,6}\s*)?[*_]*\s*(?:open\s+peer\s+review|referee\s+(?:report|status|responses?)|"
    r"reviewer\s+(?:report|status|responses?)|peer\s+review\s+(?:report|history|status))\b[^\n]*$",
    re.IGNORECASE | re.MULTILINE,
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
    lowered = text.lower()
    if any(w in lowered for w in ("peer review", "referee", "reviewer")) and _RECORD_START_RE.search(text):
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


_ANCHORS = (32, 16)  # bytes hashed per candidate position: long anchor first, short one for short snippets
_MULT = 0x9E3779B97F4A7C15
_MASK = 0xFFFFFFFFFFFFFFFF


def _key_of(anchor: bytes) -> int:
    """Hash of an anchor (length a multiple of 8) with the same arithmetic as :func:`_keys_at`."""
    key = 0
    for i in range(0, len(anchor), 8):
        key = ((key * _MULT) & _MASK) ^ int.from_bytes(anchor[i : i + 8], "little")
    return key


def _keys_at(words, pos, length: int):
    """Hash of ``length`` bytes starting at every position in ``pos`` (numpy, vectorised)."""
    import numpy as np

    key = np.zeros(len(pos), dtype=np.uint64)
    mult = np.uint64(_MULT)
    with np.errstate(over="ignore"):
        for i in range(0, length, 8):
            key = (key * mult) ^ words[pos + i]
    return key


def find_verbatim(snippets: list[str], texts: list[str], *, min_chars: int = 20) -> list[int | None]:
    """For every snippet, find one text that contains it verbatim (exact substring).

    Args:
        snippets: gold rationale snippets.
        texts: input texts.
        min_chars: snippets shorter than this (after stripping) are not checked: a very short
            snippet ("Yes.") occurs anywhere and says nothing about leakage.

    Returns:
        One entry per snippet: the smallest index of a text holding it, -1 when no text does, or None when
        the snippet was too short to check.
    """
    hits = verbatim_hits(snippets, texts, min_chars=min_chars)
    return [None if h is None else (min(h) if h else -1) for h in hits]


def verbatim_hits(snippets: list[str], texts: list[str], *, min_chars: int = 20) -> list[set[int] | None]:
    """For every snippet, the set of texts that contain it verbatim (exact substring).

    Runs in roughly linear time in the total text size: every position after a space in the concatenated
    texts is keyed by a hash of the 32 (or 16) bytes that follow it and matched against the same hash taken
    after the first space of each snippet (a bitmap of the snippets' first 8 anchor bytes filters the
    positions first); each key hit is confirmed by exact comparison. Snippets too short for a 16-byte anchor
    fall back to ``bytes.find``.

    Args:
        snippets: gold rationale snippets.
        texts: input texts.
        min_chars: snippets shorter than this (after stripping) are not checked.

    Returns:
        One entry per snippet: the set of indices of texts holding it (empty when none), or None when the
        snippet was too short to check.
    """
    import bisect

    import numpy as np

    result: list[set[int] | None] = [None] * len(snippets)
    if not snippets:
        return result
    encoded = [t.encode("utf-8") for t in texts]
    big = b"\x00".join(encoded)
    starts: list[int] = []
    offset = 0
    for e in encoded:
        starts.append(offset)
        offset += len(e) + 1

    def text_of(pos: int) -> int:
        return bisect.bisect_right(starts, pos) - 1

    by_anchor: dict[int, dict[int, list[tuple[int, int, bytes]]]] = {a: {} for a in _ANCHORS}
    bits = 22
    bitmap = np.zeros(1 << bits, dtype=bool)
    fallback: list[tuple[int, bytes]] = []
    for k, snippet in enumerate(snippets):
        s = snippet.strip()
        if len(s) < min_chars:
            continue
        sb = s.encode("utf-8")
        result[k] = set()
        space = sb.find(b" ")
        length = next((a for a in _ANCHORS if space >= 0 and len(sb) >= space + 1 + a), None)
        if length is None:
            fallback.append((k, sb))
            continue
        anchor = sb[space + 1 : space + 1 + length]
        by_anchor[length].setdefault(_key_of(anchor), []).append((k, space, sb))
        bitmap[_low_bits(int.from_bytes(anchor[:8], "little"), bits)] = True

    def add(k: int, begin: int, size: int) -> None:
        first = text_of(begin)
        if first == text_of(begin + size - 1):  # a match may not run across the separator of two texts
            result[k].add(first)

    for k, sb in fallback:
        found = big.find(sb)
        while found >= 0:
            add(k, found, len(sb))
            found = big.find(sb, found + 1)

    n = len(big)
    if any(by_anchor.values()) and n > 8:
        words = np.ndarray(shape=(n - 7,), dtype="<u8", buffer=big, offset=0, strides=(1,))
        pos = np.flatnonzero(np.frombuffer(big, dtype=np.uint8) == 32) + 1
        pos = pos[pos + 8 <= n]
        first = words[pos]
        with np.errstate(over="ignore"):
            pos = pos[bitmap[((first * np.uint64(_MULT)) >> np.uint64(64 - bits)).astype(np.int64)]]
        for length, table in by_anchor.items():
            if not table:
                continue
            cand = pos[pos + length <= n]
            keys = _keys_at(words, cand, length)
            full = np.zeros(1 << bits, dtype=bool)  # second filter on the full anchor hash
            full[[_low_bits(key, bits) for key in table]] = True
            with np.errstate(over="ignore"):
                keep = full[((keys * np.uint64(_MULT)) >> np.uint64(64 - bits)).astype(np.int64)]
            cand, keys = cand[keep], keys[keep]
            wanted = np.array(sorted(table), dtype=np.uint64)
            idx = np.searchsorted(wanted, keys)
            idx[idx >= len(wanted)] = 0
            for h in np.flatnonzero(wanted[idx] == keys).tolist():
                p = int(cand[h]) - 1  # the space before the anchor
                for k, space, sb in table[int(keys[h])]:
                    begin = p - space
                    if begin >= 0 and big[begin : begin + len(sb)] == sb:
                        add(k, begin, len(sb))
    return result


def _low_bits(word: int, bits: int) -> int:
    """Bucket of a uint64 word in the prefilter bitmap (multiplicative hashing, top ``bits`` bits)."""
    return ((word * _MULT) & _MASK) >> (64 - bits)

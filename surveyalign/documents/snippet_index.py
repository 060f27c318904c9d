"""Snippet indexes built once and scanned text by text: the engines of :mod:`surveyalign.documents.verbatim`.

* :class:`VerbatimIndex`: the exact-substring index of a set of snippets. Each snippet is keyed by a hash of
  the 32 (or 16) bytes after its first space; a text is scanned once (every position after a space, numpy,
  vectorised, behind a bitmap of the snippets' first 8 anchor bytes) and every key hit is confirmed by exact
  comparison. Snippets too short for a 16-byte anchor fall back to ``bytes in``.
* :func:`shared_chunk_candidates`: which snippets share a run of :data:`CHUNK_WORDS` consecutive words with one
  text (the near-verbatim prefilter): the text's runs are hashed once, every snippet's runs in one batch.

Both take one text at a time, so a caller streams its texts (normalise one, scan it, drop it) and holds only
the index, never every text at once (the build's peak memory).
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["CHUNK_WORDS", "VerbatimIndex", "shared_chunk_candidates", "single_spaced"]

_ANCHORS = (32, 16)  # bytes hashed per candidate position: long anchor first, short one for short snippets
_MULT = 0x9E3779B97F4A7C15
_MASK = 0xFFFFFFFFFFFFFFFF
_BITS = 22  # prefilter bitmaps of 2**22 entries

#: Words per chunk of the near-verbatim prefilter.
CHUNK_WORDS = 4
#: Odd multiplier of the chunk hash and its inverse modulo 2**64 (polynomial hash over UTF-8 bytes).
_CHUNK_BASE = 0x100000001B3
_CHUNK_INV = pow(_CHUNK_BASE, -1, 1 << 64)


def _low_bits(word: int, bits: int = _BITS) -> int:
    """Bucket of a uint64 word in the prefilter bitmap (multiplicative hashing, top ``bits`` bits)."""
    return ((word * _MULT) & _MASK) >> (64 - bits)


def _key_of(anchor: bytes) -> int:
    """Hash of an anchor (length a multiple of 8) with the same arithmetic as :func:`_keys_at`."""
    key = 0
    for i in range(0, len(anchor), 8):
        key = ((key * _MULT) & _MASK) ^ int.from_bytes(anchor[i : i + 8], "little")
    return key


def _keys_at(words, pos, length: int):
    """Hash of ``length`` bytes starting at every position in ``pos`` (numpy, vectorised)."""
    import numpy as np  # lazy: importing surveyalign.documents stays light

    key = np.zeros(len(pos), dtype=np.uint64)
    mult = np.uint64(_MULT)
    with np.errstate(over="ignore"):
        for i in range(0, length, 8):
            key = (key * mult) ^ words[pos + i]
    return key


def _buckets(keys, bits: int = _BITS):
    """:func:`_low_bits` of a uint64 array (numpy)."""
    import numpy as np

    with np.errstate(over="ignore"):
        return ((keys * np.uint64(_MULT)) >> np.uint64(64 - bits)).astype(np.int64)


class VerbatimIndex:
    """Exact-substring index of snippets, built once and scanned against any number of texts.

    No normalisation happens here: callers pass the forms they want compared (the leak check passes
    :func:`surveyalign.documents.normalise_for_match` forms).

    Args:
        snippets: the snippets; each is stripped of surrounding whitespace before indexing.
        min_chars: snippets shorter than this (characters, after stripping) are not checked.

    Attributes:
        checked: one bool per snippet: False for a snippet too short to check.
    """

    def __init__(self, snippets: Sequence[str], *, min_chars: int) -> None:
        import numpy as np  # lazy: importing surveyalign.documents stays light

        self.checked = [False] * len(snippets)
        self._fallback: list[tuple[int, bytes]] = []
        by_anchor: dict[int, dict[int, list[tuple[int, int, bytes]]]] = {a: {} for a in _ANCHORS}
        self._first = np.zeros(1 << _BITS, dtype=bool)
        for k, snippet in enumerate(snippets):
            s = snippet.strip()
            if len(s) < min_chars:
                continue
            sb = s.encode("utf-8")
            self.checked[k] = True
            space = sb.find(b" ")
            length = next((a for a in _ANCHORS if space >= 0 and len(sb) >= space + 1 + a), None)
            if length is None:
                self._fallback.append((k, sb))
                continue
            anchor = sb[space + 1 : space + 1 + length]
            by_anchor[length].setdefault(_key_of(anchor), []).append((k, space, sb))
            self._first[_low_bits(int.from_bytes(anchor[:8], "little"))] = True
        # per anchor length: (length, {key: snippets}, bitmap of the full keys, sorted keys)
        self._tables = []
        for length, table in by_anchor.items():
            if table:
                full = np.zeros(1 << _BITS, dtype=bool)
                full[[_low_bits(key) for key in table]] = True
                self._tables.append((length, table, full, np.array(sorted(table), dtype=np.uint64)))

    def find(self, text: str | bytes) -> set[int]:
        """Indices of the checked snippets that occur in ``text`` as exact substrings.

        Args:
            text: one text (str, or its UTF-8 bytes).

        Returns:
            The set of snippet indices found (empty when none).
        """
        import numpy as np

        data = text.encode("utf-8") if isinstance(text, str) else text
        found: set[int] = {k for k, sb in self._fallback if sb in data}
        n = len(data)
        if not self._tables or n <= 8:
            return found
        words = np.ndarray(shape=(n - 7,), dtype="<u8", buffer=data, offset=0, strides=(1,))
        pos = np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == 32) + 1
        pos = pos[pos + 8 <= n]
        pos = pos[self._first[_buckets(words[pos])]]
        for length, table, full, wanted in self._tables:
            cand = pos[pos + length <= n]
            keys = _keys_at(words, cand, length)
            keep = full[_buckets(keys)]
            cand, keys = cand[keep], keys[keep]
            if not len(keys):
                continue
            idx = np.searchsorted(wanted, keys)
            idx[idx >= len(wanted)] = 0
            for h in np.flatnonzero(wanted[idx] == keys).tolist():
                p = int(cand[h]) - 1  # the space before the anchor
                for k, space, sb in table[int(keys[h])]:
                    begin = p - space
                    if k not in found and begin >= 0 and data[begin : begin + len(sb)] == sb:
                        found.add(k)
        return found


def single_spaced(value: str) -> str:
    """``value`` with its words (``str.split``) joined by single spaces (returned as is when already so)."""
    if value.isascii() and not (value[:1] == " " or value[-1:] == " " or "  " in value
                                or any(c in value for c in "\t\n\r\x0b\x0c\x1c\x1d\x1e\x1f")):
        return value
    return " ".join(value.split())


_POWERS: list = []  # [(inv**j, base**j)] uint64 arrays, grown on demand and shared by every call


def _powers(size: int):
    """``(inv**j, base**j)`` for j < at least ``size`` (modulo 2**64), cached."""
    import numpy as np

    if not _POWERS or len(_POWERS[0][0]) < size:
        size = max(size, 1 << 16, 2 * len(_POWERS[0][0]) if _POWERS else 0)
        with np.errstate(over="ignore"):
            inv_pow = np.cumprod(np.full(size, _CHUNK_INV, dtype=np.uint64))
            base_pow = np.cumprod(np.full(size, _CHUNK_BASE, dtype=np.uint64))
        _POWERS[:] = [(np.concatenate(([np.uint64(1)], inv_pow[:-1])),
                       np.concatenate(([np.uint64(1)], base_pow[:-1])))]
    return _POWERS[0]


def _chunk_hashes(data: bytes, powers):
    """Hash of every run of :data:`CHUNK_WORDS` space-separated words of ``data`` and the byte span of each.

    The hash of bytes ``data[a:e]`` is ``sum(data[j] * inv**(j - a))`` modulo 2**64, computed from prefix sums
    (numpy, vectorised), so equal runs hash equally wherever they stand. ``powers`` = ``(inv**j, base**j)``
    arrays at least ``len(data) + 1`` long.
    """
    import numpy as np

    raw = np.frombuffer(data, dtype=np.uint8)
    inv_pow, base_pow = powers
    prefix = np.zeros(len(raw) + 1, dtype=np.uint64)
    with np.errstate(over="ignore"):
        np.cumsum(raw.astype(np.uint64) * inv_pow[: len(raw)], out=prefix[1:])
        spaces = np.flatnonzero(raw == 32)
        starts = np.concatenate(([0], spaces + 1))[: max(len(spaces) + 1 - (CHUNK_WORDS - 1), 0)]
        ends = np.concatenate((spaces, [len(raw)]))[CHUNK_WORDS - 1 :]
        return (prefix[ends] - prefix[starts]) * base_pow[starts], starts, ends


def shared_chunk_candidates(snips: Sequence[str], text: str, min_chars: int, *, spaced: bool = False) -> set[int]:
    """Indices of the snippets sharing a run of :data:`CHUNK_WORDS` words (``str.split``) with ``text``.

    Snippets of fewer words are included (to be scored directly); snippets shorter than ``min_chars`` are not.
    The text's runs are hashed once and the snippets' runs in one batch (their single-spaced forms joined;
    runs crossing two snippets are dropped); every hash hit is confirmed by an exact search of the run in the
    text, so the set equals the one from comparing word tuples.

    Args:
        snips: snippets (any case; compared as given).
        text: the one text they are matched against.
        min_chars: smallest snippet length (characters) that is checked.
        spaced: ``text`` is known to be single spaced already (a :func:`surveyalign.documents.normalise_for_match`
            form); skips the check.

    Returns:
        The set of candidate snippet indices.
    """
    import numpy as np

    candidate: set[int] = set()
    items: list[tuple[int, bytes]] = []
    for n, snip in enumerate(snips):
        if len(snip) < min_chars:
            continue
        words = snip.split()
        if len(words) < CHUNK_WORDS:
            candidate.add(n)
        else:
            items.append((n, " ".join(words).encode("utf-8")))
    if not items:
        return candidate
    encoded = (text if spaced else single_spaced(text)).encode("utf-8")
    joined = b" ".join(sb for _, sb in items)
    powers = _powers(max(len(encoded), len(joined)) + 1)
    text_keys = np.sort(_chunk_hashes(encoded, powers)[0])
    if not len(text_keys):
        return candidate
    keys, starts, ends = _chunk_hashes(joined, powers)
    seg_starts = np.cumsum([0] + [len(sb) + 1 for _, sb in items[:-1]])
    seg = np.searchsorted(seg_starts, starts, side="right") - 1
    inside = seg == np.searchsorted(seg_starts, ends - 1, side="right") - 1  # runs within one snippet
    idx = np.searchsorted(text_keys, keys)
    idx[idx >= len(text_keys)] = 0
    hits = np.flatnonzero(inside & (text_keys[idx] == keys)).tolist()
    padded = b" " + encoded + b" "
    done: set[int] = set()
    for h in hits:
        s = int(seg[h])
        if s not in done and b" " + joined[starts[h] : ends[h]] + b" " in padded:
            done.add(s)
            candidate.add(items[s][0])
    return candidate

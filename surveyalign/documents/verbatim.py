"""Gold snippets still in the input texts: layout-insensitive verbatim and near-verbatim matches.

A PDF export breaks a quoted sentence across lines, hyphenates words at line ends, wraps parts in markdown
emphasis and uses typographic quotes and ligatures, so an exact substring test misses most real leaks. Both
sides are first brought to one form (:func:`normalise_for_match`); a snippet is *verbatim* when its form is
a substring of a text's form, and *near-verbatim* when some window of its own text matches it with a
``rapidfuzz`` partial ratio of at least :data:`NEAR_VERBATIM_THRESHOLD` (case folded).
"""

from __future__ import annotations

import bisect
import re
import unicodedata
from collections.abc import Sequence

from rapidfuzz import fuzz

from .leakage import strip_running_headers

__all__ = ["MIN_SNIPPET_CHARS", "NEAR_VERBATIM_THRESHOLD", "find_verbatim", "layout_verbatim_hits", "near_verbatim_hits", "near_verbatim_scores", "normalise_for_match", "verbatim_hits"]

#: Smallest partial-ratio score (0-100, ``rapidfuzz.fuzz.partial_ratio`` on case-folded normalised forms) at
#: which a snippet counts as near-verbatim in a text. 90 lets about one character in ten differ: a leak with a
#: word dropped or two words changed by the annotator scores 94-96, a fixed typo 99, while a gold snippet
#: scored against an unrelated 100-170 kB survey scores at most 68 (median 53; 121 snippets x 4 real surveys),
#: and the test fixtures' snippets score below 60 once the guard has run (tests/test_data_guard.py).
NEAR_VERBATIM_THRESHOLD = 90.0

#: Snippets shorter than this (characters, after normalisation) are not checked: a very short snippet
#: ("Yes.") occurs anywhere and says nothing about leakage.
MIN_SNIPPET_CHARS = 20

#: Typographic quotes and dashes to ASCII; soft hyphens and zero-width characters dropped.
_REPLACEMENTS: tuple[tuple[str, str], ...] = (
    ("‘", "'"), ("’", "'"), ("‚", "'"), ("‛", "'"), ("′", "'"), ("“", '"'), ("”", '"'), ("„", '"'), ("‟", '"'),
    ("″", '"'), ("«", '"'), ("»", '"'), ("‐", "-"), ("‑", "-"), ("‒", "-"), ("–", "-"), ("—", "-"), ("―", "-"),
    ("−", "-"), ("\u00ad", ""), ("\u200b", ""), ("\u200c", ""), ("\u200d", ""), ("\ufeff", ""),
)
#: Markdown emphasis, code, table bars, heading hashes and quote marks become spaces.
_MARKUP_RE = re.compile(r"[*_`~|#>]")
_TAG_RE = re.compile(r"<[^>\n]+>")
#: A hyphen between two word characters, or at a line end before one (after whitespace collapsed to one space).
_HYPHEN_RE = re.compile(r"(?<=\w)- ?(?=\w)")


def normalise_for_match(text: str) -> str:
    """One layout-free form of a text for leak matching (applied to snippets and texts alike).

    Steps: Unicode NFKC (ligatures, full-width forms), typographic quotes and dashes to ASCII, running page
    headers dropped (:func:`surveyalign.documents.strip_running_headers`: a quote broken by a page turn), soft hyphens and
    zero-width characters dropped, markdown emphasis, code marks, heading hashes, quote marks, table bars and
    HTML tags turned into spaces, every run of whitespace and line breaks turned into one space, then hyphens
    inside words and at line ends dropped (so "well-\\nchosen", "well-chosen" and "wellchosen" agree). Case is
    kept.

    Args:
        text: any text.

    Returns:
        The normalised text (no leading/trailing space).
    """
    text = strip_running_headers(text if text.isascii() else unicodedata.normalize("NFKC", text))
    if "<" in text:
        text = _TAG_RE.sub(" ", text)
    for old, new in _REPLACEMENTS:
        if old in text:
            text = text.replace(old, new)
    text = " ".join(_MARKUP_RE.sub(" ", text).split())
    return _HYPHEN_RE.sub("", text) if "-" in text else text


def layout_verbatim_hits(snippets: Sequence[str], texts: Sequence[str], *,
                         min_chars: int = MIN_SNIPPET_CHARS) -> list[set[int] | None]:
    """For every snippet, the texts holding it once both are normalised (:func:`normalise_for_match`).

    Args:
        snippets: gold rationale snippets.
        texts: input texts.
        min_chars: snippets shorter than this after normalisation are not checked.

    Returns:
        One entry per snippet: the set of indices of texts holding it (empty when none), or None when the
        snippet was too short to check.
    """
    return verbatim_hits([normalise_for_match(s) for s in snippets], [normalise_for_match(t) for t in texts],
                         min_chars=min_chars)


def near_verbatim_scores(pairs: Sequence[tuple[str, str]], *, min_chars: int = MIN_SNIPPET_CHARS,
                         score_cutoff: float = 0.0, normalised: bool = False) -> list[float | None]:
    """Best fuzzy window score of each snippet in its text (``rapidfuzz.fuzz.partial_ratio``).

    Args:
        pairs: ``(snippet, text)`` pairs; the text is the one the snippet's unit is judged on.
        min_chars: snippets shorter than this after normalisation get None.
        score_cutoff: scores below it come back as 0 (lets rapidfuzz stop early; 0 = exact scores).
        normalised: both sides are already :func:`normalise_for_match` forms (skips normalising again).

    Returns:
        One score in [0, 100] per pair (100 = the snippet's normalised, case-folded form occurs in the text's),
        or None for a snippet too short to check.
    """
    cache: dict[str, str] = {}
    out: list[float | None] = []
    for snippet, text in pairs:
        s = (snippet if normalised else normalise_for_match(snippet)).casefold()
        if len(s) < min_chars:
            out.append(None)
            continue
        if text not in cache:
            cache[text] = (text if normalised else normalise_for_match(text)).casefold()
        folded = cache[text]
        out.append(float(fuzz.partial_ratio(s, folded, score_cutoff=score_cutoff)) if folded else 0.0)
    return out


def near_verbatim_hits(pairs: Sequence[tuple[str, str]], *, threshold: float = NEAR_VERBATIM_THRESHOLD,
                       min_chars: int = MIN_SNIPPET_CHARS, normalised: bool = False) -> list[bool | None]:
    """Whether each snippet occurs near-verbatim in its text (:func:`near_verbatim_scores` >= ``threshold``).

    Scoring every snippet against a whole survey is slow (milliseconds per pair), so a pair is scored only when
    its text shares a run of :data:`_CHUNK_WORDS` consecutive words with the snippet (hashed runs, numpy);
    a text sharing no such run holds no realistic near copy (it would need a changed word in every run of
    four, far below the threshold). Snippets of fewer words are scored directly.

    Args:
        pairs: ``(snippet, text)`` pairs.
        threshold: smallest :func:`near_verbatim_scores` score that counts (0-100).
        min_chars: snippets shorter than this after normalisation get None.
        normalised: both sides are already :func:`normalise_for_match` forms.

    Returns:
        One entry per pair: True/False, or None when the snippet was too short to check.
    """
    fold: dict[str, str] = {}

    def folded(value: str) -> str:
        if value not in fold:
            fold[value] = (value if normalised else normalise_for_match(value)).casefold()
        return fold[value]

    snips = [folded(snippet) for snippet, _ in pairs]
    text_index: dict[str, int] = {}
    texts: list[str] = []
    owner_text = []
    for _, text in pairs:
        key = folded(text)
        if key not in text_index:
            text_index[key] = len(texts)
            texts.append(key)
        owner_text.append(text_index[key])
    candidate = _shared_chunk_pairs(snips, owner_text, texts, min_chars)
    out: list[bool | None] = []
    for n, snip in enumerate(snips):
        if len(snip) < min_chars:
            out.append(None)
        elif n not in candidate:
            out.append(False)
        else:
            text = texts[owner_text[n]]
            out.append(bool(text) and fuzz.partial_ratio(snip, text, score_cutoff=threshold) >= threshold)
    return out


#: Words per chunk of the near-verbatim prefilter.
_CHUNK_WORDS = 4
#: Odd multiplier of the chunk hash and its inverse modulo 2**64 (polynomial hash over UTF-8 bytes).
_CHUNK_BASE = 0x100000001B3
_CHUNK_INV = pow(_CHUNK_BASE, -1, 1 << 64)


def _single_spaced(value: str) -> str:
    """``value`` with its words (``str.split``) joined by single spaces (returned as is when already so)."""
    if value.isascii() and not (value[:1] == " " or value[-1:] == " " or "  " in value
                                or any(c in value for c in "\t\n\r\x0b\x0c\x1c\x1d\x1e\x1f")):
        return value
    return " ".join(value.split())


def _chunk_hashes(data: bytes, powers):
    """Hash of every run of :data:`_CHUNK_WORDS` space-separated words of ``data`` and the byte span of each.

    The hash of bytes ``data[a:e]`` is ``sum(data[j] * inv**(j - a))`` modulo 2**64, computed from prefix sums
    (numpy, vectorised), so equal runs hash equally wherever they stand. ``powers`` = ``(inv**j, base**j)``
    arrays at least ``len(data)`` long.
    """
    import numpy as np  # lazy: importing surveyalign.data stays light

    raw = np.frombuffer(data, dtype=np.uint8)
    inv_pow, base_pow = powers
    prefix = np.zeros(len(raw) + 1, dtype=np.uint64)
    with np.errstate(over="ignore"):
        np.cumsum(raw.astype(np.uint64) * inv_pow[: len(raw)], out=prefix[1:])
        spaces = np.flatnonzero(raw == 32)
        starts = np.concatenate(([0], spaces + 1))[: max(len(spaces) + 1 - (_CHUNK_WORDS - 1), 0)]
        ends = np.concatenate((spaces, [len(raw)]))[_CHUNK_WORDS - 1 :]
        return (prefix[ends] - prefix[starts]) * base_pow[starts], starts, ends


def _shared_chunk_pairs(snips: Sequence[str], owner_text: Sequence[int], texts: Sequence[str],
                        min_chars: int) -> set[int]:
    """Indices of the snippets sharing a run of :data:`_CHUNK_WORDS` words (``str.split``) with their text.

    Snippets of fewer words are included (scored directly); snippets shorter than ``min_chars`` are not. Every
    hash hit is confirmed by an exact search of the run in the text, so the set equals the one from comparing
    word tuples.
    """
    import numpy as np  # lazy: importing surveyalign.data stays light

    candidate: set[int] = set()
    by_text: dict[int, list[tuple[int, bytes]]] = {}
    for n, snip in enumerate(snips):
        if len(snip) < min_chars:
            continue
        words = snip.split()
        if len(words) < _CHUNK_WORDS:
            candidate.add(n)
        else:
            by_text.setdefault(owner_text[n], []).append((n, " ".join(words).encode("utf-8")))
    if not by_text:
        return candidate
    encoded = {t: _single_spaced(texts[t]).encode("utf-8") for t in by_text}
    size = max(max(map(len, encoded.values())), max(len(b) for items in by_text.values() for _, b in items)) + 1
    with np.errstate(over="ignore"):
        inv_pow = np.cumprod(np.full(size, _CHUNK_INV, dtype=np.uint64))
        base_pow = np.cumprod(np.full(size, _CHUNK_BASE, dtype=np.uint64))
    inv_pow = np.concatenate(([np.uint64(1)], inv_pow[:-1]))
    base_pow = np.concatenate(([np.uint64(1)], base_pow[:-1]))
    powers = (inv_pow, base_pow)
    for t, items in by_text.items():
        text_keys = np.sort(_chunk_hashes(encoded[t], powers)[0])
        if not len(text_keys):
            continue
        padded = b" " + encoded[t] + b" "
        for n, sb in items:
            keys, starts, ends = _chunk_hashes(sb, powers)
            idx = np.searchsorted(text_keys, keys)
            idx[idx >= len(text_keys)] = 0
            hits = np.flatnonzero(text_keys[idx] == keys).tolist()
            if any(b" " + sb[starts[h] : ends[h]] + b" " in padded for h in hits):
                candidate.add(n)
    return candidate

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
    import numpy as np  # lazy: importing surveyalign.data stays light

    key = np.zeros(len(pos), dtype=np.uint64)
    mult = np.uint64(_MULT)
    with np.errstate(over="ignore"):
        for i in range(0, length, 8):
            key = (key * mult) ^ words[pos + i]
    return key


def find_verbatim(snippets: Sequence[str], texts: Sequence[str], *, min_chars: int = MIN_SNIPPET_CHARS) -> list[int | None]:
    """For every snippet, find one text that contains it verbatim, layout aside (:func:`normalise_for_match`).

    Args:
        snippets: gold rationale snippets.
        texts: input texts.
        min_chars: snippets shorter than this (after normalisation) are not checked: a very short
            snippet ("Yes.") occurs anywhere and says nothing about leakage.

    Returns:
        One entry per snippet: the smallest index of a text holding it, -1 when no text does, or None when
        the snippet was too short to check.
    """
    hits = layout_verbatim_hits(snippets, texts, min_chars=min_chars)
    return [None if h is None else (min(h) if h else -1) for h in hits]


def verbatim_hits(snippets: Sequence[str], texts: Sequence[str], *, min_chars: int = MIN_SNIPPET_CHARS) -> list[set[int] | None]:
    """For every snippet, the set of texts that contain it as an exact substring (no normalisation).

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
    import numpy as np  # lazy: importing surveyalign.data stays light

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

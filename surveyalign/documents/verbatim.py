"""Gold snippets still in the input texts: layout-insensitive verbatim and near-verbatim matches.

A PDF export breaks a quoted sentence across lines, hyphenates words at line ends, wraps parts in markdown
emphasis and uses typographic quotes and ligatures, so an exact substring test misses most real leaks. Both
sides are first brought to one form (:func:`normalise_for_match`); a snippet is *verbatim* when its form is
a substring of a text's form, and *near-verbatim* when some window of its own text matches it with a
``rapidfuzz`` partial ratio of at least :data:`NEAR_VERBATIM_THRESHOLD` (case folded).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

from rapidfuzz import fuzz

from .leakage import strip_running_headers
from .snippet_index import VerbatimIndex, shared_chunk_candidates

__all__ = ["MIN_SNIPPET_CHARS", "NEAR_VERBATIM_THRESHOLD", "find_verbatim", "layout_verbatim_hits", "near_hits_in_text", "near_verbatim_hits", "near_verbatim_scores", "normalise_for_match", "verbatim_hits"]

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
#: Every character ``str.split()`` splits on (``str.isspace``; tests/test_data_leakage.py checks the list).
WHITESPACE = ("\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007"
              "\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000")
#: Markdown emphasis, code, table bars, heading hashes and quote marks become spaces, and so does all whitespace
#: (runs of spaces are then collapsed: the same as ``" ".join(text.split())``, in a third of the time).
_TO_SPACE = str.maketrans({c: " " for c in "*_`~|#>" + WHITESPACE})
_SPACES_RE = re.compile("  +")
_TAG_RE = re.compile(r"<[^>\n]+>")
#: A hyphen between two word characters, or at a line end before one (after whitespace collapsed to one space).
#: Written hyphen first so that ``re`` jumps from one "-" to the next (a leading look-behind made it try every
#: position); the look-behind after the hyphen checks the word character before it.
_HYPHEN_RE = re.compile(r"-(?<=\w-) ?(?=\w)")


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
    text = _SPACES_RE.sub(" ", text.translate(_TO_SPACE)).strip(" ")
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
    its text shares a run of :data:`surveyalign.documents.snippet_index.CHUNK_WORDS` consecutive words with the snippet (hashed runs, numpy);
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

    by_text: dict[str, list[int]] = {}
    snips = [folded(snippet) for snippet, _ in pairs]
    for n, (_, text) in enumerate(pairs):
        by_text.setdefault(folded(text), []).append(n)
    out: list[bool | None] = [None] * len(pairs)
    for text, members in by_text.items():
        for n, hit in zip(members, near_hits_in_text([snips[n] for n in members], text, threshold=threshold,
                                                     min_chars=min_chars)):
            out[n] = hit
    return out


def near_hits_in_text(snippets: Sequence[str], text: str, *, threshold: float = NEAR_VERBATIM_THRESHOLD,
                      min_chars: int = MIN_SNIPPET_CHARS, spaced: bool = False) -> list[bool | None]:
    """:func:`near_verbatim_hits` of several snippets against one text, both already in their compared form.

    The text's runs of :data:`surveyalign.documents.snippet_index.CHUNK_WORDS` words are hashed once
    (:func:`surveyalign.documents.snippet_index.shared_chunk_candidates`); only snippets sharing a run (or
    shorter than one) are scored with ``rapidfuzz.fuzz.partial_ratio``.

    Args:
        snippets: snippets in their compared form (:func:`normalise_for_match`, case folded).
        text: the text in the same form.
        threshold: smallest partial-ratio score that counts (0-100).
        min_chars: snippets shorter than this get None.
        spaced: ``text`` is single spaced already (as every :func:`normalise_for_match` form is); skips the check.

    Returns:
        One entry per snippet: True/False, or None when the snippet was too short to check.
    """
    candidate = shared_chunk_candidates(snippets, text, min_chars, spaced=spaced)
    out: list[bool | None] = []
    for n, snip in enumerate(snippets):
        if len(snip) < min_chars:
            out.append(None)
        elif n not in candidate:
            out.append(False)
        else:
            out.append(bool(text) and fuzz.partial_ratio(snip, text, score_cutoff=threshold) >= threshold)
    return out


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

    The snippets are indexed once (:class:`surveyalign.documents.snippet_index.VerbatimIndex`) and every text is
    scanned once, in roughly linear time in its size; a match never spans two texts.

    Args:
        snippets: gold rationale snippets.
        texts: input texts.
        min_chars: snippets shorter than this (after stripping) are not checked.

    Returns:
        One entry per snippet: the set of indices of texts holding it (empty when none), or None when the
        snippet was too short to check.
    """
    if not snippets:
        return []
    index = VerbatimIndex(snippets, min_chars=min_chars)
    result: list[set[int] | None] = [set() if ok else None for ok in index.checked]
    for t, text in enumerate(texts):
        for k in index.find(text):
            result[k].add(t)
    return result

"""Where a rationale snippet sits in its review: verified verbatim with character offsets, or flagged.

A snippet an annotator (person or LLM) gives must be a span of the review (SurveyReview App. A: the most
relevant sentences, taken from the review). :func:`locate_snippet` checks it with the project's near-verbatim
matcher (``surveyalign.documents``: the same layout-insensitive form the leakage check uses) and returns its
character offsets in the review:

* ``exact``: the snippet is a substring of the review as written.
* ``layout``: it is a substring once both are brought to the matcher's layout-free form (line breaks,
  hyphenation at line ends, markdown emphasis, typographic quotes); the offsets cover the review's own span.
* ``near``: not verbatim, but a window of the review matches it with a partial-ratio score >= the threshold
  (a word changed or dropped): FLAGGED; the offsets point at the closest window, for a person to check, and
  the snippet is never stored as if verbatim.
* ``missing``: not in the review at all: FLAGGED, no offsets.

Only ``exact`` and ``layout`` snippets are verbatim (:attr:`SnippetMatch.verbatim`); a release stores the
review's own text ``review[start:end]`` for them, never the annotator's copy.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import asdict, dataclass
from typing import Any

from rapidfuzz import fuzz

from surveyalign.documents import (
    NEAR_VERBATIM_THRESHOLD,
    layout_verbatim_hits,
    near_verbatim_scores,
)

#: Statuses of :class:`SnippetMatch`, most trusted first.
SNIPPET_STATUSES: tuple[str, ...] = ("exact", "layout", "near", "missing")


@dataclass(frozen=True)
class SnippetMatch:
    """One snippet checked against its review.

    Attributes:
        text: the snippet as the annotator gave it.
        status: one of :data:`SNIPPET_STATUSES`.
        start: character offset of its span in the review (0-based, inclusive), None when ``missing``.
        end: character offset just after the span (exclusive), None when ``missing``.
        score: near-verbatim score in [0, 100] (100 for ``exact`` / ``layout``).
    """

    text: str
    status: str
    start: int | None = None
    end: int | None = None
    score: float = 0.0

    @property
    def verbatim(self) -> bool:
        """True for ``exact`` and ``layout``: the span ``review[start:end]`` is the snippet, layout aside."""
        return self.status in ("exact", "layout")

    def to_json(self) -> dict[str, Any]:
        """The match as a JSON-ready dict (with ``verbatim``)."""
        return {**asdict(self), "verbatim": self.verbatim}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SnippetMatch:
        """Read :meth:`to_json` output back."""
        return cls(text=str(data.get("text", "")), status=str(data.get("status", "missing")),
                   start=data.get("start"), end=data.get("end"), score=float(data.get("score") or 0.0))


def _span_regex(snippet: str) -> re.Pattern[str] | None:
    """A pattern matching the snippet's letters and digits in order with any non-alphanumeric run between them."""
    chars = [c for c in unicodedata.normalize("NFKC", snippet) if c.isalnum()]
    if not chars:
        return None
    return re.compile(r"[\W_]*".join(re.escape(c) for c in chars))


def locate_snippet(snippet: str, review: str, *, threshold: float = NEAR_VERBATIM_THRESHOLD) -> SnippetMatch:
    """Check one snippet against its review and find its span (see the module docstring for the statuses).

    Args:
        snippet: the rationale snippet.
        review: the full review text.
        threshold: the near-verbatim partial-ratio score (0-100) from which a non-verbatim snippet is ``near``
            rather than ``missing`` (default :data:`surveyalign.documents.NEAR_VERBATIM_THRESHOLD`).

    Returns:
        The :class:`SnippetMatch`; ``review[start:end]`` is the span for every status but ``missing``.
    """
    wanted = snippet.strip()
    if not wanted:
        return SnippetMatch(snippet, "missing")
    at = review.find(wanted)
    if at >= 0:
        return SnippetMatch(snippet, "exact", at, at + len(wanted), 100.0)
    pattern = _span_regex(wanted)
    if pattern is None:
        # no letter or digit: the layout-insensitive form is empty, so "near" would match anywhere at score 100
        # with a window taken from the raw text ('"' against 'say “hi”' pointed at "say"): not locatable
        return SnippetMatch(snippet, "missing")
    hit = layout_verbatim_hits([wanted], [review], min_chars=1)[0]
    if hit:
        m = pattern.search(review)
        if m is None:
            m = re.compile(pattern.pattern, re.IGNORECASE).search(review)
        if m is not None:
            return SnippetMatch(snippet, "layout", m.start(), m.end(), 100.0)
    score = near_verbatim_scores([(wanted, review)], min_chars=1)[0] or 0.0
    if score >= threshold:
        align = fuzz.partial_ratio_alignment(wanted.casefold(), review.casefold())
        start, end = (align.dest_start, align.dest_end) if align is not None else (None, None)
        if start is not None:  # trim spaces, then widen the window to whole words
            while start < end and review[start].isspace():
                start += 1
            while end > start and review[end - 1].isspace():
                end -= 1
            while start > 0 and review[start - 1].isalnum() and review[start].isalnum():
                start -= 1
            while end < len(review) and review[end - 1].isalnum() and review[end].isalnum():
                end += 1
        return SnippetMatch(snippet, "near", start, end, round(float(score), 2))
    return SnippetMatch(snippet, "missing", None, None, round(float(score), 2))


def span_text(review: str, match: SnippetMatch) -> str | None:
    """The review's own words for a verbatim match (``review[start:end]``), else None."""
    if not match.verbatim or match.start is None or match.end is None:
        return None
    return review[match.start:match.end]

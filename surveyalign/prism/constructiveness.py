"""Constructiveness: mean comment score, actionability ratio, solution and constructiveness density (PRISM).

Each atomic review comment is scored on actionability, specificity, justification, solution and tone in
{0, 1, 2}; its comment score is the sum / 10. Per review: MCS = mean comment score, AR = share of comments with
actionability >= 1, SD = share with solution = 2, CD = share with comment score >= 0.6. A review with no
comment gets None for all four.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from surveyalign.prism.units import COMMENT_TYPES, ReviewComment

__all__ = ["CONSTRUCTIVE_MIN_SCORE", "constructiveness"]

#: Comment score from which a comment counts as constructive (constructiveness density).
CONSTRUCTIVE_MIN_SCORE = 0.6


def constructiveness(comments: Sequence[ReviewComment]) -> dict[str, Any]:
    """MCS, AR, SD and CD of one review.

    Args:
        comments: the review's atomic comments with their axis scores; may be empty.

    Returns:
        ``{"mcs", "ar", "sd", "cd", "n_comments", "kinds"}``: four values in [0, 1] (None without comments),
        the comment count and the count per comment kind.
    """
    n = len(comments)
    scores = [c.score for c in comments]
    kinds = {k: sum(c.kind == k for c in comments) for k in COMMENT_TYPES}
    if not n:
        return {"mcs": None, "ar": None, "sd": None, "cd": None, "n_comments": 0, "kinds": kinds}
    return {
        "mcs": sum(scores) / n,
        "ar": sum(c.actionability >= 1 for c in comments) / n,
        "sd": sum(c.solution == 2 for c in comments) / n,
        "cd": sum(s >= CONSTRUCTIVE_MIN_SCORE for s in scores) / n,
        "n_comments": n,
        "kinds": kinds,
    }

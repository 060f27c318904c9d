"""Names and value sets shared by every sub-package (SurveyReview §4, App. A-B)."""

from __future__ import annotations

#: The four review dimensions, in the order the paper reports them (SurveyReview Table 2).
DIMENSIONS: tuple[str, ...] = ("readability", "structure", "comprehensiveness", "criticalness")

#: Benchmark score space; 0 (not mentioned) and -3 (unjudgeable) are excluded upstream.
VALID_SCORES: tuple[int, ...] = (-2, -1, 1, 2)

#: Review sources of SurveyReview (App. A); "unknown" when the release does not say.
SOURCES: tuple[str, ...] = ("f1000", "moprd", "openreview", "unknown")

#: Largest possible |score difference| on the benchmark scale (HAS Delta_s, §3).
DELTA_S: float = 4.0


def normalise_dimension(name: str) -> str:
    """Return the canonical lower-case dimension name.

    Args:
        name: a dimension name in any case, e.g. "Readability" or "COMPREHENSIVENESS".

    Returns:
        One of :data:`DIMENSIONS`.

    Raises:
        ValueError: if ``name`` is not one of the four SurveyReview dimensions.
    """
    key = str(name).strip().lower()
    if key not in DIMENSIONS:
        raise ValueError(f"unknown dimension {name!r}; expected one of {', '.join(DIMENSIONS)}")
    return key

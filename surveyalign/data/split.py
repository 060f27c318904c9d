"""Paper-level, source-stratified train/validation/test split (SurveyReview §4.4, App. D).

All reviews of one paper land in the same split. Within each source stratum the papers are sorted, shuffled
with a generator seeded by ``(seed, source)``, and the first round(25%) go to test; of the remaining training
papers, the first round(10%) go to validation (the 90/10 checkpoint-selection split). When rounding leaves
test or validation empty and train holds at least two papers, one training paper moves there (small releases).
"""

from __future__ import annotations

import math
import random
from collections import defaultdict


def _round_half_up(x: float) -> int:
    return math.floor(x + 0.5)


def _shuffled(papers: list[str], source: str, seed: int) -> list[str]:
    ordered = sorted(papers)
    random.Random(f"surveyreview-split:{seed}:{source}").shuffle(ordered)
    return ordered


def split_papers(
    paper_sources: dict[str, str],
    *,
    seed: int = 42,
    test_fraction: float = 0.25,
    validation_fraction: float = 0.10,
) -> dict[str, str]:
    """Assign every paper to "train", "validation" or "test".

    Args:
        paper_sources: ``{paper_id: source}``; the stratum of each paper.
        seed: split seed; the same seed and papers always give the same split.
        test_fraction: share of each stratum's papers in test (0 <= f < 1), rounded half up.
        validation_fraction: share of each stratum's remaining training papers in validation.

    Returns:
        ``{paper_id: split}``.

    Raises:
        ValueError: for fractions outside [0, 1).
    """
    for name, value in (("test_fraction", test_fraction), ("validation_fraction", validation_fraction)):
        if not 0.0 <= value < 1.0:
            raise ValueError(f"{name} must be in [0, 1), got {value}")
    strata: dict[str, list[str]] = defaultdict(list)
    for paper, source in paper_sources.items():
        strata[source].append(paper)
    assignment: dict[str, str] = {}
    for source in sorted(strata):
        papers = _shuffled(strata[source], source, seed)
        n_test = _round_half_up(len(papers) * test_fraction)
        test, train = papers[:n_test], papers[n_test:]
        n_val = _round_half_up(len(train) * validation_fraction)
        for p in test:
            assignment[p] = "test"
        for p in train[:n_val]:
            assignment[p] = "validation"
        for p in train[n_val:]:
            assignment[p] = "train"
    _ensure_non_empty(assignment, strata, "test", "train", seed)
    _ensure_non_empty(assignment, strata, "validation", "train", seed)
    return assignment


def _ensure_non_empty(
    assignment: dict[str, str], strata: dict[str, list[str]], target: str, donor: str, seed: int
) -> None:
    """Move one paper from ``donor`` to ``target`` when rounding left ``target`` empty and ``donor`` has >= 2.

    The paper comes from the largest stratum (ties: first source name), last in its shuffled order.
    """
    if any(s == target for s in assignment.values()):
        return
    donors = {src: [p for p in papers if assignment[p] == donor] for src, papers in strata.items()}
    if sum(len(v) for v in donors.values()) < 2:
        return
    source = min(donors, key=lambda s: (-len(donors[s]), s))
    ordered = [p for p in _shuffled(strata[source], source, seed) if assignment[p] == donor]
    assignment[ordered[-1]] = target

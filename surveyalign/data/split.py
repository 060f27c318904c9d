"""Split policies of the dataset build (SurveyReview §4.4, App. D).

* ``as-released`` (:func:`as_released_split`): the release names its splits in its file names
  (``raw/train_samples.json``, ``test/grouped_testset.json``, ``testset/<dimension>.json``, ...). Train files go
  to train, with validation carved from the training papers at the paper level; test files go to test; a paper
  in both is an error; a test-only release builds whole into test.
* ``paper-level`` (:func:`split_papers`): for releases that name no split, or by choice. All reviews of one
  paper land in the same split. Within each source stratum the papers are sorted, shuffled with a generator
  seeded by ``(seed, source)``, and the first round(25%) go to test; of the remaining training papers, the
  first round(10%) go to validation (the 90/10 checkpoint-selection split). When rounding leaves test or
  validation empty although its fraction is above 0 and train holds at least two papers, one training paper
  moves there (small releases).
"""

from __future__ import annotations

import math
import random
from collections import defaultdict
from collections.abc import Mapping
from typing import Any

from surveyalign.constants import DIMENSIONS, SPLITS

#: Split policies of :func:`assign_splits`; "auto" picks as-released when the release names its splits.
SPLIT_POLICIES: tuple[str, ...] = ("auto", "as-released", "paper-level")


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
        test_fraction: share of each stratum's papers in test (0 <= f <= 1; 1 puts every paper in test),
            rounded half up.
        validation_fraction: share of each stratum's remaining training papers in validation (0 <= f < 1).

    Returns:
        ``{paper_id: split}``.

    Raises:
        ValueError: for a test fraction outside [0, 1] or a validation fraction outside [0, 1).
    """
    if not 0.0 <= test_fraction <= 1.0:
        raise ValueError(f"test_fraction must be in [0, 1], got {test_fraction}")
    if not 0.0 <= validation_fraction < 1.0:
        raise ValueError(f"validation_fraction must be in [0, 1), got {validation_fraction}")
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
    if test_fraction > 0:
        _ensure_non_empty(assignment, strata, "test", "train", seed)
    if validation_fraction > 0:
        _ensure_non_empty(assignment, strata, "validation", "train", seed)
    return assignment


def as_released_split(
    paper_sources: Mapping[str, str],
    paper_declared: Mapping[str, Mapping[str, str]],
    *,
    seed: int = 42,
    validation_fraction: float = 0.10,
) -> dict[str, str]:
    """The release's own split: declared test papers in test, declared train papers in train/validation.

    Args:
        paper_sources: ``{paper_id: source}`` (the validation stratum).
        paper_declared: ``{paper_id: {declared split ("train"|"test"): a file declaring it}}``.
        seed: seed of the paper-level validation draw.
        validation_fraction: share of each source's training papers in validation (0 <= f < 1).

    Returns:
        ``{paper_id: split}``.

    Raises:
        ValueError: a paper declared in both train and test files (naming the paper and both files), or a
            paper whose files declare no split.
    """
    for paper in sorted(paper_sources):
        declared = paper_declared.get(paper) or {}
        if not declared:
            raise ValueError(f"paper {paper}: its records come from files that name no split; build with "
                             "--split-policy paper-level")
        if len(declared) > 1:
            raise ValueError(f"paper {paper} is in the release's train files ({declared['train']}) and in its test "
                             f"files ({declared['test']}): the release's split is not paper-level")
    train = {p: s for p, s in paper_sources.items() if "train" in paper_declared[p]}
    assignment = split_papers(train, seed=seed, test_fraction=0.0, validation_fraction=validation_fraction)
    assignment.update({p: "test" for p in paper_sources if "test" in paper_declared[p]})
    return assignment


def assign_splits(
    paper_sources: Mapping[str, str],
    paper_declared: Mapping[str, Mapping[str, str]],
    *,
    policy: str = "auto",
    seed: int = 42,
    test_fraction: float = 0.25,
    validation_fraction: float = 0.10,
) -> tuple[dict[str, str], dict[str, Any]]:
    """Assign every paper to a split under a split policy and describe what ran.

    Args:
        paper_sources: ``{paper_id: source}``.
        paper_declared: ``{paper_id: {declared split: file}}`` (empty for papers of files naming no split).
        policy: one of :data:`SPLIT_POLICIES`; "auto" runs as-released when any paper's files name a split,
            else paper-level.
        seed: split seed.
        test_fraction: paper-level only: share of each source's papers in test (0-1).
        validation_fraction: share of each source's training papers in validation (0 <= f < 1).

    Returns:
        ``(assignment, description)`` where ``description`` holds ``policy``, ``reason``, ``method`` and the
        fractions that applied (``test_fraction`` is None under as-released).

    Raises:
        ValueError: unknown policy, bad fractions, or an as-released conflict (see :func:`as_released_split`).
    """
    if policy not in SPLIT_POLICIES:
        raise ValueError(f"unknown split policy {policy!r}; expected one of {', '.join(SPLIT_POLICIES)}")
    names_splits = any(paper_declared.get(p) for p in paper_sources)
    if policy == "auto":
        policy = "as-released" if names_splits else "paper-level"
        reason = ("the release names its splits in its file names" if names_splits
                  else "the release names no split")
    else:
        reason = "chosen with --split-policy"
    if policy == "as-released":
        assignment = as_released_split(paper_sources, paper_declared, seed=seed,
                                       validation_fraction=validation_fraction)
        method = ("as released: papers of train files in train, validation = round-half-up(validation_fraction x "
                  "training papers) per source; papers of test files in test")
        fractions = {"test_fraction": None, "validation_fraction": validation_fraction}
    else:
        assignment = split_papers(dict(paper_sources), seed=seed, test_fraction=test_fraction,
                                  validation_fraction=validation_fraction)
        method = ("paper-level, stratified by source; test = round-half-up(test_fraction x papers) per source; "
                  "validation = round-half-up(validation_fraction x training papers) per source")
        fractions = {"test_fraction": test_fraction, "validation_fraction": validation_fraction}
    return assignment, {"policy": policy, "reason": reason, "method": method, **fractions}


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


def split_counts(rows: Mapping[tuple[str, str], list[dict]], assignment: Mapping[str, str],
                 paper_sources: Mapping[str, str]) -> dict[str, Any]:
    """Papers, reviews and units of every split, per dimension and per source (``build_report.json["counts"]``).

    Args:
        rows: ``{(dimension, split): rows}`` as written.
        assignment: ``{paper_id: split}``.
        paper_sources: ``{paper_id: source}``.

    Returns:
        ``{split: {"papers", "reviews", "units", "units_per_dimension", "per_source": {source: {"papers",
        "reviews", "units"}}}}`` for every split name (zeros for an empty split).
    """
    counts: dict[str, Any] = {}
    for split in SPLITS:
        split_rows = [row for dim in DIMENSIONS for row in rows.get((dim, split), [])]
        per_source: dict[str, dict[str, int]] = {}
        for source in sorted({r["source"] for r in split_rows} | {paper_sources[p] for p, s in assignment.items()
                                                                   if s == split}):
            src_rows = [r for r in split_rows if r["source"] == source]
            per_source[source] = {
                "papers": sum(1 for p, s in assignment.items() if s == split and paper_sources[p] == source),
                "reviews": len({r["review_id"] for r in src_rows}),
                "units": len(src_rows),
            }
        counts[split] = {
            "papers": sum(1 for s in assignment.values() if s == split),
            "reviews": len({r["review_id"] for r in split_rows}),
            "units": len(split_rows),
            "units_per_dimension": {dim: len(rows.get((dim, split), [])) for dim in DIMENSIONS},
            "per_source": per_source,
        }

    return counts

"""Citation F1 over P0/P1 partitions of resolved reference ids (PaperOrchestra §5, App. F.3), both published variants.

* ``"seed"`` (the paper's description, default): both papers are partitioned. For P0, P1 and overall (P0 | P1 on
  each side): precision = |GT & Gen| / |Gen|, recall = |GT & Gen| / |GT|, F1 = 2PR / (P + R).
* ``"official"`` (the released autorater code): only the ground-truth paper is partitioned; a ground-truth
  reference without a label counts as P1 and an id under both labels counts as P0. Reported: overall
  precision / recall / F1 of all the generated paper's ids against all ground-truth ids, plus P0 recall and P1
  recall (no per-partition precision).

In both, a reference is identified by its resolved paper id (e.g. a Semantic Scholar paperId); unresolved
references (id ``None``) are left out of the sets and counted per side, since leaving them out inflates
precision and recall. Sets are sets: two references resolving to one id count once (reported as duplicates).
A zero denominator gives 0.0 and a flag naming it, never an exception.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from surveyalign.autoraters.rubric import PARTITION_LABELS

#: The published variants; the first is the default.
CITATION_F1_VARIANTS: tuple[str, ...] = ("seed", "official")

__all__ = ["CITATION_F1_VARIANTS", "CitationF1", "CitationScore", "SideSummary", "citation_f1", "citation_f1_by_pair"]


@dataclass(frozen=True)
class CitationScore:
    """Precision / recall / F1 of one id set against another.

    Attributes:
        precision: |GT & Gen| / |Gen| in [0, 1]; 0.0 when Gen is empty (flagged); ``None`` where the variant
            defines no precision (official P0/P1).
        recall: |GT & Gen| / |GT| in [0, 1]; 0.0 when GT is empty (flagged).
        f1: 2PR / (P + R) in [0, 1]; 0.0 when P + R = 0 (flagged); ``None`` where the variant defines none.
        n_matched: |GT & Gen|.
        n_generated: |Gen|.
        n_ground_truth: |GT|.
        flags: names of the zero denominators met (``"precision: no generated ids"``...), empty when none.
    """

    precision: float | None
    recall: float
    f1: float | None
    n_matched: int
    n_generated: int
    n_ground_truth: int
    flags: tuple[str, ...] = ()


def _score(gt: set[str], gen: set[str], *, with_precision: bool = True) -> CitationScore:
    matched = len(gt & gen)
    flags: list[str] = []
    if not gt:
        flags.append("recall: no ground-truth ids (denominator 0)")
    recall = matched / len(gt) if gt else 0.0
    if not with_precision:
        return CitationScore(None, recall, None, matched, len(gen), len(gt), tuple(flags))
    if not gen:
        flags.append("precision: no generated ids (denominator 0)")
    precision = matched / len(gen) if gen else 0.0
    if precision + recall == 0:
        flags.append("f1: precision + recall = 0")
        f1 = 0.0
    else:
        f1 = 2 * precision * recall / (precision + recall)
    return CitationScore(precision, recall, f1, matched, len(gen), len(gt), tuple(flags))


@dataclass(frozen=True)
class SideSummary:
    """How one paper's references went into the id sets.

    Attributes:
        n_references: references listed.
        n_resolved: references with a resolved id.
        unresolved: numbers of the references without an id (left out of every set).
        unlabelled: numbers of resolved references the partition gave no label (``seed``: left out;
            ``official`` ground truth: counted as P1).
        duplicate_ids: ids that two or more references resolved to (counted once).
        ids_in_both: ids labelled P0 by one reference and P1 by another (``seed``: in both sets;
            ``official``: P0 only).
        p0_ids: the P0 id set (sorted).
        p1_ids: the P1 id set (sorted).
    """

    n_references: int
    n_resolved: int
    unresolved: tuple[str, ...]
    unlabelled: tuple[str, ...]
    duplicate_ids: tuple[str, ...]
    ids_in_both: tuple[str, ...]
    p0_ids: tuple[str, ...] = ()
    p1_ids: tuple[str, ...] = ()

    @property
    def n_unresolved(self) -> int:
        """Number of unresolved references."""
        return len(self.unresolved)


def _side(name: str, ids: Mapping[str, str | None], labels: Mapping[str, str] | None, *,
          unlabelled_as: str | None = None, p0_wins: bool = False) -> tuple[SideSummary, set[str], set[str]]:
    """Id sets (P0, P1) of one side; ``labels=None`` = not partitioned (every resolved id in P1, none unlabelled)."""
    ids = {str(k): v for k, v in ids.items()}
    labels = None if labels is None else {str(k): v for k, v in labels.items()}
    if labels is not None:
        unknown = [k for k in labels if k not in ids]
        if unknown:
            raise ValueError(f"{name}: partition labels reference number(s) {unknown} that are not in its "
                             f"reference ids")
        bad = {k: v for k, v in labels.items() if v not in PARTITION_LABELS}
        if bad:
            raise ValueError(f"{name}: labels must be P0 or P1, got {bad}")
    unresolved = tuple(k for k, v in ids.items() if v is None or not str(v).strip())
    seen: dict[str, int] = {}
    p0: set[str] = set()
    p1: set[str] = set()
    unlabelled: list[str] = []
    for number, paper_id in ids.items():
        if number in unresolved:
            continue
        seen[paper_id] = seen.get(paper_id, 0) + 1
        label = labels.get(number) if labels is not None else "P1"
        if label is None:
            unlabelled.append(number)
            label = unlabelled_as
        if label == "P0":
            p0.add(paper_id)
        elif label == "P1":
            p1.add(paper_id)
    both = p0 & p1
    if p0_wins:
        p1 -= both
    summary = SideSummary(
        n_references=len(ids), n_resolved=len(ids) - len(unresolved), unresolved=unresolved,
        unlabelled=tuple(unlabelled),
        duplicate_ids=tuple(sorted(k for k, c in seen.items() if c > 1)), ids_in_both=tuple(sorted(both)),
        p0_ids=tuple(sorted(p0)), p1_ids=tuple(sorted(p1)),
    )
    return summary, p0, p1


@dataclass(frozen=True)
class CitationF1:
    """Result of :func:`citation_f1`.

    Attributes:
        variant: ``"seed"`` or ``"official"`` (which rule ran).
        overall: P/R/F1 over all labelled ids (seed: P0 | P1 each side; official: every generated id vs every
            ground-truth id).
        p0: the P0 score (official: recall only).
        p1: the P1 score (official: recall only).
        ground_truth: how the ground-truth references went in.
        generated: how the generated references went in.
        flags: every zero-denominator flag, prefixed with the score it belongs to.
    """

    variant: str
    overall: CitationScore
    p0: CitationScore
    p1: CitationScore
    ground_truth: SideSummary
    generated: SideSummary
    flags: tuple[str, ...] = field(default=())

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable view (nested dicts; unresolved counts included per side)."""
        out = asdict(self)
        out["ground_truth"]["n_unresolved"] = self.ground_truth.n_unresolved
        out["generated"]["n_unresolved"] = self.generated.n_unresolved
        return out


def citation_f1(gt_ids: Mapping[str, str | None], gen_ids: Mapping[str, str | None],
                gt_labels: Mapping[str, str], gen_labels: Mapping[str, str] | None = None,
                variant: str = "seed") -> CitationF1:
    """Citation precision / recall / F1 of a generated paper against its ground truth (PaperOrchestra App. F.3).

    Args:
        gt_ids: ground-truth reference number -> resolved paper id, ``None`` when unresolved.
        gen_ids: generated-paper reference number -> resolved paper id, ``None`` when unresolved.
        gt_labels: ground-truth reference number -> ``"P0"`` / ``"P1"`` (numbers the partition missed may be
            absent).
        gen_labels: the generated paper's partition; required by ``"seed"``, ignored by ``"official"``.
        variant: ``"seed"`` (default) or ``"official"``; see the module docstring.

    Returns:
        A :class:`CitationF1` naming the variant, with every zero denominator flagged (value 0.0).

    Raises:
        ValueError: unknown variant, ``gen_labels`` missing for ``"seed"``, a label other than P0/P1, or a label
            for a number that has no entry in the matching id mapping.
    """
    if variant not in CITATION_F1_VARIANTS:
        raise ValueError(f"unknown citation F1 variant {variant!r}; expected one of {CITATION_F1_VARIANTS}")
    if variant == "seed":
        if gen_labels is None:
            raise ValueError("citation F1 variant 'seed' needs the generated paper's partition (gen_labels)")
        gt, gt_p0, gt_p1 = _side("ground truth", gt_ids, gt_labels)
        gen, gen_p0, gen_p1 = _side("generated", gen_ids, gen_labels)
        p0, p1 = _score(gt_p0, gen_p0), _score(gt_p1, gen_p1)
        overall = _score(gt_p0 | gt_p1, gen_p0 | gen_p1)
    else:
        gt, gt_p0, gt_p1 = _side("ground truth", gt_ids, gt_labels, unlabelled_as="P1", p0_wins=True)
        gen, _, gen_all = _side("generated", gen_ids, None)
        overall = _score(gt_p0 | gt_p1, gen_all)
        p0, p1 = _score(gt_p0, gen_all, with_precision=False), _score(gt_p1, gen_all, with_precision=False)
    flags = tuple(f"{name} {flag}" for name, score in (("overall", overall), ("P0", p0), ("P1", p1))
                  for flag in score.flags)
    return CitationF1(variant, overall, p0, p1, gt, gen, flags)


def _mean(values: list[float | None]) -> float | None:
    kept = [v for v in values if v is not None]
    return sum(kept) / len(kept) if kept else None


def citation_f1_by_pair(pairs: Sequence[str], sides: Sequence[str], paper_ids: Sequence[str | None],
                        labels: Sequence[str | None], variant: str = "seed") -> dict[str, Any]:
    """Citation F1 per paper pair from one row per reference, and the mean over pairs (PaperOrchestra App. F.3).

    Args:
        pairs: the pair each reference belongs to (any string; rows of one pair need not be adjacent).
        sides: ``"ground_truth"`` or ``"generated"`` per row.
        paper_ids: resolved paper id per row, ``None`` (or ``""``) when unresolved.
        labels: ``"P0"``, ``"P1"`` or ``None`` / ``""`` (unlabelled) per row; the official variant ignores the
            generated side's labels.
        variant: ``"seed"`` (default) or ``"official"``.

    Returns:
        ``{"variant", "n_pairs", "mean": {"overall"|"p0"|"p1": {"precision", "recall", "f1"}}, "n_unresolved":
        {side: count}, "n_flagged_pairs", "per_pair": {pair: CitationF1 dict}}``; means are over pairs
        (a flagged zero counts as 0.0), ``None`` where the variant defines no value.

    Raises:
        ValueError: columns of different lengths, an unknown side or label, or an unknown variant.
    """
    n = len(pairs)
    if not len(sides) == len(paper_ids) == len(labels) == n:
        raise ValueError(f"citation F1 columns differ in length: pairs {n}, sides {len(sides)}, paper_ids "
                         f"{len(paper_ids)}, labels {len(labels)}")
    grouped: dict[str, dict[str, tuple[dict[str, str | None], dict[str, str]]]] = {}
    for row, (pair, side, paper_id, label) in enumerate(zip(pairs, sides, paper_ids, labels, strict=True)):
        if side not in ("ground_truth", "generated"):
            raise ValueError(f"row {row}: side must be 'ground_truth' or 'generated', got {side!r}")
        label = label or None  # "" = not labelled
        if label is not None and label not in PARTITION_LABELS:
            raise ValueError(f"row {row}: label must be P0, P1 or None, got {label!r}")
        sides_of = grouped.setdefault(str(pair), {"ground_truth": ({}, {}), "generated": ({}, {})})
        ids, labs = sides_of[side]
        number = str(len(ids) + 1)
        ids[number] = paper_id
        if label is not None:
            labs[number] = label
    results = {pair: citation_f1(s["ground_truth"][0], s["generated"][0], s["ground_truth"][1],
                                 s["generated"][1], variant) for pair, s in grouped.items()}
    mean = {part: {metric: _mean([getattr(getattr(r, part), metric) for r in results.values()])
                   for metric in ("precision", "recall", "f1")} for part in ("overall", "p0", "p1")}
    return {
        "variant": variant, "n_pairs": len(results), "mean": mean,
        "n_unresolved": {"ground_truth": sum(r.ground_truth.n_unresolved for r in results.values()),
                         "generated": sum(r.generated.n_unresolved for r in results.values())},
        "n_flagged_pairs": sum(bool(r.flags) for r in results.values()),
        "per_pair": {pair: r.to_dict() for pair, r in results.items()},
    }

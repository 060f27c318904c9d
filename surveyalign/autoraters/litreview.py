"""Literature-review quality judgements: validation, weighted-score recomputation and cap checks.

PaperOrchestra App. F.3 (literature-review quality autorater). The judge's JSON is validated with pydantic
(every axis score in [0, 100], categorical fields from their fixed sets, every key present). The judge's
``overall_score`` is kept as given; next to it the weighted score sum(w_axis * score_axis) (weights
20/15/25/25/10/5 %) minus the declared penalties is recomputed, and every rule of the rubric that can be checked
from the JSON is checked, so rule-breaking judgements are flagged rather than silently trusted.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from surveyalign.autoraters import rubric
from surveyalign.autoraters.parsing import read_json_answer

__all__ = ["LitReviewCheck", "LitReviewJudgement", "LitReviewParse", "Violation", "check_litreview",
           "parse_litreview"]

#: Points of slack when comparing the judge's overall score with the recomputed one (rounding).
OVERALL_TOLERANCE: float = 0.5


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class AxisScore(_Model):
    """One axis: a 0-100 score and its justification."""

    score: float = Field(..., ge=0, le=100)
    justification: str


class AxisScores(_Model):
    """The six axes of PaperOrchestra App. F.3 (keys as in :data:`rubric.AXES`)."""

    coverage_and_completeness: AxisScore
    relevance_and_focus: AxisScore
    critical_analysis_and_synthesis: AxisScore
    positioning_and_novelty: AxisScore
    organization_and_writing: AxisScore
    citation_practices_and_rigor: AxisScore


class CitationStatistics(_Model):
    """The judge's estimate of the review's citations."""

    estimated_unique_citations: float = Field(..., ge=0)
    citation_density_assessment: Literal["low", "appropriate", "high"]
    breadth_across_subareas: Literal["narrow", "moderate", "broad"]
    comparison_to_baseline: str
    notes: str


class PenaltyEntry(_Model):
    """One declared penalty (``points_deducted`` may be written as 5 or -5; its size is what counts)."""

    reason: str
    points_deducted: float


class Summary(_Model):
    """Strengths, weaknesses and improvements."""

    strengths: list[str]
    weaknesses: list[str]
    top_improvements: list[str]


class LitReviewJudgement(_Model):
    """A literature-review quality answer with every key of the output format (PaperOrchestra App. F.3)."""

    paper_title: str | None
    citation_statistics: CitationStatistics
    axis_scores: AxisScores
    penalties: list[PenaltyEntry]
    summary: Summary
    overall_score: float = Field(..., ge=0, le=100)

    def score(self, key: str) -> float:
        """The score of axis ``key``."""
        return getattr(self.axis_scores, key).score


@dataclass(frozen=True)
class LitReviewParse:
    """A literature-review answer after validation.

    Attributes:
        judgement: the validated answer, or ``None``.
        problems: every problem, one line each (invalid JSON; ``field.path: message`` per validation error,
            e.g. an axis score out of [0, 100]); empty when clean.
    """

    judgement: LitReviewJudgement | None
    problems: tuple[str, ...] = ()


def parse_litreview(text: str | None, *, untrusted: Sequence[str] | None = None) -> LitReviewParse:
    """Read and validate a literature-review quality answer.

    Args:
        text: the judge's answer.
        untrusted: the paper text the judge read; what the answer quotes from it never decides.

    Returns:
        A :class:`LitReviewParse`; ``judgement`` is ``None`` when the JSON is invalid or fails validation, with
        one problem per failing field (all of them, not only the first). Never raises on model output.
    """
    answer = read_json_answer(text, untrusted=untrusted)
    if not answer.ok:
        return LitReviewParse(None, answer.problems)
    try:
        judgement = LitReviewJudgement.model_validate(answer.data)
    except ValidationError as err:
        problems = [f"{'.'.join(str(p) for p in e['loc']) or '<root>'}: {e['msg']}" for e in err.errors()]
        return LitReviewParse(None, answer.problems + tuple(problems))
    return LitReviewParse(judgement, answer.problems)


@dataclass(frozen=True)
class Violation:
    """One rubric rule the judgement breaks.

    Attributes:
        rule: short rule name (e.g. ``"critical_cap_descriptive"``).
        message: what was found, with the numbers.
    """

    rule: str
    message: str


@dataclass(frozen=True)
class LitReviewCheck:
    """The recomputation and rule checks of one judgement.

    Attributes:
        overall_score: the judge's own overall score (kept as given).
        weighted_score: sum over axes of weight * score, in [0, 100].
        penalty_points: total declared deduction (sizes of ``points_deducted``).
        recomputed_score: weighted_score - penalty_points.
        implied_adjustment: overall_score - recomputed_score (0 or +3..+7 when the judge followed the rubric).
        citation_ratio: estimated citations / venue average.
        violations: every broken rule (empty when none).
    """

    overall_score: float
    weighted_score: float
    penalty_points: float
    recomputed_score: float
    implied_adjustment: float
    citation_ratio: float
    violations: tuple[Violation, ...]

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable view (violations as ``{"rule", "message"}``)."""
        return asdict(self)


_DESCRIPTIVE = ("descriptive",)
_NOVELTY = ("overclaim", "novelty")
_SPARSE = ("sparse", "inconsisten")
_DUMPING = ("dump",)


def _declared(judgement: LitReviewJudgement, words: tuple[str, ...]) -> bool:
    return any(w in p.reason.lower() for p in judgement.penalties for w in words)


def check_litreview(judgement: LitReviewJudgement, avg_citation_count: float) -> LitReviewCheck:
    """Recompute the weighted score and check every rubric rule that the JSON allows checking.

    PaperOrchestra App. F.3. Checked: the overall score against weighted - penalties (+0, or +3..+7 when the
    positive adjustment's conditions hold), penalty sizes (each 5..15), the anti-inflation limits (> 75 with an
    axis < 50; > 85 without every axis >= 71; > 90 without every axis >= 86), the coverage and rigour caps from
    the citation count (< 50 % of the venue average: coverage <= 55, rigour <= 55), rigour <= 60 for a "low"
    citation density, and the caps that follow from penalties the judge declared itself (descriptive review:
    critical analysis <= 60; overclaimed novelty: positioning <= 60; sparse / inconsistent citations: rigour <=
    60; citation dumping: rigour <= 65).

    Args:
        judgement: a validated judgement.
        avg_citation_count: the venue average given to the judge, > 0.

    Returns:
        A :class:`LitReviewCheck`.

    Raises:
        ValueError: ``avg_citation_count`` not positive.
    """
    if not avg_citation_count > 0:
        raise ValueError(f"avg_citation_count must be positive, got {avg_citation_count!r}")
    score = judgement.score
    weighted = math.fsum(axis.weight * score(axis.key) for axis in rubric.AXES)
    penalty = math.fsum(abs(p.points_deducted) for p in judgement.penalties)
    recomputed = weighted - penalty
    overall = judgement.overall_score
    adjustment = overall - recomputed
    ratio = judgement.citation_statistics.estimated_unique_citations / avg_citation_count
    out: list[Violation] = []

    def flag(rule: str, message: str) -> None:
        out.append(Violation(rule, message))

    lo, hi = rubric.POSITIVE_ADJUSTMENT
    tol = OVERALL_TOLERANCE
    if adjustment < -tol or tol < adjustment < lo - tol or adjustment > hi + tol:
        flag("overall_mismatch", f"overall {overall:g} differs from weighted {weighted:.2f} - penalties "
             f"{penalty:g} = {recomputed:.2f} by {adjustment:+.2f} (allowed: 0 or +{lo}..+{hi})")
    if adjustment > tol:
        unmet = []
        if ratio <= rubric.ADJUSTMENT_MIN_CITATION_RATIO:
            unmet.append(f"citations {ratio:.0%} of the venue average (needs > 150%)")
        if score("critical_analysis_and_synthesis") <= rubric.ADJUSTMENT_MIN_CRITICAL:
            unmet.append(f"critical analysis {score('critical_analysis_and_synthesis'):g} "
                         f"(needs > {rubric.ADJUSTMENT_MIN_CRITICAL})")
        if score("relevance_and_focus") <= rubric.ADJUSTMENT_MIN_RELEVANCE:
            unmet.append(f"relevance {score('relevance_and_focus'):g} (needs > {rubric.ADJUSTMENT_MIN_RELEVANCE})")
        if unmet:
            flag("positive_adjustment_not_allowed", f"implied adjustment {adjustment:+.2f} but " + "; ".join(unmet))
    low_pen, high_pen = min(p.low for p in rubric.PENALTIES), max(p.high for p in rubric.PENALTIES)
    for p in judgement.penalties:
        if not low_pen <= abs(p.points_deducted) <= high_pen:
            flag("penalty_out_of_range", f"penalty {p.reason!r}: {abs(p.points_deducted):g} points "
                 f"(allowed {low_pen}..{high_pen})")
    axes = {axis.key: score(axis.key) for axis in rubric.AXES}
    weakest_key = min(axes, key=axes.get)
    weakest = axes[weakest_key]
    if weakest < rubric.WEAK_AXIS_BELOW and overall > rubric.WEAK_AXIS_OVERALL_LIMIT:
        flag("overall_above_75_with_weak_axis", f"overall {overall:g} > {rubric.WEAK_AXIS_OVERALL_LIMIT} while "
             f"{weakest_key} is {weakest:g} (< {rubric.WEAK_AXIS_BELOW})")
    if overall > rubric.STRONG_OVERALL_ABOVE and weakest < rubric.STRONG_AXIS_MIN:
        flag("overall_above_85_without_strong_axes", f"overall {overall:g} > {rubric.STRONG_OVERALL_ABOVE} while "
             f"{weakest_key} is {weakest:g} (< {rubric.STRONG_AXIS_MIN}, not strong)")
    if overall > rubric.EXCEPTIONAL_OVERALL_ABOVE and weakest < rubric.EXCEPTIONAL_AXIS_MIN:
        flag("overall_above_90_without_excellent_axes", f"overall {overall:g} > {rubric.EXCEPTIONAL_OVERALL_ABOVE} "
             f"while {weakest_key} is {weakest:g} (< {rubric.EXCEPTIONAL_AXIS_MIN})")

    def cap(rule: str, key: str, limit: int, why: str) -> None:
        if axes[key] > limit:
            flag(rule, f"{key} is {axes[key]:g} but capped at {limit}: {why}")

    if ratio < 0.5:
        why = f"estimated citations are {ratio:.0%} of the venue average {avg_citation_count:g} (< 50%)"
        cap("coverage_cap_low_citation_count", "coverage_and_completeness", 55, why)
        cap("rigor_cap_low_citation_count", "citation_practices_and_rigor", 55, why)
    if judgement.citation_statistics.citation_density_assessment == "low":
        cap("rigor_cap_sparse_citations", "citation_practices_and_rigor", 60, "citation density assessed as low")
    if _declared(judgement, _DESCRIPTIVE):
        cap("critical_cap_descriptive", "critical_analysis_and_synthesis", 60, "a descriptive-review penalty")
    if _declared(judgement, _NOVELTY):
        cap("positioning_cap_unsupported_novelty", "positioning_and_novelty", 60, "a novelty penalty")
    if _declared(judgement, _SPARSE):
        cap("rigor_cap_sparse_citations", "citation_practices_and_rigor", 60, "a sparse/inconsistent citation penalty")
    if _declared(judgement, _DUMPING):
        cap("rigor_cap_weak_integration", "citation_practices_and_rigor", 65, "a citation-dumping penalty")
    unique = tuple({(v.rule, v.message): v for v in out}.values())
    return LitReviewCheck(overall, weighted, penalty, recomputed, adjustment, ratio, unique)

"""Prior survey evaluators' scores mapped onto the benchmark's categories (SurveyReview §6.1 "Prior Work", App. H).

Pure functions and tables, no I/O: which of an outside tool's criteria stands for which SurveyReview dimension
(:data:`PROFILES`), on which scale the tool scores it, and how one raw score becomes one of {-2, -1, +1, +2}.

The mapping (App. H: "map its output to the closest category in our unified score space"): the tool's scale
[low, high] is stretched linearly onto [-2, 2] (:func:`rescale`), then the closest category is taken
(:func:`closest_category`). 0 is not a category. A value exactly halfway between two categories (-1.5, 0, +1.5)
is a tie, broken by a rule named in the run (:data:`TIE_RULES`); the default, ``majority``, takes the category
nearer to -1, the benchmark's majority label (66.25% of units, SurveyReview §4): -1.5 -> -1, 0 -> -1, +1.5 -> +1.

The tools (read from their public code; the criteria each maps follow the filled cells of SurveyReview Table 2):

- ``llmxmapreduce``: LLMxMapReduce-V2 ``evaluation/all_eval.py`` writes one row per survey (``name`` = the topic)
  with ``language_score`` and ``critical_score`` (0-100: the mean of per-section 0-100 scores) and ``structure``
  and ``relevance`` (a 1-5 AutoSurvey criterion score times 20, so 20-100). Mapped: language_score -> readability,
  critical_score -> criticalness, structure -> structure, relevance -> comprehensiveness (Table 2 fills all four
  columns). Its citation and claim statistics are not judgements of a dimension and are left out.
- ``drbench``: DeepResearch Bench RACE, point-wise (``target_score`` only): per dimension a 0-10 score (the
  weighted mean of its criteria scores). App. H leaves out every reference-answer component, so the comparative
  output (``article_2_score``, ``overall_score`` = target / (target + reference)) is refused. Mapped:
  insight -> criticalness (App. H), comprehensiveness -> comprehensiveness, readability -> readability (the other
  two DR-Bench cells of Table 2); instruction_following has no counterpart.
- ``surveyx``: SurveyX content-quality criteria on a 1-5 scale: coverage, structure, relevance, synthesis,
  critical analysis. Mapped as in Table 2: structure -> structure, critical_analysis -> criticalness.
- ``generic``: no built-in table; every criterion is given with ``--map`` and its scale with ``--scale``.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from surveyalign.constants import VALID_SCORES, Dimension

__all__ = [
    "PROFILES",
    "TIE_RULES",
    "Criterion",
    "Mapped",
    "ToolProfile",
    "closest_category",
    "criterion_key",
    "map_score",
    "mapping_table",
    "rescale",
]

#: How a value exactly halfway between two categories is decided: ``majority`` (the one nearer to -1, the
#: benchmark's majority label), ``lower`` (the smaller), ``higher`` (the larger).
TIE_RULES: tuple[str, ...] = ("majority", "lower", "higher")

#: The benchmark label the ``majority`` tie rule leans to (SurveyReview §4: -1 is 66.25% of units).
_MAJORITY_LABEL = -1
#: Two distances closer than this are equal (a tie); rescaled values are exact for the tools' round scales.
_EPS = 1e-9


def criterion_key(name: object) -> str:
    """A tool's criterion name as a lookup key: lower case, runs of other characters as one ``_``.

    Args:
        name: e.g. ``"Critical Analysis"``, ``"critical-analysis"``, ``"language_score"``.

    Returns:
        ``"critical_analysis"``, ``"critical_analysis"``, ``"language_score"``.
    """
    return re.sub(r"[^0-9a-z]+", "_", str(name).strip().lower()).strip("_")


def rescale(value: float, scale: tuple[float, float]) -> float:
    """Stretch ``value`` linearly from the tool's scale onto [-2, 2] (App. H: before the closest category).

    Args:
        value: the tool's raw score, within ``scale``.
        scale: ``(low, high)`` of the tool's scale, ``low < high`` (e.g. ``(1, 5)``, ``(0, 10)``, ``(20, 100)``).

    Returns:
        ``-2 + 4 * (value - low) / (high - low)``, in [-2, 2]: low -> -2, the middle -> 0, high -> +2.

    Raises:
        ValueError: ``low >= high``, a value that is not a finite number, or a value outside the scale.
    """
    low, high = float(scale[0]), float(scale[1])
    if not (math.isfinite(low) and math.isfinite(high)) or low >= high:
        raise ValueError(f"scale {low:g},{high:g}: expected finite MIN < MAX")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"score {value!r} is not a finite number")
    if not low <= value <= high:
        raise ValueError(f"score {value:g} is outside the scale [{low:g}, {high:g}]")
    return -2.0 + 4.0 * (float(value) - low) / (high - low)


def closest_category(x: float, tie: str = "majority") -> tuple[int, bool]:
    """The category of {-2, -1, +1, +2} closest to a rescaled value (0 is not a category; App. H).

    Args:
        x: a value in [-2, 2] (:func:`rescale`).
        tie: the rule for a value halfway between two categories (-1.5, 0, +1.5): one of :data:`TIE_RULES`.

    Returns:
        ``(category, was_tie)``. With ``tie="majority"``: -1.6 -> (-2, False), -1.5 -> (-1, True),
        -1.2 -> (-1, False), 0.0 -> (-1, True), 0.4 -> (1, False), 1.5 -> (1, True), 1.6 -> (2, False).

    Raises:
        ValueError: ``x`` outside [-2, 2] or not finite, or an unknown tie rule.
    """
    if tie not in TIE_RULES:
        raise ValueError(f"unknown tie rule {tie!r}; expected one of {', '.join(TIE_RULES)}")
    if not math.isfinite(x) or not -2.0 - _EPS <= x <= 2.0 + _EPS:
        raise ValueError(f"rescaled score {x!r} is outside [-2, 2]")
    best = min(abs(x - c) for c in VALID_SCORES)
    nearest = [c for c in VALID_SCORES if abs(x - c) - best <= _EPS]
    if len(nearest) == 1:
        return nearest[0], False
    if tie == "lower":
        return min(nearest), True
    if tie == "higher":
        return max(nearest), True
    return min(nearest, key=lambda c: abs(c - _MAJORITY_LABEL)), True


@dataclass(frozen=True)
class Mapped:
    """One raw score mapped onto the benchmark (kept per unit in ``predictions.jsonl`` ``imported``).

    Attributes:
        raw_score: the tool's score as read.
        raw_scale: ``[low, high]`` of the tool's scale.
        rescaled: the score on [-2, 2].
        category: the benchmark score, one of {-2, -1, 1, 2}.
        tie: whether ``rescaled`` was halfway between two categories (decided by the tie rule).
    """

    raw_score: float
    raw_scale: tuple[float, float]
    rescaled: float
    category: int
    tie: bool


def map_score(value: float, scale: tuple[float, float], tie: str = "majority") -> Mapped:
    """Map one raw score of a tool to the closest benchmark category (App. H).

    Args:
        value: the tool's score.
        scale: the tool's ``(low, high)``.
        tie: tie rule (:data:`TIE_RULES`).

    Returns:
        :class:`Mapped`. On a 1-5 scale (majority rule): 1 -> -2, 2 -> -1, 3 -> -1 (tie), 4 -> +1, 5 -> +2; on
        0-10: 1.0 -> -2, 1.25 -> -1 (tie), 5.0 -> -1 (tie), 6.0 -> +1, 8.75 -> +1 (tie), 9.0 -> +2.

    Raises:
        ValueError: see :func:`rescale` and :func:`closest_category`.
    """
    x = rescale(value, scale)
    category, was_tie = closest_category(x, tie)
    return Mapped(raw_score=float(value), raw_scale=(float(scale[0]), float(scale[1])), rescaled=x,
                  category=category, tie=was_tie)


@dataclass(frozen=True)
class Criterion:
    """One score field of a tool's output.

    Attributes:
        key: the field's name as :func:`criterion_key` writes it.
        dimension: the SurveyReview dimension it stands for; ``None``: known, with no counterpart (left out).
        scale: ``(low, high)`` of its scores.
        note: where the field and its scale come from.
    """

    key: str
    dimension: Dimension | None
    scale: tuple[float, float]
    note: str = ""


@dataclass(frozen=True)
class ToolProfile:
    """What one prior evaluator writes and how it maps (App. H).

    Attributes:
        tool: the ``--from`` name.
        label: the default judge name in the leaderboard (SurveyReview Table 2 "Prior Work").
        reference: the tool's public code or paper.
        criteria: its score fields.
        refused: record fields that mean the output used a reference answer (App. H excludes those components):
            ``{field: why}``.
    """

    tool: str
    label: str
    reference: str
    criteria: tuple[Criterion, ...] = ()
    refused: dict[str, str] = field(default_factory=dict)


_LLMXMR = "thunlp/LLMxMapReduce, LLMxMapReduce_V2/evaluation/all_eval.py"
_DRB = "Ayanami0730/deep_research_bench, prompt/score_prompt_en.py (point_wise_score_prompt) + utils/score_calculator.py"
_SURVEYX = "SurveyX (Liang et al. 2025, arXiv 2502.14776), content-quality evaluation"

#: The built-in tools (``--from``); ``generic`` has no criteria of its own.
PROFILES: dict[str, ToolProfile] = {
    "llmxmapreduce": ToolProfile(
        tool="llmxmapreduce", label="LLMxMapReduce-V2", reference=_LLMXMR,
        criteria=(
            Criterion("language_score", "readability", (0.0, 100.0), "mean of per-section 0-100 language scores"),
            Criterion("critical_score", "criticalness", (0.0, 100.0), "mean of per-section 0-100 critical scores"),
            Criterion("structure", "structure", (20.0, 100.0), "1-5 criterion score x 20"),
            Criterion("relevance", "comprehensiveness", (20.0, 100.0), "1-5 criterion score x 20"),
            *(Criterion(k, None, (0.0, 100.0), "citation/claim statistic, not a judgement of a dimension")
              for k in ("claim_precision", "citation_precision", "reference_precision", "reference_coverage",
                        "claims_before_dedup", "claims_after_dedup", "compression_ratio")),
        )),
    "drbench": ToolProfile(
        tool="drbench", label="DeepResearch Bench", reference=_DRB,
        criteria=(
            Criterion("comprehensiveness", "comprehensiveness", (0.0, 10.0), "RACE dimension, point-wise 0-10"),
            Criterion("insight", "criticalness", (0.0, 10.0), "RACE insight/depth, point-wise 0-10 (App. H)"),
            Criterion("readability", "readability", (0.0, 10.0), "RACE dimension, point-wise 0-10"),
            Criterion("instruction_following", None, (0.0, 10.0), "task instructions: no SurveyReview counterpart"),
        ),
        refused={
            "overall_score": "RACE's relative score target/(target+reference) needs a reference answer",
            "article_2_score": "a comparative RACE score against a reference article",
        }),
    "surveyx": ToolProfile(
        tool="surveyx", label="SurveyX", reference=_SURVEYX,
        criteria=(
            Criterion("structure", "structure", (1.0, 5.0), "1-5 content-quality criterion"),
            Criterion("critical_analysis", "criticalness", (1.0, 5.0), "1-5 content-quality criterion"),
            *(Criterion(k, None, (1.0, 5.0), "1-5 content-quality criterion, not aligned in Table 2")
              for k in ("coverage", "relevance", "synthesis")),
        )),
    "generic": ToolProfile(tool="generic", label="imported scores", reference="given on the command line"),
}


def mapping_table(profile: ToolProfile, remap: dict[str, Dimension | None] | None = None,
                  scales: dict[str | None, tuple[float, float]] | None = None) -> dict[str, Criterion]:
    """The criteria that map to a dimension, after the command line's changes.

    Args:
        profile: the tool (:data:`PROFILES`).
        remap: ``{criterion name: dimension or None}`` (``--map``): a new or changed criterion -> dimension; None
            leaves a criterion out. Names go through :func:`criterion_key`.
        scales: ``{criterion name: (low, high)}`` (``--scale NAME=MIN,MAX``); the key ``None`` sets every
            criterion's scale (``--scale MIN,MAX``).

    Returns:
        ``{criterion key: Criterion}`` of the mapped criteria only (dimension set), in the tool's order then the
        order of ``remap``.

    Raises:
        ValueError: two criteria map to one dimension, a mapped criterion has no scale (a criterion the tool does
            not define needs ``--scale``), a scale with ``low >= high``, or no criterion maps at all.
    """
    remap = {criterion_key(k): v for k, v in (remap or {}).items()}
    scales = dict(scales or {})
    every = scales.pop(None, None)
    scales = {criterion_key(k): v for k, v in scales.items()}
    known = {c.key: c for c in profile.criteria}
    out: dict[str, Criterion] = {}
    for key in [*known, *(k for k in remap if k not in known)]:
        base = known.get(key)
        dimension = remap.get(key, base.dimension if base else None)
        if dimension is None:
            continue
        scale = scales.get(key) or every or (base.scale if base else None)
        if scale is None:
            raise ValueError(f"criterion {key!r} ({profile.tool}) has no known scale; give --scale {key}=MIN,MAX "
                             "or --scale MIN,MAX")
        low, high = float(scale[0]), float(scale[1])
        if not low < high:
            raise ValueError(f"criterion {key!r}: scale {low:g},{high:g}: expected MIN < MAX")
        note = base.note if base and key not in remap else "given with --map"
        out[key] = Criterion(key, dimension, (low, high), note)
    seen: dict[str, str] = {}
    for key, c in out.items():
        if c.dimension in seen:
            raise ValueError(f"criteria {seen[c.dimension]!r} and {key!r} both map to {c.dimension}; "
                             f"leave one out with --map {key}=none")
        seen[str(c.dimension)] = key
    unknown = [k for k in scales if k not in out]
    if unknown:
        raise ValueError(f"--scale names criteria that map to no dimension: {', '.join(unknown)}")
    if not out:
        raise ValueError(f"no criterion of {profile.tool} maps to a dimension; give --map CRITERION=DIMENSION")
    return out

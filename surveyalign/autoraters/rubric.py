"""The rubric facts of the PaperOrchestra autoraters, as data (PaperOrchestra App. F.3).

Prompts are rendered from these constants and the checks of :mod:`surveyalign.autoraters.litreview` read the
same constants, so the text a judge sees and the rules its answer is checked against cannot drift apart.
"""

from __future__ import annotations

from dataclasses import dataclass

#: Labels of the citation partition (PaperOrchestra App. F.3): P0 = must cite, P1 = good to have.
PARTITION_LABELS: tuple[str, ...] = ("P0", "P1")

#: What puts a reference in P0 (every criterion of the partition prompt).
P0_CRITERIA: tuple[str, ...] = (
    "a baseline that the paper's experiments compare against directly",
    "a dataset the paper uses or evaluates on",
    "a core method the paper builds on directly or modifies",
    "a metric, or a standard number, taken from another paper and relied on heavily",
)

#: What puts a reference in P1.
P1_CRITERIA: tuple[str, ...] = (
    "standard background covering the broad history of the area",
    "general related work that the paper neither competes with nor builds on",
    "small implementation details or software tools that are only mentioned briefly",
)


@dataclass(frozen=True)
class Axis:
    """One axis of the literature-review quality rubric (scored 0-100).

    Attributes:
        key: the JSON key under ``axis_scores``.
        name: the axis name shown to the judge.
        weight: weight in the overall score, in [0, 1]; the six weights sum to 1.
        criteria: what the judge looks at.
        caps: hard upper limits and the condition under which each applies, as (limit, condition).
    """

    key: str
    name: str
    weight: float
    criteria: tuple[str, ...]
    caps: tuple[tuple[int, str], ...] = ()


#: The six axes with weights 20/15/25/25/10/5 % (PaperOrchestra App. F.3, literature-review quality).
AXES: tuple[Axis, ...] = (
    Axis("coverage_and_completeness", "Coverage and completeness", 0.20, (
        "how broadly the major relevant research threads are covered",
        "whether both foundational and recent work are included",
        "whether obvious omissions are absent",
        "how the citation volume compares with the venue average",
    ), ((55, "the review cites fewer than half as many works as the venue average, unless the field is very small"),)),
    Axis("relevance_and_focus", "Relevance and focus", 0.15, (
        "how well the cited work aligns with the research problem",
        "how few tangents and padding citations there are",
        "whether the literature is clearly scoped and prioritised",
    )),
    Axis("critical_analysis_and_synthesis", "Critical analysis and synthesis", 0.25, (
        "whether approaches are grouped by theme and compared",
        "whether trade-offs, limitations and open gaps are discussed",
        "whether the text synthesises rather than summarising papers one after another",
    ), ((60, "the review mainly describes papers one by one instead of analysing them"),)),
    Axis("positioning_and_novelty", "Positioning and novelty justification", 0.25, (
        "whether the research gap is clear and grounded in the literature",
        "whether the paper states explicitly how it differs from the closest related work",
        "whether it argues that closing the gap is important",
    ), ((60, "novelty claims are vague, unsupported, or lack an explicit contrast with the nearest prior work"),)),
    Axis("organization_and_writing", "Organisation and writing quality", 0.10, (
        "logical structure, flow and signposting",
        "clear and precise academic language",
        "sensible subsections and definitions",
    )),
    Axis("citation_practices_and_rigor", "Citation practices, density and scholarly rigour", 0.05, (
        "whether the key claims carry citations",
        "whether the sources are credible and cited consistently",
        "citation density relative to the length of the sections",
        "how older foundational work and recent work are balanced",
    ), (
        (60, "citations are sparse or inconsistent"),
        (55, "the citation count is far below the venue average while the problem is broad"),
        (65, "the citation count is high but the citations are poorly integrated"),
    )),
)

#: Axis key -> weight (sums to 1).
AXIS_WEIGHTS: dict[str, float] = {axis.key: axis.weight for axis in AXES}

#: Score anchors (inclusive ranges) the judge must use; no others.
SCORE_ANCHORS: tuple[tuple[int, int, str], ...] = (
    (0, 20, "unacceptable"),
    (21, 40, "weak"),
    (41, 55, "adequate but flawed"),
    (56, 70, "solid"),
    (71, 85, "strong"),
    (86, 92, "excellent"),
    (93, 100, "exceptional (extremely rare)"),
)

#: Citation-count bands for the coverage axis, as (low, high) fractions of the venue average and a reading.
CITATION_COUNT_BANDS: tuple[tuple[float | None, float | None, str], ...] = (
    (None, 0.5, "usually narrow or incomplete: coverage at most 55 unless the field is very small"),
    (0.5, 0.8, "the minimum acceptable coverage"),
    (0.8, 1.2, "solid breadth when the citations are well integrated"),
    (1.2, None, "strong evidence of comprehensive coverage, provided relevance holds"),
)


@dataclass(frozen=True)
class Penalty:
    """One penalty the judge may apply after scoring the axes.

    Attributes:
        key: short name.
        description: when it applies.
        low: smallest deduction in points (> 0).
        high: largest deduction in points.
    """

    key: str
    description: str
    low: int
    high: int


#: The penalty table (applied after the axis scores; zero or more of them).
PENALTIES: tuple[Penalty, ...] = (
    Penalty("overclaiming_novelty", "novelty is overclaimed without a close comparison", 5, 15),
    Penalty("missing_recent_work", "key recent work is missing (where this can be seen)", 5, 15),
    Penalty("descriptive_review", "the review is mostly descriptive and synthesises little", 5, 10),
    Penalty("generic_gap", "the gap statements are weak or generic", 5, 10),
    Penalty("citation_dumping", "citations are dumped in bulk or used inconsistently", 5, 10),
)

#: Range (total points) of the optional, rare positive adjustment.
POSITIVE_ADJUSTMENT: tuple[int, int] = (3, 7)

#: Ratio of the citation count to the venue average above which the positive adjustment may apply.
ADJUSTMENT_MIN_CITATION_RATIO: float = 1.5
#: The critical-analysis and relevance scores must exceed these for the positive adjustment.
ADJUSTMENT_MIN_CRITICAL: int = 60
ADJUSTMENT_MIN_RELEVANCE: int = 65

#: Every condition of the positive adjustment (all must hold).
ADJUSTMENT_CONDITIONS: tuple[str, ...] = (
    "the citation count is well above the venue average (more than 150% of it)",
    "the citations are relevant and spread over the subtopics",
    "the review stays synthesised and focused",
    (f"the critical-analysis score is above {ADJUSTMENT_MIN_CRITICAL} and the relevance score above "
    f"{ADJUSTMENT_MIN_RELEVANCE}"),
)

#: The anti-inflation rules (mandatory for the judge).
ANTI_INFLATION_RULES: tuple[str, ...] = (
    "expect an overall score between 45 and 70 by default",
    "an overall score above 85 needs strong evidence on every axis",
    "an overall score above 90 is extremely rare and needs mastery close to that of a survey",
    "when any axis is below 50, the overall score should rarely be above 75",
    "a review that mainly summarises one paper after another gets at most 60 for critical analysis",
    "novelty claimed with no explicit contrast against the nearest prior work gets at most 60 for positioning",
    "citations that are sparse or inconsistent limit citation rigour to at most 60",
    "many citations are not quality in themselves; only relevance and synthesis can justify a high count",
)

#: Default overall range, axis score thresholds used by the anti-inflation checks.
DEFAULT_OVERALL_RANGE: tuple[int, int] = (45, 70)
WEAK_AXIS_BELOW: int = 50
WEAK_AXIS_OVERALL_LIMIT: int = 75
STRONG_OVERALL_ABOVE: int = 85
STRONG_AXIS_MIN: int = 71  # the "strong" anchor
EXCEPTIONAL_OVERALL_ABOVE: int = 90
EXCEPTIONAL_AXIS_MIN: int = 86  # the "excellent" anchor

#: Constraints on every justification.
JUSTIFICATION_RULES: tuple[str, ...] = (
    "two to five sentences, based on evidence in the text",
    "quote no more than 25 words of the paper in total",
    'when there is no evidence, say exactly: "Not evidenced in the text."',
)

#: Average citation count of accepted papers per venue (PaperOrchestra §5).
VENUE_AVERAGE_CITATIONS: dict[str, float] = {"CVPR 2025": 58.52, "ICLR 2025": 59.18}
#: The default of the official autorater code when no venue is given.
DEFAULT_AVERAGE_CITATIONS: float = 58.0

#: Allowed values of the categorical citation-statistics fields.
DENSITY_VALUES: tuple[str, ...] = ("low", "appropriate", "high")
BREADTH_VALUES: tuple[str, ...] = ("narrow", "moderate", "broad")

#: Side-by-side winners and the JSON keys of each side-by-side autorater.
WINNERS: tuple[str, ...] = ("paper_1", "paper_2", "tie")

#: Criteria of the side-by-side paper-quality comparison (name, questions).
SXS_PAPER_CRITERIA: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Scientific depth and soundness", (
        ("Which paper justifies its technique more rigorously, with firmer theory and a more complete "
        "experimental set-up?"),)),
    ("Technical execution", (
        ("Staying within the described idea, which paper implements the method more effectively or "
        "more inventively?"),)),
    ("Organisation and logical flow", (
        "Which paper orders its ideas more clearly and coherently, from the abstract to the conclusion?",
        "Do sections and paragraphs follow a logical order and connect smoothly?")),
    ("Clarity and precision of writing", (
        "In which paper are the ideas put across with more clarity and economy?",
        "Does the text avoid needless wordiness, ambiguity and repetition?")),
    ("Presentation of evidence", (
        "Which paper weaves figures, tables and experimental results into the narrative more effectively?",
        "Does the text point to each visual and explain it?")),
    ("Professional academic style", (
        "Whose tone is more polished and professional?",
        "Is the domain vocabulary exact and used the same way from start to end?")),
)

#: Criteria of the side-by-side literature-review comparison (introduction + related work only).
SXS_LITREVIEW_CRITERIA: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Problem framing and motivation", (
        "Which paper states the problem it tackles with more clarity?",
        "Does its introduction argue why the problem is important and which gap earlier work leaves open?")),
    ("Coverage of prior work", (
        "Which paper gives the more complete and more relevant overview of earlier research?",)),
    ("Organisation and synthesis", (
        "Which paper structures its related work better, e.g. grouped by theme or approach?",
        "Does it bring earlier work together into a synthesis, or just enumerate papers?")),
    ("Positioning of the contribution", (
        "Which paper sets its own approach apart from existing methods more clearly?",)),
    ("Writing quality and readability", (
        "Which of the two reviews is easier to read: clearer, tighter and simpler to follow?",)),
)

"""Rubric and template text of the judge prompt, kept as data (SurveyReview App. A.1 and App. C).

Every fact of the paper's protocol is carried over - the four dimensions and their definitions, the
score scale {-2, -1, +1, +2} (strongly negative, negative, positive, strongly positive, no 0), the part
order of the unified template and the knowledge-augmentation (KA) blocks of App. F - but the wording is
our own. The paper does not print its per-score criteria; the criteria below spell out the App. A.1
definitions at four levels.

Changing any string here changes :attr:`surveyalign.prompts.JudgePrompt.template_hash`, so evaluation caches
keyed on the hash never reuse answers to an older prompt. Bump :data:`TEMPLATE_VERSION` when the
structure changes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

__all__ = [
    "RUBRICS",
    "SCORE_LABELS",
    "SEPARATOR",
    "TEMPLATE_VERSION",
    "DimensionRubric",
]

#: Version tag of the template skeleton (part order and headings); part of every prompt hash.
TEMPLATE_VERSION = "surveyalign-judge-1"

#: Line that opens the per-paper block (KA content + survey) and closes it after the survey (App. C).
SEPARATOR = "-" * 32

#: Names of the four benchmark scores, in the order the criteria are listed (SurveyReview App. A).
SCORE_LABELS: Mapping[int, str] = MappingProxyType(
    {-2: "strongly negative", -1: "negative", 1: "positive", 2: "strongly positive"}
)

# Skeleton pieces, in template order. ``{label}`` is the dimension's display name.
ROLE = (
    "You are an experienced peer reviewer of survey articles. Assess the survey given at the end of "
    "this message with respect to a single aspect only: {label}. Ignore every other quality of the work."
)
#: The role of the ``shared`` layout (survey first): the survey is above the instructions, not at the end.
SHARED_ROLE = (
    "You are an experienced peer reviewer of survey articles. Assess the survey given above, between the survey "
    "heading and the separator line, with respect to a single aspect only: {label}. Ignore every other quality "
    "of the work."
)
DEFINITION_HEADING = "## What {label} means"
CRITERIA_HEADING = "## How to score {label}"
REQUIREMENTS = (
    "## What to return\n"
    "Give exactly two things:\n"
    "1. A concise rationale, grounded in the survey, that explains your judgement.\n"
    "2. One score taken from {-2, -1, 1, 2}. There is no neutral 0: decide whether the survey leans "
    "negative or positive on this aspect."
)
FORMAT_HEADING = "## Answer format"
SURVEY_HEADING = "Survey under review:"
TITLE_LINE = "Title: {title}"


@dataclass(frozen=True)
class DimensionRubric:
    """The dimension-specific text of the judge prompt (SurveyReview App. A.1, App. C, App. F).

    Attributes:
        name: canonical lower-case dimension name, one of ``surveyalign.constants.DIMENSIONS``.
        label: display name used inside the prompt, e.g. "Comprehensiveness".
        definition: what the dimension covers (App. A.1, our words).
        criteria: score -> description for each of -2, -1, 1, 2 (exactly these four keys).
        ka_description: paragraph placed after the role when knowledge augmentation is given; explains
            what the KA block holds (Comp-KA: expanded reference neighbourhood with title, year and
            citation count; Crit-KA: year-stamped summaries of influential and recent related work).
        ka_heading: line that introduces the KA content right after the separator.
    """

    name: str
    label: str
    definition: str
    criteria: Mapping[int, str]
    ka_description: str
    ka_heading: str

    def __post_init__(self) -> None:
        if tuple(sorted(self.criteria)) != (-2, -1, 1, 2):
            raise ValueError(f"rubric {self.name!r} needs criteria for exactly -2, -1, 1, 2; got {sorted(self.criteria)}")
        object.__setattr__(self, "criteria", MappingProxyType(dict(self.criteria)))


_GENERIC_KA_DESCRIPTION = (
    "Before the survey text you will find a block of supplementary context about related literature. "
    "Treat it as background only; your judgement still concerns {label} of the survey itself."
)
_GENERIC_KA_HEADING = "Supplementary context:"

_READABILITY = DimensionRubric(
    name="readability",
    label="Readability",
    definition=(
        "Readability is about how clearly the survey is written and presented: whether the prose is "
        "understandable, concepts are explained well enough, and a reader can follow the text without "
        "effort, as opposed to passages that are confusing or hard to get through. Typical cues: "
        "writing quality, presentation, easy or hard to follow."
    ),
    criteria={
        -2: "The text is hard to follow almost throughout: explanations are unclear or missing, and "
        "language or presentation problems keep the reader from understanding large parts of the survey.",
        -1: "The survey can be understood, but clarity suffers in noticeable places: some passages are "
        "muddled, terms or figures are not explained, or the presentation needs a careful revision.",
        1: "The survey reads clearly on the whole: ideas are explained adequately and only minor wording "
        "or presentation issues remain.",
        2: "The survey is exceptionally clear and pleasant to read: concepts are explained with care and "
        "the presentation actively helps the reader from start to finish.",
    },
    ka_description=_GENERIC_KA_DESCRIPTION,
    ka_heading=_GENERIC_KA_HEADING,
)

_STRUCTURE = DimensionRubric(
    name="structure",
    label="Structure",
    definition=(
        "Structure is about how the survey is organised: whether sections and subsections are arranged "
        "in a logical, coherent order, whether the ideas are grouped sensibly, and whether the move from "
        "one part to the next is smooth and well motivated."
    ),
    criteria={
        -2: "The organisation is confused: sections are badly ordered, overlap or are missing, there is "
        "no discernible logic to the layout, and transitions are abrupt throughout.",
        -1: "A reasonable outline exists, but it has clear flaws: some sections are misplaced, repetitive "
        "or unbalanced, the grouping is partly inconsistent, or transitions are weak.",
        1: "The survey is organised logically: sections follow a sensible order and mostly connect "
        "smoothly, with only minor structural issues.",
        2: "The organisation is excellent: a coherent framework guides the reader, every part has a clear "
        "place, and transitions between parts are seamless.",
    },
    ka_description=_GENERIC_KA_DESCRIPTION,
    ka_heading=_GENERIC_KA_HEADING,
)

_COMPREHENSIVENESS = DimensionRubric(
    name="comprehensiveness",
    label="Comprehensiveness",
    definition=(
        "Comprehensiveness is about whether the literature the survey cites is complete and relevant: "
        "whether the key works of the field are included, whether important work is left out, and "
        "whether some references are outdated or beside the point."
    ),
    criteria={
        -2: "Coverage is seriously deficient: many key or foundational works are absent, whole lines of "
        "work are ignored, or the reference list is dominated by outdated or irrelevant sources.",
        -1: "The main literature is covered but with notable gaps: some important or recent works are "
        "missing, or a number of references are outdated or of little relevance.",
        1: "Coverage is good: the key works are cited and the references are mostly relevant and "
        "current, with only minor omissions.",
        2: "Coverage is thorough and up to date: key and recent works are all present, references are "
        "well chosen, and no notable omission can be found.",
    },
    ka_description=(
        "To support your check of literature coverage, the survey text is preceded by a reference "
        "context: the survey's own bibliography together with an expanded set of papers connected to it "
        "by citation links, each given as title, year of publication and number of citations. Compare what "
        "the survey cites against this neighbourhood to find missing key works or outdated sources."
    ),
    ka_heading="Reference context (survey bibliography and expanded citation neighbourhood):",
)

_CRITICALNESS = DimensionRubric(
    name="criticalness",
    label="Criticalness",
    definition=(
        "Criticalness is about how original and deep the survey is: whether it goes beyond "
        "summarising prior work by offering new insight, a critical perspective on the literature, or a "
        "meaningful synthesis. Typical cues: insight, novel perspective, depth."
    ),
    criteria={
        -2: "The survey merely lists or summarises prior work: there is no analysis, comparison or "
        "perspective of its own and no insight.",
        -1: "Some analysis or comparison is present but it stays shallow: strengths, weaknesses, open "
        "problems or future directions are treated superficially.",
        1: "The survey offers meaningful analysis: it compares approaches, discusses limitations and open "
        "challenges, and synthesises the literature beyond a plain summary.",
        2: "The survey shows deep, original critical insight: a new perspective or framework, well-argued "
        "assessments and forward-looking directions that advance the reader's understanding of the field.",
    },
    ka_description=(
        "To support your check of analytical depth, the survey text is preceded by a related-work "
        "context: condensed summaries of influential (highly cited) and recent papers related to the "
        "survey, in chronological order, each tagged with the interval of publication years it covers. "
        "Use it to judge whether the survey adds insight and synthesis beyond what this literature says."
    ),
    ka_heading="Related-work context (summaries of influential and recent work, by year interval):",
)

#: Rubric of each dimension, keyed by canonical name (order of ``surveyalign.constants.DIMENSIONS``).
RUBRICS: Mapping[str, DimensionRubric] = MappingProxyType(
    {r.name: r for r in (_READABILITY, _STRUCTURE, _COMPREHENSIVENESS, _CRITICALNESS)}
)

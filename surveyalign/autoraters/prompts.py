"""Own-words prompts of the four PaperOrchestra autoraters (PaperOrchestra App. F.3), rendered from the rubric data.

Every rubric fact of the published prompts is carried over (P0/P1 criteria; the six axes with their weights,
anchors, caps, penalties, the +3..+7 adjustment and output keys; the side-by-side criteria and JSON keys); the
wording is ours. Each builder returns chat messages: a system message with the instructions and a user message
with the inputs. :data:`PROMPT_VERSION` names this wording and is part of every output and cache key.
"""

from __future__ import annotations

import json

from surveyalign.autoraters.rubric import (
    ADJUSTMENT_CONDITIONS,
    ANTI_INFLATION_RULES,
    AXES,
    BREADTH_VALUES,
    CITATION_COUNT_BANDS,
    DENSITY_VALUES,
    JUSTIFICATION_RULES,
    P0_CRITERIA,
    P1_CRITERIA,
    PENALTIES,
    POSITIVE_ADJUSTMENT,
    SCORE_ANCHORS,
    SXS_LITREVIEW_CRITERIA,
    SXS_PAPER_CRITERIA,
    WINNERS,
)
from surveyalign.documents.untrusted import neutralise_text

#: Name of this prompt wording; recorded in every output and part of every cache key.
PROMPT_VERSION = "paperorchestra-f3/own-words-v1"

#: JSON keys of the side-by-side answers, per autorater kind.
SXS_KEYS: dict[str, tuple[str, str, str, str]] = {
    "paper": ("paper_1_holistic_analysis", "paper_2_holistic_analysis", "comparison_justification", "winner"),
    "litreview": ("paper_1_analysis", "paper_2_analysis", "comparison_justification", "winner"),
}

Messages = list[dict[str, str]]


def _bullets(items, indent: str = "- ") -> str:
    return "\n".join(f"{indent}{item}" for item in items)


PARTITION_SYSTEM = f"""\
You are an experienced academic reviewer. You will read a paper and its numbered reference list, and sort \
every listed reference into one of two priority classes.

P0 (must cite): references the paper strictly cannot do without. A reference is P0 whenever it is
{_bullets(P0_CRITERIA)}

P1 (good to have): supplementary references, for example
{_bullets(P1_CRITERIA)}

Answer with one JSON object and nothing else. Its keys are the reference numbers exactly as they appear in \
the list, written as strings ("1", "2", ...); each value is either "P0" or "P1". Give every listed number \
exactly once. Example: {{"1": "P0", "2": "P1", "3": "P0"}}"""


def build_partition_messages(paper_text: str, references: str) -> Messages:
    """Chat messages asking a judge to split a paper's references into P0 and P1 (PaperOrchestra App. F.3).

    Args:
        paper_text: the full paper (markdown or LaTeX).
        references: the numbered reference list, one ``"N. text"`` line per reference.

    Returns:
        ``[system, user]`` messages; the answer is a JSON object ``{"1": "P0", "2": "P1", ...}``.
    """
    user = f"Paper text:\n{neutralise_text(paper_text)}\n\nNumbered reference list:\n{neutralise_text(references)}"
    return [{"role": "system", "content": PARTITION_SYSTEM}, {"role": "user", "content": user}]


def _band(low: float | None, high: float | None) -> str:
    if low is None:
        return f"below {_pct(high)} of the average"
    if high is None:
        return f"above {_pct(low)} of the average"
    return f"{_pct(low)} to {_pct(high)} of the average"


def _pct(fraction: float) -> str:
    return f"{round(fraction * 100)}%"


def _axis_block(index: int, axis) -> str:
    lines = [f"Axis {index} - {axis.name} (key \"{axis.key}\", weight {round(axis.weight * 100)}%). Look at:"]
    lines += [f"  - {c}" for c in axis.criteria]
    if axis.key == "coverage_and_completeness":
        lines.append("  Reading the citation count against the venue average:")
        lines += [f"  - {_band(lo, hi)}: {reading}" for lo, hi, reading in CITATION_COUNT_BANDS]
    for limit, condition in axis.caps:
        lines.append(f"  Hard cap: at most {limit} when {condition}.")
    return "\n".join(lines)


def _litreview_schema() -> str:
    axes = ", ".join(f'"{a.key}": {{"score": <0-100>, "justification": "<text>"}}' for a in AXES)
    return (
        '{"paper_title": "<title or null>", '
        '"citation_statistics": {"estimated_unique_citations": <number>, '
        f'"citation_density_assessment": {" | ".join(json.dumps(v) for v in DENSITY_VALUES)}, '
        f'"breadth_across_subareas": {" | ".join(json.dumps(v) for v in BREADTH_VALUES)}, '
        '"comparison_to_baseline": "<text>", "notes": "<text>"}, '
        f'"axis_scores": {{{axes}}}, '
        '"penalties": [{"reason": "<text>", "points_deducted": <number>}], '
        '"summary": {"strengths": ["<text>"], "weaknesses": ["<text>"], "top_improvements": ["<text>"]}, '
        '"overall_score": <number>}'
    )


def litreview_system(avg_citation_count: float) -> str:
    """The system prompt of the literature-review quality autorater for one venue average.

    Args:
        avg_citation_count: average number of citations of accepted papers at the venue / in the field
            (e.g. 58.52 for CVPR 2025, 59.18 for ICLR 2025; 58 by default), > 0.

    Returns:
        The instructions, with every rubric fact of PaperOrchestra App. F.3.
    """
    avg = f"{avg_citation_count:g}"
    anchors = _bullets(f"{lo}-{hi}: {name}" for lo, hi, name in SCORE_ANCHORS)
    axes = "\n\n".join(_axis_block(i, axis) for i, axis in enumerate(AXES, start=1))
    penalties = _bullets(f"{p.description}: minus {p.low} to {p.high} points" for p in PENALTIES)
    weights = ", ".join(f"{a.name} {round(a.weight * 100)}%" for a in AXES)
    lo, hi = POSITIVE_ADJUSTMENT
    return f"""\
You are a sceptical, expert academic reviewer. Judge how good the literature review of the draft paper \
below is. Score conservatively: high scores are rare and each one must be backed by specific evidence in \
the draft; take it as given that most drafts are not yet fit for publication.

Baseline. Accepted papers in this venue or field cite {avg} works on average (the venue average). Treat \
this number as the usual volume of coverage.

Scope. Judge only how the Introduction and the Related Work / Background / Literature Review sections (or \
their closest equivalents) serve as a literature review. Leave methods, experiments and results aside, \
except to check whether the review correctly frames what the paper covers and claims.

Procedure (follow it in order):
1. Find the title of the paper.
2. Find the Introduction and the Related Work sections, or the closest equivalents.
3. Determine the research problem the paper states, the contributions it claims and the subfields it touches.
4. Estimate from the review: about how many distinct works are cited, how dense the citations are for the \
length of the sections, how widely they spread over the relevant sub-areas, and how the count compares with \
the venue average ({avg}).
5. Score each axis on what is written explicitly; do not guess what the authors meant and give no credit \
for knowledge that is expected but absent.
6. Apply the anti-inflation rules and the penalties.
7. Answer in the JSON format below and nothing else: no text before or after it, every field filled, null \
only where the information is truly unavailable.

Anti-inflation rules (mandatory):
{_bullets(ANTI_INFLATION_RULES)}

Score anchors (use only these):
{anchors}

Axes, each scored 0-100:

{axes}

Penalties, applied after the axis scores (none, one or several):
{penalties}

A small bonus, rarely given: {lo} to {hi} points in total may be added, only when every one of these \
conditions holds; otherwise add nothing:
{_bullets(ADJUSTMENT_CONDITIONS)}

Overall score: start from the weighted combination of the axes ({weights}), then subtract the penalties and \
add the positive adjustment if it is justified; finally check the result against the anti-inflation rules.

Justifications:
{_bullets(JUSTIFICATION_RULES)}

Answer with exactly this JSON structure:
{_litreview_schema()}"""


def build_litreview_messages(paper_text: str, avg_citation_count: float) -> Messages:
    """Chat messages of the literature-review quality autorater (PaperOrchestra App. F.3).

    Args:
        paper_text: the paper (markdown or LaTeX; the judge reads its Introduction and Related Work).
        avg_citation_count: the venue's average citation count, > 0.

    Returns:
        ``[system, user]`` messages.

    Raises:
        ValueError: ``avg_citation_count`` is not a positive number.
    """
    if not isinstance(avg_citation_count, (int, float)) or not avg_citation_count > 0:
        raise ValueError(f"avg_citation_count must be a positive number, got {avg_citation_count!r}")
    user = f"Venue average citation count: {avg_citation_count:g}\n\nPaper:\n{neutralise_text(paper_text)}"
    return [{"role": "system", "content": litreview_system(avg_citation_count)}, {"role": "user", "content": user}]


def _criteria_block(criteria) -> str:
    blocks = []
    for i, (name, questions) in enumerate(criteria, start=1):
        blocks.append(f"{i}. {name}\n" + "\n".join(f"   - {q}" for q in questions))
    return "\n".join(blocks)


def _sxs_answer(kind: str, what: str) -> str:
    first, second, justification, winner = SXS_KEYS[kind]
    schema = json.dumps({first: f"assessment of paper_1: {what}", second: f"assessment of paper_2: {what}",
                         justification: "why one is better, or why they are even", winner: "paper_1, paper_2 or tie"})
    return (f"Answer with one valid JSON object of this shape:\n{schema}\n"
            f'Set "{winner}" to one of {", ".join(json.dumps(w) for w in WINNERS)}.')


SXS_PAPER_SYSTEM = f"""\
Act as a seasoned machine-learning researcher and reviewer for leading venues such as CVPR, NeurIPS and \
ICLR. Compare two academic papers side by side and reach one holistic judgement. Both papers describe the \
same or a very similar research idea; weigh scientific execution together with the quality of writing and \
presentation.

Which paper comes first is arbitrary and says nothing about quality. Assess each paper on its own before \
you compare them, and do not let length or wordiness decide.

Criteria:
{_criteria_block(SXS_PAPER_CRITERIA)}

{_sxs_answer("paper", "its scientific execution, writing and presentation")}"""

SXS_LITREVIEW_SYSTEM = f"""\
Act as a seasoned machine-learning researcher and reviewer for leading venues such as CVPR, NeurIPS and \
ICLR. Compare the literature reviews of two academic papers side by side: their Introduction and Related \
Work sections only.

Which paper comes first is arbitrary and says nothing about quality. Assess each paper on its own before \
you compare them, and do not let length or wordiness decide.

Criteria:
{_criteria_block(SXS_LITREVIEW_CRITERIA)}

{_sxs_answer("litreview", "its introduction and related work")}"""

#: System prompt per side-by-side kind.
SXS_SYSTEMS: dict[str, str] = {"paper": SXS_PAPER_SYSTEM, "litreview": SXS_LITREVIEW_SYSTEM}


def build_sxs_messages(kind: str, paper_1: str, paper_2: str) -> Messages:
    """Chat messages of one side-by-side call (PaperOrchestra App. F.3).

    Args:
        kind: ``"paper"`` (whole papers) or ``"litreview"`` (introduction + related work only).
        paper_1: text shown first.
        paper_2: text shown second.

    Returns:
        ``[system, user]`` messages.

    Raises:
        ValueError: unknown ``kind``.
    """
    if kind not in SXS_SYSTEMS:
        raise ValueError(f"unknown side-by-side kind {kind!r}; expected one of {sorted(SXS_SYSTEMS)}")
    user = f"paper_1:\n{neutralise_text(paper_1)}\n\n=====\n\npaper_2:\n{neutralise_text(paper_2)}"
    return [{"role": "system", "content": SXS_SYSTEMS[kind]}, {"role": "user", "content": user}]

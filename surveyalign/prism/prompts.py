"""Extraction prompts of the PRISM pipelines, written as data (rubrics, label sets, output keys).

Every prompt asks for one JSON object with named keys and nothing else; :mod:`surveyalign.prism.parsing`
reads it strictly. The system message starts with ``[prism:<stage>]`` so logs and test judges can tell the
steps apart. The grounding rubric is selectable: ``"seed"`` (PRISM paper §3.1: 0 vague, 1 points at the
manuscript, 2 points at outside literature; the default) or ``"specificity"`` (the official code's
variant: how specific and checkable the premise is).
"""

from __future__ import annotations

from collections.abc import Sequence

from surveyalign.documents.untrusted import neutralise_text
from surveyalign.prism.units import (
    ASPECTS,
    COMMENT_TYPES,
    CONSTRUCTIVENESS_AXES,
    STANCES,
    VERDICT_SCORES,
)

__all__ = ["GROUNDING_RUBRICS", "STAGES", "build_messages", "stage_of"]

#: Extraction steps, in pipeline order.
STAGES: tuple[str, ...] = ("adu", "novelty_claims", "novelty_pair", "flaws", "flaw_merge", "flaw_validation",
                           "comments")

#: Grounding rubrics by name: level -> what that level means.
GROUNDING_RUBRICS: dict[str, dict[int, str]] = {
    "seed": {
        0: "vague or generic: no concrete pointer the authors could check",
        1: "internal: points at something specific in the manuscript (a section, table, figure, equation, "
           "number or passage)",
        2: "external: backs the point with outside scientific literature, a named prior method or a known result",
    },
    "specificity": {
        0: "unspecific: a general impression that could be said of many papers",
        1: "partly specific: names the part of the paper concerned but not the exact evidence",
        2: "fully specific: names the exact evidence (values, settings, lines, references) so it can be verified",
    },
}

_JSON_ONLY = ("Answer with one JSON object and nothing else: no prose before or after it, no markdown fence. "
              "Use exactly the keys asked for.")


def _system(stage: str, body: str) -> dict[str, str]:
    return {"role": "system", "content": f"[prism:{stage}] {body} {_JSON_ONLY}"}


def _rubric_lines(rubric: str) -> str:
    if rubric not in GROUNDING_RUBRICS:
        raise ValueError(f"unknown grounding rubric {rubric!r}; choose one of {sorted(GROUNDING_RUBRICS)}")
    return "\n".join(f"  {level} = {meaning}" for level, meaning in GROUNDING_RUBRICS[rubric].items())


def _adu(review: str, rubric: str) -> list[dict[str, str]]:
    system = _system("adu", (
        "You analyse the argument structure of a peer review. Cut the review into argumentative units: "
        "each is one self-contained point, either a claim (a judgement or conclusion the reviewer puts "
        "forward) or a premise (evidence or reasoning offered in support of a claim). Give every unit an "
        f"aspect from {list(ASPECTS)} (use \"other\" when none fits). Grade every premise's grounding on "
        f"this scale:\n{_rubric_lines(rubric)}\nClaims get grounding null."))
    user = (f"Review:\n\"\"\"\n{review}\n\"\"\"\n\n"
            'Return {"units": [{"text": str, "role": "claim" | "premise", "aspect": str, '
            '"grounding": 0 | 1 | 2 | null}, ...]} covering the review in order.')
    return [system, {"role": "user", "content": user}]


def _novelty_claims(review: str, title: str) -> list[dict[str, str]]:
    system = _system("novelty_claims", (
        "You find what a peer review says about the originality of the paper it reviews. List each statement "
        "judging novelty (new idea, incremental, already known, similar to earlier work ...) and the stance it "
        f"takes, one of {list(STANCES)}. A review that says nothing about novelty has an empty list."))
    user = (f"Paper title: {title}\n\nReview:\n\"\"\"\n{review}\n\"\"\"\n\n"
            'Return {"claims": [{"text": str, "stance": str}, ...]}.')
    return [system, {"role": "user", "content": user}]


def _novelty_pair(claim: str, stance: str, paper_title: str, prior_title: str, prior_abstract: str,
                  prior_year: int | None) -> list[dict[str, str]]:
    verdicts = ", ".join(f"{name} ({score:+d})" for name, score in VERDICT_SCORES.items())
    system = _system("novelty_pair", (
        "You check a reviewer's novelty judgement against one earlier paper. Decide whether that earlier work "
        "supports the reviewer's judgement: supported (the prior work agrees with the judgement), overstated "
        "(the judgement claims more novelty or less overlap than the prior work allows), ambiguous (the prior "
        "work does not settle it), understated (the paper is more novel than the reviewer says), unsupported "
        f"(the prior work contradicts the judgement). Verdicts and their scores: {verdicts}."))
    user = (f"Reviewed paper: {paper_title}\nReviewer's judgement ({stance}): {claim}\n\n"
            f"Earlier paper ({prior_year or 'year unknown'}): {prior_title}\nAbstract: {prior_abstract or '(none)'}\n\n"
            'Return {"verdict": str, "reason": str}.')
    return [system, {"role": "user", "content": user}]


def _flaws(review: str) -> list[dict[str, str]]:
    system = _system("flaws", (
        "You list the flaws a peer review points out in the paper: each atomic problem once, in the reviewer's "
        "order, with a short verbatim quote from the review where it is raised and the review section holding "
        "it (summary, strengths, weaknesses or questions). Praise and neutral remarks are not flaws."))
    user = (f"Review:\n\"\"\"\n{review}\n\"\"\"\n\n"
            'Return {"flaws": [{"text": str, "quote": str, "section": str}, ...]}.')
    return [system, {"role": "user", "content": user}]


def _flaw_merge(flaws: Sequence[str]) -> list[dict[str, str]]:
    system = _system("flaw_merge", (
        "Several reviewers listed flaws of the same paper. Group the entries that describe the same underlying "
        "problem. Every entry number appears in exactly one group; an entry nobody else raised is a group of one."))
    listing = "\n".join(f"{i}. {text}" for i, text in enumerate(flaws))
    user = f"Entries:\n{listing}\n\nReturn {{\"groups\": [[int, ...], ...]}}."
    return [system, {"role": "user", "content": user}]


def _flaw_validation(flaw: str, paper: str) -> list[dict[str, str]]:
    system = _system("flaw_validation", (
        "You check one criticism of a paper against the paper itself. Decide whether it is valid (the paper "
        "really has this problem) and how severe it is: critical (undermines the main claims or results), "
        "minor (a real but limited problem: presentation, a missing detail, a small extra experiment) or none "
        "(not a problem)."))
    user = (f"Paper:\n\"\"\"\n{paper}\n\"\"\"\n\nCriticism: {flaw}\n\n"
            'Return {"valid": true | false, "severity": "critical" | "minor" | "none", "reason": str}.')
    return [system, {"role": "user", "content": user}]


#: What each constructiveness axis asks, with its 0 / 1 / 2 anchors.
_AXIS_GUIDE: dict[str, str] = {
    "actionability": "does it tell the authors what to do (0 no, 1 vaguely, 2 clearly)",
    "specificity": "does it point at a precise part of the paper (0 no, 1 partly, 2 exactly)",
    "justification": "is it argued (0 bare assertion, 1 some reasoning, 2 well argued with evidence)",
    "solution": "does it offer a way to fix it (0 none, 1 a hint, 2 a concrete fix)",
    "tone": "is it professional and respectful (0 dismissive, 1 neutral, 2 constructive)",
}


def _comments(review: str) -> list[dict[str, str]]:
    scale = "\n".join(f"  {k}: {_AXIS_GUIDE[k]}" for k in CONSTRUCTIVENESS_AXES)
    system = _system("comments", (
        "You split a peer review into atomic comments and rate how constructive each is. Each comment has a "
        f"type from {list(COMMENT_TYPES)} and five scores in {{0, 1, 2}}:\n{scale}"))
    keys = ", ".join(f'"{k}": int' for k in CONSTRUCTIVENESS_AXES)
    user = (f"Review:\n\"\"\"\n{review}\n\"\"\"\n\n"
            f'Return {{"comments": [{{"text": str, "type": str, {keys}}}, ...]}}.')
    return [system, {"role": "user", "content": user}]


_BUILDERS = {"adu": _adu, "novelty_claims": _novelty_claims, "novelty_pair": _novelty_pair, "flaws": _flaws,
             "flaw_merge": _flaw_merge, "flaw_validation": _flaw_validation, "comments": _comments}


def build_messages(stage: str, **fields) -> list[dict[str, str]]:
    """Chat messages of one extraction call.

    Args:
        stage: one of :data:`STAGES`.
        **fields: the step's inputs: ``adu(review, rubric)``, ``novelty_claims(review, title)``,
            ``novelty_pair(claim, stance, paper_title, prior_title, prior_abstract, prior_year)``,
            ``flaws(review)``, ``flaw_merge(flaws)``, ``flaw_validation(flaw, paper)``, ``comments(review)``.

    Returns:
        A system and a user message. Every text input (the review, titles, abstracts, the paper, flaws) has its
        answer-format tokens neutralised (:func:`surveyalign.documents.untrusted.neutralise`): a review cannot
        plant the JSON answer.

    Raises:
        ValueError: unknown stage or grounding rubric.
    """
    if stage not in _BUILDERS:
        raise ValueError(f"unknown PRISM stage {stage!r}; choose one of {list(STAGES)}")
    clean = {k: (neutralise_text(v) if isinstance(v, str) and k != "rubric"
                 else [neutralise_text(x) if isinstance(x, str) else x for x in v] if isinstance(v, list) else v)
             for k, v in fields.items()}
    return _BUILDERS[stage](**clean)


def stage_of(messages: Sequence[dict[str, str]]) -> str | None:
    """The stage named in a prompt's system message (``[prism:<stage>]``), or None."""
    content = messages[0].get("content", "") if messages else ""
    if content.startswith("[prism:"):
        return content[len("[prism:"):content.index("]")]
    return None


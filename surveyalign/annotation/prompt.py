"""The pre-annotation prompt and the reader of its answer (SurveyReview §4.3, App. A, A.1; our own wording).

One call per (survey, review) asks for all four dimensions at once: a label in the initial space
{-3, -2, -1, 0, +1, +2} and, for every non-zero label, the review sentences that support it, copied exactly.
The answer is one JSON object::

    {"readability": {"label": -1, "snippets": ["..."]}, "structure": {...},
     "comprehensiveness": {...}, "criticalness": {...}}

:func:`read_annotation` reads it with the project's one JSON-answer reader (``surveyalign.prompts``) and
returns, per dimension, the label and snippets or the reason it could not be read; it never guesses a label.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from surveyalign.constants import DIMENSIONS
from surveyalign.documents.untrusted import neutralise_text
from surveyalign.prompts import read_json_answer

from .records import LABELS, parse_label

#: Name of this prompt version (part of every cache key and of the release provenance).
PROMPT_VERSION = "annotate-v1"

#: What each dimension covers, in our words (facts of App. A.1).
DEFINITIONS: dict[str, str] = {
    "readability": "how clearly the manuscript is written and presented: is the prose understandable, are ideas "
                   "explained, can a reader follow it without effort or does the reader get lost.",
    "structure": "how the manuscript is organised: whether sections and subsections are arranged in a sensible "
                 "order, hang together, and lead from one part to the next without abrupt jumps.",
    "comprehensiveness": "the coverage and fitness of the cited literature: are the important works present, is "
                         "relevant prior work left out, are some references dated or off topic.",
    "criticalness": "the depth and originality of the analysis: does the survey offer its own insight, take a "
                    "critical stance, and connect prior work into a synthesis rather than listing summaries.",
}

_LABEL_MEANINGS = (
    "+2: the reviewer praises this aspect strongly, without reservation.\n"
    "+1: the reviewer is positive overall about this aspect, perhaps with minor remarks.\n"
    "-1: the reviewer points out problems with this aspect that need fixing.\n"
    "-2: the reviewer judges this aspect seriously deficient.\n"
    "0: the review says nothing about this aspect.\n"
    "-3: the review touches this aspect but its verdict cannot be told (mixed, unclear or contradictory)."
)

_RULES = (
    "Rules for the snippets:\n"
    "- Copy each snippet character for character from the review; never rephrase, shorten inside, or fix typos.\n"
    "- Choose the sentences that carry the reviewer's judgement on that aspect, and take enough of them that "
    "each snippet still makes sense when read alone.\n"
    "- When the reviewer makes several separate remarks about one aspect, give each remark as its own snippet.\n"
    "- Give at least one snippet for every label other than 0, and none for 0."
)


def build_annotation_messages(review: str, *, title: str = "") -> list[dict[str, str]]:
    """The chat messages of one pre-annotation call.

    Args:
        review: the review report (plain text).
        title: the reviewed survey's title ("" leaves the line out).

    Returns:
        One user message; the review and the title have their answer-format tokens neutralised
        (:func:`surveyalign.documents.untrusted.neutralise`).
    """
    aspects = "\n".join(f"- {dim}: {text}" for dim, text in DEFINITIONS.items())
    keys = ", ".join(f'"{d}"' for d in DIMENSIONS)
    content = (
        "You help build a data set of peer-review judgements on survey articles. Read the review report below "
        "and decide, for each of four aspects of the reviewed survey, what the reviewer thinks of it.\n\n"
        f"The aspects:\n{aspects}\n\n"
        f"Labels (pick exactly one per aspect):\n{_LABEL_MEANINGS}\n\n"
        f"{_RULES}\n\n"
        f"Answer with one JSON object and nothing else. Its keys are {keys}; each value is an object "
        '{"label": <one of 2, 1, -1, -2, 0, -3>, "snippets": [<strings copied from the review>]}.\n\n'
        + (f"Reviewed survey: {neutralise_text(title.strip())}\n\n" if title.strip() else "")
        + "=== Review report ===\n" + neutralise_text(review.strip()) + "\n=== End of review report ==="
    )
    return [{"role": "user", "content": content}]


@dataclass(frozen=True)
class DimensionAnswer:
    """One dimension of one answer.

    Attributes:
        label: the label (one of :data:`LABELS`), or None when it could not be read.
        snippets: the snippets as given (possibly empty).
        problem: why no label was read, or a note on a tolerated oddity (snippets given for label 0); "" if none.
    """

    label: int | None
    snippets: tuple[str, ...] = ()
    problem: str = ""


@dataclass(frozen=True)
class AnnotationAnswer:
    """One answer read per dimension.

    Attributes:
        dimensions: ``{dimension: DimensionAnswer}`` for the four dimensions (a missing one has label None).
        problems: answer-level problems (no JSON object, extra text, duplicate keys), one line each.
    """

    dimensions: dict[str, DimensionAnswer] = field(default_factory=dict)
    problems: tuple[str, ...] = ()


def read_annotation(text: str | None, *, untrusted: Sequence[str] | None = None) -> AnnotationAnswer:
    """Read a pre-annotation answer (see the module docstring for the shape).

    Dimension keys are matched case-insensitively. A label must be one of -3, -2, -1, 0, 1, 2 (``"+1"``,
    ``"1"``, ``1.0`` accepted); anything else (3, 0.5, "positive", missing) leaves that dimension without a
    label and names the reason. Snippets given with label 0 are dropped and noted.

    Args:
        text: the raw answer, or None.
        untrusted: the review (and title) the model read; a JSON object the answer quotes from them is never
            the one read.

    Returns:
        An :class:`AnnotationAnswer`; never raises.
    """
    answer = read_json_answer(text, untrusted=untrusted)
    if answer.data is None:
        reason = "; ".join(answer.problems) or "no JSON object"
        return AnnotationAnswer({d: DimensionAnswer(None, (), reason) for d in DIMENSIONS}, answer.problems)
    data = {str(k).strip().lower(): v for k, v in answer.data.items()}
    out: dict[str, DimensionAnswer] = {}
    for dim in DIMENSIONS:
        value = data.get(dim)
        if not isinstance(value, dict):
            out[dim] = DimensionAnswer(None, (), f"{dim}: missing or not an object")
            continue
        label = parse_label(value.get("label", value.get("score")))
        if label is None:
            out[dim] = DimensionAnswer(None, (), f"{dim}: label {value.get('label')!r} is not one of {list(LABELS)}")
            continue
        raw = value.get("snippets", value.get("rationales", []))
        if isinstance(raw, str):
            raw = [raw]
        if not isinstance(raw, list):
            out[dim] = DimensionAnswer(None, (), f"{dim}: snippets must be a list of strings")
            continue
        snippets = tuple(s for s in raw if isinstance(s, str) and s.strip())
        note = "" if len(snippets) == len(raw) else f"{dim}: {len(raw) - len(snippets)} empty or non-string snippet(s) left out"
        if label == 0 and snippets:
            snippets, note = (), f"{dim}: snippets given with label 0 were left out"
        out[dim] = DimensionAnswer(label, snippets, note)
    return AnnotationAnswer(out, answer.problems)

"""The extracted units PRISM scores, and the label sets they use (PRISM §3; formulas from its official code).

Each PRISM dimension turns a review into discrete units with an LLM and then computes its score
analytically from those units. The dataclasses below are those units; the pure functions of
:mod:`surveyalign.prism.depth`, :mod:`~surveyalign.prism.novelty`, :mod:`~surveyalign.prism.flaws` and
:mod:`~surveyalign.prism.constructiveness` take lists of them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

#: Argumentative roles of an ADU (depth of analysis).
ROLES: tuple[str, ...] = ("claim", "premise")
#: Aspects an ADU is about (the official code's label set; ``other`` is the fallback).
ASPECTS: tuple[str, ...] = ("soundness", "clarity", "contribution", "other")
#: Grounding levels of a premise, 0..2 (meaning depends on the grounding rubric, see ``prism.prompts``).
GROUNDING_LEVELS: tuple[int, ...] = (0, 1, 2)
#: Maximum grounding level g_max (S_depth is divided by it inside DoA).
GROUNDING_MAX = 2
#: Stances of a novelty claim.
STANCES: tuple[str, ...] = ("novel", "somewhat novel", "not novel")
#: Verdict of one (novelty claim, prior paper) pair -> score.
VERDICT_SCORES: dict[str, int] = {
    "supported": 2, "overstated": 1, "ambiguous": 0, "understated": -1, "unsupported": -2,
}
#: Severity labels of a validated flaw and their prioritisation weights (nCPS); other labels weigh 0.
SEVERITY_WEIGHTS: dict[str, float] = {"critical": 2.0, "minor": 1.0}
#: Kinds of atomic review comment (constructiveness).
COMMENT_TYPES: tuple[str, ...] = ("weakness", "strength", "question", "suggestion", "observation")
#: The five constructiveness axes, each scored in {0, 1, 2}.
CONSTRUCTIVENESS_AXES: tuple[str, ...] = ("actionability", "specificity", "justification", "solution", "tone")
#: Review sections PRISM reads, in presentation order.
REVIEW_SECTIONS: tuple[str, ...] = ("summary", "strengths", "weaknesses", "questions")


def _check_level(value: int | None, name: str, allowed: Iterable[int] = GROUNDING_LEVELS) -> None:
    allowed = tuple(allowed)
    if value is not None and (isinstance(value, bool) or value not in allowed):
        raise ValueError(f"{name} must be one of {allowed} or None, got {value!r}")


@dataclass(frozen=True)
class ADU:
    """One argumentative discourse unit of a review (PRISM §3.1, depth of analysis).

    Attributes:
        text: the unit's text.
        role: ``"claim"`` or ``"premise"``.
        aspect: one of :data:`ASPECTS`.
        grounding: grounding level g in {0, 1, 2} for a premise; ``None`` when not graded (claims, or a
            premise whose grading failed; such a premise counts in R_premise but not in S_depth).
        defaulted: True when the classification could not be parsed and claim/other was recorded instead.
    """

    text: str
    role: str = "claim"
    aspect: str = "other"
    grounding: int | None = None
    defaulted: bool = False

    def __post_init__(self) -> None:
        if self.role not in ROLES:
            raise ValueError(f"ADU role must be one of {ROLES}, got {self.role!r}")
        if self.aspect not in ASPECTS:
            raise ValueError(f"ADU aspect must be one of {ASPECTS}, got {self.aspect!r}")
        _check_level(self.grounding, "ADU grounding")


@dataclass(frozen=True)
class PairVerdict:
    """The judgement of one (novelty claim, retrieved prior paper) pair (PRISM novelty assessment).

    Attributes:
        score: +2 supported, +1 overstated, 0 ambiguous, -1 understated, -2 unsupported.
        relevance: how relevant the prior paper is to the claim, >= 0 (retrieval similarity), or ``None`` when
            the pair carries no relevance value ("no relevance" is not a relevance of 0: see
            :func:`surveyalign.prism.novelty.claim_score`).
        paper_id: the prior paper's identifier (for provenance).
    """

    score: int
    relevance: float | None = None
    paper_id: str | None = None

    def __post_init__(self) -> None:
        if isinstance(self.score, bool) or self.score not in (-2, -1, 0, 1, 2):
            raise ValueError(f"pair score must be in -2..2, got {self.score!r}")
        if self.relevance is not None and not self.relevance >= 0:
            raise ValueError(f"pair relevance must be >= 0, got {self.relevance!r}")


@dataclass(frozen=True)
class NoveltyClaim:
    """A novelty claim made by a review, with the verdicts of its prior-work pairs.

    Attributes:
        text: the claim as stated in the review.
        stance: one of :data:`STANCES`.
        pairs: the judged (claim, prior paper) pairs; may be empty (no prior work retrieved).
    """

    text: str
    stance: str = "somewhat novel"
    pairs: tuple[PairVerdict, ...] = ()

    def __post_init__(self) -> None:
        if self.stance not in STANCES:
            raise ValueError(f"novelty stance must be one of {STANCES}, got {self.stance!r}")
        object.__setattr__(self, "pairs", tuple(self.pairs))


@dataclass(frozen=True)
class Flaw:
    """One atomic flaw of the paper's pooled flaw list (PRISM flaw identification).

    Attributes:
        flaw_id: identifier within the paper's pool.
        text: what is wrong.
        severity: ``"critical"``, ``"minor"`` or another label (``"none"``; weight 0, not counted).
        valid: whether validation against the paper confirmed the flaw (``None``: not validated).
        raised_by: the exact reviewer ids who raised it (a set of whole ids; never matched by substring).
    """

    flaw_id: str
    text: str = ""
    severity: str = "none"
    valid: bool | None = True
    raised_by: frozenset[str] = field(default_factory=frozenset)

    def __post_init__(self) -> None:
        if isinstance(self.raised_by, str):
            raise TypeError(f"flaw {self.flaw_id!r}: raised_by must be a collection of reviewer ids, not one string")
        object.__setattr__(self, "raised_by", frozenset(str(r) for r in self.raised_by))
        object.__setattr__(self, "severity", str(self.severity).strip().lower())

    @property
    def counted(self) -> bool:
        """True for a valid flaw of severity critical or minor (the only flaws recall counts)."""
        return self.valid is True and self.severity in SEVERITY_WEIGHTS


@dataclass(frozen=True)
class RankedCritique:
    """One critique as it appears in a review, for prioritisation (nCPS).

    Attributes:
        severity: ``"critical"`` (weight 2), ``"minor"`` (1) or anything else (0, left out).
        section: the review section holding it (e.g. ``"weaknesses"``).
        quote: a verbatim (or near-verbatim) span of the review where it is stated (recovers its position).
        text: the critique in the extractor's words (used when the quote is not found).
    """

    severity: str
    section: str = "weaknesses"
    quote: str = ""
    text: str = ""


@dataclass(frozen=True)
class ReviewComment:
    """One atomic review comment with its five constructiveness scores (PRISM constructiveness).

    Attributes:
        text: the comment.
        kind: one of :data:`COMMENT_TYPES`.
        actionability, specificity, justification, solution, tone: each in {0, 1, 2}.
    """

    text: str
    kind: str = "observation"
    actionability: int = 0
    specificity: int = 0
    justification: int = 0
    solution: int = 0
    tone: int = 0

    def __post_init__(self) -> None:
        if self.kind not in COMMENT_TYPES:
            raise ValueError(f"comment kind must be one of {COMMENT_TYPES}, got {self.kind!r}")
        for axis in CONSTRUCTIVENESS_AXES:
            value = getattr(self, axis)
            if value is None:
                raise ValueError(f"comment {axis} must be in {{0, 1, 2}}, got None")
            _check_level(value, f"comment {axis}")

    @property
    def score(self) -> float:
        """Comment score = (sum of the five axis scores) / 10, in [0, 1]."""
        return sum(getattr(self, axis) for axis in CONSTRUCTIVENESS_AXES) / 10

"""surveyalign.judge: one survey judge for every caller (SurveyReview §5-6, App. C, E).

Public surface::

    from surveyalign.judge import (
        Judge, DimensionOptions, JudgeRequest,        # backend + protocol + per-dimension options
        Judgement, SampleRecord, PreparedPrompt,      # what a judgement holds
        read_sample,                                  # one backend answer -> SampleRecord
        decide, vote_samples, majority_vote, Vote, VoteFn,
        TOO_LONG_TEXT, CHARS_PER_TOKEN, model_context,   # the model context of a backend, the estimate without one
        Synthesis, synthesis_call, consolidate, synthesize,   # the merged rationale of the winning samples (App. E)
    )

``Judge(backend).judge(survey, dimension) -> Judgement``: build the prompt, apply the training length rule,
call the backend K times through the call layer (:mod:`surveyalign.calls`: cached, keyed with the dimension as
namespace), parse, vote. Sub-modules: ``judge`` (Judge), ``records`` (what a judgement holds), ``voting``,
``synthesis`` (the winning rationales merged into one, App. E; used by ``score`` and ``evaluate``).
"""

from surveyalign.judge.judge import (
    CHARS_PER_TOKEN,
    TOO_LONG_TEXT,
    DimensionOptions,
    Judge,
    JudgeRequest,
    model_context,
)
from surveyalign.judge.records import (
    Judgement,
    PreparedPrompt,
    SampleRecord,
    read_sample,
)
from surveyalign.judge.synthesis import (
    SYNTHESIS_OFF,
    SYNTHESIS_VERSION,
    Synthesis,
    consolidate,
    synthesis_call,
    synthesize,
)
from surveyalign.judge.voting import Vote, VoteFn, decide, majority_vote, vote_samples

__all__ = [
    "CHARS_PER_TOKEN",
    "SYNTHESIS_OFF",
    "SYNTHESIS_VERSION",
    "TOO_LONG_TEXT",
    "DimensionOptions",
    "Judge",
    "JudgeRequest",
    "Judgement",
    "PreparedPrompt",
    "SampleRecord",
    "Synthesis",
    "Vote",
    "VoteFn",
    "consolidate",
    "decide",
    "majority_vote",
    "model_context",
    "read_sample",
    "synthesis_call",
    "synthesize",
    "vote_samples",
]

"""surveyalign.judge: one survey judge for every caller (SurveyReview §5-6, App. C, E).

Public surface::

    from surveyalign.judge import (
        Judge, DimensionOptions, JudgeRequest,        # backend + protocol + per-dimension options
        Judgement, SampleRecord, PreparedPrompt,      # what a judgement holds
        read_sample,                                  # one backend answer -> SampleRecord
        decide, vote_samples, majority_vote, Vote, VoteFn,
        Call, run_calls, arun_calls,                  # the call executor (concurrency / batches)
        CallCache, call_key, stable_hash,             # the resumable call cache (calls.jsonl)
        make_call, cached_generate, acached_generate,  # keyed calls answered from the cache or the backend
        CachedAnswer,
    )

``Judge(backend).judge(survey, dimension) -> Judgement``: build the prompt, apply the training length rule,
call the backend K times, parse, vote.
"""

from surveyalign.judge.cache import (
    OPERATIONAL_KEYS,
    CallCache,
    backend_identity,
    call_key,
    stable_hash,
)
from surveyalign.judge.cached import (
    CachedAnswer,
    acached_generate,
    cached_generate,
    make_call,
)
from surveyalign.judge.calls import (
    Call,
    OnResult,
    answers_from_models,
    arun_calls,
    run_calls,
    run_coroutine,
)
from surveyalign.judge.judge import TOO_LONG_TEXT, DimensionOptions, Judge, JudgeRequest
from surveyalign.judge.records import (
    Judgement,
    PreparedPrompt,
    SampleRecord,
    read_sample,
)
from surveyalign.judge.voting import Vote, VoteFn, decide, majority_vote, vote_samples

__all__ = [
    "OPERATIONAL_KEYS",
    "TOO_LONG_TEXT",
    "CachedAnswer",
    "Call",
    "CallCache",
    "DimensionOptions",
    "Judge",
    "JudgeRequest",
    "Judgement",
    "OnResult",
    "PreparedPrompt",
    "SampleRecord",
    "Vote",
    "VoteFn",
    "acached_generate",
    "answers_from_models",
    "arun_calls",
    "backend_identity",
    "cached_generate",
    "call_key",
    "decide",
    "majority_vote",
    "make_call",
    "read_sample",
    "run_calls",
    "run_coroutine",
    "stable_hash",
    "vote_samples",
]

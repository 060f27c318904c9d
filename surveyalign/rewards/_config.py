"""The reward's config (YAML): the judge, the dimensions and their weights, the signal, the hacking checks.

Shape (``configs/rewards/*.yaml``)::

    judge:                      # a model role (surveyalign.backends.ModelRole) + samples / protocol
      backend: {kind: openai, options: {model: surveyalign, base_url: http://127.0.0.1:8000/v1}}
      generation: {temperature: 0.7, max_new_tokens: 512}
      samples: 5
    dimensions: {readability: 1.0, criticalness: 1.0}     # reward = sum of weight x dimension score
    signal: vote                # vote | expected | expected_logprob
    checks:
      penalize: [injection]     # flags whose completions get the lowest reward
      length_penalty: {max_length: 4096, cache: 512, factor: 1.0}
      heldout: {judge: {backend: ...}, every: 10, sample: 8}
    knowledge:                  # KA for KA-trained adapters, built from each row's `references` (App. F)
      graph: runs/ka/graph.jsonl
      ka_config: configs/ka/default.yaml
    log: runs/grpo/rewards.jsonl
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from surveyalign.backends import ModelRole
from surveyalign.constants import DIMENSIONS, VALID_SCORES
from surveyalign.inference.knowledge import KnowledgeSettings
from surveyalign.prompts import DEFAULT_PROTOCOL
from surveyalign.yamlconfig import DimensionName, read_yaml_mapping, validation_line

__all__ = ["FLAG_KINDS", "SIGNALS", "HackingChecks", "HeldOut", "LengthPenalty", "RewardConfig", "RewardJudge",
           "RewardKnowledge"]

#: How the K sampled scores of one dimension become its reward (see :func:`dimension_value`).
SIGNALS = ("vote", "expected", "expected_logprob")
#: The flags the hacking checks raise (see :mod:`surveyalign.rewards`).
FLAG_KINDS = ("injection", "repetition", "degenerate")


class RewardJudge(ModelRole):
    """The judge of the reward: a model role plus the judge-only keys.

    Attributes:
        samples: K sampled answers per (completion, dimension), 1-64 (SurveyReview App. E uses 5).
        protocol: answer protocol, ``"v1.0"`` (``Reason$$$X$$$``) or ``"v1.1"`` (tags).
        tokenizer: tokenizer folder / hub id counting prompt tokens for ``max_length`` (``None``: no cutting).
        max_length: token budget of prompt + answer; the survey body is cut to fit (needs ``tokenizer``).
    """

    generation_defaults: ClassVar[dict[str, Any]] = {"temperature": 0.0, "want_logprobs": True}

    samples: int = Field(1, ge=1, le=64, description="K samples per completion and dimension")
    protocol: str = Field(DEFAULT_PROTOCOL, description="answer protocol (v1.0 or v1.1)")
    tokenizer: str | None = Field(None, description="tokenizer counting prompt tokens (max_length needs it)")
    max_length: int | None = Field(None, ge=1, description="token budget of prompt + answer")


class LengthPenalty(BaseModel):
    """TRL's soft overlong punishment (DAPO, Yu et al. 2025): 0 up to ``max_length - cache`` units, then falling
    linearly to ``-factor`` at ``max_length``, ``-factor`` beyond. Units: tokens when the trainer passes
    ``completion_ids``, else words."""

    model_config = ConfigDict(extra="forbid")

    max_length: int = Field(..., ge=1, description="length at which the penalty reaches -factor")
    cache: int = Field(..., ge=1, description="length of the soft zone before max_length")
    factor: float = Field(1.0, ge=0.0, description="size of the full penalty, in reward units")

    @field_validator("cache")
    @classmethod
    def _cache_below_max(cls, value: int, info: Any) -> int:
        top = info.data.get("max_length")
        if top is not None and value > top:
            raise ValueError(f"cache ({value}) must not exceed max_length ({top})")
        return value

    def penalty(self, length: int) -> float:
        """The penalty (<= 0) of a completion of ``length`` units."""
        start = self.max_length - self.cache
        if length <= start:
            return 0.0
        if length <= self.max_length:
            return self.factor * (start - length) / self.cache
        return -self.factor


class HeldOut(BaseModel):
    """Every ``every`` steps a held-out judge re-scores ``sample`` completions of the step; the divergence from the
    training reward is logged (records of kind ``heldout``)."""

    model_config = ConfigDict(extra="forbid")

    judge: RewardJudge
    every: int = Field(10, ge=1, description="steps between two held-out checks (step 0 is checked)")
    sample: int = Field(8, ge=1, description="completions re-scored per checked step")
    seed: int = Field(0, ge=0, description="seed of the sample drawn at each checked step")


class HackingChecks(BaseModel):
    """The reward-hacking checks, on by default; see :func:`surveyalign.rewards.check_completion`.

    Attributes:
        enabled: run the checks (the flags are logged; ``penalize`` acts on them).
        penalize: flag kinds whose completion gets the lowest reward (``-2 x sum of weights``) instead of the
            judge's; default ``[injection]``.
        min_words: a completion with fewer words is ``degenerate``.
        min_letter_share: a completion whose share of letters among its non-space characters is lower is
            ``degenerate``.
        ngram: word n-gram size of the repetition check.
        max_repeated_share: a completion whose share of repeated word n-grams is higher is ``repetition``.
        length_penalty: the optional soft overlong penalty added to the reward.
        heldout: the optional held-out judge re-scoring a sample every N steps.
    """

    model_config = ConfigDict(extra="forbid")

    enabled: bool = True
    penalize: list[Literal["injection", "repetition", "degenerate"]] = Field(default_factory=lambda: ["injection"])
    min_words: int = Field(20, ge=0)
    min_letter_share: float = Field(0.5, ge=0.0, le=1.0)
    ngram: int = Field(4, ge=1)
    max_repeated_share: float = Field(0.5, ge=0.0, le=1.0)
    length_penalty: LengthPenalty | None = None
    heldout: HeldOut | None = None


class RewardKnowledge(KnowledgeSettings):
    """Knowledge augmentation of the reward (SurveyReview §5.2, App. F): the ``knowledge:`` block.

    A dimension whose judge was trained with KA (:func:`surveyalign.inference.knowledge.needs_knowledge`: its
    adapter's training record, else ``dimensions``, else a per-dimension adapter of Comprehensiveness or
    Criticalness) gets a KA text before the completion: the row's ``knowledge`` text when it has one, else one
    built from the row's ``references`` (BibTeX, a markdown reference list or titles:
    :func:`surveyalign.documents.read_reference_value`) with ``graph`` and ``ka_config``, the way
    ``surveyalign score --graph`` builds it, cached by content. Without a KA text such a dimension is refused (no
    judge call; the completion's reward is ``None`` and counted as failed) unless ``allow_no_knowledge``.

    Attributes:
        graph, ka_config: see :class:`~surveyalign.inference.knowledge.KnowledgeSettings` (``folder`` is not taken:
            a completion has no file name to look a prepared text up by).
        dimensions: the dimensions whose judge expects KA (``None``: as above).
        allow_no_knowledge: judge those dimensions without KA (recorded per completion) instead of refusing them.
        completion_references: when a row has no ``references``, read the completion's own reference section (as
            ``score`` reads a survey file's); off by default, since the policy writes that list itself.
    """

    dimensions: list[DimensionName] | None = Field(None, description="dimensions whose judge expects KA")
    allow_no_knowledge: bool = Field(False, description="judge KA-trained dimensions without KA (recorded)")
    completion_references: bool = Field(False, description="read the completion's own reference list when the "
                                        "row has no `references`")

    @model_validator(mode="after")
    def _no_folder(self) -> RewardKnowledge:
        if self.folder is not None:
            raise ValueError("folder: a completion has no file name to find a prepared KA text by; give `graph:` "
                             "(KA built from each row's `references`) or a `knowledge` column")
        return self


class RewardConfig(BaseModel):
    """The SurveyAlign reward: judge, weighted dimensions, signal, checks, log (see the module docstring).

    Attributes:
        judge: the judge (:class:`RewardJudge`).
        dimensions: ``{dimension: weight}``; the reward is the weighted sum of the dimension values (scores in
            {-2, -1, 1, 2}). Default: the four dimensions, weight 0.25 each (the mean score).
        signal: ``vote`` (the voted score, SurveyReview App. E), ``expected`` (the mean of the K scores: the
            vote shares' expectation) or ``expected_logprob`` (the K scores weighted by the probability of their
            answers, ``exp(mean log-prob)``; the vote shares when an answer has none).
        checks: :class:`HackingChecks`.
        log: JSONL file the reward appends its records to (``None``: records kept in memory only).
        cache: the judge calls' ``calls.jsonl`` (``None``: ``reward_calls.jsonl`` beside ``log``, or a temporary
            folder): a completion already judged costs no second call.
        log_text_chars: characters of each completion kept in the log.
        failed_value: the value the verl / OpenRLHF hooks give a failed judgment (``None``: verl raises, the
            remote endpoint answers ``null``); TRL always gets ``None`` (it skips the completion).
        concurrency: judge requests in flight (``None``: the backend's own).
        knowledge: :class:`RewardKnowledge` (default: no KA source; KA-trained dimensions are refused).
    """

    model_config = ConfigDict(extra="forbid")

    judge: RewardJudge
    dimensions: dict[DimensionName, float] = Field(default_factory=lambda: {d: 0.25 for d in DIMENSIONS})
    signal: Literal["vote", "expected", "expected_logprob"] = "vote"
    checks: HackingChecks = Field(default_factory=HackingChecks)
    log: str | None = None
    cache: str | None = None
    log_text_chars: int = Field(2000, ge=0)
    failed_value: float | None = None
    concurrency: int | None = Field(None, ge=1)
    knowledge: RewardKnowledge = Field(default_factory=RewardKnowledge)

    @field_validator("dimensions")
    @classmethod
    def _some_weight(cls, value: dict[str, float]) -> dict[str, float]:
        if not value:
            raise ValueError("name at least one dimension with its weight")
        return value

    @property
    def lowest(self) -> float:
        """The lowest reward the judge can give: ``min(VALID_SCORES) x`` the sum of positive weights plus
        ``max(VALID_SCORES) x`` the sum of negative ones (the reward of a penalized completion)."""
        return sum(w * (min(VALID_SCORES) if w >= 0 else max(VALID_SCORES)) for w in self.dimensions.values())

    @classmethod
    def from_yaml(cls, path: str | os.PathLike) -> RewardConfig:
        """Read and validate a reward YAML.

        Raises:
            FileNotFoundError: no such file.
            ValueError: invalid YAML, an unknown key or a bad value, in one line naming the file and the key.
        """
        data = read_yaml_mapping(path, "reward config")
        try:
            config = cls.model_validate(data)
        except ValidationError as err:
            raise ValueError(validation_line(err, str(path), "reward config")) from None
        # the KA files relative to the config's folder when they are there
        return config.model_copy(update={"knowledge": config.knowledge.resolved(Path(path).resolve().parent)})

"""The SurveyAlign reward: completions judged as surveys by the K-sample judge, checked for reward hacking, logged.

:class:`SurveyAlignReward` is an async callable in TRL's reward shape (``await reward(prompts, completions,
**kwargs) -> list[float | None]``); :attr:`SurveyAlignReward.sync` is the same reward as a plain callable. Every
(completion, dimension) goes through :class:`surveyalign.judge.Judge` and the call layer (cached by content in a
``calls.jsonl``, so a completion judged once costs no second call; batched / concurrent as the backend allows).
A judgment that failed gives ``None`` (TRL leaves the completion out of that reward) and is counted. A dimension
whose judge was trained with KA gets the row's KA text (``knowledge``) or one built from the row's ``references``
(:mod:`surveyalign.rewards._knowledge`, as ``score --graph``); without one it is refused (no call, ``None``).
"""

from __future__ import annotations

import asyncio
import json
import math
import random
import tempfile
import threading
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Self

from surveyalign.calls import CallCache, stable_hash
from surveyalign.constants import SCORED
from surveyalign.inference.judge import KNOWLEDGE_REFUSED
from surveyalign.judge import DimensionOptions, Judge, Judgement, JudgeRequest
from surveyalign.rewards._checks import check_completion, spearman
from surveyalign.rewards._config import RewardConfig, RewardJudge
from surveyalign.rewards._knowledge import CompletionKnowledge, knowledge_summary

__all__ = ["RewardOutcome", "SurveyAlignReward", "SyncSurveyAlignReward", "completion_text", "dimension_value"]


def completion_text(completion: Any, where: str = "completion") -> str:
    """The text of one completion: a string as is; a chat completion (a list of messages, or one message) as its
    assistant turns' contents joined by blank lines (typed content parts: their ``text`` parts).

    Raises:
        ValueError: anything else, naming ``where``.
    """
    if isinstance(completion, str):
        return completion
    messages = [completion] if isinstance(completion, dict) else completion
    if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
        raise ValueError(f"{where}: expected text or a list of chat messages, got {type(completion).__name__}")
    texts = []
    for m in messages:
        if m.get("role", "assistant") != "assistant":
            continue
        content = m.get("content")
        if isinstance(content, list):
            content = "".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text")
        if content is not None and not isinstance(content, str):
            raise ValueError(f"{where}: message content must be text, got {type(content).__name__}")
        texts.append(content or "")
    return "\n\n".join(texts)


def dimension_value(judgement: Judgement, signal: str) -> float | None:
    """The reward value of one dimension's judgement.

    Args:
        judgement: the K-sample judgement (:class:`surveyalign.judge.Judgement`).
        signal: ``"vote"``: the voted score (majority, log-prob tie-break; SurveyReview App. E);
            ``"expected"``: the mean of the K samples' scores (the expectation under the vote shares);
            ``"expected_logprob"``: the samples' scores weighted by ``exp(mean log-prob)`` of their answers
            (the vote shares when one has no log-probability).

    Returns:
        A value in [-2, 2], or ``None`` when the judgement is not ``scored`` (failed).

    Raises:
        ValueError: an unknown ``signal``.
    """
    if signal not in ("vote", "expected", "expected_logprob"):
        raise ValueError(f"unknown reward signal {signal!r}; expected vote, expected or expected_logprob")
    if judgement.status != SCORED or judgement.score is None:
        return None
    if signal == "vote":
        return float(judgement.score)
    scored = [s for s in judgement.samples if s.score is not None]
    weights = [1.0] * len(scored)
    if signal == "expected_logprob" and all(s.mean_logprob is not None for s in scored):
        weights = [math.exp(s.mean_logprob) for s in scored]
    total = sum(weights)
    return sum(w * s.score for w, s in zip(weights, scored)) / total


@dataclass
class RewardOutcome:
    """What the reward decided for one completion (one ``completion`` record of the log).

    Attributes:
        reward: the reward handed to the trainer; ``None`` when the judgment failed (and no penalty applied).
        judge_reward: the weighted sum of the dimension values, ``None`` when a dimension failed.
        scores: ``{dimension: value or None}``.
        status: ``{dimension: judgement status}`` (``scored``, ``parse_failed``, ``api_error``, ...).
        reason: why the judgment failed (the failing dimensions' reasons), else ``None``.
        length: the completion's length in ``length_unit``.
        length_unit: ``"tokens"`` (the trainer's ``completion_ids``) or ``"words"``.
        flags: ``{kind: reason}`` of the hacking checks.
        penalty: the length penalty added (<= 0).
        penalized: True when a flag in ``checks.penalize`` gave the lowest reward.
        knowledge: ``{dimension: KA summary}`` for the dimensions that need KA or got a KA text (``required``,
            ``used``, ``source``, ``chars``, ``note``, ``n_references``, ``n_resolved``).
    """

    reward: float | None
    judge_reward: float | None
    scores: dict[str, float | None]
    status: dict[str, str]
    reason: str | None
    length: int
    length_unit: str
    flags: dict[str, str] = field(default_factory=dict)
    penalty: float = 0.0
    penalized: bool = False
    knowledge: dict[str, dict[str, Any]] = field(default_factory=dict)


def _build_judge(role: RewardJudge, dimensions: Sequence[str], cache: CallCache, concurrency: int | None
                 ) -> tuple[Judge, list[Any]]:
    backend = role.build()
    backends = [backend]
    default = DimensionOptions(tokenizer=role.tokenizer, max_length=role.max_length)
    own = {}
    for dim in dimensions:
        if dim in role.backend.per_dimension:
            backends.append(role.build(dim))
            own[dim] = DimensionOptions(tokenizer=role.tokenizer, max_length=role.max_length, backend=backends[-1])
    judge = Judge(backend, protocol=role.protocol, settings=role.generation, dimensions=own, default=default,
                  cache=cache, concurrency=concurrency)
    return judge, backends


class SurveyAlignReward:
    """The SurveyAlign reward for TRL's ``GRPOTrainer(reward_funcs=[reward])`` (async) and, through
    :attr:`sync`, any trainer taking a plain callable; the remote endpoint and verl's hook call the same object.

    Args:
        config: the :class:`~surveyalign.rewards.RewardConfig`.
        log: overrides ``config.log`` (the JSONL the records are appended to).
        name: the reward's name in the trainer's logs (``rewards/<name>/mean``).

    Attributes:
        records: every record written (``config``, ``completion``, ``heldout``), also kept when there is no log.
        counts: ``{"completions", "failed", "flagged", "penalized", "knowledge_refused", "async_calls",
            "sync_calls"}`` (``knowledge_refused``: (completion, dimension) pairs refused for want of KA).
        knowledge: the :class:`~surveyalign.rewards._knowledge.CompletionKnowledge` building KA texts.
        cache: the judge's :class:`~surveyalign.calls.CallCache`.

    Call ``close()`` (or use ``with``) to close the judge backends.
    """

    def __init__(self, config: RewardConfig, *, log: str | None = None, name: str = "surveyalign") -> None:
        self.config = config
        self.__name__ = name
        self.log_path = Path(log or config.log) if (log or config.log) else None
        if config.cache:
            cache_path = Path(config.cache)
        elif self.log_path is not None:
            cache_path = self.log_path.with_name("reward_calls.jsonl")
        else:
            cache_path = Path(tempfile.mkdtemp(prefix="surveyalign-reward-")) / "reward_calls.jsonl"
        self.cache = CallCache.load(cache_path)
        dims = list(config.dimensions)
        self.judge, self._backends = _build_judge(config.judge, dims, self.cache, config.concurrency)
        self.heldout_judge = None
        if config.checks.heldout is not None:
            self.heldout_judge, more = _build_judge(config.checks.heldout.judge, dims, self.cache,
                                                    config.concurrency)
            self._backends += more
        try:
            self.knowledge = CompletionKnowledge(config.knowledge, config.judge, dims, self.cache)
        except Exception:
            self.close()
            raise
        self.records: list[dict[str, Any]] = []
        self.counts = {"completions": 0, "failed": 0, "flagged": 0, "penalized": 0, "knowledge_refused": 0,
                       "async_calls": 0, "sync_calls": 0}
        self._lock = threading.Lock()
        self._calls = 0
        self._heldout_steps: set[int] = set()
        self._write({"kind": "config", "name": name, "signal": config.signal, "dimensions": config.dimensions,
                     "judge": config.judge.describe(), "samples": config.judge.samples,
                     "checks": config.checks.model_dump(exclude={"heldout"}),
                     "heldout": (None if config.checks.heldout is None else
                                 {**config.checks.heldout.model_dump(exclude={"judge"}),
                                  "judge": config.checks.heldout.judge.describe()}),
                     "lowest": config.lowest, "failed_value": config.failed_value,
                     "knowledge": self.knowledge.describe()})

    @classmethod
    def from_yaml(cls, path: str, **kwargs: Any) -> SurveyAlignReward:
        """Build the reward from a reward YAML (:meth:`RewardConfig.from_yaml`); ``kwargs`` as the constructor."""
        return cls(RewardConfig.from_yaml(path), **kwargs)

    # ------------------------------------------------------------------------------------------ lifecycle
    def close(self) -> None:
        """Close the judge backends."""
        for backend in self._backends:
            close = getattr(backend, "close", None)
            if callable(close):
                close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def sync(self) -> SyncSurveyAlignReward:
        """This reward as a plain (synchronous) callable with the same records and cache."""
        return SyncSurveyAlignReward(self)

    # ------------------------------------------------------------------------------------------ the log
    def _write(self, record: dict[str, Any]) -> None:
        with self._lock:
            self.records.append(record)
            if self.log_path is not None:
                self.log_path.parent.mkdir(parents=True, exist_ok=True)
                with self.log_path.open("a", encoding="utf-8") as fh:
                    fh.write(json.dumps(record, ensure_ascii=False) + "\n")

    # ------------------------------------------------------------------------------------------ planning
    def _requests(self, texts: Sequence[str], kwargs: dict[str, Any]
                  ) -> tuple[list[JudgeRequest | Judgement], list[dict[str, dict[str, Any]]]]:
        """One item per (completion, dimension): the judge request with its KA text, or, for a KA-trained
        dimension without KA (not allowed), the refused judgement (no call); and each completion's KA summary."""
        out: list[JudgeRequest | Judgement] = []
        summaries = []
        columns = {key: kwargs.get(key) for key in ("knowledge", "title", "references")}
        for i, text in enumerate(texts):
            know, title, refs = (columns[key][i] if columns[key] is not None else None
                                 for key in ("knowledge", "title", "references"))
            mine = {}
            for dim in self.config.dimensions:
                record = self.knowledge.lookup(text, dim, title=title or None, knowledge=know or None,
                                               references=refs, where=f"completion {i}")
                if record.required or record.used:
                    mine[dim] = knowledge_summary(record)
                if record.required and not record.used and not self.config.knowledge.allow_no_knowledge:
                    out.append(Judgement(dim, None, "", KNOWLEDGE_REFUSED, record.note))
                else:
                    out.append(JudgeRequest(text, dim, record.text if record.used else None, title or None))
            summaries.append(mine)
        return out, summaries

    def _prepare(self, completions: Sequence[Any], completion_ids: Sequence[Any] | None, kwargs: dict[str, Any]
                 ) -> tuple[int, list[str], list[int], str, list[dict[str, str]], list[JudgeRequest | Judgement],
                            list[dict[str, dict[str, Any]]]]:
        n = len(completions)
        texts = [completion_text(c, f"completion {i}") for i, c in enumerate(completions)]
        for key in ("knowledge", "title", "references"):
            if kwargs.get(key) is not None and len(kwargs[key]) != n:
                raise ValueError(f"reward: {len(kwargs[key])} {key} values for {n} completions")
        if completion_ids is not None and len(completion_ids) == n:
            lengths, unit = [len(ids) for ids in completion_ids], "tokens"
        else:
            lengths, unit = [len(t.split()) for t in texts], "words"
        flags = [check_completion(t, self.config.checks) for t in texts]
        state = kwargs.get("trainer_state")
        step = getattr(state, "global_step", None)
        if step is None:
            step = kwargs.get("step") if isinstance(kwargs.get("step"), int) else self._calls
        requests, summaries = self._requests(texts, kwargs)
        return int(step), texts, lengths, unit, flags, requests, summaries

    @staticmethod
    def _sent(items: Sequence[JudgeRequest | Judgement]) -> list[JudgeRequest]:
        return [r for r in items if isinstance(r, JudgeRequest)]

    @staticmethod
    def _merged(items: Sequence[JudgeRequest | Judgement], judged: Sequence[Judgement]) -> list[Judgement]:
        """The judgements in item order: the refused ones as they are, the others from ``judged`` in turn."""
        answers = iter(judged)
        return [next(answers) if isinstance(r, JudgeRequest) else r for r in items]

    def _value(self, judgements: Sequence[Judgement]) -> tuple[float | None, dict[str, float | None],
                                                               dict[str, str], str | None]:
        scores, status, reasons = {}, {}, []
        for dim, j in zip(self.config.dimensions, judgements):
            scores[dim] = dimension_value(j, self.config.signal)
            status[dim] = j.status
            if scores[dim] is None:
                reasons.append(f"{dim}: {j.status}: {j.reason or 'no score'}")
        if reasons:
            return None, scores, status, "; ".join(reasons)
        return sum(self.config.dimensions[d] * scores[d] for d in scores), scores, status, None

    def _finish(self, step: int, path: str, texts: Sequence[str], lengths: Sequence[int], unit: str,
                flags: Sequence[dict[str, str]], judgements: Sequence[Judgement],
                knowledge: Sequence[dict[str, dict[str, Any]]]) -> list[RewardOutcome]:
        k = len(self.config.dimensions)
        checks = self.config.checks
        outcomes = []
        for i, text in enumerate(texts):
            judge_reward, scores, status, reason = self._value(judgements[i * k:(i + 1) * k])
            penalty = checks.length_penalty.penalty(lengths[i]) if checks.length_penalty else 0.0
            penalized = any(kind in checks.penalize for kind in flags[i])
            if penalized:
                reward: float | None = self.config.lowest
            else:
                reward = None if judge_reward is None else judge_reward + penalty
            outcome = RewardOutcome(reward, judge_reward, scores, status, reason, lengths[i], unit, dict(flags[i]),
                                    penalty, penalized, knowledge[i])
            outcomes.append(outcome)
            self._write({"kind": "completion", "step": step, "call": self._calls, "index": i, "path": path,
                         **asdict(outcome), "text_hash": stable_hash(text)[:16],
                         "text": text[:self.config.log_text_chars]})
        with self._lock:
            self.counts["completions"] += len(outcomes)
            self.counts["failed"] += sum(o.reward is None for o in outcomes)
            self.counts["flagged"] += sum(bool(o.flags) for o in outcomes)
            self.counts["penalized"] += sum(o.penalized for o in outcomes)
            self.counts["knowledge_refused"] += sum(j.status == KNOWLEDGE_REFUSED for j in judgements)
            self.counts[f"{path}_calls"] += 1
            self._calls += 1
        return outcomes

    def _heldout_plan(self, step: int, outcomes: Sequence[RewardOutcome]) -> list[int]:
        heldout = self.config.checks.heldout
        if heldout is None or step % heldout.every or step in self._heldout_steps or not outcomes:
            return []
        self._heldout_steps.add(step)
        picked = random.Random(heldout.seed + step).sample(range(len(outcomes)), min(heldout.sample, len(outcomes)))
        return sorted(picked)

    def _heldout_records(self, step: int, picked: Sequence[int], outcomes: Sequence[RewardOutcome],
                         judgements: Sequence[Judgement]) -> None:
        k = len(self.config.dimensions)
        for n, i in enumerate(picked):
            value, scores, _, reason = self._value(judgements[n * k:(n + 1) * k])
            self._write({"kind": "heldout", "step": step, "index": i, "reward": outcomes[i].judge_reward,
                         "heldout": value, "scores": scores, "reason": reason})

    @staticmethod
    def _metrics(kwargs: dict[str, Any], outcomes: Sequence[RewardOutcome]) -> None:
        log_metric = kwargs.get("log_metric")
        if not callable(log_metric) or not outcomes:
            return
        log_metric("surveyalign/failed", sum(o.reward is None for o in outcomes) / len(outcomes))
        log_metric("surveyalign/flagged", sum(bool(o.flags) for o in outcomes) / len(outcomes))
        pairs = [(o.length, o.judge_reward) for o in outcomes if o.judge_reward is not None]
        rho = spearman([p[0] for p in pairs], [p[1] for p in pairs])
        if rho is not None:
            log_metric("surveyalign/length_spearman", rho)

    # ------------------------------------------------------------------------------------------ judging
    async def ajudge_completions(self, completions: Sequence[Any], completion_ids: Sequence[Any] | None = None,
                                 **kwargs: Any) -> list[RewardOutcome]:
        """Judge, check and log a batch of completions (async; the judge calls run concurrently).

        Args:
            completions: N completions (text or chat messages).
            completion_ids: their token ids (lengths in tokens), else lengths count words.
            **kwargs: ``knowledge`` / ``title`` / ``references`` (N values each, dataset columns; ``references``:
                BibTeX, a markdown reference list or a list of titles, for KA), ``trainer_state`` (its
                ``global_step`` is the log's step), ``step`` (an explicit step), ``log_metric`` (TRL's metric hook).

        Returns:
            N :class:`RewardOutcome`, in order.

        Raises:
            ValueError: a completion that is neither text nor chat messages; a column of another length; a
                ``references`` value that cannot be read.
        """
        # KA building may read a graph and call a summariser: off the event loop
        step, texts, lengths, unit, flags, requests, ka = await asyncio.to_thread(self._prepare, completions,
                                                                                  completion_ids, kwargs)
        judged = await self.judge.ajudge_many(self._sent(requests), samples=self.config.judge.samples)
        outcomes = self._finish(step, "async", texts, lengths, unit, flags, self._merged(requests, judged), ka)
        picked = self._heldout_plan(step, outcomes)
        if picked:
            k = len(self.config.dimensions)
            items = [requests[i * k + d] for i in picked for d in range(k)]
            held = await self.heldout_judge.ajudge_many(self._sent(items),
                                                        samples=self.config.checks.heldout.judge.samples)
            self._heldout_records(step, picked, outcomes, self._merged(items, held))
        self._metrics(kwargs, outcomes)
        return outcomes

    def judge_completions(self, completions: Sequence[Any], completion_ids: Sequence[Any] | None = None,
                          **kwargs: Any) -> list[RewardOutcome]:
        """Synchronous :meth:`ajudge_completions` (same arguments and result)."""
        step, texts, lengths, unit, flags, requests, ka = self._prepare(completions, completion_ids, kwargs)
        judged = self.judge.judge_many(self._sent(requests), samples=self.config.judge.samples)
        outcomes = self._finish(step, "sync", texts, lengths, unit, flags, self._merged(requests, judged), ka)
        picked = self._heldout_plan(step, outcomes)
        if picked:
            k = len(self.config.dimensions)
            items = [requests[i * k + d] for i in picked for d in range(k)]
            held = self.heldout_judge.judge_many(self._sent(items), samples=self.config.checks.heldout.judge.samples)
            self._heldout_records(step, picked, outcomes, self._merged(items, held))
        self._metrics(kwargs, outcomes)
        return outcomes

    async def __call__(self, prompts: Sequence[Any], completions: Sequence[Any],
                       completion_ids: Sequence[Any] | None = None, **kwargs: Any) -> list[float | None]:
        """TRL's async reward function: one reward per completion, ``None`` for a failed judgment.

        Args:
            prompts: the N prompts (unused by the judge: a completion is judged as a survey on its own).
            completions: the N completions (text or chat messages).
            completion_ids: their token ids.
            **kwargs: dataset columns (``knowledge``, ``title``, ``references``) and TRL's ``trainer_state`` /
                ``log_metric``.

        Returns:
            N rewards (floats, or ``None``).
        """
        return [o.reward for o in await self.ajudge_completions(completions, completion_ids, **kwargs)]


class SyncSurveyAlignReward:
    """A :class:`SurveyAlignReward` as a plain callable (``reward.sync``): the same config, cache and records."""

    def __init__(self, reward: SurveyAlignReward) -> None:
        self.reward = reward
        self.__name__ = reward.__name__

    def __call__(self, prompts: Sequence[Any], completions: Sequence[Any],
                 completion_ids: Sequence[Any] | None = None, **kwargs: Any) -> list[float | None]:
        """The synchronous reward function (arguments and result as :meth:`SurveyAlignReward.__call__`)."""
        return [o.reward for o in self.reward.judge_completions(completions, completion_ids, **kwargs)]

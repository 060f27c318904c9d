"""``surveyalign score --plan`` and ``--max-cost``: the calls a batch of surveys will make, their tokens, cost and
time before anything is sent, and the cap consulted before each dimension's calls (issue 22).

The estimate is :func:`surveyalign.calls.spend.plan_calls` (the code ``evaluate`` uses) over:

* the judge calls: K per (survey, dimension) whose adapter is not refused for lack of knowledge, with their real
  prompts (the training length rule applied), counted with the judge's tokenizer; those answered in
  ``OUT/calls.jsonl`` (and usable) are left out;
* the rationale syntheses (SurveyReview App. E): for a dimension already answered, the real merge call when its
  winning samples gave different rationales; for one still to judge, an upper bound: one merge of K rationales
  each as long as a judge answer. They are planned apart (:attr:`ScorePlan.synthesis`) because they are made only
  when the winning rationales differ.

With a Crit-KA summariser configured, the KA summaries are calls too: ``--plan`` does not make them, so a
dimension whose KA needs them is planned without its KA text (a line says so).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from surveyalign.calls import Call, CallCache
from surveyalign.calls.budget import CallPlan, CostCap
from surveyalign.calls.cost import PriceTable, call_cost
from surveyalign.calls.spend import (
    PromptCounter,
    answer_history,
    make_cap,
    model_of_call,
    plan_calls,
    unanswered,
)
from surveyalign.documents import Document

__all__ = ["ScoreBudget", "ScorePlan", "batch_cost", "plan_score", "score_budget"]


@dataclass
class ScorePlan:
    """What :func:`plan_score` returns.

    Attributes:
        judge: the plan of the judge calls still to make; synthesis: the plan of the merge calls (an upper bound
            for dimensions not judged yet).
        calls: every judge and synthesis call of the batch, answered or not (the cap's starting point).
        todo: the judge calls still to make; synthesis_todo: the merge calls still to make.
        estimate: ``call -> USD`` of one call; cached: judge calls already answered.
        notes: lines printed under the plan.
    """

    judge: CallPlan
    synthesis: CallPlan
    calls: list[Call]
    todo: list[Call]
    synthesis_todo: list[Call]
    estimate: Any
    cached: int = 0
    notes: list[str] = field(default_factory=list)

    def lines(self, spent_usd: float = 0.0) -> list[str]:
        """The printed plan: the judge calls (as ``evaluate --plan``), then the synthesis bound."""
        out = self.judge.lines(spent_usd=spent_usd, cached_calls=self.cached)
        syn = self.synthesis
        if syn.calls:
            cost = "" if syn.cost_usd is None else f", up to ${syn.cost_usd:,.4f}"
            out.append(f"  synthesis: up to {syn.calls} call(s), up to {syn.total_tokens:,} tokens{cost} (made only "
                       "where a dimension's winning samples give different rationales)")
        return out + [f"  {n}" for n in self.notes]


def _sample_check(judge: Any) -> Any:
    return judge.judge.unusable


def plan_score(judge: Any, documents: Sequence[Document], cache: CallCache, prices: PriceTable) -> ScorePlan:
    """The calls ``score`` will make for ``documents`` and their estimate; nothing is sent.

    Args:
        judge: the :class:`~surveyalign.inference.judge.SurveyAlignJudge` (its knowledge source must not send
            calls: the CLI leaves the Crit-KA summariser out under ``--plan``).
        documents: the surveys, in order.
        cache: ``OUT/calls.jsonl``.
        prices: the price table.

    Returns:
        :class:`ScorePlan`.
    """
    samples = judge.spec.samples
    means = answer_history(cache)[0]
    answer = round(min(means.get("judge", judge.settings.max_new_tokens), judge.settings.max_new_tokens))
    calls: list[Call] = []
    synth: list[Call] = []
    unwritten: set[str] = set()
    dim_of: dict[str, str] = {}
    skipped: dict[str, int] = {}
    for document in documents:
        for dim in judge.spec.dimensions:
            knowledge = judge._knowledge(document, dim)
            if knowledge.required and not knowledge.used and not judge.allow_no_knowledge:
                skipped[dim] = skipped.get(dim, 0) + 1
                continue
            request = judge.request(document, dim, knowledge)
            prepared = judge.judge.prepare(request.survey, dim, knowledge=request.knowledge, title=request.title)
            mine = judge.judge.calls_for(prepared, samples)
            calls += mine
            if not mine or not judge.spec.synthesis or samples <= 1:
                continue
            if unanswered(cache, mine, _sample_check(judge)):  # not judged yet: the bound (K distinct rationales)
                verdict = judge.judge.decide(prepared, [cache.generation(c.key) for c in mine])
                verdict = _as_scored(verdict)
                merge = judge.synthesis_call(verdict, [f"({k + 1})" for k in range(samples)])
                if merge is not None:
                    unwritten.add(merge.key)
            else:
                verdict = judge.judge.decide(prepared, [cache.generation(c.key) for c in mine])
                merge = judge.synthesis_call(verdict) if verdict.status == "scored" else None
            if merge is not None:
                synth.append(merge)
                dim_of[merge.key] = dim
    todo = unanswered(cache, calls, _sample_check(judge))
    synth_todo = [c for c in synth if c.key in unwritten or cache.get(c.key) is None]

    def tokenizer_of(call: Call) -> Any:
        return judge.judge.tokenizer_for(call.namespace if call.stage == "judge" else dim_of[call.key])

    judge_plan, estimate = plan_calls(todo, PromptCounter(tokenizer_of, todo), cache, prices)
    syn_plan, syn_estimate = plan_calls(synth_todo, PromptCounter(tokenizer_of, synth_todo), cache, prices,
                                        extra_prompt=lambda c: samples * answer if c.key in unwritten else 0)
    synth_keys = {c.key for c in synth_todo}
    notes = [f"{dim}: {n} survey(s) not planned (the adapter needs knowledge augmentation and none is available)"
             for dim, n in skipped.items()]
    if getattr(judge.knowledge, "plan_note", None):
        notes.append(judge.knowledge.plan_note)
    return ScorePlan(judge_plan, syn_plan, [*calls, *synth], todo, synth_todo,
                     lambda c: syn_estimate(c) if c.key in synth_keys else estimate(c),
                     cached=len({c.key for c in calls}) - len(todo), notes=notes)


def _as_scored(verdict: Any) -> Any:
    """A stand-in judgement that voted (score +1) so its merge call can be built before the answers exist."""
    from dataclasses import replace

    return replace(verdict, score=verdict.score if verdict.score is not None else 1)


class ScoreBudget:
    """The ``--max-cost`` cap consulted by the judge before each dimension (``SurveyAlignJudge.budget``).

    ``before(calls)``: the dimension's judge calls still to make, plus the bound of its synthesis, fit under the
    cap (else nothing is sent). ``after(calls)``: the dimension's calls were answered: their counted cost is added.

    Args:
        cap: the :class:`~surveyalign.calls.budget.CostCap` (its start: what ``OUT/calls.jsonl`` already cost).
        cache: ``OUT/calls.jsonl``; prices: the price table.
        synthesis_usd: the bound of one dimension's synthesis (0 when synthesis is off or K = 1).
    """

    def __init__(self, cap: CostCap, cache: CallCache, prices: PriceTable, synthesis_usd: float = 0.0) -> None:
        self.cap = cap
        self.cache = cache
        self.prices = prices
        self.synthesis_usd = synthesis_usd
        self._counted = {rec["key"] for rec in cache}

    def before(self, calls: Sequence[Call]) -> bool:
        """Whether the dimension may be sent."""
        return self.cap.allows(calls, self.synthesis_usd)

    def after(self, calls: Sequence[Call]) -> None:
        """Add the counted cost of the answers of ``calls`` not counted yet."""
        for call in calls:
            record = self.cache.get(call.key)
            if record is None or call.key in self._counted:
                continue
            self._counted.add(call.key)
            hit = self.prices.lookup(model_of_call(call))
            self.cap.add(call_cost(record, hit[1] if hit else None))


def score_budget(max_cost: float, plan: ScorePlan, cache: CallCache, prices: PriceTable) -> ScoreBudget:
    """The :class:`ScoreBudget` of ``--max-cost USD`` from a :func:`plan_score` result.

    Raises:
        ValueError: the judge's model has no price (a local engine), or the cap is not > 0.
    """
    cap = make_cap(max_cost, plan.calls, cache, prices, plan.estimate)
    bound = max((plan.estimate(c) for c in plan.synthesis_todo), default=0.0)
    return ScoreBudget(cap, cache, prices, bound)


def batch_cost(reviews: Sequence[dict[str, Any]], prices: PriceTable) -> dict[str, Any] | None:
    """The tokens and cost of a batch of reviews, summed from their dimensions' ``cost`` blocks, in the shape of
    :func:`surveyalign.calls.cost.summarize_costs` (for :func:`~surveyalign.calls.cost.cost_lines`); ``None``
    when no dimension has one. A unit is one (survey, dimension)."""
    from surveyalign.calls.cost import TokenTotals

    def add(totals: TokenTotals, block: dict[str, Any]) -> None:
        totals.calls += block["calls"]
        totals.batch_calls += block["batch_calls"]
        totals.calls_without_usage += block["calls_without_usage"]
        totals.prompt_tokens += block["prompt_tokens"]
        totals.completion_tokens += block["completion_tokens"]
        totals.cached_tokens += block["cached_tokens"]
        totals.units += 1
        if block["cost_usd"] is not None:
            totals.cost_usd = (totals.cost_usd or 0.0) + block["cost_usd"]

    total, by_dim, by_judge = TokenTotals(), {}, {}
    flags: dict[str, tuple[str | None, bool]] = {}
    for review in reviews:
        for dim, record in (review.get("dimensions") or {}).items():
            block = record.get("cost")
            if not block:
                continue
            add(total, block)
            add(by_dim.setdefault(dim, TokenTotals()), block)
            add(by_judge.setdefault(block["model"], TokenTotals()), block)
            flags[block["model"]] = (block.get("priced_as"), bool(block.get("unverified_price")))
    if not total.calls:
        return None
    for t in by_judge.values():
        t.units = total.units
    return {"prices": prices.describe(), "total": total.to_dict(),
            "by_dimension": {d: t.to_dict() for d, t in by_dim.items()},
            "by_judge": {m: {**t.to_dict(), "priced_as": flags[m][0], "unverified_price": flags[m][1]}
                         for m, t in by_judge.items()},
            "unpriced_models": sorted(m for m, f in flags.items() if f[0] is None),
            "unverified_prices": sorted({f[0] for f in flags.values() if f[0] and f[1]})}

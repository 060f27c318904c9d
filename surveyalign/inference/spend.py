"""``surveyalign score --plan`` and ``--max-cost``: the calls a batch of surveys will make, their tokens, cost and
time before anything is sent, and the cap consulted before each dimension's calls.

The estimate is :func:`surveyalign.calls.spend.plan_calls` (the code ``evaluate`` uses) over:

* the judge calls: K per (survey, dimension) whose adapter is not refused for lack of knowledge, with their real
  prompts (the training length rule applied), counted with the judge's tokenizer; those answered in
  ``OUT/calls.jsonl`` (and usable) are left out;
* the rationale syntheses (SurveyReview App. E): for a dimension already answered, the real merge call when its
  winning samples gave different rationales; for one still to judge, an upper bound: one merge of K rationales
  each as long as a judge answer. They are planned apart (:attr:`ScorePlan.synthesis`) because they are made only
  when the winning rationales differ.

* the Crit-KA summariser's calls (SurveyReview App. F.2; a graph with a KA config ``summariser``): one summary per
  temporal block with its real prompt, then the compression (its real prompt once every summary is cached, else
  a bound: ``summary_tokens`` per missing summary); completions bounded by each stage's ``max_new_tokens``
  (``summary_tokens``, ``length``) until answers are cached; priced by the summariser's model (an unpriced local
  summariser: tokens and GPU time only, and ``--max-cost`` is refused as for an unpriced judge); prompt tokens counted with the summariser engine's tokenizer, else the KA
  ``tokenizer``, else 4 characters per token. Cached calls are left out. A criticalness judge call whose Crit-KA
  is not written yet is planned with a stand-in KA of ``length`` tokens (the most the compression gives).

Under ``--max-cost`` the summariser asks the same cap before each stage (:meth:`ScoreBudget.knowledge`): the
summaries with the compression bound, then the compression; what they cost is counted once answered.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from surveyalign.calls import Call, CallCache
from surveyalign.calls.budget import CallPlan, CostCap, TokenRate
from surveyalign.calls.cost import PriceTable, call_cost
from surveyalign.calls.spend import (
    CallEstimate,
    PromptCounter,
    answer_history,
    gpu_hours_per_second,
    make_cap,
    model_of_call,
    plan_calls,
    unanswered,
)
from surveyalign.documents import Document

__all__ = ["SUMMARISER_ROW", "ScoreBudget", "ScorePlan", "batch_cost", "plan_score", "score_budget"]


@dataclass
class ScorePlan:
    """What :func:`plan_score` returns.

    Attributes:
        judge: the plan of the judge calls still to make; synthesis: the plan of the merge calls (an upper bound
            for dimensions not judged yet).
        calls: every judge and synthesis call of the batch, answered or not (the cap's starting point).
        todo: the judge calls still to make; synthesis_todo: the merge calls still to make.
        estimate: ``call -> USD`` of one call (a :class:`~surveyalign.calls.spend.CallEstimate`: the judge's prompts
            without a tokenizer are counted at the tokens per character its answers show, learned as they come);
            cached: judge calls already answered.
        notes: lines printed under the plan.
        knowledge: the plan of the Crit-KA summariser's calls still to make (``None``: no summariser);
            knowledge_calls: all of them, answered or not; knowledge_todo: those still to make.
    """

    judge: CallPlan
    synthesis: CallPlan
    calls: list[Call]
    todo: list[Call]
    synthesis_todo: list[Call]
    estimate: Any
    cached: int = 0
    notes: list[str] = field(default_factory=list)
    knowledge: CallPlan | None = None
    knowledge_calls: list[Call] = field(default_factory=list)
    knowledge_todo: list[Call] = field(default_factory=list)

    def lines(self, spent_usd: float = 0.0) -> list[str]:
        """The printed plan: the judge calls (as ``evaluate --plan``), the synthesis bound, the Crit-KA
        summariser's calls and the total of all three."""
        out = self.judge.lines(spent_usd=spent_usd, cached_calls=self.cached)
        syn = self.synthesis
        if syn.calls:
            cost = "" if syn.cost_usd is None else f", up to ${syn.cost_usd:,.4f}"
            out.append(f"  synthesis: up to {syn.calls} call(s), up to {syn.total_tokens:,} tokens{cost} (made only "
                       "where a dimension's winning samples give different rationales)")
        ka = self.knowledge
        if ka is not None:
            done = len({c.key for c in self.knowledge_calls}) - ka.calls
            cost = (f"no price ({', '.join(ka.unpriced_models)}: GPU time only)" if ka.cost_usd is None
                    else f"${ka.cost_usd:,.4f}")
            when = "" if ka.seconds is None else f", about {ka.seconds / 60:,.1f} min"
            out.append(f"  Crit-KA summariser: {ka.calls} call(s) to make ({done} already answered), tokens: "
                       f"{ka.prompt_tokens:,} prompt ({ka.token_source}) + {ka.completion_tokens:,} completion "
                       f"({ka.completion_source}) = {ka.total_tokens:,}, {cost}{when}")
            parts = [p for p in (self.judge, syn, ka) if p.calls]
            usd = [p.cost_usd for p in parts if p.cost_usd is not None]
            out.append(f"  in all (judge + synthesis bound + Crit-KA summariser): {sum(p.calls for p in parts)} "
                       f"call(s), {sum(p.total_tokens for p in parts):,} tokens"
                       + (f", ${sum(usd):,.4f}" if usd else ""))
        return out + [f"  {n}" for n in self.notes]


def _sample_check(judge: Any) -> Any:
    return judge.judge.unusable


def plan_score(judge: Any, documents: Sequence[Document], cache: CallCache, prices: PriceTable) -> ScorePlan:
    """The calls ``score`` will make for ``documents`` and their estimate; nothing is sent.

    Args:
        judge: the :class:`~surveyalign.inference.judge.SurveyAlignJudge` (a knowledge source with a ``plan``
            method, :class:`~surveyalign.inference.knowledge.GraphKnowledge`, is asked without sending anything).
        documents: the surveys, in order.
        cache: ``OUT/calls.jsonl``.
        prices: the price table.

    Returns:
        :class:`ScorePlan`.
    """
    samples = judge.spec.samples
    means = answer_history(cache)[0]
    ka_calls: dict[str, Call] = {}
    stand_in: dict[str, int] = {}

    def planned(document: Document, dim: str) -> Any:  # the KA record without sending the summariser's calls
        record, mine = judge.knowledge.plan(document, dim)
        ka_calls.update((c.key, c) for c in mine)
        if record.details.get("stand_in"):
            stand_in[dim] = stand_in.get(dim, 0) + 1
        return record

    source = planned if callable(getattr(judge.knowledge, "plan", None)) else None
    answer = round(min(means.get("judge", judge.settings.max_new_tokens), judge.settings.max_new_tokens))
    calls: list[Call] = []
    synth: list[Call] = []
    unwritten: set[str] = set()
    dim_of: dict[str, str] = {}
    skipped: dict[str, int] = {}
    for document in documents:
        for dim in judge.spec.dimensions:
            knowledge = judge._knowledge(document, dim, source)
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

    rate = TokenRate().learn(cache, [*calls, *synth])  # tokens per character the answers so far show
    judge_plan, estimate = plan_calls(todo, PromptCounter(tokenizer_of, todo, rate), cache, prices)
    syn_plan, syn_estimate = plan_calls(synth_todo, PromptCounter(tokenizer_of, synth_todo, rate), cache, prices,
                                        extra_prompt=lambda c: samples * answer if c.key in unwritten else 0)
    synth_keys = {c.key for c in synth_todo}
    notes = [f"{dim}: {n} survey(s) not planned (the adapter needs knowledge augmentation and none is available)"
             for dim, n in skipped.items()]
    notes += [f"{dim}: {n} survey(s) planned with a stand-in Crit-KA text of {judge.knowledge.config.length} tokens "
              "(the summaries are not all written yet)" for dim, n in stand_in.items()]
    ka_plan, ka_estimate, ka_todo = None, None, []
    summariser = getattr(judge.knowledge, "summariser", None)
    if summariser is not None:
        from surveyalign.knowledge.summarise import KA_NAMESPACE

        ka_todo = unanswered(cache, list(ka_calls.values()))
        ka_plan, ka_estimate = plan_calls(ka_todo, PromptCounter(
            lambda c: getattr(c.backend, "tokenizer", None) or summariser.counter.tokenizer, ka_todo), cache, prices)
        if ka_plan.unpriced_models:
            notes.append(f"the Crit-KA summariser ({', '.join(ka_plan.unpriced_models)}) has no price (GPU time "
                         f"only): --max-cost refuses to run until it has one in {', '.join(prices.files)} (add it "
                         "with --prices FILE)")

    def estimate_any(call: Call) -> float:
        if ka_estimate is not None and call.namespace == KA_NAMESPACE:
            return ka_estimate(call)
        return syn_estimate(call) if call.key in synth_keys else estimate(call)

    return ScorePlan(judge_plan, syn_plan, [*calls, *synth], todo, synth_todo, CallEstimate(estimate_any, rate),
                     cached=len({c.key for c in calls}) - len(todo), notes=notes, knowledge=ka_plan,
                     knowledge_calls=list(ka_calls.values()), knowledge_todo=ka_todo)


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
        self._counted = {rec["key"]: id(rec) for rec in cache}  # a retried key's new answer is a new record

    def before(self, calls: Sequence[Call]) -> bool:
        """Whether the dimension may be sent."""
        return self.cap.allows(calls, self.synthesis_usd)

    def knowledge(self) -> _KnowledgeBudget:
        """The same cap for the Crit-KA summariser (``Summariser.budget``): no synthesis bound added."""
        return _KnowledgeBudget(self)

    def after(self, calls: Sequence[Call], learn: bool = True) -> None:
        """Add the counted cost of the answers of ``calls`` not counted yet (``learn``: their counted prompt tokens
        also teach the judge's estimate its tokens per character)."""
        for call in calls:
            record = self.cache.get(call.key)
            if record is None or self._counted.get(call.key) == id(record):
                continue
            self._counted[call.key] = id(record)
            hit = self.prices.lookup(model_of_call(call))
            self.cap.add(call_cost(record, hit[1] if hit else None))
            if learn:
                self.cap.observe(call, record.get("prompt_tokens"))


class _KnowledgeBudget:
    """:class:`ScoreBudget` as the Crit-KA summariser asks it: ``before(calls)`` (the calls alone fit under the
    cap) and ``after(calls)`` (their counted cost is added)."""

    def __init__(self, budget: ScoreBudget) -> None:
        self.budget = budget

    def before(self, calls: Sequence[Call]) -> bool:
        return self.budget.cap.allows(calls)

    def after(self, calls: Sequence[Call]) -> None:
        self.budget.after(calls, learn=False)


def score_budget(max_cost: float, plan: ScorePlan, cache: CallCache, prices: PriceTable) -> ScoreBudget:
    """The :class:`ScoreBudget` of ``--max-cost USD`` from a :func:`plan_score` result (it starts from what the
    judge's and the summariser's answers in ``OUT/calls.jsonl`` cost).

    A cap is never passed silently: every model the run calls, the Crit-KA summariser's included, must have a price
    (a call without one would count 0 USD and could pass the cap unseen).

    Raises:
        ValueError: the judge's or the summariser's model has no price (a local engine: its cost is GPU time;
            the message names the models and the price files), or the cap is not > 0.
    """
    cap = make_cap(max_cost, [*plan.calls, *plan.knowledge_calls], cache, prices, plan.estimate)
    bound = max((plan.estimate(c) for c in plan.synthesis_todo), default=0.0)
    return ScoreBudget(cap, cache, prices, bound)


#: The row of the Crit-KA summariser's calls in :func:`batch_cost`'s ``by_dimension``.
SUMMARISER_ROW = "Crit-KA summariser"


def batch_cost(reviews: Sequence[dict[str, Any]], prices: PriceTable, *, cache: CallCache | None = None,
               summariser_calls: Sequence[Call] = ()) -> dict[str, Any] | None:
    """The tokens and cost of a batch of reviews, summed from their dimensions' ``cost`` blocks, in the shape of
    :func:`surveyalign.calls.cost.summarize_costs` plus ``gpu_hours`` (model -> GPU-hours of a local engine on
    GPUs) (for :func:`~surveyalign.calls.cost.cost_lines`); ``None`` when no dimension has one. A unit is one
    (survey, dimension).

    Args:
        reviews: the batch's review dicts.
        prices: the price table.
        cache: ``OUT/calls.jsonl`` (read for ``summariser_calls``).
        summariser_calls: the Crit-KA summariser calls the batch's KA texts took
            (:attr:`surveyalign.inference.knowledge.GraphKnowledge.summariser_calls`): counted in the total, in the
            row :data:`SUMMARISER_ROW` and under the summariser's model (no units of their own).
    """
    from surveyalign.calls.cost import TokenTotals

    def add(totals: TokenTotals, block: dict[str, Any]) -> None:
        totals.calls += block["calls"]
        totals.batch_calls += block["batch_calls"]
        totals.calls_without_usage += block["calls_without_usage"]
        totals.prompt_tokens += block["prompt_tokens"]
        totals.completion_tokens += block["completion_tokens"]
        totals.cached_tokens += block["cached_tokens"]
        totals.units += 1
        totals.retries += int(block.get("retries") or 0)
        if block["cost_usd"] is not None:
            totals.cost_usd = (totals.cost_usd or 0.0) + block["cost_usd"]

    total, by_dim, by_judge = TokenTotals(), {}, {}
    flags: dict[str, tuple[str | None, bool]] = {}
    hours: dict[str, float] = {}
    for review in reviews:
        for dim, record in (review.get("dimensions") or {}).items():
            block = record.get("cost")
            if not block:
                continue
            add(total, block)
            add(by_dim.setdefault(dim, TokenTotals()), block)
            add(by_judge.setdefault(block["model"], TokenTotals()), block)
            flags[block["model"]] = (block.get("priced_as"), bool(block.get("unverified_price")))
            if block.get("gpu_hours"):
                hours[block["model"]] = hours.get(block["model"], 0.0) + block["gpu_hours"]
    summariser_total = TokenTotals()
    by_key = {call.key: call for call in summariser_calls}
    seen: set[str] = set()
    for record in cache.attempts(by_key) if cache is not None else ():  # every sent attempt was paid
        call = by_key[record["key"]]
        retry = record["key"] in seen
        seen.add(record["key"])
        model = str(model_of_call(call))
        hit = prices.lookup(model)
        if model not in flags:
            flags[model] = (hit[0] if hit else None, bool(hit and hit[1].unverified))
        cost = call_cost(record, hit[1] if hit else None)
        for totals in (total, summariser_total, by_judge.setdefault(model, TokenTotals())):
            totals.add(record, cost, retry)
        per_second = gpu_hours_per_second(call.backend)
        if per_second and record.get("seconds"):
            hours[model] = hours.get(model, 0.0) + float(record["seconds"]) * per_second
    if summariser_total.calls:
        by_dim[SUMMARISER_ROW] = summariser_total
    if not total.calls:
        return None
    for t in by_judge.values():
        t.units = total.units
    return {"prices": prices.describe(), "total": total.to_dict(),
            "by_dimension": {d: t.to_dict() for d, t in by_dim.items()},
            "by_judge": {m: {**t.to_dict(), "priced_as": flags[m][0], "unverified_price": flags[m][1]}
                         for m, t in by_judge.items()},
            "unpriced_models": sorted(m for m, f in flags.items() if f[0] is None),
            "unverified_prices": sorted({f[0] for f in flags.values() if f[0] and f[1]}),
            "gpu_hours": {m: round(h, 6) for m, h in hours.items()}}

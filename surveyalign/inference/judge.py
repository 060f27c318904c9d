"""SurveyAlign as one judge: one base, four dimension adapters, knowledge augmentation, K-sample voting, merged
rationales (SurveyReview §5, §5.3, App. E, App. F).

:class:`SurveyAlignJudge` reviews a :class:`~surveyalign.documents.readers.Document` on every dimension of its
:class:`~surveyalign.inference.spec.JudgeSpec`: the prompt and the training length rule come from
:class:`surveyalign.judge.Judge`, the K samples of a dimension (temperature T, seeds ``seed + k``, recorded) are
made in one call per prompt so they share one prefill, the vote is the majority over parsed samples with the
mean-log-probability tie-break (unparsed samples do not vote and are counted; no parsed sample = the dimension
fails, with the reason), and the winning rationales are merged by one more call
(:mod:`surveyalign.judge.synthesis`). Every call goes through the call cache, so an interrupted run resumes.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

from tqdm.auto import tqdm

from surveyalign import __version__
from surveyalign.calls import Call, CallCache
from surveyalign.calls.budget import CostCapReached
from surveyalign.calls.cost import PriceTable
from surveyalign.calls.spend import unanswered
from surveyalign.documents import Document
from surveyalign.documents.untrusted import neutralise
from surveyalign.inference.knowledge import (
    KnowledgeRecord,
    KnowledgeSource,
    knowledge_record,
    needs_knowledge,
)
from surveyalign.inference.spec import JudgeSpec, build_dimension_backends
from surveyalign.judge import DimensionOptions, Judge, Judgement, JudgeRequest
from surveyalign.judge.synthesis import (
    SYNTHESIS_VERSION,
    Synthesis,
    synthesis_call,
    synthesize,
)
from surveyalign.models import read_training_record, resolve_max_length
from surveyalign.paths import content_sha256

__all__ = ["KNOWLEDGE_REFUSED", "SurveyAlignJudge"]

#: Reason of a dimension whose adapter needs KA when none is available and ``allow_no_knowledge`` is off.
KNOWLEDGE_REFUSED = "knowledge_required"


class SurveyAlignJudge:
    """Review surveys with base + dimension adapters + KA + voting, as one judge (SurveyReview §5, App. E).

    Args:
        spec: the judge (base model, adapters, K, T, seed, protocol, synthesis).
        cache: the call cache (``calls.jsonl``) making runs resumable; ``None``: nothing kept.
        knowledge: where KA texts come from (``None``: no KA).
        allow_no_knowledge: judge KA-trained dimensions without KA (recorded in the output) instead of refusing.
        backends: ``(owner, {dimension: backend})`` already built (tests, a shared server); default: built from
            ``spec`` (:func:`~surveyalign.inference.spec.build_dimension_backends`) and closed by :meth:`close`.
        prices: the price table the reports' cost per dimension uses (default: the shipped ``configs/prices.yaml``).

    Raises:
        ValueError / OSError / ImportError: from building the backends.
    """

    def __init__(self, spec: JudgeSpec, *, cache: CallCache | None = None, knowledge: KnowledgeSource | None = None,
                 allow_no_knowledge: bool = False, backends: tuple[Any, Mapping[str, Any]] | None = None,
                 prices: PriceTable | None = None) -> None:
        self.spec = spec
        self.prices = prices
        #: a budget consulted before a dimension's calls are sent (``score --max-cost``): ``before(calls) -> bool``
        #: (False: nothing is sent, :class:`~surveyalign.calls.budget.CostCapReached` is raised) and
        #: ``after(calls)`` with the dimension's calls once answered; ``None``: no cap.
        self.budget: Any = None
        self.cache = cache
        self.knowledge = knowledge
        self.allow_no_knowledge = bool(allow_no_knowledge)
        #: how the refusal note tells a user to configure KA or judge without it (``score``'s flags by default;
        #: a config file's keys where one is read)
        self.configure_hint, self.allow_hint = "--graph/--knowledge", "--allow-no-knowledge"
        self._owned = backends is None
        self.owner, self.backends = backends if backends is not None else build_dimension_backends(spec)
        self.settings = spec.settings
        # a local adapter folder's training record ({}: none; openai: served model names, no folder)
        self.records = {d: read_training_record(spec.adapters[d], required=False)
                        if not spec.served and d in spec.adapters else None for d in spec.dimensions}
        self.lengths = {d: resolve_max_length(spec.max_length, None if spec.served else spec.adapters.get(d))
                        for d in spec.dimensions}
        options = {d: DimensionOptions(max_length=self.lengths[d][0], adapter=d if d in spec.adapters else None,
                                       tokenizer=spec.tokenizer, backend=self.backends[d]) for d in spec.dimensions}
        self.judge = Judge(self.owner, protocol=spec.protocol, settings=self.settings, dimensions=options,
                           cache=cache)
        if spec.tokenizer and spec.dimensions:  # loaded once, now: a bad folder fails before any call
            try:
                self.judge.tokenizer_for(spec.dimensions[0])
            except ValueError as err:
                self.close()
                raise ValueError(f"{err} (judge config key: tokenizer; CLI: --tokenizer)") from None

    # ------------------------------------------------------------------ knowledge
    def needs_knowledge(self, dimension: str) -> bool:
        """Whether ``dimension``'s adapter was trained with KA (its training record; else the config; else
        SurveyAlign's choice: Comprehensiveness and Criticalness adapters): :func:`~surveyalign.inference.knowledge.
        needs_knowledge`."""
        return needs_knowledge(dimension, record=self.records.get(dimension),
                               knowledge_dimensions=self.spec.knowledge_dimensions, adapters=self.spec.adapters)

    def _knowledge(self, document: Document, dimension: str, source: Any = None) -> KnowledgeRecord:
        """The KA record of ``document`` on ``dimension`` (``source``: looks it up instead of :attr:`knowledge`,
        e.g. without sending the summariser's calls under ``--plan``): :func:`~surveyalign.inference.knowledge.
        knowledge_record`."""
        return knowledge_record(source or self.knowledge, document, dimension,
                                required=self.needs_knowledge(dimension), allow=self.allow_no_knowledge,
                                configure=self.configure_hint, allow_flag=self.allow_hint)

    # ------------------------------------------------------------------ reviewing
    def review(self, document: Document, *, progress: bool = True) -> dict[str, Any]:
        """Review one survey on every dimension of the spec (a progress bar per survey, stepping per dimension).

        Args:
            document: the survey, read by :func:`~surveyalign.documents.read_document`.
            progress: show the progress bar (stderr).

        Returns:
            The review record (JSON-serialisable): ``survey`` (the document's description and the ``sha256`` of
            its text), ``judge`` (the spec's settings), ``dimensions`` ({dimension: score, status, reason, rationale, synthesis, votes,
            n_samples, n_voted, n_unparsed, n_errors, vote_share, tie_break, samples (seed, score, rationale,
            text, finish_reason, mean_logprob, error, parse_error), knowledge, prompt, read (chars_read,
            chars_total, tokens_read, tokens_total, cut, cut_at_char, counted, max_length, context: how much of
            the survey the judge read), adapter, fingerprint, notes}; each sample's ``quoted``: answer tokens it
            quoted from the survey, ignored), ``summary`` (n_scored, n_failed, n_refused) and ``warnings``.
        """
        bar = tqdm(total=len(self.spec.dimensions), desc=(document.title or document.source.name)[:40],
                   unit="dim", disable=not progress, leave=True)
        dims: dict[str, Any] = {}
        try:
            for dim in self.spec.dimensions:
                bar.set_postfix_str(dim)
                dims[dim] = self._review_dimension(document, dim)
                bar.update(1)
        finally:
            bar.close()
        statuses = [d["status"] for d in dims.values()]
        warnings = [w for w in (self._sample_warning(d, r) for d, r in dims.items()) if w]
        return {
            # whose report; the answer-format tokens its text and title carried (neutralised before any prompt)
            "survey": {**document.to_dict(), "sha256": content_sha256(document.text),
                       "neutralised": neutralise(document.text + "\n" + (document.title or "")).summary()},
            "judge": self.describe(),
            "dimensions": dims,
            "summary": {"n_dimensions": len(dims), "n_scored": statuses.count("scored"),
                        "n_failed": sum(s not in ("scored", KNOWLEDGE_REFUSED) for s in statuses),
                        "n_refused": statuses.count(KNOWLEDGE_REFUSED),
                        # samples that errored or could not be read, and scored dimensions resting on fewer than K
                        "n_failed_samples": sum(int(d.get("n_failed_samples") or 0) for d in dims.values()),
                        "n_partial": sum(d["status"] == "scored" and int(d.get("n_failed_samples") or 0) > 0
                                         for d in dims.values())},
            "warnings": warnings,  # judge-level warnings; the document's own are under survey.warnings
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "surveyalign_version": __version__,
        }

    @staticmethod
    def _sample_warning(dim: str, record: Mapping[str, Any]) -> str | None:
        """The warning of a dimension some of whose K samples failed (``None``: every sample usable or none
        asked): how many were usable, why the others failed, and that the agreement is over the usable ones."""
        failed = int(record.get("n_failed_samples") or 0)
        if not failed:
            return None
        k, total = int(record.get("n_usable") or 0), int(record.get("n_requested") or 0)
        errors = [s.get("error") or s.get("parse_error") for s in record.get("samples") or []]
        why = "; ".join(dict.fromkeys(e for e in errors if e))
        parts = [f"{record.get('n_errors', 0)} api_error", f"{record.get('n_unparsed', 0)} unparsed"]
        head = f"{dim}: {k} of {total} samples usable ({', '.join(parts)}{': ' + why if why else ''})"
        if record.get("status") == "scored":
            return f"{head}; score and agreement are over the {k} usable sample{'s' if k != 1 else ''} only"
        return f"{head}; not scored"

    def _review_dimension(self, document: Document, dim: str) -> dict[str, Any]:
        knowledge = self._knowledge(document, dim)
        base = {"adapter": self.spec.adapters.get(dim), "fingerprint": self.judge.identity(dim),
                "knowledge": {k: v for k, v in knowledge.to_dict().items() if k != "text"},
                "notes": [knowledge.note] if knowledge.note else []}
        if knowledge.required and not knowledge.used and not self.allow_no_knowledge:
            return {**base, "score": None, "status": KNOWLEDGE_REFUSED, "reason": knowledge.note, "rationale": "",
                    "synthesis": None, "votes": {}, "n_samples": 0, "n_voted": 0, "n_unparsed": 0, "n_errors": 0,
                    "n_requested": 0, "n_usable": 0, "n_failed_samples": 0, "agreement_over": None,
                    "vote_share": None, "tie_break": None, "samples": [], "prompt": None, "cost": None}
        request = self.request(document, dim, knowledge)
        if self.budget is not None and self.cache is not None:
            prepared = self.judge.prepare(request.survey, dim, knowledge=request.knowledge, title=request.title)
            todo = unanswered(self.cache, self.judge.calls_for(prepared, self.spec.samples), self.judge.unusable)
            if todo and not self.budget.before(todo):
                raise CostCapReached(f"{document.source}: {dim}: not sent (the cost cap)")
        [judgement] = self.judge.judge_many([request], samples=self.spec.samples)
        calls = self.judge.calls_for(judgement.prompt, self.spec.samples) if judgement.prompt is not None else []
        synthesis = None
        if judgement.status == "scored":
            synthesis, merge = self._synthesize(judgement)
            calls += [merge] if merge is not None else []
        if self.budget is not None:
            self.budget.after(calls)
        return {**base, **self._dimension_record(judgement, synthesis), "cost": self._cost(calls)}

    def request(self, document: Document, dim: str, knowledge: KnowledgeRecord) -> JudgeRequest:
        """The judge request of ``document`` on ``dim`` with its KA text (when used)."""
        return JudgeRequest(document.text, dim, knowledge=knowledge.text if knowledge.used else None,
                            title=document.title or None)

    def _cost(self, calls: Sequence[Call]) -> dict[str, Any] | None:
        """Tokens and cost of a dimension's calls (its K samples and the synthesis), from every attempt in the cache:
        :meth:`surveyalign.calls.cost.TokenTotals.to_dict` plus ``model``, ``priced_as``, ``unverified_price``
        and ``gpu_hours`` (a local engine on GPUs: its recorded call seconds x
        :func:`surveyalign.calls.spend.gpu_hours_per_second`; ``None`` otherwise); ``None`` without a cache."""
        if self.cache is None or not calls:
            return None
        from surveyalign.calls.cost import TokenTotals, call_cost, load_prices
        from surveyalign.calls.spend import gpu_hours_per_second, model_of_call

        if self.prices is None:
            self.prices = load_prices()
        totals = TokenTotals(units=1)
        model = model_of_call(calls[0])
        hit = self.prices.lookup(model)
        per_second = gpu_hours_per_second(calls[0].backend)
        seconds = 0.0
        seen: set[str] = set()
        for record in self.cache.attempts(c.key for c in calls):  # every sent attempt was paid
            totals.add(record, call_cost(record, hit[1] if hit else None), record["key"] in seen)
            seen.add(record["key"])
            seconds += float(record.get("seconds") or 0.0)
        return {**totals.to_dict(), "model": model, "priced_as": hit[0] if hit else None,
                "unverified_price": bool(hit and hit[1].unverified), "prices_as_of": self.prices.as_of,
                "gpu_hours": round(seconds * per_second, 6) if per_second else None}

    def _dimension_record(self, judgement: Judgement, synthesis: Synthesis | None) -> dict[str, Any]:
        vote = judgement.vote
        counts = {str(s): c for s, c in (vote.counts.items() if vote else [])}
        n_voted = vote.n_voted if vote else 0
        prompt = judgement.prompt
        max_length, origin = self.lengths[judgement.dimension]
        return {
            "score": judgement.score, "status": judgement.status, "reason": judgement.reason,
            "rationale": synthesis.rationale if synthesis else judgement.rationale,
            "synthesis": synthesis.to_dict() if synthesis else None,
            "votes": counts, "n_samples": len(judgement.samples), "n_voted": n_voted,
            # usable samples k of K: agreement (vote_share) is over the usable (parsed) samples only
            "n_requested": max(self.spec.samples, len(judgement.samples)) if judgement.samples else 0,
            "n_usable": n_voted,
            "n_failed_samples": (max(self.spec.samples, len(judgement.samples)) - n_voted) if judgement.samples
            else 0,
            "agreement_over": "usable samples" if judgement.score is not None else None,
            "n_unparsed": sum(s.status == "parse_failed" for s in judgement.samples),
            "n_errors": sum(s.status == "api_error" for s in judgement.samples),
            "vote_share": (counts[str(judgement.score)] / n_voted) if judgement.score is not None else None,
            "tie_break": vote.tie_break if vote else None,
            "chosen_sample": vote.best_index if vote else None,
            "samples": [{"sample": s.sample, "seed": s.seed, "score": s.score, "rationale": s.rationale,
                         "text": s.text, "finish_reason": s.finish_reason, "mean_logprob": s.mean_logprob,
                         "error": s.error, "parse_error": s.parse_error, "quoted": list(s.quoted)}
                        for s in judgement.samples],
            "prompt": None if prompt is None else {
                "prompt_tokens": prompt.prompt_tokens, "shortened_tokens": prompt.shortened_tokens,
                "max_length": max_length, "max_length_from": origin, "has_knowledge": prompt.has_knowledge,
                "template_hash": prompt.template_hash, "messages_hash": prompt.messages_hash,
                "context": self.judge.context_for(judgement.dimension)},
            # how much of the survey the judge read: characters (and tokens when counted), the cut
            "read": None if prompt is None else {**prompt.reading(), "max_length": max_length,
                                                 "context": self.judge.context_for(judgement.dimension)},
        }

    # ------------------------------------------------------------------ rationale synthesis (App. E)
    def synthesis_call(self, judgement: Judgement, rationales: Sequence[str] | None = None) -> Call | None:
        """The call merging a scored judgement's winning rationales (``None`` when there is nothing to merge or
        synthesis is off): :func:`surveyalign.judge.synthesis.synthesis_call`. ``rationales``: stand-ins for
        rationales not written yet (``--plan``)."""
        return synthesis_call(self.judge, judgement, rationales=rationales) if self.spec.synthesis else None

    def _synthesize(self, judgement: Judgement) -> tuple[Synthesis, Call | None]:
        return synthesize(self.judge, judgement, self.cache, enabled=self.spec.synthesis)

    # ------------------------------------------------------------------ description
    def describe(self) -> dict[str, Any]:
        """The judge's settings for the report (no credentials)."""
        spec, gen = self.spec, self.spec.generation
        return {"name": spec.name, "backend": spec.backend.kind, "model": spec.model, "adapters": dict(spec.adapters),
                "protocol": spec.protocol, "samples": spec.samples, "temperature": gen.temperature,
                "top_p": gen.top_p, "max_new_tokens": gen.max_new_tokens, "seed": gen.seed,
                "seeds": [gen.seed + k for k in range(spec.samples)], "enable_thinking": gen.enable_thinking,
                "synthesis": spec.synthesis, "synthesis_version": SYNTHESIS_VERSION,
                "allow_no_knowledge": self.allow_no_knowledge,
                "knowledge_dimensions": [d for d in spec.dimensions if self.needs_knowledge(d)],
                "knowledge_source": getattr(self.knowledge, "name", None)}

    def review_many(self, documents: Sequence[Document], *, progress: bool = True) -> list[dict[str, Any]]:
        """:meth:`review` for each document, in order."""
        return [self.review(d, progress=progress) for d in documents]

    def close(self) -> None:
        """Close the backends this judge built (not those it was given)."""
        if self._owned:
            for backend in {id(b): b for b in [self.owner, *self.backends.values()]}.values():
                backend.close()

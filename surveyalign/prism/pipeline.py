"""The PRISM extraction pipeline for one paper and its reviews: units out of every review, then scores.

Steps (each a batch of calls through :class:`~surveyalign.prism.calls.Extractor`): per review, ADUs with
role / aspect / grounding, novelty claims with stance, atomic flaws with quotes, atomic comments with the five
constructiveness scores; then for the paper, prior-work retrieval and one verdict per (claim, prior paper)
pair, the merge of all reviews' flaws into one pool, and the validation + severity of each pooled flaw.
Every failed or unparseable answer is counted per stage in :class:`ExtractionLog` with its reason; a step
that failed for a review leaves that review's score None (with the reason), never 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Protocol

from surveyalign.backends import Generation
from surveyalign.calls import UnreachableError
from surveyalign.prism.calls import CallRequest, Extractor
from surveyalign.prism.inputs import Review, Submission
from surveyalign.prism.parsing import (
    Parsed,
    parse_adus,
    parse_claims,
    parse_comments,
    parse_flaws,
    parse_groups,
    parse_validation,
    parse_verdict,
)
from surveyalign.prism.prompts import GROUNDING_RUBRICS, build_messages
from surveyalign.prism.units import Flaw, NoveltyClaim, PairVerdict
from surveyalign.prompts import answer_failure

__all__ = ["ExtractionLog", "PaperUnits", "PriorPaper", "PriorWorkRetriever", "extract_units"]


@dataclass(frozen=True)
class PriorPaper:
    """One retrieved earlier paper (novelty assessment)."""

    paper_id: str
    title: str
    abstract: str = ""
    year: int | None = None
    publication_date: str | None = None


class PriorWorkRetriever(Protocol):
    """What the pipeline needs from novelty retrieval (see :mod:`surveyalign.prism.retrieval`)."""

    def retrieve(self, paper: Submission, queries: Sequence[str]) -> list[PriorPaper]:
        """Prior papers older than ``paper``'s submission, de-duplicated and diversified."""

    def relevance(self, claim: str, priors: Sequence[PriorPaper]) -> list[float]:
        """Relevance (>= 0) of each prior paper to ``claim``."""


def answer_problem(gen: Generation, parser, *args) -> str | None:
    """Why ``gen`` gives no usable extraction (API error, truncated or refused, unparseable), else ``None``: the
    same verdict as :meth:`ExtractionLog.read`, without recording it (the call layer's reader: such a cached
    answer is asked again on a re-run)."""
    if not gen.ok:
        return gen.error or "error"
    if (not_final := answer_failure(gen, "JSON object")) is not None:
        return not_final
    parsed = parser(gen.text, *args)
    return None if parsed.ok else (parsed.error or "unparseable")


def inputs_of(request: Any) -> tuple[str, ...]:
    """The untrusted inputs of a call: its user messages (the review, the paper, titles, abstracts), given to the
    answer readers so that what an answer quotes from them never decides
    (:func:`surveyalign.prompts.read_json_answer`)."""
    return tuple(m.get("content") or "" for m in (getattr(request, "messages", None) or ()) if m.get("role") == "user")


def _reader(parser, *args):
    """``(request, generation) -> reason | None`` for :meth:`Extractor.run` with one parser."""
    return lambda req, gen: answer_problem(gen, partial(parser, untrusted=inputs_of(req)), *args)


@dataclass
class ExtractionLog:
    """Per-stage counts of answers, failures, defaults and left-out items, with every reason.

    Attributes:
        counts: stage -> ``{"answers", "parsed", "parse_failed", "api_error", "defaults", "invalid_items"}``.
        failures: ``{"stage", "unit_id", "status", "reason", "answer_head"}`` for each failed answer.
        defaults: ``{"stage", "unit_id", "what"}`` for each field that fell back to its default.
        invalid: ``{"stage", "unit_id", "what"}`` for each item left out.
        notes: ``{"stage", "unit_id", "what"}`` for each problem the JSON reader tolerated but reported (text
            around the object, duplicate keys).
    """

    counts: dict[str, dict[str, int]] = field(default_factory=dict)
    failures: list[dict[str, Any]] = field(default_factory=list)
    defaults: list[dict[str, str]] = field(default_factory=list)
    invalid: list[dict[str, str]] = field(default_factory=list)
    notes: list[dict[str, str]] = field(default_factory=list)

    def read(self, stage: str, unit_id: str, gen: Generation, parser, *args,
             untrusted: Sequence[str] | None = None) -> Parsed:
        """Parse one answer with ``parser`` and record the outcome (truncated / refused answers are failures).

        Args:
            stage: the extraction stage (one of ``prism.prompts.STAGES``).
            unit_id: what the call was about (review id, claim / flaw id).
            gen: the backend's answer.
            parser: a ``prism.parsing.parse_*`` function.
            *args: extra arguments of ``parser`` (e.g. the entry count of a flaw merge).
            untrusted: the call's inputs (:func:`inputs_of`); what the answer quotes from them never decides.

        Returns:
            The :class:`~surveyalign.prism.parsing.Parsed` (``error`` set for API errors and non-final answers).
        """
        entry = self.counts.setdefault(stage, dict.fromkeys(
            ("answers", "parsed", "parse_failed", "api_error", "defaults", "invalid_items"), 0))
        entry["answers"] += 1
        if not gen.ok:
            parsed, status = Parsed(error=gen.error), "api_error"
        elif (not_final := answer_failure(gen, "JSON object")) is not None:  # truncated or refused: never parsed
            parsed, status = Parsed(error=not_final), "parse_failed"
        else:
            parsed = parser(gen.text, *args, untrusted=untrusted)
            status = "parsed" if parsed.ok else "parse_failed"
        entry[status] += 1
        if status != "parsed":
            self.failures.append({"stage": stage, "unit_id": unit_id, "status": status, "reason": parsed.error,
                                  "answer_head": (gen.text or "")[:300]})
        entry["defaults"] += len(parsed.defaults)
        entry["invalid_items"] += len(parsed.invalid)
        self.defaults += [{"stage": stage, "unit_id": unit_id, "what": d} for d in parsed.defaults]
        self.invalid += [{"stage": stage, "unit_id": unit_id, "what": d} for d in parsed.invalid]
        self.notes += [{"stage": stage, "unit_id": unit_id, "what": d} for d in parsed.notes]
        return parsed

    def note_default(self, stage: str, unit_id: str, what: str) -> None:
        """Record a pipeline-level default (e.g. flaws kept unmerged after a failed merge)."""
        self.counts.setdefault(stage, dict.fromkeys(
            ("answers", "parsed", "parse_failed", "api_error", "defaults", "invalid_items"), 0))["defaults"] += 1
        self.defaults.append({"stage": stage, "unit_id": unit_id, "what": what})

    @property
    def n_failed(self) -> int:
        """All failed answers (parse failures + API errors) over stages."""
        return len(self.failures)


@dataclass
class PaperUnits:
    """Everything extracted for one paper: per-review units, the flaw pool, prior work and the log.

    Attributes:
        adus, claims, comments: review id -> units, or the failure reason (str) when the step failed.
        review_flaws: review id -> its flaws ``{text, quote, section, pool_id}``, or the failure reason.
        pool: the pooled, validated flaws (``Flaw.raised_by`` = exact review ids).
        priors: the retrieved prior papers (empty without retrieval).
        novelty_note: why novelty was not assessed (None when it was).
        log: the :class:`ExtractionLog`.
        validation_read: what flaw validation read of the paper (:func:`validation_text`'s record), ``None``
            when no flaw was validated.
    """

    adus: dict[str, Any] = field(default_factory=dict)
    claims: dict[str, Any] = field(default_factory=dict)
    comments: dict[str, Any] = field(default_factory=dict)
    review_flaws: dict[str, Any] = field(default_factory=dict)
    pool: list[Flaw] = field(default_factory=list)
    priors: list[PriorPaper] = field(default_factory=list)
    novelty_note: str | None = None
    log: ExtractionLog = field(default_factory=ExtractionLog)
    validation_read: dict[str, Any] | None = None


_PER_REVIEW = (("adu", parse_adus), ("novelty_claims", parse_claims), ("flaws", parse_flaws),
               ("comments", parse_comments))


def _review_calls(paper: Submission, review: Review, rubric: str) -> list[CallRequest]:
    fields = {"adu": {"review": review.core_text(), "rubric": rubric},
              "novelty_claims": {"review": review.text, "title": paper.title},
              "flaws": {"review": review.text}, "comments": {"review": review.text}}
    return [CallRequest(stage, review.review_id, build_messages(stage, **fields[stage])) for stage, _ in _PER_REVIEW]


def _judge_pairs(paper: Submission, units: PaperUnits, extractor: Extractor, retriever: PriorWorkRetriever,
                 pairs_per_claim: int) -> None:
    texts = [t for got in units.claims.values() if isinstance(got, list) for t, _ in got]
    try:
        units.priors = retriever.retrieve(paper, [paper.title, *texts]) if texts else []
    except UnreachableError:
        raise  # a wrong API URL or no network: every later paper would fail the same way
    except Exception as err:  # noqa: BLE001 - an API failing for good: recorded, novelty not assessed
        reason = f"prior-work retrieval failed: {type(err).__name__}: {err}"
        units.novelty_note = reason
        units.log.failures.append({"stage": "retrieval", "unit_id": paper.paper_id, "status": "api_error",
                                   "reason": reason, "answer_head": ""})
        units.log.counts.setdefault("retrieval", {"answers": 0, "parsed": 0, "parse_failed": 0, "api_error": 1,
                                                  "defaults": 0, "invalid_items": 0})
        for rid, got in units.claims.items():
            if isinstance(got, list):
                units.claims[rid] = reason
        return
    plan: list[tuple[str, int, PriorPaper, float]] = []
    for rid, got in units.claims.items():
        if not isinstance(got, list):
            continue
        for c, (text, _) in enumerate(got):
            rel = retriever.relevance(text, units.priors) if units.priors else []
            best = sorted(range(len(rel)), key=lambda j: -rel[j])[:pairs_per_claim]
            plan += [(rid, c, units.priors[j], rel[j]) for j in best]
    requests = [CallRequest("novelty_pair", f"{rid}#claim{c}#{prior.paper_id}", build_messages(
        "novelty_pair", claim=units.claims[rid][c][0], stance=units.claims[rid][c][1], paper_title=paper.title,
        prior_title=prior.title, prior_abstract=prior.abstract, prior_year=prior.year))
        for rid, c, prior, _ in plan]
    verdicts: dict[tuple[str, int], list[PairVerdict | None]] = {}
    for (rid, c, prior, rel), req, gen in zip(plan, requests, extractor.run(requests, "novelty pairs",
                                                                             read=_reader(parse_verdict)), strict=True):
        parsed = units.log.read("novelty_pair", req.unit_id, gen, parse_verdict, untrusted=inputs_of(req))
        verdicts.setdefault((rid, c), []).append(PairVerdict(parsed.value, rel, prior.paper_id) if parsed.ok else None)
    for rid, got in list(units.claims.items()):
        if not isinstance(got, list):
            continue
        kept = []
        for c, (text, stance) in enumerate(got):
            judged = verdicts.get((rid, c), [])
            if judged and not any(judged):  # every pair failed: the claim is unverified, never scored 0
                units.log.note_default("novelty_pair", f"{rid}#claim{c}", "every pair verdict failed: claim left out")
                continue
            kept.append(NoveltyClaim(text, stance, [v for v in judged if v is not None]))
        units.claims[rid] = kept if kept or not got else "novelty_pair failed: no verdict for any claim of the review"


def validation_text(paper: Submission, extractor: Extractor, max_paper_chars: int, flaws: Sequence[str]
                    ) -> tuple[str, dict[str, Any]]:
    """The part of the paper text flaw validation reads, and a record of it.

    The text is cut at ``max_paper_chars`` characters, then, when the extractor's model context is known
    (:func:`surveyalign.judge.model_context`: a local model's, or an API server's ``max_model_len``), to fit that
    context with ``max_new_tokens`` kept for the answer, for the longest of ``flaws``' prompts: by the one token
    fitter (:func:`surveyalign.documents.fit_texts`) when the backend has a tokenizer with a chat template, else by
    the 4-characters-per-token estimate over the prompt's other characters. A prompt is never sent past a known
    context because of the paper text.

    Args:
        paper: the paper under review.
        extractor: the backend and settings of the calls.
        max_paper_chars: the character cap (>= 1).
        flaws: the flaw texts that will be validated (each call holds one).

    Returns:
        ``(text, record)``; record: ``{"chars_read", "paper_chars", "cut_by"}`` with ``cut_by`` one of
        ``"max_paper_chars"``, ``"context"`` or ``None`` (whole), and ``"context"`` (tokens, or ``None``).
    """
    from surveyalign.documents import fit_texts
    from surveyalign.judge import CHARS_PER_TOKEN, model_context
    from surveyalign.prompts import count_chat_tokens

    text = paper.text[:max_paper_chars]
    cut_by = "max_paper_chars" if len(text) < len(paper.text) else None
    backend = extractor.backend
    context = model_context(backend) if getattr(backend, "answers_from_model", True) else None
    if context is not None and flaws:
        longest = max(flaws, key=len)

        def build(texts: Sequence[str]) -> list[dict[str, Any]]:
            return build_messages("flaw_validation", flaw=longest,
                                  paper=f"{paper.title}\n\n{paper.abstract}\n\n{texts[0]}")

        budget = context - extractor.settings.max_new_tokens
        tokenizer = getattr(backend, "tokenizer", None)
        if tokenizer is not None and getattr(tokenizer, "chat_template", None):
            def count(texts: Sequence[str]) -> int:
                return count_chat_tokens(tokenizer, build(texts), enable_thinking=extractor.settings.enable_thinking,
                                         add_generation_prompt=True)

            fitted = fit_texts([text], count, tokenizer, budget)
            fit = fitted.texts[0] if fitted.texts is not None else ""
        else:
            other = sum(len(m.get("content") or "") for m in build([""]))
            fit = text[:max(0, budget * CHARS_PER_TOKEN - other)]
        if len(fit) < len(text):
            text, cut_by = fit, "context"
    return text, {"chars_read": len(text), "paper_chars": len(paper.text), "cut_by": cut_by, "context": context}


def _pool_flaws(paper: Submission, units: PaperUnits, extractor: Extractor, max_paper_chars: int) -> None:
    entries = [(rid, i, f) for rid, got in units.review_flaws.items() if isinstance(got, list)
               for i, f in enumerate(got)]
    groups = [[k] for k in range(len(entries))]
    if len(entries) > 1:
        req = CallRequest("flaw_merge", paper.paper_id, build_messages(
            "flaw_merge", flaws=[f"[{rid}] {f['text']}" for rid, _, f in entries]))
        parsed = units.log.read("flaw_merge", paper.paper_id, extractor.run([req], "flaw merge",
                                                                                 _reader(parse_groups, len(entries)))[0],
                                parse_groups, len(entries), untrusted=inputs_of(req))
        if parsed.ok:
            groups = parsed.value
        else:
            units.log.note_default("flaw_merge", paper.paper_id, "merge failed: every flaw kept as its own entry")
    body, units.validation_read = validation_text(paper, extractor, max_paper_chars,
                                                  [entries[group[0]][2]["text"] for group in groups])
    requests = [CallRequest("flaw_validation", f"{paper.paper_id}#F{g}", build_messages(
        "flaw_validation", flaw=entries[group[0]][2]["text"], paper=f"{paper.title}\n\n{paper.abstract}\n\n{body}"))
        for g, group in enumerate(groups)]
    for g, (group, req, gen) in enumerate(zip(groups, requests, extractor.run(requests, "flaw validation",
                                                                                      _reader(parse_validation)),
                                              strict=True)):
        parsed = units.log.read("flaw_validation", req.unit_id, gen, parse_validation, untrusted=inputs_of(req))
        valid, severity = parsed.value if parsed.ok else (None, "none")
        flaw_id = f"F{g}"
        units.pool.append(Flaw(flaw_id, entries[group[0]][2]["text"], severity, valid,
                               frozenset(entries[k][0] for k in group)))
        for k in group:
            entries[k][2]["pool_id"] = flaw_id


def extract_units(paper: Submission, reviews: Sequence[Review], extractor: Extractor, *,
                  retriever: PriorWorkRetriever | None = None, grounding_rubric: str = "seed",
                  pairs_per_claim: int = 3, max_paper_chars: int = 30000) -> PaperUnits:
    """Run every PRISM extraction step for one paper and its reviews.

    Args:
        paper: the paper under review.
        reviews: its reviews (unique ``review_id``s), human and system.
        extractor: the backend + cache the calls go through.
        retriever: prior-work retrieval for novelty (None: novelty is not assessed and says so).
        grounding_rubric: ``"seed"`` (default) or ``"specificity"`` (see ``prism.prompts.GROUNDING_RUBRICS``).
        pairs_per_claim: prior papers judged per novelty claim (the most relevant ones; PRISM scores the top 3).
        max_paper_chars: paper characters shown to flaw validation.

    Returns:
        :class:`PaperUnits`.

    Raises:
        ValueError: duplicate review ids or an unknown grounding rubric.
    """
    ids = [r.review_id for r in reviews]
    if len(set(ids)) != len(ids):
        raise ValueError(f"review ids must be unique; repeated: {sorted({i for i in ids if ids.count(i) > 1})}")
    if grounding_rubric not in GROUNDING_RUBRICS:
        raise ValueError(f"unknown grounding rubric {grounding_rubric!r}; choose one of {sorted(GROUNDING_RUBRICS)}")
    units = PaperUnits()
    requests = [req for review in reviews for req in _review_calls(paper, review, grounding_rubric)]
    parsers = dict(_PER_REVIEW)
    targets = {"adu": units.adus, "novelty_claims": units.claims, "flaws": units.review_flaws,
               "comments": units.comments}
    def problem(req: Any, gen: Generation) -> str | None:
        return answer_problem(gen, partial(parsers[req.stage], untrusted=inputs_of(req)))

    for req, gen in zip(requests, extractor.run(requests, "review units", problem), strict=True):
        parsed = units.log.read(req.stage, req.unit_id, gen, parsers[req.stage], untrusted=inputs_of(req))
        targets[req.stage][req.unit_id] = parsed.value if parsed.ok else f"{req.stage} failed: {parsed.error}"
    if retriever is None:
        units.novelty_note = "no prior-work retrieval configured: novelty not assessed"
        for rid in units.claims:
            if isinstance(units.claims[rid], list):
                units.claims[rid] = units.novelty_note
    else:
        _judge_pairs(paper, units, extractor, retriever, pairs_per_claim)
    _pool_flaws(paper, units, extractor, max_paper_chars)
    return units

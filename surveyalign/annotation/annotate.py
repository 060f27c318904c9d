"""LLM pre-annotation of review reports (SurveyReview §4.3, App. A): one cached call per (survey, review).

For every review, K samples (default 1) of :func:`~surveyalign.annotation.prompt.build_annotation_messages`
go through the project's cached caller (``calls.jsonl`` in the output folder: a re-run makes only the calls
still missing or failed). Per dimension the label is the majority over the samples that gave one (a tie goes
to the tied label that came first in sample order, marked ``tie``); the snippets are those of the first sample
with the winning label, each checked against the review (:func:`~surveyalign.annotation.snippets.locate_snippet`).

Failures are kept: a review whose every call failed has status ``api_error``; a dimension no sample labelled
has label None with status ``parse_failed`` and the reasons; snippets not verbatim in the review are flagged
(``near`` / ``missing``), counted and listed in the report (``flagged_snippets``: review, dimension, status, the
annotator's text, the closest window's offsets), never stored as verbatim.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from surveyalign.backends import Backend, GenerationSettings
from surveyalign.calls import CallCache, backend_identity, cached_generate, make_call
from surveyalign.constants import DIMENSIONS
from surveyalign.paths import unique_output_names

from .prompt import PROMPT_VERSION, build_annotation_messages, read_annotation
from .records import GUIDELINE_VERSION, LABELS, ReviewRecord, read_jsonl, write_jsonl
from .snippets import SNIPPET_STATUSES, locate_snippet, span_text

#: Stage name of the pre-annotation calls in ``calls.jsonl``.
STAGE = "annotate"
#: Namespace of these calls in the call-cache key (``surveyalign.calls``).
NAMESPACE = "annotation.annotate"
#: Review statuses of ``annotations.jsonl``.
REVIEW_STATUSES: tuple[str, ...] = ("ok", "partial", "parse_failed", "api_error")


def vote_label(labels: Sequence[int | None]) -> tuple[int | None, dict[str, int], bool]:
    """Majority label of K samples.

    Args:
        labels: one label (or None: the sample gave none) per sample, in sample order.

    Returns:
        ``(label, votes, tie)``: the winning label (None when no sample gave one), the vote count per label
        (``{"-1": 2, "1": 1}``), and whether the top count was shared (the tied label seen first wins).
    """
    given = [x for x in labels if x is not None]
    if not given:
        return None, {}, False
    counts = Counter(given)
    top = max(counts.values())
    tied = [x for x in given if counts[x] == top]
    return tied[0], {str(k): v for k, v in sorted(counts.items())}, len(set(tied)) > 1


@dataclass
class AnnotateResult:
    """What :func:`annotate_reviews` wrote.

    Attributes:
        records: one ``annotations.jsonl`` record per review of this run (see :func:`annotate_reviews`); the file
            also keeps, after them, an earlier run's records of reviews not in this run (``report["carried_over"]``).
        report: the counts written to ``annotate_report.json``.
    """

    records: list[dict[str, Any]] = field(default_factory=list)
    report: dict[str, Any] = field(default_factory=dict)


def _unreadable(call: Any, generation: Any) -> str | None:
    """The call layer's ``check``: why a cached answer is unusable (no dimension got a label), else ``None``."""
    parsed = read_annotation(generation.text, untrusted=tuple(
        m.get("content") or "" for m in (getattr(call, "messages", None) or ()) if m.get("role") == "user"))
    if any(d.label is not None for d in parsed.dimensions.values()):
        return None
    return "; ".join(parsed.problems) or "no dimension labelled"


def unique_reviews(reviews: Sequence[ReviewRecord]) -> tuple[list[ReviewRecord], list[str]]:
    """One record per distinct review, each under its own id (:func:`surveyalign.paths.unique_output_names`).

    A review given twice (same id, paper and text) is annotated once; different reviews that share an id (two
    collected folders numbering their reviews alike) each get the id plus ``-`` and 8 hex digits of their text's
    SHA-256, so neither replaces the other's line in ``annotations.jsonl`` or its Label Studio task. Ids that are
    unique are kept exactly (the human annotations refer to them).

    Args:
        reviews: the reviews as read, in order.

    Returns:
        ``(reviews, messages)``: the reviews to annotate, in order, and one line per merged or renamed review.
    """
    keys = [f"{r.review_id}\x00{r.paper_id}\x00{r.text}" for r in reviews]
    names = unique_output_names([r.review_id for r in reviews], keys, fallback="review")
    by_id: dict[str, list[int]] = {}
    for i in names.keep:
        by_id.setdefault(reviews[i].review_id, []).append(i)
    messages = [f"review {reviews[i].review_id!r} (paper {reviews[i].paper_id}): repeated; annotated once"
                for i in sorted(names.merged)]
    out = []
    for i in names.keep:
        review = reviews[i]
        if len(by_id[review.review_id]) > 1:
            new_id = f"{review.review_id}-{hashlib.sha256(review.text.encode('utf-8')).hexdigest()[:8]}"
            messages.append(f"review {review.review_id!r} (paper {review.paper_id}): another review has the same "
                            f"id; annotated as {new_id!r}")
            review = dataclasses.replace(review, review_id=new_id)
        out.append(review)
    return out, messages


def annotate_reviews(reviews: Sequence[ReviewRecord], backend: Backend, settings: GenerationSettings, *,
                     out: str | os.PathLike | None = None, samples: int = 1, titles: dict[str, str] | None = None,
                     judge: dict[str, Any] | None = None, progress: bool = False) -> AnnotateResult:
    """Pre-annotate every review with an LLM (SurveyReview §4.3, App. A).

    Args:
        reviews: the review records (``reviews.jsonl`` of ``surveyalign data collect``).
        backend: any backend (``surveyalign.backends``); a scripted one in tests.
        settings: its generation settings; sample k uses seed ``settings.seed + k``.
        out: output folder: ``calls.jsonl`` (cache, resumable), ``annotations.jsonl``, ``annotate_report.json``;
            None keeps everything in memory (no cache).
        samples: K >= 1 samples per review; the label is their majority per dimension.
        titles: ``{paper_id: title}`` shown in the prompt.
        judge: the judge description recorded in the report (default: the backend identity).
        progress: show a progress bar.

    Returns:
        An :class:`AnnotateResult`. Each record: ``review_id``, ``paper_id``, ``source``, ``annotator``
        (``"llm"``), ``status`` (:data:`REVIEW_STATUSES`), ``dimensions`` ``{dim: {label, status, votes, tie,
        snippets: [{text, status, start, end, score, verbatim, span}], problems}}``, ``samples`` (raw answers, errors,
        problems).

    Raises:
        ValueError: ``samples`` < 1.
    """
    if samples < 1:
        raise ValueError(f"samples must be >= 1, got {samples}")
    titles = titles or {}
    identity = backend_identity(backend)
    calls = []
    for review in reviews:
        messages = build_annotation_messages(review.text, title=titles.get(review.paper_id, ""))
        for k in range(samples):
            calls.append(make_call(backend, settings.model_copy(update={"seed": settings.seed + k}), stage=STAGE,
                                   unit_id=review.review_id, namespace=NAMESPACE, messages=messages, sample=k,
                                   identity=identity))
    cache = None
    if out is not None:
        Path(out).mkdir(parents=True, exist_ok=True)
        cache = CallCache.load(Path(out) / "calls.jsonl")
    try:
        # an answer with no label at all (no JSON, nothing readable) is asked again on a re-run
        answers = cached_generate(calls, cache, progress=progress, desc="annotate", check=_unreadable)
    finally:
        if cache is not None:
            cache.close()
    result = AnnotateResult()
    label_counts = {d: Counter() for d in DIMENSIONS}
    snippet_counts = Counter()
    flagged: list[dict[str, Any]] = []
    statuses = Counter()
    cached = sum(a.cached for a in answers)
    for i, review in enumerate(reviews):
        got = answers[i * samples:(i + 1) * samples]
        parsed = [None if a.generation.error else read_annotation(a.generation.text, untrusted=(review.text,))
                  for a in got]
        sample_log = [{"sample": k, "text": a.generation.text, "error": a.generation.error,
                       "finish_reason": a.generation.finish_reason, "cached": a.cached,
                       "problems": list(p.problems) if p else []} for k, (a, p) in enumerate(zip(got, parsed))]
        dims: dict[str, Any] = {}
        for dim in DIMENSIONS:
            dims[dim] = _vote_dimension(dim, parsed, got, review, label_counts, snippet_counts, flagged)
        n_labelled = sum(d["status"] == "labelled" for d in dims.values())
        if all(p is None for p in parsed):
            status = "api_error"
        elif n_labelled == len(DIMENSIONS):
            status = "ok"
        else:
            status = "partial" if n_labelled else "parse_failed"
        statuses[status] += 1
        result.records.append({"review_id": review.review_id, "paper_id": review.paper_id, "source": review.source,
                               "annotator": "llm", "status": status, "dimensions": dims, "samples": sample_log})
    result.report = {
        "reviews": len(reviews),
        "samples_per_review": samples,
        "calls": len(calls),
        "calls_cached": cached,
        "calls_failed": sum(1 for a in answers if a.generation.error),
        "review_status": {s: statuses[s] for s in REVIEW_STATUSES},
        "labels": {d: {str(x): label_counts[d][x] for x in LABELS} for d in DIMENSIONS},
        "dimensions_without_label": {d: sum(1 for r in result.records if r["dimensions"][d]["label"] is None)
                                     for d in DIMENSIONS},
        "snippets": {s: snippet_counts[s] for s in SNIPPET_STATUSES},
        "snippets_flagged": snippet_counts["near"] + snippet_counts["missing"],
        "flagged_snippets": flagged,
        "prompt_version": PROMPT_VERSION,
        "guideline_version": GUIDELINE_VERSION,
        "judge": judge or identity,
        "settings": settings.model_dump(),
        # how many answers came from calls.jsonl, were asked again (cached failed), were new
        "answers": dict(cache.counts) if cache is not None else None,
    }
    if out is not None:
        import json

        # annotations of reviews not in this run (an earlier run on other reviews into the same OUT)
        # are kept after this run's records, never dropped
        kept = _earlier_records(Path(out) / "annotations.jsonl", {r["review_id"] for r in result.records})
        result.report["carried_over"] = len(kept)
        write_jsonl(Path(out) / "annotations.jsonl", [*result.records, *kept])
        (Path(out) / "annotate_report.json").write_text(json.dumps(result.report, indent=2, ensure_ascii=False)
                                                        + "\n", encoding="utf-8")
    return result


def _earlier_records(path: Path, ids: set[str]) -> list[dict[str, Any]]:
    """The records of ``path`` (an earlier run's ``annotations.jsonl``) whose review is not in ``ids``; none when
    the file is absent or unreadable (a torn file is rewritten by this run)."""
    if not path.exists():
        return []
    try:
        return [r for r in read_jsonl(path) if r.get("review_id") not in ids]
    except (OSError, ValueError):
        return []


def _vote_dimension(dim: str, parsed: list[Any], got: list[Any], review: Any, label_counts: dict[str, Counter],
                    snippet_counts: Counter, flagged: list[dict[str, Any]]) -> dict[str, Any]:
    """One review's label on ``dim``: the K samples' vote, the winning sample's snippets located in the review
    (a snippet not found verbatim is added to ``flagged`` for a person); the counts are updated.

    Returns:
        ``{"label", "status" ("labelled" | "api_error" | "parse_failed"), "votes", "tie", "snippets", "problems"}``.
    """
    answers_d = [p.dimensions[dim] if p else None for p in parsed]
    label, votes, tie = vote_label([a.label if a else None for a in answers_d])
    problems = sorted({a.problem for a in answers_d if a and a.problem})
    if label is None:
        status = "api_error" if all(p is None for p in parsed) else "parse_failed"
        return {"label": None, "status": status, "votes": votes, "tie": False, "snippets": [],
                "problems": problems or [a.generation.error or "" for a in got][:1]}
    first = next(a for a in answers_d if a and a.label == label)
    located = [locate_snippet(s, review.text) for s in first.snippets]
    matches = [{**m.to_json(), "span": span_text(review.text, m)} for m in located]
    for m in matches:
        snippet_counts[m["status"]] += 1
        if not m["verbatim"]:  # listed for a person: where the closest window is, if any
            flagged.append({"review_id": review.review_id, "dimension": dim, "status": m["status"],
                            "text": m["text"], "start": m["start"], "end": m["end"], "score": m["score"]})
    if label not in (0,) and not matches:
        problems.append(f"{dim}: label {label} given without a snippet")
    label_counts[dim][label] += 1
    return {"label": label, "status": "labelled", "votes": votes, "tie": tie, "snippets": matches,
            "problems": problems}

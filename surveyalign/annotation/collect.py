"""Collect the review reports of the confirmed surveys into one record per (survey, review) (SurveyReview §4.1).

``surveyalign data collect`` reads every review file (:mod:`surveyalign.annotation.sources`), keeps the papers
a person confirmed in the verification file of ``surveyalign data identify`` (all papers when none is given),
numbers the reviewers of each paper (one number per distinct reviewer, across versions), gives every review
its release uid ``"<source>-<paper>-<version>-r<reviewer>"``, attaches the survey texts (from JATS, or from
``--texts``: markdown / LaTeX / PDF read by the documents layer with the leakage guard on) and checks that no
review sentence is left in a survey text. Output: ``surveys.jsonl``, ``reviews.jsonl``, ``collect_report.json``.
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from surveyalign.documents import DOCUMENT_SUFFIXES, find_verbatim, read_document
from surveyalign.paths import inside_folder

from .fetched import is_fetch_output, read_fetched_texts
from .records import ReviewRecord, SurveyRecord, paper_key, review_uid, write_jsonl
from .sources import SourceFile, read_source

_REVIEW_SUFFIXES = (".xml", ".json", ".txt", ".md")
#: Review sentences at least this long (characters) are looked for in the survey text (the leak check).
_MIN_SENTENCE = 40


@dataclass
class CollectResult:
    """What :func:`collect_reviews` produced.

    Attributes:
        surveys: one record per kept survey.
        reviews: one record per kept review.
        report: counts per source and stage, skipped records with reasons, leak check.
    """

    surveys: list[SurveyRecord] = field(default_factory=list)
    reviews: list[ReviewRecord] = field(default_factory=list)
    report: dict[str, Any] = field(default_factory=dict)


def review_files(paths: Iterable[str | os.PathLike]) -> list[Path]:
    """The review files named or found (recursively, sorted) under ``paths``.

    Raises:
        FileNotFoundError: a path does not exist.
    """
    out: list[Path] = []
    for p in map(Path, paths):
        if not p.exists():
            raise FileNotFoundError(f"review path {p} does not exist")
        out.extend(sorted(f for f in inside_folder(p, p.rglob("*"), "review folder")
                          if f.is_file() and f.suffix in _REVIEW_SUFFIXES) if p.is_dir() else [p])
    return out


def _norm_id(value: str) -> str:
    return re.sub(r"[^a-z0-9]", "", str(value).lower())


def read_texts(folder: str | os.PathLike) -> dict[str, tuple[str, str]]:
    """Survey texts named by paper id: ``{normalised file stem: (markdown, file name)}`` for every document in
    ``folder`` (not recursive) that ``surveyalign.documents.read_document`` reads (markdown, LaTeX, PDF, JATS), with
    the leakage guard applied.

    Raises:
        FileNotFoundError: no such folder.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"texts folder {folder} does not exist")
    out: dict[str, tuple[str, str]] = {}
    for f in inside_folder(folder, sorted(folder.iterdir()), "texts folder"):
        if f.suffix not in DOCUMENT_SUFFIXES:
            continue
        text = read_document(f).text  # markdown, LaTeX, PDF or JATS; the leakage guard on
        out[_norm_id(f.stem)] = (text, f.name)
    return out


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+|\n{2,}", text) if len(s.strip()) >= _MIN_SENTENCE]


def _set_source(sf: SourceFile, source: str) -> None:
    """Give a plain-text file's paper and reports the source ``source`` (and the paper key that goes with it)."""
    sf.survey.source = source
    sf.survey.paper_id = paper_key(source, sf.raw_id)
    for rev in sf.reviews:
        rev.source, rev.paper_id = source, sf.survey.paper_id


def collect_reviews(paths: Sequence[str | os.PathLike], *, confirmed: set[str] | None = None,
                    texts: str | os.PathLike | None = None, text_source: str | None = None,
                    out: str | os.PathLike | None = None, candidates: Sequence[dict[str, Any]] = (),
                    verification: dict[str, Any] | None = None) -> CollectResult:
    """Read, filter and number the review reports (see the module docstring).

    Args:
        paths: review files or folders (JATS XML, OpenReview forum JSON, MOPRD / PeerJ JSON, plain text).
        confirmed: ids of the confirmed surveys (candidate ids or DOIs, compared without case and punctuation);
            None keeps every paper.
        texts: folder of survey texts named ``<paper id>.md`` (or ``.txt``, ``.tex``, ``.pdf``) for papers whose
            file carries no text (OpenReview, MOPRD, plain text); or the output of ``surveyalign data fetch-texts``
            (:func:`~surveyalign.annotation.fetched.read_fetched_texts`: texts found by DOI, forum or uid). A
            paper is matched by its candidate id, its DOI, then its paper key.
        text_source: source of plain-text reports whose candidate gives none (None: "unknown"). A plain report's
            paper (its folder name) takes its candidate's ``source`` first; counted in the report under
            ``plain_text_reports_source_from``.
        out: output folder (``surveys.jsonl``, ``reviews.jsonl``, ``collect_report.json``); None = in memory.
        candidates: the candidate rows of ``surveyalign data identify`` (``candidates.jsonl``: ``id``, ``title``,
            ``abstract``, ``doi``, ``source``; or the rows of ``verification.csv``): a paper whose review file gives no title / abstract / DOI (plain-text reports,
            a forum without abstract) takes them from its candidate, matched by id or DOI; counted in the report.
        verification: stage-3 counts (:func:`~surveyalign.annotation.identify.verification_counts`), kept as the
            report's ``verification``.

    Returns:
        A :class:`CollectResult`.

    Raises:
        FileNotFoundError: a path or the texts folder does not exist.
        ValueError: a malformed review file (file, record and field named).
    """
    files = review_files(paths)
    by_candidate: dict[str, dict[str, Any]] = {}
    for row in candidates:
        for name in (row.get("id"), row.get("doi")):
            if name and _norm_id(str(name)):
                by_candidate.setdefault(_norm_id(str(name)), row)
    text_sources: Counter = Counter()
    sources: list[SourceFile] = []
    for f in files:
        sf = read_source(f, text_source=text_source or "unknown")
        if sf.format == "text":  # a plain report carries no source: its candidate's, else --text-source
            given = str((by_candidate.get(_norm_id(sf.raw_id)) or {}).get("source") or "").strip().lower()
            if given and given != "unknown":
                _set_source(sf, given)
                text_sources["candidate"] += len(sf.reviews)
            else:
                text_sources["text_source" if text_source else "unknown"] += len(sf.reviews)
        sources.append(sf)
    wanted = {_norm_id(c) for c in confirmed} if confirmed is not None else None
    if texts and is_fetch_output(texts):
        text_files = read_fetched_texts(texts)  # converted and guarded by fetch-texts
    else:
        text_files = read_texts(texts) if texts else {}
    surveys: dict[str, SurveyRecord] = {}
    by_paper: dict[str, list[ReviewRecord]] = defaultdict(list)
    per_source: dict[str, Counter] = defaultdict(Counter)
    skipped: list[str] = []
    not_confirmed: list[str] = []
    for sf in sources:
        s = sf.survey
        per_source[s.source]["files"] += 1
        skipped.extend(f"{sf.path.name}: {why}" for why in sf.skipped)
        per_source[s.source]["records_skipped"] += len(sf.skipped)
        ids = {_norm_id(sf.raw_id), _norm_id(s.doi), _norm_id(s.paper_id)} - {""}
        if wanted is not None and not ids & wanted:
            not_confirmed.append(f"{sf.path.name} ({s.paper_id})")
            per_source[s.source]["reviews_not_confirmed"] += len(sf.reviews)
            continue
        known = surveys.get(s.paper_id)
        if known is None:
            surveys[s.paper_id] = s
        else:  # several files of one paper (versions, a forum plus a text): keep the first non-empty fields
            for name in ("title", "abstract", "text", "text_from", "doi"):
                if not getattr(known, name) and getattr(s, name):
                    setattr(known, name, getattr(s, name))
        s = surveys[s.paper_id]
        s.candidate_id = s.candidate_id or sf.raw_id
        by_paper[s.paper_id].extend(sf.reviews)
    from_candidates = _complete_surveys(surveys, text_files, by_candidate)
    reviews, duplicates = _number_reviews(by_paper)
    leaks = _reviews_in_survey_text(reviews, surveys)  # no review sentence may remain in its survey's text
    for rev in reviews:
        per_source[rev.source]["reviews"] += 1
    for s in surveys.values():
        per_source[s.source]["surveys"] += 1
        per_source[s.source]["surveys_with_text"] += bool(s.text)
    result = CollectResult(sorted(surveys.values(), key=lambda s: s.paper_id), reviews)
    result.report = {
        "files": len(files),
        "surveys": len(surveys),
        "reviews": len(reviews),
        "surveys_without_text": sorted(s.paper_id for s in surveys.values() if not s.text),
        "surveys_without_reviews": sorted(p for p in surveys if not any(r.paper_id == p for r in reviews)),
        "per_source": {src: dict(c) for src, c in sorted(per_source.items())},
        "skipped_records": skipped,
        "files_not_confirmed": not_confirmed,
        "duplicate_reports": duplicates,
        "reviews_found_in_survey_text": leaks,
        "surveys_completed_from_candidates": from_candidates,
        "plain_text_reports_source_from": {k: text_sources[k] for k in ("candidate", "text_source", "unknown")},
        "verification": verification,
    }
    if out is not None:
        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
        write_jsonl(out / "surveys.jsonl", result.surveys)
        write_jsonl(out / "reviews.jsonl", result.reviews)
        (out / "collect_report.json").write_text(json.dumps(result.report, indent=2, ensure_ascii=False) + "\n",
                                                 encoding="utf-8")
    return result


def _complete_surveys(surveys: dict[str, SurveyRecord], text_files: dict[str, tuple[str, str]],
                      by_candidate: dict[str, dict[str, Any]]) -> int:
    """Fill each survey's missing text from ``--texts`` and its missing title / abstract / DOI from its candidate
    row (``verification.csv`` / candidates); returns how many surveys got a field from a candidate."""
    from_candidates = 0
    for s in surveys.values():
        if not s.text and text_files:
            hit = next((text_files[k] for k in (_norm_id(s.candidate_id), _norm_id(s.doi), _norm_id(s.paper_id))
                        if k and k in text_files), None)
            if hit:
                s.text = hit[0]
                s.text_from = hit[1] if hit[1].startswith("fetch-texts:") else f"texts:{hit[1]}"
        row = by_candidate.get(_norm_id(s.candidate_id)) or by_candidate.get(_norm_id(s.doi))
        if row:
            filled = False
            for name in ("title", "abstract", "doi"):
                if not getattr(s, name) and str(row.get(name) or "").strip():
                    setattr(s, name, str(row[name]).strip())
                    filled = True
            from_candidates += filled
    return from_candidates


def _number_reviews(by_paper: dict[str, list[ReviewRecord]]) -> tuple[list[ReviewRecord], int]:
    """Number each paper's reviewers (reviews before meta-reviews, then by date and place in the file) and give
    each review its id; a report read twice (e.g. a v2 XML repeating v1's reports) is kept once.

    Returns:
        ``(reviews, duplicates)``: the reviews in paper order, and how many repeated reports were left out.
    """
    reviews: list[ReviewRecord] = []
    duplicates = 0
    for paper in sorted(by_paper):
        numbers: dict[str, int] = {}
        seen: set[tuple[str, int, str]] = set()
        # reviews before meta-reviews, then by date and place in the file: reviewers are numbered in this order
        order = sorted(by_paper[paper], key=lambda r: (r.version, r.kind == "meta_review", r.date,
                                                       r.provenance.get("element", "")))
        for rev in order:
            key = (rev.reviewer or rev.provenance.get("element", ""), rev.version, rev.text)
            if key in seen:  # the same report read from two files (e.g. a v2 XML repeating v1's reports)
                duplicates += 1
                continue
            seen.add(key)
            who = rev.reviewer or f"anonymous-{rev.provenance.get('element', '')}"
            if rev.kind == "meta_review":
                who = "meta:" + who
            numbers.setdefault(who, len(numbers) + 1)
            rev.reviewer_index = numbers[who]
            rev.review_id = review_uid(rev.source, paper.split("-", 1)[1], rev.version, rev.reviewer_index)
            reviews.append(rev)
    return reviews, duplicates


def _reviews_in_survey_text(reviews: list[ReviewRecord], surveys: dict[str, SurveyRecord]) -> list[str]:
    """Ids of the reviews one of whose sentences stands verbatim in their survey's text (a leak to report)."""
    leaks: list[str] = []
    for rev in reviews:
        text = surveys[rev.paper_id].text
        if not text:
            continue
        sentences = _sentences(rev.text)
        hits = find_verbatim(sentences, [text]) if sentences else []
        if any(h == 0 for h in hits):
            leaks.append(rev.review_id)
    return leaks

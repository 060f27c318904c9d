"""Find the survey papers among candidate papers (SurveyReview §4.1): keyword match, LLM screen, manual check.

Stage 1 matches the title against a keyword list (whole words, case-insensitive; high recall). Stage 2 asks any
judge (one cached call per candidate) whether title and abstract describe a survey-style article, for a yes/no
and a one-sentence reason. Stage 3 is a person: ``verification.csv`` lists every candidate with both verdicts
and a proposal; the person fills ``confirmed`` and ``substantive_reviews`` (yes / no) and ``surveyalign data
collect --verification`` keeps the rows with yes in both.
"""

from __future__ import annotations

import csv
import json
import os
import re
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from surveyalign.backends import Backend, GenerationSettings
from surveyalign.calls import CallCache, backend_identity, cached_generate, make_call
from surveyalign.csvcells import escape_row, read_csv_rows
from surveyalign.documents.untrusted import neutralise_text
from surveyalign.prompts import read_json_answer

from .records import carry_person_cells

#: Default title keywords of stage 1 (whole words or phrases, case-insensitive).
DEFAULT_KEYWORDS: tuple[str, ...] = (
    "survey", "surveys", "review", "reviews", "overview", "state of the art", "state-of-the-art", "literature",
    "meta-analysis", "systematic", "scoping", "tutorial", "advances", "progress", "perspective", "perspectives",
    "trends", "landscape", "taxonomy", "primer",
)
#: Stage name of the screening calls in ``calls.jsonl``.
STAGE = "identify"
#: Namespace of these calls in the call-cache key (``surveyalign.calls``).
NAMESPACE = "annotation.identify"
#: Prompt version of the screen (recorded in the report).
SCREEN_VERSION = "screen-v1"
#: Columns of ``verification.csv``, in order.
VERIFICATION_COLUMNS: tuple[str, ...] = (
    "id", "source", "title", "keyword_match", "keywords_found", "llm_verdict", "llm_reason", "proposed",
    "confirmed", "substantive_reviews", "note")
_YES = {"yes", "y", "true", "1", "x"}
#: Columns of ``verification.csv`` that a person fills (kept by a re-run of ``data identify``).
PERSON_COLUMNS: tuple[str, ...] = ("confirmed", "substantive_reviews", "note")


@dataclass
class Candidate:
    """One candidate paper.

    Attributes:
        id: its id in the source (F1000Research article number, OpenReview forum id, MOPRD id, DOI ...).
        title: the title.
        abstract: the abstract ("" when unknown).
        source: "f1000", "moprd", "openreview" or another name.
        doi: the DOI ("" when unknown).
    """

    id: str
    title: str
    abstract: str = ""
    source: str = "unknown"
    doi: str = ""


def read_candidates(path: str | os.PathLike) -> list[Candidate]:
    """Read a candidate list: CSV with a header, JSON lines, or a JSON array of objects with ``id`` (or ``uid`` /
    ``paper_id``), ``title`` (or ``paper_title``), ``abstract`` (or ``paper_abstract``), ``source``, ``doi``.

    Raises:
        FileNotFoundError: no such file.
        ValueError: not CSV / JSON, or a row without id or title (file and row named).
    """
    path = Path(path)
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".csv":
        rows: list[Any] = read_csv_rows(path)
    elif path.suffix == ".jsonl":
        rows = []
        for n, line in enumerate(text.splitlines(), 1):
            if line.strip():
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError as err:
                    raise ValueError(f"{path}: line {n}: not valid JSON ({err.msg})") from None
    else:
        try:
            rows = json.loads(text)
        except json.JSONDecodeError as err:
            raise ValueError(f"{path}: not valid JSON (line {err.lineno}: {err.msg})") from None
        if not isinstance(rows, list):
            raise ValueError(f"{path}: expected a JSON array of candidate objects")
    out: list[Candidate] = []
    for n, row in enumerate(rows, 1):
        if not isinstance(row, dict):
            raise ValueError(f"{path}: row {n}: expected an object")  # noqa: TRY004
        cid = next((str(row[k]).strip() for k in ("id", "uid", "paper_id") if row.get(k) not in (None, "")), "")
        title = str(row.get("title") or row.get("paper_title") or "").strip()
        if not cid:
            raise ValueError(f"{path}: row {n}: field id missing or empty")
        if not title:
            raise ValueError(f"{path}: row {n} ({cid}): field title missing or empty")
        out.append(Candidate(id=cid, title=title,
                             abstract=str(row.get("abstract") or row.get("paper_abstract") or "").strip(),
                             source=str(row.get("source") or "unknown").strip().lower(),
                             doi=str(row.get("doi") or "").strip()))
    return out


def keyword_hits(title: str, keywords: Sequence[str] = DEFAULT_KEYWORDS) -> list[str]:
    """The keywords found in ``title`` as whole words (case-insensitive), in keyword order."""
    low = title.lower()
    return [k for k in keywords if re.search(r"(?<![a-z0-9])" + re.escape(k.lower()) + r"(?![a-z0-9])", low)]


def build_screen_messages(title: str, abstract: str) -> list[dict[str, str]]:
    """The chat messages of the stage-2 screen (our wording): is this a survey-style article?"""
    content = (
        "Decide whether the paper below is a survey-style article: one whose main contribution is to collect, "
        "organise and discuss existing work on a topic (a survey, a literature or systematic review, a scoping "
        "review, a tutorial overview), as opposed to a paper that mainly reports its own new method, experiment, "
        "data or case.\n\n"
        'Answer with one JSON object and nothing else: {"survey": "yes" or "no", "reason": "<one sentence>"}.\n\n'
        f"Title: {neutralise_text(title.strip())}\n\nAbstract: {neutralise_text(abstract.strip()) or '(none given)'}"
    )
    return [{"role": "user", "content": content}]


def _shown(call: Any) -> tuple[str, ...]:
    return tuple(m.get("content") or "" for m in (getattr(call, "messages", None) or ()) if m.get("role") == "user")


def read_screen(text: str | None, untrusted: Sequence[str] | None = None) -> tuple[str, str]:
    """Read a screen answer: ``("yes" | "no", reason)``, or ``("failed", why)`` when it holds no clear verdict;
    ``untrusted`` (the title and abstract shown): a verdict the answer quotes from them is never taken."""
    answer = read_json_answer(text, untrusted=untrusted)
    if answer.data is None:
        return "failed", "; ".join(answer.problems) or "no JSON object"
    value = answer.data.get("survey", answer.data.get("verdict"))
    if isinstance(value, bool):
        value = "yes" if value else "no"
    verdict = str(value).strip().lower() if value is not None else ""
    if verdict not in ("yes", "no"):
        return "failed", f"verdict {value!r} is not yes or no"
    return verdict, str(answer.data.get("reason") or "").strip()


@dataclass
class IdentifyResult:
    """What :func:`identify_surveys` produced.

    Attributes:
        rows: one row per candidate with the :data:`VERIFICATION_COLUMNS`.
        report: counts per stage and source.
    """

    rows: list[dict[str, str]] = field(default_factory=list)
    report: dict[str, Any] = field(default_factory=dict)


def identify_surveys(candidates: Sequence[Candidate], backend: Backend | None, settings: GenerationSettings, *,
                     keywords: Sequence[str] = DEFAULT_KEYWORDS, screen_all: bool = False,
                     out: str | os.PathLike | None = None, judge: dict[str, Any] | None = None,
                     input_report: dict[str, Any] | None = None) -> IdentifyResult:
    """Run stages 1 and 2 and write the stage-3 verification file (SurveyReview §4.1).

    Args:
        candidates: the candidate papers.
        backend: the screening judge; None skips stage 2 (every verdict "not screened").
        settings: its generation settings.
        keywords: stage-1 title keywords.
        screen_all: screen every candidate, not only the keyword matches.
        out: output folder: ``verification.csv``, ``candidates.jsonl``, ``identify_report.json``, ``calls.jsonl``.
        judge: the judge description for the report.
        input_report: how the candidates were read (``read_fetched_candidates``' report), kept as the
            report's ``input``.

    Returns:
        An :class:`IdentifyResult`; ``proposed`` is "yes" when the keyword matched and the screen said yes.

    Raises:
        ValueError: two candidates share an id.
    """
    seen = Counter(c.id for c in candidates)
    dup = [k for k, v in seen.items() if v > 1]
    if dup:
        raise ValueError(f"candidate id {dup[0]!r} appears {seen[dup[0]]} times")
    hits = [keyword_hits(c.title, keywords) for c in candidates]
    to_screen = [i for i, c in enumerate(candidates) if backend is not None and (screen_all or hits[i])]
    verdicts: dict[int, tuple[str, str]] = {}
    answered: dict[str, int] | None = None
    if to_screen:
        identity = backend_identity(backend)
        calls = [make_call(backend, settings, stage=STAGE, unit_id=candidates[i].id, namespace=NAMESPACE,
                           messages=build_screen_messages(candidates[i].title, candidates[i].abstract),
                           identity=identity) for i in to_screen]
        cache = CallCache.load(Path(out) / "calls.jsonl") if out is not None else None
        try:
            # a screen answer with no clear verdict is asked again on a re-run
            answers = cached_generate(calls, cache, desc="screen",
                                      check=lambda call, gen: None if read_screen(gen.text, _shown(call))[0] != "failed"
                                      else read_screen(gen.text, _shown(call))[1])
        finally:
            if cache is not None:
                cache.close()
                answered = dict(cache.counts)
        for i, a in zip(to_screen, answers):
            verdicts[i] = ("failed", a.generation.error) if a.generation.error else read_screen(a.generation.text, (candidates[i].title, candidates[i].abstract))
    result = IdentifyResult()
    counts: dict[str, Counter] = defaultdict(Counter)
    for i, c in enumerate(candidates):
        verdict, reason = verdicts.get(i, ("not screened", ""))
        proposed = "yes" if hits[i] and verdict == "yes" else "no"
        result.rows.append({"id": c.id, "source": c.source, "title": c.title, "keyword_match": "yes" if hits[i] else "no",
                            "keywords_found": ";".join(hits[i]), "llm_verdict": verdict, "llm_reason": reason,
                            "proposed": proposed, "confirmed": "", "substantive_reviews": "", "note": ""})
        k = counts[c.source]
        k["candidates"] += 1
        k["keyword_match"] += bool(hits[i])
        k["screened"] += i in verdicts
        k[f"llm_{verdict.replace(' ', '_')}"] += 1
        k["proposed"] += proposed == "yes"
    total = Counter()
    for c in counts.values():
        total.update(c)
    result.report = {"candidates": len(candidates), "keywords": list(keywords), "screen_all": screen_all,
                     "screen_version": SCREEN_VERSION, "judge": judge, "settings": settings.model_dump(),
                     "per_source": {s: dict(c) for s, c in sorted(counts.items())}, "total": dict(total),
                     "input": input_report, "answers": answered}
    if out is not None:
        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
        # a re-run keeps what a person wrote in the file (no output overwrites another)
        written, carried = merge_verification(out / "verification.csv", result.rows)
        result.report["verification_carried_over"] = carried
        write_verification(out / "verification.csv", written)
        with (out / "candidates.jsonl").open("w", encoding="utf-8") as fh:
            for c, row in zip(candidates, result.rows):
                fh.write(json.dumps({**asdict(c), **row}, ensure_ascii=False) + "\n")
        (out / "identify_report.json").write_text(json.dumps(result.report, indent=2) + "\n", encoding="utf-8")
    return result


def merge_verification(path: str | os.PathLike, rows: Sequence[dict[str, str]]
                       ) -> tuple[list[dict[str, str]], dict[str, int]]:
    """Carry what a person wrote in an existing ``verification.csv`` into the rows of a new run.

    For every candidate still listed (matched by ``id``) the person's cells are kept: the
    :data:`PERSON_COLUMNS` and any column the person added; the machine columns come from the new run. A row
    of a candidate no longer listed whose person cells are filled is kept, unchanged, after the new rows.

    Args:
        path: the verification file (absent: nothing to carry).
        rows: the new run's rows (:data:`VERIFICATION_COLUMNS`).

    Returns:
        ``(rows to write, counts)``, counts ``{"rows_with_person_cells": rows of the new run that took filled
        cells, "kept_not_listed": filled rows of candidates no longer listed, kept}``.

    Raises:
        ValueError: the existing file has no ``id`` column, or lists an id twice (file named).
    """
    path = Path(path)
    counts = {"rows_with_person_cells": 0, "kept_not_listed": 0}
    if not path.is_file():
        return list(rows), counts
    old = read_csv_rows(path)
    if not old:
        return list(rows), counts
    if "id" not in old[0]:
        raise ValueError(f"{path}: has no 'id' column; cannot keep what a person wrote in it (move it away first)")
    person = [c for c in old[0] if c and (c in PERSON_COLUMNS or c not in VERIFICATION_COLUMNS)]
    by_id: dict[str, dict[str, str]] = {}
    for n, row in enumerate(old, 2):
        cid = (row.get("id") or "").strip()
        if cid in by_id and any((row.get(c) or "").strip() for c in person):
            raise ValueError(f"{path}: row {n}: id {cid!r} listed twice; cannot tell which person cells to keep")
        by_id.setdefault(cid, row)
    return carry_person_cells(rows, by_id, lambda r: r["id"], person)


def write_verification(path: str | os.PathLike, rows: Sequence[dict[str, str]]) -> None:
    """Write ``verification.csv``: the :data:`VERIFICATION_COLUMNS`, then any column a person added; a cell a
    spreadsheet would run as a formula is escaped (:func:`surveyalign.csvcells.escape_cell`; undone on read)."""
    extra = [k for row in rows for k in row if k and k not in VERIFICATION_COLUMNS]
    columns = list(VERIFICATION_COLUMNS) + list(dict.fromkeys(extra))
    with Path(path).open("w", encoding="utf-8", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=columns)
        writer.writeheader()
        writer.writerows(escape_row({k: row.get(k) or "" for k in columns}) for row in rows)


def _verification_statuses(path: str | os.PathLike) -> list[tuple[dict[str, str], str]]:
    """Every row of ``verification.csv`` with its status: confirmed, rejected, unchecked or no_substantive_reviews.

    Raises:
        FileNotFoundError: no such file.
        ValueError: the file lacks the ``id`` / ``confirmed`` / ``substantive_reviews`` columns.
    """
    path = Path(path)
    rows = read_csv_rows(path)
    need = {"id", "confirmed", "substantive_reviews"}
    if rows and not need <= set(rows[0]):
        raise ValueError(f"{path}: missing column(s) {sorted(need - set(rows[0]))}")
    out = []
    for row in rows:
        confirmed = (row.get("confirmed") or "").strip().lower()
        substantive = (row.get("substantive_reviews") or "").strip().lower()
        if not confirmed:
            status = "unchecked"
        elif confirmed not in _YES:
            status = "rejected"
        elif substantive not in _YES:
            status = "no_substantive_reviews"
        else:
            status = "confirmed"
        out.append((row, status))
    return out


_VERIFICATION_COUNTS = ("rows", "confirmed", "rejected", "unchecked", "no_substantive_reviews")


def read_verification(path: str | os.PathLike) -> tuple[set[str], dict[str, int]]:
    """The candidates a person confirmed: ``confirmed`` and ``substantive_reviews`` both yes.

    Returns:
        ``(ids, counts)``: the confirmed ids, and counts ``{"rows", "confirmed", "rejected", "unchecked",
        "no_substantive_reviews"}``.

    Raises:
        FileNotFoundError: no such file.
        ValueError: the file lacks the ``id`` / ``confirmed`` / ``substantive_reviews`` columns.
    """
    rows = _verification_statuses(path)
    counts = Counter(rows=len(rows))
    counts.update(status for _, status in rows)
    ids = {row["id"].strip() for row, status in rows if status == "confirmed"}
    return ids, {k: counts[k] for k in _VERIFICATION_COUNTS}


def verification_counts(path: str | os.PathLike) -> dict[str, Any]:
    """Stage 3 of §4.1 in numbers: the :func:`read_verification` counts in all and per source.

    Args:
        path: ``verification.csv`` as filled by a person (rows without a ``source`` cell count as "unknown").

    Returns:
        ``{"file": file name, "total": counts, "per_source": {source: counts}}`` with the counts of
        :func:`read_verification` (sources sorted).

    Raises:
        FileNotFoundError: no such file.
        ValueError: the file lacks the ``id`` / ``confirmed`` / ``substantive_reviews`` columns.
    """
    per_source: dict[str, Counter] = defaultdict(Counter)
    total: Counter = Counter()
    for row, status in _verification_statuses(path):
        for c in (per_source[(row.get("source") or "").strip().lower() or "unknown"], total):
            c["rows"] += 1
            c[status] += 1
    return {"file": Path(path).name, "total": {k: total[k] for k in _VERIFICATION_COUNTS},
            "per_source": {s: {k: c[k] for k in _VERIFICATION_COUNTS} for s, c in sorted(per_source.items())}}

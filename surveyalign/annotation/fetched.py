"""Candidates from what ``surveyalign data fetch-texts`` resolved (SurveyReview §4.1, stage 1 input).

``fetch-texts`` writes, into its output folder::

    articles/articles_part_fetched_NNN.json   {uid: markdown}  (texts of the converted papers)
    fetch_report.json                          counts per source, failures, versions
    fetch_state.jsonl                          one record per paper and attempt (last line per key wins):
                                               key, source, uids, title, status, identifier {doi, pmcid,
                                               forum, title, year} once resolved, text once converted

:func:`read_fetched_candidates` turns that output into :class:`~surveyalign.annotation.identify.Candidate` s:
one per paper that ``fetch-texts`` resolved (status ``converted``, or ``failed`` after it was identified), with
the published title, the abstract of the converted text (``## Abstract`` of the markdown) and the DOI
(F1000Research, PeerJ) or forum id (OpenReview) as id, so ``data collect --verification`` finds its review
files by either. Papers it could not resolve are not candidates; they are counted and listed with their reason.
Given shards only (no state file), one candidate per distinct text: title and abstract read from the markdown,
source from the uid prefix, id the paper key a MOPRD uid encodes or the first uid (a shard names no DOI).
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from pathlib import Path
from typing import Any

from surveyalign.documents import extract_abstract, extract_title
from surveyalign.paths import inside_folder

from .identify import Candidate

#: The files of a ``fetch-texts`` output folder read here.
FETCH_REPORT = "fetch_report.json"
FETCH_STATE = "fetch_state.jsonl"
SHARD_GLOB = "articles_part_fetched_*.json"
_SHARD_RE = re.compile(r"^articles_part_fetched_\d+\.json$")


def is_fetch_output(path: str | os.PathLike) -> bool:
    """Whether ``path`` is ``fetch-texts`` output: a folder with ``fetch_report.json`` or ``fetch_state.jsonl``,
    one of those two files, or an ``articles_part_fetched_NNN.json`` shard."""
    p = Path(path)
    if p.is_dir():
        return (p / FETCH_REPORT).is_file() or (p / FETCH_STATE).is_file()
    return p.name in (FETCH_REPORT, FETCH_STATE) or bool(_SHARD_RE.match(p.name))


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise ValueError(f"{path}: not valid JSON (line {err.lineno}: {err.msg})") from None


def _read_state(path: Path) -> dict[str, dict[str, Any]]:
    state: dict[str, dict[str, Any]] = {}
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as err:
            raise ValueError(f"{path}: line {n}: not valid JSON ({err.msg})") from None
        if not isinstance(record, dict) or not record.get("key"):
            raise ValueError(f"{path}: line {n}: field key missing or empty")
        state[str(record["key"])] = record  # a later attempt replaces an earlier one
    return state


def _read_shards(paths: list[Path]) -> dict[str, str]:
    texts: dict[str, str] = {}
    for p in paths:
        data = _read_json(p)
        if not isinstance(data, dict):
            raise ValueError(f"{p}: expected an object {{uid: markdown}}")  # noqa: TRY004
        for uid, text in data.items():
            if not isinstance(text, str):
                raise ValueError(f"{p}: record {uid}: the text must be a string")  # noqa: TRY004
            texts[uid] = text
    return texts


def _from_state(state: dict[str, dict[str, Any]], texts: dict[str, str], where: Path
                ) -> tuple[list[Candidate], list[dict[str, str]]]:
    out: list[Candidate] = []
    skipped: list[dict[str, str]] = []
    for key in sorted(state):
        rec = state[key]
        ident = rec.get("identifier")
        status = str(rec.get("status", ""))
        if status not in ("converted", "failed") or not isinstance(ident, dict):
            skipped.append({"key": key, "status": status or "unknown",
                            "reason": str(rec.get("reason") or "not resolved by fetch-texts")})
            continue
        uids = [str(u) for u in rec.get("uids") or []]
        text = rec.get("text") or next((texts[u] for u in uids if u in texts), "")
        doi = str(ident.get("doi") or "").strip()
        cid = doi or str(ident.get("forum") or "").strip() or key
        title = str(ident.get("title") or rec.get("title") or "").strip().rstrip(".") or extract_title(text)
        if not title:
            raise ValueError(f"{where}: record {key}: field title missing or empty")
        out.append(Candidate(id=cid, title=title, abstract=extract_abstract(text) if text else "",
                             source=str(rec.get("source") or "unknown").strip().lower(), doi=doi))
    return out, skipped


def _from_shards(texts: dict[str, str]) -> tuple[list[Candidate], list[dict[str, str]]]:
    from surveyalign.data.readers import paper_key_from_uid, source_from_uid

    by_text: dict[str, list[str]] = {}
    for uid in sorted(texts):
        by_text.setdefault(texts[uid], []).append(uid)
    out: list[Candidate] = []
    skipped: list[dict[str, str]] = []
    for text, uids in by_text.items():
        title = extract_title(text)
        if not title:
            skipped.append({"key": uids[0], "status": "converted", "reason": "the text has no title heading"})
            continue
        out.append(Candidate(id=paper_key_from_uid(uids[0]) or uids[0], title=title,
                             abstract=extract_abstract(text), source=source_from_uid(uids[0]) or "unknown"))
    return out, skipped


def read_fetched_candidates(path: str | os.PathLike) -> tuple[list[Candidate], dict[str, Any]]:
    """Candidates from ``fetch-texts`` output (see the module docstring).

    Args:
        path: the output folder, its ``fetch_report.json`` or ``fetch_state.jsonl``, or one shard.

    Returns:
        ``(candidates, report)``: candidates sorted by fetch key (shards: by uid); the report ``{"kind":
        "fetch-texts", "path", "records", "candidates", "per_status", "skipped": [{"key", "status", "reason"}],
        "fetch_report": the papers / per-source counts of fetch_report.json or None}``.

    Raises:
        FileNotFoundError: no such path.
        ValueError: a file that is not valid JSON, a state line without key, a shard that is not ``{uid: text}``,
            a resolved record without any title (file and record named).
    """
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"candidates path {p} does not exist")
    folder = p if p.is_dir() else p.parent
    if _SHARD_RE.match(p.name):
        shards, state_path, report_path = [p], None, None
    else:
        shards = inside_folder(folder, sorted((folder / "articles").glob(SHARD_GLOB)), "fetch folder")
        state_path = folder / FETCH_STATE if (folder / FETCH_STATE).is_file() else None
        report_path = folder / FETCH_REPORT if (folder / FETCH_REPORT).is_file() else None
    texts = _read_shards(shards)
    if state_path is not None:
        state = _read_state(state_path)
        candidates, skipped = _from_state(state, texts, state_path)
        statuses = Counter(str(r.get("status", "unknown")) for r in state.values())
        records = len(state)
    else:
        candidates, skipped = _from_shards(texts)
        statuses = Counter({"converted": len(texts)})
        records = len(texts)
    fetch_report = None
    if report_path is not None:
        rep = _read_json(report_path)
        if not isinstance(rep, dict):
            raise ValueError(f"{report_path}: expected a JSON object")
        fetch_report = {"papers": rep.get("papers"), "per_source": rep.get("per_source", {}),
                        "n_failures": rep.get("n_failures")}
    report = {"kind": "fetch-texts", "path": p.name, "records": records, "candidates": len(candidates),
              "per_status": dict(sorted(statuses.items())), "skipped": skipped, "fetch_report": fetch_report}
    return candidates, report


def _norm(value: str) -> str:
    return re.sub(r"[^a-z0-9]", "", str(value).lower())


def read_fetched_texts(path: str | os.PathLike) -> dict[str, tuple[str, str]]:
    """Survey texts from ``fetch-texts`` output, for ``surveyalign data collect --texts`` (SurveyReview §4.1).

    ``fetch-texts`` has already converted each text to markdown without referee reports and applied the leakage
    guard. Every converted paper's text is found under each of its names, compared without case and punctuation
    (as ``collect`` compares paper ids): its DOI and OpenReview forum (the candidate ids of
    :func:`read_fetched_candidates`), its fetch key, its uids and the paper key a MOPRD uid encodes.

    Args:
        path: the output folder (or one of its files: ``fetch_report.json``, ``fetch_state.jsonl``, a shard).

    Returns:
        ``{normalised name: (markdown, "fetch-texts:<key or uid>")}``; a name two papers share keeps the first
        (fetch keys, then uids, in sorted order).

    Raises:
        FileNotFoundError: no such path.
        ValueError: a file that is not valid JSON, a state line without key, a shard that is not ``{uid: text}``.
    """
    from surveyalign.data.readers import paper_key_from_uid

    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"texts path {p} does not exist")
    folder = p if p.is_dir() else p.parent
    shards = [p] if _SHARD_RE.match(p.name) else inside_folder(
        folder, sorted((folder / "articles").glob(SHARD_GLOB)), "fetch folder")
    texts = _read_shards(shards)
    state = _read_state(folder / FETCH_STATE) if not _SHARD_RE.match(p.name) and (folder / FETCH_STATE).is_file() else {}
    out: dict[str, tuple[str, str]] = {}

    def add(names: list[str], text: str, where: str) -> None:
        for name in names:
            if _norm(name):
                out.setdefault(_norm(name), (text, where))

    for key in sorted(state):
        rec = state[key]
        uids = [str(u) for u in rec.get("uids") or []]
        text = rec.get("text") or next((texts[u] for u in uids if u in texts), "")
        if rec.get("status") != "converted" or not isinstance(text, str) or not text.strip():
            continue
        ident = rec.get("identifier") if isinstance(rec.get("identifier"), dict) else {}
        names = [str(ident.get("doi") or ""), str(ident.get("forum") or ""), key, *uids]
        add(names + [paper_key_from_uid(u) or "" for u in uids], text, f"fetch-texts:{key}")
    for uid in sorted(texts):
        if texts[uid].strip():
            add([uid, paper_key_from_uid(uid) or ""], texts[uid], f"fetch-texts:{uid}")
    return out

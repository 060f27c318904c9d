"""`surveyalign data fetch-texts`: the first stage of dataset construction, the survey texts (SurveyReview §4, App. A).

For every paper of a release (:func:`~surveyalign.data.fetch.targets.release_targets`): identify it
(:mod:`~surveyalign.data.fetch.identify`), fetch its JATS XML (Europe PMC) or PDF (OpenReview), convert it to
markdown (:func:`surveyalign.documents.jats.parse_jats` without the sub-articles; PDFs with
:func:`surveyalign.documents.read_document`), pass it through the leakage guard
(:func:`surveyalign.documents.strip_review_record`) and count the gold rationales still verbatim in it. Output::

    OUT/articles/articles_part_fetched_NNN.json   {uid: markdown}, read by `surveyalign data build` unchanged
    OUT/fetch_report.json                         per source: papers, resolved / fetched / converted / failed
    OUT/fetch_state.jsonl                         one line per paper and attempt (resume; last line wins)
    OUT/.fetch_cache/                             HTTP cache and downloaded PDFs

A re-run reuses every converted paper and retries the others; the HTTP cache answers what was asked before.
Texts an earlier run wrote into the same OUT for uids that this release does not hold (another release fetched
into one folder) are carried over into the new shards and counted (``carried_over``), never dropped.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections import Counter
from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from surveyalign import __version__
from surveyalign.calls import HTTPStatusError, PoliteClient
from surveyalign.documents import (
    PDF_EXTRACTORS,
    JatsError,
    layout_verbatim_hits,
    parse_jats,
    read_document,
)
from surveyalign.paths import inside_folder, safe_output_name

from ..leakcheck import check_leaks, guard_texts
from ..readers import FETCH_REPORT_FILE as FETCH_REPORT
from ..readers import FETCH_STATE_FILE as FETCH_STATE
from .apis import EuropePMC, OpenReview
from .identify import JATS_SOURCES, candidates_for, decide
from .targets import PaperTarget, release_targets
from .urls import EUROPEPMC_URL, OPENREVIEW_URL, OPENREVIEW_V1_URL

#: Shards written by this command (the release's own ``articles_part*.json`` are never touched).
SHARD_PATTERN = "articles_part_fetched_{:03d}.json"
#: Paper outcomes, in pipeline order.
STATUSES = ("present", "unresolved", "failed", "converted")
_LISTED = 200


@dataclass
class FetchResult:
    """What :func:`fetch_texts` did.

    Attributes:
        out: the output folder.
        report: the content of ``fetch_report.json``.
        shards: the article shards written.
    """

    out: Path
    report: dict[str, Any]
    shards: list[Path]


def _read_state(path: Path) -> dict[str, dict]:
    state: dict[str, dict] = {}
    if path.is_file():
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path} line {n}: not valid JSON ({exc}); delete the line to re-fetch it")
            state[record["key"]] = record
    return state


def _own_shards(out: Path) -> list[Path]:
    return inside_folder(out, sorted((out / "articles").glob(SHARD_PATTERN.replace("{:03d}", "*"))), "fetch folder")


def _convert(target: PaperTarget, ident, europepmc: EuropePMC, openreview: list[OpenReview], pdf_dir: Path,
             pdf_extractor: str) -> tuple[str, dict[str, Any]]:
    """Fetch and convert one identified paper; returns (markdown, details). Raises _StageError."""
    cand = ident.candidate
    if target.source in JATS_SOURCES:
        if not cand.pmcid:
            raise _StageError("fetch", f"{cand.paper.doi}: no PMCID, so Europe PMC holds no full text")
        try:
            xml = europepmc.full_text_xml(cand.pmcid)
        except (HTTPStatusError, ValueError) as exc:
            raise _StageError("fetch", str(exc)) from exc
        try:
            article = parse_jats(xml, source=f"{cand.pmcid}/fullTextXML")
        except JatsError as exc:
            raise _StageError("convert", str(exc)) from exc
        if not article.sections:
            raise _StageError("convert", f"{cand.pmcid}: the JATS XML has no body (metadata only)")
        removed = Counter(s.article_type or "untyped" for s in article.sub_articles)
        return article.to_markdown(), {"format": "jats", "bytes": len(xml), "sections": len(article.sections),
                                       "references": len(article.references),
                                       "sub_articles_removed": dict(sorted(removed.items()))}
    try:
        client = next(c for c in openreview if c.http.base_url == cand.base_url)
        body = client.pdf(cand.forum)
    except (HTTPStatusError, ValueError) as exc:
        raise _StageError("fetch", str(exc)) from exc
    pdf_dir.mkdir(parents=True, exist_ok=True)
    path = pdf_dir / f"{pdf_stem(cand.forum, cand.base_url)}.pdf"
    path.write_bytes(body)
    try:
        doc = read_document(path, pdf_extractor=pdf_extractor, guard=False)
    except (ValueError, ImportError) as exc:
        raise _StageError("convert", str(exc)) from exc
    return doc.text, {"format": "pdf", "bytes": len(body), "extractor": doc.extractor, "warnings": doc.warnings}


def pdf_stem(forum: str, base_url: str) -> str:
    """The fetched PDF's file stem: the forum id when it is already a safe, lower-case name; otherwise the safe
    name plus a short hash of ``base_url`` and the id, so two forums never share a file (``aBc`` / ``abc`` on a
    case-insensitive file system, ``a/b`` / ``a_b``) and the same forum keeps its name across runs."""
    stem = safe_output_name(forum, fallback="forum")
    if stem == forum and forum == forum.lower():
        return stem
    return f"{safe_output_name(forum, fallback='forum', max_bytes=100)}-" + \
        hashlib.sha256(f"{base_url}\x00{forum}".encode()).hexdigest()[:8]


class _StageError(Exception):
    def __init__(self, stage: str, reason: str) -> None:
        super().__init__(reason)
        self.stage, self.reason = stage, reason


def _process(target: PaperTarget, europepmc: EuropePMC, openreview: list[OpenReview], pdf_dir: Path,
             pdf_extractor: str) -> dict[str, Any]:
    record: dict[str, Any] = {"key": target.key, "source": target.source, "uids": target.missing,
                              "title": target.title}
    if target.source not in (*JATS_SOURCES, "openreview"):
        return {**record, "status": "unresolved", "stage": "resolve",
                "reason": f"source {target.source!r}: no service to search (f1000, moprd or openreview)"}
    if not target.title:
        return {**record, "status": "unresolved", "stage": "resolve", "reason": "the release gives no title"}
    try:
        ident = decide(target, candidates_for(target, europepmc, openreview))
    except (HTTPStatusError, ValueError) as exc:
        return {**record, "status": "failed", "stage": "resolve", "reason": f"search failed: {exc}"}
    record.update(match={"method": ident.method, "score": ident.score, "reason": ident.reason,
                         "candidates": ident.candidates, "uid_doi_agrees": ident.uid_doi_agrees},
                  version=ident.version)
    if ident.status != "resolved":
        return {**record, "status": "unresolved", "stage": "resolve", "reason": ident.reason}
    cand = ident.candidate
    record["identifier"] = {"doi": cand.paper.doi, "pmcid": cand.pmcid, "forum": cand.forum,
                            "title": cand.paper.title, "year": cand.paper.year}
    try:
        text, details = _convert(target, ident, europepmc, openreview, pdf_dir, pdf_extractor)
    except _StageError as exc:
        return {**record, "status": "failed", "stage": exc.stage, "reason": exc.reason}
    if not text.strip():
        return {**record, "status": "failed", "stage": "convert", "reason": "the converted text is empty"}
    cleaned, changed, guard = guard_texts({target.key: text}, enabled=True)
    check = check_leaks([(target.key, target.key, target.rationales)], {target.key: text}, cleaned, changed)
    text = cleaned[target.key]
    found = [r for r, hit in zip(target.rationales, layout_verbatim_hits(target.rationales, [text])) if hit]
    return {**record, "status": "converted", "stage": "done", "reason": "", "conversion": details,
            "leakage_guard": {k: v for k, v in guard.items() if k not in ("enabled", "cleaned_ids")},
            "verbatim": {"checked": check["snippets_checked"], "found": check["snippets_verbatim_in_inputs"],
                         "near_verbatim": check["snippets_near_verbatim_in_inputs"], "snippets": found[:5]},
            "chars": len(text), "text": text}


def fetch_texts(official: Path | str, out: Path | str, *, sources: Path | str | None = None,
                europepmc_url: str = EUROPEPMC_URL, openreview_urls: Sequence[str] = (OPENREVIEW_URL, OPENREVIEW_V1_URL),
                cache_dir: Path | str | None = None, requests_per_second: float = 2.0, max_attempts: int = 6,
                http_options: dict[str, Any] | None = None, pdf_extractor: str = "pypdf",
                shard_size: int = 100, progress: bool = True) -> FetchResult:
    """Resolve, fetch, convert and guard the survey text of every paper of a release.

    Args:
        official: release folder (raw/grouped sample files; its own ``articles*.json`` count as present).
        out: output folder; may be the release folder itself, so `surveyalign data build --official` reads both.
        sources: optional ``{uid: source}`` mapping file.
        europepmc_url: Europe PMC REST root.
        openreview_urls: OpenReview API roots searched in order (API 2, then API 1 for older venues).
        cache_dir: HTTP cache and PDF folder (default ``OUT/.fetch_cache``).
        requests_per_second: network requests per second per service (> 0; cache hits are free).
        max_attempts: tries per request on 429 / 5xx / transport errors (>= 1).
        http_options: further :class:`~surveyalign.calls.PoliteClient` arguments (backoff, timeout,
            headers such as a User-Agent with a contact address).
        pdf_extractor: PDF extractor of :func:`surveyalign.documents.read_document` ("pypdf", "marker", ...).
        shard_size: uids per articles shard (>= 1).
        progress: show a progress bar.

    Returns:
        A :class:`FetchResult`; every paper is in the report, failures with their stage and reason.

    Raises:
        FileNotFoundError, ReleaseFormatError: the release cannot be read.
        ValueError: ``shard_size < 1``, an unknown PDF extractor, no OpenReview root, or a corrupt state file
            (the message names file and line).
        surveyalign.knowledge.UnreachableError: a service cannot be reached at all (refused / unknown host):
            the run stops at the first such request instead of failing every paper the same way.
    """
    if shard_size < 1:
        raise ValueError(f"shard_size must be >= 1, got {shard_size}")
    if pdf_extractor not in PDF_EXTRACTORS:
        raise ValueError(f"unknown PDF extractor {pdf_extractor!r}; choose one of {list(PDF_EXTRACTORS)}")
    if not openreview_urls:
        raise ValueError("give at least one OpenReview API root")
    started = time.perf_counter()
    out = Path(out)
    (out / "articles").mkdir(parents=True, exist_ok=True)
    cache = Path(cache_dir) if cache_dir else out / ".fetch_cache"
    earlier = _read_own_shards(out)
    own_keys = set(earlier)
    targets = release_targets(official, sources=sources)
    for t in targets:  # texts this command wrote earlier do not count as the release's own
        t.present = [u for u in t.present if u not in own_keys]
    state_path = out / FETCH_STATE
    state = _read_state(state_path)
    opts = {"requests_per_second": requests_per_second, "max_attempts": max_attempts, **(http_options or {})}
    with ExitStack() as stack:
        epmc_http = stack.enter_context(PoliteClient(europepmc_url, cache_dir=cache / "europepmc", **opts))
        or_http = [stack.enter_context(PoliteClient(url, cache_dir=cache / f"openreview{i or ''}", **opts))
                   for i, url in enumerate(openreview_urls)]
        europepmc, openreview = EuropePMC(epmc_http), [OpenReview(h) for h in or_http]
        todo = [t for t in targets if t.missing and state.get(t.key, {}).get("status") != "converted"]
        try:
            with state_path.open("a", encoding="utf-8") as log:
                for target in tqdm(todo, desc="fetch-texts", unit="paper", disable=not progress):
                    record = _process(target, europepmc, openreview, cache / "pdf", pdf_extractor)
                    record["attempted_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
                    log.write(json.dumps(record, ensure_ascii=False) + "\n")
                    log.flush()
                    state[target.key] = record
        finally:  # an interrupted run still leaves its texts in the shards and a report of what it did
            http = {"europepmc": epmc_http.stats.to_dict(),
                    **{f"openreview{i or ''}": h.stats.to_dict() for i, h in enumerate(or_http)}}
            shards, carried = _write_shards(out, targets, state, shard_size, earlier)
            report = _report(official, targets, state, shards, http, time.perf_counter() - started)
            report["carried_over"] = {"uids": len(carried), "listed": carried[:_LISTED]}
            (out / FETCH_REPORT).write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n",
                                            encoding="utf-8")
    return FetchResult(out=out, report=report, shards=shards)


def _read_own_shards(out: Path) -> dict[str, str]:
    """``{uid: text}`` of the shards an earlier run wrote into ``out`` (a later shard wins a repeated uid)."""
    texts: dict[str, str] = {}
    for path in _own_shards(out):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}: not valid JSON ({exc}); move the file away to fetch its texts again")
        if not isinstance(data, dict):
            raise ValueError(f"{path}: expected a JSON object {{uid: text}}, got {type(data).__name__}")  # noqa: TRY004 (a bad file: exit 2)
        texts.update(data)
    return texts


def _write_shards(out: Path, targets: list[PaperTarget], state: dict[str, dict], shard_size: int,
                  earlier: dict[str, str] | None = None) -> tuple[list[Path], list[str]]:
    """Rewrite this command's shards: this release's converted texts, then the uids of ``earlier`` (texts an
    earlier run wrote) that no paper of this release holds. Returns (shards, carried-over uids, sorted)."""
    texts: dict[str, str] = {}
    for t in targets:
        record = state.get(t.key, {})
        if record.get("status") == "converted":
            texts.update({u: record["text"] for u in t.missing})
    ours = {u for t in targets for u in t.uids}
    carried = sorted(u for u in (earlier or {}) if u not in ours)
    texts.update({u: earlier[u] for u in carried})
    for old in _own_shards(out):
        old.unlink()
    uids = sorted(texts)
    shards = []
    for i in range(0, len(uids), shard_size):
        path = out / "articles" / SHARD_PATTERN.format(i // shard_size + 1)
        path.write_text(json.dumps({u: texts[u] for u in uids[i:i + shard_size]}, ensure_ascii=False, indent=1)
                        + "\n", encoding="utf-8")
        shards.append(path)
    return shards, carried


def _report(official, targets: list[PaperTarget], state: dict[str, dict], shards: list[Path],
            http: dict[str, Any], seconds: float) -> dict[str, Any]:
    per_source: dict[str, Counter] = {}
    failures, versions, verbatim = [], [], []
    guard, sub_articles = Counter(), Counter()
    for t in targets:
        c = per_source.setdefault(t.source, Counter())
        c["papers"] += 1
        c["uids"] += len(t.uids)
        c["uids_present"] += len(t.present)
        record = state.get(t.key) if t.missing else {"status": "present"}
        status = (record or {}).get("status", "not attempted")
        c[status] += 1
        if status in ("converted", "failed"):
            c["resolved"] += 1
        if status == "converted" or (status == "failed" and record.get("stage") == "convert"):
            c["fetched"] += 1
        if status in ("unresolved", "failed"):
            failures.append({k: record.get(k) for k in ("key", "source", "uids", "title", "stage", "reason")})
        if status == "converted":
            c["uids_written"] += len(t.missing)
            versions.append({"key": t.key, **record.get("version", {})})
            for name, value in record.get("leakage_guard", {}).items():
                if isinstance(value, dict):
                    for kind, n in value.items():
                        guard[f"{name}:{kind}"] += n
                else:
                    guard[name] += value
            for kind, n in record.get("conversion", {}).get("sub_articles_removed", {}).items():
                sub_articles[kind] += n
            if record["verbatim"]["found"] or record["verbatim"]["near_verbatim"]:
                verbatim.append({"key": t.key, "uids": t.missing, **record["verbatim"]})
    names = ("papers", "uids", "uids_present", "present", "resolved", "unresolved", "fetched", "converted",
             "failed", "uids_written")
    return {
        "surveyalign_version": __version__, "official": str(official), "papers": len(targets),
        "uids": sum(len(t.uids) for t in targets),
        "per_source": {s: {n: c.get(n, 0) for n in names} for s, c in sorted(per_source.items())},
        "failures": failures[:_LISTED], "n_failures": len(failures), "versions": versions[:_LISTED],
        "sub_articles_removed": dict(sorted(sub_articles.items())), "leakage_guard": dict(sorted(guard.items())),
        "verbatim": {"papers_with_snippets": len(verbatim), "snippets_found": sum(v["found"] for v in verbatim),
                     "snippets_near_verbatim": sum(v["near_verbatim"] for v in verbatim),
                     "papers": verbatim[:_LISTED]},
        "shards": [p.name for p in shards], "http": http, "seconds": round(seconds, 2),
    }

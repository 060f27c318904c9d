"""Build the script-free SurveyReview dataset folder from a release (SurveyReview §4, App. A-B).

Output layout::

    OUT/README.md                     card + YAML front matter (configs per dimension and "all", features)
    OUT/build_report.json             counts, exclusions, missing texts, leakage guard, split sizes, input hash
    OUT/data/<dimension>/<split>.parquet

The "all" config lists the four dimension files of each split, so every row is stored once.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from surveyalign import __version__
from surveyalign.constants import DIMENSIONS
from surveyalign.documents import (
    NEAR_VERBATIM_THRESHOLD,
    extract_abstract,
    extract_references,
    extract_title,
)

from .card import ANNOTATION_FILE, annotation_section, render_readme
from .files import check_output, content_hash, write_files
from .identity import identify_papers
from .leakcheck import MAX_LISTED, check_leaks, guard_texts, raise_on_leak
from .readers import (
    EXCLUDED_SCORES,
    RawUnit,
    read_release,
    source_from_text,
    source_from_uid,
)
from .schema import ReleaseFormatError
from .split import assign_splits, split_counts


@dataclass
class BuildResult:
    """Result of :func:`build_dataset`; usable wherever a path is (``os.fspath(result)`` is the folder).

    Attributes:
        path: the dataset folder.
        report: the content of ``build_report.json``.
    """

    path: Path
    report: dict[str, Any]

    def __fspath__(self) -> str:
        return str(self.path)


def _portable(path: Path, release: Path) -> str:
    """``path`` relative to the release folder (POSIX form), or its bare file name when it lies outside.

    Keeps absolute paths of the build machine out of ``build_report.json`` and the card, which
    ``surveyalign data push`` publishes.
    """
    base = release if release.is_dir() else release.parent
    try:
        return path.resolve().relative_to(base.resolve()).as_posix()
    except ValueError:
        return path.name


def _hash_inputs(files: list[Path]) -> str:
    digest = hashlib.sha256()
    for file in sorted(set(files), key=lambda p: p.name + str(p)):
        digest.update(file.name.encode())
        with file.open("rb") as fh:
            digest.update(hashlib.sha256(fh.read()).digest())
    return digest.hexdigest()


def build_dataset(
    official: str | os.PathLike,
    out: str | os.PathLike,
    *,
    sources: str | os.PathLike | None = None,
    seed: int = 42,
    leakage_guard: bool = True,
    fail_on_leak: bool = False,
    near_verbatim_threshold: float = NEAR_VERBATIM_THRESHOLD,
    drop_missing_text: bool = False,
    test_fraction: float = 0.25,
    validation_fraction: float = 0.10,
    overwrite: bool = True,
    split_policy: str = "auto",
    records: str | None = None,
) -> BuildResult:
    """Build the SurveyReview dataset folder from release files (SurveyReview §4, App. A-B).

    Steps: read both release layouts; drop score 0 (not mentioned) and -3 (unjudgeable) units, counting them
    per dimension; strip the published review record from every input text (leakage guard); resolve each
    unit's source (record field, uid prefix, mapping file, F1000Research DOI in the text, else "unknown");
    group reviews into papers (the paper key the uid encodes - the uid itself in the per-dimension layout,
    "moprd-<paper>" for MOPRD review uids - merged with papers sharing a normalised title of three words or
    more, or the same text when there is no title); split: as released when the release names its splits
    (train files -> train + validation carved at the paper level; test files -> test), else paper-level 75/25
    per source then 90/10 train/validation (:mod:`surveyalign.data.split`); count gold snippets still verbatim
    or near-verbatim in the input texts; write parquet files, the card and ``build_report.json``. A release made
    by ``surveyalign data release`` carries its annotation section (``ANNOTATION.md``: annotator model, guideline
    version, agreement tables); the card includes it.

    Review identity: in the per-dimension layout, where the release gives no review id, the k-th record of a
    uid in a dimension file is taken to be review k of that paper (``review_id = f"{uid}-r{k}"``), so one
    review's units share a review id across dimension files. In the raw layout the uid is the review id.

    Missing texts: a review without its own text takes the text of another review of the same paper when
    there is one (listed in the report); otherwise the unit keeps its row with ``text == ""`` (the
    evaluation harness marks it ``missing_text``; training recipes skip it) and is listed in the report under
    ``missing_text``; with ``drop_missing_text=True`` such rows are left out but still listed.

    Args:
        official: release folder (or one raw-layout JSON file).
        out: output folder; replaced when it exists and ``overwrite`` is True.
        sources: optional ``{uid or paper key: source}`` JSON mapping.
        seed: split seed (deterministic).
        leakage_guard: strip the published review material from the texts (:func:`surveyalign.documents.strip_review_record`;
            recorded in the report).
        fail_on_leak: raise instead of writing when any gold snippet is still verbatim or near-verbatim in an
            input text after the guard.
        near_verbatim_threshold: rapidfuzz partial-ratio score (0-100) from which a snippet counts as
            near-verbatim in its own text (default :data:`surveyalign.data.NEAR_VERBATIM_THRESHOLD`).
        drop_missing_text: leave units without text out of the data files (still reported).
        test_fraction: paper-level policy only: share of papers per source in test (0-1; 1 = all in test).
        validation_fraction: share of training papers per source in validation (both policies).
        overwrite: allow replacing an earlier build in ``out`` (a non-empty folder without build_report.json is
            never replaced). The folder is written beside ``out`` and moved in place at the end.
        split_policy: "auto" (default: "as-released" when the release names its splits in its file names, else
            "paper-level"), "as-released" or "paper-level" (:func:`surveyalign.data.split.assign_splits`).
        records: annotation set of the review-sample files, "grouped" or "raw" (None: grouped when present);
            the other set is never mixed in.

    Returns:
        :class:`BuildResult` with the folder and the report dict.

    Raises:
        ReleaseFormatError: malformed release records (naming file, record and field) or duplicate units.
        LeakError: ``fail_on_leak`` and gold snippets remain after the guard (a ValueError).
        FileExistsError: ``out`` is non-empty and ``overwrite`` is False or it is not an earlier build.
        ValueError: ``out`` and the release overlap; a paper is in the release's train and test files
            (as-released); an unknown split policy or record set.
    """
    started = time.perf_counter()
    out = Path(out)
    check_output(Path(official), out, overwrite)
    timings: dict[str, float] = {}
    mark = [started]

    def lap(name: str) -> None:
        now = time.perf_counter()
        timings[name] = round(now - mark[0], 3)
        mark[0] = now

    release = read_release(official, sources=sources, records=records)
    lap("read")

    # 1. exclusions (0 = not mentioned, -3 = unjudgeable)
    excluded = {str(s): Counter() for s in EXCLUDED_SCORES}
    kept: list[RawUnit] = []
    for unit in release.units:
        if unit.score in EXCLUDED_SCORES:
            excluded[str(unit.score)][unit.dimension] += 1
        else:
            kept.append(unit)

    # 2. texts, cleaned once per article key
    def raw_text(unit: RawUnit) -> tuple[str | None, str]:
        if unit.text is not None:
            return unit.text, f"record:{unit.review_id}"
        for key in (unit.article_key, unit.paper_key):
            if key is not None and key in release.articles:
                return release.articles[key], key
        return None, ""

    inputs: dict[str, str] = dict(release.articles)
    for unit in release.units:
        if unit.text is not None:
            inputs[f"record:{unit.review_id}"] = unit.text
    cleaned, cleaned_ids, guard_summary = guard_texts(inputs, enabled=leakage_guard)

    lap("leakage_guard")

    # 3. sources
    source_how = Counter()
    doi_source: dict[str, str | None] = {}
    unit_source: list[str] = []
    unit_key: list[str] = []
    for unit in kept:
        text, key = raw_text(unit)
        unit_key.append(key)
        if unit.source:
            how, value = "record", unit.source
        elif source_from_uid(unit.uid):
            how, value = "uid_prefix", source_from_uid(unit.uid)
        elif mapped := next((release.source_map[k] for k in (unit.uid, unit.review_id, unit.paper_key,
                                                              unit.article_key) if k and k in release.source_map),
                            None):
            how, value = "mapping", mapped
        else:
            if key and key not in doi_source:
                doi_source[key] = source_from_text(text or "")
            how, value = ("f1000_doi", "f1000") if key and doi_source[key] else ("unknown", "unknown")
        unit_source.append(value)
        source_how[how] += 1

    # 4. paper identity
    unit_paper, unit_title = identify_papers(kept, unit_key, cleaned)

    # a review whose uid has no text takes the text of another review of the same paper, when there is one
    paper_text_key: dict[str, str] = {}
    for i, paper in enumerate(unit_paper):
        if unit_key[i] and paper not in paper_text_key:
            paper_text_key[paper] = unit_key[i]
    text_from_same_paper: set[str] = set()
    for i, paper in enumerate(unit_paper):
        if not unit_key[i] and paper in paper_text_key:
            unit_key[i] = paper_text_key[paper]
            text_from_same_paper.add(kept[i].review_id)
            if not unit_title[i]:
                unit_title[i] = extract_title(cleaned[unit_key[i]])

    # one title and abstract per paper: the first non-empty one in release order
    paper_title: dict[str, str] = {}
    paper_abstract: dict[str, str] = {}
    for i, paper in enumerate(unit_paper):
        if unit_title[i] and paper not in paper_title:
            paper_title[paper] = unit_title[i]
        if kept[i].abstract and paper not in paper_abstract:
            paper_abstract[paper] = kept[i].abstract

    paper_source_votes: dict[str, Counter] = defaultdict(Counter)
    for paper, source in zip(unit_paper, unit_source):
        paper_source_votes[paper][source] += 1
    paper_sources = {p: min(v.items(), key=lambda kv: (-kv[1], kv[0]))[0] for p, v in paper_source_votes.items()}
    source_conflicts = sorted(p for p, v in paper_source_votes.items() if len(set(v) - {"unknown"}) > 1)

    # 5. split
    paper_declared: dict[str, dict[str, str]] = defaultdict(dict)
    for i, unit in enumerate(kept):
        if unit.declared_split:
            paper_declared[unit_paper[i]].setdefault(unit.declared_split, unit.origin.split("#")[0])
    assignment, split_info = assign_splits(
        paper_sources, paper_declared, policy=split_policy, seed=seed, test_fraction=test_fraction,
        validation_fraction=validation_fraction,
    )

    lap("identity_and_split")

    # 6. rows
    missing_units: list[str] = []
    missing_articles: set[str] = set()
    rows: dict[tuple[str, str], list[dict]] = defaultdict(list)
    seen_units: dict[str, str] = {}
    derived: dict[str, tuple[str, list[str]]] = {}
    for i, unit in enumerate(kept):
        unit_id = f"{unit.review_id}::{unit.dimension}"
        if unit_id in seen_units:
            raise ReleaseFormatError(
                unit.origin.split("#")[0],
                f"unit {unit_id} appears twice (also at {seen_units[unit_id]})",
                record=unit.origin.split("#")[-1],
                field="uid",
            )
        seen_units[unit_id] = unit.origin
        key = unit_key[i]
        text = cleaned.get(key, "") if key else ""
        if not key:
            missing_units.append(unit_id)
            missing_articles.add(unit.article_key)
            if drop_missing_text:
                continue
        if key and key not in derived:
            derived[key] = (extract_abstract(text), extract_references(text))
        abstract, references = derived.get(key, ("", []))
        rows[(unit.dimension, assignment[unit_paper[i]])].append(
            {
                "unit_id": unit_id,
                "paper_id": unit_paper[i],
                "review_id": unit.review_id,
                "source": unit_source[i],
                "dimension": unit.dimension,
                "score": unit.score,
                "rationales": list(unit.rationales),
                "title": paper_title.get(unit_paper[i], ""),
                "text": text,
                "abstract": paper_abstract.get(unit_paper[i]) or abstract,
                "references": references,
            }
        )

    # 7. invariant: no paper crosses splits
    paper_splits: dict[str, set[str]] = defaultdict(set)
    for (dim, split), items in rows.items():
        for row in items:
            paper_splits[row["paper_id"]].add(split)
    crossing = sorted(p for p, s in paper_splits.items() if len(s) > 1)
    if crossing:  # cannot happen by construction; checked because every result depends on it
        raise AssertionError(f"papers in more than one split: {crossing[:10]}")

    lap("rows")

    # 8. leakage check: gold snippets still (near-)verbatim in the input texts
    row_key = {kept[i].review_id + "::" + kept[i].dimension: unit_key[i] for i in range(len(kept))}
    leak_check = check_leaks(
        [(row["unit_id"], row_key.get(row["unit_id"]), row["rationales"]) for items in rows.values() for row in items],
        inputs, cleaned, cleaned_ids, threshold=near_verbatim_threshold,
    )
    if fail_on_leak:
        raise_on_leak(leak_check)

    lap("verbatim_check")

    # 9. write
    final = out
    out = final.parent / f".{final.name}.building-{os.getpid()}"  # written aside, moved in place at the end
    if out.exists():
        shutil.rmtree(out)
    (out / "data").mkdir(parents=True)
    try:
        write_files(out, rows)
    except BaseException:
        shutil.rmtree(out, ignore_errors=True)
        raise
    lap("write_parquet")

    counts = split_counts(rows, assignment, paper_sources)

    report: dict[str, Any] = {
        "surveyalign_version": __version__,
        "input": {
            # names only: the card and report are published by `data push`, so no build-machine path
            "path": Path(official).resolve().name,
            "files": [_portable(f, Path(official)) for f in release.files],
            "layouts": sorted(release.layouts),
            "records_read": {_portable(Path(f), Path(official)): n for f, n in release.records_read.items()},
            "records_read_total": sum(release.records_read.values()),
            "articles": len(release.articles),
            "sources_file": _portable(Path(sources), Path(official)) if sources else None,
            "sha256": _hash_inputs(release.files),
        },
        "seed": seed,
        "records": {
            "set": release.record_set,
            "reason": release.record_set_reason,
            "ignored_files": [_portable(f, Path(official)) for f in release.ignored_files],
        },
        "split": {
            **split_info,
            "declared_files": {_portable(Path(f), Path(official)): s for f, s in release.declared_files.items()},
            "papers_crossing_splits": len(crossing),
        },
        "warnings": list(release.warnings),
        "units": {
            "read": len(release.units),
            "kept": sum(len(v) for v in rows.values()),
            "excluded_score_0": {d: excluded["0"][d] for d in DIMENSIONS},
            "excluded_score_minus3": {d: excluded["-3"][d] for d in DIMENSIONS},
            "without_rationale": sum(1 for items in rows.values() for r in items if not r["rationales"]),
        },
        "papers": len(paper_sources),
        "reviews": len({u.review_id for u in kept}),
        "source_resolution": dict(source_how),
        "source_conflicts": source_conflicts,
        "missing_text": {
            "policy": "dropped from data files" if drop_missing_text else "kept with text == ''",
            "reviews_given_text_of_same_paper": sorted(text_from_same_paper),
            "units": len(missing_units),
            "articles": len(missing_articles),
            "article_ids": sorted(missing_articles)[:MAX_LISTED],
            "unit_ids": sorted(missing_units)[:MAX_LISTED],
        },
        "leakage_guard": {**guard_summary, **leak_check},
        "counts": counts,
        "format": "parquet",
        "build_seconds": None,
        "timings_s": timings,
    }
    annotation = annotation_section(Path(official))
    report["annotation_section"] = (
        {"file": ANNOTATION_FILE, "sha256": hashlib.sha256(annotation.encode()).hexdigest()} if annotation else None)
    report["content_sha256"] = content_hash(out)
    report["build_seconds"] = round(time.perf_counter() - started, 3)
    (out / "README.md").write_text(render_readme(report, rows, annotation=annotation), encoding="utf-8")
    (out / "build_report.json").write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    if final.exists():
        shutil.rmtree(final)
    out.rename(final)
    return BuildResult(path=final, report=report)

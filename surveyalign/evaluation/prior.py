"""Import a prior survey evaluator's per-survey scores as an evaluation run folder (SurveyReview §6.1, App. H).

``surveyalign import-scores`` reads what an outside tool wrote (LLMxMapReduce-V2, DeepResearch Bench, SurveyX or any
tool with numeric per-criterion scores), maps each aligned criterion's score to the closest benchmark category
(:mod:`surveyalign.evaluation.prior_map`) and writes the same run folder ``surveyalign evaluate`` writes
(``predictions.jsonl``, ``metrics.json`` from :func:`surveyalign.scoring.summarize_predictions`,
``run_config.json``), so ``surveyalign report RUN_DIR`` puts it in the leaderboard.

Accepted files (one record per survey; read by :mod:`surveyalign.evaluation.prior_records`):

- ``.jsonl``: one JSON object a line; ``.json``: an array of objects, or an object ``{paper id or title: object}``;
- ``.csv``: a header row and one row per survey (LLMxMapReduce-V2 ``result.csv``).

A record names its survey by the first of :data:`KEY_FIELDS` it has (the key of a keyed object first): a dataset
``paper_id`` or the survey's title (case, spacing and punctuation ignored). Score fields are found by
:func:`~surveyalign.evaluation.prior_map.criterion_key` (also inside a ``scores`` object); a score is a number, a
numeric string, an object ``{"score": x, "rationale"/"reason"/"analysis": text}``, or (DeepResearch Bench) a list
of criterion items ``{"criterion", "analysis", "target_score", "weight"?}`` whose weighted mean is the score
(equal weights when any item has none) and whose analyses, one line each, are the rationale. A rationale may also
come from ``rationales: {criterion: text}`` or a ``<criterion>_rationale`` / ``<criterion>_reason`` field.

The unit is (paper, review, dimension); a tool judges a paper, so its score of a paper and dimension applies to
every review unit of that paper and dimension (each keeps its own reference). Every unit of the split for a mapped
dimension is one record: a unit whose paper or criterion has no value in the file is ``missing`` (counted, never
dropped); a dimension no criterion maps to is left out and its unit count is recorded (``run_config.json``
``dimensions_left_out``).
"""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from surveyalign.constants import DIMENSIONS, MISSING, SCORED, SPLITS, count_statuses
from surveyalign.evaluation.prior_map import (
    PROFILES,
    Criterion,
    ToolProfile,
    map_score,
)
from surveyalign.evaluation.prior_records import ToolRecord, criterion_value, read_tool_records, title_key
from surveyalign.evaluation.rundir import RunLock, now, write_json, write_jsonl

__all__ = ["ImportResult", "import_scores"]

#: What the rationale of a unit says when the tool gave no text (``imported.rationale_from`` is ``"none"``).
NO_RATIONALE = ""


def _read_split_rows(dataset: Path, split: str) -> list[dict[str, Any]]:
    """The rows of one split without the survey text (unit_id, paper_id, review_id, source, dimension, score,
    rationales, title)."""
    from surveyalign.data import load_surveyreview
    from surveyalign.data.load import iter_split_rows, split_columns, split_files

    wanted = ("unit_id", "paper_id", "review_id", "source", "dimension", "score", "rationales", "title")
    files = split_files(dataset, split)
    if files is None:
        ds = load_surveyreview(str(dataset), dimension="all", split=split)
        return [{k: row.get(k) for k in wanted} for row in ds]
    if not files:
        return []
    columns = [c for c in split_columns(files) if c in wanted]
    return list(iter_split_rows(files, columns))


@dataclass
class ImportResult:
    """What :func:`import_scores` returns.

    Attributes:
        run_dir: the run folder written.
        metrics: the content of ``metrics.json``.
        run_config: the content of ``run_config.json``.
        predictions: the records of ``predictions.jsonl``.
    """

    run_dir: Path
    metrics: dict[str, Any]
    run_config: dict[str, Any]
    predictions: list[dict[str, Any]]


def import_scores(
    scores: str | Path,
    dataset: str | Path,
    out: str | Path,
    *,
    tool: str,
    mapping: dict[str, Criterion],
    split: str = "test",
    name: str | None = None,
    model: str | None = None,
    tie: str = "majority",
    bootstrap: int = 1000,
    seed: int = 0,
    argv: Sequence[str] | None = None,
) -> ImportResult:
    """Convert one outside evaluator's output into an evaluation run folder (SurveyReview App. H).

    Args:
        scores: the tool's output file (:func:`read_tool_records`).
        dataset: a dataset folder built by ``surveyalign data build``.
        out: the run folder to write (created; must not hold an ``evaluate`` run's ``calls.jsonl``).
        tool: a key of :data:`~surveyalign.evaluation.prior_map.PROFILES`.
        mapping: the mapped criteria (:func:`~surveyalign.evaluation.prior_map.mapping_table`).
        split: the split whose units are scored.
        name: judge name in the leaderboard (default: the tool's label, with `` (model)`` when ``model`` is given).
        model: the LLM the tool ran with (recorded, e.g. ``"GPT-5.2"``).
        tie: the tie rule of :func:`~surveyalign.evaluation.prior_map.closest_category`.
        bootstrap: resamples of the paper-level bootstrap in ``metrics.json`` (0: no intervals).
        seed: the bootstrap's seed.
        argv: the command line to record (default ``sys.argv``).

    Returns:
        :class:`ImportResult`. ``predictions.jsonl`` has one record per unit of the split and mapped dimension:
        the fields ``surveyalign evaluate`` writes (unit_id, paper_id, review_id, source, dimension, reference,
        reference_rationales, prediction, status ``scored`` or ``missing``, rationale, error, consistency None)
        plus ``imported`` = {tool, criterion, raw_score, raw_scale [low, high], rescaled, category, tie, record
        (where in the file), key, matched_by (``paper_id`` | ``title``), rationale_from (``tool`` | ``none``)}.

    Raises:
        FileNotFoundError: the scores file or the dataset folder does not exist.
        ValueError: naming the file, record and field: a bad record (see :func:`read_tool_records`), a score that
            is not a number or lies outside its scale, a field that means a reference answer was used (App. H),
            two records for one paper; or an unknown tool or split, or an empty split.
        RuntimeError: ``out`` holds an ``evaluate`` run (``calls.jsonl``) or is locked by another process.
    """

    if tool not in PROFILES:
        raise ValueError(f"unknown tool {tool!r}; expected one of {', '.join(PROFILES)}")
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; expected one of {', '.join(SPLITS)}")
    profile: ToolProfile = PROFILES[tool]
    root = Path(dataset)
    if not root.exists():
        raise FileNotFoundError(f"dataset folder not found: {root} (build one with `surveyalign data build`)")
    started = now()
    records, fmt = read_tool_records(scores)
    for rec in records:
        for field_name, why in profile.refused.items():
            if rec.fields.get(field_name) not in (None, ""):
                raise ValueError(f"{rec.where}: field {field_name}: {why}; SurveyReview App. H leaves "
                                 "reference-answer components out (run the tool without a reference answer)")

    rows = _read_split_rows(root, split)
    if not rows:
        raise ValueError(f"{root} ({split}): no units in this split")
    titles, matched, unmatched = _match_records(records, rows, root, split)
    predictions, left_out = _unit_predictions(rows, mapping, matched, tool=tool, scores=scores, tie=tie)
    if not predictions:
        dims = ", ".join(c.dimension for c in mapping.values())
        raise ValueError(f"{root} ({split}): no unit of the mapped dimension(s) {dims}")
    label = name or (f"{profile.label} ({model})" if model else profile.label)
    metrics, run_config = _write_run(
        Path(out), predictions, root=root, split=split, label=label, model=model, profile=profile, tool=tool,
        mapping=mapping, scores=scores, fmt=fmt, records=records, tie=tie, titles=titles, matched=matched,
        unmatched=unmatched, left_out=left_out, bootstrap=bootstrap, seed=seed, started=started, argv=argv)
    return ImportResult(run_dir=Path(out), metrics=metrics, run_config=run_config, predictions=predictions)


def _match_records(records: list[ToolRecord], rows: list[dict[str, Any]], root: Path, split: str
                   ) -> tuple[dict[str, str], dict[str, tuple[ToolRecord, str]], list[dict[str, str]]]:
    """Match the tool's records to the split's papers, by ``paper_id`` else by title.

    Returns:
        ``(titles, matched, unmatched)``: paper_id -> title of the split; paper_id -> (record, ``"paper_id"`` |
        ``"title"``); the records matching no paper of the split, each with the split that holds it (or ``"not in
        dataset"``).

    Raises:
        ValueError: a title naming several papers of the split, or two records for one paper.
    """
    titles: dict[str, str] = {}  # paper_id -> title, this split
    for row in rows:
        titles.setdefault(str(row["paper_id"]), str(row.get("title") or ""))
    other: dict[str, str] = {}  # paper_id or title key -> the other split holding it
    for other_split in SPLITS:
        if other_split == split:
            continue
        try:
            other_rows = _read_split_rows(root, other_split)
        except (ValueError, KeyError):
            continue
        for row in other_rows:
            other.setdefault(str(row["paper_id"]), other_split)
            if row.get("title"):
                other.setdefault(title_key(row["title"]), other_split)

    by_title: dict[str, list[str]] = {}
    for pid, title in titles.items():
        if title.strip():
            by_title.setdefault(title_key(title), []).append(pid)
    matched: dict[str, tuple[ToolRecord, str]] = {}
    unmatched: list[dict[str, str]] = []
    for rec in records:
        if rec.key in titles:
            pid, how = rec.key, "paper_id"
        else:
            hits = by_title.get(title_key(rec.key), [])
            if len(hits) > 1:
                raise ValueError(f"{rec.where}: field {rec.key_field} = {rec.key!r} is the title of several papers "
                                 f"of {split} ({', '.join(sorted(hits))}); name the survey by paper_id")
            if not hits:
                unmatched.append({"record": rec.where, "key": rec.key,
                                  "found_in": other.get(rec.key) or other.get(title_key(rec.key)) or "not in dataset"})
                continue
            pid, how = hits[0], "title"
        if pid in matched:
            raise ValueError(f"{rec.where}: a second record for paper {pid} (the first is {matched[pid][0].where})")
        matched[pid] = (rec, how)

    return titles, matched, unmatched


def _unit_predictions(rows: list[dict[str, Any]], mapping: dict[str, Criterion],
                      matched: dict[str, tuple[ToolRecord, str]], *, tool: str, scores: str | Path, tie: str
                      ) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """One prediction record per unit of a mapped dimension: the closest category of its paper's score (App. H),
    or ``missing`` when the tool has no value for the paper.

    Returns:
        ``(predictions, left_out)``: the records (fields of :func:`import_scores`) and, per dimension no criterion
        maps to, its unit count.

    Raises:
        ValueError: a score that is not a number or lies outside its scale (naming the record and field).
    """
    dimensions = [c.dimension for c in mapping.values()]
    criterion_of = {c.dimension: c for c in mapping.values()}
    predictions: list[dict[str, Any]] = []
    left_out: dict[str, int] = {}
    for dim in DIMENSIONS:
        dim_rows = [r for r in rows if r["dimension"] == dim]
        if dim not in dimensions:
            left_out[dim] = len(dim_rows)
            continue
        crit = criterion_of[dim]
        for row in dim_rows:
            pid = str(row["paper_id"])
            rec: dict[str, Any] = {
                "unit_id": row["unit_id"], "paper_id": pid, "review_id": row.get("review_id"),
                "source": row.get("source"), "dimension": dim, "reference": int(row["score"]),
                "reference_rationales": list(row.get("rationales") or []),
            }
            imported: dict[str, Any] = {"tool": tool, "criterion": crit.key, "raw_score": None,
                                        "raw_scale": list(crit.scale), "rescaled": None, "category": None,
                                        "tie": None, "record": None, "key": None, "matched_by": None,
                                        "rationale_from": "none"}
            found = matched.get(pid)
            value, text = (None, "") if found is None else criterion_value(found[0], crit.key)
            if found is not None:
                imported.update(record=found[0].where, key=found[0].key, matched_by=found[1])
            if value is None:
                why = (f"paper {pid} is not in {scores}" if found is None
                       else f"{found[0].where} has no value for criterion {crit.key}")
                rec.update(prediction=None, status=MISSING, rationale=NO_RATIONALE, error=why)
            else:
                try:
                    m = map_score(value, crit.scale, tie)
                except ValueError as err:
                    raise ValueError(f"{found[0].where}: field {crit.key}: {err}") from None
                imported.update(raw_score=m.raw_score, rescaled=m.rescaled, category=m.category, tie=m.tie,
                                rationale_from="tool" if text else "none")
                rec.update(prediction=m.category, status=SCORED, rationale=text or NO_RATIONALE, error=None)
            rec["consistency"] = None
            rec["imported"] = imported
            predictions.append(rec)

    return predictions, left_out


def _write_run(run_dir: Path, predictions: list[dict[str, Any]], *, root: Path, split: str, label: str,
               model: str | None, profile: ToolProfile, tool: str, mapping: dict[str, Criterion],
               scores: str | Path, fmt: str, records: list[ToolRecord], tie: str, titles: dict[str, str],
               matched: dict[str, tuple[ToolRecord, str]], unmatched: list[dict[str, str]], left_out: dict[str, int],
               bootstrap: int, seed: int, started: str, argv: Sequence[str] | None
               ) -> tuple[dict[str, Any], dict[str, Any]]:
    """Write ``predictions.jsonl``, ``metrics.json`` and ``run_config.json`` in the layout ``evaluate`` writes.

    Returns:
        ``(metrics, run_config)``.

    Raises:
        RuntimeError: ``run_dir`` holds an ``evaluate`` run (``calls.jsonl``) or is locked by another process.
    """
    from surveyalign.evaluation.units import folder_fingerprint, train_scores_or_none
    from surveyalign.scoring import summarize_predictions

    dimensions = [c.dimension for c in mapping.values()]
    criterion_of = {c.dimension: c for c in mapping.values()}
    run_dir.mkdir(parents=True, exist_ok=True)
    if (run_dir / "calls.jsonl").exists():
        raise RuntimeError(f"{run_dir} holds an evaluate run (calls.jsonl); import into another folder")
    counts = count_statuses(predictions)
    by_dim = {d: count_statuses(p for p in predictions if p["dimension"] == d) for d in dimensions}
    train = train_scores_or_none(str(root))
    with RunLock(run_dir / ".lock"):
        write_jsonl(run_dir / "predictions.jsonl", predictions)
        metrics = summarize_predictions(predictions, train_scores=train or None, consistency_available=False,
                                        bootstrap=bootstrap, seed=seed)
        judge_line = (f"Judge {label} (imported scores of {profile.label}"
                      + (f" run with {model}" if model else "") + f" from {scores}; SurveyReview App. H mapping)")
        metrics["judge"] = {"name": label, "backend": "imported", "line": judge_line,
                            "per_dimension": {d: {"backend": "imported", "model": model, "adapter": None,
                                                  "answered_by": f"{profile.label} criterion {criterion_of[d].key}",
                                                  "base_url": None} for d in dimensions}}
        metrics["harness"] = {"status_counts": counts, "calls": {"made": 0, "cached": 0}, "rqs_counts": {},
                              "prompt_length": None, "cost": None,
                              "imported": {"papers_in_split": len(titles), "papers_matched": len(matched),
                                           "papers_missing": len(titles) - len(matched),
                                           "records_unmatched": len(unmatched)}}
        write_json(run_dir / "metrics.json", metrics)
        scores_path = Path(scores)
        run_config = {
            "name": label, "kind": "imported", "started": started, "finished": now(),
            "command": list(sys.argv if argv is None else argv),
            "source": {"tool": tool, "label": profile.label, "reference": profile.reference, "model": model,
                       "file": str(scores_path.resolve()),
                       "sha256": hashlib.sha256(scores_path.read_bytes()).hexdigest(), "format": fmt,
                       "records": len(records)},
            "mapping": {c.key: {"dimension": c.dimension, "scale": list(c.scale), "note": c.note}
                        for c in mapping.values()},
            "not_mapped": sorted({k for r in records for k in r.fields if k in {c.key for c in profile.criteria}}
                                 - set(mapping)),
            "category_rule": "linear rescale of [low, high] onto [-2, 2], then the closest of {-2, -1, 1, 2} "
                             "(SurveyReview App. H)",
            "tie_rule": tie,
            "per_review": "the tool scores a paper; its score applies to every review unit of that paper and "
                          "dimension",
            "dataset": str(root),
            "data": {"path": str(root.resolve()), "split": split, "units": len(predictions),
                     "units_per_dimension": {d: by_dim[d]["total"] for d in dimensions}, **folder_fingerprint(root)},
            "split": split, "dimensions": dimensions, "dimensions_left_out": left_out,
            "counts": counts, "counts_per_dimension": by_dim,
            "papers": {"in_split": len(titles), "matched": len(matched),
                       "matched_by_title": sum(1 for _, how in matched.values() if how == "title"),
                       "missing": sorted(set(titles) - set(matched))},
            "unmatched_records": unmatched,
            "bootstrap": bootstrap, "seed": seed,
        }
        write_json(run_dir / "run_config.json", run_config)
    return metrics, run_config

"""PRISM scores per review and per paper from extracted units, the system-vs-human comparison table, and
the run folder files (per-review JSON, per-paper JSON, comparison table)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from surveyalign.documents.hidden import hidden_section
from surveyalign.paths import content_sha256, name_beside_earlier, unique_output_names
from surveyalign.prism.columns import mean_over_reviews
from surveyalign.prism.constructiveness import constructiveness
from surveyalign.prism.depth import depth_of_analysis
from surveyalign.prism.flaws import flaw_recall, ncps
from surveyalign.prism.inputs import Review, Submission
from surveyalign.prism.novelty import novelty_scores
from surveyalign.prism.pipeline import PaperUnits
from surveyalign.prism.units import RankedCritique

__all__ = ["HEADLINE_METRICS", "REFERENCE_FIGURES", "comparison_rows", "format_comparison", "hidden_records",
           "paper_sha256", "run_owner", "score_reviews", "write_run"]

#: The metrics of the comparison table: (key in a review's scores, label).
HEADLINE_METRICS: tuple[tuple[str, str], ...] = (
    ("doa", "DoA"), ("r_premise", "R_premise"), ("s_depth", "S_depth"),
    ("ns", "novelty score NS"), ("sr", "support rate SR"), ("strict_sr", "strict SR"),
    ("critical_recall", "critical recall"), ("minor_recall", "minor recall"),
    ("weighted_critical_recall", "consensus-weighted critical recall"), ("ncps", "nCPS"),
    ("mcs", "MCS"), ("ar", "actionability ratio"), ("sd", "solution density"), ("cd", "constructiveness density"),
)

#: Reference figures from the PRISM project page: metric -> {reviewer: value}.
REFERENCE_FIGURES: dict[str, dict[str, float]] = {
    "doa": {"human": 0.494, "CycleReviewer": 0.484},
    "ns": {"SEA": 0.833, "human": 0.787},
    "critical_recall": {"Reviewer2": 0.591, "human": 0.343},
    "ncps": {"SEA": 0.977, "human": 0.973},
    "mcs": {"DeepReview": 0.634, "human": 0.566},
}


def _failed(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def score_reviews(reviews: Sequence[Review], units: PaperUnits, *, claim_policy: str = "top3_weighted",
                  consensus: str = "all") -> dict[str, dict[str, Any]]:
    """Every PRISM score of every review (a step that failed for a review leaves its scores None + reason).

    Args:
        reviews: the paper's reviews.
        units: what :func:`~surveyalign.prism.pipeline.extract_units` extracted.
        claim_policy: novelty claim-score policy (``prism.novelty.CLAIM_POLICIES``).
        consensus: whose agreement weighs flaws: ``"all"`` reviewers or only the ``"human"`` ones.

    Returns:
        review id -> ``{"review_id", "source", "label", "depth", "novelty", "flaws", "prioritisation",
        "constructiveness", "errors", <headline metric>: value | None}``.

    Raises:
        ValueError: unknown ``consensus``.
    """
    if consensus not in ("all", "human"):
        raise ValueError(f"consensus must be 'all' or 'human', got {consensus!r}")
    pool_ids = ({r.review_id for r in reviews if r.source == "human"} if consensus == "human"
                else {r.review_id for r in reviews})
    by_pool = {f.flaw_id: f for f in units.pool}
    out: dict[str, dict[str, Any]] = {}
    for review in reviews:
        rid = review.review_id
        entry: dict[str, Any] = {"review_id": rid, "source": review.source, "label": review.label, "errors": {}}
        parts = {
            "depth": (units.adus.get(rid), depth_of_analysis),
            "novelty": (units.claims.get(rid), lambda c: novelty_scores(c, claim_policy)),
            "constructiveness": (units.comments.get(rid), constructiveness),
        }
        for name, (got, fn) in parts.items():
            entry[name] = None if _failed(got) or got is None else fn(got)
            if entry[name] is None:
                entry["errors"][name] = _failed(got) or "not extracted"
        flaws = units.review_flaws.get(rid)
        if _failed(flaws) or flaws is None:
            entry["flaws"] = entry["prioritisation"] = None
            entry["errors"]["flaws"] = entry["errors"]["prioritisation"] = _failed(flaws) or "not extracted"
        else:
            entry["flaws"] = flaw_recall(units.pool, rid, pool_ids)
            crits = []
            for f in flaws:
                pooled = by_pool.get(f.get("pool_id", ""))
                severity = pooled.severity if pooled is not None and pooled.valid else "none"
                crits.append(RankedCritique(severity, f["section"], f["quote"], f["text"]))
            entry["prioritisation"] = ncps(crits, review.text)
        for key, _ in HEADLINE_METRICS:
            entry[key] = next((part[key] for part in (entry[n] for n in ("depth", "novelty", "flaws",
                               "prioritisation", "constructiveness")) if part and key in part), None)
        out[rid] = entry
    return out


def comparison_rows(scores: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One row per headline metric: the human mean, each system's value and its difference to the humans.

    Args:
        scores: :func:`score_reviews` output.

    Returns:
        ``[{"metric", "label", "human", "n_human", "systems": {label: value}, "delta": {label: value - human},
        "reference": {reviewer: value}}]`` (None where a value is missing).
    """
    humans = {rid: s for rid, s in scores.items() if s["source"] == "human"}
    systems: dict[str, dict[str, Any]] = {}
    for rid, s in scores.items():
        if s["source"] == "system":
            systems.setdefault(s["label"], {})[rid] = s
    rows = []
    for key, label in HEADLINE_METRICS:
        human = mean_over_reviews(humans, (key,))
        row = {"metric": key, "label": label, "human": human[key], "n_human": human[f"n_{key}"],
               "systems": {}, "delta": {}, "reference": REFERENCE_FIGURES.get(key, {})}
        for name, group in systems.items():
            value = mean_over_reviews(group, (key,))[key]
            row["systems"][name] = value
            row["delta"][name] = None if value is None or human[key] is None else value - human[key]
        rows.append(row)
    return rows


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def format_comparison(rows: Sequence[Mapping[str, Any]]) -> str:
    """The comparison as a markdown table (systems vs the mean of the human reviewers, reference beside)."""
    names = sorted({n for r in rows for n in r["systems"]})
    head = ["metric", "human mean (n)", *[f"{n} (Δ vs human)" for n in names], "project page"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        cells = [r["label"], f"{_fmt(r['human'])} ({r['n_human']})"]
        for n in names:
            delta = r["delta"].get(n)
            cells.append(f"{_fmt(r['systems'].get(n))} ({'-' if delta is None else f'{delta:+.3f}'})")
        cells.append(", ".join(f"{k} {v:.3f}" for k, v in r["reference"].items()) or "")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _jsonable(obj: Any) -> Any:
    if hasattr(obj, "__dataclass_fields__"):
        return {k: _jsonable(getattr(obj, k)) for k in obj.__dataclass_fields__}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(x) for x in obj]
    if isinstance(obj, (set, frozenset)):
        return sorted(obj)
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    return obj


def paper_sha256(paper: Submission) -> str:
    """SHA-256 of what PRISM reads of a paper (title, abstract, body): recorded in ``paper.json`` so a run folder
    says whose run it holds."""
    return content_sha256(json.dumps([paper.title, paper.abstract, paper.text], ensure_ascii=False))


def run_owner(folder: str | Path, paper: Submission) -> dict[str, Any] | None:
    """Whose PRISM run ``folder`` holds, for :func:`surveyalign.paths.name_beside_earlier`.

    Returns:
        ``None`` when the folder has no ``paper.json``; else ``{"sha256", "source"}`` of the paper it records
        (``source``: its paper id; ``{}`` when unreadable). A ``paper.json`` written before the hash was recorded
        counts as ``paper``'s when its id and title agree.
    """
    record = _earlier_record(Path(folder) / "paper.json")
    if not record:
        return record
    same = "sha256" not in record and (record.get("paper_id"), record.get("title")) == (paper.paper_id, paper.title)
    return {"sha256": paper_sha256(paper) if same else record.get("sha256"), "source": record.get("paper_id")}


def _prior_line(priors: Sequence[Any]) -> str:
    """`` Prior work: N paper(s), K without an abstract (judged on the title alone).`` (empty without priors):
    Semantic Scholar's ``abstract: null`` is counted, never passed off as an abstract."""
    if not priors:
        return ""
    missing = sum(not (p.abstract or "").strip() for p in priors)
    return (f" Prior work for novelty: {len(priors)} paper(s), {missing} without an abstract"
            + (" (judged on the title alone)." if missing else "."))


def _review_owner(path: Path) -> dict[str, Any] | None:
    """``{"sha256"}`` of the review an earlier ``reviews/<id>.json`` holds; ``None`` when absent or written before
    the hash was recorded (then it is this review's own earlier file)."""
    record = _earlier_record(path)
    if not record:
        return record
    return {"sha256": record["sha256"]} if record.get("sha256") else None


def _earlier_record(path: Path) -> dict[str, Any] | None:
    """The JSON object an earlier run wrote at ``path``: ``None`` when absent, ``{}`` when unreadable or not an
    object (its owner cannot be told)."""
    if not path.exists():
        return None
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return record if isinstance(record, dict) else {}


def hidden_records(paper: Submission, reviews: Sequence[Review]) -> dict[str, dict[str, Any]]:
    """The hidden-text records of a PRISM run: ``{"paper <id>": record, "review <id>": record}`` for the paper and
    each review that carries one (:func:`surveyalign.documents.hidden.document_hidden`; readers set them).

    Args:
        paper: the paper (``Submission.hidden``).
        reviews: its reviews (``Review.hidden``, set for reviews read from markdown / text files).

    Returns:
        name -> record, the paper first; ``{}`` when nothing carries a record.
    """
    records = {f"paper {paper.paper_id}": paper.hidden} if paper.hidden is not None else {}
    records.update({f"review {r.review_id}": r.hidden for r in reviews if r.hidden is not None})
    return records


def write_run(out_dir: str | Path, paper: Submission, reviews: Sequence[Review], units: PaperUnits,
              scores: Mapping[str, Mapping[str, Any]], run_config: Mapping[str, Any]) -> dict[str, Path]:
    """Write the run folder: ``reviews/<id>.json`` (the safe id; + a short hash when two ids make one name), ``paper.json``, ``comparison.md`` / ``.json``,
    ``extraction.json`` (every failure, default and left-out item) and ``run_config.json``. ``paper.json`` holds
    ``"hidden_text"`` (:func:`hidden_records`) and ``comparison.md`` ends with its "Hidden text" section.

    Returns:
        name -> path of each file written.
    """
    out = Path(out_dir)
    (out / "reviews").mkdir(parents=True, exist_ok=True)
    written: dict[str, Path] = {}
    # distinct ids whose safe names coincide ("a/b" and "a_b") get a hash each: no review file replaces another
    names = unique_output_names([r.review_id for r in reviews], [r.review_id for r in reviews], fallback="review")
    for review, name in zip(reviews, names.names, strict=True):
        rid = review.review_id
        digest = content_sha256(review.text)
        # an earlier run's file of another review under this name (same paper, other reviews) stays
        name = name_beside_earlier(name, digest, _review_owner(out / "reviews" / f"{name}.json")) or name
        record = {**scores[rid], "sha256": digest, "units": {
            "adus": _jsonable(units.adus.get(rid)), "novelty_claims": _jsonable(units.claims.get(rid)),
            "flaws": _jsonable(units.review_flaws.get(rid)), "comments": _jsonable(units.comments.get(rid))}}
        path = out / "reviews" / f"{name}.json"
        path.write_text(json.dumps(_jsonable(record), indent=2, ensure_ascii=False) + "\n")
        written[f"review:{rid}"] = path
    rows = comparison_rows(scores)
    pool = [_jsonable(f) for f in units.pool]
    paper_record = {
        "paper_id": paper.paper_id, "sha256": paper_sha256(paper), "title": paper.title, "submission_date": str(paper.submission_date or ""),
        "submission_year": paper.submission_year, "n_reviews": len(reviews),
        "paper_chars": len(paper.text), "validation_chars": (units.validation_read or {}).get(
            "chars_read", min(len(paper.text), run_config.get("max_paper_chars", 0))),
        "validation_cut_by": (units.validation_read or {}).get("cut_by"),
        "n_human": sum(r.source == "human" for r in reviews), "flaw_pool": pool,
        "n_valid_critical": sum(f.counted and f.severity == "critical" for f in units.pool),
        "n_valid_minor": sum(f.counted and f.severity == "minor" for f in units.pool),
        "prior_work": _jsonable(units.priors), "novelty_note": units.novelty_note,
        "n_prior_without_abstract": sum(not (p.abstract or "").strip() for p in units.priors),
        "extraction_counts": units.log.counts, "n_failed_extractions": units.log.n_failed,
        "n_defaults": len(units.log.defaults), "n_invalid_items": len(units.log.invalid),
        "comparison": rows, "reviews": {rid: {k: s[k] for k, _ in HEADLINE_METRICS} for rid, s in scores.items()},
        "hidden_text": hidden_records(paper, reviews),
    }
    files = {
        "paper.json": paper_record,
        "comparison.json": rows,
        "extraction.json": {"counts": units.log.counts, "failures": units.log.failures,
                            "defaults": units.log.defaults, "invalid": units.log.invalid,
                            "notes": units.log.notes},
        "run_config.json": dict(run_config),
    }
    for name, payload in files.items():
        (out / name).write_text(json.dumps(_jsonable(payload), indent=2, ensure_ascii=False, default=str) + "\n")
        written[name] = out / name
    judge = (run_config.get("judge") or {}).get("describe") or {}
    model = judge.get("model") or judge.get("model_path")
    header = (f"# PRISM: paper {paper.paper_id}\n\nJudge: {judge.get('backend') or 'unknown backend'}"
              + (f", model {model}" if model else "") + (f" at {judge['base_url']}" if judge.get("base_url") else "")
              + f"; {len(reviews)} review(s), {units.log.n_failed} failed extraction(s). Paper read for flaw validation: "
              + f"{paper_record['validation_chars']:,} of {paper_record['paper_chars']:,} characters"
              + ((" (cut to fit the model context)" if paper_record["validation_cut_by"] == "context" else
                  " (cut at max_paper_chars)") if paper_record["validation_chars"] < paper_record["paper_chars"] else "")
              + "." + _prior_line(units.priors) + "\n\n")
    hidden = "\n## Hidden text\n\n" + "\n".join(hidden_section(paper_record["hidden_text"])) + "\n"
    (out / "comparison.md").write_text(header + format_comparison(rows) + hidden)
    written["comparison.md"] = out / "comparison.md"
    return written

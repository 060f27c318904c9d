"""Studies over finished evaluation runs: RQS recomputed under several RQS judges (SurveyReview App. I.4), a jury
of scoring judges, and the rating sheet for the meta-evaluation of the RQS judge (App. I.2).

Every model named here uses the one model-role shape (``backend: {kind, options}`` + ``generation: {...}``), and
every call goes through the run's call cache (``OUT/calls.jsonl``), so a study that stops resumes where it was.
The statistics are pure functions of :mod:`surveyalign.scoring` (``multi_judge_rankings``, ``combine_votes``,
``meta_evaluate``).
"""

from __future__ import annotations

import csv
import json
import random
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any, ClassVar, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from surveyalign.backends import ModelRole
from surveyalign.csvcells import escape_row
from surveyalign.evaluation.config import EvalConfigError
from surveyalign.evaluation.rundir import RunLock, now, write_json, write_jsonl
from surveyalign.scoring import (
    JURY_METHODS,
    combine_votes,
    multi_judge_rankings,
    read_predictions,
    summarize_predictions,
    validate_records,
)
from surveyalign.yamlconfig import read_yaml_mapping

__all__ = [
    "JuryConfig",
    "ModelRoleConfig",
    "RQSJudgesConfig",
    "rating_sheet",
    "run_jury",
    "run_rqs_judges",
    "write_rating_project",
    "write_rating_sheet",
]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ModelRoleConfig(ModelRole):
    """One named model in the model-role shape (:class:`surveyalign.backends.ModelRole`: ``backend: {kind,
    options}`` + ``generation``, default ``max_new_tokens: 256``) plus ``name`` and ``weight`` (> 0, its weight in a
    jury; default 1).
    """

    generation_defaults: ClassVar[dict[str, Any]] = {"max_new_tokens": 256}

    name: str = Field(..., min_length=1)
    weight: float = Field(1.0, gt=0)


def _load(cls: type[BaseModel], path: str | Path, what: str) -> Any:
    data = read_yaml_mapping(Path(path), what)
    try:
        return cls.model_validate(data)
    except ValidationError as err:
        lines = [f"{path}: {'.'.join(str(x) for x in e['loc']) or '<top level>'}: {e['msg']}" for e in err.errors()]
        raise EvalConfigError(f"invalid {what}:\n  " + "\n  ".join(lines)) from None


class RQSJudgesConfig(_Strict):
    """``surveyalign rqs-judges --config YAML`` (App. I.4): systems (run folders) x RQS judges.

    Keys: ``systems`` ({name: run folder}), ``judges`` (list of :class:`ModelRoleConfig`), ``jury`` (optional
    ``{method: mean|median|majority}``: adds a column that combines the judges' ratings with their weights),
    ``output_dir``, ``bootstrap`` (paper-level resamples for the Kendall tau intervals), ``seed``,
    ``concurrency``.
    """

    systems: dict[str, str] = Field(..., min_length=1)
    judges: list[ModelRoleConfig] = Field(..., min_length=1)
    jury: dict[str, Any] | None = None
    output_dir: str = "runs/rqs-judges"
    bootstrap: int = Field(1000, ge=0)
    seed: int = 0
    concurrency: int | None = Field(None, ge=1)

    @field_validator("jury")
    @classmethod
    def _jury(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        if value is not None:
            method = value.get("method", "mean")
            if method not in JURY_METHODS or set(value) - {"method", "name"}:
                raise ValueError(f"jury takes method ({', '.join(JURY_METHODS)}) and name, got {value}")
        return value

    @model_validator(mode="after")
    def _unique(self) -> RQSJudgesConfig:
        names = [j.name for j in self.judges]
        if len(set(names)) != len(names):
            raise ValueError(f"judge names repeat: {names}")
        return self

    @classmethod
    def from_yaml(cls, path: str | Path) -> RQSJudgesConfig:
        """Read and validate; errors name the file and the key (:class:`EvalConfigError`)."""
        return _load(cls, path, "rqs-judges config")


def _slug(name: str) -> str:
    from surveyalign.evaluation.config import run_slug as slug

    return slug(name)


def _titles(run_dir: Path) -> dict[str, str]:
    """``{unit_id: survey title}`` from the dataset named in the run's run_config.json (empty when unreadable)."""
    try:
        cfg = json.loads((run_dir / "run_config.json").read_text(encoding="utf-8"))
        path = (cfg.get("data") or {}).get("path") or (cfg.get("config") or {}).get("dataset") or cfg.get("dataset")
        if not path or not Path(path).exists():
            return {}
        from surveyalign.data import load_surveyreview

        out = {}
        for split in load_surveyreview(str(path)).values():
            out.update({r["unit_id"]: r["title"] or "" for r in split.select_columns(["unit_id", "title"])})
        return out
    except (OSError, ValueError, AttributeError, KeyError):
        return {}


def _units_of(records: list[dict[str, Any]], titles: Mapping[str, str]) -> list[Any]:
    from surveyalign.evaluation.units import Unit

    return [Unit(row={"unit_id": r["unit_id"], "title": titles.get(r["unit_id"], r.get("title") or ""),
                      "rationales": list(r.get("reference_rationales") or [])}, dimension=r["dimension"])
            for r in records]


def run_rqs_judges(config: RQSJudgesConfig, *, backends: Mapping[str, Any] | None = None,
                   progress: bool = False) -> dict[str, Any]:
    """Rate every system's scored rationales with every RQS judge and compare the rankings (App. I.4).

    Args:
        config: the validated study config.
        backends: ``{judge name: built backend}`` to use instead of building ``backend`` (tests, scripted judges).
        progress: show progress bars.

    Returns:
        The :func:`surveyalign.scoring.multi_judge_rankings` result plus ``counts`` ({judge: {system: {"rated",
        "failed"}}}), ``answers`` ({judge: {"reused", "retried", "made"}}: a rating that errored or could not be
        read is asked again on a re-run), ``dimensions`` ({system: its scored dimensions}), ``scope_marks``
        ({system: "" or the mark of an average over fewer dimensions than the table}) and ``scope_notes``, ``jury`` (its name and method, or None) and ``output_dir``; also written to
        ``OUT/rqs_judges.json`` with every rating in ``OUT/ratings.jsonl``.

    Raises:
        FileNotFoundError: a system's run folder has no predictions.jsonl.
        ValueError: a system's records are invalid, or no judge rated any unit.
        RuntimeError: another process holds the output folder.
    """
    from surveyalign.calls import CallCache
    from surveyalign.evaluation.judges import build_backends, close_backend
    from surveyalign.evaluation.plan import execute
    from surveyalign.evaluation.rqs import attach_ratings, rqs_calls

    out = Path(config.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    records = {name: validate_records(read_predictions(Path(folder))) for name, folder in config.systems.items()}
    units = {name: _units_of(recs, _titles(Path(config.systems[name]))) for name, recs in records.items()}
    ratings: dict[str, dict[str, dict[str, float | None]]] = {}
    counts: dict[str, dict[str, dict[str, int]]] = {}
    answers: dict[str, dict[str, int]] = {}  # per RQS judge: reused / retried / made
    built = []
    with RunLock(out / ".lock"):
        try:
            for judge in config.judges:
                cache_dir = out / _slug(judge.name)
                cache_dir.mkdir(parents=True, exist_ok=True)
                cache = CallCache.load(cache_dir / "calls.jsonl")
                backend = (backends or {}).get(judge.name)
                if backend is None:
                    backend = build_backends(judge.backend, [None])[0]["shared"]
                    built.append(backend)
                runner = SimpleNamespace(concurrency=config.concurrency, batch_size=None, progress=progress,
                                         name=judge.name)
                ratings[judge.name], counts[judge.name] = {}, {}
                for system, recs in records.items():
                    preds = [dict(r) for r in recs]
                    todo, _ = rqs_calls(units[system], preds, backend, judge.generation, cache)
                    execute(todo, runner, cache, "rqs")
                    attach_ratings(units[system], preds, backend, judge.generation, cache)
                    ratings[judge.name][system] = {p["unit_id"]: p["consistency"] for p in preds
                                                   if p["status"] == "scored"}
                    got = ratings[judge.name][system]
                    counts[judge.name][system] = {"rated": sum(v is not None for v in got.values()),
                                                  "failed": sum(v is None for v in got.values())}
                answers[judge.name] = dict(cache.counts)
                cache.close()
        finally:
            for b in built:
                close_backend(b)
    if not any(c["rated"] for per in counts.values() for c in per.values()):
        raise ValueError("no RQS judge rated any unit (every call failed or no system has a scored unit)")
    jury = None
    if config.jury is not None and len(config.judges) > 1:
        method = config.jury.get("method", "mean")
        jury = {"name": config.jury.get("name") or f"jury ({method})", "method": method,
                "weights": {j.name: j.weight for j in config.judges}}
        combined: dict[str, dict[str, float | None]] = {}
        for system in records:
            combined[system] = {}
            for unit in ratings[config.judges[0].name][system]:
                votes = [ratings[j.name][system].get(unit) for j in config.judges]
                combined[system][unit] = combine_votes(votes, [j.weight for j in config.judges], method,
                                                       scale="ratings")[0]
        ratings[jury["name"]] = combined
    result = multi_judge_rankings(records, ratings, n_resamples=config.bootstrap, seed=config.seed)
    # each system's dimension set: RQS / HAS of systems judged on different sets are marked
    from surveyalign.scoring.report import average_scopes

    dims = {s: {"per_dimension": {str(r["dimension"]): {} for r in recs if r.get("status") == "scored"}}
            for s, recs in records.items()}
    marks, scope_notes = average_scopes(dims)
    result.update(counts=counts, answers=answers, jury=jury, output_dir=str(out), finished=now(),
                  dimensions={s: sorted(d["per_dimension"]) for s, d in dims.items()}, scope_marks=marks,
                  scope_notes=scope_notes)
    write_jsonl(out / "ratings.jsonl", [{"judge": j, "system": s, "unit_id": u, "consistency": v}
                                        for j, per in ratings.items() for s, m in per.items() for u, v in m.items()])
    write_json(out / "rqs_judges.json", result)
    return result


class JuryMember(_Strict):
    """One member of a scoring jury: an evaluated run folder and its weight."""

    run: str
    weight: float = Field(1.0, gt=0)
    name: str | None = None


class JuryConfig(_Strict):
    """``surveyalign jury --config YAML``: several scoring judges as one.

    Keys: ``name``, ``method`` (mean | median | majority), ``members`` (``{run: RUN_DIR, weight, name}``: run
    folders of ``surveyalign evaluate``, each cached and resumable), ``min_votes`` (a unit with fewer member
    scores is ``parse_failed`` with the reason "jury: too few votes"), ``output_dir``, ``run_name``, ``bootstrap``.
    """

    name: str = Field(..., min_length=1)
    method: Literal["mean", "median", "majority"] = "majority"
    members: list[JuryMember] = Field(..., min_length=2)
    min_votes: int = Field(1, ge=1)
    output_dir: str = "runs/eval"
    run_name: str | None = None
    bootstrap: int = Field(1000, ge=0)

    @classmethod
    def from_yaml(cls, path: str | Path) -> JuryConfig:
        """Read and validate; errors name the file and the key (:class:`EvalConfigError`)."""
        return _load(cls, path, "jury config")


def run_jury(config: JuryConfig) -> tuple[Path, dict[str, Any]]:
    """Combine the members' predictions unit by unit into a run folder of the jury.

    The jury's unit is scored when at least ``min_votes`` members scored it; its ``votes`` field keeps every
    member's score (None for a failure) and ``consistency`` is the weighted mean of the members' consistency
    scores where they have them. The units are those of the first member; a unit another member lacks counts as
    a missing vote.

    Returns:
        ``(run folder, metrics)``; the folder holds predictions.jsonl, metrics.json and run_config.json.

    Raises:
        FileNotFoundError: a member has no predictions.jsonl.
        ValueError: a member's records are invalid, or two members disagree on a unit's reference.
    """
    members = [(m.name or Path(m.run).name, m.weight, {r["unit_id"]: r for r in
                                                       validate_records(read_predictions(Path(m.run)))})
               for m in config.members]
    first = members[0][2]
    out: list[dict[str, Any]] = []
    for uid, base in first.items():
        votes, weights, cons = [], [], []
        for name, weight, recs in members:
            r = recs.get(uid)
            if r is not None and r["reference"] != base["reference"]:
                raise ValueError(f"unit {uid}: reference {r['reference']} in member {name} but {base['reference']} "
                                 f"in {members[0][0]}; the members are not on the same data")
            votes.append(None if r is None else r["prediction"])
            weights.append(weight)
            if r is not None and r.get("consistency") is not None:
                cons.append((r["consistency"], weight))
        n_votes = sum(v is not None for v in votes)
        value, why = combine_votes(votes, weights, config.method)
        rec = {k: base[k] for k in ("unit_id", "paper_id", "review_id", "source", "dimension", "reference")
               if k in base}
        rec["reference_rationales"] = base.get("reference_rationales") or []
        rec["votes"] = {name: v for (name, _, _), v in zip(members, votes)}
        if value is None or n_votes < config.min_votes:
            rec.update(prediction=None, status="parse_failed", error=why or f"jury: too few votes ({n_votes} of "
                       f"{len(members)}, min_votes {config.min_votes})", rationale="")
        else:
            rec.update(prediction=int(value), status="scored", error=None, rationale=base.get("rationale") or "")
        rec["consistency"] = (sum(c * w for c, w in cons) / sum(w for _, w in cons)) if cons and \
            rec["status"] == "scored" else None
        out.append(rec)
    run_dir = Path(config.output_dir) / (config.run_name or config.name.replace(" ", "-"))
    run_dir.mkdir(parents=True, exist_ok=True)
    write_jsonl(run_dir / "predictions.jsonl", out)
    metrics = summarize_predictions(out, bootstrap=config.bootstrap)
    write_json(run_dir / "metrics.json", metrics)
    write_json(run_dir / "run_config.json", {"name": config.name, "kind": "jury", "method": config.method,
                                             "members": [m.model_dump() for m in config.members],
                                             "min_votes": config.min_votes, "finished": now()})
    return run_dir, metrics


def rating_sheet(records: Sequence[Mapping[str, Any]], *, n: int | None = None, seed: int = 0) -> list[dict[str, str]]:
    """Rows of a sheet for people to rate rationale consistency (App. I.2): one (reference, predicted) pair each.

    Args:
        records: prediction records of one run; only scored units with a rationale are eligible.
        n: at most this many pairs, drawn at random (``random.Random(seed)``), spread over the dimensions in turn;
            None: all.
        seed: the draw's seed.

    Returns:
        ``[{"pair_id" (the unit_id), "dimension", "paper_id", "reference_rationale", "predicted_rationale",
        "rating" ("" to fill in, 0.0-1.0)}]`` sorted by pair_id. The judge's own rating is left out so raters
        are blind to it.
    """
    eligible = [r for r in records if r.get("status") == "scored" and str(r.get("rationale") or "").strip()]
    rng = random.Random(seed)
    if n is not None and n < len(eligible):
        by_dim: dict[str, list[Mapping[str, Any]]] = {}
        for r in eligible:
            by_dim.setdefault(str(r["dimension"]), []).append(r)
        for v in by_dim.values():
            rng.shuffle(v)
        chosen: list[Mapping[str, Any]] = []
        while len(chosen) < n:
            for d in sorted(by_dim):
                if by_dim[d] and len(chosen) < n:
                    chosen.append(by_dim[d].pop())
        eligible = chosen
    rows = [{"pair_id": str(r["unit_id"]), "dimension": str(r["dimension"]), "paper_id": str(r.get("paper_id") or ""),
             "reference_rationale": "\n".join(f"- {s}" for s in (r.get("reference_rationales") or [])),
             "predicted_rationale": str(r.get("rationale") or ""), "rating": ""} for r in eligible]
    return sorted(rows, key=lambda row: row["pair_id"])


#: Label Studio labeling config of the rating project: both rationales side by side, one rating from 0.0 to 1.0.
RATING_LABEL_CONFIG = """<View>
  <Header value="$dimension: does the predicted rationale agree with the reviewer's?"/>
  <Text name="reference" value="$reference_rationale"/>
  <Text name="predicted" value="$predicted_rationale"/>
  <Choices name="rating" toName="predicted" choice="single" showInline="true" required="true">
    <Choice value="0.0"/><Choice value="0.2"/><Choice value="0.4"/><Choice value="0.6"/><Choice value="0.8"/><Choice value="1.0"/>
  </Choices>
</View>
"""


def write_rating_project(rows: Sequence[Mapping[str, str]], out: str | Path) -> tuple[Path, Path]:
    """A Label Studio project for the rating (STYLE 20: Label Studio does the annotating, we adapt to it).

    Writes ``OUT/labeling_config.xml`` (:data:`RATING_LABEL_CONFIG`) and ``OUT/tasks.json`` (one task per
    :func:`rating_sheet` row, its fields under ``data``). Import both into Label Studio; its JSON export is read back
    by ``surveyalign meta-eval score --ratings EXPORT.json`` (:func:`surveyalign.scoring.read_ratings`).

    Returns:
        ``(labeling_config.xml, tasks.json)``.
    """
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "labeling_config.xml").write_text(RATING_LABEL_CONFIG, encoding="utf-8")
    tasks = [{"data": {k: v for k, v in row.items() if k != "rating"}} for row in rows]
    (folder / "tasks.json").write_text(json.dumps(tasks, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return folder / "labeling_config.xml", folder / "tasks.json"


def write_rating_sheet(rows: Sequence[Mapping[str, str]], path: str | Path) -> Path:
    """Write :func:`rating_sheet` rows as CSV (UTF-8, header first; a cell a spreadsheet would run as a formula
    escaped: :func:`surveyalign.csvcells.escape_cell`, undone by the reader of the filled sheet); returns the path."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    fields = ["pair_id", "dimension", "paper_id", "reference_rationale", "predicted_rationale", "rating"]
    with p.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=fields)
        writer.writeheader()
        writer.writerows(escape_row(row) for row in rows)
    return p

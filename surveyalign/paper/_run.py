"""``run_paper``: the stages of ``surveyalign paper`` in order, each skipped when its fingerprint is unchanged."""

from __future__ import annotations

import json
import shlex
import time
from typing import Any

from surveyalign.paper._config import STAGES, PaperConfig
from surveyalign.paper._evaluate import evaluate_stage, planned_runs
from surveyalign.paper._stages import (
    PaperRun,
    StageFailed,
    StageRecord,
    content_sha,
    run_logged,
    select_stages,
    upstream_of,
)
from surveyalign.paper._tables import write_tables


def _data(run: PaperRun) -> dict[str, Any]:
    from surveyalign.data import build_dataset

    release = run.release()
    run.say(f"      surveyalign data build --official {release} --out {run.paths.data} --seed {run.cfg.seed}")
    build_dataset(release, run.paths.data, sources=run.cfg.resolve(run.cfg.sources) if run.cfg.sources else None,
                  seed=run.cfg.seed)
    return {"outputs": [str(run.paths.data)]}


def _ka(run: PaperRun) -> dict[str, Any]:
    from surveyalign.knowledge import (
        CitationGraph,
        KAConfig,
        build_ka_dataset,
        sample_graph,
    )

    ka = run.cfg.knowledge
    run.say(f"      surveyalign ka build --dataset {run.paths.data} --graph {ka.graph} --out {run.paths.ka} "
            f"--config {ka.config}")
    graph = sample_graph(run.paths.data) if ka.graph == "sample" else CitationGraph.load(run.cfg.resolve(ka.graph))
    backend = None
    if ka.summariser == "extractive":
        from surveyalign.backends import load_backend
        from surveyalign.testing import extractive_summary_reply

        backend = load_backend("scripted", replies=extractive_summary_reply)
        run.say("      Crit-KA summaries: the extractive stand-in (surveyalign.testing; not a model)")
    report = build_ka_dataset(run.paths.data, graph, run.paths.ka, KAConfig.from_yaml(run.cfg.resolve(ka.config)),
                              backend=backend, progress=True)
    run.say(f"      {report.n_records} KA records ({report.n_empty} empty), {report.n_units_with_knowledge} units "
            "with knowledge")
    if not report.n_units_with_knowledge:
        raise StageFailed(f"stage ka: no unit got a knowledge text from {ka.graph}; Comprehensiveness and "
                          "Criticalness would train without Comp-KA / Crit-KA (check the graph and the KA config)")
    return {"outputs": [str(run.paths.ka)], "units_with_knowledge": report.n_units_with_knowledge}


def _train(run: PaperRun, stage: str, upstream: dict[str, str | None]) -> dict[str, Any]:
    """SFT or DPO of every adapter the config needs; an adapter whose own inputs did not change is kept."""
    dpo = stage == "dpo"
    record = run.record.data if run.record else {}
    # adapters of the last finished stage, and those an interrupted or failed run of this stage finished
    earlier = {**(record.get(stage) or {}).get("adapters", {}), **(record.get(f"{stage}:progress") or {})}
    adapters: dict[str, str] = {}
    outputs: list[str] = []
    todo = [(d, k) for d, k, is_dpo in run.cfg.trainings() if is_dpo == dpo]
    for i, (dim, knowledge) in enumerate(todo, 1):
        key = run.cfg.adapter_key(dim, knowledge, dpo)
        inputs = run.dpo_inputs(dim, knowledge, upstream) if dpo else run.sft_inputs(dim, knowledge, upstream)
        fp = content_sha(inputs)
        out = run.paths.adapter(run.cfg, dim, knowledge, dpo)
        adapters[key] = fp
        outputs.append(str(out))
        if earlier.get(key) == fp and (out / "adapter_config.json").exists():
            run.say(f"      [{i}/{len(todo)}] {key}: up to date ({out})")
            continue
        cmd = run.dpo_command(dim, knowledge) if dpo else run.sft_command(dim, knowledge)
        started = (record.get(f"{stage}:started") or {}) if run.record is not None else {}
        if out.exists() and any(out.iterdir()) and started.get(key) != fp:
            # the folder holds a run of other inputs or settings: the recipe refuses it unless told to replace it;
            # a run of these same inputs that was interrupted resumes from its checkpoint instead
            cmd += ["--overwrite", "true"]
        if run.record is not None:
            run.record.save(f"{stage}:started", {**started, key: fp})
        run.say(f"      [{i}/{len(todo)}] {key}: {shlex.join(cmd)}")
        t0 = time.time()
        run_logged(cmd, run.paths.logs / f"{key}.log", run.say, stage)
        if not (out / "adapter_config.json").exists():
            raise StageFailed(f"stage {stage}: {key} finished without an adapter in {out}; log "
                              f"{run.paths.logs / f'{key}.log'}")
        trained = json.loads((out / "surveyalign_training.json").read_text())
        with_k = trained.get("n_train_with_knowledge")
        run.say(f"      {key}: trained in {time.time() - t0:.0f} s"
                + (f"; {with_k}/{trained.get('n_train')} examples carried knowledge" if with_k is not None else ""))
        if run.record is not None:
            done = {**(run.record.data.get(f"{stage}:progress") or {}), key: fp}
            run.record.save(f"{stage}:progress", done)
    return {"outputs": outputs, "adapters": adapters}


def _pairs(run: PaperRun, upstream: dict[str, str | None]) -> dict[str, Any]:
    from surveyalign.training.pairs import make_dpo_pairs

    p = run.cfg.dpo.pairs
    outputs, counts = [], {}
    for dim, knowledge, is_dpo in run.cfg.trainings():
        if not is_dpo:
            continue
        out = run.paths.pair_file(dim, knowledge)
        run.say("      " + shlex.join(run.pairs_command(dim, knowledge)))
        out.parent.mkdir(parents=True, exist_ok=True)
        for stale in (out, out.with_name(out.name + ".summary.json")):
            stale.unlink(missing_ok=True)  # the command appends; a changed SFT adapter makes new pairs
        summary = make_dpo_pairs(
            str(run.dataset_for(knowledge)), str(run.paths.adapter(run.cfg, dim, knowledge, False)), out, k=p.k,
            split="train", use_knowledge=knowledge, temperature=p.temperature, max_new_tokens=p.max_new_tokens,
            max_length=p.max_length, seed=run.cfg.seed, fallback_model=p.fallback_model, limit=p.limit,
            batch_size=p.batch_size, device=p.device)
        run.say(f"      {summary.describe()}")
        if not summary.n_paired_in_file:
            raise StageFailed(f"stage dpo-pairs: no unit got a pair in {out} ({summary.n_no_pair_in_file} units "
                              "recorded with their reason); raise dpo.pairs.k or temperature, or give "
                              "dpo.pairs.fallback_model")
        counts[out.stem] = summary.n_paired_in_file
        outputs.append(str(out))
    return {"outputs": outputs, "pairs": counts}


def run_paper(cfg: PaperConfig, *, console: Any, from_stage: str | None = None, until_stage: str | None = None,
              force: bool = False) -> dict[str, Any]:
    """Run SurveyReview end to end (data -> KA -> SFT x 4 -> DPO pairs -> DPO -> evaluate (K-sample vote,
    consolidated rationale, RQS, HAS) -> Tables 2, 3, 4, 7, 8), skipping unchanged stages.

    Args:
        cfg: the paper config.
        console: a ``rich`` console for progress lines.
        from_stage, until_stage: run only the stages between these (inclusive); the earlier ones must have
            finished (their record in ``stages.json`` is read).
        force: run the selected stages even when their fingerprints are unchanged.

    Returns:
        ``{"workdir", "stages": {stage: "ran" | "skipped" | "not selected"}, "seconds", "tables": {...}}``.

    Raises:
        StageFailed: a stage failed (the message names its command and log); every finished stage is kept.
        ValueError / FileNotFoundError: a bad config, or ``--from`` with an earlier stage not finished.
    """
    t0 = time.time()
    run = PaperRun(cfg, console)
    run.work.mkdir(parents=True, exist_ok=True)
    run.record = StageRecord(run.work)
    (run.work / "paper_config.json").write_text(json.dumps(cfg.model_dump(), indent=2, default=str))
    selected = select_stages(from_stage, until_stage)
    status: dict[str, str] = {}
    tables: dict[str, Any] = {}
    for n, stage in enumerate(STAGES, 1):
        if stage not in selected:
            status[stage] = "not selected"
            continue
        upstream = {u: run.record.fingerprint(u) for u in upstream_of(stage)}
        missing = [u for u, fp in upstream.items() if fp is None]
        if missing:
            raise ValueError(f"stage {stage} reads the output of {', '.join(missing)}, which has not finished in "
                             f"{run.work}; run without --from (or --from {missing[0]})")
        fp = content_sha(run.stage_inputs(stage, upstream))
        if not force and run.record.done(stage, fp):
            run.say(f"==> [{n}/{len(STAGES)}] {stage}: up to date, skipped")
            status[stage] = "skipped"
            if stage == "tables":
                tables = run.record.data[stage].get("tables", {})
            continue
        run.say(f"==> [{n}/{len(STAGES)}] {stage}")
        started = time.time()
        if stage == "data":
            entry = _data(run)
        elif stage == "ka":
            entry = _ka(run)
        elif stage in ("sft", "dpo"):
            entry = _train(run, stage, upstream)
        elif stage == "dpo-pairs":
            entry = _pairs(run, upstream)
        elif stage == "evaluate":
            entry = evaluate_stage(run)
        else:
            entry = write_tables(run)
            tables = entry.get("tables", {})
        run.record.save(stage, {**entry, "fingerprint": fp, "seconds": round(time.time() - started, 1),
                                "finished": time.strftime("%Y-%m-%dT%H:%M:%S")})
        status[stage] = "ran"
    seconds = round(time.time() - t0, 1)
    run.say(f"\nDone in {seconds:.0f} s ({', '.join(f'{s}: {v}' for s, v in status.items())}). Run folder: {run.work}")
    for name in ("table2.md", "table3.md", "table4.md", "table7.md", "table8.md", "paper.html"):
        if (run.work / name).exists():
            run.say(f"  {run.work / name}")
    return {"workdir": str(run.work), "stages": status, "seconds": seconds, "tables": tables}


def plan_paper(cfg: PaperConfig, *, console: Any, from_stage: str | None = None,
               until_stage: str | None = None) -> dict[str, Any]:
    """What ``run_paper`` would do, before anything runs: each stage (would run / up to date), its commands,
    the training GPU-hours estimate and the evaluation calls and API cost (from ``surveyalign evaluate --plan``
    of each run when the dataset exists).

    GPU-hours: 6 x parameters x training tokens FLOPs at ``plan.gpu_tflops`` x ``plan.mfu`` per GPU (a rough
    figure: tokens = examples x epochs x the recipe's max_length, an upper bound).

    Returns:
        ``{"stages": [{"stage", "state", "commands"}], "gpu_hours": float | None, "gpu_hours_note": str,
        "evaluation": [...]}``; nothing is written.
    """
    from surveyalign.paper._plan import gpu_hours, stage_commands

    run = PaperRun(cfg, console)
    record = StageRecord(run.work) if run.work.exists() else None
    run.record = record
    selected = select_stages(from_stage, until_stage)
    rows = []
    for stage in STAGES:
        state = "not selected"
        if stage in selected:
            state = "will run"
            if record is not None:
                upstream = {u: record.fingerprint(u) for u in upstream_of(stage)}
                try:
                    fp = content_sha(run.stage_inputs(stage, upstream)) if all(upstream.values()) else None
                except FileNotFoundError:
                    fp = None
                if fp is not None and record.done(stage, fp):
                    state = "up to date (skipped)"
        rows.append({"stage": stage, "state": state, "commands": stage_commands(run, stage)})
    hours, note = gpu_hours(run)
    evaluation = planned_runs(run, console) if run.paths.ka.exists() else []
    out = {"stages": rows, "gpu_hours": hours, "gpu_hours_note": note, "evaluation": evaluation}
    run.say(f"Plan of `surveyalign paper` ({cfg.profile}) in {run.work}: nothing is run or sent.")
    for row in rows:
        run.say(f"  {row['stage']:<10} {row['state']}")
        for c in row["commands"]:
            run.say(f"      {c}")
    run.say(f"  training: {'?' if hours is None else f'{hours:.1f}'} GPU-hours ({note})")
    if evaluation:
        for e in evaluation:
            run.say(f"  evaluate {e['run']}: {e['summary']}")
    else:
        run.say("  evaluation calls and API cost: known once the data and ka stages have run (`--until ka`)")
    return out


__all__ = ["plan_paper", "run_paper"]

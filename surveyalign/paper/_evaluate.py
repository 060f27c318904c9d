"""The evaluate stage of ``surveyalign paper``: SurveyAlign, the baselines and the variants, one RQS judge for all.

Every run is an evaluation config written to ``WORKDIR/configs/<run>.yaml`` and run by the function behind
``surveyalign evaluate --config`` (SurveyReview §6.1; K-sample vote and consolidated rationale: App. E; RQS: App. G).
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import yaml

from surveyalign.constants import DIMENSIONS
from surveyalign.paper._stages import PaperRun

#: Run folder name of the SurveyAlign row.
SURVEYALIGN = "surveyalign"


def rqs_judge_name(run: PaperRun) -> str:
    """The RQS judge named in every table: the lexical stand-in, or the model role's model id."""
    from surveyalign.testing import LEXICAL_RQS_NAME

    rqs = run.cfg.rqs
    if rqs.judge == "lexical":
        return LEXICAL_RQS_NAME
    options = (rqs.backend or {}).get("options") or {}
    return str(options.get("model") or (rqs.backend or {}).get("kind"))


def _rqs_block(run: PaperRun) -> dict[str, Any]:
    rqs = run.cfg.rqs
    if rqs.judge == "lexical":
        from surveyalign.testing import LEXICAL_RQS_NAME

        return {"backend": {"kind": "scripted", "options": {}}, "name": LEXICAL_RQS_NAME}
    block: dict[str, Any] = {"backend": rqs.backend, "name": rqs_judge_name(run)}
    if rqs.generation:
        block["generation"] = rqs.generation
    return block


def _common(run: PaperRun) -> dict[str, Any]:
    ev = run.cfg.evaluate
    out: dict[str, Any] = {"split": ev.split, "output_dir": str(run.paths.eval), "bootstrap": ev.bootstrap,
                           "has": {"alpha": list(run.cfg.has.alpha), "beta": list(run.cfg.has.beta)}}
    if ev.limit:
        out["limit"] = ev.limit
    return out


def run_configs(run: PaperRun) -> dict[str, dict[str, Any]]:
    """Every evaluation run of the stage as ``{run name: {"config": dict, "kind", "variant", "rqs"}}``.

    ``kind`` is ``surveyalign`` (the four adapters of SurveyAlign, K samples), ``baseline`` (a config of
    ``evaluate.baselines``, its dataset, output folder and RQS stage set by the paper config) or ``variant`` (one
    training-time variant of Tables 3 / 4 that is not SurveyAlign's own adapter; judged on its dimension, no RQS).
    """
    cfg, ev = run.cfg, run.cfg.evaluate
    out: dict[str, dict[str, Any]] = {}
    options = {**(ev.backend.get("options") or {}), "model": run.model()}
    main = cfg.main_adapters()
    per_dim = {d: {"adapter": str(run.paths.adapter(cfg, *main[d]))} for d in DIMENSIONS}
    surveyalign = {
        **_common(run), "name": f"SurveyAlign ({Path(run.model()).name}-LoRA)", "run_name": SURVEYALIGN,
        "dataset": str(run.paths.ka), "dimensions": list(DIMENSIONS), "protocol": "v1.0",
        "samples_per_unit": ev.samples_per_unit, "knowledge_dimensions": list(cfg.knowledge_dimensions),
        "backend": {**ev.backend, "options": options, "per_dimension": per_dim},
        "generation": dict(ev.generation), "rqs": _rqs_block(run), **ev.extra,
    }
    out[SURVEYALIGN] = {"config": surveyalign, "kind": "surveyalign", "variant": None, "rqs": True}
    for path in ev.baselines:
        from surveyalign.yamlconfig import read_yaml_mapping

        data = read_yaml_mapping(cfg.resolve(path), "evaluation config")
        name = Path(path).stem
        data.update({**_common(run), "dataset": str(run.paths.ka), "run_name": name, "rqs": _rqs_block(run)})
        out[name] = {"config": data, "kind": "baseline", "variant": None, "rqs": True, "source": str(path)}
    for v in cfg.variants:
        if (v.dimension, v.knowledge, v.dpo) == main[v.dimension]:
            continue  # SurveyAlign's own adapter: its run's units of that dimension are the variant's
        name = f"variant-{v.name}"
        data = {**surveyalign, "name": f"{v.dimension} {v.label}", "run_name": name, "dimensions": [v.dimension],
                "knowledge_dimensions": [v.dimension] if v.knowledge else [],
                "backend": {**ev.backend, "options": {**options, "adapter": str(run.paths.adapter(
                    cfg, v.dimension, v.knowledge, v.dpo))}}}
        data.pop("rqs", None)
        out[name] = {"config": data, "kind": "variant", "variant": v.name, "rqs": False}
    return out


def _load(run: PaperRun, name: str, spec: dict[str, Any]):
    """Write the run's config YAML and load it as ``surveyalign evaluate --config`` would; also its RQS backend."""
    from surveyalign.evaluation import EvalConfig

    run.paths.configs.mkdir(parents=True, exist_ok=True)
    path = run.paths.configs / f"{name}.yaml"
    header = f"# written by `surveyalign paper` ({run.cfg.source}); run alone: surveyalign evaluate --config {path}\n"
    if spec["rqs"] and run.cfg.rqs.judge == "lexical":
        header += "# rqs: the lexical stand-in of surveyalign.testing, handed to the run by `surveyalign paper`\n"
    path.write_text(header + yaml.safe_dump(spec["config"], sort_keys=False))
    config = EvalConfig.from_yaml(path)
    rqs_backend = None
    if spec["rqs"] and run.cfg.rqs.judge == "lexical":
        from surveyalign.backends import load_backend
        from surveyalign.testing import lexical_rqs_reply

        rqs_backend = load_backend("scripted", replies=lexical_rqs_reply)
    return path, config, rqs_backend


def evaluate_stage(run: PaperRun) -> dict[str, Any]:
    """Run every evaluation of :func:`run_configs` (resumable: each run folder reuses its cached calls).

    Returns:
        The stage record: ``{"outputs": [run folders], "runs": {name: {"run_dir", "kind", "variant", "config",
        "rqs_judge", "n", "n_scored"}}}``.

    Raises:
        StageFailed: SurveyAlign scored no unit in some dimension (the Table 2 row would be empty there).
    """
    from surveyalign.evaluation import run_evaluation
    from surveyalign.paper._stages import StageFailed

    runs: dict[str, Any] = {}
    for name, spec in run_configs(run).items():
        path, config, rqs_backend = _load(run, name, spec)
        run.say(f"      surveyalign evaluate --config {path}")
        result = run_evaluation(config, rqs_backend=rqs_backend, console=run.console,
                                argv=["surveyalign", "paper", "--config", str(run.cfg.source), f"[{name}]"])
        per_dim = result.metrics.get("per_dimension") or {}
        runs[name] = {"run_dir": str(result.run_dir), "kind": spec["kind"], "variant": spec["variant"],
                      "config": str(path), "name": config.name, "source": spec.get("source"),
                      "rqs_judge": rqs_judge_name(run) if spec["rqs"] else None,
                      "n": result.metrics.get("n"), "n_scored": result.metrics.get("n_scored"),
                      "n_scored_per_dimension": {d: e.get("n_scored") for d, e in per_dim.items()}}
        if spec["kind"] == "surveyalign":
            empty = [d for d, e in per_dim.items() if not e.get("n_scored")]
            if empty:
                raise StageFailed(f"stage evaluate: SurveyAlign scored no unit of {', '.join(empty)} (see "
                                  f"{result.run_dir}/predictions.jsonl for the answers); Table 2 would be empty there")
    for prior in run.cfg.evaluate.prior:
        runs[f"prior-{prior.tool}"] = import_prior(run, prior)
    return {"outputs": [r["run_dir"] for r in runs.values()], "runs": runs}


def import_prior(run: PaperRun, prior: Any) -> dict[str, Any]:
    """``surveyalign import-scores`` of one prior evaluator into ``WORKDIR/eval/prior-<tool>`` (App. H mapping)."""
    import shutil

    from surveyalign.evaluation.prior import import_scores
    from surveyalign.evaluation.prior_map import PROFILES, mapping_table

    out = run.paths.eval / f"prior-{prior.tool}"
    if out.exists():
        shutil.rmtree(out)  # an earlier import of a changed file (the stage's fingerprint covers its content)
    scores = run.cfg.resolve(prior.scores)
    run.say(f"      surveyalign import-scores --from {prior.tool} --scores {scores} --dataset {run.paths.ka} "
            f"--split {run.cfg.evaluate.split} --out {out}" + (f" --model {prior.model}" if prior.model else ""))
    result = import_scores(scores, run.paths.ka, out, tool=prior.tool, mapping=mapping_table(PROFILES[prior.tool]),
                           split=run.cfg.evaluate.split, name=prior.name, model=prior.model,
                           bootstrap=run.cfg.evaluate.bootstrap, seed=run.cfg.seed,
                           argv=["surveyalign", "paper", "--config", str(run.cfg.source), f"[prior-{prior.tool}]"])
    metrics = result.metrics
    return {"run_dir": str(out), "kind": "prior", "variant": None, "config": None,
            "name": result.run_config.get("name") or prior.name or prior.tool, "source": str(scores),
            "rqs_judge": None, "n": metrics.get("n"), "n_scored": metrics.get("n_scored")}


def planned_runs(run: PaperRun, console: Any) -> list[dict[str, Any]]:
    """``surveyalign evaluate --plan`` of every run (nothing sent): ``[{"run", "plan", "summary"}]``."""
    from rich.console import Console

    from surveyalign.evaluation import run_evaluation

    quiet = Console(file=io.StringIO(), width=200)
    out = []
    for name, spec in run_configs(run).items():
        try:
            _, config, rqs_backend = _load(run, name, spec)
            result = run_evaluation(config, rqs_backend=rqs_backend, console=quiet, plan_only=True)
            plan = (result.calls or {}).get("plan") or {}
            cost = plan.get("cost_usd")
            summary = (f"{plan.get('calls', 0)} calls, {plan.get('prompt_tokens', 0):,} prompt + "
                       f"{plan.get('completion_tokens', 0):,} completion tokens, "
                       + ("no API price (local engine or unpriced)" if cost is None else f"${cost:.2f}"))
        except (ValueError, OSError) as err:
            plan = {}
            summary = (f"local adapters not trained yet (a local engine: no API cost); {err}"
                       if spec["kind"] in ("surveyalign", "variant") and "no such folder" in str(err)
                       else f"not planned: {err}")
        out.append({"run": name, "plan": plan, "summary": summary})
    return out

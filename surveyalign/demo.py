"""``surveyalign demo``: the main job end to end, small, on the embedded default.

Steps (each one the real component, at tiny sizes):

1. build a tiny random Qwen3 model and a locally trained tokenizer into a cache folder (nothing downloaded),
   unless the config names a model;
2. build the SurveyReview dataset folder from a release in the official layout (by default the made-up sample
   shipped in ``surveyalign/resources/sample_release``) with the paper-level, source-stratified split;
3. train a LoRA adapter for one dimension with ``accelerate launch recipes/sft.py --config <sft_config>``
   (TRL SFTTrainer, App. D LoRA settings);
4. evaluate that adapter and a constant-score baseline on the test split through the prompt protocol and the
   parser (the evaluation harness), computing MSE, MAE and HAS with the scoring functions;
5. print a leaderboard and write a run folder (predictions JSONL, metrics JSON, run_config.json per judge,
   plus ``leaderboard.json`` and ``run_config.json`` for the whole job).

Run it on your own data with ``surveyalign demo --config my_demo.yaml`` where the YAML names ``official`` (a
release folder), ``model`` (a local model folder) and ``sft_config``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from surveyalign import __version__
from surveyalign.argtypes import dimension_value
from surveyalign.backends import GenerationSettings
from surveyalign.paths import resource_path
from surveyalign.yamlconfig import DimensionName

_REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_CONFIG = "configs/demo.yaml"


class DemoEvalSettings(BaseModel):
    """Evaluation settings of the demo (a subset of the harness's EvalConfig).

    ``generation`` is the judges' model-role generation block (``surveyalign.backends.GenerationSettings``;
    default greedy, ``max_new_tokens: 96``, thinking off as in training; the keys given are merged over these);
    its seed is the demo's top-level ``seed``. The judges themselves are built by the demo (the trained adapter
    and the constant baseline).
    """

    model_config = ConfigDict(extra="forbid")

    split: str = Field("test", description="dataset split to evaluate on")
    protocol: str = Field("v1.0", description="prompt protocol version: v1.0 (Reason$$$X$$$) or v1.1 (tags)")
    generation: GenerationSettings = Field(default_factory=lambda: GenerationSettings(max_new_tokens=96),
                                           description="decoding settings of every judge call (seed: `seed`)")
    batch_size: int = Field(8, ge=1, description="prompts per generation batch for the local model")
    limit: int | None = Field(None, ge=1, description="evaluate at most this many units (None = all)")
    constant_score: int = Field(-1, description="score answered by the constant baseline judge (-1 = majority)")
    lexical_rqs: bool = Field(
        True, description="rate rationales with the offline lexical stand-in for the RQS judge, so HAS is shown; "
        "false = no RQS stage (HAS left undefined)")

    @model_validator(mode="before")
    @classmethod
    def _generation_block(cls, data: Any) -> Any:
        """Refuse the old flat generation keys with a hint; merge ``generation`` over the demo's defaults."""
        if not isinstance(data, dict):
            return data
        flat = sorted(k for k in data if k in GenerationSettings.model_fields)
        if flat:
            raise ValueError(f"old flat key(s) {', '.join(flat)}: write them under eval.generation "
                             "(generation: {temperature: ..., max_new_tokens: ..., enable_thinking: ...})")
        if data.get("generation") is None or isinstance(data["generation"], dict):
            data = {**data, "generation": {"max_new_tokens": 96, **(data.get("generation") or {})}}
        return data


class DemoKASettings(BaseModel):
    """Knowledge augmentation in the demo: ``surveyalign ka build`` between the data and training steps."""

    model_config = ConfigDict(extra="forbid")

    config: str = Field("configs/ka/demo.yaml", description="KA config YAML (surveyalign.knowledge.KAConfig)")
    graph: str = Field("sample", description="citation graph file, or 'sample' (made up around the dataset)")


class DemoConfig(BaseModel):
    """Typed configuration of ``surveyalign demo`` (YAML keys; unknown keys are rejected)."""

    model_config = ConfigDict(extra="forbid")

    workdir: str = Field("runs/demo", description="folder for every output of the job")
    cache_dir: str = Field(".cache", description="folder for the tiny model (reused across runs)")
    official: str | None = Field(None, description="release folder in the official layout (None = shipped sample)")
    sources: str | None = Field(None, description="optional JSON file mapping uid -> review source")
    seed: int = Field(42, description="seed of the paper-level split and of training")
    model: str | None = Field(None, description="local base model folder (None = build the tiny Qwen3)")
    dimension: DimensionName = Field("readability", description="dimension whose adapter is trained and evaluated")
    sft_config: str = Field("configs/sft/demo.yaml", description="recipe YAML for recipes/sft.py")
    accelerate_config: str | None = Field(None, description="accelerate config file (None = 1 local process)")
    train_overrides: list[str] = Field(default_factory=list, description="extra recipe flags, e.g. ['--max_steps', '5']")
    retrain: bool = Field(False, description="train again even if the adapter for the same inputs exists")
    eval: DemoEvalSettings = Field(default_factory=DemoEvalSettings)
    knowledge: DemoKASettings | None = Field(
        None, description="add the `knowledge` column (Comp-KA / Crit-KA) before training; None = no KA")

    @classmethod
    def from_yaml(cls, path: str | os.PathLike | None, overrides: dict[str, Any] | None = None) -> DemoConfig:
        """Load a demo config from YAML (``None`` = defaults), then apply ``overrides``.

        Raises:
            FileNotFoundError: if ``path`` does not exist.
            ValueError: naming the file and the offending key when the YAML does not validate.
        """
        from pydantic import ValidationError

        from surveyalign.yamlconfig import read_yaml_mapping, validation_line

        data: dict[str, Any] = {} if path is None else read_yaml_mapping(path, "demo config")
        data.update({k: v for k, v in (overrides or {}).items() if v is not None})
        try:
            cfg = cls.model_validate(data)
        except ValidationError as err:
            raise ValueError(validation_line(err, str(path or "<defaults>"), "demo config")) from None
        return cfg


def _resolve(path: str) -> Path:
    """A path as given if it exists relative to the cwd, else relative to the repository root."""
    p = Path(path)
    if p.is_absolute() or p.exists():
        return p
    alt = _REPO_ROOT / p
    return alt if alt.exists() else p


def _say(console, msg: str) -> None:
    console.print(f"[bold cyan]==>[/] {msg}")


def _train_adapter(cfg: DemoConfig, model_dir: Path, data_dir: Path, out_dir: Path, console) -> Path:
    """Step 3: ``accelerate launch recipes/sft.py --config ...`` in a subprocess; returns the adapter folder."""
    recipe = _resolve("recipes/sft.py")
    sft_yaml = _resolve(cfg.sft_config)
    for p in (recipe, sft_yaml):
        if not p.exists():
            raise FileNotFoundError(f"{p} not found (run the demo from the repository root)")
    cmd = [sys.executable, "-m", "accelerate.commands.launch"]
    if cfg.accelerate_config:
        cmd += ["--config_file", str(_resolve(cfg.accelerate_config))]
    else:
        cmd += ["--num_processes", "1", "--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no"]
    cmd += [str(recipe), "--config", str(sft_yaml), "--model_name_or_path", str(model_dir),
            "--dataset_path", str(data_dir), "--output_dir", str(out_dir), "--seed", str(cfg.seed),
            "--dimension", cfg.dimension, *cfg.train_overrides]
    stamp = hashlib.sha256(json.dumps([cmd[3:], sft_yaml.read_text()], sort_keys=True).encode()).hexdigest()
    stamp_file = out_dir / ".demo_stamp"
    if (not cfg.retrain and (out_dir / "adapter_config.json").exists() and stamp_file.exists()
            and stamp_file.read_text() == stamp):
        _say(console, f"adapter already trained for these inputs: {out_dir} (set retrain: true to redo)")
        return out_dir
    _say(console, "training the LoRA adapter: " + " ".join(cmd[2:]))
    log_path = out_dir.parent / "train.log"
    out_dir.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    with open(log_path, "w") as log:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
        assert proc.stdout is not None
        for line in proc.stdout:
            log.write(line)
            if any(k in line for k in ("%|", "'loss'", "Error", "error", "Traceback", "shortened", "saved")):
                sys.stdout.write(line if line.endswith("\n") else line + "\n")
        rc = proc.wait()
    if rc != 0:
        raise RuntimeError(f"training failed with exit code {rc}; see {log_path}")
    if not (out_dir / "adapter_config.json").exists():
        raise RuntimeError(f"training finished but no adapter was saved in {out_dir}; see {log_path}")
    stamp_file.write_text(stamp)
    return out_dir


def _knowledge_step(ka: DemoKASettings, data_dir: Path, out: Path, console) -> Path:
    """Step 2b: ``surveyalign ka build`` on the demo dataset; returns the folder with the ``knowledge`` column."""
    from surveyalign.knowledge import (
        CitationGraph,
        KAConfig,
        build_ka_dataset,
        sample_graph,
    )

    graph = sample_graph(data_dir) if ka.graph == "sample" else CitationGraph.load(_resolve(ka.graph))
    report = build_ka_dataset(data_dir, graph, out, KAConfig.from_yaml(_resolve(ka.config)), progress=False)
    _say(console, f"[2/5] knowledge augmentation: {report.n_records} KA records ({report.n_empty} empty), "
                  f"{report.n_units_with_knowledge} units with knowledge -> {out}")
    return out


def _evaluate_modules(run_dir: Path) -> dict[str, Any]:
    """Recompute MSE/MAE and HAS of one run through the ``evaluate`` modules in ``metrics/`` (offline)."""
    import evaluate

    rows = [json.loads(line) for line in (run_dir / "predictions.jsonl").read_text().splitlines() if line.strip()]
    rows = [r for r in rows if r["status"] != "missing_text"]
    args = {"predictions": [r["prediction"] for r in rows], "references": [r["reference"] for r in rows],
            "dimensions": [r["dimension"] for r in rows]}
    alignment = evaluate.load(str(resource_path("metrics", "survey_alignment"))).compute(**args)
    has = evaluate.load(str(resource_path("metrics", "has"))).compute(**args,
                                                                      consistency=[r.get("consistency") for r in rows])
    return {"avg_mse": alignment["avg_mse"], "avg_mae": alignment["avg_mae"], "rqs": has["rqs"],
            "align": has["align"], "has": has["has"], "has_note": has.get("has_note"),
            "n": sum(d["n"] for d in alignment["per_dimension"].values()),
            "n_scored": sum(d["n_scored"] for d in alignment["per_dimension"].values())}


def _modules_table(modules: dict[str, dict[str, Any]]) -> Any:
    """A ``rich`` table of the runs' figures as the ``evaluate`` modules compute them (:func:`_evaluate_modules`)."""
    from rich.table import Table

    table = Table(title="the same runs through evaluate.load('metrics/survey_alignment') and ('metrics/has')")
    for col in ("judge", "AVG MSE", "AVG MAE", "RQS", "Align", "HAS", "scored"):
        table.add_column(col, justify="left" if col == "judge" else "right")

    def fmt(v: float | None) -> str:
        return "-" if v is None else f"{v:.3f}"

    for judge, m in modules.items():
        table.add_row(judge, fmt(m["avg_mse"]), fmt(m["avg_mae"]), fmt(m["rqs"]), fmt(m["align"]), fmt(m["has"]),
                      f"{m['n_scored']}/{m['n']}")
    return table


def run_demo(cfg: DemoConfig) -> dict[str, Any]:
    """Run the main job described in the module docstring.

    Args:
        cfg: the demo configuration.

    Returns:
        ``{"workdir": str, "leaderboard": {judge: metrics summary}, "runs": {judge: run folder}}``.

    Raises:
        FileNotFoundError / ValueError / RuntimeError with the failing step named.
    """
    from surveyalign.console import make_console
    from surveyalign.data import build_dataset, sample_release_dir
    from surveyalign.evaluation import EvalConfig, run_evaluation
    from surveyalign.scoring import render_leaderboard

    console = make_console()
    t0 = time.time()
    work = Path(cfg.workdir).resolve()
    work.mkdir(parents=True, exist_ok=True)
    dimension = cfg.dimension

    # 1. model
    if cfg.model:
        model_dir = _resolve(cfg.model)
        _say(console, f"[1/5] base model: {model_dir}")
    else:
        from surveyalign.testing import build_tiny_model

        model_dir = build_tiny_model(Path(cfg.cache_dir).resolve() / "tiny-qwen3")
        _say(console, f"[1/5] tiny random Qwen3 + local tokenizer ready: {model_dir}")

    # 2. data
    official = _resolve(cfg.official) if cfg.official else sample_release_dir()
    data_dir = work / "surveyreview"
    report = build_dataset(official, data_dir, sources=_resolve(cfg.sources) if cfg.sources else None, seed=cfg.seed)
    _say(console, f"[2/5] dataset built from {official} -> {data_dir}")
    console.print(f"      {_report_line(report)}")
    if cfg.knowledge is not None:
        data_dir = _knowledge_step(cfg.knowledge, data_dir, work / "surveyreview-ka", console)

    # 3. training
    adapter_dir = _train_adapter(cfg, model_dir, data_dir, work / f"adapter-{dimension}", console)
    _say(console, f"[3/5] adapter: {adapter_dir}")

    # 4. evaluation
    ev = cfg.eval
    common = {
        "dataset": str(data_dir),
        "split": ev.split,
        "dimensions": [dimension],
        "protocol": ev.protocol,
        "limit": ev.limit,
        "generation": {**ev.generation.model_dump(), "seed": cfg.seed},
    }
    judges = {
        f"surveyalign-{dimension} (tiny LoRA)": {
            "kind": "transformers",
            "options": {"model": str(model_dir), "adapter": str(adapter_dir), "device": "cpu",
                        "batch_size": ev.batch_size},
        },
        f"constant {ev.constant_score:+d}": {
            "kind": "constant",
            "options": {"score": ev.constant_score, "rationale": "Constant-score baseline."},
        },
    }
    summaries: dict[str, dict] = {}
    runs: dict[str, str] = {}
    console.print(f"      {eval_scope_line(data_dir, ev.split, dimension, ev.limit)}")
    for i, (judge, backend) in enumerate(judges.items()):
        slug = "adapter" if i == 0 else "constant"
        _say(console, f"[4/5] evaluating {judge} on {ev.split} ({dimension})")
        payload = {**common, "name": judge, "run_name": slug, "backend": backend, "output_dir": str(work / "eval")}
        rqs_backend = None
        if ev.lexical_rqs:
            from surveyalign.backends import load_backend
            from surveyalign.testing import LEXICAL_RQS_NAME, lexical_rqs_reply

            payload["rqs"] = {"backend": {"kind": "scripted", "options": {}}, "name": LEXICAL_RQS_NAME}
            rqs_backend = load_backend("scripted", replies=lexical_rqs_reply)
        result = run_evaluation(EvalConfig.model_validate(payload), rqs_backend=rqs_backend)
        summaries[judge] = result.metrics
        runs[judge] = str(result.run_dir)

    # 5. leaderboard
    _say(console, "[5/5] leaderboard")
    console.print(render_leaderboard(summaries))
    modules = {judge: _evaluate_modules(Path(run)) for judge, run in runs.items()}
    console.print(_modules_table(modules))
    if ev.lexical_rqs:
        console.print("RQS here comes from a lexical stand-in judge (word overlap), not an LLM judge as in the "
                      "paper; add an `rqs` block to an evaluation config for the real one.")
    (work / "leaderboard.json").write_text(json.dumps({"runs": runs, "metrics": summaries,
                                                       "evaluate_modules": modules}, indent=2, default=str))
    (work / "run_config.json").write_text(json.dumps({
        "job": "surveyalign demo",
        "surveyalign_version": __version__,
        "config": cfg.model_dump(),
        "model": str(model_dir),
        "official": str(official),
        "dataset": str(data_dir),
        "adapter": str(adapter_dir),
        "runs": runs,
        "seconds": round(time.time() - t0, 1),
    }, indent=2))
    console.print(f"\nDone in {time.time() - t0:.0f} s. Outputs in [bold]{work}[/]:")
    console.print(f"  dataset      {data_dir}\n  adapter      {adapter_dir}\n  train log    {work / 'train.log'}")
    for judge, run in runs.items():
        console.print(f"  {judge:<28} {run}  (predictions.jsonl, metrics.json, run_config.json)")
    console.print(f"  leaderboard  {work / 'leaderboard.json'}")
    return {"workdir": str(work), "leaderboard": summaries, "runs": runs}


def eval_scope_line(data_dir: Path, split: str, dimension: str, limit: int | None) -> str:
    """Why the evaluation sees fewer units than the split holds: it evaluates the one trained dimension
    ("evaluating 11 of the test split's 47 units: the readability units (the demo trains one adapter; the other
    dimensions' 36 units are not judged)")."""
    import pyarrow.parquet as pq

    counts = {path.parent.name: pq.read_metadata(path).num_rows
              for path in sorted((Path(data_dir) / "data").glob(f"*/{split}.parquet"))}
    total, mine = sum(counts.values()), counts.get(dimension, 0)
    others = ", ".join(f"{dim} {n}" for dim, n in counts.items() if dim != dimension) or "none"
    line = (f"evaluating {mine} of the {split} split's {total} units: the {dimension} units (the demo trains and "
            f"judges one dimension's adapter; the other dimensions' {total - mine} units are not judged: {others})")
    if limit is not None and limit < mine:
        line += f"; eval.limit={limit} keeps the first {limit}"
    return line


def _report_line(result: Any) -> str:
    """One line about the dataset build: units per split, excluded 0/-3 labels, leakage-guard figures."""
    report = getattr(result, "report", {}) or {}
    counts = report.get("counts", {})
    splits = ", ".join(f"{name} {c.get('units', '?')} units / {c.get('papers', '?')} papers"
                       for name, c in counts.items())
    units = report.get("units", {})
    excluded = sum(units.get("excluded_score_0", {}).values()) + sum(units.get("excluded_score_minus3", {}).values())
    guard = report.get("leakage_guard", {})
    return (f"{splits}; {excluded} labels 0/-3 excluded; leakage guard cleaned {guard.get('texts_cleaned', 0)} "
            f"texts, {guard.get('snippets_verbatim_in_inputs', '?')} gold snippets left verbatim")


def _cmd_demo(args: argparse.Namespace) -> int:
    overrides = {"workdir": args.workdir, "official": args.official, "model": args.model,
                 "dimension": args.dimension}
    if args.retrain:
        overrides["retrain"] = True
    cfg_path = args.config
    if cfg_path is None and _resolve(DEFAULT_CONFIG).exists():
        cfg_path = str(_resolve(DEFAULT_CONFIG))
    cfg = DemoConfig.from_yaml(cfg_path, overrides)
    run_demo(cfg)
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``demo`` subcommand."""
    p = subparsers.add_parser(
        "demo",
        help="run the main job small: tiny model, dataset, SFT adapter, evaluation, leaderboard",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--config", default=None, help=f"demo YAML (default: {DEFAULT_CONFIG})")
    p.add_argument("--workdir", default=None, help="output folder (default from the YAML: runs/demo)")
    p.add_argument("--official", default=None, help="release folder in the official layout (default: shipped sample)")
    p.add_argument("--model", default=None, help="local base model folder (default: build the tiny Qwen3)")
    p.add_argument("--dimension", type=dimension_value, default=None,
                   help="dimension to train and evaluate (default: readability)")
    p.add_argument("--retrain", action="store_true", help="train again even if a matching adapter exists")
    p.set_defaults(handler=_cmd_demo)

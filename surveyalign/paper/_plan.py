"""``surveyalign paper --plan``: the commands of each stage and a training GPU-hours estimate, nothing run."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

from surveyalign.paper._stages import PaperRun


def stage_commands(run: PaperRun, stage: str) -> list[str]:
    """The commands a user would type for ``stage`` (the stage runs these, or the functions behind them)."""
    cfg, paths = run.cfg, run.paths
    if stage == "data":
        return [f"surveyalign data build --official {cfg.release or '<shipped sample release>'} --out {paths.data}"]
    if stage == "ka":
        return [(f"surveyalign ka build --dataset {paths.data} --graph {cfg.knowledge.graph} --out {paths.ka} "
                f"--config {cfg.knowledge.config}")]
    model = cfg.base_model or "<tiny random Qwen3>"
    if stage in ("sft", "dpo"):
        dpo = stage == "dpo"
        out = []
        for dim, ka, is_dpo in cfg.trainings():
            if is_dpo != dpo:
                continue
            run._model = run._model or model
            cmd = run.dpo_command(dim, ka) if dpo else run.sft_command(dim, ka)
            out.append(shlex.join(cmd))
        return out
    if stage == "dpo-pairs":
        run._model = run._model or model
        return [shlex.join(run.pairs_command(d, k)) for d, k, is_dpo in cfg.trainings() if is_dpo]
    if stage == "evaluate":
        from surveyalign.paper._evaluate import run_configs

        run._model = run._model or model
        return [f"surveyalign evaluate --config {paths.configs / name}.yaml" for name in run_configs(run)]
    return [f"(tables 2, 3, 4, 7, 8 -> {run.work}/table*.md, table*.json, paper.html)"]


def _params_b(run: PaperRun) -> float | None:
    if run.cfg.plan.base_params_b:
        return run.cfg.plan.base_params_b
    model = run.cfg.base_model
    if model is None:
        return 0.0003  # the tiny random Qwen3 (about 0.3M parameters)
    config = run.cfg.resolve(model) / "config.json"
    if not config.is_file():
        return None
    c = json.loads(config.read_text())
    try:
        h, layers, inter, vocab = c["hidden_size"], c["num_hidden_layers"], c["intermediate_size"], c["vocab_size"]
    except KeyError:
        return None
    return (layers * (4 * h * h + 3 * h * inter) + 2 * vocab * h) / 1e9


def _examples(run: PaperRun) -> int | None:
    """Training examples per dimension: from the built dataset when it exists, else None."""
    split = run.paths.data / "data"
    if not split.is_dir():
        return None
    import pyarrow.parquet as pq

    counts = [pq.read_metadata(p).num_rows for p in split.glob("*/train.parquet")]
    return max(counts) if counts else None


def gpu_hours(run: PaperRun) -> tuple[float | None, str]:
    """Training GPU-hours: 6 x N x T FLOPs over every SFT and DPO run at ``plan.gpu_tflops`` x ``plan.mfu``.

    T = training examples x epochs x max_length tokens (an upper bound: shorter examples cost less). DPO counts
    twice (chosen and rejected). Returns ``(hours, how it was computed)``; hours is None when the base model's size
    or the example count is unknown.
    """
    import yaml

    params = _params_b(run)
    n = _examples(run)
    if params is None:
        return None, "the base model's size is unknown: set plan.base_params_b"
    if n is None:
        return None, "the training example count is known once the data stage has run (`--until data`)"
    tokens = 0.0
    for dim, _ka, dpo in run.cfg.trainings():
        recipe = yaml.safe_load(Path(run.cfg.resolve(run.cfg.dpo.config if dpo else run.cfg.sft[dim])).read_text())
        steps = recipe.get("max_steps") or -1
        epochs = recipe.get("num_train_epochs", 3)
        length = recipe.get("max_length") or 1024
        if steps and steps > 0:
            batch = recipe.get("per_device_train_batch_size", 1) * recipe.get("gradient_accumulation_steps", 1)
            tokens += steps * batch * length * (2 if dpo else 1)
        else:
            tokens += n * epochs * length * (2 if dpo else 1)
    flops = 6 * params * 1e9 * tokens
    hours = flops / (run.cfg.plan.gpu_tflops * 1e12 * run.cfg.plan.mfu) / 3600
    return hours, (f"{len(run.cfg.trainings())} training runs, {tokens:,.0f} tokens at most, {params:.3g}B parameters, "
                   f"6*N*T FLOPs at {run.cfg.plan.gpu_tflops:g} TFLOP/s x MFU {run.cfg.plan.mfu:g}")


__all__ = ["gpu_hours", "stage_commands"]

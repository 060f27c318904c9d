"""The stages of ``surveyalign paper`` and the record that lets a re-run skip what did not change.

Each stage is the command a user could type alone (printed before it runs) and writes what the next stage reads,
all inside the run folder::

    WORKDIR/
      stages.json                  fingerprint, seconds and outputs of every finished stage
      data/surveyreview/           `surveyalign data build`
      data/surveyreview-ka/        `surveyalign ka build` (the `knowledge` column, Comp-KA / Crit-KA)
      adapters/sft-<dim>[-ka]/     `accelerate launch recipes/sft.py` (one per dimension and variant)
      pairs/<dim>[-ka].jsonl       `surveyalign train dpo-pairs`
      adapters/dpo-<dim>[-ka]/     `accelerate launch recipes/dpo.py`
      configs/*.yaml               the evaluation configs the evaluate stage wrote and ran
      eval/<run>/                  `surveyalign evaluate` (SurveyAlign, baselines, variants; RQS and HAS inside)
      table{2,3,4,7,8}.{md,json}, paper.html

A stage's fingerprint is the SHA-256 of its settings, the recipe / config files it reads and the fingerprints of
the stages it reads from; a stage whose fingerprint is recorded and whose outputs exist is skipped.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from surveyalign import __version__
from surveyalign.paper._config import STAGES, PaperConfig

_REPO_ROOT = Path(__file__).resolve().parents[2]
_RECORD = "stages.json"


class StageFailed(RuntimeError):
    """A stage of ``surveyalign paper`` failed; the message names the stage, the command and its log file."""


def content_sha(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()


def folder_hash(path: Path) -> str:
    """SHA-256 over the relative names and contents of every file under ``path`` (a file: its content).

    Raises:
        FileNotFoundError: ``path`` does not exist.
    """
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file or folder")
    h = hashlib.sha256()
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    for f in files:
        h.update(str(f.relative_to(path) if f != path else f.name).encode())
        with open(f, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
    return h.hexdigest()


def model_fingerprint(model: str) -> str:
    """Identity of a base model for fingerprints: a local folder's ``config.json`` and its files' names and
    sizes (weights are not read); a Hub id as given."""
    p = Path(model)
    if not p.is_dir():
        return f"hub:{model}"
    listing = sorted((str(f.relative_to(p)), f.stat().st_size) for f in p.rglob("*") if f.is_file())
    config = (p / "config.json").read_text() if (p / "config.json").exists() else ""
    return content_sha([config, listing])


class StageRecord:
    """``WORKDIR/stages.json``: per stage its fingerprint, outputs, seconds and the commands it ran.

    Args:
        workdir: the run folder.
    """

    def __init__(self, workdir: Path) -> None:
        self.path = workdir / _RECORD
        self.data: dict[str, Any] = {}
        if self.path.exists():
            try:
                self.data = json.loads(self.path.read_text())
            except json.JSONDecodeError as err:
                raise ValueError(f"{self.path}: not JSON ({err}); move it away to start the run again") from None
            if not isinstance(self.data, dict):
                raise ValueError(f"{self.path}: expected a JSON object")

    def done(self, stage: str, fingerprint: str) -> bool:
        """True when ``stage`` finished with this fingerprint and every output it recorded exists."""
        entry = self.data.get(stage) or {}
        return (entry.get("fingerprint") == fingerprint
                and all(Path(p).exists() for p in entry.get("outputs", [])))

    def fingerprint(self, stage: str) -> str | None:
        """The recorded fingerprint of a finished stage, or None."""
        return (self.data.get(stage) or {}).get("fingerprint")

    def save(self, stage: str, entry: dict[str, Any]) -> None:
        """Record a finished stage (written at once, so an interrupted job keeps what finished)."""
        self.data[stage] = entry
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.data, indent=2, default=str))
        os.replace(tmp, self.path)


class Paths:
    """Where each stage writes inside the run folder (see the module docstring)."""

    def __init__(self, workdir: Path) -> None:
        self.work = workdir
        self.data = workdir / "data" / "surveyreview"
        self.ka = workdir / "data" / "surveyreview-ka"
        self.adapters = workdir / "adapters"
        self.pairs = workdir / "pairs"
        self.configs = workdir / "configs"
        self.eval = workdir / "eval"
        self.logs = workdir / "logs"

    def adapter(self, cfg: PaperConfig, dimension: str, knowledge: bool, dpo: bool) -> Path:
        """Folder of one adapter."""
        return self.adapters / cfg.adapter_key(dimension, knowledge, dpo)

    def pair_file(self, dimension: str, knowledge: bool) -> Path:
        """Pairs of one DPO run."""
        return self.pairs / f"{dimension}{'-ka' if knowledge else ''}.jsonl"


def run_logged(cmd: list[str], log: Path, say: Callable[[str], None], stage: str) -> None:
    """Run ``cmd``, its output to ``log`` (progress and error lines echoed); raise :class:`StageFailed` on exit != 0."""
    log.parent.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(_REPO_ROOT), env.get("PYTHONPATH")]))
    with open(log, "w") as fh:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
        assert proc.stdout is not None
        last: list[str] = []
        for line in proc.stdout:
            fh.write(line)
            last = (last + [line.rstrip()])[-5:]
            if any(k in line for k in ("Error", "error:", "Traceback", "saved to", "carry a knowledge", "refus")):
                say("      " + line.rstrip()[:300])
        rc = proc.wait()
    if rc != 0:
        tail = " | ".join(x for x in last if x)[-600:]
        raise StageFailed(f"stage {stage}: `{shlex.join(cmd)}` exited {rc}; log {log}; last lines: {tail}")


class PaperRun:
    """One ``surveyalign paper`` job: the config, the run folder, the stage record and a console.

    Args:
        cfg: the validated paper config.
        console: a ``rich`` console (its ``print`` is used).
    """

    def __init__(self, cfg: PaperConfig, console: Any) -> None:
        self.cfg = cfg
        self.console = console
        self.work = Path(cfg.workdir).resolve()
        self.paths = Paths(self.work)
        self.record = StageRecord(self.work) if self.work.exists() else None
        self._model: str | None = None

    # -- shared pieces -------------------------------------------------------------------------------------
    def say(self, msg: str) -> None:
        """Print one progress line."""
        self.console.print(msg, markup=False, highlight=False)

    def release(self) -> Path:
        """The release folder (the shipped sample when ``release`` is null)."""
        from surveyalign.data import sample_release_dir

        return self.cfg.resolve(self.cfg.release) if self.cfg.release else Path(sample_release_dir())

    def model(self) -> str:
        """The base model: the config's folder / Hub id, or the tiny random Qwen3 (built once into cache_dir)."""
        if self._model is None:
            if self.cfg.base_model:
                p = self.cfg.resolve(self.cfg.base_model)
                self._model = str(p.resolve()) if p.exists() else self.cfg.base_model
            else:
                from surveyalign.testing import build_tiny_model

                self._model = str(build_tiny_model(Path(self.cfg.cache_dir).resolve() / "tiny-qwen3"))
        return self._model

    def dataset_for(self, knowledge: bool) -> Path:
        """The dataset folder a run with / without knowledge reads."""
        return self.paths.ka if knowledge else self.paths.data

    def file_text(self, path: str) -> str:
        """Content of a config file named by the paper config (for fingerprints).

        Raises:
            FileNotFoundError: naming the paper config key's file.
        """
        p = self.cfg.resolve(path)
        if not p.is_file():
            raise FileNotFoundError(f"{self.cfg.source}: {path}: no such file")
        return p.read_text()

    # -- fingerprints -------------------------------------------------------------------------------------------
    def stage_inputs(self, stage: str, upstream: dict[str, str | None]) -> dict[str, Any]:
        """What a stage's fingerprint covers (settings, files read, upstream fingerprints)."""
        cfg = self.cfg
        if stage == "data":
            return {"release": folder_hash(self.release()),
                    "sources": folder_hash(cfg.resolve(cfg.sources)) if cfg.sources else None, "seed": cfg.seed}
        if stage == "ka":
            graph = "sample" if cfg.knowledge.graph == "sample" else folder_hash(cfg.resolve(cfg.knowledge.graph))
            return {"data": upstream["data"], "ka": cfg.knowledge.model_dump(), "graph": graph,
                    "ka_config": self.file_text(cfg.knowledge.config)}
        if stage == "sft":
            return {"adapters": {cfg.adapter_key(d, k, False): self.sft_inputs(d, k, upstream)
                                 for d, k, dpo in cfg.trainings() if not dpo}}
        if stage == "dpo-pairs":
            return {"pairs": {f"{d}{'-ka' if k else ''}": self.pairs_inputs(d, k, upstream)
                              for d, k, dpo in cfg.trainings() if dpo}}
        if stage == "dpo":
            return {"adapters": {cfg.adapter_key(d, k, True): self.dpo_inputs(d, k, upstream)
                                 for d, k, dpo in cfg.trainings() if dpo}}
        if stage == "evaluate":
            return {"upstream": upstream, "evaluate": cfg.evaluate.model_dump(), "rqs": cfg.rqs.model_dump(),
                    "has": cfg.has.model_dump(), "variants": [v.model_dump() for v in cfg.variants],
                    "baselines": [self.file_text(b) for b in cfg.evaluate.baselines],
                    "prior": [folder_hash(cfg.resolve(p.scores)) for p in cfg.evaluate.prior],
                    "knowledge_dimensions": cfg.knowledge_dimensions, "dpo_dimensions": cfg.dpo_dimensions}
        if stage == "tables":
            return {"evaluate": upstream["evaluate"], "has": cfg.has.model_dump(), "version": __version__}
        raise ValueError(f"unknown stage {stage!r}")

    def sft_inputs(self, dimension: str, knowledge: bool, upstream: dict[str, str | None]) -> dict[str, Any]:
        """Fingerprint inputs of one SFT run."""
        return {"data": upstream["ka" if knowledge else "data"], "recipe": self.file_text(self.cfg.sft[dimension]),
                "overrides": self.cfg.sft_overrides, "model": model_fingerprint(self.model()),
                "seed": self.cfg.seed, "launcher": self.cfg.launcher.model_dump()}

    def pairs_inputs(self, dimension: str, knowledge: bool, upstream: dict[str, str | None]) -> dict[str, Any]:
        """Fingerprint inputs of one pair file."""
        sft = (self.record.data.get("sft") or {}).get("adapters", {}) if self.record else {}
        return {"sft": sft.get(self.cfg.adapter_key(dimension, knowledge, False)), "sft_stage": upstream["sft"],
                "pairs": self.cfg.dpo.pairs.model_dump(), "seed": self.cfg.seed}

    def dpo_inputs(self, dimension: str, knowledge: bool, upstream: dict[str, str | None]) -> dict[str, Any]:
        """Fingerprint inputs of one DPO run."""
        return {"pairs": upstream["dpo-pairs"], "recipe": self.file_text(self.cfg.dpo.config),
                "overrides": self.cfg.dpo.overrides, "seed": self.cfg.seed,
                "launcher": self.cfg.launcher.model_dump(), "sft": upstream["sft"],
                "key": self.cfg.adapter_key(dimension, knowledge, True)}

    # -- training commands ---------------------------------------------------------------------------------------
    def launch_head(self, recipe: str) -> list[str]:
        """``accelerate launch ... recipes/<recipe>.py`` (local), or ``sbatch --wait slurm/train.slurm <recipe>``."""
        script = str(_REPO_ROOT / "recipes" / f"{recipe}.py")
        launcher = self.cfg.launcher
        if launcher.kind == "slurm":
            return ["sbatch", "--wait", f"--nodes={launcher.nodes}", f"--gres=gpu:{launcher.gpus_per_node}",
                    str(_REPO_ROOT / "slurm" / "train.slurm"), recipe]
        head = [sys.executable, "-m", "accelerate.commands.launch"]
        if launcher.accelerate_config:
            head += ["--config_file", str(self.cfg.resolve(launcher.accelerate_config))]
        else:
            head += ["--num_processes", "1", "--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend",
                     "no"]
        return [*head, script]

    def sft_command(self, dimension: str, knowledge: bool) -> list[str]:
        """The SFT command of one adapter."""
        cfg = self.cfg
        head = self.launch_head("sft")
        config = str(cfg.resolve(cfg.sft[dimension]))
        args = ["--model_name_or_path", self.model(), "--dataset_path", str(self.dataset_for(knowledge)),
                "--output_dir", str(self.paths.adapter(cfg, dimension, knowledge, False)), "--seed", str(cfg.seed),
                "--dimension", dimension, "--use_knowledge", "true" if knowledge else "false", *cfg.sft_overrides]
        if cfg.launcher.kind == "slurm":
            accelerate = [str(cfg.resolve(cfg.launcher.accelerate_config))] if cfg.launcher.accelerate_config else []
            return [*head, config, *accelerate, "--", *args]
        return [*head, "--config", config, *args]

    def dpo_command(self, dimension: str, knowledge: bool) -> list[str]:
        """The DPO command of one adapter."""
        cfg = self.cfg
        head = self.launch_head("dpo")
        config = str(cfg.resolve(cfg.dpo.config))
        args = ["--model_name_or_path", self.model(),
                "--sft_adapter", str(self.paths.adapter(cfg, dimension, knowledge, False)),
                "--pairs_path", str(self.paths.pair_file(dimension, knowledge)),
                "--output_dir", str(self.paths.adapter(cfg, dimension, knowledge, True)), "--seed", str(cfg.seed),
                *cfg.dpo.overrides]
        if cfg.launcher.kind == "slurm":
            accelerate = [str(cfg.resolve(cfg.launcher.accelerate_config))] if cfg.launcher.accelerate_config else []
            return [*head, config, *accelerate, "--", *args]
        return [*head, "--config", config, *args]

    def pairs_command(self, dimension: str, knowledge: bool) -> list[str]:
        """The ``surveyalign train dpo-pairs`` command of one pair file (the stage calls its function)."""
        p = self.cfg.dpo.pairs
        cmd = ["surveyalign", "train", "dpo-pairs",
               "--adapter", str(self.paths.adapter(self.cfg, dimension, knowledge, False)),
               "--dataset", str(self.dataset_for(knowledge)), "--out", str(self.paths.pair_file(dimension, knowledge)),
               "--k", str(p.k), "--temperature", str(p.temperature), "--max-new-tokens", str(p.max_new_tokens),
               "--max-length", str(p.max_length), "--seed", str(self.cfg.seed), "--batch-size", str(p.batch_size),
               "--device", p.device]
        if not knowledge:
            cmd.append("--no-knowledge")
        if p.limit:
            cmd += ["--limit", str(p.limit)]
        if p.fallback_model:
            cmd += ["--fallback-model", p.fallback_model]
        return cmd


def select_stages(from_stage: str | None, until_stage: str | None) -> list[str]:
    """The stages to consider, in order, between ``from_stage`` and ``until_stage`` (inclusive).

    Raises:
        ValueError: an unknown stage name, or ``from`` after ``until``.
    """
    for name in (from_stage, until_stage):
        if name is not None and name not in STAGES:
            raise ValueError(f"unknown stage {name!r}; stages: {', '.join(STAGES)}")
    lo = STAGES.index(from_stage) if from_stage else 0
    hi = STAGES.index(until_stage) if until_stage else len(STAGES) - 1
    if lo > hi:
        raise ValueError(f"--from {from_stage} comes after --until {until_stage}")
    return list(STAGES[lo:hi + 1])


def upstream_of(stage: str) -> list[str]:
    """Stages whose outputs ``stage`` reads."""
    return {"data": [], "ka": ["data"], "sft": ["data", "ka"], "dpo-pairs": ["sft"], "dpo": ["dpo-pairs", "sft"],
            "evaluate": ["data", "ka", "sft", "dpo"], "tables": ["evaluate"]}[stage]


def dimension_order(dims: list[str]) -> list[str]:
    """Dimensions in the table order of SurveyReview (readability, criticalness, comprehensiveness, structure)."""
    order = ["readability", "criticalness", "comprehensiveness", "structure"]
    return [d for d in order if d in dims] + [d for d in dims if d not in order]


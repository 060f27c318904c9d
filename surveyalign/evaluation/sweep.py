"""Ablation sweeps (SurveyReview §6.3): one base evaluation config, variants that change some keys, every variant
run on the same units and compared with the base in one paired table.

A sweep YAML::

    name: comp-ka-ablation
    base: configs/eval/surveyalign-adapter.yaml   # an evaluation config (relative to the sweep file or the cwd)
    set: {limit: 50}                              # overrides applied to the base and every variant
    variants:                                     # named override sets ...
      no-ka: {knowledge_dimensions: []}
    vary:                                         # ... and/or one key at a time, one variant per value
      samples_per_unit: [1, 5]
      generation.temperature: [0.0, 0.7]
    output_dir: runs/sweeps/comp-ka               # each variant is a run folder below it (resumable)
    bootstrap: 1000

Each variant is compared with the base by :func:`surveyalign.scoring.paired_bootstrap` (variant = A, base = B) on
the units both scored: the difference, its paper-level 95% interval and the paired p-value, with the
"insufficient data" rule of the report (fewer than ten papers, or no spread).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from surveyalign.evaluation.config import EvalConfig, EvalConfigError, run_slug
from surveyalign.evaluation.rundir import write_json
from surveyalign.scoring import INSUFFICIENT_DATA, paired_bootstrap
from surveyalign.yamlconfig import read_yaml_mapping

__all__ = ["SweepConfig", "run_sweep"]

#: The run folder name of the base configuration.
BASE = "base"


class SweepConfig(BaseModel):
    """A validated sweep file (see the module docstring); ``source`` is the file it came from."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(..., min_length=1)
    base: str = Field(..., description="the base evaluation config")
    set: dict[str, Any] = Field(default_factory=dict, description="dotted overrides for every run")
    variants: dict[str, dict[str, Any]] = Field(default_factory=dict)
    vary: dict[str, list[Any]] = Field(default_factory=dict)
    output_dir: str = "runs/sweeps"
    bootstrap: int = Field(1000, ge=0)
    seed: int = 0
    source: str | None = None

    @model_validator(mode="after")
    def _some_variant(self) -> SweepConfig:
        if not self.variants and not self.vary:
            raise ValueError("a sweep needs `variants` or `vary` (the keys to change against the base)")
        if BASE in self.variants:
            raise ValueError(f"variant name {BASE!r} is the base's own")
        for key, values in self.vary.items():
            if not values:
                raise ValueError(f"vary.{key}: give at least one value")
        return self

    @classmethod
    def from_yaml(cls, path: str | Path) -> SweepConfig:
        """Read and validate a sweep file, then every variant's evaluation config (errors name file and key).

        Raises:
            FileNotFoundError: the sweep file or its base config does not exist.
            EvalConfigError: an invalid key of the sweep or of a variant's evaluation config.
        """
        p = Path(path)
        data = read_yaml_mapping(p, "sweep config")
        try:
            config = cls.model_validate({**data, "source": str(p)})
        except ValidationError as err:
            lines = [f"{p}: {'.'.join(str(x) for x in e['loc']) or '<top level>'}: {e['msg']}" for e in err.errors()]
            raise EvalConfigError("invalid sweep config:\n  " + "\n  ".join(lines)) from None
        for name in config.runs():
            config.eval_config(name)  # every variant validates now, before any model is loaded
        return config

    def base_path(self) -> Path:
        """The base config: relative to the sweep file when it exists there, else to the current folder."""
        base = Path(self.base)
        if not base.is_absolute() and self.source and (Path(self.source).parent / base).is_file():
            return Path(self.source).parent / base
        return base

    def runs(self) -> dict[str, dict[str, Any]]:
        """``{run name: dotted overrides}``: the base first, then the named variants, then one per ``vary`` value."""
        out: dict[str, dict[str, Any]] = {BASE: {}}
        out.update(self.variants)
        for key, values in self.vary.items():
            for value in values:
                out[run_slug(f"{key}={value}")] = {key: value}
        return out

    def eval_config(self, name: str) -> EvalConfig:
        """The evaluation config of run ``name``: base + ``set`` + the variant's keys, in its own run folder.

        Raises:
            EvalConfigError: naming the sweep file and the variant when a key is invalid.
        """
        overrides = {**self.set, **self.runs()[name], "output_dir": str(Path(self.output_dir) / run_slug(self.name)),
                     "run_name": name}
        try:
            return EvalConfig.from_yaml(self.base_path(), overrides)
        except EvalConfigError as err:
            raise EvalConfigError(f"{self.source or 'sweep'}: variant {name}: {err}") from None


def run_sweep(config: SweepConfig, *, backends: dict[str, Any] | None = None, console: Any = None) -> dict[str, Any]:
    """Run the base and every variant (each resumable in its own run folder) and compare each with the base.

    Args:
        config: the sweep.
        backends: ``{run name: built backend}`` to use instead of the config's (tests).
        console: a rich console for the runs' summaries (default: a quiet one).

    Returns:
        ``{"name", "output_dir", "runs": {name: {"run_dir", "overrides", "n", "n_scored", "avg_mse", "avg_mae",
        "answers" (the run's answers reused / retried / made)}},
        "comparisons": {variant: paired_bootstrap(variant, base) result or {"error": reason}}}``; also written to
        ``OUTPUT/NAME/sweep.json``.

    Raises:
        EvalConfigError, FileNotFoundError, ValueError: from the runs (bad config, dataset, backend).
    """
    import io

    from rich.console import Console

    from surveyalign.evaluation.runner import run_evaluation

    console = console or Console(file=io.StringIO(), width=200)
    results: dict[str, Any] = {}
    records: dict[str, list[dict[str, Any]]] = {}
    for name, overrides in config.runs().items():
        eval_config = config.eval_config(name)
        res = run_evaluation(eval_config, backend=(backends or {}).get(name), console=console,
                             argv=["surveyalign", "sweep", "--config", str(config.source), f"[{name}]"])
        records[name] = res.predictions
        m = res.metrics
        results[name] = {"run_dir": str(res.run_dir), "overrides": overrides, "n": m["n"], "n_scored": m["n_scored"],
                         "avg_mse": m["avg_mse"], "avg_mae": m["avg_mae"],
                         "answers": (res.calls or {}).get("answers")}  # reused / retried / made
    comparisons: dict[str, Any] = {}
    for name in results:
        if name == BASE:
            continue
        try:
            comparisons[name] = paired_bootstrap(records[name], records[BASE], n_resamples=max(config.bootstrap, 1),
                                                 seed=config.seed)
        except ValueError as err:  # no unit scored by both: nothing to pair
            comparisons[name] = {"error": f"{INSUFFICIENT_DATA}: {err}", "metrics": {}, "status": INSUFFICIENT_DATA}
    out = {"name": config.name, "output_dir": str(Path(config.output_dir) / run_slug(config.name)), "runs": results,
           "comparisons": comparisons}
    Path(out["output_dir"]).mkdir(parents=True, exist_ok=True)
    write_json(Path(out["output_dir"]) / "sweep.json", out)
    return out

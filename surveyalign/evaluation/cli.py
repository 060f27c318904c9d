"""``surveyalign evaluate``: run a judge over a SurveyReview split from a YAML config (``surveyalign/evaluation/predictions.py``)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from surveyalign.argtypes import add_cost_arguments, dimension_list, positive_int
from surveyalign.constants import SPLITS
from surveyalign.models import max_length_arg

_EPILOG = """\
examples:
  surveyalign evaluate --config configs/eval/gpt-5.2.yaml --dataset data/surveyreview
  surveyalign evaluate --config configs/eval/qwen3-32b-api.yaml --base-url http://127.0.0.1:8000/v1 --limit 5
  surveyalign evaluate --config configs/eval/gpt-5.2.yaml --set generation.temperature=0.7 \\
      --set samples_per_unit=5 --run-name gpt-5.2-k5

The run folder (OUTPUT_DIR/RUN_NAME) holds calls.jsonl (append-only cache: re-running the same command
after a crash or kill makes only the missing calls), predictions.jsonl (one line per unit, with its status:
scored / parse_failed / api_error / prompt_too_long / missing_text), metrics.json and run_config.json.
Tokens and cost (configs/prices.yaml) are printed after the run and kept in metrics.json (harness.cost);
--plan prints them before anything is sent. Exit 4: stopped on purpose (the --max-cost cap, or provider batches
still running with batch_wait: false); run the same command again (with a higher cap) to continue.
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``surveyalign evaluate`` to the top-level parser."""
    p = subparsers.add_parser(
        "evaluate",
        help="run a judge over a SurveyReview split (resumable; writes predictions, metrics, run_config)",
        description="Run a judge (API model, local model, adapter, constant baseline) over a SurveyReview "
        "split through the shared prompt protocol; every call is cached so an interrupted run resumes.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--config", required=True, metavar="YAML", help="evaluation config (configs/eval/NAME.yaml)")
    p.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a config key with a dotted path, value read as YAML "
        "(e.g. generation.temperature=0.7, dimensions=[readability], backend.options.concurrency=64); repeatable",
    )
    p.add_argument("--dataset", help="dataset folder (overrides `dataset`)")
    p.add_argument("--split", choices=SPLITS, help="split (overrides `split`)")
    p.add_argument("--dimensions", type=dimension_list, help="comma-separated dimensions (overrides `dimensions`)")
    p.add_argument("--output-dir", help="parent folder of the run folder (overrides `output_dir`)")
    p.add_argument("--run-name", help="run folder name (overrides `run_name`; default: the config's name)")
    p.add_argument("--name", help="judge name shown in the leaderboard (overrides `name`)")
    p.add_argument("--limit", type=positive_int, help="at most this many units per dimension (smoke runs)")
    p.add_argument("--samples", type=positive_int, help="K samples per unit (overrides `samples_per_unit`)")
    p.add_argument("--layout", choices=("app_c", "shared"),
                   help="prompt layout (overrides `layout`): app_c (App. C order) or shared (the survey first: a "
                   "survey's dimensions share a cached prefix; zero-shot judges only)")
    p.add_argument("--model", help="model name or folder (overrides `backend.options.model`)")
    p.add_argument("--adapter", help="PEFT adapter folder for every dimension (overrides `backend.options.adapter` "
                   "and any per-dimension adapter of the YAML)")
    p.add_argument("--base-url", help="OpenAI-compatible API root (overrides `backend.options.base_url`)")
    p.add_argument("--max-length", type=max_length_arg, metavar="TOKENS",
                   help="token budget of prompt + max_new_tokens; longer prompts get their survey body cut "
                   "(overrides `max_length`; default: the adapter's training max_length, else no cut)")
    p.add_argument("--tokenizer", metavar="DIR",
                   help="tokenizer folder to count prompt tokens with (overrides `tokenizer`; needed to shorten "
                   "prompts for API backends)")
    p.add_argument("--concurrency", type=positive_int, help="requests in flight for API backends: exactly this many (overrides `concurrency` and the "
                   "backend's own `backend.options.concurrency`; default: that option, else 32)")
    add_cost_arguments(p, config_keys=True)
    p.add_argument("--no-synthesis", action="store_true",
                   help="K>1: keep the winning sample with the highest mean log-probability as each unit's rationale "
                   "instead of merging the winning rationales by one more judge call (sets `synthesis: false`)")
    p.add_argument("--batch", action="store_true",
                   help="send the judge, synthesis and RQS calls through the provider batch API where their backend "
                   "has one (sets `batch: true`)")
    p.add_argument("--no-resume", action="store_true", help="start afresh (the old calls.jsonl is moved aside)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--quantization", choices=("auto", "none", "4bit", "8bit"),
                   help="local backends: load the base in 4-bit / 8-bit (overrides `backend.options.quantization`; "
                   "default auto: as the adapter's training record says)")
    p.add_argument("--allow-base-mismatch", action="store_true",
                   help="local backends: evaluate an adapter on a base (or quantisation) other than the one in its "
                   "training record; sets `backend.options.allow_base_mismatch`, the mismatch is recorded in run_config")
    p.add_argument("--allow-training-mismatch", action="store_true",
                   help="evaluate an adapter whose training record disagrees with the config (dimension, protocol, "
                   "enable_thinking, use_knowledge, knowledge counts); sets `allow_training_mismatch: true`, recorded in run_config")
    p.add_argument("--check-drift", type=positive_int, metavar="N",
                   help="before the run, re-judge N units already stored in the run folder's calls.jsonl (sample 0, "
                   "bypassing the cache) and say how many scores changed (recorded in run_config.json check_drift)")
    p.set_defaults(handler=_evaluate)


def _parse_set(items: list[str]) -> dict[str, Any]:
    """``["a.b=1", "c=[x, y]"]`` -> ``{"a.b": 1, "c": ["x", "y"]}`` (values parsed as YAML scalars/lists)."""
    import yaml

    out: dict[str, Any] = {}
    for item in items:
        key, eq, raw = item.partition("=")
        if not eq or not key.strip():
            raise ValueError(f"--set {item!r}: expected KEY=VALUE")
        try:
            value = yaml.safe_load(raw) if raw.strip() else ""
        except yaml.YAMLError:
            value = raw
        out[key.strip()] = value
    return out


def overrides_from_args(args: argparse.Namespace) -> dict[str, Any]:
    """The config overrides given on the command line, as dotted keys (direct flags win over ``--set``).

    Raises:
        ValueError: for a malformed ``--set`` item.
    """
    over = _parse_set(args.overrides)
    direct = {
        "dataset": args.dataset,
        "split": args.split,
        "dimensions": args.dimensions,
        "output_dir": args.output_dir,
        "run_name": args.run_name,
        "name": args.name,
        "limit": args.limit,
        "samples_per_unit": args.samples,
        "layout": getattr(args, "layout", None),
        "backend.options.model": args.model,
        "backend.options.adapter": args.adapter,
        "backend.options.base_url": args.base_url,
        "concurrency": args.concurrency,
        "max_cost": getattr(args, "max_cost", None),
        "prices": getattr(args, "prices", None),
        "max_length": getattr(args, "max_length", None),
        "tokenizer": getattr(args, "tokenizer", None),
        "resume": False if args.no_resume else None,
        "synthesis": False if getattr(args, "no_synthesis", False) else None,
        "batch": True if getattr(args, "batch", False) else None,
        "progress": False if args.no_progress else None,
        "allow_training_mismatch": True if getattr(args, "allow_training_mismatch", False) else None,
        "backend.options.quantization": getattr(args, "quantization", None),
        "backend.options.allow_base_mismatch": True if getattr(args, "allow_base_mismatch", False) else None,
    }
    over.update({k: v for k, v in direct.items() if v is not None})
    return over


#: dotted config key -> the flag that overrides it (for error messages that name the flag).
FLAG_OF_KEY = {
    "dataset": "--dataset", "split": "--split", "dimensions": "--dimensions", "output_dir": "--output-dir",
    "run_name": "--run-name", "name": "--name", "limit": "--limit", "samples_per_unit": "--samples",
    "layout": "--layout", "backend.options.model": "--model", "backend.options.adapter": "--adapter",
    "backend.options.base_url": "--base-url", "concurrency": "--concurrency", "max_length": "--max-length",
    "tokenizer": "--tokenizer", "backend.options.quantization": "--quantization", "max_cost": "--max-cost",
    "prices": "--prices", "synthesis": "--no-synthesis", "batch": "--batch",
    "backend.options.allow_base_mismatch": "--allow-base-mismatch",
}


def flags_from_args(args: argparse.Namespace) -> dict[str, str]:
    """Dotted config key -> how the command line set it (``"--limit 0"``, ``"--set generation.top_p=2"``).

    Args:
        args: the parsed ``surveyalign evaluate`` arguments.

    Returns:
        One entry per key the command line overrides (direct flags win over ``--set``), for
        :meth:`EvalConfig.from_yaml`'s ``flags``.

    Raises:
        ValueError: for a malformed ``--set`` item.
    """
    out = {key: f"--set {item}" for item in args.overrides for key in _parse_set([item])}
    for key, value in overrides_from_args(args).items():
        if key in FLAG_OF_KEY:
            shown = ",".join(value) if isinstance(value, list) else value
            out[key] = FLAG_OF_KEY[key] if isinstance(value, bool) else f"{FLAG_OF_KEY[key]} {shown}"
    return out


def _command_line(args: argparse.Namespace) -> list[str]:
    """The command as typed: ``sys.argv`` when it is this command, else rebuilt from ``args`` (in-process
    ``surveyalign.cli.main([...])`` calls): ``surveyalign evaluate --config X --set KEY=VALUE ...``."""
    import json

    if len(sys.argv) > 1 and "evaluate" in sys.argv[1:3]:
        return ["surveyalign", *sys.argv[sys.argv.index("evaluate"):]]
    line = ["surveyalign", "evaluate", "--config", args.config]
    for key, value in overrides_from_args(args).items():
        line += ["--set", f"{key}={value if isinstance(value, str) else json.dumps(value)}"]
    return line


def _evaluate(args: argparse.Namespace) -> int:
    from surveyalign.evaluation import EvalConfig, EvalConfigError, run_evaluation
    from surveyalign.evaluation.runner import RunIncomplete

    try:
        config = EvalConfig.from_yaml(args.config, overrides_from_args(args), flags=flags_from_args(args))
    except (FileNotFoundError, EvalConfigError, ValueError) as err:
        print(f"surveyalign evaluate: {err}", file=sys.stderr)
        return 2
    if args.adapter:
        config = adapter_for_every_dimension(config, args.adapter)
    config = name_from_overrides(config, args)
    from surveyalign.console import make_console

    console = make_console()  # the leaderboard is wide: not squeezed to 80 columns when piped
    try:
        result = run_evaluation(config, console=console, argv=_command_line(args), plan_only=args.plan,
                                check_drift=getattr(args, "check_drift", None))
    except RunIncomplete as err:  # the cost cap, or batches still running: done on purpose, resumable
        print(f"surveyalign evaluate: {err}", file=sys.stderr)
        return 4
    except (FileNotFoundError, ValueError, OSError) as err:  # bad input: a path, a dataset, a model folder
        print(f"surveyalign evaluate: {err}", file=sys.stderr)
        return 2
    except RuntimeError as err:  # a step that failed (e.g. the run folder is locked by another process)
        print(f"surveyalign evaluate: {err}", file=sys.stderr)
        return 1
    if args.plan:
        return 0
    if not result.counts.get("total", 0):
        return 1
    unscored = unscored_dimensions(result.predictions)
    if unscored:
        parts = ", ".join(f"{d} ({n} unit(s) with calls, all failed)" for d, n in unscored.items())
        print(f"surveyalign evaluate: FAILED: no unit was scored in {parts}; the most common errors are listed "
              f"above and in {result.run_dir / 'predictions.jsonl'} (`error`)", file=sys.stderr)
        return 3
    rqs = ((result.metrics or {}).get("harness") or {}).get("rqs_counts") or {}
    if rqs.get("eligible") and not rqs.get("scored"):  # a stage with no usable result: exit 3
        print(f"surveyalign evaluate: FAILED: the RQS stage rated none of its {rqs['eligible']} unit(s) "
              f"({rqs.get('parse_failed', 0)} parse_failed, {rqs.get('api_error', 0)} api_error); the judge's scores "
              f"are kept, RQS and HAS are left out; the answers are in {result.run_dir / 'calls.jsonl'}",
              file=sys.stderr)
        return 3
    return 0


def adapter_for_every_dimension(config: Any, adapter: str) -> Any:
    """``config`` with ``adapter`` as the adapter of every dimension (``--adapter``).

    Args:
        config: a validated ``EvalConfig``.
        adapter: a PEFT adapter folder.

    Returns:
        A copy whose ``backend.options.adapter`` is ``adapter`` and whose per-dimension option sets, if any,
        name it too (a YAML with one adapter per dimension, e.g. configs/eval/surveyalign-adapter.yaml,
        would otherwise keep its own adapters).
    """
    backend = config.backend
    per_dimension = {d: {**opts, "adapter": adapter} for d, opts in backend.per_dimension.items()}
    new_backend = backend.model_copy(update={"options": {**backend.options, "adapter": adapter},
                                             "per_dimension": per_dimension})
    return config.model_copy(update={"backend": new_backend})


def unscored_dimensions(predictions: list[dict[str, Any]]) -> dict[str, int]:
    """Dimensions that had units to call (status other than ``missing_text``) but none scored: {dim: n units}."""
    called: dict[str, int] = {}
    scored: set[str] = set()
    for p in predictions:
        if p["status"] == "missing_text":
            continue
        called[p["dimension"]] = called.get(p["dimension"], 0) + 1
        if p["status"] == "scored":
            scored.add(p["dimension"])
    return {d: n for d, n in called.items() if d not in scored}


def name_from_overrides(config: Any, args: argparse.Namespace) -> Any:
    """With ``--model``/``--adapter``/``--samples`` and no ``--name``, a judge name (and run folder) that says so.

    ``"<config name> [model=X, K=1]"`` (a local folder shows as its last path part); the run folder follows:
    ``run_name`` from the YAML gets the same suffix, otherwise the folder is the new name's slug. ``--run-name``
    still wins. Without this, runs with other models or K were labelled and stored as the config's judge.
    """
    import re
    from pathlib import Path

    from surveyalign.evaluation.config import run_slug

    if getattr(args, "name", None):
        return config
    name = config.name
    parts = []
    for flag, label in (("model", "model"), ("adapter", "adapter")):
        value = getattr(args, flag, None)
        if value:
            path = Path(value)
            parts.append(f"{label}={path.name if path.exists() and path.name else value}")
    samples = getattr(args, "samples", None)
    k_in_name = re.compile(r"\bK\s*=\s*\d+")
    k_named = bool(samples and k_in_name.search(name))
    if samples:
        if k_named:  # "X (LoRA, K=5)" run with --samples 1 -> "X (LoRA, K=1)"
            name = k_in_name.sub(f"K={samples}", name)
        parts.append(f"K={samples}")
    if not parts:
        return config
    suffix = ", ".join(parts)
    shown = [part for part in parts if not (part.startswith("K=") and k_named)]
    update: dict[str, Any] = {"name": f"{name} [{', '.join(shown)}]" if shown else name}
    if not getattr(args, "run_name", None) and config.run_name:
        update["run_name"] = f"{config.run_name}-{run_slug(suffix.replace(', ', '-'))}"
    return config.model_copy(update=update)

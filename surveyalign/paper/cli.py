"""``surveyalign paper``: the command line of :mod:`surveyalign.paper`."""

from __future__ import annotations

import argparse
import json

DEFAULT_CONFIG = "configs/paper/tiny.yaml"


def _cmd_paper(args: argparse.Namespace) -> int:
    from surveyalign.console import make_console
    from surveyalign.paper import PaperConfig, plan_paper, run_paper
    from surveyalign.paper._config import resolve_path

    overrides = {}
    for item in args.set or []:
        key, sep, value = item.partition("=")
        if not sep:
            raise ValueError(f"--set {item!r}: expected KEY=VALUE")
        import yaml

        overrides[key] = yaml.safe_load(value)
    if args.workdir:
        overrides["workdir"] = args.workdir
    path = args.config
    cfg = PaperConfig.from_yaml(resolve_path(path or DEFAULT_CONFIG), overrides)
    console = make_console()
    if args.plan:
        out = plan_paper(cfg, console=console, from_stage=args.from_stage, until_stage=args.until)
        if args.json:
            print(json.dumps(out, indent=2, default=str))
        return 0
    run_paper(cfg, console=console, from_stage=args.from_stage, until_stage=args.until, force=args.force)
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``paper`` subcommand."""
    from surveyalign.paper._config import STAGES

    p = subparsers.add_parser(
        "paper",
        help="SurveyReview end to end: data, KA, SFT x 4, DPO, evaluate (vote, RQS, HAS), Tables 2-4, 7, 8",
        description=("Run the paper's path in one run folder: " + " -> ".join(STAGES) + ". A stage whose inputs "
                     "and settings did not change is skipped; each stage prints the command a user could run alone. "
                     "Profiles: configs/paper/tiny.yaml (CPU, minutes), qlora.yaml (one GPU), paper.yaml (Qwen3-32B, "
                     "App. D, ZeRO-3)."),
    )
    p.add_argument("--config", default=None, help=f"paper config YAML (default: {DEFAULT_CONFIG})")
    p.add_argument("--workdir", default=None, help="run folder (default: the config's workdir)")
    p.add_argument("--plan", action="store_true",
                   help="print the stages, their commands, GPU-hours and API cost estimates; run nothing")
    p.add_argument("--json", action="store_true", help="with --plan: also print the plan as JSON")
    p.add_argument("--from", dest="from_stage", choices=STAGES, default=None,
                   help="start at this stage (the earlier ones must have finished)")
    p.add_argument("--until", choices=STAGES, default=None, help="stop after this stage")
    p.add_argument("--force", action="store_true", help="run the selected stages even when nothing changed")
    p.add_argument("--set", action="append", metavar="KEY=VALUE",
                   help="override a config key (dotted, YAML value), e.g. --set evaluate.limit=5")
    p.set_defaults(handler=_cmd_paper)

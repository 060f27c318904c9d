"""``surveyalign import-scores``: a prior survey evaluator's output as a run folder (SurveyReview App. H;
``surveyalign/evaluation/prior.py``)."""

from __future__ import annotations

import argparse
import sys

from surveyalign.argtypes import dimension_value
from surveyalign.constants import SPLITS

#: The ``--from`` choices (keys of ``surveyalign.evaluation.prior_map.PROFILES``; listed here so ``--help`` loads
#: nothing).
TOOLS = ("llmxmapreduce", "drbench", "surveyx", "generic")
#: The tie rules (``surveyalign.evaluation.prior_map.TIE_RULES``).
TIES = ("majority", "lower", "higher")

HELP = "import a prior evaluator's scores (LLMxMapReduce-V2, DR-Bench, SurveyX, any) as a run folder (App. H)"

_EPILOG = """\
examples:
  surveyalign import-scores --from drbench --scores race_pointwise.jsonl --dataset data/surveyreview \\
      --split test --out runs/eval/prior-drbench --model GPT-5.2
  surveyalign import-scores --from llmxmapreduce --scores result.csv --dataset data/surveyreview \\
      --out runs/eval/prior-llmxmapreduce --model Gemini-3-pro
  surveyalign import-scores --from generic --scores mine.json --dataset data/surveyreview --out runs/eval/mine \\
      --map clarity=readability --map depth=criticalness --scale 1,10
  surveyalign report runs/eval/prior-drbench runs/eval/gpt-5.2

Default criteria (SurveyReview Table 2 "Prior Work"): llmxmapreduce language_score->readability,
critical_score->criticalness (0-100), structure->structure, relevance->comprehensiveness (20-100: 1-5 x 20);
drbench (RACE point-wise, 0-10) readability->readability, insight->criticalness, comprehensiveness->
comprehensiveness; surveyx (1-5) structure->structure, critical_analysis->criticalness.
Each score is stretched linearly from its scale onto [-2, 2] and mapped to the closest of -2, -1, +1, +2;
a value halfway between two (-1.5, 0, +1.5) goes by --tie (majority: toward -1, the benchmark's majority label).
A paper scores all its review units of a dimension. RUN_DIR gets predictions.jsonl (status scored / missing,
raw score, scale and category per unit), metrics.json and run_config.json, as `surveyalign evaluate` writes them.
"""


def _criterion_map(text: str) -> tuple[str, str | None]:
    """``CRITERION=DIMENSION`` (or ``CRITERION=none``) -> ``(criterion, dimension or None)``."""
    crit, eq, dim = text.partition("=")
    if not eq or not crit.strip() or not dim.strip():
        raise argparse.ArgumentTypeError(f"expected CRITERION=DIMENSION or CRITERION=none, got {text!r}")
    return crit.strip(), None if dim.strip().lower() in ("none", "-") else dimension_value(dim)


def _scale(text: str) -> tuple[str | None, tuple[float, float]]:
    """``MIN,MAX`` or ``CRITERION=MIN,MAX`` -> ``(criterion or None, (low, high))``."""
    crit, eq, rest = text.rpartition("=")
    parts = rest.split(",")
    try:
        low, high = (float(x) for x in parts) if len(parts) == 2 else (None, None)
    except ValueError:
        low = high = None
    if low is None or high is None or not low < high or (eq and not crit.strip()):
        raise argparse.ArgumentTypeError(f"expected MIN,MAX or CRITERION=MIN,MAX with MIN < MAX, got {text!r}")
    return (crit.strip() or None) if eq else None, (low, high)


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``surveyalign import-scores`` to the top-level parser."""
    p = subparsers.add_parser(
        "import-scores", help=HELP,
        description="Convert a prior survey evaluator's per-survey scores into an evaluation run folder: each "
        "aligned criterion's score is mapped to the closest SurveyReview category and applied to every review "
        "unit of the paper; papers absent from the file are counted as `missing`.",
        epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--from", dest="tool", required=True, choices=TOOLS, help="the tool that wrote --scores")
    p.add_argument("--scores", required=True, metavar="FILE",
                   help="the tool's output: .jsonl, .json (array, or object keyed by paper id / title) or .csv")
    p.add_argument("--dataset", required=True, metavar="DIR", help="dataset folder built by `surveyalign data build`")
    p.add_argument("--split", default="test", choices=SPLITS, help="split whose units are scored (default: test)")
    p.add_argument("--out", required=True, metavar="RUN_DIR", help="run folder to write")
    p.add_argument("--name", help="judge name in the leaderboard (default: the tool's name, with --model)")
    p.add_argument("--model", help="the LLM the tool ran with, recorded and shown (e.g. GPT-5.2)")
    p.add_argument("--map", dest="remap", action="append", default=[], type=_criterion_map,
                   metavar="CRITERION=DIMENSION",
                   help="map a criterion of the file to a dimension, or leave it out with CRITERION=none; repeatable")
    p.add_argument("--scale", dest="scales", action="append", default=[], type=_scale,
                   metavar="[CRITERION=]MIN,MAX",
                   help="the scale of every criterion (MIN,MAX) or of one (CRITERION=MIN,MAX); repeatable")
    p.add_argument("--tie", default="majority", choices=TIES,
                   help="a value halfway between two categories: majority (toward -1), lower or higher")
    p.add_argument("--bootstrap", type=int, default=1000, metavar="N",
                   help="paper-level bootstrap resamples for the confidence intervals (0: none)")
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed")
    p.set_defaults(handler=_import)


def _import(args: argparse.Namespace) -> int:
    from surveyalign.console import make_console
    from surveyalign.evaluation.prior import import_scores
    from surveyalign.evaluation.prior_map import PROFILES, mapping_table
    from surveyalign.scoring import render_leaderboard

    try:
        mapping = mapping_table(PROFILES[args.tool], dict(args.remap), dict(args.scales))
        result = import_scores(args.scores, args.dataset, args.out, tool=args.tool, mapping=mapping,
                               split=args.split, name=args.name, model=args.model, tie=args.tie,
                               bootstrap=max(args.bootstrap, 0), seed=args.seed,
                               argv=["surveyalign", *sys.argv[sys.argv.index("import-scores"):]]
                               if "import-scores" in sys.argv else None)
    except (FileNotFoundError, ValueError) as err:
        print(f"surveyalign import-scores: {err}", file=sys.stderr)
        return 2
    except RuntimeError as err:
        print(f"surveyalign import-scores: {err}", file=sys.stderr)
        return 1
    console = make_console()
    cfg = result.run_config
    console.print(result.metrics["judge"]["line"], markup=False, soft_wrap=True)
    console.print(render_leaderboard({cfg["name"]: result.metrics}))
    console.print("mapping: " + ", ".join(f"{k} [{v['scale'][0]:g}, {v['scale'][1]:g}] -> {v['dimension']}"
                                          for k, v in cfg["mapping"].items()) + f"; ties: {cfg['tie_rule']}",
                  markup=False)
    c, papers = cfg["counts"], cfg["papers"]
    line = (f"units: {c['total']} ({c['scored']} scored, {c['missing']} missing); papers of {cfg['split']}: "
            f"{papers['matched']}/{papers['in_split']} in the file ({papers['matched_by_title']} matched by title)")
    if cfg["unmatched_records"]:
        line += f"; {len(cfg['unmatched_records'])} record(s) of the file match no paper of {cfg['split']}"
    if cfg["dimensions_left_out"]:
        line += "; left out (no criterion maps): " + ", ".join(f"{d} ({n} units)"
                                                              for d, n in cfg["dimensions_left_out"].items())
    console.print(line, markup=False)
    console.print(f"run folder: {result.run_dir}", markup=False)
    return 0

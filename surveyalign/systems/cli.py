"""``surveyalign systems``: rank survey-writing systems on shared topics (paired CIs, human reference, ranking
stability)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HELP = "rank survey-writing systems on shared topics: judges, side-by-side, citations, paired CIs, Kendall tau"

_DESCRIPTION = """\
Compare survey writers (AutoSurvey, SurveyForge, deep-research agents...) on the same topics. Corpus:
DIR/<system>/<topic>.{md,tex,pdf,...} (read like `surveyalign score` reads surveys), optional
DIR/_reference/<topic>.* (a human-written survey of the topic) and DIR/_topics.yaml ({topics: {<topic>: {title,
references: [title | {title, doi, arxiv, year, authors}]}}}). Missing (system, topic) pairs are counted, never
imputed. Measures (each optional, configs/systems/*.yaml): SurveyAlign's four dimensions (K-sample vote), the
PaperOrchestra literature-review autorater, side-by-side against the human reference with the order swapped
(win / tie / loss, position-flip rate), citation precision / recall / F1 against the topic's reference list
(_topics.yaml, else the human reference's own list) with references resolved to paper ids (DOI, arXiv id, checked
title search; unresolved counted); length and reference count as covariates. Reported per system: the mean over
topics with a topic-level bootstrap 95% CI; every pair of systems on the topics both have (difference, paired CI,
sign-test p; fewer than 10 shared topics: "insufficient data"); the ranking under each measure and Kendall tau
between measures and between judges with CIs. Writes OUT/systems.md, systems.json, systems.html (self-contained,
a drill-down per topic). Every LLM call is kept in OUT/calls.jsonl and every resolved reference in
OUT/resolutions.jsonl: re-running the command makes only what is missing. --plan prints the calls still to make
and their estimated cost, sending nothing.

examples:
  surveyalign systems --corpus writers/ --config configs/systems/api.yaml --out runs/writers --plan
  surveyalign systems --corpus writers/ --config configs/systems/api.yaml --out runs/writers
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``systems`` to the top-level parser."""
    p = subparsers.add_parser("systems", help=HELP, description=_DESCRIPTION,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--corpus", required=True, type=Path, metavar="DIR", help="DIR/<system>/<topic>.* (+ _reference/, "
                   "_topics.yaml)")
    p.add_argument("--config", required=True, type=Path, metavar="YAML", help="configs/systems/NAME.yaml")
    p.add_argument("--out", required=True, type=Path, metavar="OUT", help="run folder (reports, calls.jsonl, "
                   "resolutions.jsonl)")
    p.add_argument("--plan", action="store_true", help="print the calls still to make and their cost; send nothing")
    p.add_argument("--prices", default=None, metavar="FILE", help="prices over configs/prices.yaml (with --plan)")
    p.add_argument("--keep-failed", action="store_true", help="reuse cached answers that errored or could not be "
                   "read (default: a re-run asks them again)")
    p.add_argument("--pdf-extractor", default="pypdf", choices=("pypdf", "pymupdf4llm", "marker"),
                   help="PDF text extractor")
    p.set_defaults(handler=_systems)


def _systems(args: argparse.Namespace) -> int:
    from surveyalign.console import make_console
    from surveyalign.systems.config import SystemsConfig
    from surveyalign.systems.run import plan_systems, run_systems

    config = SystemsConfig.from_yaml(args.config)
    console = make_console(file=sys.stderr)
    if args.plan:
        from surveyalign.calls.cost import load_prices

        for line in plan_systems(args.corpus, config, args.out, prices=load_prices(override=args.prices),
                                 pdf_extractor=args.pdf_extractor):
            make_console().print(line, markup=False, highlight=False)
        return 0
    result = run_systems(args.corpus, config, args.out, pdf_extractor=args.pdf_extractor,
                         keep_failed=args.keep_failed)
    make_console().print(Path(result["files"]["md"]).read_text(encoding="utf-8"), markup=False, highlight=False)
    for key, reason in result["unreadable"].items():
        console.print(f"not scored: {key}: {reason}", markup=False, highlight=False)
    console.print(f"{result['n_missing']} missing (system, topic) pair(s); reports -> {result['files']['html']}",
                  markup=False, highlight=False)
    return 3 if result["unreadable"] else 0

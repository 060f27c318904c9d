"""The ``surveyalign`` command line: one subcommand group per sub-package.

Each sub-package exposes ``register(subparsers)`` in its ``cli`` module; heavy imports (torch, transformers,
trl, datasets, scikit-learn, scipy, matplotlib, lxml, pypdf) happen inside the command handlers or in
submodules that the sub-packages load on first use (lazy_loader), so ``surveyalign --help`` stays fast.

:func:`main` imports only the ``cli`` module of the command named on the command line: the other commands are
listed from :data:`_COMMANDS` (name, module, one-line help) without importing their code, so ``surveyalign
--help`` imports no subcommand and ``surveyalign CMD --help`` imports one. ``tests/test_cli_imports.py``
checks that the table's help lines are the ones the modules register.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from surveyalign import __version__

#: Every subcommand in help order: (name, the module whose ``register`` adds it, its one-line help as that module
#: registers it). A module may add several commands (``scoring.cli``: report, metrics).
_COMMANDS = (
    ("demo", "surveyalign.demo",
     "run the main job small: tiny model, dataset, SFT adapter, evaluation, leaderboard"),
    ("data", "surveyalign.data.cli", "build, inspect and publish the SurveyReview dataset"),
    ("prompts", "surveyalign.prompts.cli",
     "show the judge prompt of a dimension, or parse a judge answer (SurveyReview App. C)"),
    ("evaluate", "surveyalign.evaluation.cli",
     "run a judge over a SurveyReview split (resumable; writes predictions, metrics, run_config)"),
    ("import-scores", "surveyalign.evaluation.prior_cli",
     "import a prior evaluator's scores (LLMxMapReduce-V2, DR-Bench, SurveyX, any) as a run folder (App. H)"),
    ("paper", "surveyalign.paper.cli",
     "SurveyReview end to end: data, KA, SFT x 4, DPO, evaluate (vote, RQS, HAS), Tables 2-4, 7, 8"),
    ("rqs-judges", "surveyalign.evaluation.study_cli",
     ("App. I.4: RQS and HAS of every system under each RQS judge, inter-judge alpha, Kendall tau of the rankings "
      "with CIs")),
    ("sweep", "surveyalign.evaluation.study_cli",
     "ablations (§6.3): run a base eval config and variants on the same units, one paired table"),
    ("jury", "surveyalign.evaluation.study_cli",
     "several scoring judges as one: combine their run folders by mean, median or majority (weights)"),
    ("meta-eval", "surveyalign.evaluation.study_cli",
     "App. I.2: export rationale pairs for people to rate; human-human and judge-vs-human agreement"),
    ("report", "surveyalign.scoring.cli",
     "print the leaderboard, agreement with 95%% CIs, per-source, baseline and failure tables of runs"),
    ("metrics", "surveyalign.scoring.cli",
     "manage the evaluate metric modules (survey_alignment, rqs, has / ssr, prism, citation_f1)"),
    ("serve", "surveyalign.backends.cli", "serve a local model (+ PEFT adapter) over an OpenAI-compatible API"),
    ("score", "surveyalign.inference.cli", "review survey files with SurveyAlign (base + 4 adapters + KA + voting)"),
    ("train", "surveyalign.training.cli",
     "train SurveyAlign judges: SFT / DPO recipe launchers, DPO pair making, memory plans"),
    ("prism", "surveyalign.prism.cli",
     "PRISM review-quality metrics of a paper's reviews (depth, novelty, flaws, constructiveness)"),
    ("autorate", "surveyalign.autoraters.cli",
     "PaperOrchestra autoraters: citation F1, literature-review quality, side-by-side"),
    ("systems", "surveyalign.systems.cli",
     "rank survey-writing systems on shared topics: judges, side-by-side, citations, paired CIs, Kendall tau"),
    ("ka", "surveyalign.knowledge.cli", "knowledge augmentation: Comp-KA / Crit-KA from a citation graph"),
    ("rewards", "surveyalign.rewards.cli",
     "SurveyAlign as a training reward: serve /get_reward (OpenRLHF), report a reward log (hacking checks)"),
    ("stress", "surveyalign.stress",
     "a judge's robustness: score shifts under injected instructions, hidden text, padding, shuffles, praise"),
)

#: Modules that add subcommands to a group another module registers (a users-layer package extending a domain
#: command group without an upward import): registered right after the group's own module.
_GROUP_EXTENSIONS: dict[str, tuple[str, ...]] = {
    "data": ("surveyalign.annotation.cli",),  # data identify / collect / annotate / agreement / release
}

#: Sub-packages whose ``cli.register`` adds subcommands, in help order.
_COMMAND_MODULES = tuple(dict.fromkeys(
    m for name, module, _ in _COMMANDS for m in (module, *_GROUP_EXTENSIONS.get(name, ()))))


#: Exceptions that mean "the input or a step failed", reported as one line. Anything else is a bug and keeps
#: its traceback.
_USER_ERRORS = (ValueError, OSError, RuntimeError)  # OSError covers missing files, folders, permissions


def build_parser(command: str | None = "*") -> argparse.ArgumentParser:
    """Return the top-level parser.

    ``command="*"`` (the default) registers every subcommand's full parser (imports every ``cli`` module);
    ``command=NAME`` registers only the module that adds NAME and lists the others by name and help line;
    ``command=None`` (or an unknown name) imports no subcommand module at all.
    """
    parser = argparse.ArgumentParser(
        prog="surveyalign",
        description="Train and evaluate LLM judges of survey papers against human reviewers (SurveyReview).",
    )
    parser.add_argument("--version", action="version", version=f"surveyalign {__version__}")
    parser.add_argument("--traceback", action="store_true",
                        help="show the full Python traceback when a command fails (also SURVEYALIGN_TRACEBACK=1)")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    wanted = {module for name, module, _ in _COMMANDS if command == "*" or name == command}
    registered: set[str] = set()
    for name, module, help_line in _COMMANDS:
        if module in wanted:
            if module not in registered:
                importlib.import_module(module).register(subparsers)
                registered.add(module)
            for extension in _GROUP_EXTENSIONS.get(name, ()):
                importlib.import_module(extension).register(subparsers)
        else:
            # listed in `surveyalign --help` and accepted as a choice, without importing the command's code
            subparsers.add_parser(name, help=help_line, add_help=False)
    return parser


def _command_of(argv: list[str]) -> str | None:
    """The subcommand named in ``argv`` (the first word that is not an option; top-level options take no value)."""
    return next((word for word in argv if not word.startswith("-")), None)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``surveyalign`` console script; returns the process exit code."""
    argv = sys.argv[1:] if argv is None else list(argv)
    command = _command_of(argv)
    if command is not None:  # `surveyalign --help` / `--version` load nothing from the Hub: no import for it
        from surveyalign.models.paths import default_offline

        default_offline()  # offline unless HF_HUB_OFFLINE is set (HF_HUB_OFFLINE=0 downloads from the Hub)
        from surveyalign.console import quiet_third_party

        quiet_third_party()  # third-party lines that do not concern the user (surveyalign.console.THIRD_PARTY_NOISE)
    parser = build_parser(command)
    args = parser.parse_args(argv)
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return 0 if args.command is None else 2
    try:
        result = handler(args)
    except KeyboardInterrupt:
        print("interrupted; completed work is saved and a re-run resumes it", file=sys.stderr)
        return 130
    except _USER_ERRORS as err:
        # bad input, missing files, failed steps: one clear line instead of a traceback (unless asked for)
        if args.traceback or os.environ.get("SURVEYALIGN_TRACEBACK"):
            raise
        from surveyalign.redact import redact_secrets

        print(redact_secrets(f"surveyalign {args.command}: error: {type(err).__name__}: {err}"), file=sys.stderr)
        print("(run with `surveyalign --traceback ...` for the full traceback)", file=sys.stderr)
        return 2
    return int(result or 0)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

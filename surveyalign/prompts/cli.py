"""`surveyalign prompts ...` subcommands: inspect the judge prompt and parse judge answers."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

_PLACEHOLDER_SURVEY = "{survey text}"


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``surveyalign prompts show`` and ``surveyalign prompts parse`` to the top-level parser."""
    from surveyalign.constants import DIMENSIONS
    from surveyalign.prompts.protocols import DEFAULT_PROTOCOL, PROTOCOLS

    group = subparsers.add_parser(
        "prompts",
        help="show the judge prompt of a dimension, or parse a judge answer (SurveyReview App. C)",
        description="Inspect the unified judge prompt protocol (SurveyReview App. C).",
    )
    sub = group.add_subparsers(dest="prompts_command", metavar="SUBCOMMAND")

    show = sub.add_parser(
        "show",
        help="print the rendered judge prompt of one dimension",
        description=(
            "Print the judge prompt for DIMENSION exactly as a judge receives it (one user message), "
            "followed by its prompt hash on stderr."
        ),
    )
    show.add_argument("--dimension", required=True, choices=DIMENSIONS, type=str.lower, help="dimension to judge")
    show.add_argument(
        "--protocol",
        default=DEFAULT_PROTOCOL,
        choices=tuple(PROTOCOLS),
        help=f"answer protocol: v1.0 = Reason$$$X$$$, v1.1 = <reason>..</reason> <score>X</score> (default {DEFAULT_PROTOCOL})",
    )
    show.add_argument("--knowledge", type=Path, default=None, metavar="FILE", help="text file with knowledge-augmentation content")
    show.add_argument("--survey", type=Path, default=None, metavar="FILE", help=f"survey markdown file (default: the placeholder {_PLACEHOLDER_SURVEY})")
    show.add_argument("--title", default=None, help="survey title to show above the text")
    show.add_argument("--json", action="store_true", help="print a JSON object (instruction, input, suffix, hash, messages) instead")
    show.set_defaults(handler=_show)

    parse = sub.add_parser(
        "parse",
        help="parse a judge answer and print score, rationale and error as JSON",
        description="Parse one judge answer (from FILE, or stdin when FILE is '-') with the project's single parser. "
                    "Exit status 3 when the answer gives no score (the reason is in the JSON's error), as every "
                    "command exits 3 when it has no usable result.",
    )
    parse.add_argument("file", type=str, metavar="FILE", help="file holding the raw answer text, or '-' for stdin")
    parse.add_argument("--protocol", default="auto", choices=("auto", *PROTOCOLS), help="protocol to expect (default auto)")
    parse.set_defaults(handler=_parse)
    group.set_defaults(handler=lambda args: (group.print_help(), 2)[1])


def _read(path: Path, what: str) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise OSError(f"cannot read {what} file {path}: {exc.strerror or exc}") from None  # exit 2, one line


def _show(args: argparse.Namespace) -> int:
    from surveyalign.prompts.builder import build_judge_prompt

    knowledge = _read(args.knowledge, "knowledge") if args.knowledge is not None else None
    text = _read(args.survey, "survey") if args.survey is not None else _PLACEHOLDER_SURVEY
    prompt = build_judge_prompt(args.dimension, text, protocol=args.protocol, knowledge=knowledge, title=args.title)
    if args.json:
        payload = {
            "dimension": prompt.dimension,
            "protocol": prompt.protocol,
            "has_knowledge": prompt.has_knowledge,
            "template_hash": prompt.template_hash,
            "instruction": prompt.instruction,
            "input": prompt.input,
            "suffix": prompt.suffix,
            "messages": prompt.messages(),
        }
        print(json.dumps(payload, ensure_ascii=False, indent=2))
    else:
        print(prompt.content)
        print(f"template hash: {prompt.template_hash}", file=sys.stderr)
    return 0


def _parse(args: argparse.Namespace) -> int:
    from surveyalign.prompts.parser import parse_judgement

    text = sys.stdin.read() if args.file == "-" else _read(Path(args.file), "answer")
    result = parse_judgement(text, protocol=args.protocol)
    print(json.dumps({"score": result.score, "rationale": result.rationale, "error": result.error}, ensure_ascii=False))
    return 0 if result.ok else 3  # no usable result: 3, as everywhere

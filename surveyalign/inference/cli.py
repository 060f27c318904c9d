"""``surveyalign score``: review survey files (markdown, LaTeX, PDF, folders) with SurveyAlign as one judge."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from surveyalign.argtypes import (
    add_cost_arguments,
    dimension_list,
    int_at_least,
    non_negative_float,
    positive_int,
)
from surveyalign.constants import DIMENSIONS
from surveyalign.models import max_length_arg

_DESCRIPTION = """\
Review surveys on the four SurveyReview dimensions with one judge: a base model with one adapter per
dimension, K samples per dimension at temperature T (seeds seed..seed+K-1, recorded), majority vote with the
log-probability tie-break, and one merged rationale per dimension. Inputs: markdown, a LaTeX main file or
project folder (\\input/\\include resolved, macros expanded, bibliography kept), PDF (pypdf), or a folder of
them. Writes OUT/<survey stem>.json, .md and .html (stem + a short content hash when two different surveys share
a stem, or when OUT holds an earlier report of another survey under that stem; a survey given twice is scored
once, with a message), comparison.md/.html for several surveys; every call is kept
in OUT/calls.jsonl, so re-running the same command resumes (answers that errored or could not be parsed are asked
again; --keep-failed reuses them; the last line counts the answers reused, retried and made). --plan prints the calls, tokens, estimated cost and time before anything is sent (the Crit-KA summariser's
calls included); --max-cost USD stops sending
when the projected total would pass USD (exit 4; a re-run with a higher cap continues). Each report gives the
tokens and cost of every dimension (configs/prices.yaml, --prices FILE). Exit status 3 when a dimension was not scored or a
survey file could not be read (a PDF over a document limit, an unreadable file: each named on one line while the
other surveys are scored).

examples:
  surveyalign score survey.pdf --judge configs/judge/surveyalign-qwen3-32b.yaml --out reviews/
  surveyalign score paper/main.tex drafts/ --judge runs/adapters --out reviews/ --allow-no-knowledge
  surveyalign score survey.md --judge judge.yaml --base-url http://gpu1:8000/v1 --base-url http://gpu2:8000/v1
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``score`` to the top-level parser."""
    p = subparsers.add_parser("score", help="review survey files with SurveyAlign (base + 4 adapters + KA + voting)",
                              description=_DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("surveys", nargs="+", metavar="SURVEY", help="markdown / .tex / .pdf files or folders of them")
    p.add_argument("--judge", required=True, metavar="CONFIG|DIR|HUB_ID",
                   help="judge config (YAML/JSON: a model role, backend: + generation:, plus samples, synthesis...), "
                        "a folder with surveyalign_judge.yaml or one adapter folder per dimension, or a Hub repo with "
                        "that layout")
    p.add_argument("--out", required=True, help="output folder (reports and the resumable calls.jsonl)")
    p.add_argument("--dimensions", type=dimension_list, default=None, help=f"comma-separated subset of {','.join(DIMENSIONS)}")
    p.add_argument("--samples", type=positive_int, default=None, help="K samples per dimension (config default: 5)")
    p.add_argument("--temperature", type=non_negative_float, default=None,
                   help="sampling temperature (config default: 0.7)")
    p.add_argument("--seed", type=int_at_least(0), default=None, help="base seed; sample k uses seed + k")
    p.add_argument("--max-new-tokens", type=positive_int, default=None, help="token cap per sample")
    p.add_argument("--max-length", type=max_length_arg, default=None,
                   help="token budget prompt + answer (default: the adapter's training length)")
    p.add_argument("--tokenizer", default=None, metavar="DIR",
                   help="the judge's tokenizer (folder or Hub id; judge config key `tokenizer:`): counts prompt "
                        "tokens so --max-length cuts the survey by the training length rule (needed for an API "
                        "judge; default: a local judge's own)")
    p.add_argument("--base-url", action="append", default=None,
                   help="openai judges: API root of a server (repeat for several; calls are spread over them)")
    p.add_argument("--no-synthesis", action="store_true", help="keep the best winning sample's rationale")
    p.add_argument("--knowledge", default=None, metavar="DIR",
                   help="prepared KA texts: DIR/<survey stem>.<dimension>.txt (two surveys with one stem: "
                        "DIR/<stem>-<hash>.<dimension>.txt, the name of each one's report, is read first)")
    p.add_argument("--graph", default=None, metavar="FILE",
                   help="citation graph (surveyalign ka graph output) to build Comp-KA / Crit-KA from the references")
    p.add_argument("--ka-config", default=None, metavar="FILE", help="KA settings (configs/ka/*.yaml) with --graph")
    p.add_argument("--allow-no-knowledge", action="store_true",
                   help="judge KA-trained dimensions without KA (recorded) instead of refusing them")
    p.add_argument("--pdf-extractor", default="pypdf", choices=("pypdf", "pymupdf4llm", "marker"),
                   help="PDF text extractor (pypdf: default; the others are optional GPL/AGPL extras)")
    p.add_argument("--keep-failed", action="store_true", help="reuse cached answers that errored or could not be "
                   "parsed (default: a re-run asks them again)")
    add_cost_arguments(p, kept="the answers so far are kept (finished surveys reported)")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    p.add_argument("--quantization", choices=("auto", "none", "4bit", "8bit"), default=None,
                   help="local judges: load the base in 4-bit (NF4, bitsandbytes) or 8-bit; default auto: as the "
                        "adapters' training records say (QLoRA adapters get their 4-bit base)")
    p.add_argument("--allow-base-mismatch", action="store_true",
                   help="local judges: score with adapters on a base (or quantisation) other than the one in their "
                        "training records; the mismatch is recorded in the backend description")
    p.set_defaults(handler=_score)


def _knowledge_source(args: argparse.Namespace, spec, cache):
    """The KA source of ``--knowledge`` / ``--graph`` (``None``: none); the Crit-KA summariser shares ``cache``
    (its calls are planned by ``--plan`` and counted by ``--max-cost`` with the judge's):
    :func:`surveyalign.inference.knowledge.knowledge_source`."""
    from surveyalign.inference.knowledge import knowledge_source

    return knowledge_source(folder=args.knowledge, graph=args.graph, ka_config=args.ka_config, model=spec.model,
                            cache=cache)


def _base_options(spec, args: argparse.Namespace):
    """``spec`` with ``--quantization`` / ``--allow-base-mismatch`` merged into its backend options (local judges)."""
    extra = {k: v for k, v in (("quantization", args.quantization),
                                ("allow_base_mismatch", True if args.allow_base_mismatch else None)) if v is not None}
    if not extra:
        return spec
    if spec.served:
        flags = " and ".join(f"--{k.replace('_', '-')}" for k in extra)
        raise ValueError(f"{flags}: only for local judges (transformers, vllm); this judge's backend is "
                         f"{spec.backend.kind}")
    backend = spec.backend.model_copy(update={"options": {**spec.backend.options, **extra}})
    return spec.model_copy(update={"backend": backend})


#: Stems of the files ``score`` writes once per run next to the per-survey reports.
RUN_FILE_STEMS = ("comparison", "calls")


def _stems(documents):
    """One report stem per document (:func:`surveyalign.paths.unique_output_names`), fixed before any judge call.

    Args:
        documents: the read surveys.

    Returns:
        :class:`~surveyalign.paths.OutputNames`: the file stem (safe, bounded; stem + content hash when two
        different surveys share a stem, e.g. ``survey.md`` and ``survey.pdf``) and which documents are repeats of
        an earlier identical one (scored once, named in a message).
    """
    from surveyalign.paths import unique_output_names

    # the run's own files in the same folder (comparison.md/.html, calls.jsonl) are never an input's name
    return unique_output_names([d.source.stem for d in documents], [d.text for d in documents], fallback="survey",
                               reserved=RUN_FILE_STEMS)


def _beside_earlier_reports(out: Path, documents, stems: list[str]) -> tuple[list[str], list[str]]:
    """Report stems that never replace an earlier run's report of another survey in ``out``.

    ``OUT/<stem>.json`` written by an earlier run records its survey's ``sha256`` and ``source``; when neither
    matches (``score a/survey.md`` then ``score b/survey.md`` into one folder) this survey is written under its
    stem plus a short content hash instead (:func:`surveyalign.paths.name_beside_earlier`).

    Returns:
        ``(stems, messages)``: one stem per document and one line per renamed one.
    """
    import json

    from surveyalign.paths import content_sha256, name_beside_earlier

    names, messages = [], []
    for document, stem in zip(documents, stems, strict=True):
        report = out / f"{stem}.json"
        earlier = None
        if report.exists():
            try:
                earlier = json.loads(report.read_text(encoding="utf-8")).get("survey") or {}
            except (OSError, ValueError, AttributeError):
                earlier = {}
            earlier = earlier if isinstance(earlier, dict) else {}
        other = name_beside_earlier(stem, content_sha256(document.text), earlier, source=str(document.source))
        if other is not None:
            messages.append(f"{document.source}: {report} holds the report of another survey "
                            f"({earlier.get('source') or 'unknown source'}); written as {other}")
        names.append(other or stem)
    return names, messages


def _score(args: argparse.Namespace) -> int:
    from rich.table import Table

    from surveyalign.calls import CallCache
    from surveyalign.calls.budget import CostCapReached
    from surveyalign.calls.cost import cost_lines, load_prices
    from surveyalign.calls.spend import spent_usd, unanswered
    from surveyalign.console import make_console
    from surveyalign.documents import read_documents
    from surveyalign.inference.judge import SurveyAlignJudge
    from surveyalign.inference.report import write_comparison, write_survey_report
    from surveyalign.inference.spec import load_judge_spec
    from surveyalign.inference.spend import batch_cost, plan_score, score_budget

    dims = args.dimensions  # checked and normalised by the flag type (argtypes.dimension_list)
    spec = load_judge_spec(args.judge, samples=args.samples, temperature=args.temperature, seed=args.seed,
                           max_new_tokens=args.max_new_tokens, max_length=args.max_length, dimensions=dims,
                           tokenizer=args.tokenizer,
                           base_url=args.base_url, synthesis=False if args.no_synthesis else None)
    spec = _base_options(spec, args)
    unreadable: list[str] = []  # a file over a document limit or unreadable: named, the rest of the batch goes on
    documents = read_documents(args.surveys, pdf_extractor=args.pdf_extractor, errors=unreadable)
    if not documents:
        raise ValueError("no readable survey: " + "; ".join(unreadable))
    names = _stems(documents)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    console = make_console(file=sys.stderr)
    for line in unreadable:
        console.print(f"not scored: {line}", markup=False, highlight=False)
    for line in names.messages([str(d.source) for d in documents]):
        console.print(line, markup=False, highlight=False)
    if args.knowledge and names.disambiguated:  # one prepared KA file would serve several surveys
        console.print("--knowledge: surveys sharing a stem read DIR/<stem>-<hash>.<dimension>.txt when it is there "
                      "(the name of their report above), else the shared DIR/<stem>.<dimension>.txt",
                      markup=False, highlight=False)
    documents, stems = [documents[i] for i in names.keep], [names.names[i] for i in names.keep]
    stems, renamed = _beside_earlier_reports(out, documents, stems)
    for line in renamed:
        console.print(line, markup=False, highlight=False)
    prices = load_prices(override=args.prices)
    cache = CallCache.load(out / "calls.jsonl", keep_failed=args.keep_failed)
    reviews = []
    judge = SurveyAlignJudge(spec, cache=cache, knowledge=_knowledge_source(args, spec, cache),
                             allow_no_knowledge=args.allow_no_knowledge, prices=prices)
    stopped = None
    try:
        plan = None
        if args.plan or args.max_cost is not None:  # evaluate's estimate and cap (surveyalign.calls.spend)
            plan = plan_score(judge, documents, cache, prices)
            if args.plan:
                for line in plan.lines(spent_usd(cache, [*plan.calls, *plan.knowledge_calls], prices)):
                    make_console().print(line, markup=False, highlight=False)
                return 0
            judge.budget = score_budget(args.max_cost, plan, cache, prices)
            if getattr(judge.knowledge, "summariser", None) is not None:  # its summaries ask the same cap
                judge.knowledge.summariser.budget = judge.budget.knowledge()
        for document, stem in zip(documents, stems):
            try:
                review = judge.review(document, progress=not args.no_progress)
            except CostCapReached:
                left = [*unanswered(cache, plan.todo, judge.judge.unusable),
                        *(c for c in plan.synthesis_todo if cache.get(c.key) is None),
                        *unanswered(cache, plan.knowledge_todo)]
                stopped = judge.budget.cap.stop_message(left, "judge and Crit-KA", cache.path)
                break
            paths = write_survey_report(review, out, stem)
            reviews.append(review)
            summary = review["summary"]
            partial = (f" ({summary['n_partial']} on fewer than K usable samples; {summary['n_failed_samples']} "
                       f"failed sample(s))" if summary.get("n_failed_samples") else "")
            console.print(f"{document.source}: {summary['n_scored']}/{summary['n_dimensions']} "
                          f"dimensions scored{partial} -> {paths['html']}", markup=False, highlight=False)
            for line in review["warnings"]:
                console.print(f"  warning: {line}", markup=False, highlight=False)
    finally:
        judge.close()
        cache.close()
    if stopped:
        console.print(f"surveyalign score: {stopped} ({len(reviews)} of {len(documents)} survey(s) reported)",
                      markup=False, highlight=False)
        return 4
    if len(reviews) > 1:
        paths = write_comparison(reviews, out)
        console.print(f"comparison of {len(reviews)} surveys -> {paths['html']}")
    table = Table(title=f"{spec.name}: {spec.samples} sample(s) per dimension, T={spec.generation.temperature}")
    table.add_column("survey", overflow="fold")
    for dim in spec.dimensions:
        table.add_column(dim[:5], justify="right")
    for review in reviews:
        cells = []
        for dim in spec.dimensions:
            record = review["dimensions"][dim]
            cells.append(f"{record['score']:+d}" if record["score"] is not None else record["status"])
        table.add_row(review["survey"]["title"] or review["survey"]["source"], *cells)
    make_console().print(table)  # not squeezed to 80 columns when piped
    summary = batch_cost(reviews, prices, cache=cache,
                         summariser_calls=list(getattr(judge.knowledge, "summariser_calls", {}).values()))
    if summary is not None:
        for line in cost_lines(summary):
            console.print(line, markup=False, highlight=False)
    console.print(cache.summary(), markup=False, highlight=False)
    failed = sum(r["summary"]["n_dimensions"] - r["summary"]["n_scored"] for r in reviews)
    if failed:
        console.print(f"{failed} dimension(s) not scored (see the reports: every reason is recorded)")
    if unreadable:
        console.print(f"{len(unreadable)} survey file(s) not read (named above)")
    return 3 if failed or unreadable else 0

"""``surveyalign autorate``: the PaperOrchestra autoraters on files (citation-f1, litreview, sxs-paper, sxs-litreview)."""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path
from typing import Any

from surveyalign.argtypes import (
    int_at_least,
    non_negative_float,
    positive_float,
    positive_int,
)
from surveyalign.models import max_length_arg
from surveyalign.yamlconfig import yaml_error_line

_EPILOG = """\
examples:
  surveyalign autorate sxs-litreview human.md generated.md --base-url http://127.0.0.1:8000/v1 --model judge
  surveyalign autorate sxs-paper a.tex b.tex --rule official5 --model gpt-5 --output-dir runs/autorate/ab
  surveyalign autorate litreview paper.md --venue "ICLR 2025" --model gpt-5
  surveyalign autorate citation-f1 --ground-truth gt.tex --generated gen.md --variant official --model gpt-5

Each command writes OUTPUT_DIR/result.json (every call, parse problem and the variant / rule that ran),
OUTPUT_DIR/result.md (markdown tables, also printed) and OUTPUT_DIR/calls.jsonl (the call cache: re-running
the same command makes only the missing calls). Exit status 3 when no judge answer could be read, and for
citation-f1 also when no overall F1 could be computed (a partition unreadable, or no resolved / labelled id on a
side: the report shows ``n/a`` with the reason instead of the flagged 0.0).
"""


def _add_judge_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("judge")
    g.add_argument("--judge", type=Path, metavar="ROLE.yaml",
                   help="the judge as a model role (backend: {kind, options} + generation: {...}, the shape of every "
                   "config naming a model); the flags below override its values")
    g.add_argument("--backend", help="backend kind (openai, transformers, vllm, scripted; default: the --judge "
                   "file's, else openai)")
    g.add_argument("--model", help="model name (API) or folder (local backends)")
    g.add_argument("--base-url", help="OpenAI-compatible API root, e.g. http://127.0.0.1:8000/v1")
    g.add_argument("--option", dest="options", action="append", default=[], metavar="KEY=VALUE",
                   help="another backend option, value read as YAML (e.g. concurrency=8, api_key_env=MY_KEY, "
                   "replies=[...] for the scripted judge); repeatable")
    g.add_argument("--temperature", type=non_negative_float,
                   help="sampling temperature (default: the --judge file's, else 0 as in PaperOrchestra)")
    g.add_argument("--max-new-tokens", type=positive_int,
                   help="token cap per answer (default: the --judge file's, else 2048)")
    g.add_argument("--seed", type=int_at_least(0), help="sampling seed (default: the --judge file's, else 0)")
    g.add_argument("--concurrency", type=positive_int, help="requests in flight for API backends "
                   "(default: the backend's own)")
    g.add_argument("--batch-size", type=positive_int, help="prompts per generate call for local backends "
                   "(default: the backend's own, else 8)")
    g.add_argument("--max-length", type=max_length_arg, metavar="TOKENS",
                   help="token budget of prompt + answer: longer prompts get the ends of their paper texts cut, the "
                   "longer paper first (default: the model's context when known, e.g. an API server's max_model_len: "
                   "texts cut to fit it with a tokenizer, a prompt over it refused without one; unknown: no cut)")
    g.add_argument("--tokenizer", metavar="DIR", help="tokenizer counting tokens for --max-length or the model's "
                   "known context (needed to cut texts for API backends; local backends use their own)")
    p.add_argument("--output-dir", type=Path, help="folder for result.json, result.md and calls.jsonl "
                   "(default: runs/autorate/COMMAND/<input stems>-<hash of their contents>: one folder per set of "
                   "inputs; a folder holding another input's result is refused)")
    p.add_argument("--no-resume", action="store_true", help="ignore (and replace) an existing calls.jsonl")
    p.add_argument("--keep-failed", action="store_true", help="reuse cached answers that errored or could not be "
                   "read (default: a re-run asks them again)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``surveyalign autorate`` and its four subcommands to the top-level parser."""
    from surveyalign.autoraters.citation_f1 import CITATION_F1_VARIANTS
    from surveyalign.autoraters.rubric import (
        DEFAULT_AVERAGE_CITATIONS,
        VENUE_AVERAGE_CITATIONS,
    )
    from surveyalign.autoraters.sxs import SXS_RULES

    top = subparsers.add_parser(
        "autorate", help="PaperOrchestra autoraters: citation F1, literature-review quality, side-by-side",
        description="Run the four LLM-as-judge autoraters of PaperOrchestra (App. F.3) on paper files "
        "(markdown, LaTeX, PDF) through any judge backend; results name the variant / rule that ran.",
        epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = top.add_subparsers(dest="autorater", metavar="AUTORATER", required=True)
    for kind, what in (("sxs-litreview", "Introduction + Related Work only"), ("sxs-paper", "whole papers")):
        p = sub.add_parser(kind, help=f"side-by-side comparison ({what}), judged twice with the order swapped",
                           description=f"Side-by-side comparison of paper A and paper B ({what}): two calls with the "
                           "order swapped, combined by the outcome rule; reports the position-flip rate.")
        p.add_argument("paper_a", nargs="?", type=Path, help="paper A (markdown, .tex or .pdf)")
        p.add_argument("paper_b", nargs="?", type=Path, help="paper B")
        p.add_argument("--pair", nargs=2, action="append", default=[], type=Path, metavar=("A", "B"),
                       help="another pair to compare (repeatable; the flip rate is over all pairs)")
        p.add_argument("--rule", choices=SXS_RULES, default="seed",
                       help="outcome rule: seed (A wins only if it wins both calls), official3 (sign of the vote "
                       "sum), official5 (win / leaning win / tie / leaning loss / loss)")
        _add_judge_options(p)
        p.set_defaults(handler=_sxs, kind=kind.removeprefix("sxs-"))
    p = sub.add_parser("litreview", help="six-axis literature-review quality of each paper",
                       description="Literature-review quality (6 axes, weights 20/15/25/25/10/5): the judge's JSON is "
                       "validated, its overall score kept, the weighted score recomputed and broken caps flagged.")
    p.add_argument("papers", nargs="+", type=Path, help="paper files")
    p.add_argument("--venue", choices=sorted(VENUE_AVERAGE_CITATIONS),
                   help="take the venue's average citation count (" + ", ".join(
                       f"{k}: {v:g}" for k, v in VENUE_AVERAGE_CITATIONS.items()) + ")")
    p.add_argument("--avg-citations", type=positive_float, help="average citation count of the venue / field "
                   f"(default {DEFAULT_AVERAGE_CITATIONS:g}, the official code's default)")
    _add_judge_options(p)
    p.set_defaults(handler=_litreview)
    p = sub.add_parser("citation-f1", help="citation precision / recall / F1 over P0/P1 partitions",
                       description="Partition both reference lists into P0/P1 with the judge, resolve every reference "
                       "to a Semantic Scholar id (or take --ids), and compute citation F1. A zero denominator prints n/a with its "
                       "reason; exit status 3 when no overall F1 could be computed.")
    p.add_argument("--ground-truth", type=Path, required=True, help="the ground-truth paper")
    p.add_argument("--generated", type=Path, required=True, help="the generated paper")
    p.add_argument("--variant", choices=CITATION_F1_VARIANTS, default="seed",
                   help="seed (both papers partitioned) or official (ground truth only, recall per partition)")
    p.add_argument("--ids", type=Path, help='JSON {"ground_truth": {number: id|null}, "generated": {...}}: '
                   "resolved ids to use instead of Semantic Scholar. NUMBER is a string key (\"1\"), one "
                   "numbering per paper, 1-based, the numbers the P0/P1 partition shows: a markdown/PDF list's "
                   "printed label ([12] -> \"12\"; an author-year list: its position in the list); LaTeX: the "
                   "\\bibitem order of thebibliography, or for a .bib the order of first \\cite (the [n] of the "
                   "converted text). null marks an entry without an id (unresolved); a number the paper's list "
                   "lacks is refused")
    p.add_argument("--s2-url", help="Semantic Scholar Graph API root (default: the public API; key from S2_API_KEY)")
    p.add_argument("--s2-cache", type=Path, help="folder of the Semantic Scholar disk cache "
                   "(default: OUTPUT_DIR/s2-cache)")
    p.add_argument("--s2-rate", type=non_negative_float, default=1.0, help="Semantic Scholar requests per second")
    _add_judge_options(p)
    p.set_defaults(handler=_citation_f1)


def _role(args: argparse.Namespace):
    """The judge's model role: the ``--judge`` file (or an openai role), the judge flags set over it.

    Raises:
        FileNotFoundError: ``--judge`` names no file.
        ValueError: bad YAML, an invalid role (one line naming the file and key, or the old-shape hint), an
            ``--option`` that is not KEY=VALUE or whose value is not YAML.
    """
    import yaml
    from pydantic import ValidationError

    from surveyalign.autoraters.calls import AutoraterRole
    from surveyalign.yamlconfig import read_yaml_mapping, validation_line

    source = str(args.judge) if args.judge else "judge flags"
    data = read_yaml_mapping(args.judge, "autorater judge config") if args.judge else {"backend": {"kind": "openai"}}
    backend = data.get("backend") if isinstance(data.get("backend"), dict) else None
    if backend is not None:
        options = dict(backend.get("options") or {})
        for item in args.options:
            key, eq, raw = item.partition("=")
            if not eq or not key.strip():
                raise ValueError(f"--option {item!r}: expected KEY=VALUE")
            try:
                options[key.strip()] = yaml.safe_load(raw) if raw.strip() else ""
            except yaml.YAMLError as err:
                raise ValueError(f"--option {item!r}: the value is not valid YAML: {yaml_error_line(err)}") from None
        options.update({k: v for k, v in (("model", args.model), ("base_url", args.base_url)) if v})
        data = {**data, "backend": {**backend, "kind": args.backend or backend.get("kind"), "options": options}}
    flags = {k: v for k, v in (("temperature", args.temperature), ("max_new_tokens", args.max_new_tokens),
                                ("seed", args.seed)) if v is not None}
    if flags and (data.get("generation") is None or isinstance(data["generation"], dict)):
        data = {**data, "generation": {**(data.get("generation") or {}), **flags}}
    try:
        return AutoraterRole.model_validate(data)
    except ValidationError as err:
        raise ValueError(validation_line(err, source, "autorater judge config")) from None


def _judge(args: argparse.Namespace, out_dir: Path):
    from surveyalign.autoraters.calls import AutoraterJudge
    from surveyalign.calls import CallCache

    role = _role(args)
    backend = role.build()
    calls = out_dir / "calls.jsonl"
    if args.no_resume and calls.exists():
        calls.replace(calls.with_suffix(".jsonl.old"))
    return AutoraterJudge(backend, role.generation, CallCache.load(calls, keep_failed=args.keep_failed),
                          concurrency=args.concurrency,
                          batch_size=args.batch_size, progress=not args.no_progress, max_length=args.max_length,
                          tokenizer=args.tokenizer)


def _read(path: Path):
    from surveyalign.documents import read_document

    return read_document(path)


def _paper_ids(paths: list[Path], texts: list[str]) -> tuple[list[str], list[str]]:
    """One distinct id per paper for the result rows (:func:`surveyalign.paths.unique_output_names`): the file
    name, plus a short content hash when two different papers share it (``a/x.md``, ``b/x.md``); a paper given
    twice keeps one id.

    Returns:
        ``(ids, messages)``: one id per path, and one line per renamed or repeated paper.
    """
    from surveyalign.paths import unique_output_names

    names = unique_output_names([p.name for p in paths], texts, fallback="paper")
    return names.names, names.messages([str(p) for p in paths])


def _inputs(paths: list[Path]) -> list[dict[str, Any]]:
    return [{"path": str(p), "sha256": hashlib.sha256(p.read_bytes()).hexdigest()} for p in paths if p.is_file()]


def _finish(args: argparse.Namespace, out_dir: Path, result: dict[str, Any], paths: list[Path], readable: int,
            total: int, cache=None, docs: dict[Any, Any] | None = None) -> int:
    from surveyalign import __version__
    from surveyalign.autoraters.report import markdown_report, reading_summary
    from surveyalign.documents.hidden import document_hidden

    # per paper read: hidden text its reader listed and answer-format tokens neutralised before the judge read it
    result["hidden_text"] = {str(getattr(doc, "source", None) or name): document_hidden(doc.text, doc.hidden)
                             for name, doc in (docs or {}).items()}
    result["read"] = reading_summary(result)  # how much of the paper texts the judge read
    result["run"] = {"command": ["surveyalign", *sys.argv[1:]] if sys.argv[1:2] == ["autorate"] else None,
                     "surveyalign_version": __version__, "inputs": _inputs(paths), "n_readable_answers": readable,
                     "n_answers": total, "answers": dict(cache.counts) if cache is not None else None}
    (out_dir / "result.json").write_text(json.dumps(result, indent=2, ensure_ascii=False, default=str) + "\n")
    text = markdown_report(result)
    (out_dir / "result.md").write_text(text)
    print(text, end="")
    print(f"wrote {out_dir / 'result.json'} and {out_dir / 'result.md'}")
    if cache is not None:
        print(cache.summary())
    if total and not readable:
        print(f"surveyalign autorate: none of the {total} judge answers could be read (see the problems above)",
              file=sys.stderr)
        return 3
    return 0


def _out_dir(args: argparse.Namespace, command: str, paths: list[Path]) -> Path:
    """The run folder: ``--output-dir``, else ``runs/autorate/COMMAND/<inputs>`` named after the inputs.

    The default name is the input file stems joined by ``+`` (safe, bounded) and ``-`` plus 8 hex digits of the
    inputs' content hashes, in order: the same inputs find their folder (and call cache) again, other inputs (another
    paper, the same name with other content) get their own, so no run replaces another's ``result.json``.

    Raises:
        ValueError: the folder holds the ``result.json`` of other inputs (other files and other contents); nothing
            is written.
    """
    from surveyalign.paths import safe_output_name

    inputs = _inputs(paths)
    if args.output_dir:
        out = args.output_dir
    else:
        stems = "+".join(dict.fromkeys(safe_output_name(Path(p).stem, fallback="paper") for p in paths))
        digest = hashlib.sha256("\n".join(i["sha256"] for i in inputs).encode()).hexdigest()[:8]
        out = Path("runs") / "autorate" / command / f"{safe_output_name(stems, max_bytes=80)}-{digest}"
    _check_owner(out, inputs)
    out.mkdir(parents=True, exist_ok=True)
    return out


def _check_owner(out: Path, inputs: list[dict[str, Any]]) -> None:
    """Refuse a folder whose ``result.json`` was written for other inputs (neither the same files nor contents)."""
    try:
        earlier = ((json.loads((out / "result.json").read_text(encoding="utf-8")).get("run") or {}).get("inputs"))
    except (OSError, ValueError, AttributeError):
        return
    if not earlier or not isinstance(earlier, list):
        return
    same_files = [e.get("path") for e in earlier] == [i["path"] for i in inputs]
    same_texts = [e.get("sha256") for e in earlier] == [i["sha256"] for i in inputs]
    if not (same_files or same_texts):
        raise ValueError(f"{out / 'result.json'} holds the result of other inputs "
                         f"({', '.join(str(e.get('path')) for e in earlier)}); pass another --output-dir (or leave it "
                         "out: each set of inputs gets its own folder under runs/autorate/COMMAND/)")


def _sxs(args: argparse.Namespace) -> int:
    from surveyalign.autoraters.raters import PaperText, rate_sxs

    pairs = [tuple(p) for p in args.pair]
    if (args.paper_a is None) != (args.paper_b is None):
        raise ValueError("give both PAPER_A and PAPER_B (or use --pair A B)")
    if args.paper_a is not None:
        pairs.insert(0, (args.paper_a, args.paper_b))
    if not pairs:
        raise ValueError("nothing to compare: give PAPER_A PAPER_B or --pair A B")
    out_dir = _out_dir(args, f"sxs-{args.kind}", list(dict.fromkeys(path for pair in pairs for path in pair)))
    docs = {path: _read(path) for pair in pairs for path in pair}
    ids, messages = _paper_ids(list(docs), [d.text for d in docs.values()])
    for line in messages:
        print(line, file=sys.stderr)
    ident = dict(zip(docs, ids, strict=True))
    judge = _judge(args, out_dir)
    try:
        result = rate_sxs([(PaperText(ident[a], docs[a].text), PaperText(ident[b], docs[b].text)) for a, b in pairs],
                          judge, kind=args.kind, rule=args.rule)
    finally:
        judge.backend.close()
    n_calls = 2 * result["n_pairs"]
    return _finish(args, out_dir, result, list(docs), n_calls - result["n_unreadable_calls"], n_calls,
                   judge.cache, docs)


def _litreview(args: argparse.Namespace) -> int:
    from surveyalign.autoraters.raters import PaperText, rate_litreview
    from surveyalign.autoraters.rubric import (
        DEFAULT_AVERAGE_CITATIONS,
        VENUE_AVERAGE_CITATIONS,
    )

    if args.venue and args.avg_citations is not None:
        raise ValueError("give --venue or --avg-citations, not both")
    avg = VENUE_AVERAGE_CITATIONS[args.venue] if args.venue else (args.avg_citations or DEFAULT_AVERAGE_CITATIONS)
    out_dir = _out_dir(args, "litreview", list(args.papers))
    read = {path: _read(path) for path in args.papers}
    texts = [read[path].text for path in args.papers]
    ids, messages = _paper_ids(list(args.papers), texts)
    for line in messages:
        print(line, file=sys.stderr)
    seen: set[str] = set()  # a paper given twice is rated once
    papers = [PaperText(i, t) for i, t in zip(ids, texts, strict=True) if not (i in seen or seen.add(i))]
    judge = _judge(args, out_dir)
    try:
        result = rate_litreview(papers, judge, avg, venue=args.venue)
    finally:
        judge.backend.close()
    return _finish(args, out_dir, result, list(args.papers), result["n_valid"], result["n_papers"], judge.cache,
                   read)


def _resolve_ids(args: argparse.Namespace, out_dir: Path, refs: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    if args.ids is not None:
        try:
            given = json.loads(args.ids.read_text())
        except json.JSONDecodeError as err:
            raise ValueError(f"{args.ids}: not valid JSON ({err})") from err
        if not isinstance(given, dict) or not all(isinstance(given.get(s), dict) for s in refs):
            raise ValueError(f"{args.ids}: expected {{\"ground_truth\": {{number: id}}, \"generated\": {{...}}}}")
        for side, paper_refs in refs.items():  # an id for a number the paper lacks would be dropped unseen
            numbers = [number for number, _ in paper_refs.numbered]
            unknown = sorted((str(n) for n in given[side] if str(n) not in numbers), key=lambda n: (len(n), n))
            if unknown:
                raise ValueError(f"{args.ids}: {side} names reference number(s) {', '.join(unknown)} that the paper's "
                                 f"list does not have (it has {', '.join(numbers)})")
        return given, {"source": str(args.ids)}
    from surveyalign.knowledge import (
        S2_URL,
        SemanticScholarClient,
        resolution_counts,
        resolve_references,
    )

    client = SemanticScholarClient(base_url=args.s2_url or S2_URL, cache_dir=args.s2_cache or out_dir / "s2-cache",
                                   requests_per_second=args.s2_rate)
    ids, report = {}, {"source": "semanticscholar", "base_url": args.s2_url or S2_URL}
    for side, paper_refs in refs.items():
        errors: list[str] = []
        resolutions, _ = resolve_references(client, [r for _, r in paper_refs.numbered], errors=errors)
        ids[side] = {number: res.paper_id for (number, _), res in zip(paper_refs.numbered, resolutions, strict=True)}
        report[side] = {**resolution_counts(resolutions), "api_errors": errors, "unresolved_references": [
            {"number": number, "reason": res.reason} for (number, _), res in
            zip(paper_refs.numbered, resolutions, strict=True) if not res.resolved]}
    return ids, report


def _citation_f1(args: argparse.Namespace) -> int:
    from surveyalign.autoraters.raters import PaperText, rate_citation_f1
    from surveyalign.autoraters.references import paper_references
    from surveyalign.autoraters.report import citation_f1_missing

    out_dir = _out_dir(args, "citation-f1", [args.ground_truth, args.generated])
    docs = {"ground_truth": _read(args.ground_truth), "generated": _read(args.generated)}
    refs = {side: paper_references(doc) for side, doc in docs.items()}
    for side, paper_refs in refs.items():
        if not paper_refs.numbered:
            raise ValueError(f"{docs[side].source}: no numbered reference list found ({'; '.join(paper_refs.problems)})")
    ids, resolution = _resolve_ids(args, out_dir, refs)
    judge = _judge(args, out_dir)
    try:
        result = rate_citation_f1(
            PaperText(args.ground_truth.name, docs["ground_truth"].text), refs["ground_truth"].as_prompt_list(),
            PaperText(args.generated.name, docs["generated"].text), refs["generated"].as_prompt_list(), judge, ids,
            variant=args.variant)
    finally:
        judge.backend.close()
    result["references"] = {side: r.counts() for side, r in refs.items()}
    result["resolution"] = resolution
    n_calls = len(result["partitions"])
    readable = sum(p["error"] is None for p in result["partitions"].values())
    code = _finish(args, out_dir, result, [args.ground_truth, args.generated], readable, n_calls,
                   judge.cache, docs)
    missing = citation_f1_missing(result)
    if code == 0 and missing:
        print(f"surveyalign autorate: {missing} (see the resolution lines above)", file=sys.stderr)
        return 3
    return code

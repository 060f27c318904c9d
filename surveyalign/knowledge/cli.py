"""``surveyalign ka``: build knowledge augmentation for a dataset folder, and show one record (SurveyReview §5.2)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from surveyalign.argtypes import (
    dimension_value,
    int_at_least,
    non_negative_float,
    positive_int,
)

__all__ = ["register"]


def _load_graph(spec: str, dataset: Path):
    from surveyalign.knowledge.graph import CitationGraph
    from surveyalign.knowledge.sample import sample_graph

    if spec == "sample":
        return sample_graph(dataset)
    path = Path(spec)
    if not path.is_file():
        raise FileNotFoundError(f"graph file not found: {path}")
    return CitationGraph.load(path)


def _cmd_build(args: argparse.Namespace) -> int:
    from surveyalign.knowledge.build import build_ka_dataset
    from surveyalign.knowledge.config import KAConfig

    overrides = {"dimensions": args.dimensions, "tokenizer": args.tokenizer}
    config = KAConfig.from_yaml(args.config, overrides)
    dataset = Path(args.dataset)
    graph = _load_graph(args.graph, dataset)
    stats = graph.stats
    print(f"graph: {stats.n_papers} papers, {stats.n_edges} citation edges; kept and counted: {stats.n_untitled} "
          f"untitled, {stats.n_empty_reference_ids} empty reference ids, {stats.n_dangling_ids} ids outside the "
          f"graph, {stats.n_incomplete} incomplete reference lists, {stats.n_missing_records} records without id")
    years = None
    if args.survey_years:
        years = {str(k): int(v) for k, v in json.loads(Path(args.survey_years).read_text()).items()}
    report = build_ka_dataset(dataset, graph, args.out, config, progress=not args.no_progress, survey_years=years)
    summary = json.loads((Path(args.out) / "ka" / "ka_report.json").read_text())
    print(f"KA records: {report.n_records} ({report.n_made} made now), {report.n_empty} empty; "
          f"units with knowledge: {report.n_units_with_knowledge}")
    print(f"excluded from R+: {summary['excluded']}")
    if summary.get("answers"):
        from surveyalign.calls import CallCache

        print(f"Crit-KA summaries {CallCache.counts_line(summary['answers'])}")
    print(f"papers without an abstract (kept, shown as '(no abstract)'): {summary['n_graph_papers_without_abstract']} "
          f"in the graph, {summary['n_crit_papers_without_abstract']} in Crit-KA blocks")
    if summary.get("n_reference_shortfall"):
        print(f"surveys whose reference list is shorter than the highest [n] their text cites (entries merged or lost; "
              f"see reference_shortfall in the records): {summary['n_reference_shortfall']}")
    for reason, n in summary["empty_reasons"].items():
        print(f"  empty ({n}): {reason}")
    print(f"dataset with a `knowledge` column: {report.out_dir}; records: {report.out_dir / 'ka' / 'records.jsonl'}")
    if report.n_records and report.n_empty == report.n_records:
        print(f"surveyalign ka build: all {report.n_records} KA records are empty (no usable knowledge; exit 3)",
              file=sys.stderr)
        return 3
    return 0


def _cmd_graph(args: argparse.Namespace) -> int:
    from surveyalign.knowledge.build import dataset_rows, dataset_surveys
    from surveyalign.knowledge.clients import (
        OPENALEX_URL,
        S2_URL,
        OpenAlexClient,
        SemanticScholarClient,
    )
    from surveyalign.knowledge.config import KA_DIMENSIONS
    from surveyalign.knowledge.fetch import fetch_graph

    surveys_by_dim, _ = dataset_surveys(dataset_rows(Path(args.dataset)), list(KA_DIMENSIONS))
    surveys = {pid: s for by_pid in surveys_by_dim.values() for pid, s in by_pid.items()}
    chosen = [surveys[pid] for pid in sorted(surveys)][: args.limit]
    options = {"cache_dir": args.cache_dir}
    if args.requests_per_second is not None:
        options["requests_per_second"] = args.requests_per_second
    if args.api == "semanticscholar":
        client = SemanticScholarClient(args.base_url or S2_URL, **options)
    else:
        client = OpenAlexClient(args.base_url or OPENALEX_URL, **options)
    report = fetch_graph(chosen, client, args.out, search_limit=args.search_limit, max_citations=args.max_citations,
                         progress=not args.no_progress)
    print(f"surveys fetched now: {report.n_surveys}; references {report.n_references}, resolved {report.n_resolved}; "
          f"{report.n_records} records appended to {report.out}; failed calls {report.n_errors}; "
          f"records without an abstract {report.n_without_abstract}; ids missing from batch answers "
          f"{report.n_batch_missing}")
    for reason, n in report.unresolved_reasons.items():
        print(f"  unresolved ({n}): {reason}")
    for line in report.errors[:10]:
        print(f"  error: {line}")
    if report.n_retry:
        print(f"{report.n_retry} survey(s) had failed calls: not marked done, a re-run asks for them again")
    return 3 if report.n_errors and not report.n_records else 0


def _cmd_show(args: argparse.Namespace) -> int:
    from surveyalign.knowledge.build import read_ka_records

    dimension = args.dimension  # parsed by the flag type (argtypes.dimension_value)
    records = [r for r in read_ka_records(args.dataset)
               if args.uid == r["paper_id"] or args.uid in r.get("unit_ids", [])
               or any(u.split("::")[0] == args.uid for u in r.get("unit_ids", []))]
    if dimension:
        records = [r for r in records if r["dimension"] == dimension]
    if not records:
        on = f" on {dimension}" if dimension else ""
        raise ValueError(f"no KA record for {args.uid!r}{on} in {args.dataset} (give a paper_id or a unit_id)")
    for record in records:
        if args.json:
            print(json.dumps(record, indent=2, ensure_ascii=False))
            continue
        print(f"== {record['paper_id']} / {record['dimension']}")
        print(f"|R| {record['n_references']} (from {record['reference_source']}), resolved {record['n_resolved']}, "
              f"|R+| {record['n_neighbourhood']} -> {record['n_candidates']} after exclusions {record['excluded']}, "
              f"kept {record['n_kept']}, tokens {record['tokens']}, calls {record['n_calls']}, "
              f"cache hits {record['cache_hits']}")
        if record.get("reason"):
            print(f"no knowledge: {record['reason']}")
        for item in record.get("unresolved", [])[: args.unresolved]:
            print(f"  unresolved [{item['key']}]: {item['reason']}")
        print(record["text"])
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``surveyalign ka build`` and ``surveyalign ka show``."""
    ka = subparsers.add_parser("ka", help="knowledge augmentation: Comp-KA / Crit-KA from a citation graph",
                               description=__doc__)
    sub = ka.add_subparsers(dest="ka_command", metavar="SUBCOMMAND")
    ka.set_defaults(handler=lambda args: (ka.print_help(), 2)[1])

    build = sub.add_parser(
        "build", help="add the `knowledge` column to a dataset folder",
        description="Resolve each survey's references against a citation graph, build Comp-KA "
        "(Comprehensiveness) and Crit-KA (Criticalness), and write the dataset with a `knowledge` column to "
        "--out (records in OUT/ka/records.jsonl, LLM calls cached in OUT/ka/calls.jsonl; re-runs resume).")
    build.add_argument("--dataset", required=True, metavar="DIR", help="folder written by `surveyalign data build`")
    build.add_argument("--graph", required=True, metavar="FILE",
                       help="citation graph: .jsonl / .parquet of paper records, a saved-session .json, or "
                       "'sample' (a made-up graph around the dataset's own references, for the demo)")
    build.add_argument("--out", required=True, metavar="DIR", help="output dataset folder (new)")
    build.add_argument("--config", default=None, metavar="YAML", help="KA config (alpha, beta, B, L, summariser...); "
                       "see configs/ka/")
    build.add_argument("--dimensions", nargs="+", default=None, metavar="DIM",
                       help="comprehensiveness and/or criticalness (default: the config's)")
    build.add_argument("--tokenizer", default=None, metavar="DIR", help="judge tokenizer (overrides the config)")
    build.add_argument("--survey-years", default=None, metavar="JSON",
                       help="JSON object paper_id -> survey year (the future cutoff; default: the survey's graph "
                       "node, else its newest reference)")
    build.add_argument("--no-progress", action="store_true", help="no progress bar")
    build.set_defaults(handler=_cmd_build)

    graph = sub.add_parser(
        "graph", help="fetch a citation graph for a dataset's surveys from Semantic Scholar or OpenAlex",
        description="Resolve every Comprehensiveness / Criticalness survey's references through the API (ids "
        "first, else a title search checked with the safe rule), fetch their references and citing papers and "
        "the papers citing the survey, and append the records to a JSONL graph for `ka build --graph`. Resumes "
        "(OUT.state.json); answers are cached on disk. Keys: S2_API_KEY / OPENALEX_API_KEY, OPENALEX_MAILTO.")
    graph.add_argument("--dataset", required=True, metavar="DIR", help="folder written by `surveyalign data build`")
    graph.add_argument("--api", choices=("semanticscholar", "openalex"), default="semanticscholar")
    graph.add_argument("--out", required=True, metavar="FILE", help="JSONL graph file (appended to)")
    graph.add_argument("--cache-dir", default=".cache/http", metavar="DIR", help="on-disk HTTP cache")
    graph.add_argument("--base-url", default=None, metavar="URL", help="API root (default: the public service)")
    graph.add_argument("--requests-per-second", type=non_negative_float, default=None, metavar="R",
                       help="network request rate (default: the client's polite rate)")
    graph.add_argument("--search-limit", type=positive_int, default=5, metavar="N", help="search hits checked per reference")
    graph.add_argument("--max-citations", type=int_at_least(0), default=200, metavar="N",
                       help="most citing papers fetched per paper")
    graph.add_argument("--limit", type=positive_int, default=None, metavar="N", help="only the first N surveys (by paper_id)")
    graph.add_argument("--no-progress", action="store_true", help="no progress bar")
    graph.set_defaults(handler=_cmd_graph)

    show = sub.add_parser("show", help="print the KA record of one survey or unit",
                          description="Print the KA record(s) of a paper_id or unit_id from a `ka build` output.")
    show.add_argument("uid", help="a paper_id (sr0001), review_id (sr0001-r2) or unit_id (sr0001-r2::comprehensiveness)")
    show.add_argument("--dataset", required=True, metavar="DIR", help="the --out folder of `surveyalign ka build`")
    show.add_argument("--dimension", type=dimension_value, default=None, help="only this dimension")
    show.add_argument("--unresolved", type=int_at_least(0), default=10, metavar="N", help="list at most N unresolved references")
    show.add_argument("--json", action="store_true", help="print the whole record as JSON")
    show.set_defaults(handler=_cmd_show)

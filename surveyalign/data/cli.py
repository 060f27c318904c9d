"""`surveyalign data build|fetch-texts|stats|push`: build, fill, inspect and publish the SurveyReview dataset."""

from __future__ import annotations

import argparse
import json
import sys

from surveyalign.argtypes import (
    int_at_least,
    non_negative_float,
    number_between,
    positive_int,
)
from surveyalign.documents import NEAR_VERBATIM_THRESHOLD

from .layout import RECORD_SETS
from .split import SPLIT_POLICIES


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``surveyalign data`` and its subcommands to the top-level parser."""
    data = subparsers.add_parser(
        "data",
        help="build, inspect and publish the SurveyReview dataset",
        description="Build the script-free SurveyReview dataset folder from release files, print its "
        "statistics, or push it to the Hugging Face Hub.",
    )
    sub = data.add_subparsers(dest="data_command", metavar="ACTION")
    data.set_defaults(handler=lambda args: (data.print_help(), 2)[1])

    build = sub.add_parser(
        "build",
        help="build the dataset folder from release files",
        description="Read a SurveyReview release (per-dimension annotations/<dimension>.json, or "
        "testset/<dimension>.json for test labels only, + articles JSON, and/or raw sample files with 'result' "
        "lists), drop score 0/-3 units (counted), keep the split the "
        "release names in its file names or else split papers 75/25 by source (validation = 10 percent of train "
        "papers), strip published peer-review records from the texts, "
        "and write OUT/README.md (configs per dimension + 'all'), OUT/data/<dimension>/<split>.parquet and "
        "OUT/build_report.json. Load with datasets.load_dataset(OUT, 'readability'); name the folder "
        "'surveyreview' and load_dataset('surveyreview', 'readability') works from its parent folder.",
    )
    build.add_argument("--official", required=True, metavar="DIR", help="release folder (or one raw JSON file)")
    build.add_argument("--out", required=True, metavar="DIR", help="output dataset folder (replaced if present)")
    build.add_argument("--sources", metavar="FILE", help="JSON {uid or paper key: source} mapping "
                       "(default: sources.json in the release folder, if any)")
    build.add_argument("--seed", type=int_at_least(0), default=42, help="split seed (default 42)")
    build.add_argument("--no-leakage-guard", action="store_true",
                       help="keep peer-review status lines and referee reports in the texts (recorded in the "
                       "report and the card)")
    build.add_argument("--fail-on-leak", action="store_true",
                       help="stop with an error (nothing written) when any gold rationale snippet is still verbatim "
                       "or near-verbatim in an input text after the leakage guard")
    build.add_argument("--near-verbatim-threshold", type=number_between(0, 100), default=NEAR_VERBATIM_THRESHOLD,
                       metavar="SCORE",
                       help="rapidfuzz partial-ratio score (0-100) from which a snippet counts as near-verbatim "
                       "in its own text (default %(default)g)")
    build.add_argument("--drop-missing-text", action="store_true",
                       help="leave units whose survey text is missing out of the data files (still reported); "
                       "default keeps them with text ''")
    build.add_argument("--split-policy", choices=SPLIT_POLICIES, default="auto",
                       help="as-released: keep the split the release names in its file names (train files -> train, "
                       "validation carved from train by paper; test files -> test); paper-level: split the papers "
                       "75/25 by source; auto (default): as-released when the release names its splits")
    build.add_argument("--records", choices=RECORD_SETS, default=None,
                       help="which annotation set of the review-sample files to read when the release has both "
                       "raw/ and grouped files (default: grouped, as the authors' training script); never mixed")
    build.add_argument("--test-fraction", type=number_between(0, 1), default=0.25,
                       help="paper-level policy: share of papers in test, 0-1 (default 0.25; 1.0 = all in test)")
    build.add_argument("--validation-fraction", type=number_between(0, 1), default=0.10,
                       help="share of training papers in validation (default 0.10)")
    build.set_defaults(handler=_build)

    _register_fetch(sub)

    stats = sub.add_parser(
        "stats",
        help="per-dimension statistics of a built folder (Table 6 shape)",
        description="Print, per dimension, the unit count, score distribution, mean, std (population) and "
        "average number of rationale snippets, the counts per split and per source.",
    )
    stats.add_argument("dir", metavar="DIR", help="dataset folder written by `surveyalign data build`")
    stats.add_argument("--json", action="store_true", help="print JSON instead of tables")
    stats.set_defaults(handler=_stats)

    push = sub.add_parser(
        "push",
        help="upload a built folder to the Hugging Face Hub",
        description="Create the dataset repo (if needed) and upload the folder with huggingface_hub.",
    )
    push.add_argument("dir", metavar="DIR", help="dataset folder written by `surveyalign data build`")
    push.add_argument("--repo-id", required=True, metavar="ORG/NAME", help="dataset repo, e.g. ORG/surveyreview")
    push.add_argument("--private", action="store_true", help="create the repo as private")
    push.add_argument("--token-env", default="HF_TOKEN", metavar="VAR",
                      help="environment variable holding the token (default HF_TOKEN)")
    push.add_argument("--dry-run", action="store_true", help="validate and list the files; upload nothing")
    push.set_defaults(handler=_push)


def _register_fetch(sub: argparse._SubParsersAction) -> None:
    from .fetch.urls import EUROPEPMC_URL, OPENREVIEW_URL, OPENREVIEW_V1_URL

    fetch = sub.add_parser(
        "fetch-texts",
        help="fetch, convert and guard the survey texts of a release (JATS / PDF)",
        description="Resolve every paper of a release (F1000Research and PeerJ/MOPRD through Europe PMC, "
        "OpenReview submissions through OpenReview) with the safe matching rule, fetch its JATS XML or PDF, "
        "convert it to markdown without referee reports, apply the leakage guard and the verbatim check, and "
        "write OUT/articles/articles_part_fetched_NNN.json plus OUT/fetch_report.json. Papers whose text the "
        "release already holds are skipped; a re-run fetches only what is still missing. Pass the release folder "
        "as OUT so `surveyalign data build --official` reads the texts with the reviews.",
    )
    fetch.add_argument("--official", required=True, metavar="DIR", help="release folder (e.g. data/v1.0-paper)")
    fetch.add_argument("--out", required=True, metavar="DIR", help="output folder (may be the release folder)")
    fetch.add_argument("--sources", metavar="FILE", help="JSON {uid: source} mapping (as for data build)")
    fetch.add_argument("--cache-dir", metavar="DIR", help="HTTP cache and PDFs (default OUT/.fetch_cache)")
    fetch.add_argument("--europepmc-url", default=EUROPEPMC_URL, metavar="URL", help="Europe PMC REST root")
    fetch.add_argument("--openreview-url", action="append", metavar="URL",
                       help=f"OpenReview API root, repeatable, searched in order (default {OPENREVIEW_URL} then "
                       f"{OPENREVIEW_V1_URL}, which still serves older venues)")
    fetch.add_argument("--requests-per-second", type=non_negative_float, default=2.0, metavar="R",
                       help="network requests per second per service (default 2; 0 = unlimited)")
    fetch.add_argument("--max-attempts", type=positive_int, default=6, metavar="N",
                       help="tries per request on 429/5xx/transport errors (default 6)")
    fetch.add_argument("--contact", metavar="EMAIL", help="contact address sent in the User-Agent (polite use)")
    fetch.add_argument("--pdf-extractor", default="pypdf", metavar="NAME",
                       help="PDF extractor for OpenReview PDFs: pypdf (default), pymupdf4llm or marker")
    fetch.add_argument("--shard-size", type=positive_int, default=100, metavar="N", help="uids per articles shard")
    fetch.add_argument("--no-progress", action="store_true", help="no progress bar")
    fetch.set_defaults(handler=_fetch)


def _fetch(args: argparse.Namespace) -> int:
    from surveyalign import __version__

    from .fetch import OPENREVIEW_URL, OPENREVIEW_V1_URL, fetch_texts
    from .schema import ReleaseFormatError

    agent = f"surveyalign/{__version__}" + (f" (mailto:{args.contact})" if args.contact else "")
    try:
        result = fetch_texts(
            args.official, args.out, sources=args.sources, europepmc_url=args.europepmc_url,
            openreview_urls=args.openreview_url or (OPENREVIEW_URL, OPENREVIEW_V1_URL), cache_dir=args.cache_dir,
            requests_per_second=args.requests_per_second, max_attempts=args.max_attempts,
            http_options={"headers": {"User-Agent": agent}}, pdf_extractor=args.pdf_extractor,
            shard_size=args.shard_size, progress=not args.no_progress,
        )
    except (ReleaseFormatError, FileNotFoundError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    rep = result.report
    for source, c in rep["per_source"].items():
        print(f"{source}: {c['papers']} papers, {c['present']} present, {c['resolved']} resolved, "
              f"{c['fetched']} fetched, {c['converted']} converted, {c['failed']} failed, "
              f"{c['unresolved']} unresolved")
    for failure in rep["failures"][:_SHOWN_IDS]:
        print(f"  {failure['stage']} {failure['key']} ({', '.join(failure['uids'])}): {failure['reason']}")
    if rep["n_failures"] > _SHOWN_IDS:
        print(f"  ... {rep['n_failures'] - _SHOWN_IDS} more, see {args.out}/fetch_report.json")
    written = sum(c["uids_written"] for c in rep["per_source"].values())
    verbatim = rep["verbatim"]
    print(f"wrote {written} texts to {len(result.shards)} shard(s) in {result.out / 'articles'}; gold snippets "
          f"verbatim in fetched texts: {verbatim['snippets_found']} (in {verbatim['papers_with_snippets']} papers)")
    if rep["carried_over"]["uids"]:
        print(f"kept {rep['carried_over']['uids']} texts an earlier run wrote into {result.out / 'articles'} for "
              "uids this release does not hold (fetch_report.json carried_over)")
    print(f"report: {result.out / 'fetch_report.json'}")
    wanted = sum(c["papers"] - c["present"] for c in rep["per_source"].values())
    if wanted and not sum(c["converted"] for c in rep["per_source"].values()):
        print(f"surveyalign data fetch-texts: none of the {wanted} papers to fetch was converted (exit 3; reasons "
              "above and in fetch_report.json)", file=sys.stderr)
        return 3
    return 0


def _build(args: argparse.Namespace) -> int:
    from .build import build_dataset
    from .schema import ReleaseFormatError

    try:
        result = build_dataset(
            args.official,
            args.out,
            sources=args.sources,
            seed=args.seed,
            leakage_guard=not args.no_leakage_guard,
            fail_on_leak=args.fail_on_leak,
            near_verbatim_threshold=args.near_verbatim_threshold,
            drop_missing_text=args.drop_missing_text,
            test_fraction=args.test_fraction,
            validation_fraction=args.validation_fraction,
            split_policy=args.split_policy,
            records=args.records,
        )
    except (ReleaseFormatError, FileNotFoundError, FileExistsError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    rep = result.report
    units = rep["units"]
    leak = rep["leakage_guard"]
    sizes = ", ".join(f"{name} {c['units']}" for name, c in rep["counts"].items())
    print(f"wrote {result.path}: {rep['papers']} papers, {rep['reviews']} reviews, {units['kept']} units ({sizes})")
    print(f"excluded: score 0 {sum(units['excluded_score_0'].values())}, "
          f"score -3 {sum(units['excluded_score_minus3'].values())}; missing texts: "
          f"{rep['missing_text']['articles']} ({rep['missing_text']['units']} units)")
    missing = rep["missing_text"]
    if missing["articles"]:
        print(f"  articles without text: {first_ids(missing['article_ids'], missing['articles'])}")
    if missing["units"]:
        print(f"  units without text: {first_ids(missing['unit_ids'], missing['units'])}")
    print(f"leakage guard {'on' if leak['enabled'] else 'OFF'}: {leak['texts_cleaned']} texts cleaned "
          f"({leak['top_boxes_removed']} top boxes, {sum(leak['records_removed'].values())} appended review records, "
          f"{leak['running_headers_removed']} running headers); gold snippets still in the inputs: "
          f"{leak['snippets_verbatim_in_inputs']} verbatim, {leak['snippets_near_verbatim_in_inputs']} near-verbatim "
          f"(before guard: {leak['snippets_verbatim_before_guard']} / {leak['snippets_near_verbatim_before_guard']})")
    split, records = rep["split"], rep["records"]
    print(f"split policy {split['policy']} ({split['reason']})"
          + (f"; review samples: {records['set']} ({records['reason']})" if records["set"] else ""))
    for warning in rep["warnings"]:
        print(f"warning: {warning}")
    print(f"build took {rep['build_seconds']:.2f} s; report: {result.path / 'build_report.json'}")
    return 0


#: Ids printed per list by `data build` before pointing at build_report.json.
_SHOWN_IDS = 5


def first_ids(ids: list[str], total: int) -> str:
    """The first :data:`_SHOWN_IDS` of ``ids`` comma-joined, plus "... N more, see build_report.json".

    ``total`` is the full count (the report lists at most 200 ids, so ``len(ids)`` may be smaller).
    """
    shown = ", ".join(ids[:_SHOWN_IDS])
    rest = total - min(len(ids), _SHOWN_IDS)
    return shown + (f" ... {rest} more, see build_report.json" if rest > 0 else "")


def _stats(args: argparse.Namespace) -> int:
    from .stats import dataset_stats, render_stats

    try:
        stats = dataset_stats(args.dir)
    except FileNotFoundError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(stats, indent=2))
    else:
        from surveyalign.console import make_console

        make_console().print(render_stats(stats))  # tables keep their width when piped
    return 0


def _push(args: argparse.Namespace) -> int:
    from .hub import push_dataset

    try:
        result = push_dataset(
            args.dir, args.repo_id, private=args.private, token_env=args.token_env, dry_run=args.dry_run
        )
    except (ValueError, FileNotFoundError, RuntimeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.dry_run:
        print(f"dry run: would upload {len(result['files'])} files to datasets/{args.repo_id}:")
        for f in result["files"]:
            print(f"  {f}")
    else:
        print(f"uploaded {len(result['files'])} files to datasets/{args.repo_id}: {result['commit_url']}")
    return 0

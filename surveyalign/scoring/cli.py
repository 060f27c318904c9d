"""`surveyalign` subcommands owned by `surveyalign.scoring`: ``report`` and ``metrics register``."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from surveyalign.argtypes import int_at_least, positive_int


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``report`` and ``metrics`` to the top-level parser."""
    p = subparsers.add_parser(
        "report",
        help="print the leaderboard, agreement with 95%% CIs, per-source, baseline and failure tables of runs",
        description=(
            "Recompute every metric of one or more evaluation run folders from their predictions.jsonl "
            "(falling back to metrics.json) and print: the leaderboard (per-dimension MSE/MAE, AVG, RQS, "
            "Align, HAS, skill vs the majority-class judge, failures), chance-corrected agreement (macro "
            "MAE, quadratic weighted kappa, Krippendorff's alpha) with paper-level bootstrap 95% CIs, the "
            "per-source table (SurveyReview Table 7 shape), the training-label baselines and the failure "
            "counts. Training labels come from the dataset named in run_config.json, or --train-scores."
        ),
    )
    p.add_argument("run_dirs", nargs="+", metavar="RUN_DIR", help="evaluation run folder(s) (``surveyalign/evaluation/predictions.py``)")
    p.add_argument("--train-scores", metavar="FILE",
                   help="training labels for the baselines: JSON {dimension: [scores]} or a dataset folder "
                        "(default: the dataset of each run's run_config.json)")
    p.add_argument("--bootstrap", type=int_at_least(0), default=1000, metavar="N",
                   help="paper-level bootstrap resamples for the CIs (0: none; default 1000)")
    p.add_argument("--seed", type=int_at_least(0), default=0, help="bootstrap seed (default 0)")
    p.add_argument("--compare", action="store_true",
                   help="with exactly two RUN_DIRs: paired bootstrap test of A against B on shared units")
    p.add_argument("--ceiling", metavar="DATASET",
                   help="human ceiling from this dataset folder (built with `surveyalign data build --records raw`: "
                        "several reviews per paper and dimension); default: the runs' own units when a paper has "
                        "two or more reviews of a dimension. Prints the 'another reviewer' row and, with "
                        "--compare, whether each judge is below, within or beyond it on the same units")
    p.add_argument("--drift", action="store_true",
                   help="with exactly two RUN_DIRs of the same judge on the same units: the share of changed scores, "
                        "the MSE shift (B - A) with a paired paper-level CI, and whether the recorded judge identities "
                        "(model, served model / system_fingerprint, adapter fingerprints, prompt and package version) "
                        "differ: drift or a different judge")
    p.add_argument("--has-weights", "--ssr-weights", dest="has_weights", metavar="A1,A2,B1,B2",
                   help="HAS weights: Align = A1*A_MSE + A2*A_MAE, HAS = B1*Align + B2*RQS (each pair >= 0, summing to "
                        "1; 'SSR' in the authors' table is the same score). Default: the weights each run was "
                        "configured with (run_config.json `has`, else metrics.json `weights`), else the paper's "
                        "0.4,0.6,0.75,0.25")
    p.add_argument("--table8", nargs="?", const="", metavar="DIR",
                   help="also print SurveyReview Table 8 (App. I.3): each run's Align and RQS and HAS = (1-b)*Align + "
                        "b*RQS for the RQS weights of --table8-betas, from the finished runs (nothing is judged again); "
                        "with DIR, write DIR/table8.md and DIR/table8.json")
    p.add_argument("--table8-betas", default="0.25,0.40,0.60,0.75", metavar="B,...",
                   help="RQS weights of --table8, comma-separated, each in [0, 1] (default Table 8's 0.25,0.40,0.60,0.75)")
    p.add_argument("--authors", action="store_true",
                   help="also print the authors'-convention figures (unparseable = 0), for comparison only")
    p.add_argument("--json", metavar="FILE", help="also write {judge: summary} (and the comparison) as JSON")
    p.add_argument("--html", metavar="OUT.html",
                   help="also write one self-contained HTML page: leaderboard with CIs and baselines, confusion "
                        "matrices and score distributions per dimension (embedded PNGs), per-source table, failure "
                        "counts, the comparison (with --compare) and each run's provenance; opens without network")
    p.add_argument("--width", type=positive_int, default=None,
                   help="console width (default: the terminal's; 200 when the output is not a terminal)")
    p.set_defaults(handler=_report)

    m = subparsers.add_parser(
        "metrics",
        help="manage the evaluate metric modules (survey_alignment, rqs, has / ssr, prism, citation_f1)",
        description="Helpers for the `evaluate` modules in metrics/.",
    )
    msub = m.add_subparsers(dest="metrics_command", metavar="ACTION")
    r = msub.add_parser(
        "register",
        help="make evaluate.load('survey_alignment'|'rqs'|'has'|'ssr'|'prism'|'citation_f1') work offline by "
             "bare name",
        description=(
            "Copy the metric modules of metrics/ into evaluate's module cache "
            "($HF_MODULES_CACHE/evaluate_modules/metrics/evaluate-metric--<name>/<sha256>/<name>.py), the "
            "place evaluate's loader falls back to when the Hub is unreachable or HF_EVALUATE_OFFLINE=1. "
            "Afterwards evaluate.load('has') works offline in any process using the same HF_MODULES_CACHE. "
            "Without registering, load by path: evaluate.load('metrics/has') from the repository root. "
            "The modules ship with the package (surveyalign/resources/metrics: the repository's metrics/ "
            "folder, also in a wheel); --source DIR registers modules from another folder."
        ),
    )
    r.add_argument("--cache", metavar="DIR",
                   help="HF_MODULES_CACHE folder to write to (default: $HF_MODULES_CACHE or "
                        "~/.cache/huggingface/modules)")
    r.add_argument("--source", metavar="DIR", help="folder holding <name>/<name>.py (default: the modules shipped with the "
                        "package)")
    r.add_argument("--name", action="append", dest="names", metavar="NAME",
                   help="register only this module (repeatable; default: survey_alignment, rqs, has)")
    r.set_defaults(handler=_register)
    m.set_defaults(handler=lambda args: (m.print_help(), 2)[1] if args.metrics_command is None else 0)


def _register(args: argparse.Namespace) -> int:
    from surveyalign.scoring.registry import register_metrics

    try:
        done = register_metrics(args.cache, source=args.source, names=args.names)
    except FileNotFoundError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    for name, path in done.items():
        print(f"registered {name}: {path}")
    cache = Path(next(iter(done.values()))).parents[4] if done else None
    print(f"evaluate.load('<name>') now resolves offline with HF_MODULES_CACHE={cache}")
    return 0


def _judge_name(run_dir: Path, taken: set[str]) -> str:
    name = run_dir.name
    cfg = run_dir / "run_config.json"
    if cfg.is_file():
        try:
            data = json.loads(cfg.read_text(encoding="utf-8"))
            found = data.get("name") or (data.get("config") or {}).get("name")
            if isinstance(found, str) and found:
                name = found
        except (json.JSONDecodeError, AttributeError):
            pass
    base, i = name, 2
    while name in taken:
        name, i = f"{base} ({i})", i + 1
    return name


def _report(args: argparse.Namespace) -> int:
    from surveyalign.console import make_console
    from surveyalign.scoring.bootstrap import paired_bootstrap
    from surveyalign.scoring.judge_info import judge_of_run, render_reading
    from surveyalign.scoring.records import validate_records
    from surveyalign.scoring.report import (
        render_agreement,
        render_baselines,
        render_ceiling,
        render_ceiling_comparison,
        render_comparison,
        render_costs,
        render_failures,
        render_intervals,
        render_leaderboard,
        render_per_source,
        render_voting,
    )
    from surveyalign.scoring.rqs_judge import rqs_judge_of_run
    from surveyalign.scoring.run_folder import (
        find_train_scores,
        had_consistency_stage,
        load_train_scores_file,
        read_predictions,
    )
    from surveyalign.scoring.summary import summarize_predictions

    # a pipe gets 80 columns from rich by default, too narrow for the per-dimension tables
    console = make_console(args.width)

    def say(message: str) -> None:
        print(message, file=sys.stderr)

    if args.compare and len(args.run_dirs) != 2:
        say("error: --compare needs exactly two RUN_DIRs")
        return 2
    if args.drift:
        return _drift(args, console, say)
    from surveyalign.scoring.summary import reweigh_summary
    from surveyalign.scoring.weights import (
        DEFAULT_ALPHA,
        DEFAULT_BETA,
        parse_has_weights,
        recorded_weights,
    )

    forced = None
    try:
        forced = None if args.has_weights is None else parse_has_weights(args.has_weights)
    except ValueError as exc:
        say(f"error: --has-weights: {exc}" if "--has-weights" not in str(exc) else f"error: {exc}")
        return 2
    try:
        betas = [float(b) for b in args.table8_betas.split(",")]
    except ValueError:
        say(f"error: --table8-betas {args.table8_betas!r}: expected comma-separated numbers such as 0.25,0.40")
        return 2
    given = None
    if args.train_scores:
        try:
            given = load_train_scores_file(args.train_scores)
        except (OSError, ValueError) as exc:
            say(f"error: --train-scores: {exc}")
            return 2
    summaries: dict[str, dict] = {}
    records: dict[str, list[dict]] = {}
    run_dirs: dict[str, Path] = {}
    for raw in args.run_dirs:
        run = Path(raw)
        if not run.is_dir():
            say(f"error: {run} is not a folder")
            return 2
        name = _judge_name(run, set(summaries))
        run_dirs[name] = run
        try:
            recs = read_predictions(run)
        except FileNotFoundError:
            metrics = run / "metrics.json"
            if not metrics.is_file():
                say(f"error: {run} has neither predictions.jsonl nor metrics.json")
                return 2
            say(f"note: {run}: no predictions.jsonl, showing its metrics.json as written")
            summaries[name] = json.loads(metrics.read_text(encoding="utf-8"))
            if forced is not None:  # the weights change HAS only: recomputed from the written averages
                summaries[name] = reweigh_summary(summaries[name], *forced)
            continue
        except ValueError as exc:
            say(f"error: {exc}")
            return 2
        try:
            alpha, beta = forced or recorded_weights(_read_json(run / "run_config.json"),
                                                     _read_json(run / "metrics.json")) or (DEFAULT_ALPHA, DEFAULT_BETA)
        except ValueError as exc:
            say(f"error: {run}: recorded {exc}")
            return 2
        train, why = (given, f"training labels from {args.train_scores}") if given else find_train_scores(run)
        if train is None:
            say(f"note: {run}: {why}; baselines and skill need --train-scores FILE")
        try:
            recs = validate_records(recs)  # the row edge: every later use (report, comparison) trusts them
            summaries[name] = summarize_predictions(recs, train_scores=train, bootstrap=args.bootstrap,
                                                    seed=args.seed, consistency_available=had_consistency_stage(run),
                                                    alpha=alpha, beta=beta)
        except ValueError as exc:
            say(f"error: {run / 'predictions.jsonl'}: {exc}")
            return 2
        records[name] = recs
    ceiling, reviews = None, None
    try:
        ceiling, reviews, why = _ceiling(args, records)
    except (OSError, ValueError) as exc:
        say(f"error: --ceiling {args.ceiling}: {exc}")
        return 2
    if ceiling is None and why:
        say(f"note: no human ceiling: {why}")
    for name, run in run_dirs.items():  # the header: the judge that ran in each run
        rated_by = rqs_judge_of_run(run)  # the RQS judge, named on the leaderboard
        if rated_by and summaries[name].get("rqs") is not None:
            summaries[name]["rqs_judge"] = rated_by
        ran = judge_of_run(run) or summaries[name].get("judge")
        if ran:
            summaries[name]["judge"] = ran
            console.print(f"{name}: {ran['line']}", markup=False, soft_wrap=True)
    console.print(render_leaderboard(summaries, ceiling=ceiling))
    if ceiling is not None:
        console.print(render_ceiling(ceiling))
    console.print(render_intervals(summaries))
    console.print(render_agreement(summaries))
    console.print(render_per_source(summaries))
    console.print(render_baselines(summaries))
    console.print(render_failures(summaries))
    reading = render_reading(summaries)
    if reading is not None:
        console.print(reading)
    costs = render_costs({name: _run_cost(run_dirs.get(name)) for name in summaries})
    if costs is not None:
        console.print(costs)
    voting = render_voting(summaries)
    if voting is not None:
        console.print(voting)
    if args.authors:
        authors = {f"{k} [authors]": {**v["authors_convention"], "n": v.get("n", 0),
                                       "n_scored": v.get("n_scored", 0), "status_counts": v.get("status_counts")}
                   for k, v in summaries.items() if v.get("authors_convention")}
        table = render_leaderboard(authors)
        table.title = "Authors' convention (unparseable = 0, errors dropped): for comparison only"
        console.print(table)
    table8 = None
    if args.table8 is not None:
        from surveyalign.scoring.sensitivity import write_table8

        try:
            table8, text = write_table8(summaries, betas, args.table8 or None)
        except ValueError as exc:
            say(f"error: --table8: {exc}")
            return 2
        console.print("HAS under other RQS weights (SurveyReview Table 8, App. I.3)", markup=False)
        console.print(text, markup=False, soft_wrap=True)
        if args.table8:
            print(f"wrote {Path(args.table8) / 'table8.md'} and {Path(args.table8) / 'table8.json'}")
    comparison, ceiling_comparison = None, None
    if args.compare:
        (name_a, name_b) = list(summaries)
        if name_a not in records or name_b not in records:
            say("error: --compare needs predictions.jsonl in both runs")
            return 2
        try:
            comparison = paired_bootstrap(records[name_a], records[name_b],
                                          n_resamples=max(args.bootstrap, 1), seed=args.seed)
        except ValueError as exc:
            say(f"error: --compare: {exc}")
            return 2
        console.print(render_comparison(comparison, name_a, name_b))
        if reviews is not None:
            from surveyalign.scoring.ceiling import compare_to_ceiling

            ceiling_comparison = {}
            for name in (name_a, name_b):
                try:
                    ceiling_comparison[name] = compare_to_ceiling(records[name], reviews,
                                                                  n_resamples=max(args.bootstrap, 1), seed=args.seed)
                except ValueError as exc:
                    say(f"note: {name} against the ceiling: {exc}")
            if ceiling_comparison:
                console.print(render_ceiling_comparison(ceiling_comparison))
    if args.html:
        from surveyalign.scoring.html_report import write_html_report

        compared = tuple(summaries) if comparison else None
        path = write_html_report(args.html, summaries, records, run_dirs=run_dirs, comparison=comparison,
                                 compared=compared, ceiling=ceiling, ceiling_comparison=ceiling_comparison)
        print(f"wrote {path}")
    if args.json:
        payload = {"summaries": summaries, "comparison": comparison, "ceiling": ceiling,
                   "ceiling_comparison": ceiling_comparison, "table8": table8}
        Path(args.json).write_text(json.dumps(payload, indent=2, allow_nan=False), encoding="utf-8")
        print(f"wrote {args.json}")
    return 0


def _read_json(path: Path) -> dict | None:
    """A run folder's JSON record, ``None`` when absent or unreadable (the caller then falls back)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _run_cost(run: Path | None) -> dict | None:
    """The tokens and cost of a run folder (``metrics.json`` ``harness.cost``), ``None`` when it has none."""
    if run is None or not (run / "metrics.json").is_file():
        return None
    try:
        return (json.loads((run / "metrics.json").read_text(encoding="utf-8")).get("harness") or {}).get("cost")
    except (OSError, ValueError):
        return None


def _ceiling(args: argparse.Namespace, records: dict[str, list[dict]]) -> tuple[dict | None, list | None, str | None]:
    """The human ceiling for ``report``: ``(ceiling, reviews, why none)``.

    From ``--ceiling DATASET`` (every split of a built dataset folder, restricted to the runs' papers when they
    share some), else from the first run whose units hold two or more reviews of one paper and dimension.

    Raises:
        OSError, ValueError: the dataset folder cannot be read or its rows are malformed.
    """
    from surveyalign.scoring.ceiling import ceiling_reviews, human_ceiling

    if args.ceiling:
        from surveyalign.data import load_surveyreview

        folder = Path(args.ceiling)
        if not folder.is_dir():
            raise FileNotFoundError(f"no such dataset folder: {folder}")
        rows = []
        for split in load_surveyreview(str(folder)).values():
            rows += [{k: r[k] for k in ("unit_id", "paper_id", "review_id", "dimension", "score", "source")}
                     for r in split]
        reviews = ceiling_reviews(rows)
        papers = {str(r["paper_id"]) for recs in records.values() for r in recs}
        source = str(folder)
        if papers & {r["paper_id"] for r in reviews}:
            reviews = [r for r in reviews if r["paper_id"] in papers]
            source += " (the runs' papers)"
    else:
        reviews, source = None, None
        for name, recs in records.items():
            found = ceiling_reviews([r for r in recs if r.get("review_id") is not None], score_key="reference")
            if human_ceiling(found, n_resamples=0)["n"]:
                reviews, source = found, f"the units of run {name}"
                break
        if reviews is None:
            return None, None, ("no paper has two or more reviews of one dimension in the runs; pass --ceiling "
                                "DATASET (built with `surveyalign data build --records raw`)")
    ceiling = human_ceiling(reviews, n_resamples=args.bootstrap, seed=args.seed)
    if ceiling["status"] == "no data":
        return None, None, f"{source}: {ceiling['insufficient']}"
    ceiling["source"] = source
    return ceiling, reviews, None


def _identity(run: Path) -> dict | None:
    try:
        cfg = json.loads((run / "run_config.json").read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None
    return cfg.get("identity") if isinstance(cfg, dict) else None


def _drift(args: argparse.Namespace, console, say) -> int:
    """``report --drift RUN_A RUN_B``: :func:`surveyalign.scoring.drift_statistics` as a table (exit 2 on bad input)."""
    from rich.table import Table

    from surveyalign.scoring.drift import drift_statistics
    from surveyalign.scoring.report import read_predictions

    if len(args.run_dirs) != 2:
        say("error: --drift needs exactly two RUN_DIRs (the same judge, run twice on the same units)")
        return 2
    runs = [Path(r) for r in args.run_dirs]
    try:
        recs = [read_predictions(r) for r in runs]
        res = drift_statistics(recs[0], recs[1], identity_a=_identity(runs[0]), identity_b=_identity(runs[1]),
                               n_resamples=max(args.bootstrap, 1), seed=args.seed)
    except (OSError, ValueError) as exc:
        say(f"error: --drift: {exc}")
        return 2
    table = Table(title=f"Drift: A = {runs[0]}  vs  B = {runs[1]}")
    table.add_column("figure", style="bold")
    table.add_column("value", overflow="fold")

    def f(x, digits=3):
        return "–" if x is None else f"{x:.{digits}f}"

    ci = res["mse_shift_ci"]
    table.add_row("units in both runs / scored in both", f"{res['n_shared']} / {res['n_both_scored']}")
    table.add_row("changed scores", f"{res['n_changed']} ({f(res['share_changed'] and 100 * res['share_changed'], 1)}%)"
                  + (f": {', '.join(f'{k} x{v}' for k, v in res['changes'].items())}" if res["changes"] else ""))
    table.add_row("scored in one run only", str(res["n_status_changed"]))
    table.add_row("AVG MSE A -> B", f"{f(res['mse_a'])} -> {f(res['mse_b'])}")
    table.add_row("MSE shift (B - A), 95% CI, p", f"{f(res['mse_shift'])}  " + (
        res["insufficient"] if res["insufficient"] else f"[{ci[0]:.3f}, {ci[1]:.3f}]  p {f(res['p_value'])}"
        if ci else "–"))
    diffs = res["identity_differences"]
    table.add_row("identities differ", "not recorded" if res["identity_differs"] is None else (
        "yes: " + "; ".join(f"{d['field']}: {d['a']} -> {d['b']}" for d in diffs[:8])
        + (f" (+{len(diffs) - 8} more)" if len(diffs) > 8 else "") if diffs else "no"))
    table.add_row("verdict", res["verdict"])
    console.print(table)
    if args.json:
        Path(args.json).write_text(json.dumps({"drift": res}, indent=2), encoding="utf-8")
        print(f"wrote {args.json}")
    return 0

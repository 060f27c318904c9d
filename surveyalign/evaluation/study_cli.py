"""``surveyalign rqs-judges``, ``sweep``, ``jury`` and ``meta-eval``: studies over evaluation runs (SurveyReview
§6.3, App. I.2, I.4; ``surveyalign/evaluation/studies.py``, ``surveyalign/evaluation/sweep.py``)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from surveyalign.argtypes import int_at_least, positive_int


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``rqs-judges``, ``sweep``, ``jury`` and ``meta-eval`` to the top-level parser."""
    p = subparsers.add_parser(
        "rqs-judges",
        help="App. I.4: RQS and HAS of every system under each RQS judge, inter-judge alpha, Kendall tau of the "
             "rankings with CIs",
        description="Rate the scored rationales of every system (evaluation run folders) with several RQS judges "
                    "(YAML: systems, judges in the model-role shape, optional jury), cached in OUT/<judge>/calls.jsonl so a "
                    "re-run resumes; print RQS (Table 9 shape) and HAS (Table 10 shape) per system and judge, the "
                    "agreement between the judges (Krippendorff's alpha) and the stability of the ranking (Kendall "
                    "tau of each pair of judges, paper-level bootstrap 95% CI). Example: configs/studies/rqs-judges.yaml",
    )
    p.add_argument("--config", required=True, metavar="YAML")
    p.add_argument("--json", metavar="FILE", help="also write the result as JSON (always in OUT/rqs_judges.json)")
    p.add_argument("--no-progress", action="store_true")
    p.set_defaults(handler=_rqs_judges)

    w = subparsers.add_parser(
        "sweep",
        help="ablations (§6.3): run a base eval config and variants on the same units, one paired table",
        description="Run the base evaluation config and every variant of a sweep YAML (base, set, variants and/or "
                    "vary: the keys to change, e.g. knowledge on/off, K, temperature, max_length), each resumable in "
                    "its own run folder, then print each variant against the base on the units both scored: the "
                    "difference, its paper-level 95% CI and the paired p-value ('insufficient data' below ten "
                    "papers or without spread). Example: configs/studies/sweep-ka.yaml",
    )
    w.add_argument("--config", required=True, metavar="YAML")
    w.set_defaults(handler=_sweep)

    j = subparsers.add_parser(
        "jury",
        help="several scoring judges as one: combine their run folders by mean, median or majority (weights)",
        description="Combine the predictions of several `surveyalign evaluate` runs unit by unit (YAML: name, "
                    "method mean|median|majority, members with run folder and weight, min_votes) into a run folder "
                    "of the jury, with metrics.json; `surveyalign report` reads it like any run. Example: "
                    "configs/studies/jury.yaml",
    )
    j.add_argument("--config", required=True, metavar="YAML")
    j.set_defaults(handler=_jury)

    m = subparsers.add_parser(
        "meta-eval",
        help="App. I.2: export rationale pairs for people to rate; human-human and judge-vs-human agreement",
        description="Meta-evaluation of the RQS judge. `export` writes the (reference, predicted) rationale pairs "
                    "of a run as a CSV sheet (one row per pair, an empty rating column) and, with --label-studio, as a Label "
                    "Studio project; `score` reads the filled ratings (CSV long pair_id,rater,rating or one column per "
                    "rater; JSON; a Label Studio export) and prints human-human "
                    "agreement (mean pairwise Pearson, Krippendorff's alpha) and the judge against the mean human "
                    "rating (Pearson, Spearman, bootstrap 95% CIs).",
    )
    msub = m.add_subparsers(dest="meta_command", metavar="ACTION")
    e = msub.add_parser("export", help="write the pairs to rate as a CSV sheet")
    e.add_argument("run_dir", metavar="RUN_DIR")
    e.add_argument("--out", required=True, metavar="FILE.csv")
    e.add_argument("--n", type=positive_int, default=None, help="at most N pairs, spread over the dimensions")
    e.add_argument("--seed", type=int_at_least(0), default=0)
    e.add_argument("--label-studio", metavar="DIR",
                   help="also write a Label Studio project (labeling_config.xml + tasks.json) to DIR; its JSON export "
                        "is read by `meta-eval score --ratings`")
    e.set_defaults(handler=_meta_export)
    s = msub.add_parser("score", help="agreement of the human ratings and of the judge with them")
    s.add_argument("--ratings", required=True, metavar="FILE", help="human ratings (CSV or JSON)")
    s.add_argument("--run", metavar="RUN_DIR", help="the judge's ratings: `consistency` of the run's predictions")
    s.add_argument("--judge-ratings", metavar="FILE",
                   help="the judge's ratings as a ratings file with one rater (instead of --run)")
    s.add_argument("--bootstrap", type=int_at_least(0), default=1000)
    s.add_argument("--seed", type=int_at_least(0), default=0)
    s.add_argument("--json", metavar="FILE")
    s.set_defaults(handler=_meta_score)
    m.set_defaults(handler=lambda args: (m.print_help(), 2)[1] if args.meta_command is None else 0)


def _say(command: str, message: str) -> None:
    print(f"surveyalign {command}: {message}", file=sys.stderr)


def _f(x: Any, digits: int = 3) -> str:
    return "–" if x is None else f"{float(x):.{digits}f}"


def _rqs_judges(args: argparse.Namespace) -> int:
    from rich.table import Table

    from surveyalign.console import make_console
    from surveyalign.evaluation.studies import RQSJudgesConfig, run_rqs_judges

    try:
        config = RQSJudgesConfig.from_yaml(args.config)
    except (OSError, ValueError) as err:
        _say("rqs-judges", str(err))
        return 2
    try:
        res = run_rqs_judges(config, progress=not args.no_progress)
    except (OSError, ValueError) as err:
        _say("rqs-judges", str(err))
        return 2 if isinstance(err, OSError) else 3
    console = make_console()
    judges = list(res["rqs"][res["systems"][0]])
    for key, title in (("rqs", "RQS under each RQS judge (Table 9 shape)"),
                       ("has", "HAS recomputed with each RQS judge (Table 10 shape)")):
        table = Table(title=title)
        table.add_column("System", style="bold")
        for jname in judges:
            table.add_column(jname, justify="right")
        marks = res.get("scope_marks") or {}
        for s in res["systems"]:  # a system judged on fewer dimensions: its averages marked
            mark = f" {marks[s]}" if marks.get(s) else ""
            table.add_row(s, *[_f(res[key][s][jname], 2) + (mark if res[key][s][jname] is not None else "")
                               for jname in judges])
        if res.get("scope_notes"):
            table.caption = "; ".join(res["scope_notes"])
        console.print(table)
    tau = Table(title="Ranking stability: Kendall tau of the HAS rankings (paper-level bootstrap 95% CI)")
    for name in ("judge A", "judge B", "systems", "tau", "95% CI", "note"):
        tau.add_column(name, justify="left" if name in ("judge A", "judge B", "note") else "right")
    for k in res["kendall"]:
        ci = k["ci95"]
        tau.add_row(k["a"], k["b"], str(k["n_systems"]), _f(k["tau"]),
                    f"[{ci[0]:.3f}, {ci[1]:.3f}]" if ci else "–", k["note"] or "")
    tau.caption = (f"top system per judge: {', '.join(f'{j}: {s}' for j, s in res['top'].items())}; "
                   f"{'the same' if res['same_top'] else 'NOT the same'} under every judge; inter-judge "
                   f"Krippendorff alpha {_f(res['inter_judge_alpha'])} on {res['alpha_units']} units"
                   + (f" ({res['alpha_note']})" if res["alpha_note"] else ""))
    console.print(tau)
    for jname, per in res["counts"].items():
        for s, c in per.items():
            if c["failed"]:
                console.print(f"{jname} on {s}: {c['failed']} unit(s) without a rating (parse failure or API error; "
                              f"left out of RQS)")
    from surveyalign.calls import CallCache

    for jname, got in res["answers"].items():
        console.print(f"{jname}: {CallCache.counts_line(got)}", markup=False, highlight=False)
    print(f"wrote {Path(res['output_dir']) / 'rqs_judges.json'}")
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=2), encoding="utf-8")
    return 0


def _sweep(args: argparse.Namespace) -> int:
    from rich.table import Table

    from surveyalign.console import make_console
    from surveyalign.evaluation.sweep import SweepConfig, run_sweep

    try:
        config = SweepConfig.from_yaml(args.config)
    except (OSError, ValueError) as err:
        _say("sweep", str(err))
        return 2
    try:
        res = run_sweep(config)
    except (OSError, ValueError) as err:
        _say("sweep", str(err))
        return 2
    console = make_console()
    table = Table(title=f"Sweep {res['name']}: each variant against the base, paired on the units both scored")
    for name in ("variant", "changes", "scored/n", "metric", "base", "variant value", "variant - base", "95% CI", "p",
                 "better"):
        table.add_column(name, justify="left" if name in ("variant", "changes", "metric", "better") else "right")
    base = res["runs"]["base"]
    table.add_row("base", "–", f"{base['n_scored']}/{base['n']}", "avg_mse", _f(base["avg_mse"]), "", "", "", "", "",
                  end_section=True)
    for name, comp in res["comparisons"].items():
        run = res["runs"][name]
        changes = ", ".join(f"{k}={v}" for k, v in run["overrides"].items())
        if comp.get("error"):
            table.add_row(name, changes, f"{run['n_scored']}/{run['n']}", "–", "", "", "", comp["error"], "", "",
                          end_section=True)
            continue
        for i, (key, m) in enumerate(comp["metrics"].items()):
            ci = m.get("ci95")
            insufficient = m.get("insufficient")
            better = "insufficient data" if insufficient else {"a": "variant", "b": "base"}.get(m.get("better") or "",
                                                                                                "no difference at 95%")
            table.add_row(name if i == 0 else "", changes if i == 0 else "",
                          f"{run['n_scored']}/{run['n']}" if i == 0 else "", key, _f(m["b"]), _f(m["a"]),
                          _f(m["diff"]), "insufficient data" if insufficient else
                          (f"[{ci[0]:.3f}, {ci[1]:.3f}]" if ci else "–"), _f(m.get("p_value")), better,
                          end_section=i == len(comp["metrics"]) - 1)
    notes = sorted({m.get("insufficient") for c in res["comparisons"].values() for m in c.get("metrics", {}).values()}
                   - {None})
    table.caption = "; ".join([f"run folders under {res['output_dir']}", *notes])
    console.print(table)
    from surveyalign.calls import CallCache

    for name, run in res["runs"].items():
        if run.get("answers"):
            console.print(f"{name}: {CallCache.counts_line(run['answers'])}", markup=False, highlight=False)
    return 0 if any(r["n_scored"] for r in res["runs"].values()) else 3


def _jury(args: argparse.Namespace) -> int:
    from surveyalign.evaluation.studies import JuryConfig, run_jury

    try:
        config = JuryConfig.from_yaml(args.config)
        run_dir, metrics = run_jury(config)
    except (OSError, ValueError) as err:
        _say("jury", str(err))
        return 2
    print(f"jury {config.name} ({config.method} of {len(config.members)} judges): {metrics['n_scored']}/{metrics['n']} "
          f"units scored, AVG MSE {_f(metrics['avg_mse'])}, AVG MAE {_f(metrics['avg_mae'])}; run folder {run_dir} "
          f"(`surveyalign report {run_dir}`)")
    return 0 if metrics["n_scored"] else 3


def _meta_export(args: argparse.Namespace) -> int:
    from surveyalign.evaluation.studies import rating_sheet, write_rating_sheet
    from surveyalign.scoring import read_predictions

    try:
        rows = rating_sheet(read_predictions(Path(args.run_dir)), n=args.n, seed=args.seed)
    except (OSError, ValueError) as err:
        _say("meta-eval export", str(err))
        return 2
    if not rows:
        _say("meta-eval export", f"{args.run_dir}: no scored unit with a rationale to rate")
        return 3
    path = write_rating_sheet(rows, args.out)
    print(f"wrote {len(rows)} pairs to {path} (fill in `rating` 0.0-1.0, one copy per rater, or add one column per "
          f"rater)")
    if args.label_studio:
        from surveyalign.evaluation.studies import write_rating_project

        config, tasks = write_rating_project(rows, args.label_studio)
        print(f"wrote a Label Studio project: {config} and {tasks} (import both; read its JSON export back with "
              f"`surveyalign meta-eval score --ratings EXPORT.json`)")
    return 0


def _meta_score(args: argparse.Namespace) -> int:
    from surveyalign.scoring import meta_evaluate, read_predictions, read_ratings

    if bool(args.run) == bool(args.judge_ratings):
        _say("meta-eval score", "give exactly one of --run RUN_DIR or --judge-ratings FILE")
        return 2
    try:
        human = read_ratings(args.ratings)
        if args.run:
            judge = {str(r["unit_id"]): r.get("consistency") for r in read_predictions(Path(args.run))
                     if r.get("consistency") is not None}
        else:
            cells = read_ratings(args.judge_ratings)
            raters = {r for c in cells.values() for r in c}
            if len(raters) != 1:
                _say("meta-eval score", f"--judge-ratings {args.judge_ratings}: expected one rater, found "
                                        f"{sorted(raters)}")
                return 2
            judge = {p: next(iter(c.values())) for p, c in cells.items()}
        res = meta_evaluate(human, judge, n_resamples=args.bootstrap, seed=args.seed)
    except (OSError, ValueError) as err:
        _say("meta-eval score", str(err))
        return 2
    hh, j = res["human_human"], res["judge"]

    def ci(x: Any) -> str:
        return f" [{x[0]:.3f}, {x[1]:.3f}]" if x else ""

    print(f"{res['n_pairs']} pairs, {len(res['raters'])} raters ({', '.join(res['raters'])})")
    print(f"human-human: mean pairwise Pearson {_f(hh['mean_pearson'])}{ci(hh['mean_pearson_ci'])}, Krippendorff "
          f"alpha {_f(hh['krippendorff_alpha'])}" + (f" ({hh['ci_note']})" if hh["ci_note"] else ""))
    for rp in hh["rater_pairs"]:
        print(f"  {rp['a']} vs {rp['b']}: Pearson {_f(rp['pearson'])} on {rp['n']} pairs" +
              (f" ({rp['note']})" if rp["note"] else ""))
    print(f"judge vs mean human ({j['n']} pairs; {j['n_without_judge']} without a judge rating, "
          f"{j['n_without_human']} without a human rating): Pearson {_f(j['pearson'])}{ci(j['pearson_ci'])}, "
          f"Spearman {_f(j['spearman'])}{ci(j['spearman_ci'])}")
    for key, note in j["notes"].items():
        print(f"  {key}: {note}")
    paper = res["paper"]
    print(f"paper (App. I.2, {paper['pairs']} pairs, {paper['raters']} raters): human-human Pearson "
          f"{paper['human_human_pearson']}, judge Pearson {paper['judge_pearson']}, Spearman {paper['judge_spearman']}")
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=2), encoding="utf-8")
        print(f"wrote {args.json}")
    return 0 if j["n"] else 3

"""``surveyalign data identify|collect|annotate|agreement|release``: extend SurveyReview (§4.1-4.3, App. A).

Registered under the ``data`` command group by the top-level CLI; every handler imports its module on use, so
``surveyalign --help`` stays light. Bad input exits 2 with one line; a stage with no usable result exits 3.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from pathlib import Path
from typing import Any

from surveyalign.argtypes import int_at_least, number_between, positive_int
from surveyalign.csvcells import unescape_rows

_SOURCES = ("f1000", "moprd", "openreview", "unknown")


def _data_actions(subparsers: argparse._SubParsersAction) -> argparse._SubParsersAction:
    data = subparsers.choices["data"]
    return next(a for a in data._actions if isinstance(a, argparse._SubParsersAction))


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the construction subcommands to ``surveyalign data`` (registered after ``surveyalign.data.cli``)."""
    sub = _data_actions(subparsers)

    p = sub.add_parser("identify", help="find survey papers among candidates (keywords, LLM screen, manual file)",
                       description="Stage 1: title keyword match; stage 2: an LLM screen of title + abstract (yes/no "
                       "with a reason, cached in OUT/calls.jsonl); stage 3: OUT/verification.csv lists every "
                       "candidate with both verdicts for a person to fill 'confirmed' and 'substantive_reviews' "
                       "(yes/no). Also writes OUT/candidates.jsonl and OUT/identify_report.json (counts per stage "
                       "and source). The candidates may also be what `data fetch-texts` resolved (its output folder). "
                       "Example: surveyalign data identify --candidates candidates.csv --judge "
                       "configs/annotation/api.yaml --out identified/")
    p.add_argument("--candidates", required=True, metavar="PATH",
                   help="CSV / JSONL / JSON of id, title, abstract, source (doi optional); or the output of `data "
                   "fetch-texts` (its folder, fetch_report.json, fetch_state.jsonl or an articles_part_fetched_NNN"
                   ".json shard): the papers it resolved, with their published title and abstract")
    p.add_argument("--judge", metavar="YAML", help="screening judge (backend + generation); without it stage 2 is "
                   "skipped")
    p.add_argument("--keywords", metavar="LIST", help="comma-separated title keywords (default: a high-recall list)")
    p.add_argument("--screen-all", action="store_true", help="screen every candidate, not only keyword matches")
    p.add_argument("--out", required=True, metavar="DIR", help="output folder")
    p.set_defaults(handler=_identify)

    p = sub.add_parser("collect", help="read the review reports of the confirmed surveys (F1000 JATS, OpenReview, "
                       "MOPRD / PeerJ, plain text)",
                       description="Read review files or folders (F1000Research JATS XML with referee reports, "
                       "OpenReview forum JSON, MOPRD / PeerJ review-history JSON, plain-text reports in "
                       "<paper id>/<name>.txt), keep the papers confirmed in the verification file (titles and "
                       "abstracts a review file lacks come from the candidates.jsonl beside it), number the "
                       "reviewers, attach survey texts (JATS, --texts DIR/<paper id>.md|.tex|.pdf, or --texts the "
                       "output folder of `data fetch-texts`; leakage guard on) and write OUT/surveys.jsonl, "
                       "OUT/reviews.jsonl, OUT/collect_report.json (counts per source and of the verification). "
                       "Example: "
                       "surveyalign data collect reviews/ --verification identified/verification.csv --texts texts/ "
                       "--out collected/")
    p.add_argument("paths", nargs="+", metavar="PATH", help="review files or folders")
    p.add_argument("--verification", metavar="CSV", help="verification.csv with 'confirmed' and "
                   "'substantive_reviews' filled (default: keep every paper)")
    p.add_argument("--texts", metavar="DIR", help="survey texts named by paper id, or the output folder of `data "
                   "fetch-texts` (texts found by DOI, OpenReview forum or uid)")
    p.add_argument("--text-source", choices=_SOURCES, default=None,
                   help="source of plain-text reports whose candidate (candidates.jsonl / verification.csv) gives "
                        "none (default: unknown); a candidate's own source always wins")
    p.add_argument("--out", required=True, metavar="DIR", help="output folder")
    p.set_defaults(handler=_collect)

    p = sub.add_parser("annotate", help="LLM pre-annotation of every review (labels -3..+2, verified snippets) and "
                       "the Label Studio project",
                       description="One cached call per review (K samples with --samples, label by majority): a "
                       "label in {-3,-2,-1,0,+1,+2} per dimension and the supporting review sentences, each checked "
                       "verbatim in the review (offsets stored; near-verbatim or missing snippets flagged). Writes "
                       "OUT/annotations.jsonl, OUT/annotate_report.json, OUT/calls.jsonl (a re-run resumes) and "
                       "OUT/label_studio/{labeling_config.xml,tasks.json} (tasks with the LLM answer as "
                       "predictions). Example: surveyalign data annotate --reviews collected/ --judge "
                       "configs/annotation/api.yaml --out annotated/")
    p.add_argument("--reviews", required=True, metavar="DIR", help="output folder of `data collect`")
    p.add_argument("--judge", required=True, metavar="YAML", help="judge config (backend + generation)")
    p.add_argument("--samples", type=positive_int, default=1, metavar="K", help="samples per review (default 1)")
    p.add_argument("--limit", type=positive_int, metavar="N", help="annotate only the first N reviews")
    p.add_argument("--out", required=True, metavar="DIR", help="output folder")
    p.set_defaults(handler=_annotate)

    p = sub.add_parser("agreement", help="plan the double-annotation sample, or report agreement as in Table 5",
                       description="--plan: sample N units per dimension (seeded) for a second annotator and write "
                       "OUT/double_annotation_sample.json and OUT/label_studio/tasks.json (those reviews). Otherwise: "
                       "per dimension and overall units, disagreements, rate, Krippendorff's alpha (ordinal, "
                       "interval), one/two/three-level differences, confusion matrix and bootstrap CIs between two "
                       "human annotators, and the same table for the LLM against the human label; writes "
                       "OUT/agreement.json, OUT/agreement.md and OUT/disagreements.csv (fill 'final' for a third "
                       "decision). Example: surveyalign data agreement --human export.json --llm annotated/ --out agreement/")
    p.add_argument("--human", metavar="FILE", help="Label Studio JSON export (or human.jsonl)")
    p.add_argument("--llm", metavar="DIR", help="output folder of `data annotate`")
    p.add_argument("--collected", metavar="DIR", help="output folder of `data collect` (--plan: the tasks' reviews)")
    p.add_argument("--plan", action="store_true", help="write the double-annotation sample instead of a report")
    p.add_argument("--sample", type=positive_int, default=70, metavar="N", help="units per dimension (default 70)")
    p.add_argument("--sample-file", metavar="FILE", help="double_annotation_sample.json of --plan: report on these")
    p.add_argument("--seed", type=int_at_least(0), default=0, help="sample and bootstrap seed (default 0)")
    p.add_argument("--bootstrap", type=int_at_least(0), default=1000, metavar="B", help="resamples (default 1000)")
    p.add_argument("--out", required=True, metavar="DIR", help="output folder")
    p.set_defaults(handler=_agreement)

    p = sub.add_parser("release", help="write the final labels in the official release layout",
                       description="Decide each unit's final label (annotators agree, one annotator, a third "
                       "person's decision from disagreements.csv, or with --allow-llm the LLM's label where no "
                       "person labelled; the rule is recorded) and write OUT/raw/*_samples.json, "
                       "OUT/{train,test}/grouped_*set.json, OUT/articles/articles_part*.json, "
                       "OUT/final_labels.jsonl (each unit's label, rule and who gave which label), OUT/provenance.json "
                       "(sources, counts per stage and source, annotator model, guideline, agreement) and "
                       "OUT/ANNOTATION.md (the dataset card's section). `surveyalign data build --official OUT` reads it unchanged. Example: "
                       "surveyalign data release --collected collected/ --human export.json --llm annotated/ "
                       "--decisions agreement/disagreements.csv --agreement agreement/agreement.json --out release/")
    p.add_argument("--collected", required=True, metavar="DIR", help="output folder of `data collect`")
    p.add_argument("--human", metavar="FILE", help="Label Studio JSON export (or human.jsonl)")
    p.add_argument("--llm", metavar="DIR", help="output folder of `data annotate`")
    p.add_argument("--decisions", metavar="CSV", help="disagreements.csv with 'final' filled by a third person")
    p.add_argument("--allow-llm", action="store_true", help="release the LLM's label for units no person labelled")
    p.add_argument("--agreement", metavar="FILE", help="agreement.json of `data agreement` (into the provenance)")
    p.add_argument("--identified", metavar="DIR", help="output folder of `data identify` (counts into the provenance)")
    p.add_argument("--split", choices=("paper-level", "test", "train"), default="paper-level",
                   help="paper-level: 75/25 by source (default); test / train: everything in one split")
    p.add_argument("--test-fraction", type=number_between(0, 1), default=0.25, help="paper-level test share")
    p.add_argument("--seed", type=int_at_least(0), default=42, help="split seed (default 42)")
    p.add_argument("--out", required=True, metavar="DIR", help="release folder")
    p.set_defaults(handler=_release)


def _fail(message: str, code: int = 2) -> int:
    print(f"error: {message}", file=sys.stderr)
    return code


def _load_judge(path: str):
    from .judge_config import AnnotationJudge

    judge = AnnotationJudge.from_yaml(path)
    return judge, judge.build()


def _identify(args: argparse.Namespace) -> int:
    from .fetched import is_fetch_output, read_fetched_candidates
    from .identify import DEFAULT_KEYWORDS, identify_surveys, read_candidates

    try:
        input_report = None
        if is_fetch_output(args.candidates):
            candidates, input_report = read_fetched_candidates(args.candidates)
            print(f"fetch-texts output: {input_report['records']} papers, {len(candidates)} resolved taken as "
                  f"candidates, {len(input_report['skipped'])} not resolved (listed in identify_report.json)")
        else:
            candidates = read_candidates(args.candidates)
        judge, backend = _load_judge(args.judge) if args.judge else (None, None)
    except (ValueError, FileNotFoundError) as err:
        return _fail(str(err))
    if not candidates:
        return _fail(f"{args.candidates}: no candidate paper to screen", 3)
    keywords = tuple(k.strip() for k in args.keywords.split(",") if k.strip()) if args.keywords else DEFAULT_KEYWORDS
    from surveyalign.backends import GenerationSettings

    settings = judge.generation if judge else GenerationSettings()
    try:
        result = identify_surveys(candidates, backend, settings, keywords=keywords, screen_all=args.screen_all,
                                  out=args.out, judge=judge.describe() if judge else None, input_report=input_report)
    except ValueError as err:
        return _fail(str(err))
    for source, c in result.report["per_source"].items():
        print(f"{source}: {c['candidates']} candidates, {c['keyword_match']} keyword matches, {c['screened']} "
              f"screened ({c.get('llm_yes', 0)} yes, {c.get('llm_no', 0)} no, {c.get('llm_failed', 0)} failed), "
              f"{c['proposed']} proposed")
    if result.report.get("answers"):
        from surveyalign.calls import CallCache

        print(CallCache.counts_line(result.report["answers"]))
    kept = result.report.get("verification_carried_over") or {}
    if kept.get("rows_with_person_cells") or kept.get("kept_not_listed"):
        print(f"{Path(args.out) / 'verification.csv'}: carried over the person's cells of "
              f"{kept['rows_with_person_cells']} row(s); kept {kept['kept_not_listed']} filled row(s) of candidates "
              "no longer listed (at the end of the file)", file=sys.stderr)
    print(f"verification file: {Path(args.out) / 'verification.csv'} (fill 'confirmed' and 'substantive_reviews')")
    total = result.report["total"]
    if judge and total.get("screened") and total.get("screened") == total.get("llm_failed"):
        return _fail("every screening call failed; see OUT/candidates.jsonl", 3)
    return 0


def _collect(args: argparse.Namespace) -> int:
    from .collect import collect_reviews
    from .identify import read_verification, verification_counts
    from .records import read_jsonl

    try:
        confirmed, stage3, candidates = None, None, []
        if args.verification:
            confirmed, counts = read_verification(args.verification)
            stage3 = verification_counts(args.verification)
            print("verification: " + ", ".join(f"{k} {v}" for k, v in counts.items()))
            listed = Path(args.verification).with_name("candidates.jsonl")  # written beside it by `data identify`
            candidates = list(read_jsonl(listed)) if listed.is_file() else []
            with Path(args.verification).open(encoding="utf-8", newline="") as fh:  # its id / source columns too
                candidates += [row for row in unescape_rows(csv.DictReader(fh)) if (row.get("id") or "").strip()]
        result = collect_reviews(args.paths, confirmed=confirmed, texts=args.texts, text_source=args.text_source,
                                 out=args.out, candidates=candidates, verification=stage3)
    except (ValueError, FileNotFoundError) as err:
        return _fail(str(err))
    rep = result.report
    for source, c in rep["per_source"].items():
        print(f"{source}: {c.get('surveys', 0)} surveys ({c.get('surveys_with_text', 0)} with text), "
              f"{c.get('reviews', 0)} reviews, {c.get('records_skipped', 0)} records skipped")
    if rep["reviews_found_in_survey_text"]:
        print(f"warning: review text found in the survey text for {len(rep['reviews_found_in_survey_text'])} "
              f"review(s): {', '.join(rep['reviews_found_in_survey_text'][:5])}")
    print(f"wrote {rep['surveys']} surveys and {rep['reviews']} reviews to {args.out}")
    return 0 if rep["reviews"] else _fail("no review report was collected", 3)


def _annotate(args: argparse.Namespace) -> int:
    from .annotate import annotate_reviews, unique_reviews
    from .labelstudio import export_tasks, write_project
    from .records import read_reviews, read_surveys

    try:
        reviews = read_reviews(args.reviews)
        surveys_path = Path(args.reviews) / "surveys.jsonl"
        titles = {s.paper_id: s.title for s in read_surveys(surveys_path)} if surveys_path.exists() else {}
        judge, backend = _load_judge(args.judge)
    except (ValueError, FileNotFoundError) as err:
        return _fail(str(err))
    if args.limit:
        reviews = reviews[:args.limit]
    reviews, messages = unique_reviews(reviews)  # no review's annotation replaces another's
    for line in messages:
        print(line, file=sys.stderr)
    result = annotate_reviews(reviews, backend, judge.generation, out=args.out, samples=args.samples, titles=titles,
                              judge=judge.describe())
    write_project(Path(args.out) / "label_studio", export_tasks(reviews, result.records, titles=titles))
    rep = result.report
    if rep.get("carried_over"):
        print(f"{args.out}/annotations.jsonl: kept the {rep['carried_over']} annotation(s) of an earlier run on reviews "
              "not in this one", file=sys.stderr)
    print(f"{rep['reviews']} reviews, {rep['calls']} calls ({rep['calls_cached']} cached, {rep['calls_failed']} "
          f"failed); status: " + ", ".join(f"{k} {v}" for k, v in rep["review_status"].items()))
    if rep.get("answers"):
        from surveyalign.calls import CallCache

        print(CallCache.counts_line(rep["answers"]))
    print("snippets: " + ", ".join(f"{k} {v}" for k, v in rep["snippets"].items())
          + f" ({rep['snippets_flagged']} flagged: not verbatim in their review)")
    for f in rep["flagged_snippets"][:5]:
        where = f"offsets {f['start']}-{f['end']}" if f["start"] is not None else "no offsets"
        print(f"  flagged {f['status']}: {f['review_id']} {f['dimension']} ({where}, score {f['score']}): "
              f"{f['text'][:80]!r}")
    if len(rep["flagged_snippets"]) > 5:
        print(f"  ... {len(rep['flagged_snippets']) - 5} more in {Path(args.out) / 'annotate_report.json'}")
    print(f"wrote {Path(args.out) / 'annotations.jsonl'} and the Label Studio project in "
          f"{Path(args.out) / 'label_studio'}")
    labelled = rep["review_status"]["ok"] + rep["review_status"]["partial"]
    return 0 if labelled else _fail("no review got a label (see annotations.jsonl for each failure)", 3)


def _read_human(path: str, review_ids: Any = None):
    """The human labels: a ``human.jsonl`` as written, or a Label Studio export read by
    :func:`~surveyalign.annotation.labelstudio.import_export` (``review_ids``: the project's reviews; a task for
    another is a problem, left out)."""
    from .labelstudio import import_export
    from .records import read_jsonl

    if path.endswith(".jsonl"):
        return list(read_jsonl(path)), {}
    return import_export(path, review_ids=review_ids)


def _project_reviews(collected: str | None, llm: list[dict[str, Any]]) -> set[str] | None:
    """The review ids of the project: ``reviews.jsonl`` of ``--collected``, else those ``--llm`` labelled;
    ``None`` when neither is given."""
    from .records import read_reviews

    if collected:
        return {r.review_id for r in read_reviews(collected)}
    return {str(rec["review_id"]) for rec in llm} if llm else None


def _agreement(args: argparse.Namespace) -> int:
    from .adjudicate import (
        disagreements,
        final_labels,
        merge_disagreements,
        read_decisions,
        write_disagreements,
    )
    from .agreement import (
        agreement_table,
        llm_vs_human,
        pair_labels,
        render_confusion,
        render_table,
        sample_units,
        unit_labels,
    )
    from .labelstudio import export_tasks, write_project
    from .records import read_jsonl, read_reviews, write_jsonl

    out = Path(args.out)
    try:
        llm = list(read_jsonl(Path(args.llm) / "annotations.jsonl")) if args.llm else []
        if args.plan:
            if not llm:
                return _fail("--plan needs --llm (the units to sample from)")
            units = sample_units(unit_labels(llm), n=args.sample, seed=args.seed)
            out.mkdir(parents=True, exist_ok=True)
            (out / "double_annotation_sample.json").write_text(json.dumps(
                {"seed": args.seed, "per_dimension": args.sample, "units": [list(u) for u in units]}, indent=1) + "\n")
            wanted = {u[0] for u in units}
            reviews = [r for r in read_reviews(args.collected) if r.review_id in wanted] if args.collected else []
            print(f"sampled {len(units)} units ({len(wanted)} reviews) to {out / 'double_annotation_sample.json'}")
            if reviews:
                write_project(out / "label_studio", export_tasks(reviews))
            return 0
        if not args.human:
            return _fail("--human (the Label Studio export) is needed for a report")
        human, import_report = _read_human(args.human, _project_reviews(args.collected, llm))
        sample = None
        if args.sample_file:
            sample = [tuple(u) for u in json.loads(Path(args.sample_file).read_text())["units"]]
    except (ValueError, FileNotFoundError, KeyError) as err:
        return _fail(str(err))
    out.mkdir(parents=True, exist_ok=True)
    write_jsonl(out / "human.jsonl", human)
    labels = unit_labels(human)
    double = {u: v for u, v in labels.items() if len(v) >= 2}
    if sample is None:
        sample = sample_units(double, n=args.sample, seed=args.seed)
    first = {u: v[min(v)] for u, v in double.items()}
    second = {u: v[sorted(v)[1]] for u, v in double.items()}
    tables = {}
    hh = pair_labels(first, second, sample)
    if hh:
        tables["human vs human"] = agreement_table(hh, n_boot=args.bootstrap, seed=args.seed)
    decisions = read_decisions(out / "disagreements.csv") if (out / "disagreements.csv").exists() else {}
    finals, _ = final_labels(human, decisions=decisions)
    machine = {u: next(iter(v.values())) for u, v in unit_labels(llm).items()}
    lh, scope = llm_vs_human(machine, finals)  # which units it compares, which are left out and why
    if lh:
        tables["LLM vs human"] = {**agreement_table(lh, n_boot=args.bootstrap, seed=args.seed), "scope": scope}
    if llm:
        print(f"LLM vs human: {scope['units_compared']} units compared; left out: "
              + ", ".join(f"{n} {r.replace('_', ' ')}" for r, n in scope["left_out"].items()))
    try:  # keep what the third person wrote (decisions, notes, added columns)
        rows, kept = merge_disagreements(out / "disagreements.csv", disagreements(human))
    except ValueError as err:
        return _fail(str(err))
    write_disagreements(out / "disagreements.csv", rows)
    if kept["rows_with_person_cells"] or kept["kept_not_listed"]:
        print(f"{out / 'disagreements.csv'}: carried over the person's cells of {kept['rows_with_person_cells']} "
              f"row(s); kept {kept['kept_not_listed']} filled row(s) of units no longer in disagreement (at the end)",
              file=sys.stderr)
    (out / "agreement.json").write_text(json.dumps({"tables": tables, "import": import_report,
                                                    "sample_units": len(sample),
                                                    "llm_vs_human_scope": scope if llm else None}, indent=2) + "\n")
    text = "\n".join(render_table(t, name) for name, t in tables.items())
    (out / "agreement.md").write_text(text + "".join("\n" + render_confusion(t, name) for name, t in tables.items()),
                                      encoding="utf-8")
    print(text)
    print(f"confusion matrices in {out / 'agreement.md'}")
    print(f"{len(rows) - kept['kept_not_listed']} disagreement(s) listed in {out / 'disagreements.csv'} for a third decision "
          f"({len(decisions)} decided)")
    return 0 if tables else _fail("no unit was labelled by two annotators (or by the LLM and a person)", 3)


def _release(args: argparse.Namespace) -> int:
    from .adjudicate import final_labels, read_decisions
    from .agreement import unit_labels
    from .records import read_jsonl, read_reviews, read_surveys
    from .release import write_release

    try:
        surveys = read_surveys(args.collected)
        reviews = read_reviews(args.collected)
        human, import_report = _read_human(args.human, {r.review_id for r in reviews}) if args.human else ([], {})
        llm = list(read_jsonl(Path(args.llm) / "annotations.jsonl")) if args.llm else []
        decisions = read_decisions(args.decisions) if args.decisions else {}
        agreement = json.loads(Path(args.agreement).read_text())["tables"] if args.agreement else {}
        extra: dict = {}
        for name, folder, file in (("identification", args.identified, "identify_report.json"),
                                   ("collection", args.collected, "collect_report.json"),
                                   ("pre_annotation", args.llm, "annotate_report.json")):
            if folder and (Path(folder) / file).exists():
                extra[name] = json.loads((Path(folder) / file).read_text())
    except (ValueError, FileNotFoundError, KeyError) as err:
        return _fail(str(err))
    finals, final_report = final_labels(human, llm, decisions=decisions, allow_llm=args.allow_llm)
    pre = extra.get("pre_annotation", {})
    extra.update({"final_labels": final_report, "human_annotators": import_report.get("annotators", sorted(
        {h.get("annotator", "?") for h in human})), "label_studio_import": import_report,
        "annotator_model": {"description": pre.get("judge")}, "prompt_version": pre.get("prompt_version")})
    given = unit_labels(human)
    for unit, by in unit_labels(llm).items():  # the LLM's label beside the people's, under "llm"
        given.setdefault(unit, {}).setdefault("llm", by.get("llm", next(iter(by.values()))))
    try:
        prov = write_release(args.out, surveys, reviews, finals, split=args.split, seed=args.seed,
                             test_fraction=args.test_fraction, provenance=extra, agreement=agreement, given=given)
    except ValueError as err:
        return _fail(str(err))
    print(f"wrote {prov['reviews_written']} reviews of {prov['papers']} papers to {args.out} "
          f"({', '.join(prov['files'])}); final labels: "
          + ", ".join(f"{k} {v}" for k, v in final_report["rules"].items()))
    print(f"each unit's final label, its rule and who gave which label: {Path(args.out) / prov['final_labels_file']}")
    print(f"build it with: surveyalign data build --official {args.out} --out DATASET_DIR")
    return 0 if prov["reviews_written"] else _fail("no unit has a final label; nothing to release", 3)

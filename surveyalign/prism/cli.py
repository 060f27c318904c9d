"""``surveyalign prism``: PRISM review-quality metrics of the reviews of one paper."""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import sys
from pathlib import Path

from surveyalign.paths import safe_output_name

_EPILOG = """\
examples:
  surveyalign prism paper.json reviews.json DeepReview=deepreview.txt --judge configs/prism/api.yaml
  surveyalign prism article.xml article.xml --judge configs/prism/api.yaml --no-novelty   # F1000 JATS + reports
  surveyalign prism --corpus corpus/ --judge configs/prism/api.yaml --out runs/prism/corpus   # many papers

PAPER: .json (OpenReview submission note or {title, abstract, text | sections, submission_date}), .xml (JATS)
or markdown / text. REVIEWS: .json / .jsonl (OpenReview notes or flat records), .xml (JATS ref-report
sub-articles) or a text file; NAME=PATH marks the file's reviews as written by the system NAME (otherwise a
record is human unless it says "source": "system").

The run folder holds calls.jsonl (re-running the same command makes only the missing calls and asks again those
whose answer errored or could not be parsed; --keep-failed reuses those),
reviews/<id>.json, paper.json, comparison.md / comparison.json (each system against the mean of the human
reviewers, with the project page's figures beside it), extraction.json (every unparseable answer, default and
left-out item) and run_config.json. Two different reviews with one id (two review.txt files) are scored as
id-<hash>; a review given twice is scored once. A folder holding another paper's run is never reused: the default
folder becomes runs/prism/<paper id>-<hash>, an explicit --out is refused; an earlier run's review file is never
replaced by another review with the same id (that one is written as id-<hash>).

Exit status: 0; 2 for bad input; 3 when a stage produced no usable result (every answer of a stage failed to
parse or errored: its metrics would be empty for every review).
"""


def _date(text: str) -> dt.date:
    """``YYYY-MM-DD`` -> date (argparse type: a bad value is a usage error naming the flag)."""
    try:
        return dt.date.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected YYYY-MM-DD, got {text!r}") from None


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``surveyalign prism`` to the top-level parser."""
    p = subparsers.add_parser(
        "prism", help="PRISM review-quality metrics of a paper's reviews (depth, novelty, flaws, constructiveness)",
        description="Score human and system peer reviews of one paper with PRISM: depth of analysis, novelty "
        "verification against prior work, flaw recall and prioritisation (nCPS), constructiveness. An LLM "
        "judge extracts the units; the scores are computed from them.",
        epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("paper", metavar="PAPER", nargs="?", help="the reviewed paper (.json, .xml JATS, .md / .txt)")
    p.add_argument("reviews", metavar="REVIEWS", nargs="*", help="review files; NAME=PATH for a system's reviews")
    p.add_argument("--corpus", metavar="DIR",
                   help="score every paper of a corpus instead (DIR/<paper>/paper.*, reviews/*, systems/<NAME>.*), "
                        "resumable, and aggregate per system: mean over papers with a paper-level CI, missing "
                        "metrics counted; writes corpus.json / corpus.md / corpus.html to --out (default runs/prism/corpus)")
    p.add_argument("--bootstrap", type=int, default=1000, metavar="N",
                   help="--corpus: paper-level bootstrap resamples for the intervals (default 1000)")
    p.add_argument("--judge", required=True, metavar="CONFIG", help="PRISM judge YAML (see configs/prism/)")
    p.add_argument("--out", metavar="DIR", help="run folder (default: runs/prism/<paper id>)")
    p.add_argument("--paper-id", help="paper identifier (default: from the file)")
    p.add_argument("--submission-date", type=_date, metavar="YYYY-MM-DD", help="submission date (prior work must be older)")
    p.add_argument("--grounding-rubric", choices=("seed", "specificity"), help="overrides `grounding_rubric`")
    p.add_argument("--claim-policy", help="novelty claim-score policy (overrides `claim_policy`)")
    p.add_argument("--no-novelty", action="store_true", help="skip prior-work retrieval (novelty not assessed)")
    p.add_argument("--keep-failed", action="store_true", help="reuse cached answers that errored or could not be "
                   "parsed (default: a re-run asks them again)")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    p.set_defaults(handler=_prism)


def _review_files(items: list[str]):
    from surveyalign.prism.readers import read_reviews

    reviews, skipped = [], []
    for item in items:
        name, sep, path = item.partition("=")
        if sep and not Path(item).exists():
            got = read_reviews(path, system=name)
        else:
            got = read_reviews(item)
        reviews += got.reviews
        skipped += [f"{got.path}: {s}" for s in got.skipped]
    return reviews, skipped


def _unique_reviews(reviews: list) -> tuple[list, list[str]]:
    """Reviews with unique ids: an exact repeat (same id, source, system and text; e.g. a file given twice) is
    kept once, and different reviews sharing an id (two ``review.txt`` files in different folders) each get the id
    plus a short hash of their text, so neither replaces the other's ``reviews/<id>.json``.

    Args:
        reviews: the reviews as read, in order.

    Returns:
        ``(reviews, messages)``: the reviews to score and one line per merged or renamed review.
    """
    from surveyalign.paths import unique_output_names

    keys = [f"{r.review_id}\x00{r.source}\x00{r.system}\x00{r.text}" for r in reviews]
    names = unique_output_names([r.review_id for r in reviews], keys, fallback="review")
    by_id: dict[str, list[int]] = {}
    for i in names.keep:
        by_id.setdefault(reviews[i].review_id, []).append(i)
    labels = [f"review {r.review_id!r} ({r.system or r.source})" for r in reviews]
    messages = [f"{labels[i]}: repeated; scored once" for i in sorted(names.merged)]
    out = []
    for i in names.keep:
        review = reviews[i]
        if len(by_id[review.review_id]) > 1:
            new_id = f"{review.review_id}-{hashlib.sha256(review.text.encode()).hexdigest()[:8]}"
            messages.append(f"{labels[i]}: another review has the same id; scored as {new_id!r}")
            review = review.model_copy(update={"review_id": new_id})
        out.append(review)
    return out, messages


def _run_folder(given: str | None, paper) -> tuple[Path, str | None]:
    """The run folder of one paper: ``--out``, else ``runs/prism/<paper id>``, never another paper's.

    A folder whose ``paper.json`` records another paper (other content, by :func:`~surveyalign.prism.report.
    paper_sha256`) is never reused: the default folder becomes ``runs/prism/<paper id>-<short hash>``; an explicit
    ``--out`` is refused.

    Returns:
        ``(folder, message)``: the message says why the default folder moved (``None`` when it did not).

    Raises:
        ValueError: ``--out`` holds the run of another paper.
    """
    from surveyalign.paths import name_beside_earlier
    from surveyalign.prism.report import paper_sha256, run_owner

    digest = paper_sha256(paper)

    if given:
        found = run_owner(Path(given), paper)
        if name_beside_earlier("paper", digest, found) is not None:
            raise ValueError(f"{Path(given) / 'paper.json'} holds the PRISM run of another paper "
                             f"({(found or {}).get('source') or 'unknown'}); pass another --out (or leave it out: "
                             "each paper gets its own folder under runs/prism/)")
        return Path(given), None
    name = safe_output_name(paper.paper_id, fallback="paper")
    other = name_beside_earlier(name, digest, run_owner(Path("runs") / "prism" / name, paper))
    if other is None:
        return Path("runs") / "prism" / name, None
    message = (f"runs/prism/{name} holds the PRISM run of another paper with id {paper.paper_id!r}; this run goes "
               f"to runs/prism/{other}")
    return Path("runs") / "prism" / other, message


def _corpus(args: argparse.Namespace, config) -> int:
    from surveyalign.prism.corpus import render_corpus_markdown, run_corpus

    out = Path(args.out) if args.out else Path("runs") / "prism" / "corpus"
    try:
        result = run_corpus(args.corpus, config, out, progress=not args.no_progress, n_resamples=max(args.bootstrap, 0))
    except FileNotFoundError as err:
        print(f"surveyalign prism: error: {err}", file=sys.stderr)
        return 2
    except ValueError as err:
        print(f"surveyalign prism: error: {err}", file=sys.stderr)
        return 3
    print(render_corpus_markdown(result), end="")
    for line in result["skipped_records"]:
        print(f"not a review, skipped: {line}", file=sys.stderr)
    print(f"{len(result['papers'])} papers scored, {len(result['failed'])} not; wrote {', '.join(result['files'].values())}")
    empty = [stage for stage, c in result["extraction_counts"].items() if c.get("answers") and not c.get("parsed")]
    if empty:
        print(f"surveyalign prism: no usable extraction in stage(s) {', '.join(empty)} in any paper (every answer "
              f"failed; see {out / 'papers'}/<paper>/extraction.json)", file=sys.stderr)
        return 3
    return 0


def _prism(args: argparse.Namespace) -> int:
    from surveyalign.prism.readers import read_paper
    from surveyalign.prism.report import comparison_rows, format_comparison
    from surveyalign.prism.run import PrismConfig, run_prism

    overrides = {"grounding_rubric": args.grounding_rubric, "claim_policy": args.claim_policy,
                 "novelty.enabled": False if args.no_novelty else None}
    if args.corpus and (args.paper or args.reviews):
        print("surveyalign prism: error: --corpus DIR replaces PAPER and REVIEWS; give one or the other",
              file=sys.stderr)
        return 2
    if not args.corpus and (not args.paper or not args.reviews):
        print("surveyalign prism: error: give PAPER and at least one REVIEWS file, or --corpus DIR", file=sys.stderr)
        return 2
    config = PrismConfig.from_yaml(args.judge, overrides)
    if args.corpus:
        return _corpus(args, config)
    paper = read_paper(args.paper, paper_id=args.paper_id, submission_date=args.submission_date)
    reviews, skipped = _review_files(args.reviews)
    for line in skipped:
        print(f"not a review, skipped: {line}", file=sys.stderr)
    reviews, renamed = _unique_reviews(reviews)
    for line in renamed:
        print(line, file=sys.stderr)
    out, moved = _run_folder(args.out, paper)
    if moved:
        print(moved, file=sys.stderr)
    run = run_prism(paper, reviews, config, out, progress=not args.no_progress,
                    command=["surveyalign", "prism", *sys.argv[2:]], keep_failed=args.keep_failed)
    print(format_comparison(comparison_rows(run.scores)), end="")
    log = run.units.log
    made = sum(c["made"] for c in run.calls.values())
    cached = sum(c["cached"] for c in run.calls.values())
    print(f"{len(reviews)} reviews ({sum(r.source == 'human' for r in reviews)} human); calls: {made} made, "
          f"{cached} cached; unparseable or failed extractions: {log.n_failed}; defaults: {len(log.defaults)}; "
          f"left-out items: {len(log.invalid)}; skipped records: {len(skipped)}")
    print(run.answers)
    print(f"run folder: {out}")
    empty = [stage for stage, c in log.counts.items() if c["answers"] and not c["parsed"]]
    if empty:
        print(f"surveyalign prism: no usable extraction in stage(s) {', '.join(empty)} (every answer failed; "
              f"see {out / 'extraction.json'})", file=sys.stderr)
        return 3
    return 0

"""``surveyalign prism --corpus DIR``: PRISM over many papers, resumable, aggregated per system.

Corpus layout: one folder per paper (the folder name is the paper id)::

    DIR/<paper>/paper.{json,xml,md,txt,tex,pdf}   the reviewed paper (any format of ``read_paper``)
    DIR/<paper>/reviews/*                         human reviews (any format of ``read_reviews``); files at the top
                                                  level other than paper.* count too
    DIR/<paper>/systems/<NAME>.*                  the reviews of the system NAME (an LLM reviewer)

Every paper is one PRISM run in ``OUT/papers/<paper>/`` (its own ``calls.jsonl``: a re-run makes only the missing
calls); a paper whose files cannot be read, or whose run fails, is recorded with the reason and the corpus goes on.
The aggregate: for each system ("human" = the mean of a paper's human reviewers; each LLM reviewer by name) and
each headline metric, the per-paper value (the mean over that system's reviews of the paper), then the mean over
papers with a paper-level bootstrap interval (:func:`surveyalign.scoring.aggregate_over_papers`), the papers where
the metric is missing and the papers the system did not review counted. Written as ``corpus.json``, ``corpus.md``
and a self-contained ``corpus.html``.
"""

from __future__ import annotations

import html
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from surveyalign import __version__
from surveyalign.documents.hidden import hidden_section
from surveyalign.paths import inside_folder, name_beside_earlier
from surveyalign.prism.columns import mean_over_reviews
from surveyalign.prism.readers import read_paper, read_reviews
from surveyalign.prism.report import (
    HEADLINE_METRICS,
    REFERENCE_FIGURES,
    hidden_records,
    paper_sha256,
    run_owner,
)
from surveyalign.prism.run import PrismConfig, run_prism
from surveyalign.scoring import aggregate_cell, aggregate_over_papers

__all__ = ["HUMAN", "corpus_papers", "render_corpus_html", "render_corpus_markdown", "run_corpus"]

#: The system name of a paper's human reviewers, pooled.
HUMAN = "human"
_PAPER_SUFFIXES = (".json", ".xml", ".md", ".markdown", ".txt", ".tex", ".pdf")


def corpus_papers(root: str | Path) -> list[Path]:
    """The paper folders of a corpus (sub-folders holding a ``paper.*`` file), sorted by name.

    Raises:
        FileNotFoundError: ``root`` is not a folder or holds no paper folder.
    """
    folder = Path(root)
    if not folder.is_dir():
        raise FileNotFoundError(f"--corpus {folder}: not a folder")
    found = sorted(p for p in inside_folder(folder, folder.iterdir(), "--corpus")
                   if p.is_dir() and _paper_file(p) is not None)
    for paper_folder in found:  # the files read from each paper folder stay inside the corpus too
        inside_folder(folder, paper_folder.rglob("*"), "--corpus")
    if not found:
        raise FileNotFoundError(f"--corpus {folder}: no paper folder (a sub-folder with paper.json / paper.md / ...)")
    return found


def _paper_file(folder: Path) -> Path | None:
    return next((folder / f"paper{s}" for s in _PAPER_SUFFIXES if (folder / f"paper{s}").is_file()), None)


def _read_folder(folder: Path) -> tuple[Any, list[Any], list[str]]:
    paper = read_paper(_paper_file(folder), paper_id=folder.name)
    reviews, skipped = [], []
    human_files = sorted(p for p in folder.iterdir() if p.is_file() and p.stem != "paper" and not p.name.startswith("."))
    if (folder / "reviews").is_dir():
        human_files += sorted(p for p in (folder / "reviews").iterdir() if p.is_file())
    for path in human_files:
        got = read_reviews(path)
        reviews += got.reviews
        skipped += [f"{path}: {s}" for s in got.skipped]
    if (folder / "systems").is_dir():
        for path in sorted(p for p in (folder / "systems").iterdir() if p.is_file()):
            got = read_reviews(path, system=path.stem)
            reviews += got.reviews
            skipped += [f"{path}: {s}" for s in got.skipped]
    return paper, reviews, skipped


def run_corpus(root: str | Path, config: PrismConfig, out_dir: str | Path, *, backend: Any = None,
               retriever: Any = None, progress: bool = False, n_resamples: int = 1000, seed: int = 0
               ) -> dict[str, Any]:
    """Run PRISM on every paper of a corpus and aggregate per system (see the module docstring).

    Args:
        root: the corpus folder.
        config: the PRISM judge config.
        out_dir: the output folder (``papers/<paper>/`` run folders, ``corpus.json/md/html``).
        backend: an already built extraction backend (tests); default: built per paper from the config.
        retriever: prior-work retrieval (tests); default: as ``run_prism``.
        progress: progress bars.
        n_resamples: paper-level bootstrap resamples for the intervals.
        seed: numpy seed.

    Returns:
        ``{"papers": [ids], "failed": {paper: reason}, "skipped_records": [...], "systems": [names],
        "extraction_counts": {stage: {"answers", "parsed", ...} summed over the scored papers},
        "metrics": [[key, label]], "table": {system: {metric: aggregate}}, "per_paper": {system: {metric: {paper:
        value}}}, "reference": REFERENCE_FIGURES, "hidden_text": {"paper <id>" | "paper <id> review <id>":
        record} (:func:`surveyalign.prism.report.hidden_records` of each scored paper), "files": {...}}``.

    Raises:
        FileNotFoundError: the corpus has no paper folder.
        ValueError: no paper could be scored.
    """
    out = Path(out_dir)
    (out / "papers").mkdir(parents=True, exist_ok=True)
    papers, failed, skipped = [], {}, []
    hidden: dict[str, dict[str, Any]] = {}  # "paper <id>[ review <id>]" -> hidden-text record
    extraction: dict[str, dict[str, int]] = {}  # stage -> counts summed over the scored papers
    per_paper: dict[str, dict[str, dict[str, float | None]]] = {}
    keys = [k for k, _ in HEADLINE_METRICS]
    for folder in corpus_papers(root):
        pid = folder.name
        try:
            paper, reviews, skip = _read_folder(folder)
            skipped += skip
            if not reviews:
                raise ValueError("no review file")
            # a folder holding another paper's run (an earlier corpus in the same OUT) is never reused
            other = name_beside_earlier(pid, paper_sha256(paper), run_owner(out / "papers" / pid, paper))
            run = run_prism(paper, reviews, config, out / "papers" / (other or pid), backend=backend, retriever=retriever,
                            progress=progress, command=["surveyalign", "prism", "--corpus", str(root)])
        except (OSError, ValueError, RuntimeError) as err:
            failed[pid] = f"{type(err).__name__}: {err}"
            continue
        papers.append(pid)
        hidden.update({name if name.startswith("paper ") else f"paper {pid} {name}": record
                       for name, record in hidden_records(paper, reviews).items()})
        for stage, counts in run.units.log.counts.items():
            total = extraction.setdefault(stage, {})
            for name, value in counts.items():
                total[name] = total.get(name, 0) + value
        groups: dict[str, dict[str, Any]] = {}
        for rid, s in run.scores.items():
            groups.setdefault(HUMAN if s["source"] == "human" else str(s["label"]), {})[rid] = s
        for system, group in groups.items():
            means = mean_over_reviews(group, keys)
            for key in keys:
                per_paper.setdefault(system, {}).setdefault(key, {})[pid] = means[key]
    if not papers:
        raise ValueError("no paper of the corpus could be scored: " + "; ".join(f"{p}: {r}" for p, r in failed.items()))
    systems = sorted(per_paper, key=lambda s: (s != HUMAN, s))
    table = aggregate_over_papers({s: per_paper[s] for s in systems}, papers, n_resamples=n_resamples, seed=seed)
    result = {"papers": papers, "failed": failed, "skipped_records": skipped, "systems": systems,
              "extraction_counts": extraction,
              "metrics": [list(m) for m in HEADLINE_METRICS], "table": table, "per_paper": per_paper,
              "reference": REFERENCE_FIGURES, "resamples": n_resamples, "seed": seed, "hidden_text": hidden,
              "surveyalign_version": __version__}
    files = {"json": out / "corpus.json", "md": out / "corpus.md", "html": out / "corpus.html"}
    files["json"].write_text(json.dumps(result, indent=2), encoding="utf-8")
    files["md"].write_text(render_corpus_markdown(result), encoding="utf-8")
    files["html"].write_text(render_corpus_html(result), encoding="utf-8")
    result["files"] = {k: str(v) for k, v in files.items()}
    return result




def render_corpus_markdown(result: Mapping[str, Any]) -> str:
    """The systems x metrics table of :func:`run_corpus` as markdown (one row per system, one column per metric)."""
    labels = [label for _, label in result["metrics"]]
    lines = [f"# PRISM over {len(result['papers'])} papers", "",
             ("Mean over papers [paper-level bootstrap 95% CI] (n = papers with a value; missing = reviewed, metric "
              "not computable; absent = paper not reviewed by the system)."), "",
             "| system | " + " | ".join(labels) + " |", "|---|" + "---|" * len(labels)]
    for system in result["systems"]:
        lines.append(f"| {system} | " + " | ".join(aggregate_cell(result["table"][system][k]) for k, _ in result["metrics"])
                     + " |")
    notes = sorted({e["note"] for s in result["table"].values() for e in s.values() if e["note"]})
    if notes:
        lines += ["", *[f"- {n}" for n in notes]]
    if result["failed"]:
        lines += ["", "Papers not scored:", *[f"- {p}: {r}" for p, r in result["failed"].items()]]
    ref = result["reference"]
    lines += ["", "Project-page figures for comparison: " + "; ".join(
        f"{k}: " + ", ".join(f"{who} {v}" for who, v in figs.items()) for k, figs in ref.items())]
    if "hidden_text" in result:
        lines += ["", "## Hidden text", "", *hidden_section(result["hidden_text"])]
    return "\n".join(lines) + "\n"


def render_corpus_html(result: Mapping[str, Any]) -> str:
    """The same table as one self-contained HTML page (inline style, no script, no network)."""
    e = html.escape
    head = "".join(f"<th>{e(label)}</th>" for _, label in result["metrics"])
    rows = []
    for system in result["systems"]:
        cells = "".join(f'<td data-metric="{e(k)}">{e(aggregate_cell(result["table"][system][k]))}</td>'
                        for k, _ in result["metrics"])
        rows.append(f'<tr data-system="{e(system)}"><th>{e(system)}</th>{cells}</tr>')
    failed = "".join(f"<li>{e(p)}: {e(r)}</li>" for p, r in result["failed"].items())
    hidden = ("<h2>Hidden text</h2><ul id=\"hidden\">" + "".join(
        f"<li>{e(line[2:] if line.startswith('- ') else line)}</li>" for line in hidden_section(result["hidden_text"]))
        + "</ul>") if "hidden_text" in result else ""
    return ("<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>PRISM corpus</title><style>"
            "body{font-family:system-ui,sans-serif;margin:2em}table{border-collapse:collapse;font-size:.85em}"
            "td,th{border:1px solid #ccc;padding:.3em .5em;text-align:right}th:first-child{text-align:left}</style>"
            f"</head><body><h1>PRISM over {len(result['papers'])} papers</h1><p>Mean over papers [paper-level "
            "bootstrap 95% CI]; n = papers with a value, missing = reviewed but not computable, absent = not "
            f"reviewed.</p><table id=\"corpus\"><thead><tr><th>system</th>{head}</tr></thead><tbody>{''.join(rows)}"
            "</tbody></table>" + (f"<h2>Papers not scored</h2><ul id=\"failed\">{failed}</ul>" if failed else "")
            + hidden + "</body></html>\n")

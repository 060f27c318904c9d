"""Dataset card (README.md) of a built SurveyReview folder: YAML front matter + filled template.

The template lives in ``hub_cards/dataset_card.md`` (``string.Template`` placeholders such as ``$n_papers``),
shipped with the package (``surveyalign.paths.resource_path``).
"""

from __future__ import annotations

import json
import string
from pathlib import Path
from typing import Any

from surveyalign.constants import DIMENSIONS, SPLITS
from surveyalign.paths import resource_path

from .files import data_files
from .schema import ALL_CONFIG, features_yaml

#: The annotation section ``surveyalign data release`` writes into a release it makes (``surveyalign.annotation``).
ANNOTATION_FILE = "ANNOTATION.md"

def template_text() -> str:
    """The card template ``hub_cards/dataset_card.md``."""
    return resource_path("hub_cards", "dataset_card.md").read_text(encoding="utf-8")


def annotation_section(official: Path) -> str | None:
    """The release's annotation section for the card: ``ANNOTATION.md`` of a release folder (``## Annotation``
    with its ``###`` agreement tables, the card's own heading levels); None when the release has none (or is
    one file).

    Raises:
        UnicodeDecodeError: the file is not UTF-8.
    """
    path = official / ANNOTATION_FILE
    if not official.is_dir() or not path.is_file():
        return None
    text = path.read_text(encoding="utf-8").strip()
    return text or None


def _md_table(header: list[str], rows: list[list[Any]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join("---" for _ in header) + " |"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def front_matter(report: dict[str, Any], rows: dict[tuple[str, str], list[dict]]) -> str:
    """YAML front matter: ``configs`` (data_files per split) and ``dataset_info`` (typed features, split sizes).

    Written in the layout ``datasets``/``huggingface_hub`` use for dataset cards (configs sorted by name, "all"
    marked default), without importing either library. Every config's ``description`` carries the build's
    content hash (``report["content_sha256"]``), which ``datasets`` folds into its cache key.

    Args:
        report: the build report.
        rows: ``{(dimension, split): rows}`` as written.

    Returns:
        The YAML text (without the ``---`` fences).
    """
    import yaml

    configs, infos = [], []
    for config in sorted((*DIMENSIONS, ALL_CONFIG)):
        dims = DIMENSIONS if config == ALL_CONFIG else (config,)
        if config != ALL_CONFIG and not any(rows.get((config, split)) for split in SPLITS):
            continue  # a dimension the release has no units for gets no config (datasets cannot load one)
        entry: dict[str, Any] = {"config_name": config, "data_files": data_files(config, rows)}
        if report.get("content_sha256"):
            # part of the builder config, hence of the `datasets` cache key: a rebuild with new content in the
            # same folder is never served from the cache of the old one
            entry["description"] = f"SurveyReview {config}; content sha256 {report['content_sha256']}"
        if config == ALL_CONFIG:
            entry["default"] = True
        configs.append(entry)
        splits = [
            {"name": split, "num_bytes": 0, "num_examples": sum(len(rows.get((d, split), [])) for d in dims)}
            for split in SPLITS
            if any(rows.get((d, split)) for d in dims)
        ]
        infos.append({"config_name": config, "features": features_yaml(), "splits": splits})
    meta = {
        "language": ["en"],
        "pretty_name": "SurveyReview",
        "task_categories": ["text-classification", "text-generation"],
        "tags": ["survey-evaluation", "llm-as-a-judge", "peer-review"],
        "size_categories": ["1K<n<10K"] if report["units"]["kept"] >= 1000 else ["n<1K"],
        "configs": configs,
        "dataset_info": infos,
    }
    return yaml.safe_dump(meta, sort_keys=False, allow_unicode=True).rstrip("\n")


def render_readme(report: dict[str, Any], rows: dict[tuple[str, str], list[dict]], *,
                  annotation: str | None = None) -> str:
    """Full README.md of a dataset folder: front matter + the template filled from ``report``.

    Paths in the card are the release folder's name only (it is published by ``data push``); the input
    sha256 identifies the release files.

    Args:
        report: the build report (content of ``build_report.json``; SurveyReview §4, App. A-B counts).
        rows: ``{(dimension, split): rows}`` as written.
        annotation: the release's annotation section (:func:`annotation_section`, markdown starting with
            ``## Annotation``), placed after the provenance; None leaves it out.

    Returns:
        Markdown text starting with ``---``.
    """
    inp = report["input"]
    units = report["units"]
    leak = report["leakage_guard"]
    counts = report["counts"]
    provenance = "\n".join(
        [
            (f"- Built from the release folder `{inp['path']}` (layouts: {', '.join(inp['layouts']) or 'none'}; "
            f"{inp['records_read_total']} records in {len(inp['files'])} files; {inp['articles']} article texts)."),
            f"- Input sha256 (identifies the release files whatever folder they sit in): `{inp['sha256']}`.",
            (f"- Sources resolved by: {json.dumps(report['source_resolution'], sort_keys=True)} "
            "(record field, uid prefix, mapping file, F1000Research DOI in the text, else unknown)."),
            (f"- Missing survey texts: {report['missing_text']['units']} units / "
            f"{report['missing_text']['articles']} articles ({report['missing_text']['policy']})."),
        ]
    )
    filtering = _md_table(
        ["dimension", "excluded score 0 (not mentioned)", "excluded score -3 (unjudgeable)"],
        [[d, units["excluded_score_0"][d], units["excluded_score_minus3"][d]] for d in DIMENSIONS],
    )
    split_rows = []
    for split in SPLITS:
        c = counts[split]
        per_source = ", ".join(f"{s}: {v['papers']}p/{v['reviews']}r" for s, v in c["per_source"].items())
        split_rows.append([split, c["papers"], c["reviews"], c["units"], per_source or "-"])
    split = report["split"]
    if split["policy"] == "as-released":
        how = (f"Split policy **as-released** ({split['reason']}): the papers of the release's train files are in "
               f"train, with {split['validation_fraction']:.0%} of them per source carved out as validation at the "
               f"paper level (seed {report['seed']}); the papers of its test files are in test.")
        declared = "; ".join(f"`{f}` -> {s}" for f, s in split["declared_files"].items())
        how += f" Files and the split they name: {declared}." if declared else ""
    else:
        how = (f"Split policy **paper-level** ({split['reason']}), stratified by source, seed {report['seed']}: "
               f"test = {split['test_fraction']:.0%} of each source's papers, validation = "
               f"{split['validation_fraction']:.0%} of the remaining training papers.")
    records = report.get("records") or {}
    if records.get("set"):
        how += f" Review-sample annotation set: **{records['set']}** ({records['reason']})."
    splits = (how + " All reviews of a paper share one split.\n\n"
              + _md_table(["split", "papers", "reviews", "units", "per source"], split_rows))
    found = (f"Gold rationale snippets found in the input texts (of {leak['snippets_checked']} checked; "
             f"near-verbatim = partial ratio >= {leak['near_verbatim_threshold']:g}): "
             f"{leak['snippets_verbatim_before_guard']} verbatim and {leak['snippets_near_verbatim_before_guard']} "
             f"near-verbatim before the guard, {leak['snippets_verbatim_in_inputs']} verbatim and "
             f"{leak['snippets_near_verbatim_in_inputs']} near-verbatim after it.")
    if leak["enabled"]:
        records = ", ".join(f"{k} {v}" for k, v in leak["records_removed"].items() if v) or "none"
        leakage = (
            f"On. Review material was removed from {leak['texts_cleaned']} texts: {leak['top_boxes_removed']} top "
            f"boxes, appended review records ({records}), {leak['running_headers_removed']} running headers, "
            f"{leak['status_lines_removed']} status brackets, {leak['status_marks_removed']} status-mark lines "
            f"({leak['chars_removed']} characters). " + found
        )
    else:
        leakage = ("OFF (built with --no-leakage-guard): texts may contain the venue's published referee reports. "
                   + found)
    summary = {k: report[k] for k in ("seed", "papers", "reviews")}
    summary["units_kept"] = units["kept"]
    values = {
        "version": report["surveyalign_version"],
        "n_papers": report["papers"],
        "n_reviews": report["reviews"],
        "n_units": units["kept"],
        "seed": report["seed"],
        "provenance": provenance,
        "filtering": filtering,
        "splits": splits,
        "leakage": leakage,
        "leakage_enabled": "on" if leak["enabled"] else "off",
        "report_summary": "```json\n" + json.dumps(summary, indent=2) + "\n```",
        "input_sha256": inp["sha256"],
        "annotation": (annotation.strip() + "\n\n") if annotation else "",
    }
    body = string.Template(template_text()).safe_substitute(values)
    return "---\n" + front_matter(report, rows) + "\n---\n\n" + body.lstrip()

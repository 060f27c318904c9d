"""Write the final labels in the official SurveyReview release layout (SurveyReview §4, App. A-B).

The folder reads back with ``surveyalign data build --official OUT`` unchanged::

    OUT/raw/train_samples.json, OUT/raw/test_samples.json          one record per review (version)
    OUT/train/grouped_trainset.json, OUT/test/grouped_testset.json  one record per reviewer of a paper (versions merged)
    OUT/articles/articles_part<N>.json                              {paper key: survey markdown}
    OUT/final_labels.jsonl                                          one line per unit: label, the rule that decided
                                                                    it, who gave which label, released or not
    OUT/provenance.json                                             sources, counts per stage and source, annotator
                                                                    model, guideline, agreement tables, rules
    OUT/ANNOTATION.md                                               the dataset card's annotation section

A record: ``{"uid", "paper_title", "paper_abstract", "review_content", "source", "paper_title_zh",
"paper_abstract_zh", "review_content_zh", "result": [{"dimension" (capitalised), "score" (float), "reasons"}]}``.
Scores keep the initial space: 0 (not mentioned) and -3 (unjudgeable) are written as the authors' release does,
and ``data build`` leaves them out of training and evaluation. Units without a final label (unresolved, not
annotated) are not written; they are counted in ``provenance.json``.

Split: papers go to train or test by source, seeded (``surveyalign.data.split_papers``: 75/25 by default; its
validation papers are written to the train files, where ``data build`` carves validation again), or all to one
split (``split="test"`` / ``"train"``).
"""

from __future__ import annotations

import json
import os
import time
from collections import Counter, defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from surveyalign import __version__
from surveyalign.constants import DIMENSIONS
from surveyalign.data import split_papers
from surveyalign.data.readers import FINAL_LABELS_FILE

from .adjudicate import RELEASED_RULES
from .agreement import render_table
from .records import (
    GUIDELINE_VERSION,
    ReviewRecord,
    SurveyRecord,
    label_name,
    review_uid,
    write_jsonl,
)

#: Split choices of :func:`write_release`.
RELEASE_SPLITS: tuple[str, ...] = ("paper-level", "test", "train")
#: Survey texts per articles shard.
SHARD_SIZE = 100
#: Per-source counts of ``data identify`` carried into the provenance's ``sources``.
_IDENTIFY_COUNTS: tuple[str, ...] = ("candidates", "keyword_match", "screened", "llm_yes", "proposed")


def _record(uid: str, survey: SurveyRecord | None, source: str, content: str, result: list[dict[str, Any]]
            ) -> dict[str, Any]:
    return {"uid": uid, "paper_title": survey.title if survey else "", "paper_abstract": survey.abstract if survey else "",
            "review_content": content, "source": source, "paper_title_zh": "", "paper_abstract_zh": "",
            "review_content_zh": "", "result": result}


def _result(finals: dict[tuple[str, str], dict[str, Any]], review_id: str) -> list[dict[str, Any]]:
    out = []
    for dim in DIMENSIONS:
        f = finals.get((review_id, dim))
        if f and f["rule"] in RELEASED_RULES and f["label"] is not None:
            out.append({"dimension": dim.capitalize(), "score": float(f["label"]), "reasons": list(f["snippets"])})
    return out


def source_counts(papers: dict[str, str], reviews: Sequence[ReviewRecord], written: set[str],
                  provenance: dict[str, Any]) -> dict[str, dict[str, int]]:
    """Per source, what each stage kept: the identification counts of ``data identify`` (``candidates``,
    ``keyword_match``, ``screened``, ``llm_yes``, ``proposed``; present when ``provenance["identification"]`` is),
    the person's check (``confirmed``; when ``provenance["collection"]["verification"]`` is), then the release's
    ``papers``, ``reviews`` and ``reviews_written``.

    Args:
        papers: ``{paper key: source}`` of the released papers.
        reviews: every collected review.
        written: the uids of the reviews written with a final label.
        provenance: the extra provenance entries of :func:`write_release`.

    Returns:
        ``{source: {count name: int}}``, sources sorted.
    """
    ident = (provenance.get("identification") or {}).get("per_source") or {}
    verified = ((provenance.get("collection") or {}).get("verification") or {}).get("per_source") or {}
    out: dict[str, dict[str, int]] = {}
    for source in sorted(set(ident) | set(verified) | set(papers.values()) | {r.source for r in reviews}):
        row = {k: int(ident[source].get(k, 0)) for k in _IDENTIFY_COUNTS} if source in ident else {}
        if verified:
            row["confirmed"] = int((verified.get(source) or {}).get("confirmed", 0))
        row.update(papers=sum(s == source for s in papers.values()),
                   reviews=sum(r.source == source for r in reviews),
                   reviews_written=sum(r.source == source and r.review_id in written for r in reviews))
        out[source] = row
    return out


def _final_rows(finals: dict[tuple[str, str], dict[str, Any]], written: set[tuple[str, str]],
                given: dict[tuple[str, str], dict[str, int]]) -> list[dict[str, Any]]:
    rows = []
    for (rid, dim), f in sorted(finals.items()):
        rows.append({"review_id": rid, "dimension": dim, "label": f["label"], "rule": f["rule"],
                     "released": (rid, dim) in written, "annotators": list(f.get("annotators", [])),
                     "labels": {who: label_name(x) for who, x in sorted((given.get((rid, dim)) or {}).items())},
                     "snippets": list(f.get("snippets", []))})
    return rows


def write_release(out: str | os.PathLike, surveys: Sequence[SurveyRecord], reviews: Sequence[ReviewRecord],
                  finals: dict[tuple[str, str], dict[str, Any]], *, split: str = "paper-level", seed: int = 42,
                  test_fraction: float = 0.25, provenance: dict[str, Any] | None = None,
                  agreement: dict[str, dict[str, Any]] | None = None,
                  given: dict[tuple[str, str], dict[str, int]] | None = None) -> dict[str, Any]:
    """Write the release folder (see the module docstring) and return its provenance.

    Args:
        out: the release folder (created; existing release files in it are replaced).
        surveys: the surveys (``surveys.jsonl``).
        reviews: the reviews (``reviews.jsonl``).
        finals: :func:`surveyalign.annotation.final_labels` output.
        split: one of :data:`RELEASE_SPLITS`.
        seed: split seed.
        test_fraction: share of each source's papers in test (paper-level split).
        provenance: extra entries for ``provenance.json`` (sources, identification and collection counts,
            annotator model, adjudication report).
        agreement: ``{title: agreement table}`` (:func:`surveyalign.annotation.agreement_table`) for the
            provenance and the card section.
        given: ``{(review_id, dimension): {annotator: label}}``, the labels each annotator gave (people and
            ``"llm"``), written beside each final label in ``final_labels.jsonl``.

    Returns:
        The provenance dict written to ``provenance.json``.

    Raises:
        ValueError: an unknown split, or a review whose paper is not among ``surveys``.
    """
    if split not in RELEASE_SPLITS:
        raise ValueError(f"unknown split {split!r}; expected one of {', '.join(RELEASE_SPLITS)}")
    out = Path(out)
    by_paper = {s.paper_id: s for s in surveys}
    missing = sorted({r.paper_id for r in reviews} - set(by_paper))
    if missing:
        raise ValueError(f"review(s) of paper {missing[0]} whose survey is not in surveys.jsonl")
    papers = sorted({r.paper_id for r in reviews})
    if split == "paper-level":
        assignment = {p: ("test" if s == "test" else "train") for p, s in split_papers(
            {p: by_paper[p].source for p in papers}, seed=seed, test_fraction=test_fraction).items()}
    else:
        assignment = {p: split for p in papers}
    provenance = provenance or {}
    raw: dict[str, list[dict[str, Any]]] = defaultdict(list)
    grouped: dict[str, list[dict[str, Any]]] = defaultdict(list)
    without_labels: list[str] = []
    per_reviewer: dict[tuple[str, int], list[ReviewRecord]] = defaultdict(list)
    for r in sorted(reviews, key=lambda r: (r.paper_id, r.reviewer_index, r.version)):
        result = _result(finals, r.review_id)
        if not result:
            without_labels.append(r.review_id)
            continue
        raw[assignment[r.paper_id]].append(_record(r.review_id, by_paper[r.paper_id], r.source, r.text, result))
        per_reviewer[(r.paper_id, r.reviewer_index)].append(r)
    for (paper, index), rounds in per_reviewer.items():
        merged: dict[str, dict[str, Any]] = {}
        for r in rounds:  # in version order: a later round's label replaces an earlier one
            for item in _result(finals, r.review_id):
                merged[item["dimension"]] = item
        last = rounds[-1]
        content = "\n\n".join(r.text for r in rounds)
        uid = review_uid(last.source, paper.split("-", 1)[1], last.version, index)
        grouped[assignment[paper]].append(_record(uid, by_paper[paper], last.source, content,
                                                  [merged[d.capitalize()] for d in DIMENSIONS
                                                   if d.capitalize() in merged]))
    files: list[str] = []
    for name, sets in (("raw/{}_samples.json", raw), ("{0}/grouped_{0}set.json", grouped)):
        for part in ("train", "test"):
            path = out / name.format(part)
            if path.exists():
                path.unlink()
            if sets.get(part):
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(json.dumps(sets[part], indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
                files.append(path.relative_to(out).as_posix())
    texts = {p: by_paper[p].text for p in papers if by_paper[p].text}
    (out / "articles").mkdir(parents=True, exist_ok=True)
    for old in (out / "articles").glob("articles_part*.json"):
        old.unlink()
    keys = sorted(texts)
    for n in range(0, len(keys), SHARD_SIZE):
        path = out / "articles" / f"articles_part{n // SHARD_SIZE + 1}.json"
        path.write_text(json.dumps({k: texts[k] for k in keys[n:n + SHARD_SIZE]}, indent=1, ensure_ascii=False)
                        + "\n", encoding="utf-8")
        files.append(path.relative_to(out).as_posix())
    written = {(rec["uid"], item["dimension"].lower()) for recs in raw.values() for rec in recs
               for item in rec["result"]}
    write_jsonl(out / FINAL_LABELS_FILE, _final_rows(finals, written, given or {}))
    labels = Counter()
    rules = Counter()
    for (rid, dim), f in finals.items():
        rules[f["rule"]] += 1
        if f["rule"] in RELEASED_RULES and f["label"] is not None:
            labels[(dim, label_name(f["label"]))] += 1
    prov = {
        "surveyalign_version": __version__,
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "guideline_version": GUIDELINE_VERSION,
        "files": files,
        "final_labels_file": FINAL_LABELS_FILE,
        "papers": len(papers),
        "papers_per_source": dict(sorted(Counter(by_paper[p].source for p in papers).items())),
        "sources": source_counts({p: by_paper[p].source for p in papers}, reviews, {u for u, _ in written},
                                 provenance),
        "papers_without_text": sorted(p for p in papers if p not in texts),
        "reviews": len(reviews),
        "reviews_written": sum(len(v) for v in raw.values()),
        "reviews_without_final_label": without_labels,
        "split": {"policy": split, "seed": seed, "test_fraction": test_fraction if split == "paper-level" else None,
                  "papers": dict(sorted(Counter(assignment.values()).items()))},
        "final_label_rules": {r: rules[r] for r in sorted(rules)},
        "labels": {d: {label_name(x): labels[(d, label_name(x))] for x in (-3, -2, -1, 0, 1, 2)} for d in DIMENSIONS},
        "excluded_from_training_and_evaluation": "labels 0 (not mentioned) and -3 (unjudgeable), dropped by "
                                                 "`surveyalign data build`",
        **provenance,
        "agreement": agreement or {},
    }
    (out / "provenance.json").write_text(json.dumps(prov, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    (out / "ANNOTATION.md").write_text(card_section(prov, agreement or {}), encoding="utf-8")
    return prov


def annotator_line(description: dict[str, Any] | None) -> str:
    """The annotator model in one line for the card: backend kind, model and decoding settings of the judge
    description ``AnnotationJudge.describe()`` (``{"backend": {"kind", "options"}, "generation": {...}}``);
    options other than the model (scripted replies, endpoints) are left to ``provenance.json``.

    >>> annotator_line({"backend": {"kind": "openai", "options": {"model": "gpt-5.2"}},
    ...                 "generation": {"temperature": 0.0, "max_new_tokens": 2048}})
    'backend `openai`, model `gpt-5.2`, temperature 0, max_new_tokens 2048'
    """
    if not description:
        return "none recorded"
    backend = description.get("backend") or {}
    options = backend.get("options") or {}
    generation = description.get("generation") or {}
    parts = [f"backend `{backend.get('kind', '?')}`"]
    if options.get("model"):
        parts.append(f"model `{options['model']}`")
    if generation.get("temperature") is not None and "temperature" not in (generation.get("omit") or ()):
        parts.append(f"temperature {generation['temperature']:g}")
    if generation.get("max_new_tokens") is not None:
        parts.append(f"max_new_tokens {generation['max_new_tokens']}")
    if generation.get("omit"):
        parts.append(f"not sent: {', '.join(generation['omit'])}")
    return ", ".join(parts)


def _identification_lines(prov: dict[str, Any]) -> list[str]:
    """The card's line on §4.1 (empty when the release was made without ``data identify``'s report)."""
    total = (prov.get("identification") or {}).get("total")
    if not total:
        return []
    confirmed = ((prov.get("collection") or {}).get("verification") or {}).get("total", {}).get("confirmed")
    return [f"- Identification: {total.get('candidates', 0)} candidate papers, {total.get('keyword_match', 0)} "
            f"with a title keyword, {total.get('screened', 0)} screened by the LLM ({total.get('llm_yes', 0)} yes), "
            f"{total.get('proposed', 0)} proposed"
            + (f", {confirmed} confirmed by a person" if confirmed is not None else "") + "."]


def card_section(prov: dict[str, Any], agreement: dict[str, dict[str, Any]]) -> str:
    """The dataset card's annotation section (markdown) from a release's provenance and agreement tables."""
    judge = prov.get("annotator_model") or {}
    lines = [
        "## Annotation", "",
        (f"Each (survey, review, dimension) unit was labelled with one of six labels, +2, +1, -1, -2, 0 or -3 (0: the "
        f"review does not mention the dimension; -3: its verdict cannot be told; both are left out of training and "
        f"evaluation) with the review sentences that support the label (guideline `{prov['guideline_version']}`)."),
        "",
        *_identification_lines(prov),
        (f"- Papers: {prov['papers']} ({', '.join(f'{k} {v}' for k, v in prov['papers_per_source'].items())}); "
        f"reviews: {prov['reviews']} ({prov['reviews_written']} with a final label)."),
        (f"- Pre-annotation: {annotator_line(judge.get('description'))} (prompt "
        f"`{prov.get('prompt_version') or 'n/a'}`); every snippet was checked against its review, flagged ones were "
        "never released as verbatim."),
        f"- Human verification in Label Studio by {len(prov.get('human_annotators', []))} annotator(s).",
        "- How each final label was decided: " + ", ".join(f"{k} {v}" for k, v in prov["final_label_rules"].items()),
        "",
    ]
    for title, table in agreement.items():
        lines.append(render_table(table, title))
    return "\n".join(lines) + "\n"

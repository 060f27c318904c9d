"""Citation precision / recall / F1 of a survey against its topic's reference list, both lists normalised to paper
ids through a scholarly API (PaperOrchestra App. F.3's citation F1 without the P0/P1 partition).

Each reference (title, DOI, arXiv id) is resolved with :func:`surveyalign.knowledge.resolve_references` (ids
first, then a checked title search: never a top hit taken blindly), so a survey naming a paper by its arXiv id and
a reference list naming it by DOI or by a differently written title meet on one id. The sets are compared with
:func:`surveyalign.autoraters.citation_f1` (``official`` variant, no partition: every id against every id);
unresolved references are left out of the sets and counted on each side. Resolutions are kept in
``OUT/resolutions.jsonl`` (keyed by API, normalised title, DOI, arXiv id and year), so a re-run asks the API only
for references it has not resolved yet (a failed request is asked again).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from surveyalign.autoraters import citation_f1
from surveyalign.documents import Reference
from surveyalign.documents.matching import normalise_title

__all__ = ["ResolutionCache", "citation_scores"]


class ResolutionCache:
    """Resolved references of a run (``resolutions.jsonl``), asked of the API only when not known.

    Args:
        path: the JSONL file (created on first write).
        api: the API name (part of every key).
        client_factory: ``() -> client`` building the scholarly client on first need (a re-run with every
            reference known builds none and sends nothing).
        search_limit: search hits checked per reference without an id match.
    """

    def __init__(self, path: str | Path, api: str, client_factory: Callable[[], Any], search_limit: int = 5) -> None:
        self.path = Path(path)
        self.api = api
        self.client_factory = client_factory
        self.search_limit = search_limit
        self.known: dict[str, dict[str, Any]] = {}
        self.n_asked = 0
        self.errors: list[str] = []
        if self.path.is_file():
            for number, line in enumerate(self.path.read_text(encoding="utf-8").splitlines(), start=1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                    self.known[row["key"]] = row
                except (ValueError, KeyError, TypeError):
                    raise ValueError(f"{self.path}: line {number}: not a resolution record (delete the line to "
                                     "resolve it again)") from None

    def key(self, ref: Reference) -> str:
        """The cache key of ``ref``."""
        return json.dumps([self.api, normalise_title(ref.title), ref.doi, ref.arxiv_id, ref.year])

    def unknown(self, refs: Sequence[Reference]) -> list[Reference]:
        """The references of ``refs`` not resolved yet, one per key."""
        out: dict[str, Reference] = {}
        for ref in refs:
            key = self.key(ref)
            if key not in self.known and key not in out:
                out[key] = ref
        return list(out.values())

    def resolve(self, refs: Sequence[Reference]) -> list[dict[str, Any]]:
        """``{"paper_id", "method", "reason"}`` of each reference, in order (the unknown ones asked in one go).

        Raises:
            UnreachableError: the API cannot be reached at all.
        """
        todo = self.unknown(refs)
        if todo:
            from surveyalign.knowledge import resolve_references

            errors: list[str] = []
            resolutions, _ = resolve_references(self.client_factory(), todo, search_limit=self.search_limit,
                                                errors=errors)
            self.n_asked += len(todo)
            self.errors += errors
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a", encoding="utf-8") as handle:
                for ref, res in zip(todo, resolutions, strict=True):
                    row = {"key": self.key(ref), "paper_id": res.paper_id, "method": res.method, "reason": res.reason}
                    if res.reason.startswith("search failed"):  # asked again on a re-run
                        self.known[row["key"]] = {**row, "transient": True}
                        continue
                    self.known[row["key"]] = row
                    handle.write(json.dumps(row) + "\n")
        return [{k: self.known[self.key(r)][k] for k in ("paper_id", "method", "reason")} for r in refs]


def citation_scores(survey_refs: Sequence[Reference], topic_refs: Sequence[Reference], cache: ResolutionCache
                    ) -> dict[str, Any]:
    """Citation precision / recall / F1 of a survey's reference list against its topic's (module docstring).

    Args:
        survey_refs: the survey's references.
        topic_refs: the references a survey of the topic should cite.
        cache: the resolution cache (and API).

    Returns:
        ``{"precision", "recall", "f1" (in [0, 1]), "n_matched", "n_survey_ids", "n_topic_ids",
        "n_survey_references", "n_topic_references", "n_unresolved_survey", "n_unresolved_topic", "flags",
        "matched": [ids], "unresolved_survey": [titles], "unresolved_topic": [titles]}``.
    """
    got = cache.resolve([*survey_refs, *topic_refs])
    mine, theirs = got[:len(survey_refs)], got[len(survey_refs):]
    gen_ids = {str(i + 1): r["paper_id"] for i, r in enumerate(mine)}
    gt_ids = {str(i + 1): r["paper_id"] for i, r in enumerate(theirs)}
    result = citation_f1(gt_ids, gen_ids, {}, variant="official")
    overall = result.overall
    return {"precision": overall.precision, "recall": overall.recall, "f1": overall.f1,
            "n_matched": overall.n_matched, "n_survey_ids": overall.n_generated, "n_topic_ids": overall.n_ground_truth,
            "n_survey_references": len(survey_refs), "n_topic_references": len(topic_refs),
            "n_unresolved_survey": result.generated.n_unresolved, "n_unresolved_topic": result.ground_truth.n_unresolved,
            "flags": list(overall.flags),
            "matched": sorted({i for i in gen_ids.values() if i} & {i for i in gt_ids.values() if i}),
            "unresolved_survey": [r.title or r.raw for r, x in zip(survey_refs, mine, strict=True) if not x["paper_id"]],
            "unresolved_topic": [r.title or r.raw for r, x in zip(topic_refs, theirs, strict=True) if not x["paper_id"]]}

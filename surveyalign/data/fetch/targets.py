"""The papers of a release whose texts are to be fetched (SurveyReview §4, App. A).

Every review record of the release names a uid, a source, a paper title and an abstract. Both annotation sets
(raw and grouped files) are read: a build takes one of them, and each needs its texts; the verbatim check
uses the rationales of both. Reviews of one paper share a fetch: MOPRD uids by their paper and version parts
("moprd-8120-1-r2" -> paper 8120, version 1), other sources by source and normalised title. A uid whose text
the release already holds (``articles*.json`` or a text field of the record) is not fetched again.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from surveyalign.documents import fingerprint

from ..layout import RECORD_SETS
from ..readers import (
    paper_key_from_uid,
    read_release,
    source_from_uid,
    version_from_uid,
)


@dataclass
class PaperTarget:
    """One paper (one version) to fetch, with every uid that reviews it.

    Attributes:
        key: stable key of the target: ``"moprd-8120-v1"`` for MOPRD, else ``"<source>-<16 hex of the title
            fingerprint>"`` (``"<source>-<uid>"`` when the record has no title).
        source: "f1000", "moprd", "openreview" or "unknown".
        uids: review uids that get this text, sorted.
        title: paper title from the release.
        abstract: paper abstract from the release ("" when absent).
        paper_id: paper number the uid names (MOPRD: "8120"), else None.
        version: version the uid names (MOPRD: the number after the paper), else None.
        rationales: every gold rationale snippet of those uids (for the verbatim check), deduplicated.
        present: uids whose text the release already holds (not fetched again).
    """

    key: str
    source: str
    uids: list[str]
    title: str
    abstract: str = ""
    paper_id: str | None = None
    version: int | None = None
    rationales: list[str] = field(default_factory=list)
    present: list[str] = field(default_factory=list)

    @property
    def missing(self) -> list[str]:
        """Uids without a text yet."""
        return [u for u in self.uids if u not in set(self.present)]


def release_targets(official: Path | str, *, sources: Path | str | None = None) -> list[PaperTarget]:
    """Group the review records of a release into the papers to fetch.

    Args:
        official: release folder (or one raw JSON file), read with :func:`surveyalign.data.read_release`, once
            per annotation set it holds.
        sources: optional ``{uid: source}`` mapping file (as for ``surveyalign data build``).

    Returns:
        Targets sorted by key; each uid is in exactly one target.

    Raises:
        FileNotFoundError, ReleaseFormatError: as :func:`surveyalign.data.read_release`.
    """
    release = read_release(official, sources=sources)
    sets = [read_release(official, sources=sources, records=name) for name in RECORD_SETS
            if name != release.record_set and release.ignored_files] if release.record_set else []
    by_uid: dict[str, dict] = {}
    for unit in [u for r in (release, *sets) for u in r.units]:
        entry = by_uid.setdefault(unit.uid, {"title": "", "abstract": "", "source": None, "reasons": [],
                                             "text": False})
        entry["title"] = entry["title"] or unit.title
        entry["abstract"] = entry["abstract"] or unit.abstract
        entry["source"] = entry["source"] or unit.source
        entry["reasons"].extend(unit.rationales)
        entry["text"] = entry["text"] or unit.text is not None
    groups: dict[str, list[str]] = defaultdict(list)
    for uid, entry in by_uid.items():
        source = (entry["source"] or source_from_uid(uid) or release.source_map.get(uid)
                  or release.source_map.get(paper_key_from_uid(uid) or "") or "unknown")
        entry["source"] = source
        paper, version = paper_key_from_uid(uid), version_from_uid(uid)
        if source == "moprd" and paper:
            key = f"{paper}-v{version}"
        elif entry["title"]:
            key = f"{source}-{fingerprint(entry['title'])[:16]}"
        else:
            key = f"{source}-{uid}"
        groups[key].append(uid)
    targets = []
    for key, uids in sorted(groups.items()):
        uids.sort()
        first = by_uid[uids[0]]
        paper = paper_key_from_uid(uids[0])
        present = [u for u in uids if by_uid[u]["text"] or u in release.articles
                   or (paper_key_from_uid(u) or "") in release.articles]
        reasons = list(dict.fromkeys(r for u in uids for r in by_uid[u]["reasons"]))
        targets.append(PaperTarget(
            key=key, source=first["source"], uids=uids,
            title=next((by_uid[u]["title"] for u in uids if by_uid[u]["title"]), ""),
            abstract=next((by_uid[u]["abstract"] for u in uids if by_uid[u]["abstract"]), ""),
            paper_id=paper.split("-", 1)[1] if paper and first["source"] == "moprd" else None,
            version=version_from_uid(uids[0]) if first["source"] == "moprd" else None,
            rationales=reasons, present=present,
        ))
    return targets

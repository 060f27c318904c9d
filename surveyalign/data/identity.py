"""Paper identity of the annotated reviews (SurveyReview §4.4: all reviews of one paper share a split)."""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Mapping, Sequence

from surveyalign.documents import extract_title, fingerprint

from .readers import RawUnit


class _UnionFind:
    def __init__(self) -> None:
        self.parent: dict[str, str] = {}

    def find(self, x: str) -> str:
        self.parent.setdefault(x, x)
        while self.parent[x] != x:
            self.parent[x] = self.parent[self.parent[x]]
            x = self.parent[x]
        return x

    def union(self, a: str, b: str) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[max(ra, rb)] = min(ra, rb)


def identify_papers(kept: Sequence[RawUnit], unit_key: Sequence[str], cleaned: Mapping[str, str]) -> tuple[list[str], list[str]]:
    """Group reviews into papers and name each paper.

    A unit's paper is the paper key its uid encodes (the uid itself in the per-dimension layout,
    "moprd-<paper>" for MOPRD review uids), merged with every paper sharing a normalised title of three words
    or more, or the same text when there is no such title. A group's id is its smallest paper key, else
    "paper-" + a hash of its members.

    Args:
        kept: the units kept after the score filter.
        unit_key: per unit, the key of its text in ``cleaned`` ("" when it has none).
        cleaned: ``{text key: text after the leakage guard}``.

    Returns:
        ``(unit_paper, unit_title)``: per unit, its paper id and its title ("" when unknown).
    """
    uf = _UnionFind()
    unit_node: list[str] = []
    unit_title: list[str] = []
    text_titles: dict[str, str] = {}
    text_prints: dict[str, str] = {}
    for i, unit in enumerate(kept):
        text = cleaned.get(unit_key[i], "") if unit_key[i] else ""
        if unit.title:
            title = unit.title
        else:
            if unit_key[i] not in text_titles:
                text_titles[unit_key[i]] = extract_title(text) if text else ""
            title = text_titles[unit_key[i]]
        unit_title.append(title)
        node = f"k:{unit.paper_key}" if unit.paper_key else f"r:{unit.review_id}"
        uf.find(node)
        fp = fingerprint(title) if len(title.split()) >= 3 else ""
        if not fp and text:
            if unit_key[i] not in text_prints:
                text_prints[unit_key[i]] = fingerprint(text)
            fp = text_prints[unit_key[i]]
        if fp:
            uf.union(node, f"f:{fp}")
        unit_node.append(node)
    groups: dict[str, list[str]] = defaultdict(list)
    for node in set(uf.parent):
        groups[uf.find(node)].append(node)
    paper_of_root: dict[str, str] = {}
    for root, nodes in groups.items():
        keys = sorted(n[2:] for n in nodes if n.startswith("k:"))
        if keys:
            paper_of_root[root] = keys[0]
        else:
            paper_of_root[root] = "paper-" + hashlib.sha256(min(nodes).encode()).hexdigest()[:12]
    unit_paper = [paper_of_root[uf.find(n)] for n in unit_node]
    return unit_paper, unit_title

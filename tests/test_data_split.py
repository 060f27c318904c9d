"""Paper-level, source-stratified split and the markdown helpers behind title/abstract/references."""

from __future__ import annotations

from collections import Counter

import pytest

from surveyalign.data import split_papers
from surveyalign.documents import (
    extract_abstract,
    extract_references,
    extract_title,
    fingerprint,
)


def _papers(**per_source: int) -> dict[str, str]:
    return {f"{src}-{i:03d}": src for src, n in per_source.items() for i in range(n)}


def test_split_is_stratified_with_round_half_up():
    papers = _papers(f1000=40, moprd=14, openreview=6)
    split = split_papers(papers, seed=42)
    counts = Counter((papers[p], s) for p, s in split.items())
    # test = floor(n/4 + 1/2): 10, 4 (3.5 -> 4), 2 (1.5 -> 2); validation = floor(0.1 x train + 1/2): 3, 1, 0
    assert counts == {
        ("f1000", "test"): 10, ("f1000", "validation"): 3, ("f1000", "train"): 27,
        ("moprd", "test"): 4, ("moprd", "validation"): 1, ("moprd", "train"): 9,
        ("openreview", "test"): 2, ("openreview", "train"): 4,
    }


def test_split_matches_the_paper_proportions():
    # SurveyReview §4.4: 675 papers; 75/25 at paper level, then 90/10 train/validation
    papers = _papers(f1000=440, moprd=150, openreview=85)
    split = Counter(split_papers(papers, seed=0).values())
    assert split == {"test": 110 + 38 + 21, "validation": 33 + 11 + 6, "train": 297 + 101 + 58}


def test_split_deterministic_and_seed_dependent():
    papers = _papers(f1000=30, moprd=10)
    a = split_papers(papers, seed=42)
    assert a == split_papers(dict(reversed(list(papers.items()))), seed=42)  # input order does not matter
    b = split_papers(papers, seed=7)
    assert a != b and Counter(a.values()) == Counter(b.values())


def test_split_small_sets_keep_test_and_validation_non_empty():
    assert split_papers({"only": "f1000"}, seed=1) == {"only": "train"}
    two = split_papers({"x": "moprd", "y": "moprd"}, seed=1)
    assert sorted(two.values()) == ["test", "train"]  # 0.5 rounds up to one test paper; one left in train
    three = split_papers({"x": "f1000", "y": "moprd", "z": "openreview"}, seed=1)
    assert sorted(three.values()) == ["test", "train", "validation"]


def test_split_rejects_bad_fractions():
    with pytest.raises(ValueError, match="test_fraction"):
        split_papers({"a": "f1000"}, test_fraction=1.5)
    with pytest.raises(ValueError, match="validation_fraction"):
        split_papers({"a": "f1000"}, validation_fraction=1.0)
    with pytest.raises(ValueError, match="validation_fraction"):
        split_papers({"a": "f1000"}, validation_fraction=-0.1)


def test_test_fraction_one_puts_every_paper_in_test_and_zero_none():
    papers = {f"p{i}": ("f1000" if i % 2 else "moprd") for i in range(8)}
    assert set(split_papers(papers, test_fraction=1.0).values()) == {"test"}
    zero = Counter(split_papers(papers, test_fraction=0.0, validation_fraction=0.0).values())
    assert zero == {"train": 8}  # a fraction of 0 is not topped up to one paper


def test_markdown_helpers():
    text = ("Preprint notice\n\n# Deep Clustering: A Survey\n\n**Abstract:**\n\nWe review deep clustering.\n\n"
            "## 1 Introduction\n\nSee [1].\n\n## 6 Bibliography\n\n[1] Xie, J. DEC. 2016.\n    ICML.\n"
            "[2] Caron, M. DeepCluster. 2018.\n")
    assert extract_title(text) == "Deep Clustering: A Survey"
    assert extract_abstract(text) == "We review deep clustering."
    assert extract_references(text) == ["Xie, J. DEC. 2016. ICML.", "Caron, M. DeepCluster. 2018."]
    assert extract_title("## Only a second-level heading\ntext") == "Only a second-level heading"
    assert extract_title("\n\nplain first line\nmore") == "plain first line"
    assert extract_abstract("# T\n\nno abstract here") == "" and extract_references("# T\n") == []
    assert fingerprint("Graph  Sampling: a Review!") == fingerprint("graph sampling - A REVIEW")
    assert fingerprint("...") == ""

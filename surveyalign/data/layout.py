"""What the authors' release layout says by its file names: the declared split and the annotation set.

    raw/train_samples.json, raw/test_samples.json           review samples, "raw" annotation set
    train/grouped_trainset.json, test/grouped_testset.json  review samples, "grouped" annotation set
    testset/<dimension>.json                                per-dimension test labels
    articles/articles4test.json, articles/articles_part*.json  survey texts {uid: markdown}
"""

from __future__ import annotations

import re
from pathlib import Path

#: Annotation sets of the review-sample files; "grouped" is what the authors' training script reads by default.
RECORD_SETS: tuple[str, ...] = ("grouped", "raw")


def declared_split(file: Path, root: Path) -> str | None:
    """The split a release file names: "train" or "test" from its file name, else from its folders, else None.

    ``raw/train_samples.json``, ``train/grouped_trainset.json`` -> "train"; ``raw/test_samples.json``,
    ``test/grouped_testset.json``, ``testset/<dimension>.json`` -> "test" (the authors' release layout).

    Args:
        file: a label file of the release.
        root: the release folder (only the part of ``file`` below it is looked at).

    Returns:
        "train", "test" or None.
    """
    try:
        parts = file.relative_to(root).parts if root.is_dir() else (file.name,)
    except ValueError:
        parts = (file.name,)
    names = [Path(parts[-1]).stem.lower(), *(p.lower() for p in reversed(parts[:-1]))]
    for name in names:
        words = set(re.split(r"[^a-z]+", name))
        if words & {"train", "trainset", "training"} or name.endswith("trainset"):
            return "train"
        if words & {"test", "testset", "tests"} or name.endswith("testset"):
            return "test"
    return None


def record_set_of(file: Path, root: Path) -> str:
    """The annotation set of a review-sample file: "grouped" when its name or a folder says so, else "raw".

    Args:
        file: a review-sample file of the release.
        root: the release folder (only the part of ``file`` below it is looked at).

    Returns:
        "grouped" or "raw" (one of :data:`RECORD_SETS`).
    """
    try:
        parts = file.relative_to(root).parts if root.is_dir() else (file.name,)
    except ValueError:
        parts = (file.name,)
    return "grouped" if any("grouped" in p.lower() for p in parts) else "raw"


def is_sample_file(data: object) -> bool:
    """A non-empty JSON array of review samples: objects of which at least one carries a ``result`` list.

    (A record without ``result`` in such a file is then reported as missing it.)
    """
    return (isinstance(data, list) and bool(data) and all(isinstance(r, dict) for r in data)
            and any("result" in r for r in data))


def portable_names(files: list[Path], root: Path) -> list[str]:
    """``files`` relative to ``root`` (POSIX form), for messages and reports.

    Args:
        files: files of the release.
        root: the release folder (or the single release file).

    Returns:
        One relative path per file (its bare name when it lies outside ``root``).
    """
    out = []
    for f in files:
        try:
            out.append(f.relative_to(root).as_posix() if root.is_dir() else f.name)
        except ValueError:
            out.append(f.name)
    return out

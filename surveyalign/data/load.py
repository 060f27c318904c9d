"""Loading a built SurveyReview folder and locating the shipped sample release (``surveyalign/data/schema.py``)."""

from __future__ import annotations

import os
from pathlib import Path

from surveyalign.constants import DIMENSIONS, SPLITS, Dimension
from surveyalign.paths import resource_path

from .schema import ALL_CONFIG


def sample_release_dir() -> Path:
    """Folder of the small made-up release shipped with the package (per-dimension layout + sources.json).

    Returns:
        ``surveyalign/resources/sample_release`` (``annotations/<dimension>.json``, ``articles/articles4test.json``,
        ``sources.json``). Its papers, reviews and scores are invented; it exists for the demo and tests.
    """
    return resource_path("sample_release")


def load_surveyreview(path: str | os.PathLike, dimension: Dimension | str = ALL_CONFIG, split: str | None = None):
    """Load a dataset folder written by :func:`surveyalign.data.build_dataset` (offline, no script).

    Args:
        path: the dataset folder (holding README.md with the configs and ``data/``).
        dimension: a :data:`~surveyalign.constants.Dimension` (parsed at the edge: flag, config or row) or "all".
        split: "train", "validation", "test" or None for all three.

    Returns:
        ``datasets.DatasetDict`` with splits train/validation/test, or one ``datasets.Dataset`` when
        ``split`` is given. Columns as in :data:`surveyalign.data.schema.COLUMNS`.

    Raises:
        FileNotFoundError: ``path`` is not a built folder (a release folder is named as such, with the build
            command).
        ValueError: unknown dimension or split.
    """
    from datasets import load_dataset

    folder = Path(path)
    check_built_folder(folder)
    config = dimension
    if config != ALL_CONFIG and config not in DIMENSIONS:  # not parsed here: a wrong name would load nothing
        raise ValueError(f"unknown dimension {dimension!r}; expected one of {', '.join(DIMENSIONS)} or {ALL_CONFIG}")
    if split is not None and split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; expected one of {', '.join(SPLITS)}")
    from datasets import Dataset, DatasetDict

    from .schema import surveyreview_features

    if config != ALL_CONFIG and config not in _declared_configs(folder):
        loaded = {}  # the release has no unit of this dimension: every split comes back empty
    else:
        # an absolute path: never a Hub name, and never a cached build of another folder of the same name; the
        # README's config descriptions carry the content hash, so a rebuilt folder gets a fresh cache entry
        loaded = load_dataset(str(folder.resolve()), config)
    splits = {}
    for name in SPLITS:  # a split without rows has no data file; give it back empty
        if name in loaded:
            splits[name] = loaded[name]
        else:
            features = surveyreview_features()
            splits[name] = Dataset.from_dict({c: [] for c in features}, features=features)
    if split is not None:
        return splits[split]
    return DatasetDict(splits)


def load_train_scores(path: str | os.PathLike) -> dict[str, list[int]]:
    """The human scores of the ``train`` split per dimension (the majority / prior-sampling baselines' labels).

    Args:
        path: a dataset folder written by :func:`surveyalign.data.build_dataset`.

    Returns:
        ``{dimension: [scores in dataset order]}`` (dimensions without train units are absent).

    Raises:
        FileNotFoundError: ``path`` is not a built dataset folder.
    """
    ds = load_surveyreview(path, dimension=ALL_CONFIG, split="train")
    out: dict[str, list[int]] = {}
    for dim, score in zip(ds["dimension"], ds["score"]):
        out.setdefault(dim, []).append(int(score))  # the build wrote canonical names
    return out


def _declared_configs(folder: Path) -> set[str]:
    """Config names declared in the dataset folder's README front matter (``configs: - config_name: ...``)."""
    import yaml

    text = (folder / "README.md").read_text(encoding="utf-8")
    if not text.startswith("---"):
        return set()
    front = text.split("---", 2)[1]
    meta = yaml.safe_load(front) or {}
    return {c.get("config_name") for c in meta.get("configs", []) if isinstance(c, dict)}


def check_built_folder(folder: Path) -> None:
    """Raise a clear error unless ``folder`` is a dataset folder written by ``surveyalign data build``.

    Args:
        folder: the folder given as a dataset.

    Raises:
        FileNotFoundError: the folder is missing, is a SurveyReview *release* (label/article JSON files, no
            build_report.json; the message shows the build command), or holds no README.md.
    """
    if not folder.is_dir():
        raise FileNotFoundError(f"dataset folder {folder} does not exist; build one with "
                                "`surveyalign data build --official RELEASE --out DIR`")
    if (folder / "build_report.json").is_file() and (folder / "README.md").is_file():
        return
    if _looks_like_release(folder):
        raise FileNotFoundError(
            f"{folder} is a SurveyReview release (its JSON label/article files), not a built dataset: build it "
            f"first with `surveyalign data build --official {folder} --out data/surveyreview` and pass the --out "
            "folder"
        )
    if not (folder / "README.md").is_file():
        raise FileNotFoundError(
            f"{folder} is not a SurveyReview dataset folder (no README.md); build one with "
            "`surveyalign data build --official RELEASE --out DIR`"
        )


def _looks_like_release(folder: Path) -> bool:
    """True when the folder holds release files: dimension files, review samples or articles JSON."""
    for file in folder.rglob("*.json"):
        stem = file.stem.lower()
        if stem in DIMENSIONS or "samples" in stem or "grouped" in stem or stem.startswith("articles"):
            return True
    return False

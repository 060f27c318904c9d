"""Loading a built SurveyReview folder and locating the shipped sample release (contract 1)."""

from __future__ import annotations

import os
from pathlib import Path

from surveyalign.constants import normalise_dimension

from .schema import ALL_CONFIG, SPLITS


def sample_release_dir() -> Path:
    """Folder of the small made-up release shipped with the package (per-dimension layout + sources.json).

    Returns:
        ``surveyalign/resources/sample_release`` (``testset/<dimension>.json``, ``articles/articles4test.json``,
        ``sources.json``). Its papers, reviews and scores are invented; it exists for the demo and tests.
    """
    return Path(__file__).resolve().parents[1] / "resources" / "sample_release"


def load_surveyreview(path: str | os.PathLike, dimension: str = ALL_CONFIG, split: str | None = None):
    """Load a dataset folder written by :func:`surveyalign.data.build_dataset` (offline, no script).

    Args:
        path: the dataset folder (holding README.md with the configs and ``data/``).
        dimension: a dimension name (any case) or "all".
        split: "train", "validation", "test" or None for all three.

    Returns:
        ``datasets.DatasetDict`` with splits train/validation/test, or one ``datasets.Dataset`` when
        ``split`` is given. Columns as in :data:`surveyalign.data.schema.COLUMNS`.

    Raises:
        FileNotFoundError: ``path`` holds no README.md (not a built folder).
        ValueError: unknown dimension or split.
    """
    from datasets import load_dataset

    folder = Path(path)
    if not (folder / "README.md").is_file():
        raise FileNotFoundError(
            f"{folder} is not a SurveyReview dataset folder (no README.md); build one with "
            "`surveyalign data build --official RELEASE --out DIR`"
        )
    config = ALL_CONFIG if str(dimension).strip().lower() == ALL_CONFIG else normalise_dimension(dimension)
    if split is not None and split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; expected one of {', '.join(SPLITS)}")
    from datasets import Dataset, DatasetDict

    from .schema import surveyreview_features

    if config != ALL_CONFIG and config not in _declared_configs(folder):
        loaded = {}  # the release has no unit of this dimension: every split comes back empty
    else:
        loaded = load_dataset(str(folder), config)
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


def _declared_configs(folder: Path) -> set[str]:
    """Config names declared in the dataset folder's README front matter (``configs: - config_name: ...``)."""
    import yaml

    text = (folder / "README.md").read_text(encoding="utf-8")
    if not text.startswith("---"):
        return set()
    front = text.split("---", 2)[1]
    meta = yaml.safe_load(front) or {}
    return {c.get("config_name") for c in meta.get("configs", []) if isinstance(c, dict)}

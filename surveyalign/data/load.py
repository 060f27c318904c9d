"""Loading a built SurveyReview folder and locating the shipped sample release (``surveyalign/data/schema.py``)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

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


def split_files(path: str | os.PathLike, split: str) -> list[Path] | None:
    """The parquet files of ``split`` in the ``all`` config of a built folder, in the order its README lists them.

    Args:
        path: a folder written by :func:`surveyalign.data.build_dataset`.
        split: "train", "validation" or "test".

    Returns:
        The files (an empty list for a split without rows); ``None`` when the README declares no ``all`` config
        with plain file paths (read such a folder with :func:`load_surveyreview`).

    Raises:
        FileNotFoundError: ``path`` is not a built folder.
        ValueError: unknown split.
    """
    import yaml

    folder = Path(path)
    check_built_folder(folder)
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; expected one of {', '.join(SPLITS)}")
    text = (folder / "README.md").read_text(encoding="utf-8")
    if not text.startswith("---"):
        return None
    meta = yaml.safe_load(text.split("---", 2)[1]) or {}
    config = next((c for c in meta.get("configs", []) if isinstance(c, dict) and c.get("config_name") == ALL_CONFIG),
                  None)
    if config is None or not isinstance(config.get("data_files"), list):
        return None
    out: list[Path] = []
    for entry in config["data_files"]:
        if not isinstance(entry, dict):
            return None
        if entry.get("split") != split:
            continue
        files = entry.get("path")
        files = [files] if isinstance(files, str) else files
        if not isinstance(files, list) or any(not isinstance(f, str) or any(ch in f for ch in "*?[") for f in files):
            return None
        out += [folder / f for f in files]
    return out if all(f.is_file() for f in out) else None


def iter_split_rows(files: list[Path], columns: list[str] | None = None, batch_size: int = 64, *,
                    where: bool = False):
    """The rows of ``files`` (from :func:`split_files`) as dicts, read a file at a time and a row group at a time
    (arrow decodes a row group's column whole; ``surveyalign data build`` writes groups of
    :data:`surveyalign.data.files.ROW_GROUP_ROWS` rows) and handed over a batch at a time: never the whole split's
    texts at once, and nothing kept in a cache folder (the evaluation of 14.5k units). Same rows, values
    and order as ``load_surveyreview(path, "all", split)``.

    Args:
        files: parquet files of one split.
        columns: the columns to read (default: all).
        batch_size: rows decoded at a time.
        where: also yield each row's position, for :func:`read_column_at`.

    Yields:
        One dict per row; with ``where``, ``(file index, row index in that file, row)``.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    for index, path in enumerate(files):
        n = 0
        for batch in pq.ParquetFile(path).iter_batches(batch_size=batch_size, columns=columns):
            if where:
                for row in batch.to_pylist():
                    yield index, n, row
                    n += 1
            else:
                yield from batch.to_pylist()
        batch = None
        # a row group is decoded whole; its buffers go back to the system before the next file is read
        pa.default_memory_pool().release_unused()


def read_column_at(files: list[Path], positions: list[tuple[int, int]], column: str) -> dict[tuple[int, int], Any]:
    """The values of ``column`` at the given rows of ``files``, reading only the row groups that hold them, one
    group at a time (the evaluation reads its survey texts a chunk of units at a time).

    Args:
        files: parquet files of one split (:func:`split_files`).
        positions: ``(file index, row index in that file)`` pairs, as :func:`iter_split_rows` gives them with
            ``where=True``; any order, repeats allowed.
        column: the column to read.

    Returns:
        ``{(file index, row index): value}`` for every position asked.

    Raises:
        IndexError: a file index or row index outside ``files``.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    wanted: dict[int, list[int]] = {}
    for f, r in positions:
        wanted.setdefault(f, []).append(r)
    out: dict[tuple[int, int], Any] = {}
    for f in sorted(wanted):
        if not 0 <= f < len(files):
            raise IndexError(f"file index {f} outside the {len(files)} file(s) of the split")
        # a dictionary-encoded column (a paper's text) comes back as its dictionary: one value object per distinct
        # value of a row group, not one per row
        handle = pq.ParquetFile(files[f], read_dictionary=[column])
        rows = sorted(set(wanted[f]))
        i = start = 0
        for group in range(handle.num_row_groups):
            end = start + handle.metadata.row_group(group).num_rows
            need = []
            while i < len(rows) and rows[i] < end:
                need.append(rows[i])
                i += 1
            if need:
                values = handle.read_row_group(group, columns=[column]).column(0).combine_chunks()
                if pa.types.is_dictionary(values.type):
                    codes, known = values.indices, values.dictionary
                    seen: dict[int, Any] = {}
                    for r in need:
                        if r < 0:
                            raise IndexError(f"row {r} of {files[f]}")
                        code = codes[r - start].as_py()
                        if code is None:
                            out[(f, r)] = None
                        else:
                            if code not in seen:
                                seen[code] = known[code].as_py()
                            out[(f, r)] = seen[code]
                else:
                    for r in need:
                        if r < 0:
                            raise IndexError(f"row {r} of {files[f]}")
                        out[(f, r)] = values[r - start].as_py()
                values = codes = known = seen = None
            start = end
            if i == len(rows):
                break
        if i < len(rows):
            raise IndexError(f"row {rows[i]} of {files[f]}, which has {start} row(s)")
    pa.default_memory_pool().release_unused()
    return out


def split_columns(files: list[Path]) -> list[str]:
    """Column names of a split's parquet files (the first file's schema; ``[]`` without files)."""
    import pyarrow.parquet as pq

    return list(pq.read_schema(files[0]).names) if files else []


def load_train_scores(path: str | os.PathLike) -> dict[str, list[int]]:
    """The human scores of the ``train`` split per dimension (the majority / prior-sampling baselines' labels).

    Args:
        path: a dataset folder written by :func:`surveyalign.data.build_dataset`.

    Returns:
        ``{dimension: [scores in dataset order]}`` (dimensions without train units are absent).

    Raises:
        FileNotFoundError: ``path`` is not a built dataset folder.
    """
    files = split_files(path, "train")
    if files is not None:  # two columns of the train files: no conversion of the whole folder (memory)
        pairs = ((row["dimension"], row["score"]) for row in iter_split_rows(files, ["dimension", "score"], 4096))
    else:
        ds = load_surveyreview(path, dimension=ALL_CONFIG, split="train")
        pairs = zip(ds["dimension"], ds["score"])
    out: dict[str, list[int]] = {}
    for dim, score in pairs:
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

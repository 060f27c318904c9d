"""Files of a built dataset folder: the parquet files, their ``data_files`` entries, and the output checks."""

from __future__ import annotations

import hashlib
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from surveyalign.constants import DIMENSIONS, SPLITS

from .schema import ALL_CONFIG, COLUMNS, arrow_schema

#: String columns that repeat for every unit of a paper; written dictionary-encoded.
_REPEATED = ("paper_id", "title", "text", "abstract", "source", "dimension")


def check_output(official: Path, out: Path, overwrite: bool) -> None:
    """Refuse to replace anything but an empty folder or an earlier build, or to write into the release.

    Args:
        official: the release folder or file.
        out: the output folder.
        overwrite: whether an earlier build in ``out`` may be replaced.

    Raises:
        ValueError: ``out`` and the release overlap.
        FileExistsError: ``out`` is a file, or a non-empty folder that is not an earlier build (or
            ``overwrite`` is False).
    """
    src, dst = official.resolve(), out.resolve()
    if dst == src or src in dst.parents or dst in src.parents:
        raise ValueError(f"--out {out} must lie outside the release {official} (and not contain it)")
    if out.exists():
        if not out.is_dir():
            raise FileExistsError(f"{out} exists and is not a folder")
        if any(out.iterdir()):
            if not overwrite:
                raise FileExistsError(f"{out} exists; pass overwrite=True to replace it")
            if not (out / "build_report.json").is_file():
                raise FileExistsError(
                    f"{out} is not empty and holds no build_report.json: not replacing a folder that was not "
                    "written by `surveyalign data build`"
                )


def write_files(out: Path, rows: dict[tuple[str, str], list[dict]]) -> None:
    """Write ``out/data/<dimension>/<split>.parquet`` for every non-empty (dimension, split), in parallel.

    Args:
        out: the dataset folder being written.
        rows: ``{(dimension, split): rows}``.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = arrow_schema()
    pool = ThreadPoolExecutor(max_workers=min(4, os.cpu_count() or 1))
    jobs = []
    for dim in DIMENSIONS:
        (out / "data" / dim).mkdir(parents=True, exist_ok=True)
        for split in SPLITS:
            items = sorted(rows.get((dim, split), []), key=lambda r: (r["paper_id"], r["review_id"]))
            path = out / "data" / dim / f"{split}.parquet"
            if not items:  # datasets cannot load an empty split: no file, the config omits the split
                continue
            arrays = []
            for field in schema:
                values = [r[field.name] for r in items]
                if field.name in _REPEATED:
                    # one entry per distinct value: a paper's text is stored (and compressed) once per file
                    index: dict[str, int] = {}
                    codes = [index.setdefault(v, len(index)) for v in values]
                    arrays.append(pa.DictionaryArray.from_arrays(pa.array(codes, pa.int32()), pa.array(list(index))))
                else:
                    arrays.append(pa.array(values, type=field.type))
            table = pa.Table.from_arrays(arrays, names=list(COLUMNS))
            # store_schema=False: readers see plain strings (the dictionary is only the parquet encoding); the
            # typed features come from the README's dataset_info
            jobs.append(pool.submit(pq.write_table, table, path, compression="zstd", compression_level=3,
                                    store_schema=False))
    try:
        for job in jobs:  # pyarrow releases the GIL while encoding: files are written in parallel
            job.result()
    finally:
        pool.shutdown()


def data_files(config: str, rows: dict[tuple[str, str], list[dict]]) -> list[dict[str, Any]]:
    """``data_files`` entries of one config for the README front matter (paths relative to the folder).

    A split without rows has no file and is left out (``datasets`` cannot load an empty split);
    :func:`surveyalign.data.load_surveyreview` adds it back as an empty split. Layout of ``surveyalign/data/schema.py``
    (configs per dimension + "all"; SurveyReview §4).

    Args:
        config: a dimension name or ``"all"``.
        rows: ``{(dimension, split): rows}`` as written to the parquet files.

    Returns:
        ``[{"split": name, "path": "data/<dim>/<split>.parquet"}]`` in train/validation/test order; for
        ``"all"`` the ``path`` is the list of the four dimensions' files that exist (0-3 entries).
    """
    dims = DIMENSIONS if config == ALL_CONFIG else (config,)
    entries = []
    for split in SPLITS:
        paths = [f"data/{d}/{split}.parquet" for d in dims if rows.get((d, split))]
        if paths:
            entries.append({"split": split, "path": paths if config == ALL_CONFIG else paths[0]})
    return entries


def content_hash(folder: Path) -> str:
    """sha256 over the data files of a dataset folder (relative path and bytes of every ``data/**/*.parquet``).

    Written by the build into ``build_report.json["content_sha256"]`` and every config's ``description`` in the
    card, so the ``datasets`` cache key of a config changes whenever its content does.

    Args:
        folder: a dataset folder.

    Returns:
        64 hex digits.
    """
    digest = hashlib.sha256()
    for path in sorted((folder / "data").rglob("*.parquet")):
        digest.update(path.relative_to(folder).as_posix().encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()

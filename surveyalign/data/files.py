"""Files of a built dataset folder: the parquet files, their ``data_files`` entries, and the output checks."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from surveyalign.constants import DIMENSIONS, SPLITS

from .schema import ALL_CONFIG, COLUMNS, arrow_schema

#: String columns that repeat for every unit of a paper; written dictionary-encoded.
_REPEATED = ("paper_id", "title", "text", "abstract", "source", "dimension")

#: Rows per parquet row group. A reader decodes a row group's column whole: 128 rows keep one read of the text
#: column near 13 MB (100 kB texts) where one group per file would hold the whole file's texts.
ROW_GROUP_ROWS = 128

#: Columns written with min / max statistics (all but the long texts).
_STATISTICS = [c for c in COLUMNS if c not in ("text", "abstract")]


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


def write_files(out: Path, rows: dict[tuple[str, str], list[dict]], row_group_size: int | None = None) -> None:
    """Write ``out/data/<dimension>/<split>.parquet`` for every non-empty (dimension, split), one file at a time.

    Each file's table is built straight from buffers (no per-value conversion, no pandas import), written and
    dropped before the next one is built, so at most one file's columns are held beside the rows (the
    build's peak memory). Rows are sorted by (paper_id, review_id); the repeated string columns are stored
    dictionary-encoded (one entry per distinct value, a paper's text once per row group). Each row group of
    ``row_group_size`` rows is built and written on its own, with its own dictionaries: slicing one table would
    write the whole file's dictionary (every text) into every row group.

    Args:
        out: the dataset folder being written.
        rows: ``{(dimension, split): rows}``.
        row_group_size: rows per parquet row group (>= 1; default :data:`ROW_GROUP_ROWS`); readers decode one
            group's column at a time.
    """
    import pyarrow.parquet as pq

    schema = arrow_schema()
    size = row_group_size or ROW_GROUP_ROWS
    for dim in DIMENSIONS:
        (out / "data" / dim).mkdir(parents=True, exist_ok=True)
        for split in SPLITS:
            items = sorted(rows.get((dim, split), []), key=lambda r: (r["paper_id"], r["review_id"]))
            if not items:  # datasets cannot load an empty split: no file, the config omits the split
                continue
            # store_schema=False: readers see plain strings (the dictionary is only the parquet encoding); the
            # typed features come from the README's dataset_info. No min / max statistics for the long texts:
            # they would copy two texts per row group into the footer, which every reader parses
            writer = None
            try:
                for start in range(0, len(items), size):
                    table = _table(items[start:start + size], schema)
                    if writer is None:
                        writer = pq.ParquetWriter(out / "data" / dim / f"{split}.parquet", table.schema,
                                                  compression="zstd", compression_level=3, store_schema=False,
                                                  write_statistics=_STATISTICS)
                    writer.write_table(table)
            finally:
                if writer is not None:
                    writer.close()


def _table(items: list[dict], schema):
    """The ``pyarrow.Table`` of one file's rows (columns in :data:`COLUMNS` order, typed by ``schema``)."""
    import pyarrow as pa

    arrays = []
    for field in schema:
        values = [r[field.name] for r in items]
        if field.name in _REPEATED:
            index: dict[str, int] = {}
            codes = [index.setdefault(v, len(index)) for v in values]
            arrays.append(pa.DictionaryArray.from_arrays(_ints(codes, pa.int32()), _strings(list(index))))
        elif pa.types.is_list(field.type):
            arrays.append(pa.ListArray.from_arrays(_offsets([len(v) for v in values])[1],
                                                   _strings([x for v in values for x in v])))
        elif pa.types.is_integer(field.type):
            arrays.append(_ints(values, field.type))
        else:
            arrays.append(_strings(values))
    return pa.Table.from_arrays(arrays, names=list(COLUMNS))


# pyarrow.array() on a Python list imports pandas (about a second of CPU): arrays are built from buffers instead.
def _ints(values: list[int], kind):
    """An int32 / int64 array without nulls."""
    import numpy as np
    import pyarrow as pa

    data = np.asarray(values, dtype=np.int32 if kind == pa.int32() else np.int64)
    return pa.Array.from_buffers(kind, len(data), [None, pa.py_buffer(data)])


def _offsets(lengths: list[int]):
    """Offsets 0, then the running sums of ``lengths``: ``(int64 numpy array, int32 pyarrow array)``."""
    import numpy as np
    import pyarrow as pa

    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    if offsets[-1] >= 2**31:
        raise ValueError(f"a parquet column of {offsets[-1]} bytes is past the 2 GiB of a string column")
    return offsets, pa.Array.from_buffers(pa.int32(), len(offsets), [None, pa.py_buffer(offsets.astype(np.int32))])


def _strings(values: list[str]):
    """A string array without nulls (its UTF-8 bytes in one buffer)."""
    import numpy as np
    import pyarrow as pa

    ascii_only = all(map(str.isascii, values))
    ends, offsets = _offsets(list(map(len, values)) if ascii_only else [len(v.encode("utf-8")) for v in values])
    data = np.empty(int(ends[-1]), dtype=np.uint8)
    # joined and encoded in groups of about 4 MB: few calls, and little memory beside the buffer
    cuts = np.searchsorted(ends, np.arange(1 << 22, int(ends[-1]) + (1 << 22), 1 << 22), side="left")
    start = 0
    for end in dict.fromkeys([*np.minimum(cuts, len(values)).tolist(), len(values)]):
        if end > start:
            data[ends[start] : ends[end]] = np.frombuffer("".join(values[start:end]).encode("utf-8"), dtype=np.uint8)
            start = end
    return pa.StringArray.from_buffers(len(values), offsets.buffers()[1], pa.py_buffer(data))


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

"""The units of one evaluation: (review, dimension) rows of a dataset split, and the data's provenance.

A unit is one row of a SurveyReview dataset folder (``surveyalign data build``) for one dimension; its prompt
is built later by the judge (:meth:`surveyalign.judge.Judge.prepare`), once the backends and the length budget
are known.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from surveyalign.data import load_surveyreview, load_train_scores
from surveyalign.data.load import (
    iter_split_rows,
    read_column_at,
    split_columns,
    split_files,
)
from surveyalign.evaluation.config import EvalConfig
from surveyalign.judge import PreparedPrompt
from surveyalign.prompts import build_judge_prompt

__all__ = ["Unit", "folder_fingerprint", "load_units", "read_texts", "template_hashes", "train_scores_or_none"]


#: Columns of a split's parquet files that no stage of an evaluation reads (about 8 kB a row in a full-size
#: release): left in the files (memory).
UNREAD_COLUMNS = ("abstract", "references")


@dataclass
class Unit:
    """One (review, dimension) item of the split.

    Attributes:
        row: the dataset row (``unit_id``, ``score``, ``rationales``, ``text``, ``title``, ...).
        dimension: canonical dimension name.
        knowledge: the knowledge block put before the survey (``None``: none for this unit).
        prompt: the prepared prompt (set by :func:`surveyalign.evaluation.lengths.prepare_units`).
        text_at: where the survey text lies while ``row["text"]`` is ``None``: ``(files, file index, row index)``
            for :func:`read_texts` (``None``: the row holds its text).
        text_flag: whether the row has a survey text, known before the text is read (``None``: look at the row).
    """

    row: dict[str, Any]
    dimension: str
    knowledge: str | None = None
    prompt: PreparedPrompt | None = None
    text_at: tuple[list[Path], int, int] | None = None
    text_flag: bool | None = None

    @property
    def unit_id(self) -> str:
        """The row's ``unit_id``."""
        return self.row["unit_id"]

    @property
    def has_text(self) -> bool:
        """True when the unit has a survey text (otherwise it is ``missing_text``), read or not."""
        if self.text_flag is not None:
            return self.text_flag
        return bool((self.row.get("text") or "").strip())


def load_units(config: EvalConfig) -> tuple[list[Unit], dict[str, Any]]:
    """The units of the configured split and dimensions (first ``limit`` per dimension) and the data's provenance.

    Args:
        config: the run configuration (``dataset``, ``split``, ``dimensions``, ``limit``, ``knowledge_dimensions``).

    Returns:
        ``(units, data_info)``: units in dimension order, then dataset order; ``data_info`` for ``run_config.json``
        (path, split, unit counts, knowledge column, :func:`folder_fingerprint`). Read from the split's parquet
        files, the rows leave out :data:`UNREAD_COLUMNS` and hold no survey text yet (``row["text"]`` is
        ``None``; ``has_text`` is known): the judge stage reads the texts of the units it prepares
        (:func:`read_texts`), a chunk at a time when it goes by chunks, so the split's texts are never all held
        (memory).

    Raises:
        FileNotFoundError: the dataset folder does not exist.
        ValueError: a configured dimension has no unit in the split, or a ``unit_id`` occurs twice.
    """
    root = Path(config.dataset)
    if not root.exists():
        raise FileNotFoundError(f"dataset folder not found: {root} (build one with `surveyalign data build`)")
    files = split_files(root, config.split)
    if files is None:  # a README without plain file lists: through datasets
        ds = load_surveyreview(str(root), dimension="all", split=config.split)
        rows, columns = ((None, None, row) for row in ds), ds.column_names
    else:  # a batch of rows at a time; the texts are read again later, a chunk at a time (memory)
        columns = [c for c in split_columns(files) if c not in UNREAD_COLUMNS]
        rows = iter_split_rows(files, columns, where=True)
    has_knowledge = "knowledge" in columns

    by_dim: dict[str, list[dict[str, Any]]] = {d: [] for d in config.dimensions}
    texts: dict[Any, str] = {}  # one survey text object per paper, shared by its units (memory)
    where: dict[int, tuple[tuple[list[Path], int, int], bool]] = {}  # id(row) -> (text_at, text_flag)
    present: set[str] = set()
    for file_index, row_index, row in rows:
        dim = row["dimension"]
        present.add(dim)
        if dim in by_dim and (config.limit is None or len(by_dim[dim]) < config.limit):
            text = row.get("text")
            if file_index is not None:  # left in the file until the judge stage reads it
                where[id(row)] = ((files, file_index, row_index), bool((text or "").strip()))
                row["text"] = None
            elif text:
                shared = texts.setdefault(row.get("paper_id") or row["unit_id"], text)
                if shared == text:
                    row["text"] = shared
            by_dim[dim].append(row)
    missing_dims = [d for d in config.dimensions if d not in present]
    if missing_dims and present:
        have = [d for d in config.dimensions if d in present] or sorted(present)
        raise ValueError(f"{root} ({config.split}): no units for dimension(s) {', '.join(missing_dims)}; "
                         f"evaluate the dimensions that have units with --dimensions {','.join(have)} "
                         f"(config key: dimensions)")

    units: list[Unit] = []
    seen: set[str] = set()
    for dim in config.dimensions:
        for row in by_dim[dim]:
            if row["unit_id"] in seen:
                raise ValueError(f"{root} ({config.split}): unit_id {row['unit_id']!r} occurs twice")
            seen.add(row["unit_id"])
            knowledge = row.get("knowledge") if has_knowledge and dim in config.knowledge_dimensions else None
            text_at, text_flag = where.get(id(row), (None, None))
            units.append(Unit(row=row, dimension=dim, knowledge=knowledge or None, text_at=text_at,
                              text_flag=text_flag))

    data_info = {
        "path": str(root.resolve()),
        "split": config.split,
        "units": len(units),
        "units_per_dimension": {d: len(v) for d, v in by_dim.items()},
        "knowledge_column": has_knowledge,
        **folder_fingerprint(root),
    }
    return units, data_info


def read_texts(units: list[Unit]) -> None:
    """Put the survey text of every unit in ``units`` that does not hold it yet into its row (``row["text"]``),
    reading only the row groups of the split's files that hold them; the units of one paper share one text object
    (memory, and one prompt per paper in :func:`surveyalign.evaluation.lengths.prepare_units`).

    Args:
        units: units from :func:`load_units`; those without ``text_at`` or already holding a text are left as they
            are.
    """
    todo = [u for u in units if u.text_at is not None and u.row.get("text") is None]
    sources: dict[int, list[Path]] = {}
    for unit in todo:
        sources.setdefault(id(unit.text_at[0]), unit.text_at[0])
    texts: dict[Any, str] = {}
    for key, files in sources.items():
        mine = [u for u in todo if id(u.text_at[0]) == key]
        values = read_column_at(files, [u.text_at[1:] for u in mine], "text")
        for unit in mine:
            text = values[unit.text_at[1:]]
            if text:
                shared = texts.setdefault(unit.row.get("paper_id") or unit.unit_id, text)
                if shared == text:
                    text = shared
            unit.row["text"] = text


def train_scores_or_none(dataset: str) -> dict[str, list[int]]:
    """The train split's scores per dimension (:func:`surveyalign.data.load_train_scores`); ``{}`` when the
    folder has no readable train split (the baselines are then left out of the metrics)."""
    try:
        return load_train_scores(dataset)
    except (ValueError, KeyError, FileNotFoundError):
        return {}


def folder_fingerprint(root: Path) -> dict[str, Any]:
    """sha256 over the relative paths and bytes of the data files (``root/data/**`` when it exists, else every
    file; hidden ones skipped), plus the builder version and release hash from ``build_report.json``.

    Only the data files are hashed so that rebuilding the same release (new timestamps in the card and report)
    gives the same hash.

    Args:
        root: the dataset folder.

    Returns:
        ``{"sha256", "files", "hashed", ...}`` plus ``manifest``, ``builder_version``, ``seed``, ``release_path``
        and ``release_sha256`` when a build report names them.
    """
    digest = hashlib.sha256()
    n = 0
    base = root / "data" if (root / "data").is_dir() else root
    for path in sorted(p for p in base.rglob("*") if p.is_file()):
        rel = path.relative_to(root).as_posix()
        if any(part.startswith(".") for part in rel.split("/")):
            continue
        digest.update(rel.encode() + b"\0")
        with path.open("rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                digest.update(chunk)
        digest.update(b"\0")
        n += 1
    info: dict[str, Any] = {"sha256": digest.hexdigest(), "files": n, "hashed": base.relative_to(root).as_posix()}
    for name in ("build_info.json", "manifest.json", "build_report.json", "dataset_info.json"):
        p = root / name
        if p.is_file() and p.stat().st_size < 1_000_000:
            try:
                meta = json.loads(p.read_text())
            except (ValueError, OSError):
                continue
            if isinstance(meta, dict):
                info["manifest"] = name
                for key in ("version", "dataset_version", "surveyalign_version", "seed"):
                    if key in meta:
                        info["builder_version" if key == "surveyalign_version" else key] = meta[key]
                source = meta.get("input")
                if isinstance(source, dict):
                    info["release_path"] = source.get("path")
                    info["release_sha256"] = source.get("sha256")
            break
    return info


def template_hashes(config: EvalConfig) -> dict[str, dict[str, str]]:
    """Template hashes (``JudgePrompt.template_hash``) per dimension, without and with knowledge augmentation."""
    out: dict[str, dict[str, str]] = {}
    for dim in config.dimensions:
        entry = {"plain": build_judge_prompt(dim, "x", protocol=config.protocol, layout=config.layout).template_hash}
        if dim in config.knowledge_dimensions:
            entry["knowledge"] = build_judge_prompt(dim, "x", protocol=config.protocol, knowledge="k",
                                                    layout=config.layout).template_hash
        out[dim] = entry
    return out

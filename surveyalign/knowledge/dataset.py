"""Write a SurveyReview dataset folder with a ``knowledge`` column (the output of ``surveyalign ka build``).

Every config gets the string column (``datasets`` concatenates the four dimensions in the ``all`` config,
so their schemas must agree): the KA text for Comprehensiveness / Criticalness units whose survey got one,
``""`` everywhere else. The README's ``dataset_info`` features gain the column; ``build_report.json`` is
copied so the data version of the source folder stays known.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import yaml

__all__ = ["write_knowledge_dataset"]


def _readme_with_knowledge(text: str, column: str) -> str:
    """The dataset card with ``column`` (string) added to the features of every ``dataset_info`` entry."""
    if not text.startswith("---"):
        raise ValueError("the dataset README has no YAML front matter (not a `surveyalign data build` folder)")
    _, front, body = text.split("---", 2)
    meta = yaml.safe_load(front) or {}
    infos = meta.get("dataset_info") or []
    for info in infos if isinstance(infos, list) else [infos]:
        features = info.setdefault("features", [])
        if not any(f.get("name") == column for f in features):
            features.append({"name": column, "dtype": "string"})
    return "---\n" + yaml.safe_dump(meta, sort_keys=False, allow_unicode=True) + "---" + body


def write_knowledge_dataset(src: Path, out: Path, rows: dict[str, dict[str, list[dict[str, Any]]]],
                            texts: dict[tuple[str, str], str], *, column: str = "knowledge") -> int:
    """Write ``out/data/<dimension>/<split>.parquet`` with ``column`` added, plus the card and build report.

    Args:
        src: the source dataset folder (README.md, build_report.json).
        out: the output folder (created; its ``ka`` sub-folder is left alone).
        rows: dimension -> split -> rows of the source folder.
        texts: (paper_id, dimension) -> KA text; missing pairs get ``""``.
        column: the column name.

    Returns:
        The number of units written with a non-empty text.
    """
    out.mkdir(parents=True, exist_ok=True)
    n_with = 0
    for dim, splits in rows.items():
        (out / "data" / dim).mkdir(parents=True, exist_ok=True)
        for split, split_rows in splits.items():
            table = pq.read_table(src / "data" / dim / f"{split}.parquet")
            values = [texts.get((row["paper_id"], dim), "") or "" for row in split_rows]
            n_with += sum(1 for v in values if v)
            if column in table.column_names:
                table = table.drop([column])
            table = table.append_column(column, pa.array(values, type=pa.string()))
            pq.write_table(table, out / "data" / dim / f"{split}.parquet", compression="zstd")
    (out / "README.md").write_text(_readme_with_knowledge((src / "README.md").read_text(encoding="utf-8"), column),
                                   encoding="utf-8")
    if (src / "build_report.json").is_file():
        shutil.copyfile(src / "build_report.json", out / "build_report.json")
    return n_with

"""The fast build (issue 23) writes and reports exactly what the plain, slow construction does.

* the parquet files are byte for byte those of ``pyarrow.array`` over the rows (the writer before issue 23),
  written in row groups of ``ROW_GROUP_ROWS`` rows without statistics for the long texts;
* the leak counts equal a brute-force check (every snippet against every normalised text with ``in``, every
  near-verbatim pair scored with the 4-word-run prefilter of tests/test_verbatim_reference.py);
* the indexed matchers agree with ``in`` on random texts, short snippets and non-ASCII ones included;
* ``normalise_for_match`` equals its plain formula (markup to spaces, ``" ".join(text.split())``, hyphens);
* a build imports neither pandas nor datasets (a second of CPU before).
"""

from __future__ import annotations

import json
import random
import re
import subprocess
import sys
import unicodedata
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from test_verbatim_reference import _reference_near

from surveyalign.constants import DIMENSIONS, SPLITS
from surveyalign.data import build_dataset, read_release, sample_release_dir
from surveyalign.data.files import ROW_GROUP_ROWS
from surveyalign.data.leakcheck import check_leaks, guard_texts
from surveyalign.data.schema import COLUMNS, arrow_schema
from surveyalign.documents import (
    MIN_SNIPPET_CHARS,
    NEAR_VERBATIM_THRESHOLD,
    VerbatimIndex,
    normalise_for_match,
    strip_running_headers,
    verbatim_hits,
)
from surveyalign.documents.verbatim import WHITESPACE

_REPEATED = ("paper_id", "title", "text", "abstract", "source", "dimension")


def _reference_table(rows: list[dict]) -> pa.Table:
    """The table as the writer built it before issue 23: pyarrow.array over Python lists."""
    arrays = []
    for field in arrow_schema():
        values = [r[field.name] for r in rows]
        if field.name in _REPEATED:
            index: dict[str, int] = {}
            codes = [index.setdefault(v, len(index)) for v in values]
            arrays.append(pa.DictionaryArray.from_arrays(pa.array(codes, pa.int32()), pa.array(list(index))))
        else:
            arrays.append(pa.array(values, type=field.type))
    return pa.Table.from_arrays(arrays, names=list(COLUMNS))


@pytest.fixture(scope="module")
def sample_build(tmp_path_factory):
    return build_dataset(sample_release_dir(), tmp_path_factory.mktemp("eq") / "surveyreview")


def test_parquet_bytes_equal_the_plain_pyarrow_construction(sample_build, tmp_path):
    written = sorted((sample_build.path / "data").rglob("*.parquet"))
    assert len(written) == len(DIMENSIONS) * len(SPLITS)  # every split of every dimension has rows
    for path in written:
        rows = pq.read_table(path).to_pylist()
        assert rows == sorted(rows, key=lambda r: (r["paper_id"], r["review_id"]))
        again = tmp_path / path.name
        # row groups of ROW_GROUP_ROWS rows, each with its own dictionaries; no statistics for the long texts
        tables = [_reference_table(rows[i:i + ROW_GROUP_ROWS]) for i in range(0, len(rows), ROW_GROUP_ROWS)]
        with pq.ParquetWriter(again, tables[0].schema, compression="zstd", compression_level=3, store_schema=False,
                              write_statistics=[c for c in COLUMNS if c not in ("text", "abstract")]) as writer:
            for table in tables:
                writer.write_table(table)
        assert again.read_bytes() == path.read_bytes(), path


@pytest.mark.parametrize("guard", [True, False])
def test_leak_counts_equal_brute_force(guard):
    release = read_release(sample_release_dir())
    cleaned, changed, _ = guard_texts(release.articles, enabled=guard)
    units = [(f"{u.review_id}::{u.dimension}", u.paper_key, u.rationales) for u in release.units
             if u.paper_key in release.articles]
    got = check_leaks(units, release.articles, cleaned, changed)

    snippets = sorted({r for _, _, rs in units for r in rs})
    norm = {r: normalise_for_match(r) for r in snippets}
    raw_forms = [normalise_for_match(t) for t in release.articles.values()]
    clean_forms = [normalise_for_match(t) for t in cleaned.values()]
    checked = [r for r in snippets if len(norm[r]) >= MIN_SNIPPET_CHARS]
    before = {r for r in checked if any(norm[r] in t for t in raw_forms)}
    after = {r for r in checked if any(norm[r] in t for t in clean_forms)}
    near_after = {(r, k) for _, k, rs in units for r in rs if _reference_near(norm[r], normalise_for_match(cleaned[k]),
                                                                            normalised=True)}
    near_before = {r for _, k, rs in units for r in rs
                   if _reference_near(norm[r], normalise_for_match(release.articles[k]), normalised=True)}
    assert got["snippets_checked"] == len(checked) == 121
    assert got["snippets_too_short"] == len(snippets) - len(checked)
    assert got["snippets_verbatim_before_guard"] == len(before) == 18
    assert got["snippets_verbatim_in_inputs"] == len(after) == (0 if guard else 18)
    assert got["snippets_near_verbatim_before_guard"] == len(near_before) == 18
    assert got["snippets_near_verbatim_in_inputs"] == len({r for r, _ in near_after}) == (0 if guard else 18)
    assert got["units_with_verbatim_snippets"] == sorted(u for u, _, rs in units if set(rs) & after)[:200]
    assert got["units_with_near_verbatim_snippets"] == sorted(
        u for u, k, rs in units if any((r, k) in near_after for r in rs))[:200]
    assert NEAR_VERBATIM_THRESHOLD == got["near_verbatim_threshold"]


def test_index_finds_what_in_finds():
    rng = random.Random(7)
    words = ["graph", "neural", "survey", "méthode", "données", "x", "results", "the", "of", "a", "résumé", "-"]
    texts = [" ".join(rng.choice(words) for _ in range(rng.randint(0, 400))) for _ in range(40)]
    texts += ["", "short", "graph neural survey of the results"]
    snippets = []
    for _ in range(400):
        t = rng.choice([t for t in texts if len(t) > 60])
        a = rng.randrange(len(t) - 30)
        snippets.append(t[a : a + rng.choice([8, 19, 20, 22, 25, 40, 70, 120])])  # some cut mid-word, some short
    snippets += [" ".join(rng.choice(words) for _ in range(6)) for _ in range(100)]  # mostly in no text
    expected = [None if len(s.strip()) < MIN_SNIPPET_CHARS else {j for j, t in enumerate(texts) if s.strip() in t}
                for s in snippets]
    assert verbatim_hits(snippets, texts) == expected
    index = VerbatimIndex(snippets, min_chars=MIN_SNIPPET_CHARS)
    assert index.find(texts[0].encode("utf-8")) == index.find(texts[0])
    assert sum(1 for e in expected if e) > 250  # the test exercises hits, not only misses


def test_whitespace_is_what_str_split_splits_on():
    assert set(WHITESPACE) == {chr(c) for c in range(sys.maxunicode + 1) if chr(c).isspace()}


def test_normalise_for_match_equals_its_plain_formula():
    rng = random.Random(3)
    # no tags, typographic quotes or soft hyphens: the steps that replace them did not change
    pieces = ["word", "well-", "chosen", "-", " - ", "**bold**", "_em_", "`code`", "a|b", "# head", "> quote",
              "\ufb01le", "caf\u00e9", "\u3000", "\xa0", "\x85", "\u2028", "\t", "\n", "\r\n", "  ", "x-\ny", "\x1c",
              "Page 3 of 12\n", "end."]
    old_hyphen = re.compile(r"(?<=\w)- ?(?=\w)")
    old_markup = re.compile(r"[*_`~|#>]")

    def plain(text: str) -> str:  # the formula before issue 23
        text = strip_running_headers(text if text.isascii() else unicodedata.normalize("NFKC", text))
        text = " ".join(old_markup.sub(" ", text).split())
        return old_hyphen.sub("", text)

    for _ in range(300):
        text = "".join(rng.choice(pieces) + rng.choice(["", " ", "\n"]) for _ in range(rng.randint(0, 30)))
        assert normalise_for_match(text) == plain(text), repr(text)


def test_build_imports_neither_pandas_nor_datasets(tmp_path):
    code = ("import sys; from surveyalign.data import build_dataset, sample_release_dir; "
            f"build_dataset(sample_release_dir(), {str(tmp_path / 'out')!r}); "
            "print(json.dumps(sorted(m for m in ('pandas', 'datasets', 'torch') if m in sys.modules)))")
    done = subprocess.run([sys.executable, "-c", "import json; " + code], capture_output=True, text=True, check=True,
                          cwd=Path(__file__).resolve().parents[1])
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []

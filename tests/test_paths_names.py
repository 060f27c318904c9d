"""Output names at their edges (issue 27): Windows device names with an extension, the byte limits (exactly at the
limit, the smallest limit, a cut landing on a separator or an 'X'), undecodable file names (surrogate escapes),
bytes contents, names disambiguated twice, and the suffix / fallback / absolute-path rules."""

from __future__ import annotations

import hashlib
import os

import pytest

from surveyalign.paths import (
    MAX_NAME_BYTES,
    output_path_inside,
    resolve_inside,
    safe_output_name,
    unique_output_names,
)


def test_windows_device_names_keep_their_extension_apart():
    # Windows reads "NUL.txt" and "con.tar.gz" as the devices themselves: the "_" must follow the device name
    assert safe_output_name("NUL.txt") == "NUL_.txt"
    assert safe_output_name("con.tar.gz") == "con_.tar.gz"
    assert safe_output_name("COM1") == "COM1_"
    assert safe_output_name("console.txt") == "console.txt"  # a longer word is no device


def test_byte_limits_exactly_and_the_smallest():
    assert safe_output_name("a" * MAX_NAME_BYTES) == "a" * MAX_NAME_BYTES  # exactly at the limit: unchanged
    cut = safe_output_name("a" * (MAX_NAME_BYTES + 1))
    assert len(cut) == MAX_NAME_BYTES and cut.startswith("a" * 111 + "-")  # 111 + "-" + 8 hex digits
    sixteen = safe_output_name("b" * 40, max_bytes=16)
    assert len(sixteen) == 16 and sixteen.startswith("bbbbbbb-")
    with pytest.raises(ValueError, match="^max_bytes must be at least 16, got 15$"):
        safe_output_name("b", max_bytes=15)


def test_a_cut_drops_a_trailing_separator_but_keeps_letters():
    # the cut keeps the first 111 bytes: here they end in "-", which is dropped before "-<hash>" is added
    dashed = safe_output_name("a" * 110 + "-b" + "c" * 20)
    assert dashed.startswith("a" * 110 + "-") and "--" not in dashed and len(dashed) == 119
    # ... and here in "X", which is a letter like any other
    assert safe_output_name("a" * 110 + "X" + "c" * 20).startswith("a" * 110 + "X-")
    assert safe_output_name("X-ray imaging") == "X-ray_imaging"


def test_undecodable_file_names_are_hashed_not_refused():
    # os.fsdecode gives a lone surrogate for a byte that is not UTF-8 (a file name from another system)
    raw = os.fsdecode(b"\xff")
    assert raw == "\udcff"
    name = safe_output_name(raw)
    assert name.startswith("item-") and len(name) == 13
    assert name != safe_output_name(os.fsdecode(b"\xfe"))
    long = safe_output_name(os.fsdecode(b"survey\xff") * 30)
    assert len(long.encode()) <= MAX_NAME_BYTES
    names = unique_output_names([raw, "x"], [raw, "\udcfe"])
    assert names.names == [name, "x"]


def test_bytes_contents_merge_and_disambiguate():
    pdf = b"%PDF-1.7 survey"
    names = unique_output_names(["survey", "survey", "survey"], [pdf, pdf, b"%PDF-1.7 other"])
    assert names.keep == [0, 2] and names.merged == {1: 0}
    digest = hashlib.sha256(pdf).hexdigest()
    assert names.names[0] == f"survey-{digest[:8]}" and names.names[1] == names.names[0]


def test_a_name_disambiguated_twice_gets_16_then_64_hex_digits():
    a, b = hashlib.sha256(b"A").hexdigest(), hashlib.sha256(b"B").hexdigest()
    # a third input is literally called "survey-<first 8 of A>": 8 digits collide, 16 do not
    names = unique_output_names(["survey", "survey", f"survey-{a[:8]}"], ["A", "B", "C"]).names
    assert names == [f"survey-{a[:16]}", f"survey-{b[:16]}", f"survey-{a[:8]}"]
    # and a fourth "survey-<first 16 of A>": the full 64 digits, the stem cut so the name is exactly 120 bytes
    stem = "s" * 60
    names = unique_output_names([stem, stem, f"{stem}-{a[:8]}", f"{stem}-{a[:16]}"], ["A", "B", "C", "D"]).names
    assert names[0].endswith(f"-{a}") and len(names[0]) == MAX_NAME_BYTES  # 46 + "-" + 8 + "-" + 64
    assert names[0].startswith("s" * 46 + "-") and len(set(names)) == 4


def test_long_colliding_names_stay_within_the_limit():
    long = "r" * 115
    names = unique_output_names([long, long], ["one", "two"]).names
    # stem cut to 120 - 8 - 1 = 111 bytes (102 + "-" + 8), then "-" + 8 content digits: 120 bytes
    assert [len(n) for n in names] == [MAX_NAME_BYTES, MAX_NAME_BYTES] and names[0] != names[1]
    assert names[0].startswith("r" * 102 + "-")


def test_fallback_suffix_and_absolute_paths(tmp_path):
    assert unique_output_names([""], ["x"]).names == ["item"]
    named = unique_output_names(["///"], ["x"], fallback="survey").names[0]
    assert named.startswith("survey-") and len(named) == 15
    assert output_path_inside(tmp_path, "a b") == tmp_path / "a_b"
    with pytest.raises(ValueError, match="must not contain a path separator"):
        output_path_inside(tmp_path, "a", "\\x.json")
    inside = tmp_path / "figs" / "a.png"
    assert resolve_inside(tmp_path, inside) == inside.resolve()  # an absolute path inside the folder is fine

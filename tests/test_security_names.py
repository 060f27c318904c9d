"""Names that come from inputs become paths (issue 26): a PRISM paper id ``../../../x`` and a 251-character file
name stay inside the output folder, bounded under the file-system limit, and are fixed before any call is made."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from surveyalign.cli import main
from surveyalign.paths import (
    MAX_NAME_BYTES,
    OutsideFolderError,
    output_path_inside,
    resolve_inside,
    safe_output_name,
)
from surveyalign.testing import FakeChatServer

FIXTURES = Path(__file__).parent / "fixtures" / "prism"


@pytest.mark.parametrize(("raw", "expected"), [
    ("../../../x", "x"), ("/etc/passwd", "etc_passwd"), ("a\\b:c", "a_b_c"), ("..", "item-" + "5ec1f7e7"),
    ("", "item"), (None, "item"), ("CON", "CON_"), ("my survey.v2", "my_survey.v2"), ("Reviewer_aB1", "Reviewer_aB1"),
    ("nul\x00byte\nline", "nul_byte_line"), (".hidden", "hidden"),
])
def test_safe_output_name_values(raw, expected):
    assert safe_output_name(raw) == expected


def test_safe_output_name_bounds_and_keeps_long_names_apart():
    a, b = "a" * 251, "a" * 250 + "b"
    na, nb = safe_output_name(a), safe_output_name(b)
    assert len(na.encode()) == MAX_NAME_BYTES and len(nb.encode()) == MAX_NAME_BYTES and na != nb
    wide = safe_output_name("é" * 200)  # 2 bytes each: cut on a character boundary
    assert len(wide.encode()) <= MAX_NAME_BYTES and wide.encode().decode() == wide
    with pytest.raises(ValueError, match="at least 16"):
        safe_output_name("x", max_bytes=8)


def test_output_path_inside_and_resolve_inside(tmp_path):
    assert output_path_inside(tmp_path, "../../../x", ".json") == tmp_path / "x.json"
    with pytest.raises(ValueError, match="separator"):
        output_path_inside(tmp_path, "x", "/../y")
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "link").symlink_to("/etc")
    assert resolve_inside(tmp_path / "proj", "a/b.tex") == (tmp_path / "proj" / "a" / "b.tex").resolve()
    for bad in ("../outside", "/etc/hostname", "link/hostname"):
        with pytest.raises(OutsideFolderError, match="outside the project folder"):
            resolve_inside(tmp_path / "proj", bad)


def test_prism_traversal_id_stays_in_the_working_folder(tmp_path, monkeypatch, capsys):
    """Old code: ``runs/prism/../../../x`` wrote outside the working folder."""
    work = tmp_path / "a" / "b" / "work"
    work.mkdir(parents=True)
    monkeypatch.chdir(work)
    paper = json.loads((FIXTURES / "iclr_paper.json").read_text())
    paper["id"] = "../../../x"
    (work / "paper.json").write_text(json.dumps(paper))
    judge = work / "judge.yaml"
    judge.write_text("backend: {kind: scripted, options: {replies: []}}\nnovelty: {enabled: false}\n")
    main(["prism", str(work / "paper.json"), str(FIXTURES / "iclr_reviews.json"), "--judge", str(judge),
          "--no-progress"])
    assert not (tmp_path / "x").exists() and not (tmp_path / "a" / "x").exists()
    assert (work / "runs" / "prism" / "x" / "paper.json").is_file()


def test_score_with_a_251_character_file_name_writes_its_report(tmp_path):
    """Old code: every call was made, then writing ``<251 chars>.json`` failed with 'File name too long'."""
    survey = tmp_path / ("s" * 251 + ".md")
    survey.write_text("# A survey of things\n\n## Intro\n\nSome text about things.\n", encoding="utf-8")
    judge = tmp_path / "judge.yaml"
    out = tmp_path / "out"
    with FakeChatServer() as server:
        judge.write_text(f"backend: {{kind: openai, options: {{model: fake-judge, base_url: '{server.base_url}'}}}}\n")
        main(["score", str(survey), "--judge", str(judge), "--out", str(out), "--allow-no-knowledge",
              "--no-progress", "--samples", "1"])
    reports = sorted(p.name for p in out.glob("*.json"))
    assert len(reports) == 1 and len(reports[0].encode()) <= MAX_NAME_BYTES + len(".json")
    assert reports[0].startswith("s" * 50)

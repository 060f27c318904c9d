"""Edges of the LaTeX include splicer (issue 27): every include command, where names resolve and in which order,
line numbers as the file has them (comment lines counted), and the depth, file and character limits at their
boundaries."""

from __future__ import annotations

from pathlib import Path

import pytest

from surveyalign.documents import DocumentLimits, flatten_latex


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root / "main.tex"


def _lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


def test_every_include_command_and_where_names_resolve(tmp_path):
    main = _write(tmp_path, {
        "main.tex": ("\\documentclass{article}\n\\begin{document}\n\\input{sec/one}\n\\import{chap/}{c1}\n"
                     "\\subimport*{chap}{c2.tex}\n\\import{}{bare}\n\\input{exact.txt}\n\\input bare\n"
                     "\\include{\"q name\"}\n\\subfile{subf}\n100\\% kept % cut\n\\end{document}\n"),
        "sec/one.tex": "S1 text\n\\input{deep/leaf}\n\\input{sib}\n",
        "sec/deep/leaf.tex": "LEAF\n", "sec/sib.tex": "SIB in sec\n", "sib.tex": "SIB in root\n",
        "chap/c1.tex": "C1 \\input{c2}\n", "chap/c2.tex": "C2 text\n",
        "exact.txt": "EXACT\n", "exact.txt.tex": "NOT THIS\n", "bare.tex": "BARE\n", "q name.tex": "QUOTED\n",
        "subf.tex": "SUBF\n",
    })
    flat = flatten_latex(main)
    assert flat.warnings == [] and flat.refused == [] and flat.limited == 0
    # names resolve against the main file's folder first (sib.tex of the root), then the including file's folder
    # (deep/leaf); \import's own includes resolve in its folder (chap/c2)
    assert _lines(flat.text) == ["\\documentclass{article}", "\\begin{document}", "S1 text", "LEAF", "SIB in root",
                                 "C1 ", "C2 text", "C2 text", "BARE", "EXACT", "BARE", "QUOTED", "SUBF",
                                 "100\\% kept \\end{document}"]
    assert [p.relative_to(tmp_path).as_posix() for p in flat.files] == [
        "main.tex", "sec/one.tex", "sec/deep/leaf.tex", "sib.tex", "chap/c1.tex", "chap/c2.tex", "chap/c2.tex",
        "bare.tex", "exact.txt", "bare.tex", "q name.tex", "subf.tex"]


def test_comments_go_with_their_line_and_warnings_name_the_line_of_the_file(tmp_path):
    main = _write(tmp_path, {
        "main.tex": ("% header comment\n  % another\n\\documentclass{article}\n\\begin{document}\n"
                     "text % trailing\n\\input{missing}\n\\input{sec/a}\n\\end{document}\n"),
        "sec/a.tex": "% one\n%two\nA \\input{gone}\n",
    })
    flat = flatten_latex(main)
    root = tmp_path.resolve()
    assert flat.warnings == [
        f"main.tex line 6: \\input{{missing}} not found (looked in {root}); its text is missing",
        f"a.tex line 3: \\input{{gone}} not found (looked in {root}, {root / 'sec'}); its text is missing"]
    # a comment-only line disappears with its line break; a trailing comment takes the line break with it
    assert flat.text.startswith("\\documentclass{article}\n\\begin{document}\ntext \n\nA \n")


def test_an_import_folder_that_does_not_exist(tmp_path):
    main = _write(tmp_path, {"main.tex": "\\begin{document}\n\\import{nodir/}{x}\n\\end{document}\n"})
    flat = flatten_latex(main)
    assert flat.warnings == [(f"main.tex line 2: \\import{{nodir/}}{{x}} not found (looked in {tmp_path.resolve()}); "
                             "its text is missing")]


def _chain(tmp_path: Path) -> Path:
    return _write(tmp_path, {"main.tex": "M \\input{a}\n", "a.tex": "A \\input{b}\n", "b.tex": "B \\input{c}\n",
                             "c.tex": "C\n"})


def test_depth_stop_at_the_limit(tmp_path):
    main = _chain(tmp_path)
    flat = flatten_latex(main, limits=DocumentLimits(latex_max_depth=2))  # main 0, a 1, b 2: c is too deep
    assert _lines(flat.text) == ["M ", "A ", "B "]
    assert flat.warnings == ["b.tex line 1: \\input{c} is nested 3 deep: depth stop (latex_max_depth=2); not spliced"]
    assert _lines(flatten_latex(main, limits=DocumentLimits(latex_max_depth=3)).text) == ["M ", "A ", "B ", "C"]


def test_file_limit_at_the_boundary(tmp_path):
    main = _chain(tmp_path)
    flat = flatten_latex(main, limits=DocumentLimits(latex_max_files=2))
    assert _lines(flat.text) == ["M ", "A ", "B "] and flat.limited == 1
    assert flat.warnings == [("b.tex line 1: \\input{c}: include limit reached (latex_max_files=2 splices); "
                             "1 include(s) not spliced (set SURVEYALIGN_DOCUMENT_LIMITS to raise the limit)")]
    assert flatten_latex(main, limits=DocumentLimits(latex_max_files=3)).warnings == []


def test_only_the_first_limit_is_named_and_every_miss_is_counted(tmp_path):
    main = _write(tmp_path, {"main.tex": "\\input{a}\n\\input{b}\n\\input{c}\n", "a.tex": "A\n", "b.tex": "B\n",
                             "c.tex": "C\n"})
    flat = flatten_latex(main, limits=DocumentLimits(latex_max_files=1))
    assert _lines(flat.text) == ["A"] and flat.limited == 2
    assert flat.warnings == [("main.tex line 2: \\input{b}: include limit reached (latex_max_files=1 splices); "
                             "2 include(s) not spliced (set SURVEYALIGN_DOCUMENT_LIMITS to raise the limit)")]


def test_character_limit_at_the_boundary(tmp_path):
    main = _write(tmp_path, {"main.tex": "M \\input{a}\n", "a.tex": "AAAA\n"})  # 12 + 5 characters
    assert _lines(flatten_latex(main, limits=DocumentLimits(latex_max_chars=17)).text) == ["M ", "AAAA"]
    flat = flatten_latex(main, limits=DocumentLimits(latex_max_chars=16))
    assert _lines(flat.text) == ["M "] and flat.limited == 1
    assert flat.warnings == [("main.tex line 1: \\input{a}: character limit reached (latex_max_chars=16); "
                             "1 include(s) not spliced (set SURVEYALIGN_DOCUMENT_LIMITS to raise the limit)")]
    with pytest.raises(ValueError, match=r"main\.tex: longer than latex_max_chars=11 characters"):
        flatten_latex(main, limits=DocumentLimits(latex_max_chars=11))


def test_four_byte_characters_fill_the_budget_exactly(tmp_path):
    # 3 characters of 4 bytes each: 12 bytes, read under a budget of 3 characters (the byte pre-check allows 4x)
    main = _write(tmp_path, {"main.tex": "\U0001F600\U0001F600\n"})
    assert main.stat().st_size == 9
    assert flatten_latex(main, limits=DocumentLimits(latex_max_chars=3)).text == "\U0001F600\U0001F600\n\n"
    main.write_text("\U0001F600\U0001F600\U0001F600", encoding="utf-8")
    assert flatten_latex(main, limits=DocumentLimits(latex_max_chars=3)).text == "\U0001F600" * 3 + "\n"


def test_missing_main_file(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"LaTeX main file .*nothing\.tex does not exist"):
        flatten_latex(tmp_path / "nothing.tex")


def test_refused_missing_and_cyclic_includes_leave_nothing_behind(tmp_path):
    (tmp_path / "secret.tex").write_text("SECRET\n", encoding="utf-8")
    main = _write(tmp_path / "proj", {"main.tex": "M1\n\\input{../secret}\nM2\n\\input{gone}\nM3\n\\input{a}\n",
                                      "a.tex": "A \\input{main}\n"})
    flat = flatten_latex(main)
    # each file's text ends with its last line break plus one (its split lines are rejoined with one each); a
    # splice is wrapped in line breaks
    assert flat.text == "M1\n\nM2\n\nM3\n\nA \n\n\n\n\n"
    root = (tmp_path / "proj").resolve()
    assert flat.refused == [str((tmp_path / "secret").resolve())]
    assert flat.warnings == [
        (f"main.tex line 2: \\input{{../secret}} refused: resolves to {(tmp_path / 'secret').resolve()}, outside the "
        f"project folder {root}; not read"),
        f"main.tex line 4: \\input{{gone}} not found (looked in {root}); its text is missing",
        "a.tex line 1: \\input{main} includes main.tex again (cycle); not spliced twice"]


def test_a_name_that_links_outside_falls_back_to_the_tex_file(tmp_path):
    (tmp_path / "outside").write_text("OUTSIDE\n", encoding="utf-8")
    main = _write(tmp_path / "proj", {"main.tex": "\\input{intro}\n", "intro.tex": "INSIDE\n"})
    (tmp_path / "proj" / "intro").symlink_to(tmp_path / "outside")
    flat = flatten_latex(main)
    assert _lines(flat.text) == ["INSIDE"] and flat.warnings == [] and flat.refused == []


def test_names_ending_in_x_and_import_folders_first(tmp_path):
    main = _write(tmp_path, {"main.tex": "\\input{chapterX}\n\\import{chap/}{c1}\n", "chapterX.tex": "CHAPTER X\n",
                             "chapter.tex": "NOT THIS\n", "chap/c1.tex": "\\input{c2}\n", "chap/c2.tex": "C2 in chap\n",
                             "c2.tex": "C2 in root\n"})
    # \import's own includes look in its folder before the main file's
    assert _lines(flatten_latex(main).text) == ["CHAPTER X", "C2 in chap"]


def test_every_include_over_the_character_limit_is_counted(tmp_path):
    main = _write(tmp_path, {"main.tex": "\\input{a}\\input{b}\n", "a.tex": "A" * 50, "b.tex": "B" * 50})
    flat = flatten_latex(main, limits=DocumentLimits(latex_max_chars=40))
    assert flat.limited == 2 and "AAA" not in flat.text
    assert flat.warnings[-1].endswith("; 2 include(s) not spliced (set SURVEYALIGN_DOCUMENT_LIMITS to raise the limit)")


def test_files_in_latin_1_are_read_with_replacement_characters(tmp_path):
    main = _write(tmp_path, {"main.tex": "\\input{a}\n"})
    (tmp_path / "a.tex").write_bytes(b"M\xfcller\n")
    assert _lines(flatten_latex(main).text) == ["M\ufffdller"]

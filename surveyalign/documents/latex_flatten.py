"""Splice a LaTeX project into one text: ``\\input``, ``\\include``, ``\\subfile``, ``\\import`` resolved.

Comments are removed first, so a commented-out include stays out (as in TeX); an include that cannot be found or
that closes a cycle is reported as a warning naming the file and line, never skipped silently. Used by
:func:`surveyalign.documents.latex.latex_to_markdown`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["MAX_INCLUDE_DEPTH", "FlatLatex", "flatten_latex"]

#: ``\input`` and friends nested deeper than this are reported as a probable cycle.
MAX_INCLUDE_DEPTH = 32

_INCLUDE_RE = re.compile(
    r"\\(?P<cmd>input|include|subfile)\s*\{\s*(?P<name>[^{}]+?)\s*\}"
    r"|\\input\s+(?P<bare>[^\s{}\\%]+)"
    r"|\\(?:sub)?import\*?\s*\{\s*(?P<dir>[^{}]*?)\s*\}\s*\{\s*(?P<file>[^{}]+?)\s*\}"
)
_COMMENT_RE = re.compile(r"(?<!\\)%")


@dataclass
class FlatLatex:
    """A LaTeX project spliced into one text.

    Attributes:
        text: the main file with every resolved include inlined and all comments removed.
        files: the files read, main file first, in reading order.
        warnings: one line per include that could not be resolved (file and line named) or that closed a cycle.
    """

    text: str
    files: list[Path] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def _strip_comments(text: str) -> str:
    """Remove ``%`` comments; a line that was only a comment disappears with its line break (as in TeX)."""
    out = []
    for line in text.split("\n"):
        match = _COMMENT_RE.search(line)
        if match is None:
            out.append(line + "\n")
        elif line[:match.start()].strip():
            out.append(line[:match.start()])  # TeX also eats the end of line after a comment
    return "".join(out)


def _resolve_include(name: str, bases: list[Path]) -> Path | None:
    name = name.strip().strip('"')
    for base in bases:
        for candidate in (base / name, base / f"{name}.tex"):
            if candidate.is_file():
                return candidate.resolve()
    return None


def flatten_latex(main: Path | str) -> FlatLatex:
    """Splice all included files of a LaTeX project into its main file (comments removed).

    Includes resolve relative to the main file's folder (TeX's working directory), then to the including file's
    folder; ``.tex`` is appended when the name has no such file. ``\\import{dir}{file}`` resolves ``dir`` the same
    way and its own includes relative to ``dir``.

    Args:
        main: the main ``.tex`` file (the one holding ``\\documentclass``).

    Returns:
        A :class:`FlatLatex` with the spliced text, the files read and one warning per include not found
        (``"survey.tex line 12: \\input{sec/intro} not found (looked in ...)"``) or per cycle.

    Raises:
        FileNotFoundError: ``main`` does not exist.
        UnicodeDecodeError: never: files are read as UTF-8 with undecodable bytes replaced.
    """
    main = Path(main)
    if not main.is_file():
        raise FileNotFoundError(f"LaTeX main file {main} does not exist")
    root = main.resolve().parent
    result = FlatLatex(text="", files=[])

    def splice(path: Path, stack: tuple[Path, ...], base_dirs: list[Path]) -> str:
        result.files.append(path)
        text = _strip_comments(path.read_text(encoding="utf-8", errors="replace"))

        def replace(match: re.Match) -> str:
            line = text.count("\n", 0, match.start()) + 1
            if match.group("file") is not None:
                directory = match.group("dir") or "."
                target_dirs = [(b / directory).resolve() for b in base_dirs]
                target = _resolve_include(match.group("file"), target_dirs)
                shown, inner_bases = f"{match.group(0)}", [d for d in target_dirs if d.is_dir()] or target_dirs
            else:
                name = match.group("name") or match.group("bare")
                target = _resolve_include(name, [*base_dirs, path.parent])
                shown, inner_bases = match.group(0), base_dirs
            where = f"{path.name} line {line}"
            if target is None:
                looked = ", ".join(str(b) for b in dict.fromkeys([*base_dirs, path.parent]))
                result.warnings.append(f"{where}: {shown} not found (looked in {looked}); its text is missing")
                return ""
            if target in stack or len(stack) >= MAX_INCLUDE_DEPTH:
                result.warnings.append(f"{where}: {shown} includes {target.name} again (cycle); not spliced twice")
                return ""
            return "\n" + splice(target, (*stack, target), inner_bases) + "\n"

        return _INCLUDE_RE.sub(replace, text)

    result.text = splice(main.resolve(), (main.resolve(),), [root])
    return result

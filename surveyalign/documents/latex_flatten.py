"""Splice a LaTeX project into one text: ``\\input``, ``\\include``, ``\\subfile``, ``\\import`` resolved.

Comments are removed first, so a commented-out include stays out (as in TeX); an include that cannot be found or
that closes a cycle is reported as a warning naming the file and line, never skipped silently. Used by
:func:`surveyalign.documents.latex.latex_to_markdown`.

The project is untrusted input: every include resolves inside the main file's folder after symlinks
(:func:`surveyalign.paths.resolve_inside`); ``\\input{/etc/hostname}``, ``\\input{../x}`` or a link to outside
are refused with the path and never read. The fan-out is bounded by :class:`~surveyalign.documents.limits.
DocumentLimits` (total splices, total characters, nesting depth); a depth stop is reported as a depth stop, a
repeated file on the include stack as a cycle.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field
from pathlib import Path

from surveyalign.documents.limits import DocumentLimits
from surveyalign.paths import resolve_inside

__all__ = ["MAX_INCLUDE_DEPTH", "FlatLatex", "flatten_latex"]

#: Default deepest include nesting (``DocumentLimits.latex_max_depth``); deeper is a depth stop.
MAX_INCLUDE_DEPTH = DocumentLimits.latex_max_depth

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
        warnings: one line per include that could not be resolved (file and line named), that was refused
            (outside the project), that closed a cycle, that hit the depth stop, or (once, with the count) that
            was left out by the fan-out limits.
        refused: the include paths refused because they resolve outside the project folder (never read).
        limited: how many includes the fan-out limits (files, characters) left out.
    """

    text: str
    files: list[Path] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    limited: int = 0


def _strip_comments(text: str) -> tuple[str, list[int], list[int]]:
    """Remove ``%`` comments; a line that was only a comment disappears with its line break (as in TeX).

    Returns:
        The text without comments, and where each kept line piece starts in it with that piece's 1-based line
        number in ``text`` (two ascending lists), so a warning can name the line as the file has it.
    """
    out: list[str] = []
    starts: list[int] = []
    numbers: list[int] = []
    length = 0
    for number, line in enumerate(text.split("\n"), start=1):
        match = _COMMENT_RE.search(line)
        if match is None:
            piece = line + "\n"
        elif line[:match.start()].strip():
            piece = line[:match.start()]  # TeX also eats the end of line after a comment
        else:
            continue
        out.append(piece)
        starts.append(length)
        numbers.append(number)
        length += len(piece)
    return "".join(out), starts, numbers


def _resolve_include(name: str, bases: list[Path], root: Path) -> tuple[Path | None, Path | None]:
    """``(found, refused)``: the first candidate file inside ``root``, else the first candidate that resolved
    outside it (never opened: only inside candidates are even checked for existence)."""
    name = name.strip().strip('"')
    refused = None
    for base in bases:
        for candidate in (base / name, base / f"{name}.tex"):
            try:
                target = resolve_inside(root, candidate)
            except ValueError:
                refused = refused or candidate.resolve()
                continue
            if target.is_file():
                return target, None
    return None, refused


def flatten_latex(main: Path | str, *, limits: DocumentLimits | None = None) -> FlatLatex:
    """Splice all included files of a LaTeX project into its main file (comments removed).

    Includes resolve relative to the main file's folder (TeX's working directory), then to the including file's
    folder; ``.tex`` is appended when the name has no such file. ``\\import{dir}{file}`` resolves ``dir`` the same
    way and its own includes relative to ``dir``. Only files inside the main file's folder (after symlinks) are
    read; anything else is refused with a warning naming the include, the file and line and the resolved path.

    Args:
        main: the main ``.tex`` file (the one holding ``\\documentclass``).
        limits: the fan-out bounds (``latex_max_files`` splices, ``latex_max_chars`` characters,
            ``latex_max_depth`` nesting); default :meth:`DocumentLimits.from_env`.

    Returns:
        A :class:`FlatLatex` with the spliced text, the files read and one warning per include not found
        (``"survey.tex line 12: \\input{sec/intro} not found (looked in ...)"``), refused, cyclic or depth-stopped,
        plus one warning counting the includes the fan-out limits left out.

    Raises:
        FileNotFoundError: ``main`` does not exist.
        ValueError: the main file alone is longer than ``latex_max_chars`` (the message names it).
        UnicodeDecodeError: never: files are read as UTF-8 with undecodable bytes replaced.
    """
    limits = limits or DocumentLimits.from_env()
    main = Path(main)
    if not main.is_file():
        raise FileNotFoundError(f"LaTeX main file {main} does not exist")
    root = main.resolve().parent
    result = FlatLatex(text="", files=[])
    budget = {"files": limits.latex_max_files, "chars": limits.latex_max_chars}
    first_limit: list[str] = []

    def read(path: Path) -> str | None:
        # UTF-8 needs at least one byte per character: a file over 4x the budget in bytes cannot fit
        if path.stat().st_size > 4 * budget["chars"]:
            return None
        text = path.read_text(encoding="utf-8", errors="replace")
        return text if len(text) <= budget["chars"] else None

    def splice(path: Path, text: str, stack: tuple[Path, ...], base_dirs: list[Path]) -> str:
        result.files.append(path)
        budget["chars"] -= len(text)
        text, starts, numbers = _strip_comments(text)

        def replace(match: re.Match) -> str:
            line = numbers[bisect.bisect_right(starts, match.start()) - 1]
            if match.group("file") is not None:
                directory = match.group("dir") or "."
                target_dirs = [(b / directory).resolve() for b in base_dirs]
                target, refused = _resolve_include(match.group("file"), target_dirs, root)
                shown = match.group(0)
                inner_bases = [d for d in target_dirs if d.is_dir() and d.is_relative_to(root)] or [root]
            else:
                name = match.group("name") or match.group("bare")
                target, refused = _resolve_include(name, [*base_dirs, path.parent], root)
                shown, inner_bases = match.group(0), base_dirs
            where = f"{path.name} line {line}"
            if target is None and refused is not None:
                result.refused.append(str(refused))
                result.warnings.append(f"{where}: {shown} refused: resolves to {refused}, outside the project "
                                       f"folder {root}; not read")
                return ""
            if target is None:
                looked = ", ".join(str(b) for b in dict.fromkeys([*base_dirs, path.parent]))
                result.warnings.append(f"{where}: {shown} not found (looked in {looked}); its text is missing")
                return ""
            if target in stack:
                result.warnings.append(f"{where}: {shown} includes {target.name} again (cycle); not spliced twice")
                return ""
            if len(stack) > limits.latex_max_depth:
                result.warnings.append(f"{where}: {shown} is nested {len(stack)} deep: depth stop "
                                       f"(latex_max_depth={limits.latex_max_depth}); not spliced")
                return ""
            if budget["files"] <= 0:
                result.limited += 1
                first_limit[:] = first_limit or [(f"{where}: {shown}: include limit reached "
                                                 f"(latex_max_files={limits.latex_max_files} splices)")]
                return ""
            budget["files"] -= 1
            inner = read(target)
            if inner is None:
                result.limited += 1
                first_limit[:] = first_limit or [(f"{where}: {shown}: character limit reached "
                                                 f"(latex_max_chars={limits.latex_max_chars})")]
                return ""
            return "\n" + splice(target, inner, (*stack, target), inner_bases) + "\n"

        return _INCLUDE_RE.sub(replace, text)

    main_path = main.resolve()
    main_text = read(main_path)
    if main_text is None:
        raise ValueError(f"{main}: longer than latex_max_chars={limits.latex_max_chars} characters")
    result.text = splice(main_path, main_text, (main_path,), [root])
    if result.limited:
        result.warnings.append(f"{first_limit[0]}; {result.limited} include(s) not spliced (set "
                               f"SURVEYALIGN_DOCUMENT_LIMITS to raise the limit)")
    return result

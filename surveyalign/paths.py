"""Where the files shipped with the package are: one lookup for checkouts, editable installs and wheels.

``surveyalign/resources/`` holds the sample release, the HTML report templates, and (as links to the repository's
top-level folders, copied into a wheel) the evaluate modules ``metrics/`` and the card templates ``hub_cards/``.

It also holds the one rule for names that come from inputs and become paths (:func:`safe_output_name`,
:func:`output_path_inside`) and for paths named inside an input that must stay in its folder
(:func:`resolve_inside`).
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from importlib.resources import files
from pathlib import Path

__all__ = ["MAX_NAME_BYTES", "OutputNames", "OutsideFolderError", "content_sha256", "name_beside_earlier",
           "output_path_inside", "resolve_inside", "resource_path", "safe_output_name", "unique_output_names"]


def resource_path(*parts: str) -> Path:
    """The path of a file or folder under ``surveyalign/resources``.

    Args:
        *parts: path parts below ``resources``, e.g. ``("hub_cards", "model_card.md")`` or ``("metrics",)``.

    Returns:
        The path (it exists in a checkout, an editable install and a wheel install alike).
    """
    return Path(str(files("surveyalign"))).joinpath("resources", *parts)


# --------------------------------------------------------------------------------------------------------------
# Names that come from inputs (file names, record ids, titles) and become paths.
# --------------------------------------------------------------------------------------------------------------

#: Longest output-name stem, in UTF-8 bytes; leaves room for a suffix such as ``.predictions.jsonl`` and a
#: short hash under the common 255-byte file-name limit (ext4, APFS, NTFS).
MAX_NAME_BYTES = 120

_UNSAFE_CHARS = re.compile(r"[^\w.\-+=@,]+", re.UNICODE)
_WINDOWS_RESERVED = frozenset({"con", "prn", "aux", "nul", *(f"com{i}" for i in range(1, 10)),
                               *(f"lpt{i}" for i in range(1, 10))})


def _short_hash(text: str, n: int = 8) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:n]


def safe_output_name(raw: object, *, max_bytes: int = MAX_NAME_BYTES, fallback: str = "item") -> str:
    """A file-name stem that is safe to join to an output folder, derived from an untrusted name.

    Every output named after input content or a file name (a PRISM paper id, a survey's file stem, an OpenReview
    forum id, a review id) goes through this function, so a name can neither leave its folder (``../../x``,
    ``/etc/x``, ``C:\\x``), nor hide (leading dots), nor exceed the file-system limit (a 251-character stem plus
    ``.predictions.jsonl`` would fail with "File name too long" after every model call was made).

    Rules: Unicode NFC; every run of characters other than letters, digits and ``. - _ + = @ ,`` becomes ``_``
    (so ``/``, ``\\``, ``:``, NUL, control characters and spaces never survive); leading and trailing ``.``, ``_``,
    ``-`` and spaces are stripped; a Windows device name gets a ``_`` after it (``CON`` -> ``CON_``, ``nul.txt`` ->
    ``nul_.txt``: Windows reads ``NUL.txt`` as ``NUL``); a result longer than ``max_bytes``
    (UTF-8) is cut on a character boundary and gets ``-`` plus an 8-hex-digit hash of the *raw* name, so two long
    names that share a prefix stay distinct. An already-safe short name is returned unchanged (stable names).

    Args:
        raw: the name as found in the input (``str``; anything else is ``str()``-ed; ``None`` -> ``fallback``).
        max_bytes: the longest result in UTF-8 bytes (>= 16).
        fallback: the name used when nothing usable remains (``""``, ``".."``, ``"///"``); it gets the hash of
            the raw name when the raw name was not empty, so distinct unusable names stay distinct.

    Returns:
        A non-empty name of at most ``max_bytes`` UTF-8 bytes, with no path separator, not ``.`` / ``..``.

    Raises:
        ValueError: ``max_bytes`` below 16.
    """
    if max_bytes < 16:
        raise ValueError(f"max_bytes must be at least 16, got {max_bytes}")
    text = "" if raw is None else unicodedata.normalize("NFC", str(raw))
    name = _UNSAFE_CHARS.sub("_", text).strip("._- ")
    if not name:
        name = f"{fallback}-{_short_hash(text)}" if text else fallback
    device, dot, rest = name.partition(".")
    if device.lower() in _WINDOWS_RESERVED:  # "NUL.txt" is NUL too: the "_" goes after the device name
        name = f"{device}_{dot}{rest}"
    if len(name.encode("utf-8")) > max_bytes:
        tail = f"-{_short_hash(text)}"
        head = name.encode("utf-8")[: max_bytes - len(tail)].decode("utf-8", "ignore").rstrip("._- ")
        name = head + tail
    return name


@dataclass(frozen=True)
class OutputNames:
    """One stable, unique output name per input (:func:`unique_output_names`).

    Attributes:
        names: one name per input, in input order; identical inputs share their first copy's name.
        keep: indexes of the inputs to process (the first of each group of identical inputs), ascending.
        merged: index of a repeated input -> index of its first identical copy (processed once).
        disambiguated: indexes whose name got a content hash because another, different input had the same stem
            (or the stem is reserved).
        reserved_hit: indexes whose stem was one of the ``reserved`` names (a subset of ``disambiguated``).
    """

    names: list[str]
    keep: list[int]
    merged: dict[int, int] = field(default_factory=dict)
    disambiguated: list[int] = field(default_factory=list)
    reserved_hit: list[int] = field(default_factory=list)

    def messages(self, labels: Sequence[str]) -> list[str]:
        """One line per merged or renamed input, for the console (``labels``: what the user named, e.g. paths)."""
        lines = [f"{labels[i]}: identical to {labels[j]}; processed once as {self.names[j]}"
                 for i, j in sorted(self.merged.items())]
        lines += [f"{labels[i]}: another input has the same name; written as {self.names[i]}"
                  for i in self.disambiguated if i not in self.reserved_hit]
        lines += [f"{labels[i]}: its name is taken by a file of the run itself; written as {self.names[i]}"
                  for i in self.reserved_hit]
        return lines


def _content_hash(content: str | bytes) -> str:
    data = content if isinstance(content, bytes) else content.encode("utf-8", "surrogatepass")
    return hashlib.sha256(data).hexdigest()


def content_sha256(content: str | bytes) -> str:
    """SHA-256 hex digest of an input's content (text as UTF-8): the hash output names carry and reports record."""
    return _content_hash(content)


def name_beside_earlier(name: str, digest: str, earlier: dict | None, *, source: str | None = None) -> str | None:
    """The name an input takes when an earlier run's output already holds ``name`` (across runs).

    A run into a folder that holds a report of another input (``score a/survey.md`` yesterday, ``score
    b/survey.md`` today, same ``--out``) must not replace it. The earlier output records its input's content
    hash (``sha256``) and ``source``: it belongs to the same input when either matches (a re-run, or the same
    file edited since), else the new input gets ``name`` plus 8 hex digits of its own hash (16 when ``name``
    already ends with those 8), stable across runs.

    Args:
        name: the stem chosen for this run (:func:`unique_output_names`).
        digest: the input's :func:`content_sha256`.
        earlier: what the earlier output records of its input (``{"sha256", "source"}``); ``None``: no earlier
            output holds ``name``; ``{}``: one does but says nothing readable about its input (another input's).
        source: the input's path as recorded in reports (``str(path)``).

    Returns:
        ``None`` when ``name`` can be (re)used, else the other name to write under.
    """
    if earlier is None:
        return None
    if earlier.get("sha256") == digest or (source is not None and earlier.get("source") == source):
        return None
    if name.endswith(f"-{digest[:8]}"):  # already named by its hash (a collision inside the run): the longer hash
        return f"{name[:-9]}-{digest[:16]}"
    return f"{safe_output_name(name, max_bytes=MAX_NAME_BYTES - 9)}-{digest[:8]}"


def unique_output_names(raw_names: Sequence[object], contents: Sequence[str | bytes], *,
                        fallback: str = "item", reserved: Sequence[str] = ()) -> OutputNames:
    """Stable, unique output stems for a batch of inputs: no input's output ever replaces another's.

    Every command that writes one output per input (``score`` reports, PRISM review files, autorater papers,
    fetched PDFs, KA records) names its outputs through this function. Rules:

    * each name is :func:`safe_output_name` of the raw name (so it is safe and bounded);
    * inputs with identical content (same SHA-256; e.g. the same file given twice) are merged: processed once,
      under the first copy's name (``merged``);
    * different inputs whose safe names collide, compared case-insensitively (``survey.md`` and ``survey.pdf``;
      ``Survey`` and ``survey`` on a case-insensitive file system), each get ``-`` plus the first 8 hex digits of
      their content hash (longer if needed), so the name depends only on the input, not on its position;
    * a name equal (case-insensitively) to one of ``reserved`` (the stems of the run-level files a command writes
      in the same folder: ``score``'s ``comparison.md`` / ``calls.jsonl``) gets its content hash the same way, so a
      survey called ``comparison.md`` never replaces the comparison report, nor the report the survey's;
    * a name that collides with nothing is returned unchanged.

    Args:
        raw_names: the names as found (file stems, review ids), one per input.
        contents: each input's content (text or bytes), same length as ``raw_names``.
        fallback: see :func:`safe_output_name`.
        reserved: stems no input may take (compared case-insensitively).

    Returns:
        :class:`OutputNames`.

    Raises:
        ValueError: ``raw_names`` and ``contents`` differ in length.
    """
    if len(raw_names) != len(contents):
        raise ValueError(f"unique_output_names: {len(raw_names)} names but {len(contents)} contents")
    hashes = [_content_hash(c) for c in contents]
    first: dict[str, int] = {}
    merged: dict[int, int] = {}
    for i, h in enumerate(hashes):
        if h in first:
            merged[i] = first[h]
        else:
            first[h] = i
    keep = [i for i in range(len(hashes)) if i not in merged]
    base = {i: safe_output_name(raw_names[i], fallback=fallback) for i in keep}
    groups: dict[str, list[int]] = {}
    for i in keep:
        groups.setdefault(base[i].casefold(), []).append(i)
    names = dict(base)
    taken = {r.casefold() for r in reserved}
    disambiguated = sorted(i for key, members in groups.items() if len(members) > 1 or key in taken for i in members)
    for n in (8, 16, 64):
        for i in disambiguated:
            stem = safe_output_name(base[i], max_bytes=MAX_NAME_BYTES - n - 1)
            names[i] = f"{stem}-{hashes[i][:n]}"
        folded = {v.casefold() for v in names.values()}
        if len(folded) == len(names) and not taken & folded:
            break
    out = [names[merged.get(i, i)] for i in range(len(hashes))]
    return OutputNames(out, keep, merged, disambiguated, [i for i in keep if base[i].casefold() in taken])


def output_path_inside(folder: str | Path, name: str, suffix: str = "") -> Path:
    """``folder / (safe_output_name(name) + suffix)``, checked to lie inside ``folder``.

    Args:
        folder: the output folder (need not exist yet).
        name: the untrusted name (see :func:`safe_output_name`).
        suffix: a trusted suffix chosen by the program, e.g. ``".json"`` or ``".predictions.jsonl"``.

    Returns:
        The path; its file name is at most ``MAX_NAME_BYTES + len(suffix)`` bytes.

    Raises:
        ValueError: the suffix holds a path separator (a programming error).
    """
    if "/" in suffix or "\\" in suffix:
        raise ValueError(f"suffix {suffix!r} must not contain a path separator")
    return Path(folder) / f"{safe_output_name(name)}{suffix}"


class OutsideFolderError(ValueError):
    """A path named by an input resolves outside the folder it must stay in (after symlinks)."""


def resolve_inside(root: str | Path, candidate: str | Path) -> Path:
    """Resolve ``candidate`` (relative to ``root`` unless absolute) and check it lies inside ``root``.

    Both sides are resolved with symlinks followed, so a link inside the project pointing to ``/etc`` is refused
    like ``/etc`` itself. Nothing is opened or read.

    Args:
        root: the folder the path must stay in (e.g. a LaTeX project's folder).
        candidate: the path as written in the input (``../x``, ``/etc/hostname``, ``figs/a``).

    Returns:
        The resolved absolute path, inside ``root`` (it may not exist).

    Raises:
        OutsideFolderError: the resolved path is outside ``root``; the message names both.
    """
    base = Path(root).resolve()
    path = Path(candidate)
    target = (path if path.is_absolute() else base / path).resolve()
    if target != base and base not in target.parents:
        raise OutsideFolderError(f"{candidate}: resolves to {target}, outside the project folder {base}; not read")
    return target


def inside_folder(root: str | Path, paths: Iterable[str | Path], what: str = "folder") -> list[Path]:
    """The paths found by walking ``root``, each checked to resolve inside it (the guard of every folder walk).

    A symlink (a file, or a folder on the way) whose target lies outside ``root`` is refused: its text would be
    read and sent to a judge although it is not part of the input given. Checked with :func:`resolve_inside`.

    Args:
        root: the folder given (``score DIR``, ``prism --corpus``, ``data collect``, ``ka``, ``fetch``).
        paths: what the walk found under ``root`` (in order).
        what: how the folder is named in the message (``"--corpus"``, ``"survey folder"``).

    Returns:
        ``paths`` as :class:`Path` objects, in order (unresolved: the names the walk found).

    Raises:
        OutsideFolderError: the first path that resolves outside ``root``; the message names the link, its
            target and the folder.
    """
    out = []
    for path in paths:
        path = Path(path)
        try:
            resolve_inside(root, path)
        except OutsideFolderError:
            raise OutsideFolderError(f"{path}: a symlink to {path.resolve()}, outside the {what} {Path(root)}; "
                                     f"refused (copy the file into the folder to use it)") from None
        out.append(path)
    return out

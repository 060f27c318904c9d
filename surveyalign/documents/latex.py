"""LaTeX projects to markdown: ``\\input``/``\\include`` resolved, user macros expanded, bibliography kept.

The judge reads surveys as markdown, the form SurveyReview stores its texts in (SurveyReview §4.2), so a LaTeX
survey is turned into the markdown a reader of the compiled PDF would see: a ``#`` title, ``##``/``###``
section headings, the abstract, numbered citations ``[n]`` and a ``## References`` list of the cited works.

* :func:`~surveyalign.documents.latex_flatten.flatten_latex` splices every ``\\input``, ``\\include``, ``\\subfile``, ``\\import``/``\\subimport``
  into the main file (comments removed first, so a commented-out ``\\input`` stays out); a file that cannot be
  found or an include cycle is reported in the warnings, never skipped silently.
* :func:`latex_to_markdown` expands the macros the survey defines (``\\newcommand``, ``\\renewcommand``,
  ``\\providecommand``, ``\\DeclareRobustCommand``, argument-free ``\\def``) through ``pylatexenc``'s macro
  database, keeps math verbatim, numbers citations and renders the bibliography from the ``.bib`` files named by
  ``\\bibliography``/``\\addbibresource`` (:func:`surveyalign.documents.parse_bibtex`), from a ``thebibliography`` environment, or from a
  compiled ``.bbl`` when the ``.bib`` is absent. The raw bibliography text is returned for knowledge augmentation
  (SurveyReview §5.2, App. F: the survey's reference set R).

Untrusted projects: includes, ``.bib`` files and the ``.bbl`` are read only inside the main file's
folder after symlinks (anything else is refused with a warning naming the path, never read); graphics
(``\\includegraphics``) are never opened. The include fan-out is bounded by
:class:`~surveyalign.documents.limits.DocumentLimits`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from pylatexenc import latex2text, latexwalker, macrospec

from surveyalign.documents.hidden import HiddenText, scan_latex
from surveyalign.documents.latex_flatten import _strip_comments, flatten_latex
from surveyalign.documents.limits import DocumentLimits
from surveyalign.documents.papers import Reference
from surveyalign.documents.references import parse_bibtex
from surveyalign.paths import resolve_inside

__all__ = ["LatexConversion", "latex_to_markdown"]

_BIBLIOGRAPHY_RE = re.compile(r"\\(?:bibliography|addbibresource|addglobalbib)\s*(?:\[[^\]]*\])?\s*\{([^{}]+)\}")
_BIBITEM_RE = re.compile(r"\\bibitem\s*(?:\[[^\]]*\])?\s*\{([^{}]+)\}")
_THEBIB_RE = re.compile(r"\\begin\{thebibliography\}.*?\\end\{thebibliography\}", re.DOTALL)
_NOCITE_ALL_RE = re.compile(r"\\nocite\s*\{\s*\*\s*\}")
#: ``\\newcommand{\\name}[nargs][default]{`` (and its kin, starred or not, name braced or not) or ``\\def\\name{``.
_DEFINITION_RE = re.compile(
    r"\\(?P<cmd>newcommand|renewcommand|providecommand|DeclareRobustCommand)\*?\s*"
    r"(?:\{\s*\\(?P<name>[A-Za-z@]+)\s*\}|\\(?P<bare>[A-Za-z@]+))\s*"
    r"(?:\[\s*(?P<nargs>[^\]]*?)\s*\])?\s*(?:\[(?P<default>[^\]]*)\])?\s*\{"
    r"|\\def\s*\\(?P<def>[A-Za-z@]+)\s*\{")
_TITLE_RE = re.compile(r"\\title\s*(?:\[[^\]]*\])?\s*\{")
_CITE_MACROS = ("cite", "citep", "citet", "citealp", "citealt", "citeauthor", "citeyear", "parencite", "textcite",
                "autocite", "footcite", "supercite", "Cite", "Citep", "Citet", "Parencite", "Textcite", "Autocite",
                "citenum")
_NEWCOMMANDS = ("newcommand", "renewcommand", "providecommand", "DeclareRobustCommand")
_HEADINGS = {"part": "#", "chapter": "##", "section": "##", "subsection": "###", "subsubsection": "####"}
_RUN_IN = ("paragraph", "subparagraph")
#: Argument shapes of layout macros whose arguments must not leak into the text.
_DISCARD_ARGS = {"markboth": "{{", "markright": "{", "vspace": "*{", "hspace": "*{", "thanks": "{",
                 "setlength": "{{", "graphicspath": "{", "bibliographystyle": "{", "pagestyle": "{",
                 "thispagestyle": "{", "usepackage": "[{", "newtheorem": "*{[{[", "label": "{",
                 "includegraphics": "*[[{", "nocite": "{", "addbibresource": "[{", "bibliography": "{",
                 "IEEEraisesectionheading": "{"}
_DISCARD = ("label", "includegraphics", "maketitle", "bibliographystyle", "bibliography", "printbibliography",
            "addbibresource", "tableofcontents", "listoffigures", "listoftables", "appendix",
            "newpage", "clearpage", "vspace", "hspace", "centering", "IEEEpeerreviewmaketitle", "thanks",
            "IEEEraisesectionheading", "markboth", "pagestyle", "thispagestyle", "noindent", "usepackage",
            "graphicspath", "setlength", "newtheorem", *_NEWCOMMANDS)


@dataclass
class LatexConversion:
    """The markdown rendering of a LaTeX survey (see :func:`latex_to_markdown`).

    Attributes:
        text: markdown: ``# title``, abstract, sections, ``[n]`` citations, ``## References``.
        title: the ``\\title{...}`` as plain text (``""`` when the project has none).
        cited_keys: citation keys in order of first citation (``\\nocite`` included).
        bibliography: the raw bibliography (the ``.bib`` files' text, or the ``thebibliography`` block), or None.
        bibliography_paths: the ``.bib`` (or ``.bbl``) files read.
        bibliography_format: ``"bibtex"``, ``"thebibliography"`` or ``None``.
        files: the ``.tex`` files read.
        warnings: unresolved includes, missing bibliography files, cited keys without an entry, duplicate keys.
        hidden: LaTeX that never renders (dropped) or renders invisibly (kept) (:func:`.hidden.scan_latex`).
    """

    text: str
    title: str
    cited_keys: list[str]
    bibliography: str | None
    bibliography_paths: list[Path]
    bibliography_format: str | None
    files: list[Path]
    warnings: list[str]
    hidden: list[HiddenText] = field(default_factory=list)


def _balanced(text: str, start: int) -> tuple[str, int] | None:
    """The content of the brace group opening at ``text[start] == "{"`` and the index after it (escapes skipped)."""
    if start >= len(text) or text[start] != "{":
        return None
    depth, index = 0, start
    while index < len(text):
        char = text[index]
        if char == "\\":
            index += 2
            continue
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                return text[start + 1:index], index + 1
        index += 1
    return None


_NUMBERED = ("chapter", "section", "subsection", "subsubsection")
_NUMBER_SCAN_RE = re.compile(
    r"\\(?P<sec>chapter|section|subsection|subsubsection)(?P<star>\*?)\s*(?:\[[^\]]*\])?\s*\{"
    r"|\\label\s*\{(?P<label>[^{}]+)\}"
    r"|\\(?P<env>begin|end)\s*\{(?P<float>figure|table)\*?\}"
    r"|\\(?P<appendix>appendix)\b"
)


class _Numbering:
    """Section, figure and table numbers as LaTeX would print them, and what each ``\\label`` refers to."""

    def __init__(self, body: str) -> None:
        self.labels: dict[str, str] = {}
        self.headings: list[str] = []
        # numbered chapters (short title or not) put the chapter number first; a starred one numbers nothing
        top = 0 if re.search(r"\\chapter\s*(?:\[[^\]]*\])?\s*\{", body) else 1
        counters = [0] * len(_NUMBERED)
        current, floats, appendix = "", [], False
        float_counts = {"figure": 0, "table": 0}
        for m in _NUMBER_SCAN_RE.finditer(body):
            if m.group("sec"):
                if m.group("star"):
                    continue
                level = _NUMBERED.index(m.group("sec"))
                counters[level] += 1
                counters[level + 1:] = [0] * (len(_NUMBERED) - level - 1)
                parts = [str(c) for c in counters[top:level + 1]]  # level >= top: a numbered chapter sets top 0
                if appendix and parts[0].isdigit():
                    parts[0] = chr(ord("A") + int(parts[0]) - 1)
                current = ".".join(parts)
                self.headings.append(current)
            elif m.group("label"):
                self.labels[m.group("label").strip()] = floats[-1] if floats else current
            elif m.group("env") == "begin":
                float_counts[m.group("float")] += 1
                floats.append(str(float_counts[m.group("float")]))
            elif m.group("env") == "end" and floats:
                floats.pop()
            elif m.group("appendix"):
                appendix, counters[top] = True, 0
        self._next = 0

    def next_heading(self) -> str:
        number = self.headings[self._next] if self._next < len(self.headings) else ""
        self._next += 1
        return number


@dataclass
class _Macro:
    name: str
    nargs: int
    default: str | None
    body: str


def _group_inner(node: latexwalker.LatexNode | None) -> str:
    if node is None:
        return ""
    raw = node.latex_verbatim()
    if node.isNodeType(latexwalker.LatexGroupNode) and raw.startswith(("{", "[")) and len(raw) >= 2:
        return raw[1:-1]
    return raw


def _user_macros(preamble: str) -> list[_Macro]:
    """Macros the survey defines (``\\newcommand`` & co., argument-free ``\\def``), in source order, each body read by
    a brace matcher: a body may open an environment it does not close (``\\newcommand{\\beq}{\\begin{equation}}``),
    which a LaTeX parser would run on into the definitions after it."""
    macros: dict[str, _Macro] = {}
    for match in _DEFINITION_RE.finditer(preamble):
        group = _balanced(preamble, match.end() - 1)
        if group is None:
            continue
        if match.group("def"):
            macros[match.group("def")] = _Macro(match.group("def"), 0, None, group[0])
            continue
        name = match.group("name") or match.group("bare")
        try:
            nargs = int(match.group("nargs")) if match.group("nargs") is not None else 0
        except ValueError:
            nargs = 0
        if match.group("cmd") != "providecommand" or name not in macros:
            macros[name] = _Macro(name, nargs, match.group("default"), group[0])
    return list(macros.values())


class _Citations:
    """Numbers citation keys: ``thebibliography`` order when given, else order of first citation."""

    def __init__(self, preset: list[str]) -> None:
        self.numbers: dict[str, int] = {}
        self.order: list[str] = []
        for key in preset:
            self.number(key)

    def number(self, key: str) -> int:
        if key not in self.numbers:
            self.numbers[key] = len(self.numbers) + 1
            self.order.append(key)
        return self.numbers[key]


def _contexts(macros: list[_Macro], citations: _Citations, cited: list[str], numbering: _Numbering
              ) -> tuple[macrospec.LatexContextDb, latex2text.LatexNodes2Text]:
    walker_db = latexwalker.get_default_latex_context_db()
    text_db = latex2text.get_default_latex_context_db()
    walker_specs = [macrospec.MacroSpec(name, "*[[{") for name in _CITE_MACROS]
    walker_specs += [macrospec.MacroSpec("bibitem", "[{"), macrospec.MacroSpec("caption", "*[{")]
    walker_specs += [macrospec.MacroSpec(name, "*[{") for name in (*_HEADINGS, *_RUN_IN)]
    walker_specs += [macrospec.MacroSpec(name, shape) for name, shape in _DISCARD_ARGS.items()]
    walker_specs += [macrospec.MacroSpec(m.name, ("[" + "{" * (m.nargs - 1)) if m.default is not None and m.nargs
                                         else "{" * m.nargs) for m in macros]
    depth = [0]

    def expand(macro: _Macro):
        def repl(n, l2tobj):
            args = list(n.nodeargd.argnlist) if n.nodeargd and n.nodeargd.argnlist else []
            body = macro.body
            for k in range(macro.nargs, 0, -1):
                node = args[k - 1] if k - 1 < len(args) else None
                value = _group_inner(node) if node is not None else (macro.default or "")
                body = body.replace(f"#{k}", value)
            if depth[0] > 20:  # a macro that (indirectly) calls itself
                return ""
            depth[0] += 1
            try:
                walker = latexwalker.LatexWalker(body, latex_context=walker_db, tolerant_parsing=True)
                return l2tobj.nodelist_to_text(walker.get_latex_nodes()[0])
            finally:
                depth[0] -= 1
        return repl

    def cite(n, l2tobj):
        args = n.nodeargd.argnlist if n.nodeargd else []
        keys = [k.strip() for k in _group_inner(args[-1]).split(",") if k.strip()] if args else []
        for key in keys:
            if key not in cited:
                cited.append(key)
        return "[" + ", ".join(str(citations.number(k)) for k in keys) + "]" if keys else ""

    def nocite(n, l2tobj):
        """\nocite{keys}: listed in the bibliography, nothing typeset (\nocite{*}: every entry, added later)."""
        if n.nodeargd and _group_inner(n.nodeargd.argnlist[-1]).strip() != "*":
            cite(n, l2tobj)
        return ""

    def bibitem(n, l2tobj):
        key = _group_inner(n.nodeargd.argnlist[-1]).strip() if n.nodeargd else ""
        return f"\n\n[{citations.number(key)}]" if key else "\n\n"

    def last_arg_text(n, l2tobj) -> str:
        args = n.nodeargd.argnlist if n.nodeargd and n.nodeargd.argnlist else []
        return " ".join(l2tobj.nodelist_to_text(args[-1:]).split()) if args and args[-1] is not None else ""

    def heading(marks: str, numbered: bool):
        def repl(n, l2tobj):
            starred = bool(n.nodeargd and n.nodeargd.argnlist and n.nodeargd.argnlist[0] is not None)
            number = numbering.next_heading() if numbered and not starred else ""
            return f"\n\n{marks} {number + ' ' if number else ''}{last_arg_text(n, l2tobj)}\n\n"
        return repl

    def run_in(n, l2tobj):
        return f"\n\n**{last_arg_text(n, l2tobj)}** "

    def ref(n, l2tobj):
        key = _group_inner(n.nodeargd.argnlist[-1]).strip() if n.nodeargd and n.nodeargd.argnlist else ""
        return numbering.labels.get(key, "??")

    def caption(n, l2tobj):
        return f"\n\nCaption: {last_arg_text(n, l2tobj)}\n\n"

    text_macros = [latex2text.MacroTextSpec(m.name, simplify_repl=expand(m)) for m in macros]
    text_macros += [latex2text.MacroTextSpec(name, simplify_repl=cite) for name in _CITE_MACROS]
    text_macros += [latex2text.MacroTextSpec("nocite", simplify_repl=nocite)]
    text_macros += [latex2text.MacroTextSpec(name, simplify_repl=heading(marks, name in _NUMBERED))
                    for name, marks in _HEADINGS.items()]
    text_macros += [latex2text.MacroTextSpec(name, simplify_repl=run_in) for name in _RUN_IN]
    text_macros += [latex2text.MacroTextSpec(name, simplify_repl=ref) for name in ("ref", "autoref", "cref", "Cref")]
    text_macros += [latex2text.MacroTextSpec("bibitem", simplify_repl=bibitem),
                    latex2text.MacroTextSpec("caption", simplify_repl=caption)]
    text_macros += [latex2text.MacroTextSpec(name, discard=True) for name in _DISCARD]
    environments = [
        latex2text.EnvironmentTextSpec("abstract", simplify_repl="\n\n## Abstract\n\n%s\n\n"),
        latex2text.EnvironmentTextSpec("IEEEkeywords", simplify_repl="\n\nKeywords: %s\n\n"),
        latex2text.EnvironmentTextSpec("keywords", simplify_repl="\n\nKeywords: %s\n\n"),
        latex2text.EnvironmentTextSpec("thebibliography", simplify_repl="\n\n## References\n\n%s\n\n"),
        latex2text.EnvironmentTextSpec("IEEEbiography", discard=True),
        latex2text.EnvironmentTextSpec("comment", discard=True),
    ]
    walker_db.add_context_category("surveyalign-walker", macros=walker_specs,
                                   environments=[macrospec.EnvironmentSpec("thebibliography", "{")], prepend=True)
    text_db.add_context_category("surveyalign-text", macros=text_macros, environments=environments, prepend=True)
    converter = latex2text.LatexNodes2Text(latex_context=text_db, math_mode="verbatim", strict_latex_spaces=False)
    return walker_db, converter


def _read_bib_files(names: list[str], bases: list[Path], warnings: list[str], where: str
                    ) -> tuple[dict[str, Reference], list[Path], list[str]]:
    """The entries of the ``.bib`` files named by ``\\bibliography`` (read by the knowledge package's reader)."""
    entries: dict[str, Reference] = {}
    paths: list[Path] = []
    raw: list[str] = []
    root = bases[0]
    for name in names:
        name = name.strip()
        target, refused = None, None
        for candidate in (c for base in bases for c in (base / name, base / f"{name}.bib")):
            try:
                inside = resolve_inside(root, candidate)
            except ValueError:
                refused = refused or candidate.resolve()
                continue
            if inside.is_file():
                target = inside
                break
        if target is None and refused is not None:
            warnings.append(f"{where}: bibliography {name!r} refused: resolves to {refused}, outside the project "
                            f"folder {root}; not read")
            continue
        if target is None:
            warnings.append(f"{where}: bibliography {name!r} not found (looked for {name}.bib in "
                            f"{', '.join(str(b) for b in bases)})")
            continue
        text = target.read_text(encoding="utf-8", errors="replace")
        found = parse_bibtex(text, path=target.name)
        warnings.extend(found.problems)
        for reference in found.references:
            entries.setdefault(reference.key, reference)
        paths.append(target)
        raw.append(text)
    return entries, paths, raw


def _render_entry(number: int, reference: Reference) -> str:
    """One ``[n] Authors. Title. Venue. Year.`` line of the rendered reference list (DOI / arXiv id appended)."""
    parts = [p for p in (", ".join(reference.authors), reference.title, reference.venue,
                         str(reference.year) if reference.year else "") if p]
    line = f"[{number}] " + ". ".join(parts) + "."
    for label, value in (("doi", reference.doi), ("arXiv", reference.arxiv_id)):
        if value:
            line += f" {label}: {value}"
    return line


def latex_to_markdown(main: Path | str, *, limits: DocumentLimits | None = None) -> LatexConversion:
    """Convert a LaTeX survey project to markdown (see the module docstring for what is kept).

    Args:
        main: the main ``.tex`` file.
        limits: include fan-out bounds (see :func:`~surveyalign.documents.latex_flatten.flatten_latex`).

    Returns:
        A :class:`LatexConversion`: markdown text, title, cited keys in citation order, the raw bibliography and
        its files, the ``.tex`` files read, and warnings (unresolved includes, missing ``.bib``, cited keys with
        no entry, unreadable or duplicate entries).

    Raises:
        FileNotFoundError: ``main`` does not exist.
        ValueError: the file has no ``\\begin{document}`` (it is not a main file; the message names it).
    """
    main = Path(main)
    flat = flatten_latex(main, limits=limits)
    warnings = list(flat.warnings)
    text, hidden = scan_latex(flat.text)
    begin = text.find("\\begin{document}")
    if begin < 0:
        raise ValueError(f"{main}: no \\begin{{document}}; pass the project's main .tex file")
    end = text.find("\\end{document}", begin)
    preamble, body = text[:begin], text[begin + len("\\begin{document}"):end if end >= 0 else len(text)]
    macros = _user_macros(preamble)
    thebib = _THEBIB_RE.search(body)
    bib_names = [n for group in _BIBLIOGRAPHY_RE.findall(text) for n in group.split(",") if n.strip()]
    bases = [main.resolve().parent]
    entries, bib_paths, raw = ({}, [], [])
    if bib_names and not thebib:
        entries, bib_paths, raw = _read_bib_files(bib_names, bases, warnings, main.name)
        bbl = main.resolve().with_suffix(".bbl")
        if not entries and bbl.is_file() and bbl.resolve().is_relative_to(bases[0]):  # no .bib: the compiled bibliography holds the same list
            # comments go as in the .tex files: a line-end % joins the lines ("Graphs %" + "in practice")
            thebib_text = _strip_comments(bbl.read_text(encoding="utf-8", errors="replace"))[0]
            body = body + "\n" + thebib_text
            thebib, bib_paths = _THEBIB_RE.search(body), [bbl]
            warnings.append(f"{main.name}: bibliography read from the compiled {bbl.name}")
    preset = _BIBITEM_RE.findall(thebib.group(0)) if thebib else []
    citations = _Citations(preset)
    cited: list[str] = []
    walker_db, converter = _contexts(macros, citations, cited, _Numbering(body))
    title = ""
    head = preamble + body[:2000]
    for match in _TITLE_RE.finditer(head):  # the last \\title wins, as in LaTeX
        group = _balanced(head, match.end() - 1)
        inner = group[0] if group is not None else head[match.end():]
        nodes = latexwalker.LatexWalker(inner, latex_context=walker_db, tolerant_parsing=True).get_latex_nodes()[0]
        title = " ".join(converter.nodelist_to_text(nodes).split())
    walker = latexwalker.LatexWalker(body, latex_context=walker_db, tolerant_parsing=True)
    markdown = converter.nodelist_to_text(walker.get_latex_nodes()[0])
    if _NOCITE_ALL_RE.search(body):
        for key in entries:
            citations.number(key)
            if key not in cited:
                cited.append(key)
    if entries:
        lines = []
        for key in citations.order:
            if key in entries:
                lines.append(_render_entry(citations.numbers[key], entries[key]))
        missing = [k for k in citations.order if k not in entries]
        if missing:
            warnings.append(f"{main.name}: {len(missing)} cited key(s) have no bibliography entry: "
                            f"{', '.join(missing[:10])}{' ...' if len(missing) > 10 else ''}")
        markdown += "\n\n## References\n\n" + "\n\n".join(lines) + "\n"
    elif thebib:
        raw = [thebib.group(0)]
    markdown = re.sub(r"[ \t]+\n", "\n", markdown.replace("\xa0", " "))
    markdown = re.sub(r"\n\n[ \t]+(?=[^\s*])", "\n\n", markdown)
    markdown = re.sub(r"\n{3,}", "\n\n", markdown).strip() + "\n"
    if title:
        markdown = f"# {title}\n\n{markdown}"
    fmt = "bibtex" if entries else ("thebibliography" if thebib else None)
    return LatexConversion(text=markdown, title=title, cited_keys=cited, bibliography="\n".join(raw) if raw else None,
                           bibliography_paths=bib_paths, bibliography_format=fmt, files=flat.files, warnings=warnings,
                           hidden=hidden)

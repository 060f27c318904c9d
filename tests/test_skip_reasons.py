"""Issue 21 F: every skip in the test suite says what is missing in a user's words (which package, file or device,
and for a package how to get it), so a skipped test is never a bare "skipped"."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def _text(node: ast.AST) -> str | None:
    """The words of a literal message (f-string parts joined), ``None`` for a message computed at run time."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value if isinstance(v, ast.Constant) else "X" for v in node.values)
    return None


def _skips() -> list[tuple[str, str, ast.Call]]:
    found = []
    for path in sorted(TESTS.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                    node.func.attr in ("skip", "importorskip", "skipif") and \
                    isinstance(node.func.value, (ast.Name, ast.Attribute)):
                found.append((f"{path.name}:{node.lineno}", node.func.attr, node))
    return found


def _reason(kind: str, call: ast.Call) -> ast.AST | None:
    keyword = next((k.value for k in call.keywords if k.arg in ("reason", "msg")), None)
    if keyword is not None:
        return keyword
    return call.args[0] if kind == "skip" and call.args else None


def test_every_skip_names_what_is_missing_in_words():
    skips = _skips()
    assert len(skips) >= 10  # the scan sees the suite's skips
    problems = []
    for where, kind, call in skips:
        reason = _reason(kind, call)
        if reason is None:
            problems.append(f"{where}: {kind} without a reason")
            continue
        words = _text(reason)
        if words is None:  # computed (e.g. a NotReady line built from what is missing): checked where it is made
            continue
        if len(words.split()) < 5:
            problems.append(f"{where}: {kind} reason too short to say what is missing: {words!r}")
        if kind == "importorskip" and "install" not in words:
            problems.append(f"{where}: importorskip reason does not say how to install it: {words!r}")
    assert problems == []

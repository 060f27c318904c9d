"""Every ``from surveyalign.X import name`` in the package, tests, benchmarks, recipes and metrics resolves.

Function-level imports run only when their function does, so a name moved by a split (``_mean_logprob`` from
``backends/openai_api.py`` to ``backends/openai_wire.py``) used to fail only in the one test that reached it.
This reads every module's AST and checks each imported name exists, without running the functions.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("surveyalign", "tests", "benchmarks", "recipes", "metrics")


def _imports(paths=None):
    paths = paths if paths is not None else [p for f in FOLDERS for p in sorted((ROOT / f).rglob("*.py"))]
    for path in paths:
        if True:
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith(
                        "surveyalign"):
                    for alias in node.names:
                        yield f"{path.name}:{node.lineno}", node.module, alias.name


def _missing(paths=None) -> tuple[int, list[str]]:
    missing = []
    seen = 0
    for where, module_name, name in _imports(paths):
        seen += 1
        try:
            module = importlib.import_module(module_name)
        except ImportError as err:
            if "surveyalign" in str(err):
                missing.append(f"{where}: module {module_name}: {err}")
            continue  # an optional third-party dependency (ray, vllm) is absent here
        if name == "*" or hasattr(module, name):
            continue
        try:
            importlib.import_module(f"{module_name}.{name}")
        except ImportError:
            missing.append(f"{where}: {module_name}.{name}")
    return seen, missing


def test_every_imported_surveyalign_name_exists():
    seen, missing = _missing()
    assert seen > 500  # the walk really read the tree
    assert missing == []


def test_a_moved_name_is_reported(tmp_path):
    """The check catches a function-level import of a name that moved (the failure it exists for)."""
    module = tmp_path / "uses_moved.py"
    module.write_text("def f():\n    from surveyalign.backends.openai_api import _mean_logprob\n"
                      "    from surveyalign.backends.openai_wire import _mean_logprob as ok\n", encoding="utf-8")
    assert _missing([module]) == (2, ["uses_moved.py:2: surveyalign.backends.openai_api._mean_logprob"])

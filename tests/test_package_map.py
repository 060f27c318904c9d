"""The package map holds: layers, no upward import, no circle (between units or modules), one home for each
shared service.

Every module of ``surveyalign/`` is read as an AST; every import counts (module level, inside functions, relative
ones resolved), and so do the names a ``lazy_loader.attach`` map and an ``importlib.import_module("surveyalign...")``
string load, and a module named in a string (the CLI's command table). A sub-package (or a top-level module) may import only units of a lower layer, or a unit of its own
layer along an edge listed in SAME_LAYER with its reason.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
PKG = REPO / "surveyalign"

#: The layers, bottom to top (README "Architecture" prints the same table). A unit is a sub-package or a
#: top-level module of ``surveyalign``; "__init__" is the package's own face (``__version__``).
LAYERS: dict[str, tuple[str, ...]] = {
    "core": ("__init__", "constants", "paths", "argtypes", "console", "yamlconfig", "redact", "csvcells"),
    "services": ("models", "documents", "backends", "calls"),
    "domains": ("prompts", "data", "knowledge", "judge", "training", "scoring"),
    "users": ("evaluation", "inference", "autoraters", "prism", "annotation", "systems", "rewards"),
    "top": ("cli", "demo", "paper", "stress", "testing", "__main__"),
}
#: Imports inside one layer, each with why it points that way (a layer's units are otherwise independent).
SAME_LAYER: dict[tuple[str, str], str] = {
    ("argtypes", "constants"): "flag types parse a dimension with constants.parse_dimension",
    ("yamlconfig", "constants"): "the config type DimensionName parses with constants.parse_dimension",
    ("backends", "models"): "a local backend reads the model identity / training record",
    ("calls", "backends"): "the call layer drives a backend",
    ("judge", "prompts"): "the judge builds the SurveyReview prompt and parses the answer",
    ("training", "data"): "training reads the SurveyReview dataset",
    ("training", "prompts"): "SFT examples are the evaluation prompt",
    ("scoring", "data"): "baselines read the training labels; rows are parsed with data.row_dimension",
    ("systems", "inference"): "the systems comparison runs the SurveyAlign judge as `score` does",
    ("rewards", "inference"): "the reward builds a completion's KA and refuses a KA-trained dimension without it as "
                              "`score` does",
    ("systems", "autoraters"): "the systems comparison runs the PaperOrchestra autoraters and their citation F1",
    ("__main__", "cli"): "python -m surveyalign runs the CLI",
    ("demo", "testing"): "the demo builds the tiny model",
    ("cli", "demo"): "the CLI registers the demo command",
    ("cli", "paper"): "the CLI registers the paper command",
    ("cli", "stress"): "the CLI registers the stress command",
    ("stress", "testing"): "the study's scripted gullible / robust judges",
    ("paper", "testing"): "the tiny profile builds the tiny model and uses the offline RQS / Crit-KA stand-ins",
}
MAX_LINES = 450


def _layer_of() -> dict[str, int]:
    return {unit: i for i, units in enumerate(LAYERS.values()) for unit in units}


def _modname(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _unit(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _exists(module: str) -> bool:
    path = REPO / Path(*module.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def _imports(path: Path) -> set[tuple[str, int]]:
    """(imported surveyalign module, line) of every import in ``path``, at any depth, plus lazy and string loads."""
    module = _modname(path)
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    out: set[tuple[str, int]] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([node.module] if node.module else []))
            # ``from pkg import submodule`` imports the submodule (the face only as its parent package, like
            # ``import pkg.submodule``); ``from pkg import name`` imports the face
            names = [f"{base}.{a.name}" if _exists(f"{base}.{a.name}") else base for a in node.names]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith("surveyalign."):
            names = [node.value]  # a module named in a string (the CLI's command table, loaded by import_module)
        elif isinstance(node, ast.Call):
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if called == "import_module" and node.args and isinstance(node.args[0], ast.Constant):
                names = [str(node.args[0].value)]
            elif called == "attach":  # lazy_loader.attach(__name__, submodules=[...], submod_attrs={...})
                for kw in node.keywords:
                    value = kw.value
                    if kw.arg == "submodules" and isinstance(value, (ast.List, ast.Tuple, ast.Set)):
                        names += [f"{package}.{e.value}" for e in value.elts if isinstance(e, ast.Constant)]
                    if kw.arg == "submod_attrs" and isinstance(value, ast.Dict):
                        names += [f"{package}.{k.value}" for k in value.keys if isinstance(k, ast.Constant)]
        for name in names:
            if name.startswith("surveyalign") and _exists(name):
                out.add((name, node.lineno))
    return out


def _edges() -> dict[tuple[str, str], list[str]]:
    """(importing unit, imported unit) -> ["module:line", ...] over every module of the package."""
    edges: dict[tuple[str, str], list[str]] = defaultdict(list)
    for path in sorted(PKG.rglob("*.py")):
        here = _unit(_modname(path))
        for name, line in _imports(path):
            there = _unit(name)
            if there != here:
                edges[(here, there)].append(f"{path.relative_to(REPO)}:{line}")
    return edges


def _units() -> set[str]:
    found = {p.name for p in PKG.iterdir() if (p / "__init__.py").is_file()}
    return found | {p.stem for p in PKG.glob("*.py")}


def test_every_unit_has_a_layer():
    layer = _layer_of()
    assert sorted(_units() - set(layer)) == []
    assert all(unit in LAYERS["users"] or unit in _units() for unit in layer)  # only planned rooms may be absent


def test_no_upward_import_and_no_unlisted_same_layer_import():
    layer = _layer_of()
    bad = {f"{a} -> {b}": where[:3] for (a, b), where in _edges().items()
           if layer[b] > layer[a] or (layer[b] == layer[a] and (a, b) not in SAME_LAYER)}
    assert bad == {}


def test_same_layer_exceptions_are_used():
    edges = _edges()
    assert sorted(k for k in SAME_LAYER if k not in edges) == []


def _module_edges() -> dict[tuple[str, str], list[str]]:
    """(importing module, imported module) -> ["module:line", ...]; a package's face is the module ``pkg``."""
    edges: dict[tuple[str, str], list[str]] = defaultdict(list)
    for path in sorted(PKG.rglob("*.py")):
        here = _modname(path)
        for name, line in _imports(path):
            if name != here:
                edges[(here, name)].append(f"{path.relative_to(REPO)}:{line}")
    return edges


def _circles(edges) -> list[list[str]]:
    """The strongly connected components of more than one node of the graph ``edges`` (pairs), each sorted."""
    graph: dict[str, set[str]] = defaultdict(set)
    for a, b in edges:
        graph[a].add(b)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for v in list(graph):
        if v not in index:
            visit(v)
    return sorted(circles)


def test_no_import_circle_between_units():
    assert _circles(_edges()) == []


def test_no_import_circle_between_modules():
    edges = _module_edges()
    found = {" <-> ".join(c): sorted(w for a in c for b in c for w in edges.get((a, b), [])) for c in _circles(edges)}
    assert found == {}


def test_the_circle_finder_finds_circles():
    assert _circles([("a", "b"), ("b", "c"), ("c", "a"), ("c", "d"), ("d", "e"), ("e", "d")]) == [["a", "b", "c"],
                                                                                                  ["d", "e"]]
    assert _circles([("a", "b"), ("b", "c"), ("a", "c")]) == []
    edges = _module_edges()  # both Ray backends join a cluster through one module that imports neither
    assert ("surveyalign.backends.ray_backend", "surveyalign.backends.ray_cluster") in edges
    assert ("surveyalign.backends.ray_data_llm", "surveyalign.backends.ray_cluster") in edges
    assert ("surveyalign.backends.ray_backend", "surveyalign.backends.ray_data_llm") in edges  # function level
    assert not any(a == "surveyalign.backends.ray_cluster" and b.startswith("surveyalign") for a, b in edges)


def test_the_scanner_sees_function_level_relative_and_lazy_imports(tmp_path):
    imports = {name for name, _ in _imports(PKG / "knowledge" / "__init__.py")}
    assert "surveyalign.knowledge.summarise" in imports  # a lazy_loader map entry
    assert any(name.startswith("surveyalign.documents") for name, _ in _imports(PKG / "data" / "build.py"))
    assert "surveyalign.demo" in {name for name, _ in _imports(PKG / "cli.py")}  # the command table's strings


def test_no_module_over_the_line_limit():
    sizes = {str(p.relative_to(REPO)): len(p.read_text(encoding="utf-8").splitlines()) for p in PKG.rglob("*.py")}
    over = {p: n for p, n in sizes.items() if n > MAX_LINES}
    assert over == {}  # no exceptions: split a module that grows past the limit along a seam


def _backend_kind_checks(source: str, kinds: set[str]) -> list[str]:
    """``"line: code"`` of each place in ``source`` that decides by a backend's kind or name: a comparison
    (``==``, ``!=``, ``in``, ``not in``) with a backend-kind literal or a literal collection holding one, a
    ``match`` case on one, or a literal collection of backend kinds only (``_SERVED = ("openai", "anthropic")``)."""

    def kinds_in(node: ast.AST) -> list[str]:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return [node.value] if node.value in kinds else []
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            return [e.value for e in node.elts if isinstance(e, ast.Constant) and e.value in kinds]
        return []

    found: list[int] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare) and any(kinds_in(x) for x in (node.left, *node.comparators)):
            found.append(node.lineno)
        elif isinstance(node, ast.MatchValue) and kinds_in(node.value):
            found.append(node.lineno)
        elif (isinstance(node, (ast.Tuple, ast.List, ast.Set)) and node.elts
              and len(kinds_in(node)) == len(node.elts)):
            found.append(node.lineno)
    lines = source.splitlines()
    return [f"{n}: {lines[n - 1].strip()}" for n in sorted(set(found))]


def test_no_backend_kind_or_name_checks_outside_backends():
    # what a backend can do is asked of it (``Backend`` capability attributes, ``backend_capabilities(kind)``), so a
    # backend registered in ``BACKENDS`` is handled everywhere without edits outside ``surveyalign/backends``
    from surveyalign.backends.registry import BACKENDS

    kinds = set(BACKENDS)
    found = {}
    for path in sorted(PKG.rglob("*.py")):
        where = path.relative_to(PKG).parts[0]
        if where not in ("backends", "testing"):
            if hits := _backend_kind_checks(path.read_text(encoding="utf-8"), kinds):
                found[str(path.relative_to(REPO))] = hits
    assert found == {}


def test_the_kind_check_scanner_finds_kind_checks():
    kinds = {"openai", "anthropic", "vllm", "transformers", "ray", "constant"}
    source = "\n".join([
        'if cfg.kind == "constant" and protocol is not None: pass',                  # 1
        'if cfg.kind not in ("transformers", "vllm", "ray"): pass',                   # 2
        'fallback = 256 if getattr(backend, "name", "") == "vllm" else 8',            # 3
        'x = desc.get("backend") in ("transformers", "vllm", "sglang")',              # 4
        '_SERVED = ("openai", "anthropic")',                                          # 5
        'match kind:\n    case "openai":\n        pass',                              # 6-8
        'options = {"kind": "transformers"}',                                          # 9: a config, not a check
        'load_backend("constant", score=1)',                                           # 10: building one is fine
        'keys = frozenset({"transport", "ray"})',                                      # 11: describe() keys
        'if kind == "ray-cluster": pass',                                              # 12: not a backend kind
    ])
    assert [hit.split(":")[0] for hit in _backend_kind_checks(source, kinds)] == ["1", "2", "3", "4", "5", "7"]


def _defs() -> dict[str, list[str]]:
    """name -> ["module", ...] of every class and function defined at module or class level."""
    out: dict[str, list[str]] = defaultdict(list)
    for path in PKG.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                out[node.name].append(str(path.relative_to(REPO)))
    return out


def test_one_home_for_each_shared_service():
    defs = _defs()
    assert defs["RetryPolicy"] == ["surveyalign/backends/retry.py"]  # one retry policy
    assert [n for n in defs if n.endswith(("RetryPolicy", "Retry"))] == ["RetryPolicy"]
    assert defs["read_training_record"] == ["surveyalign/models/record.py"]  # one training-record reader
    assert defs["fit_texts"] == ["surveyalign/documents/fitting.py"]  # one token-fitting function
    assert defs["split_sections"] == ["surveyalign/documents/sections.py"]  # one heading splitter
    assert defs["Paper"] == ["surveyalign/documents/papers.py"]  # one bibliographic Paper


def _roles(node, where: str):
    """Every mapping holding a ``backend`` key in a YAML document, with its path."""
    if isinstance(node, dict):
        if "backend" in node:
            yield where or "(top)", node
        for key, value in node.items():
            yield from _roles(value, f"{where}.{key}" if where else str(key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _roles(value, f"{where}[{i}]")


def test_one_yaml_shape_for_a_model_role():
    found = 0
    for path in sorted((REPO / "configs").rglob("*.yaml")):
        if {"accelerate", "sft", "dpo"} & set(path.relative_to(REPO / "configs").parts) or path.name == "prices.yaml":
            continue
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        for where, role in _roles(data, ""):
            found += 1
            backend = role["backend"]
            assert isinstance(backend, dict) and "kind" in backend, f"{path}: {where}.backend"
            assert set(backend) <= {"kind", "options", "per_dimension"}, f"{path}: {where}.backend {sorted(backend)}"
            assert isinstance(role.get("generation", {}), dict), f"{path}: {where}.generation"
            assert not {"model", "temperature", "kind", "options"} & set(role), f"{path}: {where} has flat keys"
    assert found >= 10


def test_the_package_docstring_names_every_sub_package():
    import surveyalign

    doc = surveyalign.__doc__ or ""
    packages = sorted(p.name for p in PKG.iterdir() if (p / "__init__.py").is_file())
    assert [p for p in packages if f"``{p}``" not in doc] == []
    assert [p for p in packages if not any(p in units for units in LAYERS.values())] == []


def test_the_readme_architecture_table_is_this_table():
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text.split("## Architecture", 1)[1].split("\n## ", 1)[0]
    rows = {line.split("|")[1].strip(): line.split("|")[2] for line in section.splitlines()
            if line.startswith("| ") and not line.startswith("| layer") and not line.startswith("| ---")}
    for layer, units in LAYERS.items():
        shown = set(rows[layer].replace("`", "").replace(" ", "").split(","))
        assert shown == {u for u in units if u in _units() and u not in ("__init__", "__main__")}, layer


#: Private names tests still import, each with why (the list may only shrink).
PRIVATE_IMPORTS_ALLOWED: dict[str, str] = {
    "surveyalign.backends._http._UvicornThread": "the stand-in HTTP server thread of the backend tests",
    "surveyalign.backends.ray_backend._EngineWorker": "the Ray actor's body, run in-process by the engine's edge "
                                                      "tests (tests/test_ray_backend_edges.py) without a Ray cluster",
}


def test_tests_import_public_names_only():
    found = set()
    for path in sorted((REPO / "tests").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("surveyalign"):
                found |= {f"{node.module}.{a.name}" for a in node.names if a.name.startswith("_")}
    assert sorted(found - set(PRIVATE_IMPORTS_ALLOWED)) == []


def test_every_sub_package_face_lists_its_public_names():
    faceless = []
    for init in sorted(PKG.glob("*/__init__.py")):
        tree = ast.parse(init.read_text(encoding="utf-8"))
        names = [t.id for node in tree.body if isinstance(node, (ast.Assign, ast.AnnAssign))
                 for t in (node.targets if isinstance(node, ast.Assign) else [node.target]) if isinstance(t, ast.Name)]
        if "__all__" not in names or not ast.get_docstring(tree):
            faceless.append(init.parent.name)
    assert faceless == []

"""Lazy package faces (issue 23's lazy_loader) keep their public names whatever the import order.

A package that loads its submodules on first use gets a submodule bound as a package attribute when anything
imports that submodule; a public function named like its submodule (``autoraters.citation_f1``,
``prism.constructiveness``) then became the module and ``citation_f1(...)`` raised "'module' object is not
callable" after, not before, the submodule was imported elsewhere. The check runs in a fresh interpreter that
imports every submodule first (the order that broke), then reads every ``__all__`` name of every package.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

_PROBE = r"""
import importlib, json, pkgutil, sys, types
import surveyalign
names = sorted(m.name for m in pkgutil.walk_packages(surveyalign.__path__, "surveyalign.")
               if not m.name.endswith("__main__"))
unimportable = {}
for name in names:
    try:
        importlib.import_module(name)
    except ImportError as exc:  # optional extras (vllm, ray data llm...) are allowed to be absent
        unimportable[name] = str(exc)
modules_in_all, missing = [], []
for name in names:
    mod = sys.modules.get(name)
    if mod is None or not hasattr(mod, "__path__"):
        continue
    for public in getattr(mod, "__all__", []):
        try:
            value = getattr(mod, public)
        except AttributeError:
            missing.append(f"{name}.{public}")
            continue
        if isinstance(value, types.ModuleType):
            modules_in_all.append(f"{name}.{public}")
print(json.dumps({"packages": sum(hasattr(sys.modules.get(n), "__path__") for n in names),
                  "modules_in_all": modules_in_all, "missing": missing, "unimportable": unimportable}))
"""


def test_public_names_stay_functions_after_every_submodule_is_imported():
    out = subprocess.run([sys.executable, "-c", _PROBE], cwd=ROOT, capture_output=True, text=True, timeout=600,
                         check=True)
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert report["packages"] >= 15
    assert report["modules_in_all"] == []
    assert report["missing"] == []


def test_the_two_names_that_broke_are_callables_after_their_submodules_load():
    code = ("import surveyalign.autoraters.citation_f1, surveyalign.prism.constructiveness\n"
            "from surveyalign.autoraters import citation_f1\n"
            "from surveyalign.prism import constructiveness\n"
            "r = citation_f1({'1': 'a', '2': 'b'}, {'1': 'a', '2': None}, {'1': 'P0', '2': 'P0'},"
            " {'1': 'P0', '2': 'P0'})\n"
            "print(r.p0.precision, r.p0.recall, callable(constructiveness))\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300,
                         check=True)
    # P0: generated {a} (the unresolved entry is not an id) against ground truth {a, b}: precision 1, recall 1/2
    assert out.stdout.split() == ["1.0", "0.5", "True"]

"""Building the ``surveyalign`` parser imports no heavy library; the packages' lazy exports still resolve."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys

import pytest

#: Libraries that only command handlers (or lazily loaded submodules) may import.
HEAVY = ("torch", "transformers", "trl", "peft", "accelerate", "vllm", "datasets", "pyarrow", "pandas", "sklearn",
         "scipy", "matplotlib", "lxml", "pypdf")


def test_build_parser_imports_no_heavy_library():
    code = ("import json, sys, surveyalign.cli; surveyalign.cli.build_parser(); "
            f"print(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}} & set({list(HEAVY)!r}))))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []


def test_help_of_every_command_imports_no_heavy_library():
    """``surveyalign COMMAND [ACTION] --help`` for every registered command stays light too."""
    code = ("import argparse, contextlib, io, json, sys, surveyalign.cli\n"
            "def paths(parser, prefix=()):\n"
            "    for action in parser._actions:\n"
            "        if isinstance(action, argparse._SubParsersAction):\n"
            "            for name, sub in action.choices.items():\n"
            "                yield prefix + (name,)\n"
            "                yield from paths(sub, prefix + (name,))\n"
            "commands = list(paths(surveyalign.cli.build_parser()))\n"
            "for command in commands:\n"
            "    with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
            "        surveyalign.cli.main([*command, '--help'])\n"
            f"heavy = sorted({{m.split('.')[0] for m in sys.modules}} & set({list(HEAVY)!r}))\n"
            "print(json.dumps([[' '.join(c) for c in commands], heavy]))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    commands, heavy = json.loads(done.stdout.strip().splitlines()[-1])
    assert {"data", "data build", "data fetch-texts", "evaluate", "score", "prism", "autorate", "ka"} <= set(commands)
    assert heavy == []


@pytest.mark.parametrize("package", ["surveyalign.data", "surveyalign.data.fetch", "surveyalign.knowledge",
                                     "surveyalign.training", "surveyalign.evaluation", "surveyalign.prism",
                                     "surveyalign.inference"])
def test_every_exported_name_resolves(package):
    module = importlib.import_module(package)
    missing = [name for name in module.__all__ if getattr(module, name, None) is None]
    assert missing == []
    # a lazily loaded name is the object of its submodule, not a copy
    assert module.__dict__.get(module.__all__[0]) is getattr(module, module.__all__[0])


def test_lazy_names_are_the_submodules_objects():
    from surveyalign.documents import parse_jats
    from surveyalign.documents import parse_jats as direct
    from surveyalign.prism import PriorWorkSearch
    from surveyalign.prism.retrieval import PriorWorkSearch as direct_search

    assert parse_jats is direct and PriorWorkSearch is direct_search
    with pytest.raises(AttributeError):
        importlib.import_module("surveyalign.knowledge").no_such_name  # noqa: B018

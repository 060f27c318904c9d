"""Building the ``surveyalign`` parser imports no heavy library; the packages' lazy exports still resolve."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys

import pytest

#: Libraries that only command handlers (or lazily loaded submodules) may import.
HEAVY = ("torch", "transformers", "trl", "peft", "accelerate", "vllm", "datasets", "pyarrow", "pandas", "sklearn",
         "scipy", "matplotlib", "lxml", "pypdf", "numpy", "httpx", "huggingface_hub")


def test_build_parser_imports_no_heavy_library():
    code = ("import json, sys, surveyalign.cli; surveyalign.cli.build_parser(); "
            f"print(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}} & set({list(HEAVY)!r}))))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []


def test_help_of_every_command_imports_no_heavy_library():
    """``surveyalign COMMAND [ACTION] --help`` for every registered command stays light too (issue 23: numpy,
    httpx and huggingface_hub included); the first command that loads a heavy library is named."""
    code = ("import argparse, contextlib, io, json, sys, surveyalign.cli\n"
            "def paths(parser, prefix=()):\n"
            "    for action in parser._actions:\n"
            "        if isinstance(action, argparse._SubParsersAction):\n"
            "            for name, sub in action.choices.items():\n"
            "                yield prefix + (name,)\n"
            "                yield from paths(sub, prefix + (name,))\n"
            "commands = list(paths(surveyalign.cli.build_parser()))\n"
            f"heavy = set({list(HEAVY)!r})\n"
            "loaded = {}\n"
            "for command in commands:\n"
            "    before = {m.split('.')[0] for m in sys.modules} & heavy\n"
            "    with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
            "        surveyalign.cli.main([*command, '--help'])\n"
            "    new = ({m.split('.')[0] for m in sys.modules} & heavy) - before\n"
            "    if new:\n"
            "        loaded[' '.join(command)] = sorted(new)\n"
            "print(json.dumps([[' '.join(c) for c in commands], loaded]))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    commands, loaded = json.loads(done.stdout.strip().splitlines()[-1])
    assert {"data", "data build", "data fetch-texts", "evaluate", "score", "prism", "autorate", "ka"} <= set(commands)
    assert len(commands) > 40  # every action of every group, not only the groups
    assert loaded == {}


@pytest.mark.parametrize("package", ["surveyalign.data", "surveyalign.data.fetch", "surveyalign.knowledge",
                                     "surveyalign.training", "surveyalign.evaluation", "surveyalign.prism",
                                     "surveyalign.inference", "surveyalign.autoraters", "surveyalign.scoring",
                                     "surveyalign.models", "surveyalign.documents"])
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


def _subcommands(parser):
    import argparse

    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return [(choice.dest, choice.help) for choice in action._choices_actions], action.choices


def test_command_table_matches_what_the_modules_register():
    """The names and help lines listed without importing the commands are the ones their modules register."""
    from surveyalign import cli

    listed, _ = _subcommands(cli.build_parser())
    assert listed == [(name, help_line) for name, _, help_line in cli._COMMANDS]
    assert [name for name, _ in listed][:4] == ["demo", "data", "prompts", "evaluate"]


def test_top_level_help_imports_no_command_module():
    code = ("import contextlib, io, json, sys, surveyalign.cli\n"
            "with contextlib.redirect_stdout(io.StringIO()) as out, contextlib.suppress(SystemExit):\n"
            "    surveyalign.cli.main(['--help'])\n"
            "mods = sorted(m for m in sys.modules if m.startswith('surveyalign.') and m.endswith('.cli'))\n"
            "print(json.dumps([mods, 'score' in out.getvalue(), 'ka ' in out.getvalue()]))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(done.stdout.strip().splitlines()[-1]) == [["surveyalign.cli"], True, True]


def test_command_help_imports_only_that_command():
    code = ("import contextlib, io, json, sys, surveyalign.cli\n"
            "with contextlib.redirect_stdout(io.StringIO()) as out, contextlib.suppress(SystemExit):\n"
            "    surveyalign.cli.main(['--traceback', 'report', '--help'])\n"
            "mods = sorted(m for m in sys.modules if m.startswith('surveyalign.') and m.endswith('.cli'))\n"
            "print(json.dumps([mods, 'usage: surveyalign report' in out.getvalue()]))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(done.stdout.strip().splitlines()[-1]) == [["surveyalign.cli", "surveyalign.scoring.cli"], True]


def test_only_the_named_command_gets_its_full_parser():
    from surveyalign import cli

    listed, choices = _subcommands(cli.build_parser("metrics"))
    assert [name for name, _ in listed] == [name for name, _, _ in cli._COMMANDS]
    assert choices["report"]._actions and choices["metrics"]._actions  # scoring.cli adds both
    assert choices["evaluate"]._actions == []  # listed only
    assert cli._command_of(["--traceback", "evaluate", "--config", "x"]) == "evaluate"
    assert cli._command_of(["--version"]) is None

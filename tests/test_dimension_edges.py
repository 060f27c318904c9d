"""A dimension is parsed once, where it enters (issue 20: "validate at the edge").

Three edge parsers call :func:`surveyalign.constants.parse_dimension`: the command-line flag type
(``argtypes.dimension_value``), the config type (``yamlconfig.DimensionName`` / ``dimension_setting``) and the
row reader (``data.row_dimension``). Inner code takes the parsed :data:`~surveyalign.constants.Dimension` as it is.
"""

from __future__ import annotations

import argparse
import ast
import json
from pathlib import Path

import pytest

from surveyalign.constants import DIMENSIONS, parse_dimension

REPO = Path(__file__).resolve().parents[1]
#: Every folder of Python code shipped or run by the project (tests excluded: they may call anything).
CODE_DIRS = ("surveyalign", "metrics", "recipes", "benchmarks", "scripts")
#: The edge parsers: (module path, function) -> what enters there.
EDGE_PARSERS = {
    ("surveyalign/argtypes.py", "dimension_value"): "command-line flags",
    ("surveyalign/yamlconfig.py", "dimension_setting"): "YAML / pydantic configs, recipe YAMLs",
    ("surveyalign/data/schema.py", "row_dimension"): "dataset rows, prediction records, score columns",
}
#: Names of the normaliser, past and present.
NORMALISERS = {"parse_dimension", "normalise_dimension"}


def _normaliser_sites() -> list[tuple[str, str, int]]:
    """(module path, enclosing function, line) of every use of the normaliser except its definition and imports.

    A use is a call or any other reference (e.g. passing it as a validator), at any depth of the module.
    """
    sites = []
    for folder in CODE_DIRS:
        for path in sorted((REPO / folder).rglob("*.py")) if (REPO / folder).is_dir() else []:
            rel = path.relative_to(REPO).as_posix()
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=rel)

            def walk(node: ast.AST, where: str, rel: str = rel) -> None:
                for child in ast.iter_child_nodes(node):
                    inner = where
                    if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                        inner = child.name
                    name = (child.id if isinstance(child, ast.Name)
                            else child.attr if isinstance(child, ast.Attribute) else None)
                    if name in NORMALISERS and isinstance(child.ctx, ast.Load):
                        sites.append((rel, where, child.lineno))
                    walk(child, inner)

            walk(tree, "<module>")
    return sites


def test_a_dimension_is_normalised_in_at_most_three_places():
    sites = _normaliser_sites()
    found = {(rel, where) for rel, where, _ in sites}
    assert len(sites) <= 3, sites
    assert found == set(EDGE_PARSERS), sites


def test_the_old_normaliser_is_gone():
    from surveyalign import constants

    assert not hasattr(constants, "normalise_dimension")
    assert DIMENSIONS == ("readability", "structure", "comprehensiveness", "criticalness")


def test_parse_dimension_accepts_any_case_and_names_a_bad_value():
    assert [parse_dimension(x) for x in (" Readability", "STRUCTURE", "comprehensiveness", "CriticalNess ")] == \
        list(DIMENSIONS)
    with pytest.raises(ValueError) as err:
        parse_dimension("novelty")
    assert str(err.value) == ("unknown dimension 'novelty'; expected one of readability, structure, "
                              "comprehensiveness, criticalness")


# --- edge 1: command-line flags ---------------------------------------------------------------------------


def test_flag_edge_parses_every_dimension_flag():
    from surveyalign.argtypes import dimension_list, dimension_value
    from surveyalign.cli import build_parser

    assert dimension_value("Criticalness") == "criticalness"
    assert dimension_list("Readability, structure,READABILITY") == ["readability", "structure"]
    with pytest.raises(argparse.ArgumentTypeError, match="unknown dimension 'clarity'"):
        dimension_value("clarity")
    parser = build_parser()
    assert parser.parse_args(["ka", "show", "sr1", "--dataset", "d", "--dimension", "CRITICALNESS"]).dimension \
        == "criticalness"
    assert parser.parse_args(["demo", "--dimension", "Structure"]).dimension == "structure"
    assert parser.parse_args(["evaluate", "--config", "c.yaml", "--dimensions", "Structure,readability"]).dimensions \
        == ["structure", "readability"]


def test_flag_edge_error_is_one_argparse_line(capsys):
    from surveyalign.cli import main

    with pytest.raises(SystemExit) as exc:
        main(["demo", "--dimension", "novelty"])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].endswith("argument --dimension: unknown dimension 'novelty'; expected one of readability, "
                            "structure, comprehensiveness, criticalness")


# --- edge 2: configs --------------------------------------------------------------------------------------


def test_config_edge_parses_lists_and_keys(tmp_path):
    from surveyalign.evaluation import EvalConfig
    from surveyalign.knowledge import KAConfig

    cfg = EvalConfig.model_validate({
        "name": "j", "dataset": "d", "dimensions": ["Readability", "STRUCTURE", "readability"],
        "knowledge_dimensions": ["Criticalness"],
        "backend": {"kind": "constant", "per_dimension": {"Structure": {"score": 2}}}})
    assert cfg.dimensions == ["readability", "structure"]
    assert cfg.knowledge_dimensions == ["criticalness"]
    assert cfg.backend.per_dimension == {"structure": {"score": 2}}
    assert cfg.backend.options_for("structure") == {"score": 2}
    assert KAConfig.from_yaml(None, {"dimensions": ["Comprehensiveness"]}).dimensions == ["comprehensiveness"]


def test_config_edge_error_names_file_key_and_value(tmp_path):
    from surveyalign.demo import DemoConfig
    from surveyalign.evaluation import EvalConfig

    demo = tmp_path / "demo.yaml"
    demo.write_text("dimension: Criticalness\n")
    assert DemoConfig.from_yaml(demo).dimension == "criticalness"
    demo.write_text("dimension: novelty\n")
    with pytest.raises(ValueError) as err:
        DemoConfig.from_yaml(demo)
    assert str(err.value) == (f"{demo}: invalid demo config: dimension: unknown dimension 'novelty'; expected one "
                              "of readability, structure, comprehensiveness, criticalness")
    evaluation = tmp_path / "eval.yaml"
    evaluation.write_text("name: j\ndataset: d\ndimensions: [readability, clarity]\nbackend: {kind: constant}\n")
    with pytest.raises(ValueError, match=r"eval\.yaml: dimensions\.1: (Value error, )?unknown dimension 'clarity'"):
        EvalConfig.from_yaml(evaluation)


def test_config_edge_parses_the_score_spec_and_recipe_yaml(tmp_path, repo_root):
    from surveyalign.inference import JudgeSpec

    spec = JudgeSpec.model_validate({"backend": {"kind": "transformers", "options": {"model": "m"},
                                                 "per_dimension": {"Readability": {"adapter": "a"}}},
                                     "dimensions": ["READABILITY"], "knowledge_dimensions": ["Criticalness"]})
    assert (spec.adapters, spec.dimensions, spec.knowledge_dimensions) == \
        ({"readability": "a"}, ["readability"], ["criticalness"])
    pytest.importorskip("trl", reason="TRL (the training extra) is not installed: pip install -e .[train]")
    from surveyalign.training import parse_recipe_yaml

    recipe = tmp_path / "sft" / "r.yaml"
    recipe.parent.mkdir()
    recipe.write_text("dimension: Structure\n")
    assert parse_recipe_yaml(recipe, check_device=False)[0].dimension == "structure"


# --- edge 3: rows -----------------------------------------------------------------------------------------


def test_row_edge_parses_release_records(tmp_path):
    from surveyalign.data import ReleaseFormatError, read_release, row_dimension

    assert row_dimension("Comprehensiveness") == "comprehensiveness"
    release = read_release(REPO / "tests/fixtures/data/v1_layout/raw/test_samples.json")
    raw = json.loads((REPO / "tests/fixtures/data/v1_layout/raw/test_samples.json").read_text())
    assert {item["dimension"] for r in raw for item in r["result"]} >= {"Readability", "Structure"}
    assert {u.dimension for u in release.units} <= set(DIMENSIONS)
    assert len(release.units) == sum(len(r["result"]) for r in raw)
    bad = tmp_path / "raw.json"
    bad.write_text(json.dumps([{**raw[0], "result": [{"dimension": "Novelty", "score": 1, "reasons": ["x"]}]}]))
    with pytest.raises(ReleaseFormatError, match=r"unknown dimension 'Novelty'"):
        read_release(bad)


def test_row_edge_parses_prediction_records_columns_and_label_files(tmp_path):
    from surveyalign.scoring import alignment_errors, validate_records
    from surveyalign.scoring.run_folder import load_train_scores_file

    rec = {"unit_id": "u1", "paper_id": "p1", "dimension": "Structure", "reference": 1, "prediction": 1,
           "status": "scored"}
    assert validate_records([rec])[0]["dimension"] == "structure"
    with pytest.raises(ValueError) as err:
        validate_records([{**rec, "dimension": "novelty"}])
    assert str(err.value) == ("record 0 (unit_id='u1'): field dimension: unknown dimension 'novelty'; expected one "
                              "of readability, structure, comprehensiveness, criticalness")
    errors = alignment_errors([1, -1], [1, 1], ["Readability", "readability"])
    assert errors["per_dimension"]["readability"]["n"] == 2
    labels = tmp_path / "train.json"
    labels.write_text(json.dumps({"Readability": [1, 2], "criticalness": [-1]}))
    assert load_train_scores_file(labels) == {"readability": [1, 2], "criticalness": [-1]}
    labels.write_text(json.dumps({"clarity": [1]}))
    with pytest.raises(ValueError, match=rf"^{labels}: unknown dimension 'clarity'"):
        load_train_scores_file(labels)


# --- inside: the parsed value is trusted, a wrong one is named, never re-parsed ----------------------------


def test_inner_code_takes_the_parsed_value_as_is():
    from surveyalign.prompts import build_judge_prompt

    assert build_judge_prompt("readability", "text").dimension == "readability"
    with pytest.raises(ValueError, match="unknown dimension 'Readability'"):
        build_judge_prompt("Readability", "text")  # type: ignore[arg-type]  # not parsed: only the edges parse

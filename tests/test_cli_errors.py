"""Bad input a newcomer runs into gives one line and exit 2, never a traceback: broken YAML configs of every
command, a backend without its required option, a malformed --option value, an unknown --dimension. Also:
`ka graph` against an API that fails leaves the surveys to be asked again (never marked done); an API that
cannot be reached at all stops `ka graph` / `autorate citation-f1` at the first request with the URL."""

from __future__ import annotations

import argparse
import json
import re
import socket
import time
from pathlib import Path

import pytest

from surveyalign.backends import load_backend
from surveyalign.calls import UnreachableError
from surveyalign.cli import build_parser, main
from surveyalign.knowledge import (
    Resolution,
    SemanticScholarClient,
    reason_class,
    resolution_counts,
)
from surveyalign.knowledge.build import SurveyKAInput
from surveyalign.knowledge.fetch import fetch_graph
from surveyalign.testing import FakeScholarServer
from surveyalign.yamlconfig import read_yaml_mapping

BROKEN = "backend: {kind: constant\n  options: [\n"  # flow mapping never closed: error at line 2, column 10


@pytest.fixture
def broken_yaml(tmp_path):
    path = tmp_path / "broken.yaml"
    path.write_text(BROKEN)
    return path


def _one_line_error(capsys, argv: list[str]) -> str:
    assert main(argv) == 2
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert "Traceback" not in err and "Traceback" not in captured.out
    return err.splitlines()[0]


def test_read_yaml_mapping_names_file_line_and_column(tmp_path, broken_yaml):
    with pytest.raises(ValueError, match=r"broken\.yaml: not valid YAML: line 2, column 10: expected ',' or '}'"):
        read_yaml_mapping(broken_yaml, "KA config")
    listed = tmp_path / "list.yaml"
    listed.write_text("- a\n- b\n")
    with pytest.raises(ValueError, match=r"list\.yaml: the top level of a KA config must be a mapping, got list"):
        read_yaml_mapping(listed, "KA config")
    empty = tmp_path / "empty.yaml"
    empty.write_text("# nothing but a comment\n")
    assert read_yaml_mapping(empty) == {}
    with pytest.raises(FileNotFoundError, match="demo config not found: .*absent.yaml"):
        read_yaml_mapping(tmp_path / "absent.yaml", "demo config")


@pytest.mark.parametrize("command", ["evaluate", "demo", "ka build", "prism", "train plan", "score"])
def test_broken_yaml_config_is_one_line_exit_2(command, broken_yaml, tmp_path, capsys):
    paper = tmp_path / "paper.md"
    paper.write_text("# A paper\n\nSome text.\n")
    argv = {
        "evaluate": ["evaluate", "--config", str(broken_yaml)],
        "demo": ["demo", "--config", str(broken_yaml)],
        "ka build": ["ka", "build", "--dataset", str(tmp_path), "--graph", "sample", "--out", str(tmp_path / "o"),
                     "--config", str(broken_yaml)],
        "prism": ["prism", str(paper), str(paper), "--judge", str(broken_yaml)],
        "train plan": ["train", "plan", "--config", str(broken_yaml)],
        "score": ["score", str(paper), "--judge", str(broken_yaml), "--out", str(tmp_path / "reviews")],
    }[command]
    line = _one_line_error(capsys, argv)
    assert f"{broken_yaml}: not valid YAML: line 2, column 10: expected ',' or '}}', but got ':'" in line


def test_backend_without_its_required_option_is_a_value_error():
    with pytest.raises(ValueError, match=r"backend 'openai' needs option\(s\) \['model'\] \(--model NAME"):
        load_backend("openai", api_key_env=None)
    with pytest.raises(ValueError, match=r"backend 'scripted' needs option\(s\) \['replies'\]$"):
        load_backend("scripted")


def test_autorate_without_model_and_with_bad_option_yaml(tmp_path, capsys):
    paper = tmp_path / "paper.md"
    paper.write_text("# A paper\n\n## Introduction\nText [1].\n\n## References\n[1] A. B. Title. 2020.\n")
    out = str(tmp_path / "out")
    line = _one_line_error(capsys, ["autorate", "litreview", str(paper), "--output-dir", out, "--no-progress"])
    assert "ValueError: backend 'openai' needs option(s) ['model']" in line
    line = _one_line_error(capsys, ["autorate", "litreview", str(paper), "--backend", "scripted", "--option",
                                    "replies=[", "--output-dir", out, "--no-progress"])
    assert "--option 'replies=[': the value is not valid YAML: line 1, column 2" in line


def test_ka_show_unknown_dimension_says_so(tmp_path, capsys):
    (tmp_path / "ka").mkdir()
    record = {"paper_id": "sr0001", "dimension": "comprehensiveness", "unit_ids": ["sr0001-r1::comprehensiveness"]}
    (tmp_path / "ka" / "records.jsonl").write_text(json.dumps(record) + "\n")
    with pytest.raises(SystemExit) as exc:  # a flag error (argtypes.dimension_value), as for every --dimension
        main(["ka", "show", "sr0001", "--dataset", str(tmp_path), "--dimension", "readablty"])
    assert exc.value.code == 2
    assert "argument --dimension: unknown dimension 'readablty'" in capsys.readouterr().err
    line = _one_line_error(capsys, ["ka", "show", "sr0001", "--dataset", str(tmp_path), "--dimension", "Criticalness"])
    assert "no KA record for 'sr0001' on criticalness" in line


def test_reason_classes_group_failed_searches():
    failed = "search failed: GET http://127.0.0.1:9/paper/search?query=x failed after 6 tries: ConnectError"
    assert reason_class(failed) == "search failed"
    assert reason_class("similar title (91.2) but years 2019 vs 2021 differ") == "similar title"
    assert reason_class("reference has no title, DOI or arXiv id") == "reference has no title, DOI or arXiv id"
    resolutions = [Resolution(key=str(i), paper_id=None, method="unresolved", score=0.0,
                              reason=failed.replace("x", str(i)))
                   for i in range(3)]
    assert resolution_counts(resolutions)["unresolved_reasons"] == {"search failed": 3}


def _dead_url() -> str:
    with socket.socket() as sock:  # a port nothing listens on once the socket is closed
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def test_ka_graph_with_failed_calls_is_asked_again(tmp_path):
    surveys = [SurveyKAInput("sr0001", "A survey of graphs", references=("[1] A. Author. Graph kernels. 2015.",))]
    out = tmp_path / "graph.jsonl"
    with FakeScholarServer([], always_status=503) as server:
        client = SemanticScholarClient(server.s2_url, requests_per_second=0, max_attempts=1, backoff_initial=0)
        report = fetch_graph(surveys, client, out, progress=False)
        assert (report.n_surveys, report.n_references, report.n_resolved, report.n_records) == (1, 1, 0, 0)
        assert report.n_errors == 2 and report.n_retry == 1  # the reference search and the survey lookup
        assert report.unresolved_reasons == {"search failed": 1}
        assert not (tmp_path / "graph.jsonl.state.json").exists()  # nothing marked done: a re-run asks again
        again = fetch_graph(surveys, client, out, progress=False)
    assert (again.n_surveys, again.n_errors, again.n_retry) == (1, 2, 1)


def test_ka_graph_stops_at_the_first_unreachable_request(tmp_path):
    dead = _dead_url()
    client = SemanticScholarClient(dead, requests_per_second=0)  # default attempts and backoff
    surveys = [SurveyKAInput(f"sr000{i}", f"A survey of graphs {i}", references=(
        "[1] A. Author. Graph kernels. 2015.", "[2] B. Author. Graph walks. 2016.")) for i in range(5)]
    start = time.monotonic()
    with pytest.raises(UnreachableError, match=f"cannot reach {dead}"):
        fetch_graph(surveys, client, tmp_path / "graph.jsonl", progress=False)
    assert time.monotonic() - start < 5
    assert client.http.stats.network == 2  # one request tried twice, then the run stops
    assert not (tmp_path / "graph.jsonl.state.json").exists()


def test_citation_f1_against_an_unreachable_api_is_one_line_exit_2(tmp_path, capsys):
    dead = _dead_url()
    gt, gen = tmp_path / "gt.md", tmp_path / "gen.md"
    gt.write_text("# GT\n\n## Introduction\nSee [1] and [2].\n\n## References\n[1] A. B. One. 2020.\n[2] C. D. Two. 2021.\n")
    gen.write_text("# Gen\n\n## Introduction\nSee [1].\n\n## References\n[1] A. B. One. 2020.\n")
    start = time.monotonic()
    line = _one_line_error(capsys, ["autorate", "citation-f1", "--ground-truth", str(gt), "--generated", str(gen),
                                    "--s2-url", dead, "--s2-rate", "0", "--backend", "scripted", "--option",
                                    "replies=['{}']", "--output-dir", str(tmp_path / "out"), "--no-progress"])
    assert time.monotonic() - start < 5
    assert f"UnreachableError: cannot reach {dead} (GET {dead}/paper/search?" in line and "2 tries" in line


def _parsers(parser: argparse.ArgumentParser, name: str = "surveyalign"):
    yield name, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for word, sub in action.choices.items():
                yield from _parsers(sub, f"{name} {word}")


def test_every_repository_path_in_a_help_text_exists():
    """A newcomer copies the examples of `--help`: the configs and files they name are shipped."""
    repo = Path(__file__).resolve().parents[1]
    pattern = r"(?<![\w/])((?:configs|recipes|metrics|benchmarks|hub_cards|surveyalign)/[\w./-]+\w)"
    named = {(name, path) for name, parser in _parsers(build_parser())
             for path in re.findall(pattern, parser.format_help()) if "NAME" not in path}
    assert ("surveyalign score", "configs/judge/surveyalign-qwen3-32b.yaml") in named
    missing = sorted((name, path) for name, path in named if not (repo / path).exists())
    assert not missing, f"--help texts name paths that do not exist: {missing}"


@pytest.mark.parametrize("argv", [["prompts", "parse", "absent.txt"],
                                  ["prompts", "show", "--dimension", "readability", "--survey", "absent.txt"],
                                  ["prompts", "show", "--dimension", "readability", "--knowledge", "absent.txt"]])
def test_prompts_missing_file_is_exit_2(argv, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    line = _one_line_error(capsys, argv)
    assert line.startswith("surveyalign prompts: error: OSError: cannot read ") and "absent.txt: No such file" in line


def test_score_unknown_dimension_is_a_flag_error(tmp_path, capsys):
    survey = tmp_path / "survey.md"
    survey.write_text("# A survey\n\nText.\n")
    with pytest.raises(SystemExit) as exc:
        main(["score", str(survey), "--judge", str(tmp_path / "judge.yaml"), "--out", str(tmp_path / "r"),
              "--dimensions", "Readability,readablty"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "argument --dimensions: unknown dimension 'readablty'" in err and "ValidationError" not in err


def test_config_validation_errors_are_one_line(tmp_path, capsys):
    line = _one_line_error(capsys, ["ka", "build", "--dataset", str(tmp_path), "--graph", "sample", "--out",
                                    str(tmp_path / "o"), "--dimensions", "readability"])
    assert line.endswith("<defaults>: invalid KA config: dimensions: knowledge augmentation is defined for "
                         "['comprehensiveness', 'criticalness'] only, not ['readability']")
    demo = tmp_path / "demo.yaml"
    demo.write_text("seed: many\n")
    line = _one_line_error(capsys, ["demo", "--config", str(demo)])
    assert f"{demo}: invalid demo config: seed: Input should be a valid integer" in line


def test_citation_f1_ids_for_numbers_the_paper_lacks_are_refused(tmp_path, capsys):
    gt, gen = tmp_path / "gt.md", tmp_path / "gen.md"
    gt.write_text("# GT\n\n## Introduction\nSee [1] and [2].\n\n## References\n[1] A. B. One. 2020.\n[2] C. D. Two. 2021.\n")
    gen.write_text("# Gen\n\n## Introduction\nSee [1].\n\n## References\n[1] A. B. One. 2020.\n")
    ids = tmp_path / "ids.json"
    ids.write_text(json.dumps({"ground_truth": {"1": "S1", "2": "S2", "9": "S9"}, "generated": {"1": "S1"}}))
    line = _one_line_error(capsys, ["autorate", "citation-f1", "--ground-truth", str(gt), "--generated", str(gen),
                                    "--ids", str(ids), "--backend", "scripted", "--option", "replies=['{}']",
                                    "--output-dir", str(tmp_path / "out"), "--no-progress"])
    assert line.endswith(f"{ids}: ground_truth names reference number(s) 9 that the paper's list does not have "
                         "(it has 1, 2)")

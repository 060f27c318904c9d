"""Issue 21 A and B: no output overwrites another, and exit codes / undefined figures mean the same everywhere.

Each test holds the right value: two surveys with one stem keep two reports; the same file given twice is scored
once with a message; PRISM reviews with one id keep two files; every extraction failing exits 3; averages over
different dimension sets are marked; a dimension skipped for lack of knowledge is shown once as skipped."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from surveyalign.cli import main
from surveyalign.paths import unique_output_names
from surveyalign.testing import FakeChatServer

FIXTURES = Path(__file__).parent / "fixtures" / "prism"


def test_unique_output_names_values():
    names = unique_output_names(["survey", "survey", "other", "survey", "Other"], ["a", "b", "c", "a", "d"])
    # survey/a and survey/b differ: each gets its content hash; the second "a" is merged into the first;
    # "other" and "Other" collide on a case-insensitive file system: both get their hash
    assert names.keep == [0, 1, 2, 4] and names.merged == {3: 0} and names.disambiguated == [0, 1, 2, 4]
    assert names.names[0] == "survey-ca978112" and names.names[1] == "survey-3e23e816"  # sha256("a"), ("b")
    assert names.names[3] == names.names[0] and names.names[2] == "other-2e7d2c03" and names.names[4] == "Other-18ac3e73"
    assert names.messages(["p0", "p1", "p2", "p3", "p4"])[0] == "p3: identical to p0; processed once as survey-ca978112"
    plain = unique_output_names(["a", "b/../c"], ["x", "y"])
    assert plain.names == ["a", "b_.._c"] and plain.merged == {} and plain.disambiguated == []  # stable names
    with pytest.raises(ValueError, match="2 names but 1 contents"):
        unique_output_names(["a", "b"], ["x"])


def _judge(tmp_path: Path, server: FakeChatServer) -> Path:
    judge = tmp_path / "judge.yaml"
    judge.write_text(f"backend: {{kind: openai, options: {{model: fake-judge, base_url: '{server.base_url}'}}}}\n")
    return judge


def test_score_two_inputs_with_one_stem_keeps_both_and_merges_a_repeat(tmp_path, capsys):
    """Old code: ``reviews/survey.json`` held only the last survey and comparison.md showed identical rows."""
    first, second = tmp_path / "a" / "survey.md", tmp_path / "b" / "survey.md"
    first.parent.mkdir()
    second.parent.mkdir()
    first.write_text("# Survey of oracles\n\n## Intro\n\nTest oracles decide pass or fail.\n", encoding="utf-8")
    second.write_text("# Survey of fuzzers\n\n## Intro\n\nFuzzers generate inputs.\n", encoding="utf-8")
    out = tmp_path / "out"
    with FakeChatServer() as server:
        code = main(["score", str(first), str(second), str(first), "--judge", str(_judge(tmp_path, server)),
                     "--out", str(out), "--allow-no-knowledge", "--no-progress", "--samples", "1",
                     "--dimensions", "readability"])
        n_requests = len(server.requests)
    assert code == 0
    reports = sorted(p.name for p in out.glob("survey*.json"))
    assert len(reports) == 2 and all(len(r) == len("survey-12345678.json") for r in reports)
    titles = sorted(json.loads((out / r).read_text())["survey"]["title"] for r in reports)
    assert titles == ["Survey of fuzzers", "Survey of oracles"]
    assert n_requests == 2  # the repeated file was scored once
    err = capsys.readouterr().err
    assert "identical to" in err and err.count("another input has the same name") == 2
    comparison = (out / "comparison.md").read_text()
    assert "Survey of fuzzers" in comparison and "Survey of oracles" in comparison


def test_reserved_run_file_stems_are_never_an_input_name():
    names = unique_output_names(["comparison", "Calls", "survey"], ["a", "b", "c"], reserved=("comparison", "calls"))
    # sha256("a") = ca978112..., sha256("b") = 3e23e816...: the reserved stems get their content hash, the rest not
    assert names.names == ["comparison-ca978112", "Calls-3e23e816", "survey"]
    assert names.reserved_hit == [0, 1] and names.disambiguated == [0, 1]
    assert names.messages(["comparison.md", "Calls.md", "survey.md"])[0] == (
        "comparison.md: its name is taken by a file of the run itself; written as comparison-ca978112")


def test_score_a_survey_called_comparison_md_keeps_its_report_and_the_comparison(tmp_path, capsys):
    """A survey named like the run's comparison report: neither replaces the other."""
    first, second = tmp_path / "comparison.md", tmp_path / "other.md"
    first.write_text("# Survey of oracles\n\n## Intro\n\nTest oracles decide pass or fail.\n", encoding="utf-8")
    second.write_text("# Survey of fuzzers\n\n## Intro\n\nFuzzers generate inputs.\n", encoding="utf-8")
    out = tmp_path / "out"
    with FakeChatServer() as server:
        assert main(["score", str(first), str(second), "--judge", str(_judge(tmp_path, server)), "--out", str(out),
                     "--no-progress", "--samples", "1", "--dimensions", "readability"]) == 0
    import hashlib

    from surveyalign.documents import read_document

    stem = "comparison-" + hashlib.sha256(read_document(first).text.encode()).hexdigest()[:8]
    assert json.loads((out / f"{stem}.json").read_text())["survey"]["title"] == "Survey of oracles"
    assert (out / "comparison.md").read_text().startswith("# Comparison")  # the run's comparison, not a report
    assert (out / "other.md").is_file() and f"written as {stem}" in capsys.readouterr().err


def _prism_judge(tmp_path: Path, options: str) -> Path:
    judge = tmp_path / "judge.yaml"
    judge.write_text(f"backend: {{kind: scripted, options: {options}}}\nnovelty: {{enabled: false}}\n")
    return judge


@pytest.mark.parametrize("options", ["{replies: []}", "{replies: ['no JSON here'], cycle: true}"])
def test_prism_with_every_extraction_failing_exits_3(tmp_path, capsys, options):
    """Old code: exit 0 with every metric empty (all 8 extractions failed: API errors, or unreadable answers)."""
    out = tmp_path / "run"
    code = main(["prism", str(FIXTURES / "iclr_paper.json"), str(FIXTURES / "iclr_reviews.json"),
                 "--judge", str(_prism_judge(tmp_path, options)), "--out", str(out), "--no-progress"])
    assert code == 3
    err = capsys.readouterr().err
    assert "no usable extraction in stage(s) adu, novelty_claims, flaws, comments" in err
    assert json.loads((out / "paper.json").read_text())["n_failed_extractions"] == 8  # 4 steps x 2 reviews


def test_prism_reviews_sharing_an_id_keep_their_own_files(tmp_path, capsys):
    """Two different review.txt files (one id) used to be refused or to replace each other's reviews/<id>.json."""
    for folder, text in (("a", "The method is sound but the baselines are weak."),
                         ("b", "The evaluation misses an ablation of the encoder.")):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "review.txt").write_text(text, encoding="utf-8")
    out = tmp_path / "run"
    code = main(["prism", str(FIXTURES / "iclr_paper.json"), str(tmp_path / "a" / "review.txt"),
                 str(tmp_path / "b" / "review.txt"), str(tmp_path / "a" / "review.txt"),
                 "--judge", str(_prism_judge(tmp_path, "{replies: []}")), "--out", str(out), "--no-progress"])
    assert code == 3  # no extraction could succeed with this judge; the files are still written
    files = sorted(p.name for p in (out / "reviews").glob("*.json"))
    assert len(files) == 2 and all(f.startswith("review-") for f in files)
    err = capsys.readouterr().err
    assert "repeated; scored once" in err and err.count("another review has the same id") == 2


def test_report_marks_averages_over_different_dimension_sets():
    from rich.console import Console

    from surveyalign.scoring.report import (
        PARTIAL_AVG_MARK,
        average_scopes,
        render_leaderboard,
    )

    dims4 = {d: {"mse": 1.0, "mae": 1.0} for d in ("readability", "structure", "comprehensiveness", "criticalness")}
    summaries = {"four": {"per_dimension": dims4, "avg_mse": 1.0, "avg_mae": 1.0, "align": 0.5, "n": 8, "n_scored": 8},
                 "one": {"per_dimension": {"readability": {"mse": 0.25, "mae": 0.5}}, "avg_mse": 0.25,
                         "avg_mae": 0.5, "align": 0.9, "n": 2, "n_scored": 2}}
    marks, notes = average_scopes(summaries)
    assert marks == {"four": "", "one": PARTIAL_AVG_MARK}
    assert notes == [(f"{PARTIAL_AVG_MARK} one: averages over 1 of 4 dimensions (Read); not comparable with the "
                     "other rows' averages")]
    console = Console(width=200, record=True)
    console.print(render_leaderboard(summaries))
    text = console.export_text()
    assert f"0.25 {PARTIAL_AVG_MARK}" in text and "1.00 †" not in text and "averages over 1 of 4" in text
    same = {"a": summaries["four"], "b": summaries["four"]}
    assert average_scopes(same) == ({"a": "", "b": ""}, [])


def test_score_report_shows_a_knowledge_skip_once_and_names_the_adapters():
    from surveyalign.inference.report import (  # noqa: F401
        render_html,
        render_markdown,
        write_comparison,
    )

    reason = "not judged: the adapter was trained with knowledge augmentation and none is available (x)"
    review = {"survey": {"title": "T", "source": "t.md"},
              "judge": {"name": "served", "backend": "openai", "model": "base-m", "samples": 1, "temperature": 0.7,
                        "seed": 0, "protocol": "surveyalign", "adapters": {"criticalness": "crit-lora"}},
              "dimensions": {"criticalness": {"score": None, "status": "knowledge_required", "reason": reason,
                                              "notes": [reason], "samples": [], "votes": {}, "n_samples": 0}}}
    md = render_markdown(review)
    assert md.count(reason) == 1 and "| skipped |" in md and "failed" not in md
    assert "## Criticalness: skipped" in md or "skipped" in md.split("## ")[1]
    assert "base base-m; adapters: criticalness=crit-lora" in md
    html = render_html([review])
    assert html.count(reason) == 1 and '<span class="skipped">skipped</span>' in html
    assert "adapters: criticalness=crit-lora" in html
    bare = {**review, "judge": {**review["judge"], "adapters": {}}}
    assert "no adapter: the base model answered every dimension" in render_markdown(bare)


def test_fetch_texts_gives_every_forum_its_own_pdf_name():
    """fetch-texts writes one PDF per OpenReview forum: ids that differ only in case or in unsafe characters must
    not share a file (a case-insensitive file system, ``a/b`` vs ``a_b``); a safe lower-case id keeps its name."""
    import hashlib

    from surveyalign.data.fetch.pipeline import pdf_stem

    url = "https://api2.openreview.net"
    assert pdf_stem("abc123", url) == "abc123"
    upper, lower = pdf_stem("aBc", url), pdf_stem("abc", url)
    assert upper == "aBc-" + hashlib.sha256(f"{url}\x00aBc".encode()).hexdigest()[:8] and lower == "abc"
    assert upper.casefold() != lower.casefold()
    slash, underscore = pdf_stem("a/b", url), pdf_stem("a_b", url)
    assert slash.startswith("a_b-") and underscore == "a_b" and slash != underscore
    assert pdf_stem("a/b", url) == slash  # stable across runs


def test_name_beside_earlier_values():
    import hashlib

    from surveyalign.paths import MAX_NAME_BYTES, content_sha256, name_beside_earlier

    digest = content_sha256("a")  # ca978112...
    assert name_beside_earlier("survey", digest, None) is None  # nothing there yet
    assert name_beside_earlier("survey", digest, {"sha256": digest, "source": "x/survey.pdf"}) is None  # a re-run
    assert name_beside_earlier("survey", digest, {"sha256": "0" * 64, "source": "a/survey.md"},
                               source="a/survey.md") is None  # the same file, edited since
    assert name_beside_earlier("survey", digest, {"sha256": "0" * 64, "source": "b/survey.md"},
                               source="a/survey.md") == "survey-ca978112"
    assert name_beside_earlier("survey", digest, {}) == "survey-ca978112"  # unreadable earlier report
    assert name_beside_earlier("survey-ca978112", digest, {"sha256": "1" * 64}) == "survey-ca978112ca1bbdca"
    # a stem of the longest length (120 bytes) stays within it: cut to 111 (+ the hash of the long name), + 9
    long = name_beside_earlier("a" * 120, digest, {})
    assert long == "a" * 102 + "-" + hashlib.sha256(("a" * 120).encode()).hexdigest()[:8] + "-ca978112"
    assert len(long) == MAX_NAME_BYTES


def test_score_into_a_folder_holding_another_surveys_report_keeps_both(tmp_path, capsys):
    """Two runs into one --out: ``score a/survey.md`` then ``score b/survey.md`` used to replace the first report."""
    first, second = tmp_path / "a" / "survey.md", tmp_path / "b" / "survey.md"
    first.parent.mkdir()
    second.parent.mkdir()
    first.write_text("# Survey of oracles\n\n## Intro\n\nTest oracles decide pass or fail.\n", encoding="utf-8")
    second.write_text("# Survey of fuzzers\n\n## Intro\n\nFuzzers generate inputs.\n", encoding="utf-8")
    out = tmp_path / "out"
    args = ["--out", str(out), "--no-progress", "--samples", "1", "--dimensions", "readability"]
    with FakeChatServer() as server:
        judge = str(_judge(tmp_path, server))
        assert main(["score", str(first), "--judge", judge, *args]) == 0
        assert main(["score", str(second), "--judge", judge, *args]) == 0
        capsys.readouterr()
        assert main(["score", str(first), "--judge", judge, *args]) == 0  # a re-run finds its own report again
    import hashlib

    from surveyalign.documents import read_document

    stem = "survey-" + hashlib.sha256(read_document(second).text.encode()).hexdigest()[:8]
    assert json.loads((out / "survey.json").read_text())["survey"]["title"] == "Survey of oracles"
    assert json.loads((out / f"{stem}.json").read_text())["survey"]["title"] == "Survey of fuzzers"
    assert sorted(p.name for p in out.glob("*.json")) == sorted(["survey.json", f"{stem}.json"])
    assert "holds the report of another survey" not in capsys.readouterr().err
    record = json.loads((out / "survey.json").read_text())["survey"]
    assert record["sha256"] == hashlib.sha256(read_document(first).text.encode()).hexdigest()


def test_prism_never_reuses_the_folder_of_another_papers_run(tmp_path, capsys, monkeypatch):
    """Two papers with one id (two ``paper.md``): the second used to resume into, and overwrite, the first's folder."""
    from surveyalign.prism.readers import read_paper
    from surveyalign.prism.report import paper_sha256

    monkeypatch.chdir(tmp_path)
    for folder, title in (("a", "Graph networks"), ("b", "Message passing")):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "paper.md").write_text(f"# {title}\n\n## Intro\n\nWe study {title.lower()}.\n",
                                                   encoding="utf-8")
        (tmp_path / folder / "review.txt").write_text("The method is sound but the baselines are weak.",
                                                      encoding="utf-8")
    judge = str(_prism_judge(tmp_path, "{replies: []}"))

    def prism(folder: str, *extra: str) -> int:
        return main(["prism", f"{folder}/paper.md", f"{folder}/review.txt", "--judge", judge, "--no-progress", *extra])

    assert prism("a") == 3 and prism("b") == 3 and prism("a") == 3  # no usable extraction with this judge
    digest = paper_sha256(read_paper(tmp_path / "b" / "paper.md"))
    err = capsys.readouterr().err
    assert f"runs/prism/paper holds the PRISM run of another paper with id 'paper'; this run goes to " \
           f"runs/prism/paper-{digest[:8]}" in err and err.count("holds the PRISM run") == 1
    first = json.loads((tmp_path / "runs/prism/paper/paper.json").read_text())
    second = json.loads((tmp_path / f"runs/prism/paper-{digest[:8]}/paper.json").read_text())
    assert (first["title"], second["title"]) == ("Graph networks", "Message passing")
    assert second["sha256"] == digest and first["sha256"] == paper_sha256(read_paper(tmp_path / "a" / "paper.md"))
    assert prism("b", "--out", "runs/prism/paper") == 2  # an explicit folder of another paper: refused
    assert "runs/prism/paper/paper.json holds the PRISM run of another paper (paper); pass another --out" in \
        capsys.readouterr().err
    assert json.loads((tmp_path / "runs/prism/paper/paper.json").read_text())["title"] == "Graph networks"


def test_dpo_pairs_with_no_pair_at_all_exits_3(tiny_model_dir, dataset_dir, tmp_path, capsys):
    """Issue 21 B: ``train dpo-pairs`` exited 0 when no unit got a pair. One new token per answer: every sample is
    cut off (truncated, never a rejected answer), so the 2 units are recorded without a pair."""
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    from surveyalign.training import read_pairs

    adapter = tmp_path / "adapter"  # an untrained LoRA adapter on the tiny model (no training record)
    get_peft_model(AutoModelForCausalLM.from_pretrained(tiny_model_dir),
                   LoraConfig(r=2, target_modules=["q_proj"])).save_pretrained(adapter)
    out = tmp_path / "pairs.jsonl"
    code = main(["train", "dpo-pairs", "--adapter", str(adapter), "--dataset", str(dataset_dir), "--model",
                 str(tiny_model_dir), "--dimension", "readability", "--out", str(out), "--k", "1", "--limit", "2",
                 "--max-new-tokens", "1", "--max-length", "4096", "--device", "cpu"])
    assert code == 3
    assert f"no unit got a pair (2 recorded without one, each with its reason, in {out}; exit 3)" in \
        capsys.readouterr().err
    records = read_pairs(out, paired_only=False)
    assert [r["status"] for r in records] == ["no_pair", "no_pair"]


def test_per_source_rows_mark_averages_over_fewer_dimensions():
    """A source labelled on fewer dimensions (MOPRD on Readability only, say) must not share an unmarked AVG column
    with the others, in the text table and on the HTML page."""
    from rich.console import Console

    from surveyalign.scoring.html_report import render_html_report
    from surveyalign.scoring.report import (
        PARTIAL_AVG_MARK,
        render_per_source,
        source_scopes,
    )

    two = {d: {"mse": 1.0, "mae": 1.0} for d in ("readability", "structure")}
    summary = {"per_dimension": two, "avg_mse": 1.0, "avg_mae": 1.0, "n": 6, "n_scored": 6, "per_source": {
        "f1000": {"per_dimension": two, "avg_mse": 1.0, "avg_mae": 1.0, "n": 4, "n_scored": 4, "n_papers": 2},
        "moprd": {"per_dimension": {"readability": {"mse": 0.5, "mae": 0.5}}, "avg_mse": 0.5, "avg_mae": 0.5,
                  "n": 2, "n_scored": 2, "n_papers": 1}}}
    marks, notes = source_scopes({"A": summary})
    assert marks == {("A", "f1000"): "", ("A", "moprd"): PARTIAL_AVG_MARK}
    assert notes == [(f"{PARTIAL_AVG_MARK} A / moprd: averages over 1 of 2 dimensions (Read); not comparable with "
                      "the other rows' averages")]
    console = Console(width=200, record=True)
    console.print(render_per_source({"A": summary}))
    text = console.export_text()
    assert f"0.50 {PARTIAL_AVG_MARK}" in text and f"1.00 {PARTIAL_AVG_MARK}" not in text and "A / moprd" in text
    page = render_html_report({"A": summary}, {})
    assert f"<td>0.500 {PARTIAL_AVG_MARK}</td>" in page and f"<td>1.000 {PARTIAL_AVG_MARK}</td>" not in page
    assert "A / moprd: averages over 1 of 2 dimensions" in page


def test_prism_rerun_with_another_review_under_one_id_keeps_both_files(tmp_path, capsys):
    """Issue 21 A across runs: the same paper, first with a/review.txt, then with b/review.txt (same id, other
    text), into one --out: reviews/review.json of the first run used to be replaced."""
    import hashlib

    texts = {"a": "The method is sound but the baselines are weak.", "b": "The evaluation misses an ablation."}
    for folder, text in texts.items():
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "review.txt").write_text(text, encoding="utf-8")
    out, judge = tmp_path / "run", str(_prism_judge(tmp_path, "{replies: []}"))
    for folder in ("a", "b", "a"):  # the third run finds a's own file again
        main(["prism", str(FIXTURES / "iclr_paper.json"), str(tmp_path / folder / "review.txt"), "--judge", judge,
              "--out", str(out), "--no-progress"])
    digest = hashlib.sha256(texts["b"].encode()).hexdigest()
    assert sorted(p.name for p in (out / "reviews").glob("*.json")) == ["review-" + digest[:8] + ".json",
                                                                         "review.json"]
    assert json.loads((out / "reviews" / "review.json").read_text())["sha256"] == \
        hashlib.sha256(texts["a"].encode()).hexdigest()
    assert json.loads((out / "reviews" / f"review-{digest[:8]}.json").read_text())["sha256"] == digest


def test_prepared_knowledge_for_two_surveys_sharing_a_stem(tmp_path):
    """Issue 21 A: with --knowledge DIR, survey.md and survey.pdf both read DIR/survey.<dim>.txt; each reads its
    own DIR/survey-<hash>.<dim>.txt (the name of its report) when it is there."""
    import hashlib

    from surveyalign.documents import read_document
    from surveyalign.inference.knowledge import FileKnowledge

    first, second = tmp_path / "a" / "survey.md", tmp_path / "b" / "survey.md"
    for path, text in ((first, "# Survey of oracles\n\nOracles.\n"), (second, "# Survey of fuzzers\n\nFuzzers.\n")):
        path.parent.mkdir()
        path.write_text(text, encoding="utf-8")
    docs = [read_document(first), read_document(second)]
    ka = tmp_path / "ka"
    ka.mkdir()
    (ka / "survey.criticalness.txt").write_text("shared trends", encoding="utf-8")
    own = f"survey-{hashlib.sha256(docs[1].text.encode()).hexdigest()[:8]}"
    (ka / f"{own}.criticalness.txt").write_text("fuzzing trends", encoding="utf-8")
    source = FileKnowledge(ka)
    assert [source(d, "criticalness").text for d in docs] == ["shared trends", "fuzzing trends"]
    assert source(docs[1], "criticalness").details == {"path": str(ka / f"{own}.criticalness.txt")}

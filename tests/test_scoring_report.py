"""`surveyalign report` over run folders built on a real dataset (the shipped sample release), and the
leaderboard table."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from rich.console import Console

from surveyalign.cli import main
from surveyalign.scoring import render_leaderboard, summarize_predictions


def _write_run(folder: Path, name: str, records: list[dict], dataset: Path | None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "predictions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    config = {"name": name, "config": {"name": name, "dataset": str(dataset)}} if dataset else {"name": name}
    (folder / "run_config.json").write_text(json.dumps(config))
    return folder


def _test_units(dataset_dir: Path) -> list[dict]:
    from surveyalign.data import load_surveyreview

    # validation + test papers: at least the bootstrap's minimum of papers, so the report prints intervals
    ds = [row for split in ("validation", "test") for row in load_surveyreview(str(dataset_dir), "all", split=split)]
    return [{k: row[k] for k in ("unit_id", "paper_id", "review_id", "source", "dimension")} | {"reference": row["score"]}
            for row in ds]


@pytest.fixture(scope="module")
def runs(dataset_dir, tmp_path_factory):
    units = _test_units(dataset_dir)
    good, const = [], []
    for i, u in enumerate(units):
        status = "parse_failed" if i % 11 == 3 else "api_error" if i % 13 == 5 else "scored"
        pred = (u["reference"] if i % 3 else -u["reference"]) if status == "scored" else None
        good.append({**u, "prediction": pred, "status": status, "rationale": "r", "error": None,
                     "samples": [], "consistency": (0.2 * (i % 6)) if status == "scored" else None})
        const.append({**u, "prediction": -1, "status": "scored", "rationale": "c", "error": None,
                      "samples": [], "consistency": None})
    root = tmp_path_factory.mktemp("runs")
    return (_write_run(root / "good", "good judge", good, dataset_dir),
            _write_run(root / "const", "constant -1", const, dataset_dir), good, const)


def test_report_reads_runs_recomputes_and_compares(runs, dataset_dir, tmp_path, capsys):
    from surveyalign.data import load_surveyreview

    run_a, run_b, good, _ = runs
    out_json = tmp_path / "report.json"
    rc = main(["report", str(run_a), str(run_b), "--bootstrap", "200", "--compare", "--authors",
               "--json", str(out_json), "--width", "260"])
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    payload = json.loads(out_json.read_text())
    summaries = payload["summaries"]
    assert list(summaries) == ["good judge", "constant -1"]
    # baselines come from the training split of the dataset named in run_config.json
    train = load_surveyreview(str(dataset_dir), "all", split="train")
    scores: dict[str, list[int]] = {}
    for dim, score in zip(train["dimension"], train["score"]):
        scores.setdefault(dim, []).append(score)
    expected = summarize_predictions(good, train_scores=scores, bootstrap=200, seed=0)
    got = summaries["good judge"]
    assert got["avg_mse"] == pytest.approx(expected["avg_mse"]) and got["has"] == pytest.approx(expected["has"])
    assert got["ci"] == expected["ci"]
    for dim, values in scores.items():
        counts = Counter(values)
        top = max(counts.values())
        label = got["baselines"]["majority"]["per_dimension"][dim]["label"]
        assert counts[label] == top
    n_fail = sum(r["status"] != "scored" for r in good)
    assert got["n_failed"] == n_fail and got["n"] == len(good)
    # the constant -1 judge equals the majority-class baseline where the training majority is -1
    const_s = summaries["constant -1"]
    assert const_s["has"] is None and const_s["has_note"]
    for dim, entry in const_s["per_dimension"].items():
        if got["baselines"]["majority"]["per_dimension"][dim]["label"] == -1:
            assert entry["skill_vs_majority"] == pytest.approx(0.0)
            assert entry["mse"] == pytest.approx(got["baselines"]["majority"]["per_dimension"][dim]["mse"])
    cmp = payload["comparison"]["metrics"]["avg_mse"]
    assert cmp["a"] == pytest.approx(summarize_predictions(
        [r for r in good if r["status"] == "scored"], bootstrap=0)["avg_mse"])
    text = captured.out
    has_ci = got["ci"]["has"]
    assert f"[{has_ci[0]:.2f}, {has_ci[1]:.2f}]" in text and f"{got['has']:.2f}" in text
    for needle in ("leaderboard", "good judge", "constant -1", "95% CI", "Headline figures", "Per review source", "Table 7",
                   "majority class", "prior sampling", "Failures", "Paired bootstrap", "Authors' convention"):
        assert needle in text, needle
    for source in {u["source"] for u in good}:
        assert source in text


def test_report_without_dataset_flags_train_scores(runs, tmp_path, capsys):
    _, _, good, _ = runs
    bare = _write_run(tmp_path / "bare", "bare", good, None)
    assert main(["report", str(bare), "--bootstrap", "0"]) == 0
    captured = capsys.readouterr()
    assert "--train-scores" in captured.err and "baselines unavailable" in captured.out
    train_file = tmp_path / "train.json"
    train_file.write_text(json.dumps({"readability": [-1, -1, 1], "structure": [-1], "comprehensiveness": [1, 1, -1],
                                      "criticalness": [-1, 2, -1]}))
    out_json = tmp_path / "r.json"
    assert main(["report", str(bare), "--bootstrap", "0", "--train-scores", str(train_file),
                 "--json", str(out_json)]) == 0
    summary = json.loads(out_json.read_text())["summaries"]["bare"]
    assert summary["baselines"]["majority"]["per_dimension"]["comprehensiveness"]["label"] == 1


def test_report_errors_are_named(tmp_path, capsys):
    assert main(["report", str(tmp_path / "absent")]) == 2
    assert "not a folder" in capsys.readouterr().err
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "predictions.jsonl").write_text('{"unit_id": "a"}\nnot json\n')
    assert main(["report", str(broken)]) == 2
    assert "predictions.jsonl:2" in capsys.readouterr().err
    (broken / "predictions.jsonl").write_text('{"unit_id": "a"}\n')
    assert main(["report", str(broken)]) == 2
    assert "missing field" in capsys.readouterr().err
    assert main(["report", str(broken), str(broken), str(broken), "--compare"]) == 2


def test_leaderboard_columns_and_missing_values():
    per = {"readability": {"mse": 1.5, "mae": 0.75}, "criticalness": {"mse": 0.5, "mae": 0.25}}
    rows = {"judge": {"per_dimension": per, "avg_mse": 1.0, "avg_mae": 0.5, "rqs": None, "align": 0.8,
                      "has": None, "has_note": "no RQS", "n": 4, "n_scored": 3, "status_counts": {"parse_failed": 1}}}
    table = render_leaderboard(rows)
    headers = [c.header for c in table.columns]
    # RQS, HAS and Skill are missing for every judge: left out, and the caption says so
    assert headers == ["Judge", "Read MSE/MAE", "Crit MSE/MAE", "AVG MSE", "AVG MAE", "Align", "scored", "failed"]
    cells = {c.header: next(iter(c.cells)) for c in table.columns}
    assert cells["Read MSE/MAE"] == "1.50/0.75" and cells["AVG MSE"] == "1.00" and cells["scored"] == "3/4"
    assert cells["failed"] == "parse 1"
    assert "RQS/HAS columns left out" in table.caption and "no RQS" in table.caption
    assert "no training labels" in table.caption
    both = render_leaderboard({**rows, "other": {**rows["judge"], "has": 0.5, "rqs": 0.2}})
    cells = {c.header: [*c.cells] for c in both.columns}
    assert cells["HAS"] == ["–", "0.50"] and cells["RQS"] == ["–", "0.20"]
    # one dimension: AVG is that dimension, no repeated columns; a long judge name is never cut at 80 columns
    name = "surveyalign-readability (tiny LoRA)"
    one = {name: {**rows["judge"], "per_dimension": {"readability": per["readability"]}, "rqs": 0.4, "has": 0.7,
                  "accuracy": 0.625, "skill_vs_majority": -0.1, "status_counts": {"parse_failed": 1, "api_error": 33},
                  "weights": {"alpha": [0.4, 0.6], "beta": [0.75, 0.25], "delta_s": 4.0}}}
    table = render_leaderboard(one)
    assert "readability" in table.title and [c.header for c in table.columns][1:3] == ["MSE", "MAE"]
    assert next(iter(next(c for c in table.columns if c.header == "Acc").cells)) == "0.62"
    assert "HAS weights: Align = 0.4 A_MSE + 0.6 A_MAE, HAS = 0.75 Align + 0.25 RQS" in table.caption
    console = Console(width=80, record=True)
    console.print(table)
    text = console.export_text()
    assert "surveyalign-readability" in text and "(tiny LoRA)" in text and "api 33" in text
    assert max(len(line) for line in text.splitlines()) <= 80


def test_failures_table_shows_scores_without_rationale():
    from surveyalign.scoring.report import render_failures

    new = {"per_dimension": {"structure": {"n": 5, "n_scored": 4, "n_scored_without_rationale": 2,
                                           "n_parse_failed": 1, "n_error": 0, "n_missing_text": 0}}}
    old = {"per_dimension": {"structure": {"n": 5, "n_scored": 5, "n_parse_failed": 0, "n_error": 0,
                                           "n_missing_text": 0}}}
    table = render_failures({"new": new, "old metrics.json": old})
    cells = {c.header: [*c.cells] for c in table.columns}
    assert cells["no rationale"] == ["2", "–"] and cells["parse failed"] == ["1", "0"]


@pytest.mark.parametrize("argv", [["report", "--help"], ["metrics", "register", "--help"]])
def test_help(argv, capsys):
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 0
    assert "usage: surveyalign" in capsys.readouterr().out


def test_report_knows_a_consistency_stage_without_scores(runs, tmp_path):
    _, _, _, const = runs
    run = _write_run(tmp_path / "rqs-failed", "rqs failed", const, None)
    config = json.loads((run / "run_config.json").read_text())
    (run / "run_config.json").write_text(json.dumps({**config, "rqs": {"backend": {"kind": "scripted"}}}))
    out = tmp_path / "r.json"
    assert main(["report", str(run), "--bootstrap", "0", "--json", str(out)]) == 0
    summary = json.loads(out.read_text())["summaries"]["rqs failed"]
    assert summary["has"] is None and "no unit got a consistency score" in summary["has_note"]


def test_train_scores_found_from_any_folder_via_recorded_absolute_path(tmp_path, monkeypatch):
    """run_config.json names a relative dataset (as typed by the user) and the absolute data.path the harness
    recorded: the report finds the training labels from another working folder."""
    import json as _json

    from surveyalign.data import build_dataset, load_surveyreview, sample_release_dir
    from surveyalign.scoring.report import find_train_scores

    data = build_dataset(sample_release_dir(), tmp_path / "work" / "data" / "surveyreview")
    run = tmp_path / "work" / "runs" / "r1"
    run.mkdir(parents=True)
    (run / "run_config.json").write_text(_json.dumps(
        {"config": {"dataset": "data/surveyreview"}, "data": {"path": str(data.path)}}))
    monkeypatch.chdir(tmp_path)  # not the folder the relative path was typed in
    scores, message = find_train_scores(run)
    train = load_surveyreview(data.path, "all", split="train")
    assert scores is not None, message
    assert sum(len(v) for v in scores.values()) == len(train)
    assert sorted(scores["readability"]) == sorted(r["score"] for r in train if r["dimension"] == "readability")

"""The human ceiling (issue 25 part 1): each review against every other review of the same paper and dimension,
checked by hand on a made-up raw release with three reviews per paper (``surveyalign/scoring/ceiling.py``)."""

from __future__ import annotations

import json
import math

import krippendorff
import numpy as np
import pytest

from surveyalign.cli import main
from surveyalign.scoring import (
    CEILING_NAME,
    ceiling_reviews,
    compare_to_ceiling,
    human_ceiling,
)

# paper A readability: -1, -1, +1; paper B readability: +2, +1, -1 (three reviews each)
PAPER_A = (-1, -1, 1)
PAPER_B = (2, 1, -1)


def _reviews(papers: dict[str, tuple[int, ...]], dimension: str = "readability") -> list[dict]:
    return [{"paper_id": p, "review_id": f"{p}-r{k}", "dimension": dimension, "score": s, "unit_id": f"{p}-r{k}::{dimension}"}
            for p, scores in papers.items() for k, s in enumerate(scores, start=1)]


def test_ceiling_figures_by_hand():
    # unit means of squared differences to the other two reviews: A 2, 2, 4; B 5, 2.5, 6.5 -> MSE 22/6
    # absolute: A 1, 1, 2; B 2, 1.5, 2.5 -> MAE 10/6
    c = human_ceiling(ceiling_reviews(_reviews({"A": PAPER_A, "B": PAPER_B})), n_resamples=0)
    e = c["per_dimension"]["readability"]
    assert (c["name"], c["n"], c["n_pairs"], c["n_groups"], c["n_papers"]) == (CEILING_NAME, 6, 12, 2, 2)
    assert e["mse"] == pytest.approx(22 / 6) and e["mae"] == pytest.approx(10 / 6)
    assert c["avg_mse"] == pytest.approx(22 / 6) and c["avg_mae"] == pytest.approx(10 / 6)
    # QWK on category ranks 1,1,2 / 3,2,1: observed weighted disagreement 8, expected 20/3 -> 1 - 24/20
    assert e["qwk"] == pytest.approx(-0.2)
    # multi-coder alpha: D_o = 22/6, D_e = 106/30 -> 1 - 55/53
    assert e["krippendorff_alpha"] == pytest.approx(-2 / 53)
    ref = krippendorff.alpha(reliability_data=np.array([[-1, 2], [-1, 1], [1, -1]], dtype=float),
                             level_of_measurement="interval")
    assert e["krippendorff_alpha"] == pytest.approx(ref)
    assert c["ci"] is None and c["insufficient"]


def test_ceiling_excluded_single_and_errors():
    rows = _reviews({"A": PAPER_A, "C": (1,)})
    rows.append({"paper_id": "A", "review_id": "A-r4", "dimension": "readability", "score": 0})
    c = human_ceiling(ceiling_reviews(rows), n_resamples=0)
    assert (c["n"], c["n_single"], c["n_excluded"]) == (3, 1, 1)
    assert human_ceiling(ceiling_reviews(_reviews({"C": (1,)})), n_resamples=0)["status"] == "no data"
    with pytest.raises(ValueError, match="review record 1: paper A, review A-r1, dimension readability repeats"):
        ceiling_reviews(_reviews({"A": (1,)}) * 2)
    with pytest.raises(ValueError, match="review record 0: missing field review_id"):
        ceiling_reviews([{"paper_id": "A", "dimension": "readability", "score": 1}])


def _twelve() -> dict[str, tuple[int, ...]]:
    return {f"p{i:02d}": (PAPER_A if i % 2 else PAPER_B) for i in range(12)}


def _judge(papers, predict) -> list[dict]:
    out = []
    for r in _reviews(papers):
        out.append({"unit_id": r["unit_id"], "paper_id": r["paper_id"], "review_id": r["review_id"],
                    "dimension": "readability", "reference": r["score"], "status": "scored",
                    "prediction": predict(r), "source": "moprd"})
    return out


def test_ceiling_intervals_and_verdicts():
    papers = _twelve()
    reviews = ceiling_reviews(_reviews(papers))
    c = human_ceiling(reviews, n_resamples=400, seed=1)
    assert c["status"] == "ok" and c["avg_mse"] == pytest.approx(22 / 6)
    lo, hi = c["ci"]["avg_mse"]
    assert 8 / 3 <= lo < 22 / 6 < hi <= 14 / 3  # between the per-paper means of A (8/3) and B (14/3)
    perfect = compare_to_ceiling(_judge(papers, lambda r: r["score"]), reviews, n_resamples=400)
    m = perfect["metrics"]["avg_mse"]
    assert (perfect["n_units"], perfect["n_papers"], m["judge"], m["ceiling"]) == (36, 12, 0.0, pytest.approx(22 / 6))
    assert m["diff"] == pytest.approx(-22 / 6) and m["ci95"][1] < 0 and perfect["verdict"] == "beyond the ceiling"
    flip = {-2: 2, -1: 2, 1: -2, 2: -2}
    worse = compare_to_ceiling(_judge(papers, lambda r: flip[r["score"]]), reviews, n_resamples=400)
    # A: errors 9, 9, 9 (mean 9); B: 16, 9, 9 -> judge MSE (27 + 34) / 6 per pair of papers
    assert worse["metrics"]["avg_mse"]["judge"] == pytest.approx(61 / 6)
    assert worse["verdict"] == "below the ceiling" and worse["metrics"]["avg_mse"]["ci95"][0] > 0
    # the next review's score: the same errors as the ceiling on every paper except two (perfect and flipped)
    nxt = {(r["paper_id"], r["review_id"]): r for r in reviews}

    def cyclic(r):
        if r["paper_id"] == "p00":
            return r["score"]
        if r["paper_id"] == "p01":
            return flip[r["score"]]
        k = int(r["review_id"][-1]) % 3 + 1
        return nxt[(r["paper_id"], f"{r['paper_id']}-r{k}")]["score"]

    within = compare_to_ceiling(_judge(papers, cyclic), reviews, n_resamples=400)
    ci = within["metrics"]["avg_mse"]["ci95"]
    assert ci[0] < 0 < ci[1] and within["verdict"] == "within the ceiling"
    few = compare_to_ceiling(_judge({"A": PAPER_A}, lambda r: r["score"]), ceiling_reviews(_reviews({"A": PAPER_A})))
    assert few["verdict"] == "insufficient data" and few["metrics"]["avg_mse"]["p_value"] is None
    with pytest.raises(ValueError, match="no unit scored by the judge has another review"):
        compare_to_ceiling(_judge({"C": (1,)}, lambda r: 1), ceiling_reviews(_reviews({"C": (1,)})))


def _run(tmp_path, name, records):
    run = tmp_path / name
    run.mkdir()
    (run / "predictions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    (run / "run_config.json").write_text(json.dumps({"name": name}), encoding="utf-8")
    return run


def test_report_prints_another_reviewer_row_and_verdicts(tmp_path, capsys):
    papers = _twelve()
    a = _run(tmp_path, "perfect", _judge(papers, lambda r: r["score"]))
    b = _run(tmp_path, "always-minus-one", _judge(papers, lambda r: -1))
    out_json = tmp_path / "r.json"
    html = tmp_path / "r.html"
    assert main(["report", str(a), str(b), "--compare", "--bootstrap", "300", "--width", "250",
                 "--json", str(out_json), "--html", str(html)]) == 0
    text = capsys.readouterr().out
    assert "another reviewer (n=36)" in text and "Human ceiling" in text
    assert "beyond the ceiling" in text
    payload = json.loads(out_json.read_text())
    assert payload["ceiling"]["avg_mse"] == pytest.approx(22 / 6)
    # always -1: A errors 0, 0, 4; B 9, 4, 0 -> 17/6, below the ceiling's 22/6 on average
    m = payload["ceiling_comparison"]["always-minus-one"]["metrics"]["avg_mse"]
    assert m["judge"] == pytest.approx(17 / 6) and m["ceiling"] == pytest.approx(22 / 6)
    assert m["verdict"] in ("within the ceiling", "beyond the ceiling")
    page = html.read_text()
    assert 'class="ceiling"' in page and "another reviewer (n=36)" in page and 'id="ceiling-comparison"' in page


def test_report_ceiling_from_a_raw_release_built_dataset(tmp_path, capsys):
    from surveyalign.data import build_dataset

    release = tmp_path / "release" / "raw"
    release.mkdir(parents=True)
    records = []
    for p in range(3):
        for k, score in enumerate((PAPER_A, PAPER_B, PAPER_A)[p], start=1):
            records.append({"uid": f"moprd-p{p}-v1-r{k}", "source": "moprd", "paper_title": f"A survey of topic {p} methods",
                            "paper_text": f"# A survey of topic {p} methods\n\nBody text {p}.",
                            "result": [{"dimension": "Readability", "score": score, "reasons": [f"reason {p} {k}"]}]})
    (release / "test_samples.json").write_text(json.dumps(records), encoding="utf-8")
    built = build_dataset(tmp_path / "release", tmp_path / "ds", records="raw")
    assert built is not None
    run = _run(tmp_path, "lonely", [{"unit_id": "x::readability", "paper_id": "zz", "review_id": "x",
                                     "dimension": "readability", "reference": 1, "status": "scored",
                                     "prediction": 1}])
    assert main(["report", str(run), "--bootstrap", "0", "--width", "250"]) == 0
    captured = capsys.readouterr()
    assert "no human ceiling" in captured.err and "another reviewer" not in captured.out
    assert main(["report", str(run), "--bootstrap", "0", "--width", "250", "--ceiling", str(tmp_path / "ds"),
                 "--json", str(tmp_path / "c.json")]) == 0
    ceiling = json.loads((tmp_path / "c.json").read_text())["ceiling"]
    # papers A, B, A: MSE (8 + 14 + 8) / 9
    assert ceiling["n"] == 9 and ceiling["avg_mse"] == pytest.approx(30 / 9)
    assert main(["report", str(run), "--ceiling", str(tmp_path / "nope")]) == 2
    assert "error: --ceiling" in capsys.readouterr().err
    assert not math.isnan(ceiling["avg_mae"])


def test_every_leaderboard_prints_the_ceiling_row():
    from rich.console import Console

    from surveyalign.scoring import render_leaderboard, summarize_predictions

    summary = summarize_predictions(_judge(_twelve(), lambda r: -1), bootstrap=50)
    assert summary["ceiling"]["avg_mse"] == pytest.approx(22 / 6) and summary["ceiling"]["n"] == 36
    console = Console(width=200, record=True)
    console.print(render_leaderboard({"J": summary, "K": summary}))
    text = console.export_text()
    assert text.count("another reviewer (n=36)") == 1  # the same units: one row
    single = summarize_predictions(_judge({"C": (1,)}, lambda r: 1), bootstrap=0)
    assert single["ceiling"] is None

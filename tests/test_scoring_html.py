"""`surveyalign report RUN... --html OUT.html`: a self-contained page whose tables carry the right numbers
(computed by hand for the made-up runs below), for one run and for a comparison."""

from __future__ import annotations

import base64
import json
from html.parser import HTMLParser
from pathlib import Path

import pytest

from surveyalign.cli import main

READ_REFS = [-1, -1, 1, 2, -2, -1, -1, 1, -1, -1, 1, -1]  # human readability scores of papers p0..p11


def _records(judge: str) -> list[dict]:
    """12 papers x (readability, structure). Judge "A" is right except p0 readability (says +1) and a parse
    failure on p1 structure; judge "B" always says -1."""
    out = []
    for i in range(12):
        for dim, ref in (("readability", READ_REFS[i]), ("structure", 1 if i % 4 == 0 else -1)):
            pred, status = (ref, "scored") if judge == "A" else (-1, "scored")
            if judge == "A" and i == 0 and dim == "readability":
                pred = 1
            if judge == "A" and i == 1 and dim == "structure":
                pred, status = None, "parse_failed"
            out.append({"unit_id": f"p{i}-r1::{dim}", "paper_id": f"p{i}", "review_id": f"p{i}-r1",
                        "source": "f1000" if i % 2 == 0 else "moprd", "dimension": dim, "reference": ref,
                        "prediction": pred, "status": status, "rationale": "r", "error": None})
    return out


def _run(root: Path, judge: str) -> Path:
    folder = root / f"run-{judge}"
    folder.mkdir(parents=True)
    (folder / "predictions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in _records(judge)))
    (folder / "run_config.json").write_text(json.dumps({"name": f"judge {judge}", "model": f"model-{judge}",
                                                        "seed": 7}))
    return folder


class _Page(HTMLParser):
    """Tables by id ({id: [[cell text, ...], ...]}), images and every src/href of the page."""

    def __init__(self):
        super().__init__()
        self.tables: dict[str, list[list[str]]] = {}
        self.images: list[str] = []
        self.links: list[str] = []
        self._table = None
        self._row = None
        self._cell = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.links += [a[k] for k in ("src", "href") if k in a]
        if tag == "img":
            self.images.append(a["src"])
        elif tag == "table":
            self._table = self.tables.setdefault(a.get("id", f"table{len(self.tables)}"), [])
        elif tag == "tr" and self._table is not None:
            self._row = []
            self._table.append(self._row)
        elif tag in ("td", "th") and self._row is not None:
            self._cell = []

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self._row.append(" ".join("".join(self._cell).split()))
            self._cell = None
        elif tag == "table":
            self._table = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data + " ")


def _parse(path: Path) -> _Page:
    page = _Page()
    page.feed(path.read_text(encoding="utf-8"))
    return page


def _row(table: list[list[str]], first: str) -> list[str]:
    return next(r for r in table if r and r[0] == first)


@pytest.fixture
def train_scores(tmp_path) -> Path:
    path = tmp_path / "train.json"
    path.write_text(json.dumps({"readability": [-1, -1, -1, 1], "structure": [-1, -1, 1]}))
    return path


def test_html_report_for_one_run(tmp_path, train_scores, capsys):
    run = _run(tmp_path, "A")
    out = tmp_path / "report" / "one.html"
    assert main(["report", str(run), "--html", str(out), "--bootstrap", "200", "--train-scores", str(train_scores)]) == 0
    assert f"wrote {out}" in capsys.readouterr().out
    page = _parse(out)
    # self-contained: every src/href is an inline data: URI (each one a real PNG) or a link inside the page
    assert page.links and all(link.startswith(("data:image/png;base64,", "#")) for link in page.links)
    assert len(page.images) == 2  # confusion matrices + score distributions of the one judge
    assert all(base64.b64decode(src.split(",", 1)[1])[:8] == b"\x89PNG\r\n\x1a\n" for src in page.images)
    board = page.tables["leaderboard"]
    assert board[0][:5] == ["Judge", "readability MSE", "readability MAE", "structure MSE", "structure MAE"]
    a = _row(board, "judge A")
    # readability: one unit off by 2 of 12 -> MSE 4/12, MAE 2/12; structure: 11 scored, all right -> 0
    assert a[1:5] == ["0.333", "0.167", "0.000", "0.000"]
    assert a[5].startswith("0.167 [") and a[6].startswith("0.083 [")  # AVG MSE / AVG MAE with their CIs
    assert a[7] == "–" and a[-2] == "23/24"  # no consistency stage: no RQS
    assert board[0][-1] == "survey read" and a[-1] == "–"  # records written without read blocks
    majority = _row(board, "baseline: majority class")  # always -1: readability 22/12, structure 12/12
    assert majority[1] == "1.833" and majority[3] == "1.000" and majority[5] == "1.417"
    assert _row(board, "baseline: prior sampling")
    conf = page.tables["confusion-0-readability"]
    assert conf[0] == ["judge \\ human", "-2", "-1", "1", "2"]
    assert conf[1:] == [["-2", "1", "0", "0", "0"], ["-1", "0", "6", "0", "0"], ["1", "0", "1", "3", "0"],
                        ["2", "0", "0", "0", "1"]]
    stru = page.tables["confusion-0-structure"]
    assert [r[1:] for r in stru[1:]] == [["0", "0", "0", "0"], ["0", "8", "0", "0"], ["0", "0", "3", "0"],
                                         ["0", "0", "0", "0"]]
    dist = page.tables["distribution-0"]
    assert dist[1] == ["readability", "human", "1", "7", "3", "1"]
    assert dist[2] == ["readability", "judge", "1", "6", "4", "1"]
    failures = page.tables["failures"]
    assert failures[0] == ["Judge", "scored", "parse_failed", "api_error", "prompt_too_long", "missing_text", "missing",
                           "total"]
    assert _row(failures, "judge A")[1:] == ["23", "1", "0", "0", "0", "0", "24"]
    sources = {(r[0], r[1]): r for r in page.tables["per-source"][1:]}
    # f1000 = even papers: p0 readability off by 2 among 6 units -> MSE 4/6; structure all right
    assert sources[("judge A", "f1000")][2:5] == ["6", "12/12", "0.333"]
    assert sources[("judge A", "moprd")][2:5] == ["6", "11/12", "0.000"]
    provenance = [t for k, t in page.tables.items() if k.startswith("table")]
    assert ["model", "model-A"] in provenance[-1] and ["run folder", str(run)] in provenance[-1]
    assert "comparison" not in page.tables


def test_html_report_for_a_comparison(tmp_path):
    run_a, run_b = _run(tmp_path, "A"), _run(tmp_path, "B")
    out = tmp_path / "cmp.html"
    assert main(["report", str(run_a), str(run_b), "--compare", "--bootstrap", "300", "--html", str(out)]) == 0
    page = _parse(out)
    assert len(page.images) == 4
    board = page.tables["leaderboard"]
    assert _row(board, "judge B")[5].startswith("1.417")  # (22/12 + 12/12) / 2
    assert _row(board, "judge A")[5].startswith("0.167")
    cmp = page.tables["comparison"]
    assert cmp[0] == ["Metric", "A", "B", "A - B", "95% CI", "p", "better"]
    # on the 23 units both scored (p1 structure failed for A): A readability 4/12, structure 0/11;
    # B readability 22/12, structure (3 ones among p0, p4, p8 -> 12) / 11
    mse = _row(cmp, "avg_mse")
    assert mse[1:4] == ["0.167", f"{(22 / 12 + 12 / 11) / 2:.3f}", f"{1 / 6 - (22 / 12 + 12 / 11) / 2:.3f}"]
    assert mse[6] == "judge A" and float(mse[5]) < 0.05
    assert _row(page.tables["confusion-1-readability"], "-1")[1:] == ["1", "7", "3", "1"]  # B: every unit in row -1

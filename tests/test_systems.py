"""``surveyalign systems``: the shipped made-up corpus (3 writers x 12 topics, gamma/t12 missing, a human reference
per topic) scored by scripted judges behind a real OpenAI-compatible server (FakeChatServer), every figure
checked by hand; citation F1 with references resolved through a real Semantic Scholar stand-in (FakeScholarServer);
the HTML page in headless Chromium.

Each survey carries its grade (``§grade=+2§``: every SurveyAlign dimension answers it; side-by-side prefers the
higher grade, equal grades tie) and its literature-review score (``§lit=64§``). Grades: alpha +2 on t01-t09, +1 on
t10-t12; beta +1 on t01-t06, -1 on t07-t12; gamma -2 on t01-t04, -1 on t05-t11; reference +2 on odd, +1 on even
topics. Lit: alpha 64 odd / 60 even; beta 70 on t01-t06, 66 after; gamma 51 on t01, 40 after; reference 80.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pytest

from surveyalign.cli import main
from surveyalign.documents import Paper
from surveyalign.scoring.bootstrap import resample_weights
from surveyalign.systems import SystemsConfig, run_systems
from surveyalign.testing import FakeChatServer, FakeScholarServer

CORPUS = Path(__file__).parent / "fixtures" / "systems" / "writers"
GRADE = re.compile(r"§grade=([+-]\d)§")
LIT = re.compile(r"§lit=(\d+)§")


def _litreview_answer(score: int) -> str:
    axis = {"score": score, "justification": "as scripted"}
    return json.dumps({
        "paper_title": "t", "citation_statistics": {
            "estimated_unique_citations": 2, "citation_density_assessment": "low", "breadth_across_subareas": "narrow",
            "comparison_to_baseline": "few", "notes": "scripted"},
        "axis_scores": {k: axis for k in ("coverage_and_completeness", "relevance_and_focus",
                                          "critical_analysis_and_synthesis", "positioning_and_novelty",
                                          "organization_and_writing", "citation_practices_and_rigor")},
        "penalties": [], "summary": {"strengths": [f"scripted {score}"], "weaknesses": [], "top_improvements": []},
        "overall_score": score})


def reply(body: dict) -> str:
    """The scripted judge: reads the markers of the survey(s) in the prompt."""
    text = "\n".join(str(m.get("content")) for m in body["messages"])
    if "paper_1_analysis" in text:  # side-by-side: the higher grade wins, equal grades tie
        first, second = (int(g) for g in GRADE.findall(text)[:2])
        winner = "paper_1" if first > second else "paper_2" if second > first else "tie"
        return json.dumps({"paper_1_analysis": "a", "paper_2_analysis": "b", "comparison_justification": "grades",
                           "winner": winner})
    if "overall_score" in text:
        return _litreview_answer(int(LIT.search(text).group(1)))
    grade = int(GRADE.search(text).group(1))
    return f"Graded {grade:+d} as scripted.$$${grade}$$$"


def _config(tmp_path: Path, url: str) -> Path:
    (tmp_path / "judge.yaml").write_text(json.dumps({
        "name": "scripted", "backend": {"kind": "openai", "options": {"model": "fake-judge", "base_url": url,
                                                                      "api_key_env": None}},
        "samples": 3, "synthesis": False}), encoding="utf-8")
    (tmp_path / "autorater.yaml").write_text(json.dumps({
        "backend": {"kind": "openai", "options": {"model": "fake-judge", "base_url": url, "api_key_env": None}}}),
        encoding="utf-8")
    path = tmp_path / "systems.yaml"
    path.write_text(json.dumps({"name": "made-up", "measures": [
        {"kind": "surveyalign", "judge": "judge.yaml"}, {"kind": "litreview", "judge": "autorater.yaml"},
        {"kind": "sxs", "judge": "autorater.yaml", "rule": "seed"}], "bootstrap": {"resamples": 400, "seed": 3}}),
        encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("systems")
    with FakeChatServer(replies=reply) as server:
        config = _config(tmp, server.base_url)
        assert main(["systems", "--corpus", str(CORPUS), "--config", str(config), "--out", str(tmp / "out")]) == 0
        n_first = len(server.requests)
        again = run_systems(CORPUS, SystemsConfig.from_yaml(config), tmp / "out")
        n_again = len(server.requests) - n_first
    return json.loads((tmp / "out" / "systems.json").read_text()), again, n_first, n_again, tmp


def test_means_missing_pair_and_resume(run):
    result, again, n_first, n_again, _ = run
    table = result["table"]
    assert result["systems"] == ["alpha", "beta", "gamma"] and result["reference"] == "_reference"
    assert result["missing"] == ["gamma/t12"] and result["n_missing"] == 1
    assert table["gamma"]["surveyalign"]["n_absent"] == 1 and table["gamma"]["surveyalign"]["n_papers"] == 11
    # SurveyAlign: every dimension answers the grade, the headline is the mean over the four
    assert table["alpha"]["surveyalign"]["mean"] == pytest.approx((9 * 2 + 3 * 1) / 12)  # 1.75
    assert table["beta"]["surveyalign"]["mean"] == pytest.approx(0.0)
    assert table["gamma"]["surveyalign"]["mean"] == pytest.approx((4 * -2 + 7 * -1) / 11)  # -1.3636
    assert table["_reference"]["surveyalign"]["mean"] == pytest.approx(1.5)
    assert table["alpha"]["surveyalign.readability"]["mean"] == pytest.approx(1.75)
    assert table["alpha"]["litreview"]["mean"] == pytest.approx(62.0)
    assert table["beta"]["litreview"]["mean"] == pytest.approx(68.0)
    assert table["gamma"]["litreview"]["mean"] == pytest.approx((51 + 10 * 40) / 11)
    assert "sxs" not in table["_reference"]  # side-by-side is against the reference: no row for it
    lo, hi = table["alpha"]["surveyalign"]["ci95"]
    assert 1.0 <= lo < 1.75 < hi <= 2.0
    # SurveyAlign 3 samples x 4 dimensions x 47 surveys + 47 litreview + 2 x 35 side-by-side calls
    assert n_first == 47 * 12 + 47 + 70 and n_again == 0
    assert again["table"] == result["table"]


def test_pairwise_difference_by_hand(run):
    result = run[0]
    pair = next(p for p in result["pairwise"] if p["column"] == "surveyalign" and (p["a"], p["b"]) == ("alpha", "beta"))
    # per-topic differences: +1 on t01-t06, +3 on t07-t09, +2 on t10-t12
    diffs = np.asarray([1.0] * 6 + [3.0] * 3 + [2.0] * 3)
    assert pair["n_shared"] == 12 and pair["diff"] == pytest.approx(21 / 12)
    assert (pair["n_positive"], pair["n_negative"]) == (12, 0) and pair["sign_p"] == pytest.approx(2 / 2**12)
    means = (resample_weights(12, 400, 3) @ diffs) / 12  # the same draws, by hand
    assert pair["ci95"] == pytest.approx(list(np.percentile(means, [2.5, 97.5])))
    assert pair["better"] == "a"
    other = next(p for p in result["pairwise"] if p["column"] == "surveyalign" and (p["a"], p["b"]) == ("alpha", "gamma"))
    assert other["n_shared"] == 11 and other["diff"] == pytest.approx((4 * 4 + 5 * 3 + 2 * 2) / 11)


def test_win_rate_against_the_reference(run):
    sxs = run[0]["sxs"]["sxs"]["systems"]
    # alpha vs reference: wins on t02/t04/t06/t08 (2 > 1), loses t11 (1 < 2), ties the other 7
    assert sxs["alpha"]["outcomes"] == {"win": 4, "tie": 7, "loss": 1} and sxs["alpha"]["win_rate"] == pytest.approx(4 / 12)
    assert sxs["beta"]["outcomes"] == {"tie": 3, "loss": 9} and sxs["beta"]["win_rate"] == 0.0
    assert sxs["gamma"]["outcomes"] == {"loss": 11} and sxs["alpha"]["flip_rate"]["rate"] == 0.0
    assert run[0]["table"]["alpha"]["sxs"]["mean"] == pytest.approx((4 + 7 * 0.5) / 12)


def test_rankings_and_kendall_tau_by_hand(run):
    result = run[0]
    assert result["rankings"]["surveyalign"] == ["alpha", "beta", "gamma"]
    assert result["rankings"]["litreview"] == ["beta", "alpha", "gamma"]
    tau = next(k for k in result["kendall"] if (k["a"], k["b"]) == ("surveyalign", "litreview"))
    # pairs (alpha, beta) discordant, (alpha, gamma) and (beta, gamma) concordant: (2 - 1) / 3
    assert tau["tau"] == pytest.approx(1 / 3) and tau["kind"] == "between measures"
    # beta > alpha on litreview in every resample (alpha 60-64, beta 66-70) and alpha > beta >= gamma on SurveyAlign:
    # tau is 1/3 except where a draw holds only t07-t11 (beta and gamma both -1): 1 of the 400 resamples here
    assert tau["ci95"] == pytest.approx([1 / 3, 1 / 3]) and tau["note"] is None
    same = next(k for k in result["kendall"] if (k["a"], k["b"]) == ("surveyalign", "sxs"))
    assert same["tau"] == pytest.approx(1.0)


def test_reports_written(run):
    tmp = run[4]
    md = (tmp / "out" / "systems.md").read_text()
    assert "| alpha | 1.750 [" in md and "Missing (system, topic) pairs: 1: gamma/t12" in md
    page = (tmp / "out" / "systems.html").read_text()
    assert "http://" not in page and "https://" not in page and 'id="topic-t12"' in page
    detail = json.loads((tmp / "out" / "surveys" / "alpha" / "t11.json").read_text())
    assert detail["sxs"]["outcome"] == "loss" and detail["surveyalign"]["dimensions"]["readability"]["score"] == 1


def test_plan_after_the_run_has_nothing_left(run, capsys):
    tmp = run[4]
    assert main(["systems", "--corpus", str(CORPUS), "--config", str(tmp / "systems.yaml"), "--out",
                 str(tmp / "out"), "--plan"]) == 0
    printed = capsys.readouterr().out
    assert "3 system(s) x 12 topic(s): 47 survey(s) read, 1 missing pair(s)" in printed
    assert "0 call(s)" in printed or "nothing" in printed.lower()


PAPERS = [
    Paper(id="P1", title="Attention Is All You Need", year=2017, authors=["Ashish Vaswani"], doi="10.5555/attn",
          arxiv_id="1706.03762"),
    Paper(id="P2", title="BERT: Pre-training of Deep Bidirectional Transformers for Language Understanding", year=2019,
          authors=["Jacob Devlin"], doi="10.18653/v1/N19-1423", arxiv_id="1810.04805"),
    Paper(id="P3", title="Deep Residual Learning for Image Recognition", year=2016, authors=["Kaiming He"],
          doi="10.1109/CVPR.2016.90", arxiv_id="1512.03385"),
    Paper(id="P4", title="Adam: A Method for Stochastic Optimization", year=2015, authors=["Diederik Kingma"],
          arxiv_id="1412.6980"),
]
TOPICS = """topics:
  transformers:
    title: Transformers
    references:
      - {doi: 10.5555/attn}
      - {title: "BERT: Pre-training of Deep Bidirectional Transformers for Language Understanding", year: 2019,
         authors: [Jacob Devlin]}
      - {arxiv: "1512.03385"}
      - "A lost note on topology nobody indexed"
"""
WRITER = """# Transformers, a survey

## 1 Introduction

Attention [1], BERT [2], Adam [3] and a note [4].

## References

[1] A. Vaswani et al. Attention is all you need. arXiv:1706.03762, 2017.

[2] J. Devlin et al. BERT: pre-training of deep bidirectional transformers. doi:10.18653/v1/N19-1423, 2019.

[3] D. P. Kingma and J. Ba. Adam: A Method for Stochastic Optimization. In ICLR, 2015.

[4] S. Nobody. An unfindable workshop note on graphs. 2022.
"""
OTHER = """# Transformers again

## 1 Introduction

Residual nets [1].

## References

[1] K. He, X. Zhang, S. Ren, J. Sun. Deep residual learning for image recognition. In CVPR, 2016.
"""


def test_citation_f1_by_hand_with_different_names_for_the_same_papers(tmp_path):
    corpus = tmp_path / "corpus"
    for system, text in (("writer", WRITER), ("other", OTHER)):
        (corpus / system).mkdir(parents=True)
        (corpus / system / "transformers.md").write_text(text, encoding="utf-8")
    (corpus / "_topics.yaml").write_text(TOPICS, encoding="utf-8")
    with FakeScholarServer(PAPERS) as server:
        (tmp_path / "c.yaml").write_text(json.dumps({"measures": [
            {"kind": "citations", "base_url": server.s2_url, "rate": 0}]}), encoding="utf-8")
        config = SystemsConfig.from_yaml(tmp_path / "c.yaml")
        result = run_systems(corpus, config, tmp_path / "out")
        n_requests = len(server.requests)
        again = run_systems(corpus, config, tmp_path / "out")
        assert len(server.requests) == n_requests  # every reference resolved before: no request
    writer = result["details"]["writer/transformers"]["citations"]
    # survey ids {P1 (arXiv id), P2 (DOI), P4 (title)}, one unresolved; list ids {P1 (DOI), P2 (title), P3 (arXiv)}
    assert writer["matched"] == ["P1", "P2"] and (writer["n_unresolved_survey"], writer["n_unresolved_topic"]) == (1, 1)
    assert (writer["precision"], writer["recall"], writer["f1"]) == pytest.approx((2 / 3, 2 / 3, 2 / 3))
    other = result["details"]["other/transformers"]["citations"]
    assert other["matched"] == ["P3"] and other["f1"] == pytest.approx(2 * 1 * (1 / 3) / (1 + 1 / 3))
    assert result["table"]["writer"]["citations"]["mean"] == pytest.approx(2 / 3)
    assert again["table"]["writer"]["citations"] == result["table"]["writer"]["citations"]
    assert result["table"]["other"]["citations"]["note"].startswith("insufficient data")
    assert math.isclose(result["values"]["citations.recall"]["other"]["transformers"], 1 / 3)


def test_bad_corpus_and_config_say_where(tmp_path):
    (tmp_path / "a.yaml").write_text("measures:\n  - {kind: litreview}\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"a.yaml.*needs `judge:`"):
        SystemsConfig.from_yaml(tmp_path / "a.yaml")
    (tmp_path / "b.yaml").write_text("measures:\n  - {kind: citations, rule: seed}\n", encoding="utf-8")
    with pytest.raises(ValueError, match="takes api, base_url, rate, search_limit; not rule"):
        SystemsConfig.from_yaml(tmp_path / "b.yaml")
    corpus = tmp_path / "corpus"
    (corpus / "s").mkdir(parents=True)
    (corpus / "s" / "t.md").write_text("# T\n\ntext\n", encoding="utf-8")
    (corpus / "_topics.yaml").write_text("topics:\n  t:\n    references: [{title: x, pages: 3}]\n", encoding="utf-8")
    from surveyalign.systems import read_corpus

    with pytest.raises(ValueError, match=r"_topics.yaml: topic t: references\[1\]: unknown field\(s\) pages"):
        read_corpus(corpus)


def test_html_page_in_headless_chromium(run):
    """The systems table and one topic's drill-down render in a real browser (skips without chromium)."""
    from test_scoring_unit_browser import _browser

    page = run[4] / "out" / "systems.html"
    driver = _browser()
    try:
        from selenium.webdriver.common.by import By

        driver.get(page.as_uri())
        rows = driver.find_elements(By.CSS_SELECTOR, "#systems tbody tr")
        assert [r.get_attribute("data-system") for r in rows] == ["alpha", "beta", "gamma", "_reference"]
        assert all(r.is_displayed() for r in rows)
        cell = driver.find_element(By.CSS_SELECTOR, '#systems tr[data-system="alpha"] td[data-measure="surveyalign"]')
        assert cell.text.startswith("1.750 [")
        drill = driver.find_element(By.ID, "topic-t11")
        row = drill.find_element(By.CSS_SELECTOR, 'tr[data-measure="sxs"]')
        assert not row.is_displayed()  # closed until its summary is clicked
        drill.find_element(By.TAG_NAME, "summary").click()
        assert row.is_displayed()
        alpha = row.find_element(By.CSS_SELECTOR, 'td[data-system="alpha"]')
        assert alpha.text.startswith("0.000") and "loss" in alpha.text
        rationale = drill.find_element(By.CSS_SELECTOR, 'tr[data-measure="surveyalign.readability"] td[data-system="beta"]')
        assert "Graded -1 as scripted." in rationale.text
        absent = driver.find_element(By.ID, "topic-t12")
        absent.find_element(By.TAG_NAME, "summary").click()
        assert "not written: gamma" in absent.text
    finally:
        driver.quit()


def test_real_writers_corpus_with_a_scripted_judge(shared_real, tmp_path):
    """The real corpus (four writers, four topics, a human reference each): read, scored by the scripted judge on
    the side-by-side and covariates; four topics are below the bootstrap minimum, so no interval is claimed."""
    corpus = shared_real / "writers"
    if not corpus.is_dir():
        pytest.skip("the real writers corpus (../shared/real/writers: four systems on four topics) is not on this machine")

    def sxs(body: dict) -> str:  # always prefers paper_2: every pair ties under the seed rule, flip rate 1
        return json.dumps({"paper_1_analysis": "a", "paper_2_analysis": "b", "comparison_justification": "c",
                           "winner": "paper_2"})

    with FakeChatServer(replies=sxs) as server:
        (tmp_path / "a.yaml").write_text(json.dumps({"backend": {"kind": "openai", "options": {
            "model": "fake-judge", "base_url": server.base_url, "api_key_env": None}}}), encoding="utf-8")
        (tmp_path / "c.yaml").write_text(json.dumps({"measures": [{"kind": "sxs", "judge": "a.yaml"}],
                                                     "bootstrap": {"resamples": 50}}), encoding="utf-8")
        result = run_systems(corpus, SystemsConfig.from_yaml(tmp_path / "c.yaml"), tmp_path / "out")
    assert result["systems"] == ["AutoSurvey", "LLMxMR-V2", "OpenAI_DeepResearch", "SurveyForge"]
    assert len(result["topics"]) == 4 and result["n_missing"] == 0 and result["unreadable"] == {}
    for system in result["systems"]:
        assert result["sxs"]["sxs"]["systems"][system]["outcomes"] == {"tie": 4}
        assert result["sxs"]["sxs"]["systems"][system]["flip_rate"]["rate"] == 1.0
        assert result["table"][system]["words"]["mean"] > 1000 and result["table"][system]["words"]["ci95"] is None
    assert all(p["note"].startswith("insufficient data") for p in result["pairwise"])


def test_paired_difference_and_sign_test_by_hand():
    from surveyalign.scoring import paired_difference, sign_test

    # 5 positive, 1 negative, 1 zero: two-sided p = 2 * (C(6,0) + C(6,1)) / 2^6 = 14 / 64
    assert sign_test([1, 2, 0.5, 3, 1, -1, 0]) == (pytest.approx(14 / 64), 5, 1)
    assert sign_test([0, 0]) == (None, 0, 0)
    few = paired_difference({"t1": 2.0, "t2": 1.0, "t3": None}, {"t1": 1.0, "t2": 1.0, "t3": 0.0, "t4": 1.0})
    assert few["n_shared"] == 2 and few["diff"] == pytest.approx(0.5) and few["ci95"] is None
    assert few["sign_p"] is None and few["note"] == "insufficient data: 2 shared units, fewer than 10"

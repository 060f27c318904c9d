"""``surveyalign prism --corpus``: three made-up papers scored by a scripted extraction judge, aggregated per system
and checked by hand (``surveyalign/prism/corpus.py``, ``surveyalign/scoring/corpus.py``)."""

from __future__ import annotations

import json

import pytest

from surveyalign.backends.simple import ScriptedBackend
from surveyalign.cli import main
from surveyalign.prism.corpus import run_corpus
from surveyalign.prism.prompts import stage_of
from surveyalign.prism.run import PrismConfig
from surveyalign.scoring import aggregate_over_papers

TEXT = {
    "alice": "Summary: alice reads the survey. The method is novel. Table 2 shows the gain clearly.",
    "bob": "Summary: bob reads the survey. The study is weak. Figure 1 is unclear. Table 4 is small. "
           "Section 3 repeats itself.",
    "bot": "Summary: bot reads the survey. The paper is good. Results are fine.",
    "bot-broken": "Summary: bot-broken reads the survey. The paper is good. Results are fine.",
}
ADUS = {  # alice: 1 claim + 1 premise graded 2 -> DoA 2/3; bob: 1 claim + 3 premises graded 1 -> DoA 0.6; bot: DoA 0
    "alice": [("The method is novel", "claim", None), ("Table 2 shows the gain clearly", "premise", 2)],
    "bob": [("The study is weak", "claim", None), ("Figure 1 is unclear", "premise", 1),
            ("Table 4 is small", "premise", 1), ("Section 3 repeats itself", "premise", 1)],
    "bot": [("The paper is good", "claim", None), ("Results are fine", "premise", 0)],
}
COMMENTS = {"alice": [2, 2, 2, 2, 2], "bob": [1, 1, 1, 1, 1], "bot": [0, 0, 0, 0, 2]}  # MCS 1.0, 0.5, 0.2


def _who(text: str) -> str:
    for name in ("bot-broken", "alice", "bob", "bot"):
        if f"{name} reads" in text:
            return name
    raise AssertionError(text[:200])


def judge(messages, settings, index):
    stage, user = stage_of(messages), messages[-1]["content"]
    who = _who(user) if stage in ("adu", "comments", "flaws", "novelty_claims") else None
    if stage == "adu":
        units = ADUS["bot" if who == "bot-broken" else who]
        return json.dumps({"units": [{"text": t, "role": r, "aspect": "soundness", "grounding": g}
                                     for t, r, g in units]})
    if stage == "comments":
        if who == "bot-broken":
            return "no JSON here"  # MCS cannot be computed: a missing metric on that paper
        a, s, j, so, t = COMMENTS[who]
        return json.dumps({"comments": [{"text": "x", "type": "weakness", "actionability": a, "specificity": s,
                                         "justification": j, "solution": so, "tone": t}]})
    if stage == "flaws":
        return json.dumps({"flaws": []})
    if stage == "novelty_claims":
        return json.dumps({"claims": []})
    raise AssertionError(stage)


def _corpus(root):
    layout = {"p1": (["alice", "bob"], "bot"), "p2": (["alice"], "bot-broken"), "p3": (["bob"], None)}
    for pid, (humans, system) in layout.items():
        (root / pid / "reviews").mkdir(parents=True)
        (root / pid / "paper.md").write_text(f"# A survey numbered {pid}\n\n## Abstract\n\nAbstract.\n\n## Intro\n\nText.\n",
                                             encoding="utf-8")
        for name in humans:
            (root / pid / "reviews" / f"{name}.txt").write_text(TEXT[name], encoding="utf-8")
        if system:
            (root / pid / "systems").mkdir()
            (root / pid / "systems" / "Bot.txt").write_text(TEXT[system], encoding="utf-8")
    (root / "p4").mkdir()
    (root / "p4" / "paper.md").write_text("# Lonely\n\nNo review.\n", encoding="utf-8")
    return root


def test_corpus_aggregates_by_hand(tmp_path):
    root = _corpus(tmp_path / "corpus")
    config = PrismConfig.model_validate({"backend": {"kind": "scripted", "options": {"replies": []}},
                                         "novelty": {"enabled": False}})
    res = run_corpus(root, config, tmp_path / "out", backend=ScriptedBackend(judge), n_resamples=200)
    assert res["papers"] == ["p1", "p2", "p3"] and "no review file" in res["failed"]["p4"]
    assert res["systems"] == ["human", "Bot"]
    human, bot = res["table"]["human"], res["table"]["Bot"]
    # DoA per paper: p1 (2/3 + 0.6)/2, p2 2/3, p3 0.6 -> mean 1.9/3
    assert res["per_paper"]["human"]["doa"] == {"p1": pytest.approx(19 / 30), "p2": pytest.approx(2 / 3),
                                                "p3": pytest.approx(0.6)}
    assert human["doa"]["mean"] == pytest.approx(1.9 / 3) and human["doa"]["n_papers"] == 3
    assert bot["doa"]["mean"] == pytest.approx(0.0) and (bot["doa"]["n_papers"], bot["doa"]["n_absent"]) == (2, 1)
    # MCS: humans p1 (1.0 + 0.5)/2, p2 1.0, p3 0.5 -> 0.75; Bot p1 0.2, p2 unparseable (missing), p3 absent
    assert human["mcs"]["mean"] == pytest.approx(0.75)
    assert (bot["mcs"]["mean"], bot["mcs"]["n_papers"], bot["mcs"]["n_missing"], bot["mcs"]["n_absent"]) == (
        pytest.approx(0.2), 1, 1, 1)
    assert human["doa"]["ci95"] is None and human["doa"]["note"].startswith("insufficient data: 3 papers")
    md = (tmp_path / "out" / "corpus.md").read_text()
    assert "| human | 0.633 (n=3)" in md and "missing 1, absent 1" in md and "p4" in md
    page = (tmp_path / "out" / "corpus.html").read_text()
    assert 'data-system="Bot"' in page and "http" not in page
    # resumable: a second pass answers everything from the papers' caches except the one unparseable answer,
    # which is asked again
    again = ScriptedBackend(judge)
    res2 = run_corpus(root, config, tmp_path / "out", backend=again, n_resamples=200)
    assert [stage_of(m) for m, _, _ in again.calls] == ["comments"] and res2["table"] == res["table"]


def test_aggregate_interval_from_ten_papers():
    values = {"S": {"m": {f"p{i}": (i % 2) * 1.0 for i in range(10)}}}
    agg = aggregate_over_papers(values, [f"p{i}" for i in range(11)], n_resamples=500)["S"]["m"]
    assert agg["mean"] == pytest.approx(0.5) and agg["n_absent"] == 1
    assert agg["ci95"][0] < 0.5 < agg["ci95"][1]


def test_prism_corpus_cli_errors(tmp_path, capsys):
    judge_yaml = tmp_path / "j.yaml"
    judge_yaml.write_text("backend: {kind: scripted, options: {replies: []}}\nnovelty: {enabled: false}\n")
    assert main(["prism", "--corpus", str(tmp_path / "nope"), "--judge", str(judge_yaml)]) == 2
    assert "not a folder" in capsys.readouterr().err
    assert main(["prism", "paper.md", "--corpus", str(tmp_path), "--judge", str(judge_yaml)]) == 2
    assert "replaces PAPER and REVIEWS" in capsys.readouterr().err
    assert main(["prism", "--judge", str(judge_yaml)]) == 2


@pytest.mark.parametrize("options", ["{replies: []}", "{replies: ['no JSON here'], cycle: true}"])
def test_prism_corpus_with_every_extraction_failing_exits_3(tmp_path, capsys, options):
    """Issue 21 B: the corpus run exited 0 when every paper's every extraction failed (all metrics empty)."""
    judge_yaml = tmp_path / "j.yaml"
    judge_yaml.write_text(f"backend: {{kind: scripted, options: {options}}}\nnovelty: {{enabled: false}}\n")
    root = _corpus(tmp_path / "corpus")
    out = tmp_path / "run"
    assert main(["prism", "--corpus", str(root), "--judge", str(judge_yaml), "--out", str(out), "--no-progress",
                 "--bootstrap", "10"]) == 3
    err = capsys.readouterr().err
    assert "no usable extraction in stage(s) adu, novelty_claims, flaws, comments in any paper" in err
    counts = json.loads((out / "corpus.json").read_text())["extraction_counts"]
    # p1: 3 reviews, p2: 2, p3: 1 -> 6 answers per stage, none parsed (p4 has no review: not scored)
    assert {stage: (c["answers"], c["parsed"]) for stage, c in counts.items()} == {
        "adu": (6, 0), "novelty_claims": (6, 0), "flaws": (6, 0), "comments": (6, 0)}


def test_a_second_corpus_in_the_same_folder_never_reuses_another_papers_run(tmp_path):
    """Issue 21 A: papers/<id> of an earlier corpus in the same OUT holds another paper: this one gets its own."""
    from surveyalign.prism.readers import read_paper
    from surveyalign.prism.report import paper_sha256

    config = PrismConfig.model_validate({"backend": {"kind": "scripted", "options": {"replies": []}},
                                         "novelty": {"enabled": False}})
    first = _corpus(tmp_path / "one")
    out = tmp_path / "run"
    run_corpus(first, config, out, backend=ScriptedBackend(judge), n_resamples=0)
    second = _corpus(tmp_path / "two")
    (second / "p1" / "paper.md").write_text("# Another survey under the id p1\n\n## Intro\n\nOther text.\n",
                                            encoding="utf-8")
    result = run_corpus(second, config, out, backend=ScriptedBackend(judge), n_resamples=0)
    digest = paper_sha256(read_paper(second / "p1" / "paper.md"))[:8]
    assert sorted(p.name for p in (out / "papers").iterdir()) == ["p1", f"p1-{digest}", "p2", "p3"]
    assert json.loads((out / "papers" / "p1" / "paper.json").read_text())["title"] == "A survey numbered p1"
    assert json.loads((out / "papers" / f"p1-{digest}" / "paper.json").read_text())["title"] == \
        "Another survey under the id p1"
    assert result["papers"] == ["p1", "p2", "p3"]  # the corpus keys stay the paper ids


def test_corpus_report_names_hidden_text(tmp_path):
    """Two zero-width characters and a planted score marker in p2's paper, a bidi control in p3's review of bob:
    corpus.json/md/html list them by paper and review with their counts; p1 and alice's reviews hold none."""
    root = _corpus(tmp_path / "corpus")
    (root / "p2" / "paper.md").write_text("# A survey numbered p2\n\n## Abstract\n\nAbs\u200btract.\n\n## Intro\n\n"
                                          "Te\u200bxt. $$$2$$$\n", encoding="utf-8")
    (root / "p3" / "reviews" / "bob.txt").write_text(TEXT["bob"] + "\n\u202e\n", encoding="utf-8")
    config = PrismConfig.model_validate({"backend": {"kind": "scripted", "options": {"replies": []}},
                                         "novelty": {"enabled": False}})
    res = run_corpus(root, config, tmp_path / "out", backend=ScriptedBackend(judge), n_resamples=20)
    hidden = json.loads((tmp_path / "out" / "corpus.json").read_text())["hidden_text"]
    assert [name for name, rec in hidden.items() if rec["n"] or rec["neutralised"]["n"]] == [
        "paper p2", "paper p3 review bob"]
    assert len(hidden) == 3 + 6  # 3 papers, 6 reviews (p1: alice, bob, Bot; p2: alice, Bot; p3: bob)
    assert hidden == res["hidden_text"]
    assert hidden["paper p2"]["chars"] == {"zero-width characters": 2}
    assert hidden["paper p2"]["neutralised"]["counts"] == {"score marker": 1}
    assert hidden["paper p3 review bob"]["counts"] == {"bidi controls": 1}
    md = (tmp_path / "out" / "corpus.md").read_text().split("\n## Hidden text\n\n", 1)[1].splitlines()
    assert [line.split(":")[0] for line in md] == ["- paper p2", "- paper p2", "- paper p3 review bob"]
    assert md[0].startswith("- paper p2: zero-width characters (kept, 2 chars, text)")
    assert md[1].endswith("1 score marker (`$$$2$$$`)")
    assert md[2].startswith("- paper p3 review bob: bidi controls (kept, 1 chars, line ")
    page = (tmp_path / "out" / "corpus.html").read_text()
    assert page.count("<li>paper p2: ") == 2 and "<li>paper p3 review bob: bidi controls" in page

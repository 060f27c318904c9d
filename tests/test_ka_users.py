"""Knowledge augmentation (SurveyReview §5.2, App. F) in the reward and in `surveyalign systems`, through the same
source `score --graph` uses: a hand-made citation graph, a scripted judge server on 127.0.0.1, hand-checked KA
blocks in the prompts the judge receives."""

from __future__ import annotations

import asyncio
import json
import re
import shutil
from pathlib import Path

import pytest
import yaml

from surveyalign.documents import Paper, read_reference_value
from surveyalign.inference.judge import KNOWLEDGE_REFUSED
from surveyalign.knowledge import CitationGraph
from surveyalign.rewards import RewardConfig, SurveyAlignReward
from surveyalign.testing import FakeChatServer

FIXTURES = Path(__file__).parent / "fixtures" / "systems" / "writers"

#: The Comp-KA block of a survey citing "Oracles in practice" (2001) and "Metamorphic testing revisited" (2010)
#: in the graph below, worked by hand (App. F.1): R = {W1, W2}; R+ = {W3: linked to W1 and W2 (2 links), W4: linked
#: to W1 (1 link)}; n = 2 so Top_4 keeps both, most connected first; each entry title (year; citations).
COMP_KA = ("Cited by the survey (2):\n- Oracles in practice (2001; 50 citations)\n"
           "- Metamorphic testing revisited (2010; 9 citations)\n"
           "Connected to those references by citations, most connected first (2):\n"
           "- Property-based oracles (2004; 30 citations)\n- Mutation analysis of oracles (2006; 12 citations)\n")
BIBTEX = ("@article{w1, title={Oracles in practice}, author={A. Writer}, year={2001}}\n"
          "@inproceedings{w2, title={Metamorphic testing revisited}, author={B. Author}, year={2010}}\n")


def write_graph(folder: Path) -> tuple[Path, Path]:
    """The hand-made graph (four papers) and a KA config counting whitespace words, Comp-KA only."""
    papers = [Paper(id="W1", title="Oracles in practice", year=2001, authors=["A. Writer"], citation_count=50),
              Paper(id="W2", title="Metamorphic testing revisited", year=2010, authors=["B. Author"],
                    citation_count=9),
              Paper(id="W3", title="Property-based oracles", year=2004, citation_count=30, reference_ids=["W1", "W2"]),
              Paper(id="W4", title="Mutation analysis of oracles", year=2006, citation_count=12,
                    reference_ids=["W1"])]
    graph = CitationGraph(papers).save(folder / "graph.jsonl")
    ka = folder / "ka.yaml"
    ka.write_text("tokenizer: whitespace\ndimensions: [comprehensiveness]\n", encoding="utf-8")
    return graph, ka


def content(body: dict) -> str:
    return body["messages"][-1]["content"]


def with_ka(body: dict) -> str:
    """The scripted judge: +2 when the prompt carries the Comp-KA block, else +1."""
    return "Checked.$$$2$$$" if COMP_KA in content(body) else "Checked.$$$1$$$"


# --- the reference readers -------------------------------------------------------------------------------------------


def test_a_reference_value_is_read_as_bibtex_markdown_or_titles():
    bib = read_reference_value(BIBTEX)
    assert [(r.key, r.title, r.year, r.source) for r in bib.references] == [
        ("w1", "Oracles in practice", 2001, "bibtex"), ("w2", "Metamorphic testing revisited", 2010, "bibtex")]
    md = read_reference_value("[1] A. Writer. Oracles in practice. 2001.\n[2] B. Author. Metamorphic testing "
                              "revisited. In Proc. X, 2010.")
    assert [(r.key, r.title, r.year) for r in md.references] == [("1", "Oracles in practice", 2001),
                                                                 ("2", "Metamorphic testing revisited", 2010)]
    titles = read_reference_value(["Oracles in practice (2001)", "- Metamorphic testing revisited, 2010",
                                   "Plain title", {"title": "Property-based oracles", "year": 2004}])
    assert [(r.title, r.year) for r in titles.references] == [
        ("Oracles in practice", 2001), ("Metamorphic testing revisited", 2010), ("Plain title", None),
        ("Property-based oracles", 2004)]
    lines = read_reference_value("Oracles in practice (2001)\n\n* Plain title\n")
    assert [(r.key, r.title) for r in lines.references] == [("1", "Oracles in practice"), ("2", "Plain title")]
    assert read_reference_value(None).references == [] and read_reference_value("  ").references == []
    with pytest.raises(ValueError, match="^completion 3: references: entry 1 is a int; expected text or a mapping"):
        read_reference_value([7], where="completion 3: references")
    with pytest.raises(ValueError, match="^row: expected BibTeX, a markdown reference list or a list of titles, "
                                         "got int"):
        read_reference_value(7, where="row")


# --- the reward ------------------------------------------------------------------------------------------------------


def reward_config(server: FakeChatServer, graph: Path | None, ka: Path | None, **knowledge) -> RewardConfig:
    block = {k: str(v) for k, v in (("graph", graph), ("ka_config", ka)) if v is not None}
    judge = {"backend": {"kind": "openai", "options": {"model": "base", "base_url": server.base_url,
                                                       "api_key_env": None},
                         "per_dimension": {"comprehensiveness": {"model": "comp-adapter"}}}}
    return RewardConfig.model_validate({"judge": judge, "dimensions": {"comprehensiveness": 1.0, "readability": 0.5},
                                        "checks": {"min_words": 0}, "knowledge": {**block, **knowledge}})


def test_the_reward_builds_comp_ka_from_the_rows_references_and_refuses_a_row_without(tmp_path):
    graph, ka = write_graph(tmp_path)
    surveys = ["# Oracles\n\nA survey of test oracles.", "# Oracles\n\nAnother survey of test oracles.",
               "# Oracles\n\nA third one.", "# Oracles\n\nA fourth one."]
    titles_list = ["Oracles in practice (2001)", "Metamorphic testing revisited, 2010"]
    with FakeChatServer(replies=with_ka) as server:
        reward = SurveyAlignReward(reward_config(server, graph, ka), log=str(tmp_path / "rewards.jsonl"))
        rewards = asyncio.run(reward(["p"] * 4, surveys, references=[BIBTEX, BIBTEX, None, titles_list]))
        bodies = list(server.requests)
    # comp +2 (KA) x 1.0 + readability +1 x 0.5 = 2.5; the row without references: comprehensiveness refused
    assert rewards == [2.5, 2.5, None, 2.5]
    assert reward.counts["knowledge_refused"] == 1 and reward.counts["failed"] == 1
    assert reward.knowledge.builds == 2  # the two BibTeX rows share one build; the list of titles is another
    comp = [b for b in bodies if b["model"] == "comp-adapter"]
    plain = [b for b in bodies if b["model"] == "base"]
    assert len(comp) == 3 and len(plain) == 4  # no comprehensiveness call for the refused row
    assert all(COMP_KA + "\nSurvey under review:" in content(b) for b in comp)
    assert not any("Property-based oracles" in content(b) for b in plain)  # readability: trained without KA
    log = [json.loads(x) for x in (tmp_path / "rewards.jsonl").read_text(encoding="utf-8").splitlines()]
    assert log[0]["knowledge"]["required"] == ["comprehensiveness"] and log[0]["knowledge"]["source"] == "graph"
    done = [r for r in log if r["kind"] == "completion"]
    assert [r["knowledge"]["comprehensiveness"]["used"] for r in done] == [True, True, False, True]
    assert [r["knowledge"]["comprehensiveness"]["n_resolved"] for r in done] == [2, 2, None, 2]
    assert done[0]["knowledge"]["comprehensiveness"]["chars"] == len(COMP_KA.strip())
    assert done[2]["status"]["comprehensiveness"] == KNOWLEDGE_REFUSED
    assert done[2]["reason"].startswith("comprehensiveness: knowledge_required: not judged: the adapter was trained "
                                        "with knowledge augmentation and none is available (the row has no "
                                        "`references`")
    assert list(done[0]["knowledge"]) == ["comprehensiveness"]  # readability: no KA needed, none recorded


def test_the_reward_without_ka_is_refused_unless_allowed_and_a_knowledge_column_is_used_as_given(tmp_path):
    with FakeChatServer(replies=with_ka) as server:
        refused = SurveyAlignReward(reward_config(server, None, None))
        assert refused.sync(["p"], ["# A survey"], references=[BIBTEX]) == [None]
        assert "configure knowledge.graph in the reward config" in refused.records[-1]["reason"]
        allowed = SurveyAlignReward(reward_config(server, None, None, allow_no_knowledge=True))
        assert allowed.sync(["p"], ["# A survey"]) == [1.5]  # comp +1 without KA, readability +1 x 0.5
        record = allowed.records[-1]["knowledge"]["comprehensiveness"]
        assert record["used"] is False and record["note"].startswith("judged WITHOUT knowledge augmentation")
        given = SurveyAlignReward(reward_config(server, None, None))
        # a `knowledge` column's text goes before every judged dimension, as given: 2 x 1.0 + 2 x 0.5
        assert given.sync(["p"], ["# A survey"], knowledge=[COMP_KA]) == [3.0]
        assert given.records[-1]["knowledge"]["comprehensiveness"]["source"] == "column"
    with pytest.raises(ValueError, match="folder: a completion has no file name"):
        RewardConfig.model_validate({"judge": {"backend": {"kind": "scripted", "options": {"replies": ["a$$$1$$$"]}}},
                                     "knowledge": {"folder": str(tmp_path)}})


def test_a_reward_yaml_reads_its_graph_beside_the_file(tmp_path):
    graph, ka = write_graph(tmp_path)
    path = tmp_path / "reward.yaml"
    path.write_text(yaml.safe_dump({"judge": {"backend": {"kind": "scripted", "options": {"replies": ["a$$$1$$$"]}}},
                                    "knowledge": {"graph": "graph.jsonl", "ka_config": "ka.yaml",
                                                  "dimensions": ["comprehensiveness"]}}), encoding="utf-8")
    config = RewardConfig.from_yaml(path)
    assert config.knowledge.graph == str(graph.resolve()) and config.knowledge.ka_config == str(ka.resolve())


# --- surveyalign systems ---------------------------------------------------------------------------------------------


def _topic_graph(folder: Path) -> Path:
    """Topic 01's two references of the made-up corpus and one paper citing both."""
    papers = [Paper(id="P1", title="An earlier survey of topic 01", year=2020, authors=["A. Author"], citation_count=40),
              Paper(id="P2", title="A method for topic 01", year=2021, authors=["B. Author"], citation_count=7),
              Paper(id="N1", title="A benchmark for topic 01", year=2019, citation_count=15, reference_ids=["P1", "P2"])]
    return CitationGraph(papers).save(folder / "graph.jsonl")


def test_systems_judges_each_survey_with_the_ka_of_its_own_reference_list(tmp_path):
    from surveyalign.systems import SystemsConfig, run_systems

    corpus = tmp_path / "writers"
    shutil.copytree(FIXTURES, corpus)
    gamma = corpus / "gamma" / "t01.md"  # gamma's survey of topic 01 cites one of the two papers
    gamma.write_text(gamma.read_text(encoding="utf-8").replace(
        "[1] A. Author. An earlier survey of topic 01. 2020.\n\n[2] B. Author. A method for topic 01. 2021.",
        "[1] B. Author. A method for topic 01. 2021."), encoding="utf-8")
    _topic_graph(tmp_path)
    (tmp_path / "ka.yaml").write_text("tokenizer: whitespace\ndimensions: [comprehensiveness]\n", encoding="utf-8")
    both = ("Cited by the survey (2):\n- An earlier survey of topic 01 (2020; 40 citations)\n"
            "- A method for topic 01 (2021; 7 citations)\n"
            "Connected to those references by citations, most connected first (1):\n"
            "- A benchmark for topic 01 (2019; 15 citations)\n")
    one = ("Cited by the survey (1):\n- A method for topic 01 (2021; 7 citations)\n"
           "Connected to those references by citations, most connected first (1):\n"
           "- A benchmark for topic 01 (2019; 15 citations)\n")
    with FakeChatServer(replies=["Read.$$$1$$$"]) as server:
        (tmp_path / "judge.yaml").write_text(json.dumps({
            "name": "ka", "dimensions": ["readability", "comprehensiveness"], "samples": 1, "synthesis": False,
            "backend": {"kind": "openai", "options": {"model": "base", "base_url": server.base_url, "api_key_env": None},
                        "per_dimension": {"comprehensiveness": {"model": "comp-adapter"}}}}), encoding="utf-8")
        path = tmp_path / "systems.yaml"
        path.write_text(json.dumps({"name": "ka", "measures": [{"kind": "surveyalign", "judge": "judge.yaml"}],
                                    "knowledge": {"graph": "graph.jsonl", "ka_config": "ka.yaml"},
                                    "bootstrap": {"resamples": 50}}), encoding="utf-8")
        result = run_systems(corpus, SystemsConfig.from_yaml(path), tmp_path / "out")
        comp = {re.search(r"Survey under review:\nTitle: ([^\n]+)", content(b)).group(1): content(b)
                for b in server.requests if b["model"] == "comp-adapter"}
        n_plain = sum(b["model"] == "base" for b in server.requests)
    # 35 system surveys (gamma lacks t12) + 12 references judged on readability; comprehensiveness only with KA:
    # topic 01's four surveys (the other topics' references are not in the graph: refused, no call)
    assert n_plain == 47 and len(comp) == 4
    assert both + "\nSurvey under review:" in comp["A survey of topic 01 by the human reference"]
    assert both + "\nSurvey under review:" in comp["A survey of topic 01 by system alpha"]
    assert both + "\nSurvey under review:" in comp["A survey of topic 01 by system beta"]
    assert one + "\nSurvey under review:" in comp["A survey of topic 01 by system gamma"]
    details = json.loads((tmp_path / "out" / "systems.json").read_text(encoding="utf-8"))["details"]
    assert details.keys() == result["details"].keys()
    ka = {pair: d["surveyalign"]["knowledge"]["comprehensiveness"] for pair, d in details.items() if "surveyalign" in d}
    assert [pair for pair, k in ka.items() if k["used"]] == ["_reference/t01", "alpha/t01", "beta/t01", "gamma/t01"]
    assert ka["alpha/t01"]["n_resolved"] == 2 and ka["gamma/t01"]["n_resolved"] == 1
    assert ka["alpha/t02"]["note"].startswith("not judged: the adapter was trained with knowledge augmentation and "
                                              "none is available (none of the 2 references resolved")
    assert ka["alpha/t02"]["note"].endswith("configure knowledge.graph or knowledge.folder in the systems config or "
                                            "pass allow_no_knowledge: true on the surveyalign measure")
    assert details["alpha/t02"]["surveyalign"]["dimensions"]["comprehensiveness"]["status"] == KNOWLEDGE_REFUSED
    assert list(details["alpha/t01"]["surveyalign"]["knowledge"]) == ["comprehensiveness"]
    # systems.md lists every survey's KA (47: 4 from the graph, 43 refused) and the drill-down shows it per system
    md = (tmp_path / "out" / "systems.md").read_text(encoding="utf-8")
    lines = md.split("\n## Knowledge augmentation per survey", 1)[1].split("\n\n")[1].splitlines()
    assert len(lines) == len(ka) == 47
    assert "- alpha/t01: surveyalign: comprehensiveness from graph (2 resolved)" in lines
    assert "- gamma/t01: surveyalign: comprehensiveness from graph (1 resolved)" in lines
    refused = [line for line in lines if "without KA: not judged" in line]
    assert len(refused) == 43
    assert "- alpha/t02: surveyalign: comprehensiveness without KA: not judged: the adapter was trained with " in md
    page = (tmp_path / "out" / "systems.html").read_text(encoding="utf-8")
    topic01 = page.split('id="topic-t01"', 1)[1].split("</details>", 1)[0]
    assert ('<tr data-measure="knowledge"><th>KA</th><td class="text" data-system="alpha">surveyalign: '
            "comprehensiveness from graph (2 resolved)</td>") in topic01
    assert '<td class="text" data-system="gamma">surveyalign: comprehensiveness from graph (1 resolved)</td>' in topic01


def test_systems_reads_prepared_ka_per_system_folder(tmp_path):
    from surveyalign.documents import read_document
    from surveyalign.systems import SystemsConfig
    from surveyalign.systems.measures import knowledge_of

    (tmp_path / "ka" / "beta").mkdir(parents=True)
    (tmp_path / "ka" / "beta" / "t01.comprehensiveness.txt").write_text("Beta's own KA.\n", encoding="utf-8")
    path = tmp_path / "systems.yaml"
    path.write_text(json.dumps({"knowledge": {"folder": "ka"}}), encoding="utf-8")
    source = knowledge_of(SystemsConfig.from_yaml(path), "base", None)
    beta = source(read_document(FIXTURES / "beta" / "t01.md"), "comprehensiveness")
    alpha = source(read_document(FIXTURES / "alpha" / "t01.md"), "comprehensiveness")
    assert (beta.text, beta.source) == ("Beta's own KA.", "file")
    assert alpha.text is None and alpha.note == f"no folder {tmp_path / 'ka' / 'alpha'} of KA texts for this system"
    path.write_text(json.dumps({"knowledge": {"folder": "ka", "ka_config": "x.yaml"}}), encoding="utf-8")
    with pytest.raises(ValueError, match="^knowledge.ka_config needs knowledge.graph FILE"):
        knowledge_of(SystemsConfig.from_yaml(path), "base", None)

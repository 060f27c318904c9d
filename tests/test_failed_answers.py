"""Issue 21 C: a failed answer (an error, or one the caller could not read) is not replayed from the cache.

One rule in the call layer (``CallCache.missing`` / ``cached_generate`` with the caller's ``check``): a re-run
asks such an answer again; ``keep_failed`` (the commands' ``--keep-failed``) keeps it; every command says how
many answers it reused, retried and made. A test per call site: the call layer, autorate, score, prism, evaluate,
data annotate and data identify (ka build: tests/test_knowledge_build.py)."""

from __future__ import annotations

import json
from pathlib import Path

from surveyalign.autoraters import (
    SXS_KEYS,
    AutoraterJudge,
    PaperText,
    rate_litreview,
    rate_sxs,
)
from surveyalign.backends import Generation, GenerationSettings
from surveyalign.backends.simple import ScriptedBackend
from surveyalign.calls import CallCache, cached_generate, make_call
from surveyalign.cli import main
from surveyalign.testing import FakeChatServer

FIXTURES = Path(__file__).parent / "fixtures" / "prism"


def _reader(call, generation: Generation) -> str | None:
    return None if generation.text.startswith("ok") else "no 'ok' answer"


def test_call_layer_retries_unreadable_and_failed_answers_unless_kept(tmp_path):
    settings = GenerationSettings()
    first = ScriptedBackend(["garbled", RuntimeError("HTTP 503"), "ok fine"])
    calls = [make_call(first, settings, stage="s", unit_id=str(i), namespace="test",
                       messages=[{"role": "user", "content": f"q{i}"}], identity={"m": 1}) for i in range(3)]
    cache = CallCache.load(tmp_path / "calls.jsonl")
    got = cached_generate(calls, cache, check=_reader)
    assert [a.generation.text for a in got] == ["garbled", "", "ok fine"] and cache.counts == {
        "reused": 0, "retried": 0, "made": 3}
    cache.close()
    fixed = ScriptedBackend(["ok now", "ok too"])
    again = CallCache.load(tmp_path / "calls.jsonl")
    redo = [make_call(fixed, settings, stage="s", unit_id=str(i), namespace="test",
                      messages=[{"role": "user", "content": f"q{i}"}], identity={"m": 1}) for i in range(3)]
    got = cached_generate(redo, again, check=_reader)
    assert [a.generation.text for a in got] == ["ok now", "ok too", "ok fine"]
    assert [a.cached for a in got] == [False, False, True] and len(fixed.calls) == 2
    assert again.counts == {"reused": 1, "retried": 2, "made": 0}
    assert again.summary() == "answers: 1 reused, 2 retried (their cached answer had failed), 0 made"
    again.close()
    # a third run with a broken judge and keep_failed: nothing is asked, the last answers are reused
    kept = CallCache.load(tmp_path / "calls.jsonl", keep_failed=True)
    broken = ScriptedBackend([])
    got = cached_generate([make_call(broken, settings, stage="s", unit_id="0", namespace="test",
                                     messages=[{"role": "user", "content": "q0"}], identity={"m": 1})], kept,
                          check=lambda c, g: "always unusable")
    assert got[0].generation.text == "ok now" and broken.calls == [] and kept.counts["reused"] == 1
    assert kept.summary().endswith("(failed answers kept: --keep-failed)")


def _sxs_answer(winner: str) -> str:
    first, second, just, key = SXS_KEYS["paper"]
    return json.dumps({first: "one", second: "two", just: "because", key: winner})


def test_autorate_rerun_after_the_judge_was_fixed_asks_the_unreadable_answers_again(tmp_path):
    """Old code: the cached unreadable answers were replayed; only --no-resume helped."""
    pairs = [(PaperText("a", "# A\n\n## Introduction\n\nText a."), PaperText("b", "# B\n\n## Introduction\n\nText b."))]
    broken = AutoraterJudge(ScriptedBackend(lambda m, s, k: "no JSON here"), cache=CallCache.load(tmp_path / "c.jsonl"))
    first = rate_sxs(pairs, broken, kind="paper")
    assert first["outcomes"]["failed"] == 1 and broken.cache.counts == {"reused": 0, "retried": 0, "made": 2}
    broken.cache.close()
    fixed = AutoraterJudge(ScriptedBackend(lambda m, s, k: _sxs_answer("tie")), cache=CallCache.load(tmp_path / "c.jsonl"))
    second = rate_sxs(pairs, fixed, kind="paper")
    assert second["outcomes"]["failed"] == 0 and second["outcomes"]["tie"] == 1 and second["n_unreadable_calls"] == 0
    assert fixed.cache.counts == {"reused": 0, "retried": 2, "made": 0} and len(fixed.backend.calls) == 2
    fixed.cache.close()
    third = AutoraterJudge(ScriptedBackend(lambda m, s, k: RuntimeError("down")), cache=CallCache.load(tmp_path / "c.jsonl"))
    assert rate_sxs(pairs, third, kind="paper")["outcomes"]["tie"] == 1 and third.backend.calls == []
    assert third.cache.counts == {"reused": 2, "retried": 0, "made": 0}
    lit = AutoraterJudge(ScriptedBackend(lambda m, s, k: "{}"), cache=CallCache.load(tmp_path / "l.jsonl"))
    assert rate_litreview([PaperText("p", "text")], lit)["n_invalid"] == 1
    lit.cache.close()
    again = AutoraterJudge(ScriptedBackend(lambda m, s, k: "{}"), cache=CallCache.load(tmp_path / "l.jsonl"))
    rate_litreview([PaperText("p", "text")], again)
    assert again.cache.counts == {"reused": 0, "retried": 1, "made": 0}


def _score(tmp_path: Path, survey: Path, server: FakeChatServer, *extra: str) -> int:
    judge = tmp_path / "judge.yaml"
    judge.write_text(f"backend: {{kind: openai, options: {{model: fake-judge, base_url: '{server.base_url}'}}}}\n")
    return main(["score", str(survey), "--judge", str(judge), "--out", str(tmp_path / "out"), "--no-progress",
                 "--samples", "1", "--dimensions", "readability", *extra])


def test_score_rerun_asks_the_unreadable_answer_again_and_counts(tmp_path, capsys):
    survey = tmp_path / "s.md"
    survey.write_text("# A survey\n\n## Intro\n\nText.\n", encoding="utf-8")
    reply = {"text": "I cannot decide."}
    with FakeChatServer(replies=lambda body: reply["text"]) as server:
        assert _score(tmp_path, survey, server) == 3
        assert "answers: 0 reused, 0 retried (their cached answer had failed), 1 made" in capsys.readouterr().err
        reply["text"] = "Clear enough. $$$1$$$"  # the judge is fixed
        assert _score(tmp_path, survey, server, "--keep-failed") == 3  # the explicit flag keeps the failed answer
        assert len(server.requests) == 1
        assert "answers: 1 reused, 0 retried" in capsys.readouterr().err
        assert _score(tmp_path, survey, server) == 0
        assert len(server.requests) == 2
    assert "answers: 0 reused, 1 retried (their cached answer had failed), 0 made" in capsys.readouterr().err
    review = json.loads((tmp_path / "out" / "s.json").read_text())
    assert review["dimensions"]["readability"]["score"] == 1


def test_prism_rerun_asks_failed_extractions_again_unless_kept(tmp_path, capsys):
    judge = tmp_path / "judge.yaml"
    judge.write_text("backend: {kind: scripted, options: {replies: ['no JSON here'], cycle: true}}\n"
                     "novelty: {enabled: false}\n")
    argv = ["prism", str(FIXTURES / "iclr_paper.json"), str(FIXTURES / "iclr_reviews.json"), "--judge", str(judge),
            "--out", str(tmp_path / "run"), "--no-progress"]
    assert main(argv) == 3
    assert "answers: 0 reused, 0 retried (their cached answer had failed), 8 made" in capsys.readouterr().out
    assert main(argv) == 3
    assert "answers: 0 reused, 8 retried (their cached answer had failed), 0 made" in capsys.readouterr().out
    assert main([*argv, "--keep-failed"]) == 3
    assert "answers: 8 reused, 0 retried" in capsys.readouterr().out
    config = json.loads((tmp_path / "run" / "run_config.json").read_text())
    assert config["answers"] == {"reused": 8, "retried": 0, "made": 0} and config["keep_failed"] is True


def test_evaluate_rerun_asks_unreadable_answers_again_and_says_so(dataset_dir, tmp_path):
    from rich.console import Console

    from surveyalign.evaluation import EvalConfig, run_evaluation

    reply = {"text": "I cannot decide."}
    with FakeChatServer(replies=lambda body: reply["text"]) as server:
        config = EvalConfig.from_dict({
            "name": "retry", "dataset": str(dataset_dir), "output_dir": str(tmp_path), "progress": False,
            "bootstrap": 0, "dimensions": ["readability"], "limit": 2,
            "backend": {"kind": "openai", "options": {"model": "m", "base_url": server.base_url}}})
        first = run_evaluation(config, console=Console(width=250, record=True))
        assert first.counts["parse_failed"] == 2 and first.calls["answers"] == {"reused": 0, "retried": 0, "made": 2}
        reply["text"] = "Clear enough. $$$1$$$"  # the judge is fixed
        console = Console(width=250, record=True)
        second = run_evaluation(config, console=console)
    assert second.counts["scored"] == 2 and len(server.requests) == 4
    assert second.calls["answers"] == {"reused": 0, "retried": 2, "made": 0}
    assert "answers: 0 reused, 2 retried (their cached answer had failed), 0 made" in console.export_text()


def test_annotate_and_identify_reruns_ask_unreadable_answers_again(tmp_path, capsys):
    import yaml

    from surveyalign.constants import DIMENSIONS

    collected = tmp_path / "collected"
    collected.mkdir()
    review = {"review_id": "moprd-1-1-r1", "paper_id": "moprd-1", "source": "moprd",
              "text": "Summary: the survey covers pruning well. The figures are hard to read."}
    (collected / "reviews.jsonl").write_text(json.dumps(review) + "\n", encoding="utf-8")
    labelled = json.dumps({d: {"label": 0, "snippets": []} for d in DIMENSIONS})

    def judge(replies: list[str]) -> Path:
        path = tmp_path / "judge.yaml"
        path.write_text(yaml.safe_dump({"backend": {"kind": "scripted", "options": {"replies": replies}}}))
        return path

    args = ["data", "annotate", "--reviews", str(collected), "--out", str(tmp_path / "annotated"), "--judge"]
    assert main([*args, str(judge(["I cannot tell."]))]) == 3  # no label: no usable result
    assert "answers: 0 reused, 0 retried (their cached answer had failed), 1 made" in capsys.readouterr().out
    assert main([*args, str(judge([labelled]))]) == 0  # the unreadable answer is asked again, not replayed
    report = json.loads((tmp_path / "annotated" / "annotate_report.json").read_text())
    assert report["answers"] == {"reused": 0, "retried": 1, "made": 0} and report["review_status"]["ok"] == 1
    capsys.readouterr()
    assert main([*args, str(judge([labelled]))]) == 0  # a third run reuses the good answer
    assert "answers: 1 reused, 0 retried (their cached answer had failed), 0 made" in capsys.readouterr().out

    candidates = tmp_path / "candidates.jsonl"
    candidates.write_text(json.dumps({"id": "c1", "source": "f1000", "title": "A survey of graph pruning",
                                      "abstract": "We review pruning."}) + "\n", encoding="utf-8")
    screen = ["data", "identify", "--candidates", str(candidates), "--out", str(tmp_path / "identified"), "--judge"]
    assert main([*screen, str(judge(["maybe"]))]) == 3  # every screening call failed
    assert main([*screen, str(judge([json.dumps({"survey": "yes", "reason": "a review"})]))]) == 0
    report = json.loads((tmp_path / "identified" / "identify_report.json").read_text())
    assert report["answers"] == {"reused": 0, "retried": 1, "made": 0} and report["total"]["llm_yes"] == 1

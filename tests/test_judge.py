"""surveyalign.judge: one survey judged on one dimension, K samples, length rule, cache, async, README example."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest

from surveyalign.backends import Generation, GenerationSettings, load_backend
from surveyalign.backends.simple import ScriptedBackend
from surveyalign.calls import CallCache
from surveyalign.judge import DimensionOptions, Judge, JudgeRequest, Vote, read_sample
from surveyalign.prompts import build_judge_prompt, count_chat_tokens

REPO = Path(__file__).resolve().parents[1]
SURVEY = "# Graph neural networks: a survey\n\n## Introduction\nGraph neural networks learn on graphs.\n"


def test_constant_judge_scores_a_survey_with_its_rationale():
    verdict = Judge(load_backend("constant", score=-1, rationale="Dense prose.")).judge(SURVEY, "readability")
    assert (verdict.dimension, verdict.status, verdict.score, verdict.rationale, verdict.reason) == \
        ("readability", "scored", -1, "Dense prose.", None)
    (sample,) = verdict.samples
    assert (sample.sample, sample.seed, sample.text, sample.finish_reason) == (0, 0, "Dense prose.$$$-1$$$", "stop")
    assert verdict.prompt.template_hash == build_judge_prompt("readability", "x").template_hash


def test_k_samples_use_seed_plus_k_and_the_majority_wins():
    replies = {10: "Clear. $$$2$$$", 11: "Murky. $$$-1$$$", 12: "Clear enough. $$$2$$$"}
    backend = ScriptedBackend(lambda messages, settings, index: replies[settings.seed + index])
    judge = Judge(backend, settings=GenerationSettings(temperature=0.7, seed=10))
    verdict = judge.judge(SURVEY, "structure", samples=3)
    assert [s.seed for s in verdict.samples] == [10, 11, 12]
    # the K samples go as one n=K request (one prefill); sample index i is drawn with seed 10 + i
    assert [(settings.seed, i) for _, settings, i in backend.calls] == [(10, 0), (10, 1), (10, 2)]
    assert [s.score for s in verdict.samples] == [2, -1, 2]
    assert (verdict.score, verdict.rationale, verdict.vote.counts) == (2, "Clear.", {-1: 1, 2: 2})


def test_failures_are_statuses_not_exceptions():
    backend = ScriptedBackend([RuntimeError("server down"), "no marker here"])
    judge = Judge(backend)
    down = judge.judge(SURVEY, "readability")
    assert (down.status, down.score, down.reason) == ("api_error", None, "RuntimeError: server down")
    unparsed = judge.judge(SURVEY, "readability")
    assert unparsed.status == "parse_failed" and unparsed.reason.startswith("no score marker found")
    assert unparsed.rationale == "no marker here"
    empty = judge.judge("   \n", "readability")
    assert (empty.status, empty.samples, empty.vote) == ("missing_text", [], None)
    assert len(backend.calls) == 2  # no call for the empty survey


def test_parse_generation_reads_one_answer():
    ok = read_sample(Generation("Good. $$$1$$$", "stop", -0.3), protocol="v1.0", sample=2, seed=7)
    assert (ok.score, ok.rationale, ok.status, ok.sample, ok.seed, ok.mean_logprob) == (1, "Good.", "scored", 2, 7,
                                                                                         -0.3)
    tags = read_sample(Generation("<reason>Thin.</reason> <score>-2</score>", "stop", None), protocol="v1.1")
    assert (tags.score, tags.rationale) == (-2, "Thin.")
    failed = read_sample(Generation.failed("HTTP 500"), protocol="v1.0")
    assert (failed.status, failed.error, failed.score) == ("api_error", "HTTP 500", None)


def test_length_rule_cuts_the_survey_body_and_refuses_what_cannot_fit(tiny_model_dir):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_model_dir)
    long_survey = SURVEY + "Message passing aggregates neighbour features. " * 400
    backend = ScriptedBackend(lambda m, s, i: "Fine. $$$1$$$")
    settings = GenerationSettings(max_new_tokens=16)
    judge = Judge(backend, settings=settings, default=DimensionOptions(max_length=700, tokenizer=tok))
    prepared = judge.prepare(long_survey, "readability")
    assert prepared.sendable and prepared.shortened_tokens > 0
    sent = count_chat_tokens(tok, prepared.messages, enable_thinking=False, add_generation_prompt=True)
    assert sent == prepared.prompt_tokens and 650 < sent <= 700 - 16
    instruction = build_judge_prompt("readability", long_survey).instruction
    assert prepared.messages[0]["content"].startswith(instruction)  # the instruction is never cut

    tight = Judge(backend, settings=settings, dimensions={"readability": DimensionOptions(max_length=100,
                                                                                          tokenizer=tok)})
    verdict = tight.judge(long_survey, "readability")
    assert verdict.status == "prompt_too_long" and verdict.samples == [] and backend.calls == []
    assert verdict.reason.startswith("prompt too long for the model context: the prompt needs ")
    assert tight.judge(long_survey, "structure").status == "scored"  # no budget for structure: sent whole


def test_a_shared_cache_makes_each_call_once(tmp_path):
    backend = ScriptedBackend(lambda m, s, i: f"Seed {s.seed}. $$$1$$$")
    with CallCache.load(tmp_path / "calls.jsonl") as cache:
        first = Judge(backend, cache=cache).judge(SURVEY, "criticalness", samples=2)
        again = Judge(backend, cache=cache).judge(SURVEY, "criticalness", samples=2)
    assert len(backend.calls) == 2 and first.to_dict() == again.to_dict()
    reread = CallCache.load(tmp_path / "calls.jsonl")
    assert reread.n_lines == 2 and {r["sample"] for r in reread} == {0, 1}


def test_async_batch_inside_a_running_loop_and_a_pluggable_vote():
    backend = ScriptedBackend(lambda m, s, i: "-1 wins. $$$-1$$$" if "graphs" in m[0]["content"] else "Ok. $$$2$$$")

    def last_sample_wins(samples):
        return Vote(score=samples[-1].score, counts={samples[-1].score: 1}, winners=(len(samples) - 1,),
                    best_index=len(samples) - 1, n_voted=1)

    judge = Judge(backend, vote=last_sample_wins)
    requests = [JudgeRequest(SURVEY, "readability"), JudgeRequest("# Other\nText.", "structure", title="Other")]

    async def main():
        return await judge.ajudge_many(requests, samples=2)

    verdicts = asyncio.run(main())
    assert [(v.dimension, v.score) for v in verdicts] == [("readability", -1), ("structure", 2)]
    assert verdicts[1].vote.best_index == 1 and len(backend.calls) == 4


def test_readme_example_runs(tmp_path, monkeypatch):
    """The README's Python example scores a markdown survey with the constant judge and the tiny model."""
    blocks = re.findall(r"```python\n(.*?)```", (REPO / "README.md").read_text(), flags=re.DOTALL)
    (code,) = [b for b in blocks if "surveyalign.judge" in b]
    assert len([line for line in code.splitlines() if line.strip()]) <= 10
    monkeypatch.chdir(tmp_path)
    (tmp_path / "survey.md").write_text(SURVEY)
    printed: list[tuple] = []
    exec(compile(code, "README.md", "exec"), {"print": lambda *a: printed.append(a)})  # noqa: S102
    constant, tiny = printed
    assert constant[:3] == ("constant", "scored", 1) and constant[4] == [0, 1, 2]
    assert tiny[0] == "transformers" and tiny[1] in ("scored", "parse_failed") and tiny[4] == [0, 1, 2]
    assert (tmp_path / "runs" / "tiny-qwen3").is_dir()


def test_importing_the_judge_is_enough():
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", "from surveyalign.judge import Judge; print(Judge.__name__)"],
                         capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "Judge"


@pytest.mark.parametrize("samples", [0, -1])
def test_samples_must_be_positive(samples):
    with pytest.raises(ValueError, match="samples must be a positive integer"):
        Judge(load_backend("constant", score=1)).judge(SURVEY, "readability", samples=samples)

"""``surveyalign evaluate`` with K > 1 (SurveyReview App. E): the voted unit's rationale is merged from its winning
samples by the judge itself (the function ``score`` uses), the RQS stage rates that merged rationale, a failed merge
falls back to the best winning sample (counted, recorded), and ``--no-synthesis`` keeps the best sample without a
merge call. Real HTTP servers on 127.0.0.1 (the judge and the RQS judge), real dataset, real run folders."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from surveyalign.cli import main
from surveyalign.judge.synthesis import build_synthesis_messages
from surveyalign.testing import FakeChatServer

# three samples (seeds 10, 11, 12): +1 twice, -1 once; per-token log-probs -0.4, -0.2, -0.1
SAMPLES = {10: ("Clear prose.", 1, -0.4), 11: ("Readable and tidy.", 1, -0.2), 12: ("Hard to follow.", -1, -0.1)}
MERGED = "Clear, readable and tidy prose."


def _choice(text: str, logprob: float) -> dict:
    return {"message": {"role": "assistant", "content": text}, "finish_reason": "stop",
            "logprobs": {"content": [{"token": w, "logprob": logprob} for w in text.split()]}}


def _judge(merge_answer: str):
    def reply(body: dict) -> dict:
        content = body["messages"][-1]["content"]
        if "## Reviewer notes" in content:  # the merge call (App. E)
            return _choice(merge_answer, -0.3)
        text, score, logprob = SAMPLES[int(body["seed"])]
        return _choice(f"{text} $$${score}$$$", logprob)
    return reply


def _rqs(body: dict) -> str:
    return "Mostly the same points. <consistency>0.6</consistency>"


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _config(dataset: Path, out: Path, name: str, judge_url: str, rqs_url: str) -> Path:
    def backend(url: str) -> dict:
        return {"kind": "openai", "options": {"model": "judge-m", "base_url": url, "api_key_env": None,
                                              "max_retries": 0}}
    path = out / f"{name}.yaml"
    path.write_text(yaml.safe_dump({
        "name": name, "dataset": str(dataset), "output_dir": str(out), "run_name": name, "progress": False,
        "bootstrap": 0, "limit": 1, "dimensions": ["readability"], "samples_per_unit": 3,
        "backend": backend(judge_url),
        "generation": {"temperature": 0.7, "seed": 10, "max_new_tokens": 32, "want_logprobs": True},
        "rqs": {"backend": {"kind": "openai", "options": {"model": "rater-m", "base_url": rqs_url,
                                                          "api_key_env": None, "max_retries": 0}}}}))
    return path


@pytest.mark.parametrize("case", ["merged", "merge_fails", "off"])
def test_the_rqs_stage_rates_the_rationale_consolidated_from_the_winning_samples(dataset_dir, tmp_path, case):
    merge_answer = {"merged": f"{MERGED} $$$1$$$", "merge_fails": "All wrong. $$$-1$$$", "off": "unused"}[case]
    with FakeChatServer(replies=_judge(merge_answer), logprob=None, model="judge-m") as judge, \
            FakeChatServer(replies=_rqs, model="rater-m") as rater:
        argv = ["evaluate", "--config", str(_config(dataset_dir, tmp_path, case, judge.base_url, rater.base_url))]
        assert main(argv + (["--no-synthesis"] if case == "off" else [])) == 0
        merges = [b for b in judge.requests if "## Reviewer notes" in b["messages"][-1]["content"]]
        rated = [b["messages"][-1]["content"] for b in rater.requests]
    [pred] = _lines(tmp_path / case / "predictions.jsonl")
    # vote: +1 (2 of 3); the best winning sample is seed 11 (mean log-prob -0.2 > -0.4)
    assert pred["prediction"] == 1 and pred["vote"]["chosen_sample"] == 1
    assert [s["text"] for s in pred["samples"]] == ["Clear prose. $$$1$$$", "Readable and tidy. $$$1$$$",
                                                    "Hard to follow. $$$-1$$$"]  # every sample kept
    syn = pred["synthesis"]
    run_config = json.loads((tmp_path / case / "run_config.json").read_text())
    metrics = json.loads((tmp_path / case / "metrics.json").read_text())
    if case == "off":
        assert merges == []  # no merge call at all
        assert (syn["source"], syn["error"], syn["n_merged"]) == ("best_sample", "synthesis turned off", 2)
        assert pred["rationale"] == "Readable and tidy."
        assert run_config["config"]["synthesis"] is False and run_config["synthesis"]["enabled"] is False
        counts = {"eligible": 1, "synthesized": 0, "single": 0, "best_sample": 1, "failed": 0}
    else:
        # one merge call, made by the judge itself at temperature 0, of the two winning rationales and the score +1
        [merge] = merges
        assert merge["model"] == "judge-m" and merge["temperature"] == 0.0
        assert merge["messages"] == build_synthesis_messages("readability", 1, ["Clear prose.", "Readable and tidy."])
        assert run_config["synthesis"]["enabled"] is True and "highest mean log-probability" in \
            run_config["synthesis"]["fallback"]
        if case == "merged":
            assert (syn["source"], syn["error"], syn["n_merged"]) == ("synthesized", None, 2)
            assert pred["rationale"] == MERGED
            counts = {"eligible": 1, "synthesized": 1, "single": 0, "best_sample": 0, "failed": 0}
        else:
            assert syn["source"] == "best_sample"
            assert syn["error"] == "merge answer gave score -1, not the winning +1"
            assert pred["rationale"] == "Readable and tidy."  # the best winning sample, never dropped
            counts = {"eligible": 1, "synthesized": 0, "single": 0, "best_sample": 0, "failed": 1}
        assert metrics["harness"]["calls"]["synthesis_made"] == 1
    assert metrics["harness"]["synthesis_counts"] == counts == run_config["synthesis_counts"]
    # the RQS stage rated the unit's reported rationale, once
    [prompt] = rated
    assert f"Machine rationale (to be rated):\n{pred['rationale']}\n" in prompt
    assert pred["consistency"] == 0.6 and metrics["rqs"] == pytest.approx(0.6)


def test_a_rerun_reuses_the_merge_answer(dataset_dir, tmp_path):
    with FakeChatServer(replies=_judge(f"{MERGED} $$$1$$$"), logprob=None, model="judge-m") as judge, \
            FakeChatServer(replies=_rqs, model="rater-m") as rater:
        config = str(_config(dataset_dir, tmp_path, "again", judge.base_url, rater.base_url))
        assert main(["evaluate", "--config", config]) == 0
        assert len(judge.requests) == 4  # 3 samples + 1 merge
        assert main(["evaluate", "--config", config]) == 0
        assert len(judge.requests) == 4 and len(rater.requests) == 1  # nothing sent again
    records = _lines(tmp_path / "again" / "calls.jsonl")
    assert sorted(r["stage"] for r in records) == ["judge", "judge", "judge", "rqs", "synthesis"]

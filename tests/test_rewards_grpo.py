"""TRL's real GRPOTrainer, 3 steps on CPU through recipes/grpo.py, rewarded by SurveyAlign: a tiny writer, the
judge a scripted chat server on 127.0.0.1. The rewards TRL logs equal the ones computed by hand from the scripted
answers; the async reward is the one called; a completion judged once costs no second call."""

from __future__ import annotations

import importlib.util
import math
import sys

import pytest
import yaml

from surveyalign.rewards import read_reward_log
from surveyalign.testing import FakeChatServer

SCORES = (-2, -1, 1, 2)


def survey_of(body: dict) -> str:
    """The survey text inside a judge request (after 'Survey under review:', before the closing rule)."""
    content = body["messages"][-1]["content"]
    return content.rsplit("Survey under review:\n", 1)[1].rsplit("\n" + "-" * 32, 1)[0]


def scripted(body: dict) -> str:
    """Score = SCORES[words of the survey mod 4] (an empty survey is never sent: it fails as missing text)."""
    return f"Judged.$$${SCORES[len(survey_of(body).split()) % 4]}$$$"


def _recipe():
    spec = importlib.util.spec_from_file_location("_recipe_grpo", "recipes/grpo.py")
    module = sys.modules["_recipe_grpo"] = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_grpo_three_steps_with_the_surveyalign_reward(tmp_path, tiny_model_dir, repo_root, monkeypatch):
    monkeypatch.chdir(repo_root)
    with FakeChatServer(replies=scripted) as server:
        reward_yaml = tmp_path / "reward.yaml"
        reward_yaml.write_text(yaml.safe_dump({
            "judge": {"backend": {"kind": "openai", "options": {"model": "fake", "base_url": server.base_url,
                                                               "api_key_env": None}}},
            "dimensions": {"readability": 1.0, "structure": 0.5},
            "checks": {"penalize": []}}))
        recipe = _recipe()
        args = recipe.make_parser().parse_args_and_config([
            "--config", "configs/grpo/tiny.yaml", "--model_name_or_path", str(tiny_model_dir),
            "--output_dir", str(tmp_path / "out"), "--reward_config", str(reward_yaml)])
        result = recipe.main(*args)
        requests = len(server.requests)
    records = [r for r in read_reward_log(result["reward_log"]) if r["kind"] == "completion"]
    assert len(records) == 12 and {r["path"] for r in records} == {"async"}  # 3 steps x 4 generations
    assert result["reward_counts"]["async_calls"] == 3 and result["reward_counts"]["sync_calls"] == 0
    by_hand = {}
    for r in records:
        words = len(r["text"].split())
        by_hand.setdefault(r["step"], []).append(1.5 * SCORES[words % 4] if r["text"].strip() else None)
        assert r["reward"] == by_hand[r["step"]][-1]
    logged = {h["step"]: h["rewards/surveyalign/mean"] for h in result["log_history"] if "rewards/surveyalign/mean" in h}
    assert sorted(by_hand) == [0, 1, 2] and sorted(logged) == [1, 2, 3]
    for step, values in by_hand.items():  # TRL logs the reward of generation step s at step s + 1
        kept = [v for v in values if v is not None]
        assert logged[step + 1] == pytest.approx(sum(kept) / len(kept) if kept else math.nan, nan_ok=True)
    distinct = {r["text"] for r in records if r["text"].strip()}
    assert requests == 2 * len(distinct)  # one call per distinct (completion, dimension): repeats cost nothing

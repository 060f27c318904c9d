"""Provider prompt caching: the shared-survey layout, Anthropic breakpoints through Message Batches, OpenAI's
automatic prefixes, cache write/read prices, ``--plan`` with and without the cache, and the adapter refusal,
against the stand-in servers (a prefix seen within the TTL is a read; tokens are words)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
import yaml

from surveyalign.backends.base import GenerationSettings
from surveyalign.backends.request_bodies import chat_body, messages_params
from surveyalign.calls.cost import ModelPrice, load_prices
from surveyalign.cli import main
from surveyalign.prompts import build_judge_prompt
from surveyalign.testing import FakeBatchServer, FakeChatServer, StandInPromptCache

DIMS = ["readability", "structure", "comprehensiveness", "criticalness"]


def _dataset(tmp_path: Path, n: int = 20, words: int = 4000) -> Path:
    from surveyalign.data import build_dataset

    rng = random.Random(0)
    release = tmp_path / "release" / "raw"
    release.mkdir(parents=True)
    records = []
    for p in range(n):
        # 3-letter words: a word and its space are 4 characters, one token by the plan's 4-characters rule
        body = " ".join("".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(3)) for _ in range(words))
        records.append({"uid": f"moprd-p{p}-v1-r1", "source": "moprd", "paper_title": f"A survey of topic {p}",
                        "paper_text": f"# A survey of topic {p}\n\n{body}",
                        "result": [{"dimension": d.capitalize(), "score": 1, "reasons": [f"reason {p}"]}
                                   for d in DIMS]})
    (release / "test_samples.json").write_text(json.dumps(records), encoding="utf-8")
    build_dataset(tmp_path / "release", tmp_path / "ds", records="raw")
    return tmp_path / "ds"


def _config(tmp_path: Path, dataset: Path, run: str, options: dict, **top) -> Path:
    path = tmp_path / f"{run}.yaml"
    path.write_text(yaml.safe_dump({
        "name": run, "dataset": str(dataset), "output_dir": str(tmp_path / "runs"), "run_name": run,
        "progress": False, "bootstrap": 0, "dimensions": DIMS, "synthesis": False,
        "backend": {"kind": "openai", "options": {"api_key_env": None, "batch_poll_s": 0.01,
                                                  "prompt_cache_min_tokens": 1024, **options}},
        "generation": {"temperature": 0.7, "seed": 0, "max_new_tokens": 4}, **top}))
    return path


def _plan_and_run(config: Path, capsys) -> tuple[dict, dict, str]:
    from surveyalign.evaluation import EvalConfig, run_evaluation

    cfg = EvalConfig.from_yaml(config)
    planned = run_evaluation(cfg, plan_only=True).calls["plan"]["cache"]
    plan_out = capsys.readouterr().out
    assert main(["evaluate", "--config", str(config)]) == 0
    metrics = json.loads((cfg.run_dir / "metrics.json").read_text())
    return planned, metrics["harness"]["cost"]["total"], plan_out + capsys.readouterr().out


def test_hand_computed_cost_of_one_uncached_and_one_cached_call():
    haiku = load_prices().models["claude-haiku-4-5"]  # input 1.00, cache read 0.10, cache write 1.25, output 5.00
    assert (haiku.input, haiku.cached_input, haiku.cache_write, haiku.output) == (1.0, 0.10, 1.25, 5.0)
    # uncached: 10,000 prompt + 200 completion tokens = (10,000 x 1 + 200 x 5) / 1e6
    assert haiku.cost(10_000, 200) == pytest.approx(0.011)
    # cached: 9,000 read + 500 written + 500 fresh = (500 x 1 + 9,000 x 0.1 + 500 x 1.25 + 200 x 5) / 1e6
    assert haiku.cost(10_000, 200, 9_000, cache_write_tokens=500) == pytest.approx(0.003025)
    # Message Batches halve every rate, cache reads and writes included
    assert haiku.cost(10_000, 200, 9_000, cache_write_tokens=500, batch=True) == pytest.approx(0.0015125)
    with pytest.raises(ValueError, match="cached <= prompt"):
        ModelPrice(input=1, output=1).cost(10, 0, 6, cache_write_tokens=5)


def test_shared_layout_puts_the_survey_first_and_marks_it_for_anthropic():
    prompts = [build_judge_prompt(d, "BODY " * 5, title="T", layout="shared") for d in DIMS]
    prefixes = {p.content[:p.shared_chars] for p in prompts}
    assert prefixes == {"Survey under review:\nTitle: T\n\n" + "BODY " * 5 + "\n" + "-" * 32 + "\n\n"}
    assert prompts[0].content.rstrip().endswith("...$$$-1$$$).")  # the answer format last
    app_c = build_judge_prompt("readability", "BODY")
    assert app_c.shared_chars is None and "cache_prefix_chars" not in app_c.messages()[0]
    assert app_c.template_hash != build_judge_prompt("readability", "BODY", layout="shared").template_hash
    settings = GenerationSettings(max_new_tokens=8)
    params = messages_params("claude-haiku-4-5", prompts[0].messages(), settings)
    [message] = params["messages"]
    assert [b["text"] for b in message["content"]] == [prompts[0].content[:prompts[0].shared_chars],
                                                        prompts[0].content[prompts[0].shared_chars:]]
    assert all(b["cache_control"] == {"type": "ephemeral"} for b in message["content"])
    assert chat_body("m", prompts[0].messages(), settings)["messages"] == [{"role": "user",
                                                                             "content": prompts[0].content}]
    with pytest.raises(ValueError, match="unknown prompt layout 'other'"):
        build_judge_prompt("readability", "x", layout="other")


def test_anthropic_batch_shared_layout_k5_costs_under_a_quarter_of_the_list_price(tmp_path, capsys):
    dataset = _dataset(tmp_path)
    with FakeBatchServer(prompt_cache=StandInPromptCache(min_tokens=1024)) as server:
        config = _config(tmp_path, dataset, "claude", {"model": "claude-haiku-4-5", "base_url": server.anthropic_url,
                                                       "batch": "anthropic"}, layout="shared", samples_per_unit=5)
        planned, total, out = _plan_and_run(config, capsys)
    assert total["calls"] == 20 * 4 * 5 and total["batch_calls"] == 400
    # recorded usage priced at the list price (no cache, no batch) is the naive run's cost
    haiku = load_prices().models["claude-haiku-4-5"]
    naive = haiku.cost(total["prompt_tokens"], total["completion_tokens"])
    assert total["cost_usd"] <= 0.25 * naive
    # per survey: 1 write of the survey block, 4 instruction writes, every other call a read
    assert total["cache_hits"] == 20 * (4 * 5 - 1)
    assert total["cached_tokens"] / total["prompt_tokens"] > 0.85
    assert planned["this_run"] == "cache+batch"
    assert planned["total"]["cache+batch"]["cost_usd"] == pytest.approx(total["cost_usd"], rel=0.10)
    assert planned["total"]["list"]["cost_usd"] == pytest.approx(naive, rel=0.10)
    assert "<- this run" in out and "per 1,000 surveys" in out and "prompt cache:" in out


def test_openai_k1_shared_layout_saves_what_automatic_prefix_caching_allows(tmp_path, capsys):
    dataset = _dataset(tmp_path, n=6, words=8000)
    with FakeChatServer(prompt_cache=StandInPromptCache(min_tokens=1024, block=128)) as server:
        config = _config(tmp_path, dataset, "gpt", {"model": "gpt-5.2", "base_url": server.base_url},
                         layout="shared", concurrency=4)
        planned, total, out = _plan_and_run(config, capsys)
    # 3 of a survey's 4 calls read its survey block (heading 3 + title line 6 + "# A survey of topic p" 6 + 8,000
    # body words + separator 1 = 8,016 words) in 128-word blocks past 1,024: 1,024 + 54 x 128 = 7,936 words each
    assert total["cache_hits"] == 6 * 3
    assert total["cached_tokens"] == 6 * 3 * (1024 + 54 * 128)
    assert planned["total"]["cache"]["cost_usd"] == pytest.approx(total["cost_usd"], rel=0.10)
    assert total["cost_usd"] < 0.6 * planned["total"]["list"]["cost_usd"]


def test_shared_layout_is_refused_for_an_adapter_trained_on_the_app_c_order(tmp_path, dataset_dir, capsys):
    from surveyalign.models import write_training_record

    adapter = tmp_path / "adapter"
    adapter.mkdir()
    write_training_record(adapter, {"dimension": "readability", "protocol": "v1.0", "enable_thinking": False,
                                    "use_knowledge": False})
    path = tmp_path / "a.yaml"
    path.write_text(yaml.safe_dump({"name": "a", "dataset": str(dataset_dir), "output_dir": str(tmp_path),
                                    "dimensions": ["readability"], "layout": "shared",
                                    "backend": {"kind": "transformers", "options": {
                                        "model": "m", "adapter": str(adapter)}}}))
    assert main(["evaluate", "--config", str(path), "--plan"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "layout: shared is for zero-shot judges only" in err[0]
    assert str(adapter / "surveyalign_training.json") in err[0]


def _blocks_words(body: dict) -> list[int]:
    """Words of each content block of a Messages API request (system first)."""
    out = [len(body["system"].split())] if body.get("system") else []
    for message in body["messages"]:
        content = message["content"]
        out += [len(content.split())] if isinstance(content, str) else [len(b["text"].split()) for b in content]
    return out


def test_direct_anthropic_messages_k5_reads_the_shared_prefix_and_prices_reads_and_writes(tmp_path, capsys):
    dataset = _dataset(tmp_path, n=1, words=8000)
    with FakeChatServer(prompt_cache=StandInPromptCache(min_tokens=1024)) as server:
        path = tmp_path / "opus.yaml"
        path.write_text(yaml.safe_dump({
            "name": "opus", "dataset": str(dataset), "output_dir": str(tmp_path / "runs"), "run_name": "opus",
            "progress": False, "bootstrap": 0, "dimensions": DIMS, "synthesis": False, "layout": "shared",
            "samples_per_unit": 5, "concurrency": 1,
            "backend": {"kind": "anthropic", "options": {"model": "claude-opus-4-5", "base_url": server.base_url,
                                                         "api_key_env": None, "prompt_cache_min_tokens": 1024}},
            "generation": {"omit": ["top_p"], "temperature": 0.7, "seed": 0, "max_new_tokens": 4}}))
        planned, total, out = _plan_and_run(path, capsys)
        bodies = list(server.requests)
    assert len(bodies) == 20 and all(b["max_tokens"] == 4 and "top_p" not in b and "seed" not in b for b in bodies)
    # every request: one user message of two marked blocks, the survey block (heading 3 + title line 6 +
    # "# A survey of topic 0" 6 + 8,000 body words + separator 1 = 8,016 words) and the dimension's instructions
    shared = 8016
    tails = {}
    for body in bodies:
        words = _blocks_words(body)
        assert words[0] == shared and len(words) == 2
        assert all(b["cache_control"] == {"type": "ephemeral"} for b in body["messages"][-1]["content"])
        tails.setdefault(body["messages"][-1]["content"][1]["text"], words[1])
    assert len(tails) == 4
    records = [json.loads(line) for line in (tmp_path / "runs" / "opus" / "calls.jsonl").read_text().splitlines()]
    by = {(r["namespace"], r["sample"]): r for r in records}
    tail = {d: by[(d, 0)]["prompt_tokens"] - shared for d in DIMS}
    assert sorted(tail.values()) == sorted(tails.values())
    # concurrency 1, calls by prefix group: readability's first sample writes both breakpoints, each later
    # dimension's first sample reads the survey block and writes its instructions, every 2nd..5th sample reads all
    assert (by[("readability", 0)]["cached_tokens"], by[("readability", 0)]["cache_write_tokens"]) == (
        0, shared + tail["readability"])
    for d in DIMS[1:]:
        assert (by[(d, 0)]["cached_tokens"], by[(d, 0)]["cache_write_tokens"]) == (shared, tail[d])
    for d in DIMS:
        for k in range(1, 5):
            assert by[(d, k)]["cached_tokens"] == by[(d, k)]["prompt_tokens"] == shared + tail[d]
            assert "cache_write_tokens" not in by[(d, k)]
    prompt = sum(5 * (shared + t) for t in tail.values())
    read = sum(4 * (shared + t) for t in tail.values()) + 3 * shared
    written = shared + sum(tail.values())
    assert (total["prompt_tokens"], total["cached_tokens"], total["cache_write_tokens"]) == (prompt, read, written)
    assert total["completion_tokens"] == 20 * 4 and total["cache_hits"] == 19
    # claude-opus-4-5: input $5.00, cache read $0.50, cache write $6.25, output $25.00 per million tokens; no call
    # has a fresh prompt token
    assert total["cost_usd"] == pytest.approx((read * 0.50 + written * 6.25 + 80 * 25.00) / 1e6, abs=1e-6)  # 6 places
    naive = (prompt * 5.00 + 80 * 25.00) / 1e6
    assert total["cost_usd"] < 0.3 * naive
    assert planned["this_run"] == "cache"  # --plan counts 4 characters per token (the 3-letter survey words: 1 each)
    assert planned["total"]["cache"]["cost_usd"] == pytest.approx(total["cost_usd"], rel=0.10)
    assert "anthropic (marked breakpoints" in out


def test_anthropic_backend_retries_sends_thinking_and_omit_and_the_openai_path_drops_the_prefix_key(monkeypatch):
    from surveyalign.backends import load_backend

    monkeypatch.setenv("STANDIN_ANTHROPIC_KEY", "sk-ant-standin")
    prompt = build_judge_prompt("readability", "BODY " * 40, title="T", layout="shared")
    settings = GenerationSettings(max_new_tokens=2048, thinking_budget=1024, omit=["temperature", "top_p"])
    with FakeChatServer(fail_first=2, fail_status=529, prompt_cache=StandInPromptCache(min_tokens=10)) as server:
        backend = load_backend("anthropic", model="claude-opus-4-5", base_url=server.base_url,
                               api_key_env="STANDIN_ANTHROPIC_KEY", backoff_initial=0.0, prompt_cache_min_tokens=10)
        [[first, second]] = backend.generate([prompt.messages()], settings, n=2)
        backend.close()
        bodies, headers = list(server.requests), list(server.request_headers)
    assert backend.stats == {"attempts": 4, "retries": 2, "failed": 0}  # two 529 "overloaded" answers retried
    assert headers[-1]["x-api-key"] == "sk-ant-standin" and headers[-1]["anthropic-version"] == "2023-06-01"
    assert "authorization" not in headers[-1]
    assert bodies[-1]["thinking"] == {"type": "enabled", "budget_tokens": 1024} and bodies[-1]["max_tokens"] == 2048
    assert "temperature" not in bodies[-1] and "top_p" not in bodies[-1] and "cache_prefix_chars" not in json.dumps(
        bodies[-1])
    assert {first.reasoning, second.reasoning} == {"Weighing the survey."}
    # 40 body words + heading 3 + title 2 + separator 1 = 46 shared words; one call writes, the other reads
    total = len(prompt.content.split())
    assert sorted([(g.cached_tokens, g.cache_write_tokens) for g in (first, second)], key=str) == sorted(
        [(0, total), (total, None)], key=str)
    assert backend.prompt_cache().provider == "anthropic" and backend.describe()["api"] == "messages"
    assert load_backend("anthropic", model="claude-opus-4-5", cache_control=False).prompt_cache() is None
    with pytest.raises(ValueError, match="batch must be true, false, auto or anthropic"):
        load_backend("anthropic", model="claude-opus-4-5", batch="openai")
    with FakeChatServer() as server:  # the direct OpenAI path sends the prompt without the layout's prefix key
        backend = load_backend("openai", model="m", base_url=server.base_url, api_key_env=None)
        backend.generate([prompt.messages()], GenerationSettings(max_new_tokens=4), n=2)
        backend.close()
        assert [b["messages"] for b in server.requests] == [[{"role": "user", "content": prompt.content}]] * 2


def _opus_config(tmp_path: Path, dataset: Path, run: str, base_url: str, **options) -> Path:
    path = tmp_path / f"{run}.yaml"
    path.write_text(yaml.safe_dump({
        "name": run, "dataset": str(dataset), "output_dir": str(tmp_path / "runs"), "run_name": run,
        "progress": False, "bootstrap": 0, "dimensions": DIMS, "synthesis": False, "layout": "shared",
        "samples_per_unit": 5, "concurrency": 2,
        "backend": {"kind": "anthropic", "options": {"model": "claude-opus-4-5", "base_url": base_url,
                                                     "api_key_env": None, "prompt_cache_min_tokens": 1024,
                                                     **options}},
        "generation": {"temperature": 0.7, "seed": 0, "max_new_tokens": 4}}))
    return path


def test_max_cost_counts_the_prompt_cache_when_the_backend_meets_one(tmp_path, capsys):
    from surveyalign.evaluation import EvalConfig, run_evaluation

    dataset = _dataset(tmp_path, n=2, words=8000)
    with FakeChatServer(prompt_cache=StandInPromptCache(min_tokens=1024)) as server:
        cached_cfg = _opus_config(tmp_path, dataset, "cached", server.base_url)
        plan = run_evaluation(EvalConfig.from_yaml(cached_cfg), plan_only=True).calls["plan"]["cache"]["total"]
        capsys.readouterr()
        with_cache, without = plan["cache"]["cost_usd"], plan["list"]["cost_usd"]
        # 2 surveys x 4 dimensions x 5 samples of ~8,300 tokens: 332k prompt tokens at $5 / M is about $1.66; with
        # the cache, 2 writes of the survey block + 8 of the instructions, every other prompt token a $0.50 read
        assert without > 3.5 * with_cache
        cap = round(2 * with_cache, 4)
        assert main(["evaluate", "--config", str(cached_cfg), "--max-cost", str(cap)]) == 0
        total = json.loads((tmp_path / "runs" / "cached" / "metrics.json").read_text())["harness"]["cost"]["total"]
        assert total["calls"] == 40 and total["cost_usd"] <= cap
        assert total["cost_usd"] == pytest.approx(with_cache, rel=0.10)
        # the same cap without the cache (cache_control: false): the list-price estimate passes it, the run stops
        plain = _opus_config(tmp_path, dataset, "plain", server.base_url, cache_control=False)
        assert main(["evaluate", "--config", str(plain), "--max-cost", str(cap)]) == 4
        assert "stopped at the cost cap" in capsys.readouterr().err
        answered = (tmp_path / "runs" / "plain" / "calls.jsonl").read_text().splitlines()
        assert 0 < len(answered) < 40


def test_layout_sweep_runs_both_layouts_on_the_same_units_and_writes_the_paired_table(tmp_path, capsys,
                                                                                      monkeypatch):
    from surveyalign.evaluation import SweepConfig

    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    repo = Path(__file__).resolve().parents[1]
    shipped = SweepConfig.from_yaml(repo / "configs/studies/sweep-layout.yaml")
    dataset = _dataset(tmp_path, n=10, words=1200)

    def reply(body: dict) -> str:  # the stand-in judge: right (+1, the gold score) on the shared layout only
        first = body["messages"][-1]["content"][0]["text"]
        return "Clear. $$$1$$$" if first.startswith("Survey under review:") else "Unclear. $$$-1$$$"

    with FakeChatServer(replies=reply, prompt_cache=StandInPromptCache(min_tokens=1024)) as server:
        path = tmp_path / "sweep.yaml"
        path.write_text(yaml.safe_dump({
            "name": shipped.name, "base": str(shipped.base_path().resolve()), "variants": shipped.variants,
            "set": {**shipped.set, "dataset": str(dataset), "progress": False, "bootstrap": 0,
                    "backend.options.base_url": server.base_url, "backend.options.api_key_env": None,
                    "backend.options.prompt_cache_min_tokens": 1024},
            "output_dir": str(tmp_path / "sweeps"), "bootstrap": 200}))
        assert main(["sweep", "--config", str(path)]) == 0
        printed = capsys.readouterr().out
        n_requests = len(server.requests)
    root = tmp_path / "sweeps" / "layout"
    out = json.loads((root / "sweep.json").read_text())
    assert shipped.variants == {"shared": {"layout": "shared"}} and set(out["runs"]) == {"base", "shared"}
    assert n_requests == 2 * 10 * 4  # no RQS stage: the shipped sweep turns it off
    units = {}
    for name in ("base", "shared"):
        rows = [json.loads(x) for x in (root / name / "predictions.jsonl").read_text().splitlines()]
        units[name] = sorted(r["unit_id"] for r in rows)
        assert json.loads((root / name / "run_config.json").read_text())["config"]["layout"] == (
            "shared" if name == "shared" else "app_c")
    assert units["base"] == units["shared"] and len(units["base"]) == 40
    # gold 1 everywhere: the base answers -1 (squared error 4), the shared layout 1 (error 0)
    mse = out["comparisons"]["shared"]["metrics"]["avg_mse"]
    assert (mse["a"], mse["b"], mse["diff"]) == (0.0, 4.0, -4.0) and out["comparisons"]["shared"]["n_shared"] == 40
    # only the shared layout's prompts share a prefix: 3 of a survey's 4 dimensions read its survey block
    cached = {name: [json.loads(x).get("cached_tokens") or 0
                     for x in (root / name / "calls.jsonl").read_text().splitlines()] for name in ("base", "shared")}
    assert sum(cached["base"]) == 0 and sum(1 for c in cached["shared"] if c) == 10 * 3
    assert "shared" in printed

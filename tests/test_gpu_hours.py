"""GPU-hours of local engines (issue 22): a local engine's cost is its GPU time, counted from the seconds recorded
per call: a batch engine (transformers, vLLM in-process) records each batch's wall time shared out over its calls,
so GPU-hours = the calls' seconds x GPUs / 3600; the Ray actors answer requests that are in flight together, whose
recorded seconds are overlapping latencies, so the same sum is divided by the requests in flight. GPUs =
tensor_parallel_size x Ray workers; 0 on CPU and for API judges. Shown in metrics.json, the run summary, `report`
(a row per model) and score's per-dimension cost blocks and batch total. The engines here are stand-ins that
describe themselves as vLLM on GPUs (no GPU on the test machine) and answer after a fixed sleep. `--plan` estimates
the GPU-hours of the calls still to make by the same rule, from the mean seconds of the answers so far."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest

from surveyalign.backends import Generation, load_backend
from surveyalign.backends.simple import ScriptedBackend
from surveyalign.calls.spend import engine_gpus, gpu_hours_per_second
from surveyalign.cli import main
from surveyalign.evaluation import EvalConfig, run_evaluation
from surveyalign.inference.report import cost_text
from surveyalign.inference.spend import batch_cost

ANSWER = "The survey reads well. $$$1$$$"


class _GpuEngine(ScriptedBackend):
    """Answers after `delay` seconds per generate() call and describes itself as a vLLM engine on GPUs."""

    answers_from_model = True

    def __init__(self, desc: dict, delay: float = 0.4) -> None:
        super().__init__([ANSWER], cycle=True)
        self.desc, self.delay = desc, delay

    def generate(self, prompts, settings=None, n=1):
        time.sleep(self.delay)
        return [[Generation(ANSWER, "stop", None, prompt_tokens=10, completion_tokens=3) for _ in range(n)]
                for _ in prompts]

    def describe(self):
        return {**self.desc, "backend": "vllm", "model": "local-32b"}


class _RayLikeEngine(_GpuEngine):
    """The same with its own agenerate (requests in flight together, as the Ray actors take them)."""

    concurrency = 4

    async def agenerate(self, prompts, settings=None, n=1):
        await asyncio.sleep(self.delay)
        return [[Generation(ANSWER, "stop", None, prompt_tokens=10, completion_tokens=3) for _ in range(n)]
                for _ in prompts]


def test_gpus_of_each_kind_of_backend(tiny_model_dir):
    assert engine_gpus(_GpuEngine({"tensor_parallel_size": 2})) == 2
    assert engine_gpus(_GpuEngine({"tensor_parallel_size": 2, "ray": {"workers": 4}})) == 8
    assert engine_gpus(_GpuEngine({})) == 1  # no tensor parallel setting: one GPU
    assert engine_gpus(_GpuEngine({"device": "cpu"})) == 0
    assert engine_gpus(load_backend("transformers", model=str(tiny_model_dir), device="cpu")) == 0
    assert engine_gpus(load_backend("openai", model="gpt-5.2", base_url="http://127.0.0.1:9/v1",
                                    api_key_env=None)) == 0
    assert engine_gpus(load_backend("constant")) == 0 and gpu_hours_per_second(load_backend("constant")) == 0.0
    assert gpu_hours_per_second(_GpuEngine({"tensor_parallel_size": 2})) == pytest.approx(2 / 3600)
    ray_like = _RayLikeEngine({"ray": {"workers": 2}})
    assert gpu_hours_per_second(ray_like) == pytest.approx(2 / 3600 / 4)  # 4 requests in flight
    assert gpu_hours_per_second(ray_like, concurrency=8) == pytest.approx(2 / 3600 / 8)


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.mark.parametrize(("engine", "per_second"), [
    (_GpuEngine({"tensor_parallel_size": 2}), 2 / 3600),
    (_RayLikeEngine({"tensor_parallel_size": 1, "ray": {"workers": 2}}), 2 / 3600 / 4),
])
def test_evaluate_reports_gpu_hours_from_the_recorded_seconds(engine, per_second, dataset_dir, tmp_path, capsys):
    data = {"name": "gpu", "dataset": str(dataset_dir), "output_dir": str(tmp_path), "run_name": "gpu",
            "progress": False, "bootstrap": 0, "limit": 2, "backend": {"kind": "scripted", "options": {}}}
    t0 = time.perf_counter()
    run_evaluation(EvalConfig.from_dict({**data, "limit": 1}), backend=engine)  # 4 units timed
    first = _lines(tmp_path / "gpu" / "calls.jsonl")
    # --plan of the rest: each call to make x the mean seconds so far x the engine's GPU-hours per second
    plan = run_evaluation(EvalConfig.from_dict(data), backend=engine, plan_only=True).calls["plan"]
    mean = sum(r["seconds"] for r in first) / len(first)
    assert plan["calls"] == 4 and plan["gpu_hours"] == pytest.approx(4 * mean * per_second, abs=1e-6)
    capsys.readouterr()
    result = run_evaluation(EvalConfig.from_dict(data), backend=engine)
    wall = time.perf_counter() - t0
    records = _lines(result.run_dir / "calls.jsonl")
    assert len(records) == 8 and all(r["seconds"] > 0 for r in records)
    expected = sum(r["seconds"] for r in records) * per_second
    cost = result.metrics["harness"]["cost"]
    assert cost["gpu_hours"] == {"local-32b": pytest.approx(expected, abs=1e-6)}
    gpus = engine_gpus(engine)
    assert cost["gpu_hours"]["local-32b"] <= wall * gpus / 3600 + 1e-6  # never more than the run's wall time
    assert cost["total"]["cost_usd"] is None and cost["unpriced_models"] == ["local-32b"]
    out = capsys.readouterr().out
    assert f"GPU-hours of local engines: local-32b {cost['gpu_hours']['local-32b']:.4f}" in " ".join(out.split())
    assert main(["report", str(result.run_dir)]) == 0
    table = [" ".join(line.replace("│", " ").split()) for line in capsys.readouterr().out.splitlines()]
    hours = f"{cost['gpu_hours']['local-32b']:.4f}"
    assert float(hours) >= 0.0002  # visible at 4 decimals
    assert f"model local-32b 8 0 80 24 – – {hours} " in "\n".join(table) + " ", table


def test_score_cost_blocks_carry_gpu_hours_and_the_batch_sums_them():
    from surveyalign.calls.cost import load_prices

    block = {"calls": 4, "batch_calls": 0, "calls_without_usage": 0, "prompt_tokens": 100, "completion_tokens": 20,
             "cached_tokens": 0, "cost_usd": None, "model": "local-32b", "priced_as": None, "gpu_hours": 0.0125}
    assert cost_text(block) == ("120 tokens (100 prompt + 20 completion, 4 calls), no price (local engine: GPU time), "
                                "0.0125 GPU-hours")
    assert cost_text({**block, "gpu_hours": None}) == ("120 tokens (100 prompt + 20 completion, 4 calls), no price "
                                                       "(local engine: GPU time)")
    reviews = [{"dimensions": {"readability": {"cost": block}, "structure": {"cost": {**block, "gpu_hours": 0.005}}}},
               {"dimensions": {"readability": {"cost": {**block, "gpu_hours": None}}}}]
    summary = batch_cost(reviews, load_prices())
    assert summary["gpu_hours"] == {"local-32b": 0.0175} and summary["total"]["calls"] == 12

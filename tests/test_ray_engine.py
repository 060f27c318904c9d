"""The Ray engine (backend kind ``ray``) on CPU in local mode with 2 workers and the tiny model: the whole sample test split
judged with the same predictions as the in-process transformers backend for the same seeds; a worker killed
mid-run has its calls retried by Ray; a driver killed mid-run is followed by a re-run that repeats no finished call.
Slow (a local Ray instance starts in 30-120 s on a loaded CPU machine); needs ``pip install 'surveyalign[ray]'``."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pytest
import yaml

pytest.importorskip("ray", reason="Ray is not installed: pip install -e .[ray]")

from surveyalign.evaluation import EvalConfig, run_evaluation

REPO = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow

#: K=2 samples per unit at T=0.7 with seeds 5, 6: the whole sample test split is 47 units = 94 calls; the driver
#: test takes 2 units per dimension x 4 dimensions = 16 calls.
GENERATION = {"temperature": 0.7, "max_new_tokens": 8, "seed": 5}


def _data(dataset: Path, out: Path, backend: dict, name: str, limit: int | None = 2) -> dict:
    return {"name": name, "dataset": str(dataset), "output_dir": str(out), "run_name": name, "progress": False,
            "bootstrap": 0, "limit": limit, "samples_per_unit": 2, "generation": GENERATION, "backend": backend}


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _predictions(run: Path) -> list[tuple]:
    return [(p["unit_id"], p["status"], p.get("score"), p.get("rationale")) for p in _lines(run / "predictions.jsonl")]


def _ray_backend(model: Path) -> dict:
    # one unit per worker call, so the kills below land between calls of the run
    return {"kind": "ray", "options": {"model": str(model), "workers": 2, "engine": "transformers", "batch_size": 1,
                                       "engine_options": {"device": "cpu"}}}


def test_same_predictions_as_in_process_and_a_killed_worker_is_retried(tiny_model_dir, dataset_dir, tmp_path):
    from surveyalign.backends import load_backend

    local = run_evaluation(EvalConfig.from_dict(_data(
        dataset_dir, tmp_path, {"kind": "transformers", "options": {"model": str(tiny_model_dir), "device": "cpu"}},
        "inproc", limit=None)))
    assert local.counts["total"] == 47 and len(_lines(local.run_dir / "calls.jsonl")) == 94  # the whole test split

    backend = load_backend("ray", **_ray_backend(tiny_model_dir)["options"])
    try:
        pids = backend.worker_pids()
        calls_path = tmp_path / "ray" / "calls.jsonl"
        killed: list[int] = []

        def kill_one_worker_mid_run() -> None:
            deadline = time.monotonic() + 600
            while time.monotonic() < deadline:
                if calls_path.exists() and len(calls_path.read_text().splitlines()) >= 4:
                    os.kill(pids[0], signal.SIGKILL)
                    killed.append(pids[0])
                    return
                time.sleep(0.02)

        killer = threading.Thread(target=kill_one_worker_mid_run, daemon=True)
        killer.start()
        ray_run = run_evaluation(EvalConfig.from_dict(_data(dataset_dir, tmp_path, _ray_backend(tiny_model_dir),
                                                            "ray", limit=None)), backend=backend)
        killer.join(timeout=5)
        assert killed, "the worker was never killed (the run finished before 4 calls were written?)"
        assert backend.worker_pids()[0] != pids[0]  # Ray restarted the actor
    finally:
        backend.close()
    records = _lines(ray_run.run_dir / "calls.jsonl")
    assert len(records) == 94 and not [r for r in records if r["error"]]  # the lost calls were retried, not failed
    assert _predictions(ray_run.run_dir) == _predictions(local.run_dir)  # same seeds, same answers
    # the cache keys are the in-process engine's: the in-process run's cache answers every Ray call
    assert {r["key"] for r in records} == {r["key"] for r in _lines(local.run_dir / "calls.jsonl")}


def test_driver_killed_mid_run_rerun_repeats_no_finished_call(tiny_model_dir, dataset_dir, tmp_path):
    config = tmp_path / "ray.yaml"
    # the tiny model's answers never parse; keep them (retry_errors false) so "finished" means answered
    data = {**_data(dataset_dir, tmp_path, _ray_backend(tiny_model_dir), "driver"), "retry_errors": False}
    config.write_text(yaml.safe_dump(data))
    calls_path = tmp_path / "driver" / "calls.jsonl"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-m", "surveyalign", "evaluate", "--config", str(config)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 600
        while not (calls_path.exists() and len(calls_path.read_text().splitlines()) >= 4):
            assert proc.poll() is None and time.monotonic() < deadline, "the driver never wrote 4 calls"
            time.sleep(0.02)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the driver and the local Ray instance it started
        proc.wait()
    first = {r["key"] for r in _lines(calls_path) if not r.get("error")}
    assert 4 <= len(first) < 16
    result = run_evaluation(EvalConfig.from_yaml(config))
    counts = Counter(r["key"] for r in _lines(calls_path))
    assert result.calls["cached"] == len(first) and result.calls["made"] == 16 - len(first)
    assert all(counts[key] == 1 for key in first)  # no finished call was made again
    assert len(counts) == 16 and result.counts["total"] == 8


_DRIVER = """
import json, sys
import ray
from surveyalign.backends import GenerationSettings, load_backend

prompts = json.loads(sys.argv[2])
backend = load_backend("ray", model=sys.argv[1], workers=1, engine_options={"device": "cpu"})
try:
    out = backend.generate(prompts, GenerationSettings(temperature=0.7, max_new_tokens=6, seed=3), n=2)
    facts = {"ray": backend.describe()["ray"], "gcs": ray.get_runtime_context().gcs_address}
finally:
    backend.close()
facts["still_connected"] = ray.is_initialized()
facts["answers"] = [[[g.text, g.prompt_tokens, g.completion_tokens] for g in row] for row in out]
print(json.dumps(facts))
"""


def test_connects_to_a_running_cluster_by_ray_address(tiny_model_dir, tmp_path):
    """A Ray head started apart (`ray start --head`, as slurm/ray_cluster.slurm does) is used through RAY_ADDRESS by
    a driver process: the worker runs there and answers as the in-process engine does for the same seeds, token
    counts included (the tokenizer's); closing the backend disconnects the driver and leaves the cluster running.
    The head asks for a token (Ray >= 2.5x): head and driver share RAY_AUTH_MODE / RAY_AUTH_TOKEN as
    slurm/ray_cluster.slurm sets them (Ray reads them when imported: hence a driver process of its own)."""
    import secrets
    import shutil
    import socket
    import tempfile

    from surveyalign.backends import GenerationSettings, load_backend

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {**os.environ, "PYTHONPATH": str(REPO), "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(32)}
    temp_dir = tempfile.mkdtemp(prefix="ray", dir="/tmp")  # keeps /tmp/ray/ray_current_cluster untouched
    said = tmp_path / "head.log"
    with said.open("wb") as log:
        head = subprocess.Popen([str(Path(sys.executable).parent / "ray"), "start", "--head", "--block",
                                 f"--port={port}", "--num-cpus=1", "--include-dashboard=false",
                                 f"--temp-dir={temp_dir}"], env=env, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
    prompts = [[{"role": "user", "content": "Rate the structure of this survey."}],
               [{"role": "user", "content": "Rate its references."}]]
    try:
        deadline = time.monotonic() + 300
        while "Ray runtime started" not in said.read_text(errors="replace"):  # GCS and raylet both up
            assert head.poll() is None and time.monotonic() < deadline, "the Ray head never started"
            time.sleep(0.5)
        driver = subprocess.run([sys.executable, "-c", _DRIVER, str(tiny_model_dir), json.dumps(prompts)],
                                env={**env, "RAY_ADDRESS": f"127.0.0.1:{port}"}, capture_output=True, text=True,
                                timeout=600, check=False)
        assert driver.returncode == 0, driver.stderr[-3000:]
        facts = json.loads(driver.stdout.strip().splitlines()[-1])
        assert head.poll() is None  # the cluster keeps running after the driver disconnected
    finally:
        os.killpg(head.pid, signal.SIGKILL)  # the head and the processes it started (its own session)
        head.wait()
        shutil.rmtree(temp_dir, ignore_errors=True)
    assert facts["ray"] == {"workers": 1, "address": f"127.0.0.1:{port}"} and facts["gcs"].endswith(f":{port}")
    assert facts["still_connected"] is False
    local = load_backend("transformers", model=str(tiny_model_dir), device="cpu").generate(
        prompts, GenerationSettings(temperature=0.7, max_new_tokens=6, seed=3), n=2)
    assert facts["answers"] == [[[g.text, g.prompt_tokens, g.completion_tokens] for g in row] for row in local]
    assert all(row[0][1] > 0 and row[0][2] > 0 for row in facts["answers"])  # tokens counted, prompt once per row

"""The Ray engine's checks before any worker starts, and the worker body on its own (surveyalign/backends/
ray_backend.py): engines, worker counts and engine options refused in one line; ``engine: vllm-data`` takes options
by name, refuses quantization and drops the actor-only options; ``_EngineWorker`` builds the engine, describes it,
reports its facts, checks settings and generates with or without an adapter name; a cluster address (``address:``
or ``RAY_ADDRESS``) where nothing listens, or without a port, stops at once in one line naming it (no Ray instance
needed: the tests with Ray workers are tests/test_ray_engine.py, slow)."""

from __future__ import annotations

import os

import pytest

pytest.importorskip("ray", reason="Ray is not installed: pip install -e .[ray]")

from surveyalign.backends import GenerationSettings, load_backend
from surveyalign.backends import ray_data_llm as rdl
from surveyalign.backends.ray_backend import RayBackend, _EngineWorker

_PROMPT = [{"role": "user", "content": "rate this survey"}]


@pytest.mark.parametrize("engine", ["constant", "scripted", "openai", "sglang"])
def test_only_local_engines_run_on_workers(engine):
    with pytest.raises(ValueError) as err:
        RayBackend("/models/m", engine=engine)
    assert str(err.value) == f"ray engine must be transformers, vllm or vllm-data, got {engine!r}"


@pytest.mark.parametrize("workers", [0, -1, "0"])
def test_at_least_one_worker(workers):
    with pytest.raises(ValueError) as err:
        RayBackend("/models/m", workers=workers)
    assert str(err.value) == f"workers must be >= 1, got {workers}"


def test_unknown_engine_options_are_named_with_the_valid_ones():
    # one worker is enough: the options are checked next (before Ray starts)
    with pytest.raises(ValueError) as err:
        RayBackend("/models/m", workers=1, engine_options={"tensor_parallel_size": 2, "device": "cpu",
                                                           "bogus": 1})
    message = str(err.value)
    assert message.startswith("engine_options: engine 'transformers' takes no option(s) ['bogus', "
                              "'tensor_parallel_size']; valid: [")
    assert "'device'" in message and "'self'" not in message and "'model'" in message
    with pytest.raises(ValueError, match=r"engine 'vllm' takes no option\(s\) \['device'\]"):
        RayBackend("/models/m", engine="vllm", engine_options={"device": "cpu"})


def test_vllm_data_takes_options_by_name_and_refuses_quantization(monkeypatch):
    with pytest.raises(TypeError, match="ray backend: pass the options by name"):
        RayBackend("/models/m", "adapter-folder", engine="vllm-data")
    for quantization in ("4bit", "8bit", {"load_in_4bit": True}):
        with pytest.raises(ValueError) as err:
            RayBackend("/models/m", engine="vllm-data", quantization=quantization)
        assert str(err.value) == (f"ray engine 'vllm-data': quantization {quantization!r} is not supported; use "
                                  "engine: vllm")
    # accepted quantization words and the actor-only options go no further than the vLLM check
    monkeypatch.setattr(rdl, "_has_vllm", lambda: False)
    for quantization in (None, "auto", "none"):
        with pytest.raises(ImportError, match="ray engine 'vllm-data' needs vllm"):
            RayBackend("/models/m", engine="vllm-data", quantization=quantization, allow_base_mismatch=True,
                       num_gpus=1, num_cpus=2, max_restarts=1, concurrency=8, workers=2, batch_size=4)
    with pytest.raises(ImportError, match="ray engine 'vllm-data' needs vllm"):
        load_backend("ray", model="/models/m", engine="vllm-data")


def test_the_worker_body_builds_describes_and_generates():
    worker = _EngineWorker("scripted", {"replies": lambda messages, settings, index: f"seed {settings.seed + index}"})
    assert worker.describe() == {"backend": "scripted", "replies": None, "cycle": False}
    assert worker.pid() == os.getpid()
    out = worker.generate([_PROMPT, _PROMPT], GenerationSettings(seed=7, temperature=0.7).model_dump(), 2)
    assert [[g.text for g in row] for row in out] == [["seed 7", "seed 8"], ["seed 7", "seed 8"]]
    assert worker.backend.calls[0][1] == GenerationSettings(seed=7, temperature=0.7)
    with pytest.raises(TypeError, match="adapter_name"):  # an engine without adapters gets no adapter name
        worker.generate([_PROMPT], GenerationSettings().model_dump(), 1, "readability")


def test_the_worker_reports_its_engines_facts():
    worker = _EngineWorker("constant", {"score": 2})
    assert worker.facts() == {"max_positions": None, "max_model_len": None, "adapter_paths": {},
                              "adapter_fingerprints": {}}
    worker.backend.max_positions, worker.backend.max_model_len = 4096, 8192
    worker.backend.adapter_paths, worker.backend.adapter_fingerprints = {"readability": "/a"}, {"readability": "f1"}
    assert worker.facts() == {"max_positions": 4096, "max_model_len": 8192, "adapter_paths": {"readability": "/a"},
                              "adapter_fingerprints": {"readability": "f1"}}
    worker.backend.adapter_paths = None
    assert worker.facts()["adapter_paths"] == {}


def test_the_worker_runs_the_engines_settings_check():
    worker = _EngineWorker("openai", {"base_url": "http://127.0.0.1:9/v1", "model": "judge", "api_key_env": None,
                                      "send_chat_template_kwargs": False})
    worker.check_settings(GenerationSettings(enable_thinking=False).model_dump())
    with pytest.raises(ValueError, match="enable_thinking=true cannot reach the server"):
        worker.check_settings(GenerationSettings(enable_thinking=True).model_dump())


def _closed_port() -> int:
    """A TCP port on 127.0.0.1 where nothing listens (bound, then released)."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.parametrize("scheme", ["", "ray://"])
def test_an_address_where_no_cluster_listens_stops_at_once_naming_it(monkeypatch, scheme):
    import time

    import ray

    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    address = f"{scheme}127.0.0.1:{_closed_port()}"
    t0 = time.monotonic()
    with pytest.raises(ValueError) as err:
        load_backend("ray", model="/models/m", workers=1, address=address)
    assert time.monotonic() - t0 < 10  # not Ray's minutes of retries
    message = str(err.value)
    assert message.startswith(f"ray backend: no Ray cluster answers at {address} (backend option address): ")
    assert message.endswith("start one (`ray start --head`, slurm/ray_cluster.slurm) or unset it for a local "
                            "instance")
    assert not ray.is_initialized()  # nothing started, nothing connected


def test_ray_address_from_the_environment_is_used_and_named(monkeypatch, tmp_path, dataset_dir, capsys):
    """RAY_ADDRESS (no ``address:`` in the config) is the cluster tried; through `evaluate` it is one line, exit 2."""
    import yaml

    from surveyalign.cli import main

    address = f"127.0.0.1:{_closed_port()}"
    monkeypatch.setenv("RAY_ADDRESS", address)
    with pytest.raises(ValueError, match=rf"^ray backend: no Ray cluster answers at {address} \(RAY_ADDRESS\): "):
        load_backend("ray", model="/models/m", workers=1)
    config = tmp_path / "ray.yaml"
    config.write_text(yaml.safe_dump({"name": "ray", "dataset": str(dataset_dir), "output_dir": str(tmp_path),
                                      "run_name": "ray", "progress": False, "limit": 1,
                                      "backend": {"kind": "ray", "options": {"model": "/models/m", "workers": 1}}}))
    assert main(["evaluate", "--config", str(config)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"surveyalign evaluate: backend: ray backend: no Ray cluster answers at {address} "
                          "(RAY_ADDRESS): ") and err.count("\n") == 1
    # the config's address wins over RAY_ADDRESS
    other = f"127.0.0.1:{_closed_port()}"
    with pytest.raises(ValueError, match=rf"at {other} \(backend option address\)"):
        load_backend("ray", model="/models/m", workers=1, address=other)


@pytest.mark.parametrize("address", ["nowhere", "host:port", ":6379", "ray://"])
def test_an_address_without_host_and_port_is_refused(monkeypatch, address):
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    with pytest.raises(ValueError) as err:
        load_backend("ray", model="/models/m", workers=1, address=address)
    assert str(err.value) == (f"ray backend: address {address!r} (backend option address) is not auto, HOST:PORT or "
                              "ray://HOST:PORT")

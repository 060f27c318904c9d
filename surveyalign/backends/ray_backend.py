"""The Ray engine: one local judge backend per Ray worker, calls spread over the workers (``backend.kind: ray``).

Each worker is a Ray actor that builds the configured engine once (``engine: transformers`` on CPU or one GPU,
``engine: vllm`` with its own tensor / data parallel settings) with the same options an in-process backend takes
(model, adapter, dtype, quantization, ...), so it runs the same chat template, seeded sampler and length rule. The
driver's :meth:`RayBackend.agenerate` hands the requests waiting (the K samples of one unit each) to the next idle
worker in groups of up to ``batch_size`` prompts, and awaits them; the call executor (``run_calls``) keeps
``concurrency`` requests in flight and appends every answer to ``calls.jsonl`` as it returns, so resume, reports
and the cache behave exactly as in-process, and the cache keys are the in-process engine's (a run may switch
between in-process and Ray and reuse its answers).

Fault tolerance is Ray's: actors restart (``max_restarts``) and their pending calls are retried on the restarted
worker (``max_task_retries``); a call whose worker cannot come back is recorded as an API error and made again on
resume. A killed driver loses only the calls in flight.

Cluster: ``address`` (or ``RAY_ADDRESS``) connects to a running cluster (``slurm/ray_cluster.slurm``); without
one a local Ray instance with ``workers x num_cpus`` CPUs is started and shut down on :meth:`close`. A
``HOST:PORT`` or ``ray://HOST:PORT`` address is tried with one TCP connection first (``ray_cluster.py``): when
nothing listens there the backend stops at once with the address and where it came from, instead of Ray retrying
for minutes; a connected driver only disconnects on :meth:`close` (the cluster keeps running). The workers get the
driver's ``PYTHONPATH`` and Hugging Face offline settings in both cases. ``ray`` is an optional extra
(``pip install 'surveyalign[ray]'``), imported when the backend is built.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from typing import Any

from surveyalign.backends.base import (
    Backend,
    Generation,
    GenerationSettings,
    Messages,
    check_request,
)
from surveyalign.backends.ray_cluster import cluster_address, connect_cluster

__all__ = ["RayBackend"]


class _EngineWorker:
    """The body of one Ray actor: an in-process backend of ``engine`` built from ``options``."""

    def __init__(self, engine: str, options: dict[str, Any]) -> None:
        from surveyalign.backends import load_backend

        self.backend = load_backend(engine, **options)

    def describe(self) -> dict[str, Any]:
        return self.backend.describe()

    def facts(self) -> dict[str, Any]:
        """What the driver needs besides ``describe()``: context length and the adapters' paths / fingerprints."""
        return {"max_positions": getattr(self.backend, "max_positions", None),
                "max_model_len": getattr(self.backend, "max_model_len", None),
                "adapter_paths": dict(getattr(self.backend, "adapter_paths", {}) or {}),
                "adapter_fingerprints": dict(getattr(self.backend, "adapter_fingerprints", {}) or {})}

    def check_settings(self, settings: dict[str, Any]) -> None:
        self.backend.check_settings(GenerationSettings(**settings))

    def pid(self) -> int:
        return os.getpid()

    def _generate(self, prompts: list[Messages], settings: dict[str, Any], n: int, name: str | None) -> list:
        extra = {} if name is None else {"adapter_name": name}
        return self.backend.generate(prompts, GenerationSettings(**settings), n, **extra)

    def generate(self, prompts: list[Messages], settings: dict[str, Any], n: int,
                 adapter_name: str | None = None) -> list[list[Generation]]:
        """``n`` generations of each prompt; when the batch raises, each prompt runs alone and one that raises gets
        ``n`` failed generations naming the error (one bad prompt fails one unit, not the worker call).

        Raises:
            Exception: the engine's error when no prompt can be answered (one prompt, or every prompt raised).
        """
        try:
            return self._generate(prompts, settings, n, adapter_name)
        except Exception:
            if len(prompts) <= 1:
                raise
        out: list[list[Generation]] = []
        errors: list[Exception] = []
        for prompt in prompts:
            try:
                out += self._generate([prompt], settings, n, adapter_name)
            except Exception as err:  # noqa: BLE001 - this prompt's answers record the error
                errors.append(err)
                failed = Generation.failed(f"engine error on this prompt: {type(err).__name__}: {err}")
                out.append([failed] * n)
        if len(errors) == len(prompts):
            raise errors[0]
        return out


class RayBackend(Backend):
    """Calls of a local engine spread over Ray workers (see the module docstring).

    Args:
        model: the model folder or Hub id (as for the engine).
        adapter: one LoRA adapter folder; adapters: ``{name: folder}`` on one engine (as for the engine).
        quantization, allow_base_mismatch: as for the engine (the adapter's training record decides ``"auto"``).
        engine: the in-process backend each worker builds: ``"transformers"`` or ``"vllm"``; or ``"vllm-data"``:
            no actors of ours, Ray's vLLM integration (``ray.data.llm``,
            :class:`~surveyalign.backends.ray_data_llm.RayDataVLLMBackend`; GPU workers only).
        workers: Ray actors, >= 1 (one model copy each: data parallel).
        address: a running Ray cluster (``"auto"``, ``"HOST:6379"``, ``"ray://HOST:10001"``); default
            ``RAY_ADDRESS``, else a local instance.
        num_gpus: GPUs per worker (0 on CPU; 1 for one replica per GPU; vLLM with ``tensor_parallel_size: T`` in
            ``engine_options`` needs T).
        num_cpus: CPUs per worker.
        max_restarts: restarts of a dead worker, and retries of its pending calls.
        concurrency: requests in flight from the driver (default: ``workers`` x ``batch_size``).
        batch_size: prompts per worker call (default: the engine's ``batch_size`` option, else 8 for transformers
            and 256 for vLLM, which schedules its own batches).
        engine_options: further options of the engine (``device``, ``dtype``, ``batch_size``,
            ``tensor_parallel_size``, ``gpu_memory_utilization``, ``max_model_len``, ...).

    Raises:
        ImportError: ``ray`` is not installed.
        ValueError: ``workers < 1``, an unknown engine, or options the engine does not take.
    """

    name = "ray"
    local_engine = True

    def __new__(cls, model: str | None = None, *args: Any, engine: str = "transformers", **kwargs: Any) -> Any:
        """``engine: vllm-data`` builds a :class:`~surveyalign.backends.ray_data_llm.RayDataVLLMBackend` (Ray's
        vLLM integration) instead of actors; the other engines build this class."""
        if engine != "vllm-data":
            return super().__new__(cls)
        from surveyalign.backends.ray_data_llm import RayDataVLLMBackend

        if args:
            raise TypeError("ray backend: pass the options by name")
        quantization = kwargs.pop("quantization", "auto")
        if quantization not in (None, "auto", "none"):
            raise ValueError(f"ray engine 'vllm-data': quantization {quantization!r} is not supported; use "
                             "engine: vllm")
        ignored = {"allow_base_mismatch", "num_gpus", "num_cpus", "max_restarts", "concurrency"}
        return RayDataVLLMBackend(model, **{k: v for k, v in kwargs.items() if k not in ignored})

    def __init__(self, model: str, adapter: str | None = None, adapters: dict[str, str] | None = None,
                 quantization: str | dict[str, Any] | None = "auto", allow_base_mismatch: bool = False,
                 engine: str = "transformers", workers: int = 2, address: str | None = None, num_gpus: float = 0.0,
                 num_cpus: float = 1.0, max_restarts: int = 4, concurrency: int | None = None,
                 batch_size: int | None = None, engine_options: dict[str, Any] | None = None) -> None:
        try:
            import ray
        except ImportError as err:
            raise ImportError("backend kind 'ray' needs the ray package: pip install 'surveyalign[ray]'") from err
        from surveyalign.backends import BACKENDS, backend_class

        if engine not in ("transformers", "vllm") or engine not in BACKENDS:
            raise ValueError(f"ray engine must be transformers, vllm or vllm-data, got {engine!r}")
        if int(workers) < 1:
            raise ValueError(f"workers must be >= 1, got {workers}")
        import inspect

        engine_options = dict(engine_options or {})
        valid = set(inspect.signature(backend_class(engine).__init__).parameters) - {"self"}
        unknown = sorted(set(engine_options) - valid)
        if unknown:
            raise ValueError(f"engine_options: engine {engine!r} takes no option(s) {unknown}; valid: {sorted(valid)}")
        options: dict[str, Any] = {"model": model, "quantization": quantization,
                                   "allow_base_mismatch": allow_base_mismatch, **engine_options}
        if adapter:
            options["adapter"] = adapter
        if adapters:
            options["adapters"] = dict(adapters)
        self.engine = engine
        self.n_workers = int(workers)
        self.address = cluster_address(address)
        self._owns_ray = connect_cluster(self.address, "backend option address" if address else "RAY_ADDRESS",
                                         local_cpus=max(1, round(self.n_workers * num_cpus)))
        actor = ray.remote(num_cpus=num_cpus, num_gpus=num_gpus, max_restarts=max_restarts,
                           max_task_retries=max_restarts)(_EngineWorker)
        self._workers = [actor.remote(engine, options) for _ in range(self.n_workers)]
        self._describe = ray.get(self._workers[0].describe.remote())  # the engine is built (models loaded) now
        ray.get([w.describe.remote() for w in self._workers[1:]])
        facts = ray.get(self._workers[0].facts.remote())
        self.max_positions = facts["max_positions"]
        self.max_model_len = facts["max_model_len"]
        self.adapter_paths: dict[str, str] = facts["adapter_paths"]
        self.adapter_fingerprints: dict[str, Any] = facts["adapter_fingerprints"]
        self.model_path = str(self._describe.get("model") or model)
        per_worker = batch_size or engine_options.get("batch_size") or (256 if engine == "vllm" else 8)
        self.batch_size = int(per_worker) * self.n_workers  # prompts per generate() over all workers
        from transformers import (
            AutoTokenizer,  # the driver counts prompt tokens with the engine's tokenizer
        )

        self.tokenizer = AutoTokenizer.from_pretrained(str(self._describe.get("tokenizer") or self.model_path))
        self.concurrency = int(concurrency or self.batch_size)
        self._idle: dict[int, dict[str, Any]] = {}  # per event loop: idle workers, pending requests, dispatcher

    # ------------------------------------------------------------------ interface
    def describe(self) -> dict[str, Any]:
        """The engine's own description (so cache keys equal the in-process engine's) plus ``ray`` (workers,
        address), an operational entry left out of cache keys."""
        return {**self._describe, "ray": {"workers": self.n_workers, "address": self.address or "local"}}

    def check_settings(self, settings: GenerationSettings) -> None:
        """The engine's own check, run on a worker.

        Raises:
            ValueError: the engine refuses the settings.
        """
        import ray

        try:
            ray.get(self._workers[0].check_settings.remote(settings.model_dump()))
        except ray.exceptions.RayTaskError as err:
            cause = err.as_instanceof_cause()
            raise (cause if isinstance(cause, ValueError) else ValueError(str(cause))) from None

    def render(self, messages: Messages, settings: GenerationSettings) -> str:
        """The engine's chat rendering (same template, ``enable_thinking``), done in the driver."""
        from surveyalign.backends.chat import render_chat

        return render_chat(self.tokenizer, list(messages), enable_thinking=settings.enable_thinking)

    def adapter_view(self, name: str) -> Any:
        """The backend of adapter ``name`` (every worker holds every adapter; calls carry the name).

        Raises:
            KeyError: no adapter of that name was loaded.
        """
        from surveyalign.backends.adapters import AdapterView

        if name not in self.adapter_paths:
            raise KeyError(f"ray backend: no adapter named {name!r}; loaded: {sorted(self.adapter_paths)}")
        return AdapterView(self, name)

    def generate(self, prompts: Sequence[Messages], settings: GenerationSettings | None = None, n: int = 1,
                 adapter_name: str | None = None) -> list[list[Generation]]:
        """``n`` samples of each prompt; the prompts are split into one contiguous share per worker, run at once.

        Args:
            prompts: P chat prompts; settings: sampling settings; n: samples per prompt.
            adapter_name: the adapter to use (adapter views pass it); ``None``: the engine's default.

        Returns:
            P lists of ``n`` generations in prompt order; a worker lost for good gives failed generations.

        Raises:
            ValueError: invalid prompts or ``n``.
        """
        import ray

        settings = check_request(prompts, settings, n)
        if not prompts:
            return []
        share = -(-len(prompts) // self.n_workers)
        parts = [list(prompts[i:i + share]) for i in range(0, len(prompts), share)]
        refs = [self._workers[w].generate.remote(part, settings.model_dump(), n, adapter_name)
                for w, part in enumerate(parts)]
        out: list[list[Generation]] = []
        for w, (ref, part) in enumerate(zip(refs, parts)):
            try:
                out += ray.get(ref)
            except (ray.exceptions.RayActorError, ray.exceptions.RayTaskError) as err:
                failed = Generation.failed(f"ray worker {w}: {type(err).__name__}: {str(err).splitlines()[0]}")
                out += [[failed] * n for _ in part]
        return out

    def worker_pids(self) -> list[int]:
        """Process ids of the workers (for fault-injection tests)."""
        import ray

        return ray.get([w.pid.remote() for w in self._workers])

    async def agenerate(self, prompts: Sequence[Messages], settings: GenerationSettings | None = None, n: int = 1
                        ) -> list[list[Generation]]:
        """``n`` samples of each prompt, computed on the next idle worker.

        Requests waiting at the same time with the same settings and ``n`` go to one worker together, up to the
        engine's ``batch_size`` prompts per worker call (vLLM and transformers batch them), so the
        ``concurrency`` requests in flight keep every worker busy with full batches.

        Returns:
            P lists of ``n`` generations; a worker lost for good gives failed generations (never raised).

        Raises:
            ValueError: invalid prompts or ``n``.
        """
        settings = check_request(prompts, settings, n)
        loop = asyncio.get_running_loop()
        state = self._idle.get(id(loop))
        if state is None:
            idle: asyncio.Queue = asyncio.Queue()
            for index in range(self.n_workers):
                idle.put_nowait(index)
            state = self._idle[id(loop)] = {"idle": idle, "pending": [], "dispatcher": None}
        future = loop.create_future()
        state["pending"].append((list(prompts), settings, n, future))
        if state["dispatcher"] is None or state["dispatcher"].done():
            state["dispatcher"] = loop.create_task(self._dispatch(state))
        return await future

    async def _dispatch(self, state: dict[str, Any]) -> None:
        """Hand the pending requests to idle workers in groups of equal settings and ``n``."""
        per_call = max(1, self.batch_size // self.n_workers)
        while state["pending"]:
            index = await state["idle"].get()
            await asyncio.sleep(0)  # let requests issued together arrive before the group is cut
            if not state["pending"]:
                state["idle"].put_nowait(index)
                return
            _, settings, n, _ = state["pending"][0]
            group, rest, size = [], [], 0
            for item in state["pending"]:
                if item[1] == settings and item[2] == n and (not group or size + len(item[0]) <= per_call):
                    group.append(item)
                    size += len(item[0])
                else:
                    rest.append(item)
            state["pending"][:] = rest
            asyncio.get_running_loop().create_task(self._run_group(index, group, settings, n, state["idle"]))

    async def _run_group(self, index: int, group: list[tuple], settings: GenerationSettings, n: int,
                         idle: asyncio.Queue) -> None:
        import ray

        prompts = [p for item in group for p in item[0]]
        try:
            out = await self._workers[index].generate.remote(prompts, settings.model_dump(), n)
        except (ray.exceptions.RayActorError, ray.exceptions.RayTaskError) as err:
            failed = Generation.failed(f"ray worker {index}: {type(err).__name__}: {str(err).splitlines()[0]}")
            out = [[failed] * n for _ in prompts]
        except BaseException as err:  # noqa: BLE001 - handed to the waiting callers
            for item in group:
                if not item[3].done():
                    item[3].set_exception(err)
            idle.put_nowait(index)
            return
        idle.put_nowait(index)
        start = 0
        for item in group:
            if not item[3].done():
                item[3].set_result(out[start:start + len(item[0])])
            start += len(item[0])

    def close(self) -> None:
        """Kill the workers, and shut the local Ray instance down when this backend started it (a cluster this
        backend connected to keeps running: the driver only disconnects)."""
        try:
            import ray
        except ImportError:  # pragma: no cover
            return
        for worker in getattr(self, "_workers", []):
            try:
                ray.kill(worker, no_restart=True)
            except Exception:  # noqa: BLE001, S110 - already gone
                pass
        self._workers = []
        if self._owns_ray and ray.is_initialized():
            ray.shutdown()
            self._owns_ray = False
        super().close()

"""Joining or starting Ray for a backend: the cluster address, a one-connection check of it, and ``ray.init``.

Shared by the Ray engine (:mod:`surveyalign.backends.ray_backend`, ``backend.kind: ray``) and Ray's vLLM integration
(:mod:`surveyalign.backends.ray_data_llm`, ``engine: vllm-data``). ``address`` (or ``RAY_ADDRESS``) names a running
cluster (``slurm/ray_cluster.slurm``); without one a local Ray instance of the backend's own is started. A
``HOST:PORT`` or ``ray://HOST:PORT`` address is tried with one TCP connection first (:func:`check_address`): when
nothing listens there the backend stops at once with the address and where it came from, instead of Ray retrying
for minutes. The workers get the driver's ``PYTHONPATH`` and Hugging Face offline settings (:data:`WORKER_ENV`).
``ray`` is imported only by :func:`connect_cluster`.
"""

from __future__ import annotations

import os
from typing import Any

__all__ = ["WORKER_ENV", "check_address", "cluster_address", "connect_cluster"]

#: The driver's environment variables the workers get (our code, and offline Hugging Face settings).
WORKER_ENV = ("PYTHONPATH", "HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TOKENIZERS_PARALLELISM", "HF_HOME")


def check_address(address: str, origin: str, timeout_s: float = 5.0) -> None:
    """Check that something listens at a Ray cluster ``address`` before ``ray.init`` tries it for minutes.

    Args:
        address: ``"auto"`` (Ray finds a cluster started on this machine itself; not checked), ``"HOST:PORT"`` (the
            head's GCS port, 6379 by default) or ``"ray://HOST:PORT"`` (Ray Client, 10001 by default).
        origin: where the address came from (``"RAY_ADDRESS"`` or ``"backend option address"``), named in errors.
        timeout_s: seconds to wait for the TCP connection (> 0).

    Raises:
        ValueError: the address has no port, or nothing accepts a connection there (one line with the address,
            its origin and the socket error).
    """
    import socket

    if address == "auto":
        return
    rest = address.split("://", 1)[1] if "://" in address else address
    host, _, port = rest.rstrip("/").rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(f"ray backend: address {address!r} ({origin}) is not auto, HOST:PORT or ray://HOST:PORT")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s).close()
    except OSError as err:
        raise ValueError(f"ray backend: no Ray cluster answers at {address} ({origin}): {err}; start one "
                         "(`ray start --head`, slurm/ray_cluster.slurm) or unset it for a local instance") from None


def cluster_address(address: str | None) -> str | None:
    """The Ray cluster to join: the ``address`` option, else ``RAY_ADDRESS``; ``None`` (a local instance of our own)
    when neither is set or it is Ray's ``"local"``."""
    found = address or os.environ.get("RAY_ADDRESS") or None
    return None if found == "local" else found


def connect_cluster(address: str | None, origin: str, *, local_cpus: int | None = None) -> bool:
    """Start or join Ray for a backend, unless this process is already connected.

    Args:
        address: from :func:`cluster_address`: a running cluster (checked first with :func:`check_address`), or
            ``None``: a new local instance (never a stray ``ray start`` cluster found on this machine).
        origin: where ``address`` came from, named in errors.
        local_cpus: CPUs of a local instance (``None``: Ray's default).

    Returns:
        True when this call started or joined Ray (the caller shuts it down, or disconnects, when done).

    Raises:
        ValueError: nothing listens at ``address``, or Ray could not join the cluster (one line with the cause).
    """
    import ray

    if ray.is_initialized():
        return False
    kwargs: dict[str, Any] = {"log_to_driver": False, "ignore_reinit_error": True,
                              "runtime_env": {"env_vars": {k: v for k, v in os.environ.items() if k in WORKER_ENV}}}
    if address:
        check_address(address, origin)
        kwargs["address"] = address
    else:
        kwargs.update(address="local", include_dashboard=False)
        if local_cpus is not None:
            kwargs["num_cpus"] = local_cpus
    try:
        ray.init(**kwargs)
    except ConnectionError as err:
        raise ValueError(_connect_error(address, origin, err)) from None
    return True


def _connect_error(address: str | None, origin: str, err: BaseException) -> str:
    """One line for a failed ``ray.init`` on a cluster: Ray's message, its cause's first line, and for a refused
    token the settings a driver needs (Ray >= 2.5x starts ``ray start --head`` clusters with token
    authentication, which a driver given an explicit address does not use unless told)."""
    causes, cause = [str(err)], err.__cause__
    while cause is not None and len(causes) < 4:
        causes.append(f"{type(cause).__name__}: {str(cause).strip().splitlines()[-1] if str(cause).strip() else ''}")
        cause = cause.__cause__
    text = "; ".join(causes)
    if "auth" in text.lower():
        text += ("; the cluster uses token authentication: set RAY_AUTH_MODE=token and its token (RAY_AUTH_TOKEN, "
                 "or ~/.ray/auth_token on this machine), as slurm/ray_cluster.slurm does")
    return f"ray backend: cannot connect to the Ray cluster at {address} ({origin}): {text}"

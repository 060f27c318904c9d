"""The reward over HTTP (OpenRLHF's remote reward shape) and as verl's ``compute_score`` hook.

``POST /get_reward`` takes ``{"query": [N texts], "prompts": [N texts]?, "knowledge": [N]?, "title": [N]?,
"references": [N texts or lists of titles]?, "step": int?}`` and answers ``{"rewards": [N floats or null], "failed": [indices], "flags": [N lists of kinds]}``.
OpenRLHF sends each query as prompt + response; when ``prompts`` are sent and a query starts with its prompt, the
prompt is cut off and the rest judged. A failed judgment is ``null`` (or the config's ``failed_value``). The
server is guarded like ``surveyalign serve`` (:class:`surveyalign.backends.ServerLimits`: an API key, a body
cap checked before parsing, a JSON depth cap, header / body timeouts); ``GET /health`` stays open.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from surveyalign.backends import ServerLimits
from surveyalign.backends._http import _UvicornThread
from surveyalign.backends.server_guard import (
    BodyError,
    http_protocol_class,
    is_loopback,
    read_json_object,
)
from surveyalign.rewards._reward import SurveyAlignReward

__all__ = ["CONFIG_ENV", "RewardServer", "build_reward_app", "compute_score", "reward_server_in_thread",
           "serve_rewards"]

#: Environment variable naming the reward YAML read by :func:`compute_score` (verl's hook takes no config).
CONFIG_ENV = "SURVEYALIGN_REWARD_CONFIG"


def _error(status: int, message: str) -> Any:
    from starlette.responses import JSONResponse

    return JSONResponse({"error": {"message": message, "code": status}}, status_code=status)


def _column(payload: dict[str, Any], key: str, n: int, kind: type | tuple[type, ...]) -> list[Any] | None:
    value = payload.get(key)
    if value is None:
        return None
    if not isinstance(value, list) or len(value) != n or not all(v is None or isinstance(v, kind) for v in value):
        names = " or ".join(k.__name__ for k in (kind if isinstance(kind, tuple) else (kind,)))
        raise ValueError(f"'{key}' must be a list of {n} {names} values (one per query)")
    return value


def build_reward_app(reward: SurveyAlignReward, limits: ServerLimits | None = None) -> Any:
    """The Starlette app serving ``reward`` at ``POST /get_reward`` (and ``GET /health``).

    Args:
        reward: the :class:`~surveyalign.rewards.SurveyAlignReward` answering (its async path).
        limits: API key and request limits (default: no key, :class:`ServerLimits` defaults).

    Returns:
        The ASGI app. Errors: 401 without the key (when one is set), 413 for a body over ``max_body_bytes``
        (before it is parsed), 408 for a stalled body, 400 for bad JSON, a body nested too deep or a bad field.
    """
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse, Response
    from starlette.routing import Route

    limits = limits or ServerLimits()
    served = {"requests": 0, "completions": 0}

    async def get_reward(request: Request) -> Response:
        if not limits.authorized(request.headers.get("authorization")):
            response = _error(401, "missing or wrong API key: send the header 'Authorization: Bearer <key>'")
            response.headers["www-authenticate"] = "Bearer"
            return response
        try:
            payload = await read_json_object(request, limits, shape="a JSON object with a 'query' list")
        except BodyError as err:
            return _error(err.status, str(err))
        queries = payload.get("query")
        if not isinstance(queries, list) or not all(isinstance(q, str) for q in queries):
            return _error(400, "'query' must be a list of texts")
        try:
            prompts = _column(payload, "prompts", len(queries), str)
            knowledge = _column(payload, "knowledge", len(queries), str)
            titles = _column(payload, "title", len(queries), str)
            references = _column(payload, "references", len(queries), (str, list))
        except ValueError as err:
            return _error(400, str(err))
        step = payload.get("step")
        if step is not None and (not isinstance(step, int) or isinstance(step, bool) or step < 0):
            return _error(400, "'step' must be a non-negative integer")
        completions = [q[len(p):] if p and q.startswith(p) else q for q, p in zip(queries, prompts or [""] * len(queries))]
        kwargs: dict[str, Any] = {"knowledge": knowledge, "title": titles, "references": references}
        if step is not None:
            kwargs["step"] = step
        outcomes = await reward.ajudge_completions(completions, None, **kwargs)
        served["requests"] += 1
        served["completions"] += len(outcomes)
        fill = reward.config.failed_value
        return JSONResponse({"rewards": [fill if o.reward is None else o.reward for o in outcomes],
                             "failed": [i for i, o in enumerate(outcomes) if o.reward is None],
                             "flags": [sorted(o.flags) for o in outcomes]})

    async def health(request: Request) -> JSONResponse:
        return JSONResponse({"status": "ok", **served, "counts": dict(reward.counts)})

    return Starlette(routes=[Route("/get_reward", get_reward, methods=["POST"]),
                             Route("/health", health, methods=["GET"])])


def _uvicorn_options(limits: ServerLimits) -> dict[str, Any]:
    return {"http": http_protocol_class(limits.header_timeout_s), "timeout_keep_alive": limits.keep_alive_s,
            "h11_max_incomplete_event_size": 16 * 1024}


@dataclass(frozen=True)
class RewardServer:
    """A running reward server: ``url`` (``http://host:port/get_reward``) and its ``port``."""

    url: str
    port: int


@contextlib.contextmanager
def reward_server_in_thread(reward: SurveyAlignReward, *, limits: ServerLimits | None = None, host: str = "127.0.0.1",
                            port: int = 0) -> Iterator[RewardServer]:
    """Serve ``reward`` at ``/get_reward`` in a background thread (tests, notebooks); stops when the block exits.

    Raises:
        RuntimeError: the server did not start (port in use).
    """
    limits = limits or ServerLimits()
    runner = _UvicornThread(build_reward_app(reward, limits), host=host, port=port, **_uvicorn_options(limits))
    runner.start()
    try:
        yield RewardServer(url=f"http://{host}:{runner.port}/get_reward", port=runner.port)
    finally:
        runner.stop()


def serve_rewards(config: str, *, host: str = "127.0.0.1", port: int = 5000, limits: ServerLimits | None = None,
                  log: str | None = None, log_level: str = "info") -> None:
    """Serve the reward of a reward YAML in the foreground (``surveyalign rewards serve``) until interrupted.

    Args:
        config: the reward YAML (:class:`~surveyalign.rewards.RewardConfig`).
        host: interface to bind (``127.0.0.1`` keeps it local; another address without a key prints a warning).
        port: TCP port.
        limits: API key and limits (:class:`ServerLimits`).
        log: overrides the config's ``log``.
        log_level: uvicorn's log level.

    Raises:
        ValueError: a bad reward YAML. OSError: the port is in use.
    """
    import uvicorn

    limits = limits or ServerLimits()
    if limits.api_key is None and not is_loopback(host):
        print(f"WARNING: serving rewards on {host} without an API key; set --api-key or SURVEYALIGN_API_KEY",
              file=sys.stderr, flush=True)
    with SurveyAlignReward.from_yaml(config, log=log) as reward:
        print(f"reward of {config} at http://{host}:{port}/get_reward; API key: "
              f"{'required' if limits.api_key else 'none'}; body <= {limits.max_body_bytes:,} bytes", flush=True)
        uvicorn.run(build_reward_app(reward, limits), host=host, port=port, log_level=log_level,
                    **_uvicorn_options(limits))


_VERL_REWARDS: dict[str, SurveyAlignReward] = {}


def compute_score(data_source: Any, solution_str: str, ground_truth: Any = None, extra_info: dict | None = None,
                  **kwargs: Any) -> float:
    """verl's custom reward hook (``custom_reward_function.name=compute_score``): the SurveyAlign reward of one
    response.

    The reward YAML is ``extra_info["reward_config"]`` when given, else ``$SURVEYALIGN_REWARD_CONFIG``; it is
    built once per process. ``extra_info`` may carry ``knowledge``, ``title``, ``references`` (for KA) and
    ``step``.

    Args:
        data_source: the dataset's source name (unused).
        solution_str: the decoded response (a survey in markdown).
        ground_truth: unused (the judge needs none).
        extra_info: per-row extras (see above).
        **kwargs: further arguments verl may pass (ignored).

    Returns:
        The reward (a float).

    Raises:
        ValueError: no reward config named, or the judgment failed and the config has no ``failed_value``
            (the message carries the judge's reason).
    """
    extra = extra_info or {}
    path = extra.get("reward_config") or os.environ.get(CONFIG_ENV)
    if not path:
        raise ValueError(f"compute_score: name the reward YAML in ${CONFIG_ENV} or extra_info['reward_config']")
    path = str(path)
    if path not in _VERL_REWARDS:
        _VERL_REWARDS[path] = SurveyAlignReward.from_yaml(path)
    reward = _VERL_REWARDS[path]
    step = extra.get("step")
    outcome = reward.judge_completions([solution_str], None, knowledge=[extra.get("knowledge")],
                                       title=[extra.get("title")], references=[extra.get("references")],
                                       **({"step": step} if isinstance(step, int) else {}))[0]
    if outcome.reward is not None:
        return outcome.reward
    if reward.config.failed_value is None:
        raise ValueError(f"compute_score: the judgment failed ({outcome.reason}) and the reward config sets no "
                         f"failed_value")
    return reward.config.failed_value

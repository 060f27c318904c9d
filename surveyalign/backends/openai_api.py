"""Judge backend for any OpenAI-compatible ``/v1/chat/completions`` server (OpenAI, vLLM, ``surveyalign serve``).

One async HTTP session per event loop (``aiohttp`` when installed, else ``httpx``), bounded concurrency,
retries on 429, 408, 5xx, timeouts and connection errors with the one retry policy
(:class:`surveyalign.backends.retry.RetryPolicy`, settings :data:`~surveyalign.backends.retry.OPENAI_RETRY`:
backoff with jitter, ``Retry-After`` honoured), one request per
sample with seed ``settings.seed + i`` (many servers ignore ``n``). The API key is read from an environment
variable whose *name* is configured; the key itself is never written anywhere or returned by ``describe()``.

``describe()`` carries ``server_fingerprint``: the content fingerprint a ``surveyalign serve`` server publishes for
the model it serves (read once per backend instance from ``GET {base_url}/models``; ``None`` for any other
server), so the evaluation cache key changes when the adapter behind the same server is retrained. The same one
GET is the pre-flight check (:meth:`OpenAIBackend.check_ready`): nothing listening stops a run at once, with the
URL and the error, instead of minutes of retries.

Replies are normalised by :func:`surveyalign.backends.responses.normalise_message` (string content, typed parts,
``reasoning_content``, ``refusal``): the answer text is what gets parsed; reasoning and refusal travel apart.
Every generation setting goes into the request body; ``enable_thinking`` as ``chat_template_kwargs`` (see
``send_chat_template_kwargs``); a setting the configured server cannot take is refused with ``ValueError``.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
import urllib.parse
import weakref
from collections.abc import Sequence
from typing import Any

from surveyalign.backends.base import (
    Backend,
    Generation,
    GenerationSettings,
    Messages,
    check_request,
)
from surveyalign.backends.openai_wire import _ChatWire, _LoopState
from surveyalign.backends.pool import ServerPool, probe_models
from surveyalign.backends.prompt_cache import wire_messages
from surveyalign.backends.retry import OPENAI_RETRY, RetryPolicy
from surveyalign.backends.transport import (
    AiohttpTransport,
    HttpxTransport,
    default_transport,
)
from surveyalign.redact import register_secret_env

#: Seconds (connect + read, at most) the one ``GET {base_url}/models`` (pre-flight + fingerprint) may take.
FINGERPRINT_TIMEOUT = 5.0
#: Hosts of hosted APIs known to reject ``chat_template_kwargs`` (HTTP 400 "unrecognized request argument").
NO_TEMPLATE_KWARGS_HOSTS = ("api.openai.com", ".openai.azure.com")

_UNSET = object()


class OpenAIBackend(_ChatWire, Backend):
    """Chat-completions client for OpenAI-compatible servers (``surveyalign/backends/base.py``, kind ``"openai"``).

    Args:
        model: model name sent in every request (e.g. ``"gpt-4o"``, or a ``surveyalign serve`` model name).
        base_url: API root including the version prefix, e.g. ``"https://api.openai.com/v1"`` or
            ``"http://127.0.0.1:8000/v1"``; requests go to ``{base_url}/chat/completions``. A list of roots
            (servers serving the same models) spreads the requests over them (:mod:`surveyalign.backends.pool`:
            least outstanding requests; a failing server is set aside and its requests retried on the others).
        api_key_env: name of the environment variable holding the key; when unset or empty no
            ``Authorization`` header is sent (local servers).
        concurrency: maximum requests in flight per event loop, >= 1.
        timeout: seconds per HTTP attempt (connect + read), > 0.
        max_retries: retries after the first attempt for transient failures, >= 0 (default 6).
        backoff_initial: first backoff delay in seconds (default 1); attempt k waits about
            ``backoff_initial * 2**(k-1)`` (half fixed, half random jitter), capped at ``backoff_max`` (default 60).
        backoff_max: cap of the exponential backoff in seconds.
        max_retry_after: cap (seconds) on a server's ``Retry-After`` request (default 300).
        retry: the whole retry policy (a :class:`~surveyalign.backends.retry.RetryPolicy` or its fields, e.g.
            ``{attempts: 3}``) over :data:`~surveyalign.backends.retry.OPENAI_RETRY`; the four options above
            override it.
        max_tokens_field: body field for the token cap (``"max_tokens"`` or ``"max_completion_tokens"``).
        send_chat_template_kwargs: send ``chat_template_kwargs={"enable_thinking": ...}`` (vLLM, SGLang and
            ``surveyalign serve`` apply it to the chat template). ``None`` (default): send it except to the hosts
            in :data:`NO_TEMPLATE_KWARGS_HOSTS` (the OpenAI API rejects the field). Where it is not sent,
            ``enable_thinking=True`` is refused (it could not take effect); ``describe()`` records the resolved
            value, so run_config says whether ``enable_thinking`` reached the server.
        extra_body: extra JSON fields merged into every request body.
        request_logprobs: ``None`` follows ``settings.want_logprobs``; ``True``/``False`` always / never asks
            for token log-probs (lets a config turn them on without touching the generation settings).
        transport: HTTP library, ``"auto"`` (aiohttp when installed, else httpx), ``"aiohttp"`` or ``"httpx"``.
        n_per_request: ask for a prompt's ``n`` samples in one request (``n=n, seed=settings.seed``; vLLM and
            ``surveyalign serve`` share the prompt's prefill, and ``surveyalign serve`` seeds sample ``i`` with
            ``seed + i``, as separate requests would) instead of ``n`` requests with ``n=1``.
        server_cooldown: seconds a server of ``base_url`` is skipped after a transient failure.
        max_model_len: the served model's context in tokens (prompt + answer); ``None`` (default): the
            ``max_model_len`` the server lists for ``model`` in ``GET {base_url}/models`` (vLLM and
            ``surveyalign serve`` publish it), read once; see :attr:`max_model_len`.
        batch: send a run's calls through the provider's batch API instead (half the price, results within 24 h;
            :mod:`surveyalign.backends.batch_api`): ``True`` / ``"auto"`` (Anthropic for an ``anthropic.com``
            ``base_url``, else OpenAI), ``"openai"`` or ``"anthropic"``; ``False`` (default): direct calls.
        batch_wait: with ``batch``, poll until the batches end (default); ``False``: submit and return, the same
            command run again collects.
        batch_poll_s: seconds between polls of a batch (default 60).
        max_enqueued_tokens: with ``batch``, OpenAI's batch queue limit for ``model`` (the prompt tokens one model
            may have in running batches at once; it depends on the usage tier: the organisation's limits page,
            platform.openai.com/settings/organization/limits, column "Batch queue limit"). Batches are cut to at
            most this many estimated prompt tokens (the tokenizer when the backend has one, else 4 characters per
            token) and one is sent only while the running ones plus it stay within it; the rest goes out as batches
            end, or on the next run. A single request over it is refused. ``None`` (default): no limit.
        prompt_cache_min_tokens: the shortest prefix the provider's prompt cache keeps, in tokens (``None``: the
            provider's documented minimum for ``model``; :meth:`prompt_cache`).

    Raises:
        ValueError: invalid option values.
    """

    name = "openai"
    serves_adapters_by_name = score_judge = True  # an adapter is a served model id (vLLM --lora-modules, ...)

    def __init__(
        self,
        model: str,
        base_url: str | Sequence[str] = "https://api.openai.com/v1",
        api_key_env: str | None = "OPENAI_API_KEY",
        concurrency: int = 16,
        timeout: float = 120.0,
        max_retries: int | None = None,
        backoff_initial: float | None = None,
        backoff_max: float | None = None,
        max_retry_after: float | None = None,
        retry: RetryPolicy | dict[str, Any] | None = None,
        max_tokens_field: str = "max_tokens",
        send_chat_template_kwargs: bool | None = None,
        extra_body: dict[str, Any] | None = None,
        request_logprobs: bool | None = None,
        transport: str = "auto",
        n_per_request: bool = False,
        server_cooldown: float = 30.0,
        max_model_len: int | None = None,
        batch: bool | str = False,
        batch_wait: bool = True,
        batch_poll_s: float = 60.0,
        max_enqueued_tokens: int | None = None,
        prompt_cache_min_tokens: int | None = None,
    ) -> None:
        if not model:
            raise ValueError("openai backend: 'model' is required")
        if concurrency < 1:
            raise ValueError(f"openai backend: concurrency must be >= 1, got {concurrency}")
        if timeout <= 0:
            raise ValueError(f"openai backend: timeout must be > 0 seconds, got {timeout}")
        try:
            self.retry = RetryPolicy.of(OPENAI_RETRY, policy=retry, max_retries=max_retries,
                                        backoff_initial=backoff_initial, backoff_max=backoff_max,
                                        max_retry_after=max_retry_after)
        except ValueError as err:
            raise ValueError(f"openai backend: {err}") from None
        if max_tokens_field not in ("max_tokens", "max_completion_tokens"):
            raise ValueError(f"openai backend: max_tokens_field must be max_tokens or max_completion_tokens, "
                             f"got {max_tokens_field!r}")
        if transport not in ("auto", "aiohttp", "httpx"):
            raise ValueError(f"openai backend: transport must be auto, aiohttp or httpx, got {transport!r}")
        self.model = model
        self.transport = default_transport() if transport == "auto" else transport
        self._pool = ServerPool([base_url] if isinstance(base_url, str) else list(base_url), server_cooldown)
        self.base_urls = self._pool.urls
        self.base_url = self.base_urls[0]
        self.n_per_request = bool(n_per_request)
        self.api_key_env = api_key_env
        register_secret_env(api_key_env)  # its value is redacted from every error text
        self.concurrency = int(concurrency)
        self.timeout = float(timeout)
        self.max_tokens_field = max_tokens_field
        if send_chat_template_kwargs is None:
            host = (urllib.parse.urlsplit(self.base_url).hostname or "").lower()
            send_chat_template_kwargs = not any(host == h or (h.startswith(".") and host.endswith(h))
                                                for h in NO_TEMPLATE_KWARGS_HOSTS)
        self.send_chat_template_kwargs = bool(send_chat_template_kwargs)
        self.extra_body = dict(extra_body or {})
        self.request_logprobs = request_logprobs
        if batch not in (True, False, "auto", "openai", "anthropic"):
            raise ValueError(f"openai backend: batch must be true, false, auto, openai or anthropic, got {batch!r}")
        self.batch: bool | str = "auto" if batch is True else batch
        self.batch_wait = bool(batch_wait)
        self.batch_poll_s = float(batch_poll_s)
        if max_enqueued_tokens is not None and (isinstance(max_enqueued_tokens, bool)
                                                or not isinstance(max_enqueued_tokens, int) or max_enqueued_tokens < 1):
            raise ValueError(f"openai backend: max_enqueued_tokens must be a positive integer (prompt tokens), got "
                             f"{max_enqueued_tokens!r}")
        self.max_enqueued_tokens = max_enqueued_tokens
        if prompt_cache_min_tokens is not None and not (type(prompt_cache_min_tokens) is int and prompt_cache_min_tokens >= 0):
            raise ValueError(f"openai backend: prompt_cache_min_tokens must be an integer >= 0, got {prompt_cache_min_tokens!r}")
        self.prompt_cache_min_tokens = prompt_cache_min_tokens
        self._states: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopState] = weakref.WeakKeyDictionary()
        #: Counters since construction: HTTP attempts, retries, failed generations.
        self.stats = {"attempts": 0, "retries": 0, "failed": 0}
        self._server_fingerprint: Any = _UNSET
        self._fingerprint_lock = threading.Lock()
        if max_model_len is not None and (not isinstance(max_model_len, int) or max_model_len < 2):
            raise ValueError(f"openai backend: max_model_len must be an integer >= 2, got {max_model_len!r}")
        self._max_model_len = max_model_len

    @property
    def max_model_len_option(self) -> int | None:
        """The ``max_model_len`` option as configured (``None``: not set); never asks the server."""
        return self._max_model_len

    @property
    def max_model_len(self) -> int | None:
        """The served model's context in tokens: the ``max_model_len`` option, else what the server lists for
        ``model`` in ``GET {base_url}/models`` (one request per instance, shared with the fingerprint probe),
        else ``None`` (unknown: the OpenAI API lists none). The judge's length rule reads it
        (``Judge.context_for``): a survey longer than the context is cut or refused with the numbers."""
        if self._max_model_len is not None:
            return self._max_model_len
        value = self._probe().get("max_model_len")
        return value if isinstance(value, int) and value > 0 else None

    # ------------------------------------------------------------------ public API
    def describe(self) -> dict[str, Any]:
        """Return the client settings for ``run_config.json``: no key, no headers (only the variable's name).

        ``server_fingerprint`` is :meth:`server_fingerprint` (a ``surveyalign serve`` server's content digest of
        the served model + adapter + tokenizer, else ``None``); the first call makes one short HTTP request.
        """
        return {
            "backend": self.name,
            "model": self.model,
            "base_url": self.base_url if len(self.base_urls) == 1 else self.base_urls,
            "n_per_request": self.n_per_request,
            "api_key_env": self.api_key_env,
            "api_key_present": bool(self.api_key_env and os.environ.get(self.api_key_env)),
            "concurrency": self.concurrency,
            "timeout": self.timeout,
            "max_retries": self.retry.retries,
            "backoff_initial": self.retry.base_wait,
            "backoff_max": self.retry.max_wait,
            "max_tokens_field": self.max_tokens_field,
            "send_chat_template_kwargs": self.send_chat_template_kwargs,
            "extra_body": self.extra_body,
            "request_logprobs": self.request_logprobs,
            "transport": self.transport,
            "server_fingerprint": self.server_fingerprint(),
        }

    def batch_api(self) -> Any:
        """The provider batch client for this backend's model, server and key (``batch`` option).

        Returns:
            A :class:`~surveyalign.backends.batch_api.BatchAPI` whose OpenAI request lines are this backend's
            own request bodies (same fields as a direct call, one sample per request with seed = seed + k).

        Raises:
            ValueError: ``batch`` is off.
        """
        from surveyalign.backends.batch_clients import make_batch_api

        if not self.batch:
            raise ValueError("openai backend: batch is off (backend.options.batch: true turns it on)")
        key = os.environ.get(self.api_key_env) if self.api_key_env else None
        return make_batch_api(str(self.batch), base_url=self.base_url, api_key=key, model=self.model,
                              body=lambda messages, settings, sample: self._body(messages, settings, sample, 1),
                              max_tokens_field=self.max_tokens_field, timeout=self.timeout)

    def server_fingerprint(self) -> str | None:
        """The served model's content fingerprint, as ``surveyalign serve`` lists it in ``GET {base_url}/models``.

        Fetched once per instance (later calls return the remembered value, ``None`` included) with a sync GET of
        at most :data:`FINGERPRINT_TIMEOUT` seconds (or ``timeout`` when shorter), sending the usual
        ``Authorization`` header when a key is set and following no redirect. The value is read from the listed
        entry whose ``id`` equals ``model``, field ``surveyalign.fingerprint``.

        Returns:
            64 lower-case hex characters (:func:`surveyalign.backends.fingerprint.served_fingerprint`), or
            ``None`` when the server lists no such field (the OpenAI API, vLLM...), the model is not listed, or
            the request fails, times out or answers something unreadable.

        Raises:
            Nothing.
        """
        return self._probe().get("fingerprint")

    def check_settings(self, settings: GenerationSettings) -> None:
        """Refuse settings this client cannot put on the wire (``Backend.check_settings``).

        Args:
            settings: the generation settings of a run.

        Raises:
            ValueError: ``enable_thinking=True`` while ``chat_template_kwargs`` is not sent (the server would
                never see it), or ``want_logprobs=True`` while ``request_logprobs=False``; the message names the
                option that makes it reach the server.
        """
        if settings.enable_thinking and not self.send_chat_template_kwargs:
            raise ValueError(f"openai backend ({self.base_url}): enable_thinking=true cannot reach the server because "
                             "chat_template_kwargs is not sent; set the backend option send_chat_template_kwargs: "
                             "true (vLLM, SGLang, surveyalign serve) or use enable_thinking: false")
        if settings.want_logprobs and self.request_logprobs is False:
            raise ValueError("openai backend: want_logprobs=true but the backend option request_logprobs is false; "
                             "drop request_logprobs or set want_logprobs: false")

    def check_ready(self) -> None:
        """Pre-flight check before a run: one short ``GET {base_url}/models`` must be answered.

        Raises:
            ConnectionError: (an ``OSError``) nothing answers at the URL (refused, timed out, unknown host); the
                message holds the URL and the error.
            PermissionError: the server answers 401/403 (a missing or wrong key in ``api_key_env``).
        """
        probe = self._probe()
        url = f"{probe.get('url') or self.base_url}/models"
        if probe.get("error") is not None:
            raise ConnectionError(f"no server answers at {url}: {probe['error']} (start the server, e.g. "
                                  "`surveyalign serve --model DIR`, or fix base_url / --base-url)")
        if probe.get("status") in (401, 403):
            raise PermissionError(f"{url} answered HTTP {probe['status']}: the API key in "
                                  f"${self.api_key_env or '(no api_key_env)'} is missing or not accepted")

    async def agenerate(self, prompts: Sequence[Messages], settings: GenerationSettings | None = None, n: int = 1
                        ) -> list[list[Generation]]:
        """Send ``len(prompts) * n`` requests concurrently (at most ``concurrency`` in flight).

        Args:
            prompts: P chat prompts.
            settings: sampling settings; sample ``i`` is sent with ``seed = settings.seed + i`` and ``n = 1``.
            n: samples per prompt, >= 1.

        Returns:
            P lists of ``n`` generations; a request that still fails after ``max_retries`` retries (or fails
            permanently, e.g. HTTP 400) yields ``Generation.failed(<reason>)``.

        Raises:
            ValueError: invalid ``prompts`` or ``n`` (request failures are never raised).
        """
        settings = check_request(prompts, settings, n)
        self.check_settings(settings)
        state = self._state()
        width = n if self.n_per_request and not settings.greedy else 1  # samples per request
        tasks = []
        for messages in prompts:
            encoded = json.dumps(wire_messages(messages))  # once per prompt, not once per sample
            tasks.append([asyncio.ensure_future(self._one(state, messages, settings, i, width, encoded))
                          for i in range(0, n, width)])
        flat = [task for row in tasks for task in row]
        if flat:
            await asyncio.gather(*flat)
        return [[g for task in row for g in task.result()][:n] for row in tasks]

    async def agenerate_one(self, messages: Messages, settings: GenerationSettings | None = None,
                            sample_index: int = 0) -> Generation:
        """Generate the single sample ``sample_index`` (seed ``settings.seed + sample_index``) for one prompt.

        The harness can schedule calls one by one with this (e.g. to skip cached samples).

        Args:
            messages: one chat prompt.
            settings: sampling settings (default greedy).
            sample_index: k >= 0; the request is sent with ``seed = settings.seed + k`` and ``n = 1``.

        Returns:
            One :class:`Generation` (``error`` set when the request failed after its retries).

        Raises:
            ValueError: an invalid ``messages`` list.
        """
        settings = check_request([messages], settings, 1)
        self.check_settings(settings)
        return (await self._one(self._state(), messages, settings, sample_index))[0]

    def set_concurrency(self, concurrency: int) -> None:
        """Make ``concurrency`` the number of requests in flight from now on (one knob: the run's limit).

        The call executor passes the run's limit here (``--concurrency``, a config's ``concurrency``), so a run
        asking for 256 calls in flight gets 256 rather than this backend's own ``concurrency`` option. Event loops
        that already hold an HTTP session keep their old limit until :meth:`aclose` (the executor closes the
        session after every run); the next session uses the new one.

        Raises:
            ValueError: ``concurrency`` below 1.
        """
        if int(concurrency) < 1:
            raise ValueError(f"openai backend: concurrency must be >= 1, got {concurrency}")
        self.concurrency = int(concurrency)

    async def aclose(self) -> None:
        """Close the HTTP client bound to the running event loop."""
        state = self._states.pop(asyncio.get_running_loop(), None)
        if state is not None:
            await state.transport.aclose()

    def close(self) -> None:
        """Close the client of the private loop used by :meth:`generate` and stop that loop."""
        runner = self.__dict__.get("_loop_thread")
        if runner is not None and runner.loop.is_running():
            state = self._states.get(runner.loop)
            if state is not None:
                runner.run(self._aclose_state(runner.loop))
        super().close()

    # ------------------------------------------------------------------ internals
    def _probe(self) -> dict[str, Any]:
        """The one ``GET {base_url}/models`` of this instance: ``{"status", "error", "fingerprint"}`` (cached)."""
        with self._fingerprint_lock:
            if self._server_fingerprint is _UNSET:
                self._server_fingerprint = self._fetch_models()
            return self._server_fingerprint

    def _auth_headers(self) -> dict[str, str]:
        """The headers that carry the key (``Authorization: Bearer``; none without a key)."""
        key = os.environ.get(self.api_key_env) if self.api_key_env else None
        return {"Authorization": f"Bearer {key}"} if key else {}

    def _fetch_models(self) -> dict[str, Any]:
        return probe_models(self.base_urls, self.model, self._auth_headers(), min(FINGERPRINT_TIMEOUT, self.timeout))

    async def _aclose_state(self, loop: asyncio.AbstractEventLoop) -> None:
        state = self._states.pop(loop, None)
        if state is not None:
            await state.transport.aclose()

    def _state(self) -> _LoopState:
        loop = asyncio.get_running_loop()
        state = self._states.get(loop)
        if state is None or (state.limit != self.concurrency and state.in_use == 0):
            headers = {"Content-Type": "application/json", **self._auth_headers()}
            cls = AiohttpTransport if self.transport == "aiohttp" else HttpxTransport
            if state is not None:  # the limit changed between runs on this loop: a session of the new size
                old = state.transport
                loop.create_task(old.aclose())
            state = _LoopState(transport=cls(headers, self.concurrency, self.timeout),
                               semaphore=asyncio.Semaphore(self.concurrency), limit=self.concurrency)
            self._states[loop] = state
        return state



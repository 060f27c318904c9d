"""`surveyalign` subcommands owned by `surveyalign.backends`: ``serve``."""

from __future__ import annotations

import argparse

from surveyalign.argtypes import int_at_least, positive_float, positive_int
from surveyalign.backends.server_guard import API_KEY_ENV, REFUSED_FIELDS, ServerLimits


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add this sub-package's subcommands (``serve``) to the top-level parser."""
    p = subparsers.add_parser(
        "serve",
        help="serve a local model (+ PEFT adapter) over an OpenAI-compatible API",
        description=(
            "Serve a local causal LM, optionally with a PEFT adapter (e.g. a trained SurveyAlign judge), over "
            "an OpenAI-compatible HTTP API: POST /v1/chat/completions (messages, temperature, top_p, "
            "max_tokens / max_completion_tokens, n, seed, logprobs, top_logprobs (0-20), stop (a string or a list "
            "of up to 4, possibly empty), stream (server-sent events in the OpenAI chunk format, "
            "stream_options.include_usage), chat_template_kwargs.enable_thinking) and GET /v1/models. "
            "Point the evaluation harness at it with the 'openai' backend and base_url http://HOST:PORT/v1. "
            "To expose it on a cluster, set an API key (--api-key or $SURVEYALIGN_API_KEY; clients send "
            "'Authorization: Bearer KEY'; /health stays open) and bind --host 0.0.0.0."
        ),
        epilog=("still refused (HTTP 400 for a non-default value): " + ", ".join(REFUSED_FIELDS)
                + "; other unknown request fields are ignored."),
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument("--model", required=True, help="folder of the base model and tokenizer (or a cached hub id)")
    p.add_argument("--adapter", action="append", default=None, metavar="[NAME=]DIR",
                   help="PEFT adapter folder: one DIR is merged into the model; NAME=DIR (repeatable, e.g. "
                        "--adapter readability=DIR --adapter structure=DIR) loads each adapter once on the one base "
                        "and serves it as the model NAME, like vLLM's --lora-modules")
    p.add_argument("--host", default="127.0.0.1", help="interface to bind (use 0.0.0.0 to expose it)")
    p.add_argument("--port", type=int_at_least(0), default=8000, help="TCP port")
    p.add_argument("--served-model-name", default=None,
                   help="model id clients send; default: the adapter folder's name, else the model folder's")
    p.add_argument("--device", default="auto", help="auto, cpu, cuda, cuda:N")
    p.add_argument("--dtype", default="auto", choices=("auto", "float32", "bfloat16", "float16"),
                   help="weights dtype (auto: bf16/fp16 on GPU, fp32 on CPU)")
    p.add_argument("--batch-size", type=positive_int, default=8, help="rows per generate call (concurrent requests batch)")
    p.add_argument("--default-max-tokens", type=positive_int, default=1024,
                   help="token cap when a request sets no max_tokens")
    p.add_argument("--log-level", default="info", help="uvicorn log level")
    p.add_argument("--quantization", default="auto", choices=("auto", "none", "4bit", "8bit"),
                   help="load the base in 4-bit (NF4, bitsandbytes) or 8-bit; auto: as the adapter's training record "
                        "says (a QLoRA adapter gets its 4-bit base), else full precision")
    p.add_argument("--allow-base-mismatch", action="store_true",
                   help="serve an adapter on a base (or quantisation) other than the one in its training record")
    p.add_argument("--api-key", default=None, metavar="KEY",
                   help=f"require 'Authorization: Bearer KEY' on /v1/* (default: ${API_KEY_ENV} when set; binding a "
                        "non-loopback --host without a key prints a warning)")
    p.add_argument("--max-body-bytes", type=positive_int, default=ServerLimits.max_body_bytes,
                   help="largest request body (413 above, checked before parsing)")
    p.add_argument("--max-prompt-chars", type=positive_int, default=ServerLimits.max_prompt_chars,
                   help="largest total message text in characters (400 above, checked before tokenising)")
    p.add_argument("--header-timeout", type=positive_float, default=ServerLimits.header_timeout_s, metavar="S",
                   help="seconds a connection may take to send its request headers")
    p.add_argument("--body-timeout", type=positive_float, default=ServerLimits.body_timeout_s, metavar="S",
                   help="longest pause in seconds while a request body arrives (408 above)")
    p.add_argument("--keep-alive", type=positive_float, default=ServerLimits.keep_alive_s, metavar="S",
                   help="seconds an idle keep-alive connection stays open")
    p.set_defaults(handler=_serve)


def parse_adapter_args(values: list[str] | None) -> tuple[str | None, dict[str, str]]:
    """Split ``--adapter`` values into one unnamed folder or ``{name: folder}`` (``NAME=DIR`` values).

    Args:
        values: the repeated ``--adapter`` values, or ``None``.

    Returns:
        ``(folder, {})`` for a single ``DIR``; ``(None, {name: folder})`` for ``NAME=DIR`` values; ``(None, {})``
        when none is given.

    Raises:
        ValueError: several unnamed folders, named and unnamed mixed, an empty name or a repeated name.
    """
    values = list(values or [])
    named = [v for v in values if "=" in v]
    if not named:
        if len(values) > 1:
            raise ValueError("several --adapter folders: name them, e.g. --adapter readability=DIR "
                             "--adapter structure=DIR")
        return (values[0] if values else None), {}
    if len(named) != len(values):
        raise ValueError("--adapter: use NAME=DIR for every adapter when serving several")
    adapters: dict[str, str] = {}
    for value in named:
        name, _, folder = value.partition("=")
        if not name.strip() or not folder.strip():
            raise ValueError(f"--adapter {value!r}: expected NAME=DIR")
        if name.strip() in adapters:
            raise ValueError(f"--adapter: the name {name.strip()!r} is given twice")
        adapters[name.strip()] = folder.strip()
    return None, adapters


def _serve(args: argparse.Namespace) -> int:
    from surveyalign.backends.server import serve

    adapter, adapters = parse_adapter_args(args.adapter)
    options = {"adapters": adapters} if adapters else {}
    limits = ServerLimits.with_env_key(args.api_key, max_body_bytes=args.max_body_bytes,
                                       max_prompt_chars=args.max_prompt_chars, header_timeout_s=args.header_timeout,
                                       body_timeout_s=args.body_timeout, keep_alive_s=args.keep_alive)
    serve(args.model, adapter, host=args.host, port=args.port, served_model_name=args.served_model_name, limits=limits,
          log_level=args.log_level, default_max_tokens=args.default_max_tokens, device=args.device,
          dtype=args.dtype, batch_size=args.batch_size, quantization=args.quantization,
          allow_base_mismatch=args.allow_base_mismatch, **options)
    return 0

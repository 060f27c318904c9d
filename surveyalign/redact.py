"""One redaction rule for secrets in error texts: applied where errors are created and recorded.

A server that echoes the request's ``Authorization`` header in its 401 body (``Bearer sk-...``) would otherwise put
the key into ``predictions.jsonl``, ``calls.jsonl``, the console and ``score``'s ``<survey>.json`` / ``.md`` /
``.html``. :func:`redact_secrets` removes, from any text:

* the values of the key variables in use: every environment variable registered with :func:`register_secret_env`
  (the openai backend registers its ``api_key_env``; the HTTP client its key variables) plus the usual names
  (``OPENAI_API_KEY``, ``HF_TOKEN``, ``SURVEYALIGN_API_KEY``, ``S2_API_KEY``, ...) and any variable whose name ends
  in ``API_KEY``, ``_TOKEN``, ``_SECRET`` or ``PASSWORD``; values shorter than 8 characters are left alone (too
  likely to be ordinary words);
* ``Authorization:`` header values and ``Bearer`` / ``Basic`` tokens;
* key-shaped strings: ``sk-...`` (OpenAI, Anthropic style), ``hf_...`` (Hugging Face), ``ghp_`` / ``github_pat_``
  (GitHub), ``AKIA...`` (AWS access key ids), and ``api_key=`` / ``key=`` / ``token=`` URL parameters.

Each becomes ``[REDACTED]``. The rule lives in the core layer so the backends, the call cache, the HTTP client and
the command-line error printer all call the same function.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable

__all__ = ["REDACTED", "SECRET_ENV_NAMES", "redact_secrets", "register_secret_env"]

#: What a secret is replaced with.
REDACTED = "[REDACTED]"
#: Key variables always treated as secret (besides the registered ones and the name patterns).
SECRET_ENV_NAMES = {"OPENAI_API_KEY", "ANTHROPIC_API_KEY", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN",
                    "SURVEYALIGN_API_KEY", "VLLM_API_KEY", "S2_API_KEY", "SEMANTIC_SCHOLAR_API_KEY", "WANDB_API_KEY",
                    "OPENREVIEW_PASSWORD", "GITHUB_TOKEN"}
_SECRET_NAME = re.compile(r"(API_?KEY|_TOKEN|_SECRET|PASSWORD)$", re.IGNORECASE)
_MIN_SECRET_CHARS = 8
_PATTERNS = [
    re.compile(r"(?i)(authorization\s*[\"']?\s*[:=]\s*[\"']?)(?:bearer\s+|basic\s+|token\s+)?[^\s\"',;}]+"),
    re.compile(r"(?i)(\b(?:bearer|basic)\s+)[A-Za-z0-9._~+/=-]{6,}"),
    re.compile(r"()\bsk-[A-Za-z0-9_-]{16,}"),
    re.compile(r"()\bhf_[A-Za-z0-9]{20,}"),
    re.compile(r"()\b(?:ghp|gho|ghs|ghu)_[A-Za-z0-9]{20,}|\bgithub_pat_[A-Za-z0-9_]{20,}"),
    re.compile(r"()\bAKIA[0-9A-Z]{16}\b"),
    re.compile(r"(?i)([?&](?:api_?key|key|token|access_token)=)[^&\s\"']+"),
]
_registered: set[str] = set()


def register_secret_env(name: str | None) -> None:
    """Treat the value of environment variable ``name`` as a secret from now on (``None`` / ``""``: nothing)."""
    if name:
        _registered.add(name)


def _secret_values(extra: Iterable[str]) -> list[str]:
    names = _registered | SECRET_ENV_NAMES | {n for n in os.environ if _SECRET_NAME.search(n)}
    values = {os.environ.get(n) or "" for n in names} | set(extra)
    return sorted((v for v in values if len(v) >= _MIN_SECRET_CHARS), key=len, reverse=True)


def redact_secrets(text: str | None, extra: Iterable[str] = ()) -> str | None:
    """``text`` with every known secret replaced by ``[REDACTED]`` (see the module docstring for what is known).

    Args:
        text: an error message, a server's reply body, a log line; ``None`` is returned as is.
        extra: further secret values to remove (e.g. a key passed on the command line).

    Returns:
        The redacted text (unchanged when it holds no secret).
    """
    if not text:
        return text
    for value in _secret_values(extra):
        if value in text:
            text = text.replace(value, REDACTED)
    for pattern in _PATTERNS:
        text = pattern.sub(lambda m: m.group(1) + REDACTED if m.group(0) != m.group(1) + REDACTED else m.group(0),
                           text)
    return text

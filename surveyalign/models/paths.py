"""Model, adapter and tokenizer locations: a path that looks local is never sent to the Hugging Face Hub.

``from_pretrained("runs/x")`` treats a missing ``runs/x`` as the Hub repository ``runs/x`` and fails minutes later
with a network or "repository not found" error. :func:`resolve_model_path` decides first: an existing folder is
used as is; a name that looks like a local path (see :func:`looks_local`) but does not exist is "no such folder"
at once; anything else is a Hub id.

Offline by default: the ``surveyalign`` command and the training recipes set ``HF_HUB_OFFLINE=1`` unless the
variable is already set (:func:`default_offline`); run with ``HF_HUB_OFFLINE=0`` to download from the Hub.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

__all__ = ["NotCachedError", "default_offline", "from_hub", "hub_folder", "hub_offline", "looks_local",
           "not_cached_message", "resolve_model_path"]

_T = TypeVar("_T")
#: Exception class names (huggingface_hub, transformers) meaning "the files are not here and cannot be fetched".
_HUB_MISS_TYPES = frozenset({"LocalEntryNotFoundError", "OfflineModeIsEnabled", "ConnectError", "ConnectionError",
                             "ConnectTimeout", "MaxRetryError", "NameResolutionError"})
_HUB_MISS_TEXTS = ("couldn't connect", "could not connect", "offline mode", "hf_hub_offline",
                   "cannot find the requested files in the", "not find them in the cached files",
                   "outgoing traffic has been disabled", "connection error")


class NotCachedError(FileNotFoundError):
    """A Hub model, adapter or tokenizer that is not in the local cache and cannot be downloaded (offline by
    default, or no network); the message is one line (:func:`not_cached_message`)."""

#: Hub-related variables :func:`default_offline` sets to "1" when they are unset.
OFFLINE_VARIABLES = ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "HF_EVALUATE_OFFLINE")


def looks_local(name: str | os.PathLike) -> bool:
    """True when ``name`` is meant as a local folder rather than a Hub id (``owner/name``).

    Local: absolute, ``./``, ``../``, ``~``, a Windows path, a trailing ``/``, more than one ``/``, a name whose
    first component exists here as a folder (``runs/x`` while ``runs/`` exists) or starts with ``.``
    (``.cache/tiny``), and every existing path. A Hub id has at most one ``/`` and no such component
    (``Qwen/Qwen3-32B``, ``gpt2``).

    Args:
        name: a folder path or a Hub id.

    Returns:
        Whether ``name`` must be found on disk.
    """
    text = str(name)
    if not text:
        return False
    if text.startswith(("/", "./", "../", "~", ".\\", "..\\")) or "\\" in text or text.endswith("/"):
        return True
    if text.count("/") > 1 or Path(text).exists():
        return True
    first = text.split("/", 1)[0]
    return "/" in text and (first.startswith(".") or Path(first).is_dir())


def resolve_model_path(name: str | os.PathLike, what: str = "model") -> str:
    """Check a model / adapter / tokenizer location before anything loads it.

    Args:
        name: a local folder or a Hub id.
        what: what it is, named in the error (``"model"``, ``"adapter"``, ``"--model_name_or_path"``...).

    Returns:
        The folder path (``~`` expanded) when it exists, else ``name`` unchanged (a Hub id).

    Raises:
        FileNotFoundError: ``name`` looks local (:func:`looks_local`) but no such folder exists, or it is a file.
    """
    text = str(name)
    path = Path(text).expanduser()
    if path.is_dir():
        return str(path)
    if path.exists():
        raise FileNotFoundError(f"{what} {text}: not a folder (a model, adapter or tokenizer is a folder)")
    if looks_local(text):
        raise FileNotFoundError(f"{what} {text}: no such folder (a local path is never looked up on the "
                                "Hugging Face Hub)")
    return text


def hub_offline() -> bool:
    """True when ``HF_HUB_OFFLINE`` is set to a true value (``1``, ``true``, ``yes``, ``on``)."""
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on")


def not_cached_message(name: str | os.PathLike, what: str = "model") -> str:
    """The one line said when a Hub id is not cached: ``"tokenizer Qwen/Qwen3-32B: not cached: pass a local
    folder or set HF_HUB_OFFLINE=0"`` (online without network: "... not cached and huggingface.co cannot be
    reached: pass a local folder or check the network")."""
    if hub_offline() or "HF_HUB_OFFLINE" not in os.environ:
        return f"{what} {name}: not cached: pass a local folder or set HF_HUB_OFFLINE=0"
    return f"{what} {name}: not cached and huggingface.co cannot be reached: pass a local folder or check the network"


def _is_hub_miss(name: str, exc: BaseException) -> bool:
    if Path(name).expanduser().is_dir():
        return False
    chain: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and len(chain) < 8:
        chain.append(current)
        current = current.__cause__ or current.__context__
    if any(type(e).__name__ in _HUB_MISS_TYPES for e in chain):
        return True
    text = " ".join(str(e) for e in chain).lower()
    return any(marker in text for marker in _HUB_MISS_TEXTS)


def from_hub(loader: Callable[..., _T], name: str | os.PathLike, what: str = "model", *args: Any,
             **kwargs: Any) -> _T:
    """Load a model, adapter, tokenizer or config with ``loader(name, *args, **kwargs)`` (e.g.
    ``AutoTokenizer.from_pretrained``), turning "not cached and cannot be downloaded" into one line.

    The one helper every place that loads from a folder or a Hub id goes through, so an offline run (the default,
    :func:`default_offline`) that names an uncached Hub id says so in one line instead of transformers' multi-line
    connection error.

    Args:
        loader: the ``from_pretrained``-style callable.
        name: a local folder or a Hub id (checked with :func:`resolve_model_path` first).
        what: what it is, named in errors (``"tokenizer"``, ``"model"``, ``"KA tokenizer"``...).
        *args, **kwargs: passed to ``loader``.

    Returns:
        What ``loader`` returns.

    Raises:
        NotCachedError: a Hub id that is not cached while offline (or without network): "<what> <name>: not
            cached: pass a local folder or set HF_HUB_OFFLINE=0".
        FileNotFoundError: a local-looking path that does not exist.
        Exception: anything else ``loader`` raises, unchanged.
    """
    resolved = resolve_model_path(name, what)
    try:
        return loader(resolved, *args, **kwargs)
    except Exception as exc:
        if _is_hub_miss(resolved, exc):
            raise NotCachedError(not_cached_message(name, what)) from None
        raise


def _snapshot(repo_id: str) -> str:
    from huggingface_hub import snapshot_download

    return snapshot_download(repo_id=repo_id)


def hub_folder(name: str | os.PathLike, what: str = "adapter") -> str:
    """A local folder for a folder or a Hub id: the folder itself, or the Hub repository's cached snapshot.

    PEFT adapters (and ``--judge`` repos) go through this before anything reads them, so their files (training
    record, ``adapter_config.json``, fingerprints) are read from disk, and an uncached Hub id under the offline
    default fails here, before any base model is loaded, with the same one line as a base model
    (:func:`from_hub`): "adapter owner/name: not cached: pass a local folder or set HF_HUB_OFFLINE=0".

    Args:
        name: a local folder or a Hub id.
        what: what it is, named in errors (``"transformers backend: adapter"``, ``"--sft_adapter"``...).

    Returns:
        The local folder (for a Hub id: ``huggingface_hub.snapshot_download``'s cache folder, downloaded first when
        online).

    Raises:
        NotCachedError: a Hub id not cached while offline (or without network), in one line.
        FileNotFoundError: a local-looking path that does not exist, or a file.
        Exception: anything else ``snapshot_download`` raises (an unknown repo online, no access), unchanged.
    """
    resolved = resolve_model_path(name, what)
    if Path(resolved).is_dir():
        return resolved
    return from_hub(_snapshot, resolved, what)


def default_offline() -> dict[str, str]:
    """Set ``HF_HUB_OFFLINE``, ``HF_DATASETS_OFFLINE`` and ``HF_EVALUATE_OFFLINE`` to ``"1"`` where unset.

    Call it before ``huggingface_hub`` is imported (it reads the variables once). ``HF_HUB_OFFLINE=0`` in the
    environment goes online.

    Returns:
        The variables this call set (empty when the user had set them all).
    """
    changed = {}
    for name in OFFLINE_VARIABLES:
        if name not in os.environ:
            os.environ[name] = changed[name] = "1"
    return changed

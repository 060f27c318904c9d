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
from pathlib import Path

__all__ = ["default_offline", "looks_local", "resolve_model_path"]

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

"""Content fingerprints of local model, adapter and tokenizer folders (part of a backend's cache identity).

The evaluation cache keys every call on the backend's ``describe()`` (``surveyalign.calls.cache``). A
path alone is not an identity: retraining an adapter into the same folder would otherwise reuse the old
adapter's cached answers. What is hashed:

* adapter folder: the full bytes (streamed, sha256) of ``adapter_config.json`` and
  ``adapter_model.safetensors`` / ``adapter_model.bin`` (LoRA adapters are MBs, not GBs);
* base model folder: the full bytes of the small files that define the model (``config.json``,
  ``generation_config.json``, the weight index ``*.index.json``) plus, for each weight file (``*.safetensors``,
  ``*.bin``, ``*.pt``, ``*.gguf``), its name, size and modification time in nanoseconds. Weight bytes are hashed
  fully only when all weight files together are under :data:`FULL_HASH_MAX_BYTES` (64 MiB: tiny test models),
  so a 32B checkpoint (~65 GB) costs a few ``stat`` calls per run, not minutes of reading. Copying a large model
  to a new place (new mtimes) therefore gives a new identity and makes the calls again: safe, never stale;
* tokenizer folder: the full bytes of the tokenizer and chat-template files (they change the prompt tokens).

A path that is not a local folder (a hub id resolved from the cache) gets ``{"local": False}``: its identity
is its name (and the revision a caller passes). Fingerprints never contain file contents, only digests.

A model served by ``surveyalign serve`` is judged through the ``openai`` backend, whose own settings (model name,
base URL) say nothing about the weights behind the server. The server therefore publishes
:func:`served_fingerprint` (one digest of the served backend's answer-determining ``describe()`` entries) in
``GET /v1/models`` and in the :data:`FINGERPRINT_HEADER` response header, and the ``openai`` backend puts it
into its own ``describe()`` as ``server_fingerprint``: retraining the adapter behind the same server changes
the cache key of a resumed evaluation.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

__all__ = [
    "FINGERPRINT_HEADER",
    "FULL_HASH_MAX_BYTES",
    "adapter_fingerprint",
    "model_fingerprint",
    "served_fingerprint",
    "tokenizer_fingerprint",
]

#: Response header of ``surveyalign serve`` chat completions carrying :func:`served_fingerprint`.
FINGERPRINT_HEADER = "x-surveyalign-fingerprint"

#: ``describe()`` entries of a local backend that, besides ``fingerprints``, change its answers.
_SERVED_IDENTITY_KEYS = ("dtype", "merge_adapter", "sampling", "quantization")

#: Weight files of a base model are hashed in full below this total size (bytes); above it, size + mtime.
FULL_HASH_MAX_BYTES = 64 * 1024 * 1024

_ADAPTER_FILES = ("adapter_config.json", "adapter_model.safetensors", "adapter_model.bin")
_MODEL_SMALL_FILES = ("config.json", "generation_config.json")
_WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".gguf")
_TOKENIZER_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "added_tokens.json",
    "vocab.json",
    "merges.txt",
    "tokenizer.model",
    "chat_template.jinja",
    "chat_template.json",
)


def _update_file(digest: Any, path: Path) -> None:
    """Feed the file name, its size and its bytes (streamed in 1 MiB chunks) into ``digest``."""
    digest.update(path.name.encode() + b"\0" + str(path.stat().st_size).encode() + b"\0")
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    digest.update(b"\0")


def _hash_files(paths: list[Path]) -> str:
    digest = hashlib.sha256()
    for path in paths:
        _update_file(digest, path)
    return digest.hexdigest()


def adapter_fingerprint(adapter_dir: str | os.PathLike) -> dict[str, Any]:
    """Fingerprint a PEFT adapter folder by the full content of its config and weight files.

    Args:
        adapter_dir: folder holding ``adapter_config.json`` and ``adapter_model.safetensors`` (or ``.bin``).

    Returns:
        ``{"local": True, "sha256": 64 hex chars, "files": [names hashed], "bytes": total size}``, or
        ``{"local": False}`` when ``adapter_dir`` is not a local folder (a hub id).
    """
    root = Path(adapter_dir)
    if not root.is_dir():
        return {"local": False}
    files = [root / name for name in _ADAPTER_FILES if (root / name).is_file()]
    return {"local": True, "sha256": _hash_files(files), "files": [p.name for p in files],
            "bytes": sum(p.stat().st_size for p in files)}


def model_fingerprint(model_dir: str | os.PathLike, *, full_hash_max_bytes: int = FULL_HASH_MAX_BYTES
                      ) -> dict[str, Any]:
    """Fingerprint a base model folder cheaply: config bytes + weight file sizes and mtimes (or bytes if small).

    Args:
        model_dir: a ``save_pretrained`` folder (``config.json`` + weight files, possibly sharded).
        full_hash_max_bytes: when all weight files together are smaller than this (bytes), their bytes are
            hashed instead of their sizes and mtimes.

    Returns:
        ``{"local": True, "sha256": 64 hex chars, "weights": "content" | "size+mtime", "weight_files": int,
        "weight_bytes": int}``, or ``{"local": False}`` when ``model_dir`` is not a local folder.

    Raises:
        OSError: a file of the folder cannot be read.
    """
    root = Path(model_dir)
    if not root.is_dir():
        return {"local": False}
    small = [root / name for name in _MODEL_SMALL_FILES if (root / name).is_file()]
    small += sorted(p for p in root.glob("*.index.json") if p.is_file())
    weights = sorted(p for p in root.iterdir() if p.is_file() and p.name.endswith(_WEIGHT_SUFFIXES))
    total = sum(p.stat().st_size for p in weights)
    digest = hashlib.sha256()
    for path in small:
        _update_file(digest, path)
    by_content = total < full_hash_max_bytes
    for path in weights:
        if by_content:
            _update_file(digest, path)
        else:
            stat = path.stat()
            digest.update(f"{path.name}\0{stat.st_size}\0{stat.st_mtime_ns}\0".encode())
    return {"local": True, "sha256": digest.hexdigest(), "weights": "content" if by_content else "size+mtime",
            "weight_files": len(weights), "weight_bytes": total}


def tokenizer_fingerprint(tokenizer_dir: str | os.PathLike) -> dict[str, Any]:
    """Fingerprint the tokenizer and chat-template files of a folder by their full content.

    Args:
        tokenizer_dir: folder holding ``tokenizer.json`` / ``tokenizer_config.json`` / ``chat_template.jinja``...

    Returns:
        ``{"local": True, "sha256": 64 hex chars, "files": [names hashed]}``, or ``{"local": False}`` when
        ``tokenizer_dir`` is not a local folder.
    """
    root = Path(tokenizer_dir)
    if not root.is_dir():
        return {"local": False}
    files = [root / name for name in _TOKENIZER_FILES if (root / name).is_file()]
    return {"local": True, "sha256": _hash_files(files), "files": [p.name for p in files]}


def served_fingerprint(description: dict[str, Any]) -> str | None:
    """One digest identifying what a served local backend answers with (``surveyalign serve``).

    Hashes the backend's content ``fingerprints`` (model, adapter, tokenizer digests), the entries that change
    its answers (``dtype``, ``merge_adapter``, ``sampling``, ``quantization`` when quantised) and, for a part that is not a local folder (a hub id:
    ``{"local": False}``), its name. Folder paths of local parts, the device and the batch size are left out:
    moving a folder or serving on another machine keeps the identity, like the local judges' cache keys.

    Args:
        description: ``TransformersBackend.describe()`` (or the vLLM backend's): a dict with ``"fingerprints"``
            ``{"model": {...}, "adapter": {...} | None, "tokenizer": {...}}`` and the paths under ``"model"``,
            ``"adapter"``, ``"tokenizer"``.

    Returns:
        64 hex characters (sha256 of canonical JSON), or ``None`` when ``description`` holds no ``fingerprints``.

    Raises:
        Nothing: values JSON cannot encode are hashed by their ``str()``.
    """
    fingerprints = description.get("fingerprints")
    if not isinstance(fingerprints, dict):
        return None
    content: dict[str, Any] = {"fingerprints": fingerprints}
    content.update({key: description.get(key) for key in _SERVED_IDENTITY_KEYS if key in description})
    for part in ("model", "adapter", "tokenizer"):
        part_print = fingerprints.get(part)
        if isinstance(part_print, dict) and not part_print.get("local", True):
            content[f"{part}_id"] = description.get(part)
    blob = json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()

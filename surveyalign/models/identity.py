"""An adapter judges only on the base it was trained on, and only when every one of its tensors is attached.

Two silent failures turn "adapter X" results into something else (SurveyAlign §5: one LoRA adapter per dimension
on one base model):

* the wrong base: PEFT loads a LoRA adapter onto any model with matching module names and shapes, e.g. a
  Qwen3-32B adapter onto another Qwen3-32B fine-tune. :func:`base_identity` describes a base (name, revision,
  content fingerprint), the training record keeps it, and :func:`compare_base` lists what differs at load time;
* a partly attached adapter: PEFT reports adapter keys that match no module only as a warning, so a renamed or
  truncated model scores base-model answers under the adapter's name. :func:`check_adapter_attached` requires every
  tensor of the adapter file to sit, with its exact values, in a module of the loaded model.

The content fingerprint hashes ``config.json`` and, per weight file, its name, size, the safetensors header
(tensor names, dtypes, shapes) and three 1 MiB samples of the tensor bytes (start, middle, end), or the whole file
when all weights are under 64 MiB: stable when a model is copied to another folder or machine, different for
another checkpoint of the same architecture, and a few MiB of reads for a 65 GB model.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path
from typing import Any

from surveyalign.models.quantization import quantization_record, resolve_quantization
from surveyalign.models.record import read_training_record

__all__ = ["BaseMismatchError", "base_identity", "base_record", "check_adapter_attached", "compare_base",
           "resolve_base", "resolve_bases"]

#: Bytes read per sample of a large weight file, and below which total size weights are hashed whole.
SAMPLE_BYTES = 1 << 20
FULL_CONTENT_BYTES = 64 << 20
_WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt")
_SNAPSHOT = re.compile(r"[/\\]snapshots[/\\](?P<rev>[0-9a-f]{40})(?:[/\\]|$)")


class BaseMismatchError(ValueError):
    """The base model being loaded is not the one the adapter was trained on (names the differing fields)."""


def _sample(digest: Any, path: Path, full: bool) -> None:
    size = path.stat().st_size
    digest.update(f"{path.name}\0{size}\0".encode())
    with path.open("rb") as handle:
        if full:
            for chunk in iter(lambda: handle.read(1 << 20), b""):
                digest.update(chunk)
            return
        start = 0
        if path.suffix == ".safetensors":  # the header: 8-byte length, then JSON with names, dtypes, shapes
            head = handle.read(8)
            header_len = int.from_bytes(head, "little")
            digest.update(head + handle.read(header_len))
            start = 8 + header_len
        for offset in (start, start + max(0, (size - start) // 2 - SAMPLE_BYTES // 2), max(start, size - SAMPLE_BYTES)):
            handle.seek(offset)
            digest.update(handle.read(SAMPLE_BYTES))


def base_identity(model: str | os.PathLike, revision: str | None = None) -> dict[str, Any]:
    """Describe a base model for the training record: name, revision and content fingerprint.

    Args:
        model: the ``model_name_or_path`` a recipe or backend loads (a local folder or a Hub id).
        revision: the Hub revision asked for (``model_revision``); for a folder inside the Hugging Face cache
            (``.../snapshots/<commit>/``) the commit is read from the path when this is None.

    Returns:
        ``{"name": str, "revision": str | None, "fingerprint": 64 hex | None, "fingerprint_of": "content" |
        "sampled content" | None}``; ``fingerprint`` is None for a Hub id that is not a local folder.

    Raises:
        OSError: a file of the folder cannot be read.
    """
    name = str(model)
    root = Path(name).expanduser()
    match = _SNAPSHOT.search(str(root.resolve())) if root.is_dir() else None
    revision = revision if revision not in (None, "main") or match is None else match["rev"]
    if not root.is_dir():
        return {"name": name, "revision": revision, "fingerprint": None, "fingerprint_of": None}
    digest = hashlib.sha256()
    config = root / "config.json"
    if config.is_file():
        digest.update(config.read_bytes())
    weights = sorted(p for p in root.iterdir() if p.is_file() and p.name.endswith(_WEIGHT_SUFFIXES))
    full = sum(p.stat().st_size for p in weights) < FULL_CONTENT_BYTES
    for path in weights:
        _sample(digest, path, full)
    return {"name": name, "revision": revision, "fingerprint": digest.hexdigest(),
            "fingerprint_of": "content" if full else "sampled content"}


def base_record(model_args: Any, model: str | None = None) -> dict[str, Any]:
    """The training-record entries that say which base an adapter was trained on, and how it was loaded.

    Args:
        model_args: TRL's ``ModelConfig`` of the run (``model_name_or_path``, ``model_revision``, quantisation).
        model: the base actually loaded when it differs from ``model_args.model_name_or_path`` (DPO: the SFT
            record's base).

    Returns:
        ``{"base": base_identity(...), "quantization": quantization_record(...) or None}``;
        evaluation, serve and score compare the first and load with the second.
    """
    name = model or model_args.model_name_or_path
    return {"base": base_identity(name, getattr(model_args, "model_revision", None)),
            "quantization": quantization_record(model_args)}


def compare_base(recorded: dict[str, Any] | None, loaded: dict[str, Any]) -> list[str]:
    """What differs between the base an adapter was trained on and the base being loaded.

    Fingerprints are compared when both sides have one (a moved or copied folder keeps its fingerprint, so its new
    name is no mismatch); otherwise the names and, when both are known, the revisions.

    Args:
        recorded: the training record's ``base`` entry (:func:`base_identity` at training time); None: nothing
            recorded (an adapter from before base identities were recorded), which is no mismatch.
        loaded: :func:`base_identity` of the model being loaded.

    Returns:
        One line per differing field (empty when they agree), e.g. ``"fingerprint: trained on 3f2a..., loading
        9c1d... (models/other)"``.
    """
    if not recorded:
        return []
    problems = []
    have, want = loaded.get("fingerprint"), recorded.get("fingerprint")
    if have and want:
        if have != want:
            problems.append(f"fingerprint: trained on {want[:12]}... ({recorded.get('name')}), loading {have[:12]}... "
                            f"({loaded.get('name')})")
        return problems
    if str(recorded.get("name")) != str(loaded.get("name")):
        problems.append(f"name: trained on {recorded.get('name')!r}, loading {loaded.get('name')!r}")
    if recorded.get("revision") and loaded.get("revision") and recorded["revision"] != loaded["revision"]:
        problems.append(f"revision: trained on {recorded['revision']!r}, loading {loaded['revision']!r}")
    return problems


def check_adapter_attached(model: Any, adapter_dir: str | os.PathLike, adapter_name: str = "default") -> int:
    """Check that every tensor of the adapter file was loaded into a module of ``model`` with its exact values.

    Call it on the ``PeftModel`` right after ``PeftModel.from_pretrained`` (before ``merge_and_unload``).

    Args:
        model: the PEFT model.
        adapter_dir: the adapter folder (``adapter_model.safetensors`` or ``adapter_model.bin``).
        adapter_name: the adapter's name inside the PEFT model.

    Returns:
        The number of adapter tensors checked (> 0).

    Raises:
        FileNotFoundError: the folder has no adapter weights.
        RuntimeError: the file holds no tensor, or some tensors match no module of the model (or were loaded with
            other values); the message gives how many and the first few names.
    """
    import torch

    root = Path(adapter_dir)
    if (root / "adapter_model.safetensors").is_file():
        from safetensors.torch import load_file

        saved = load_file(str(root / "adapter_model.safetensors"))
    elif (root / "adapter_model.bin").is_file():
        saved = torch.load(root / "adapter_model.bin", map_location="cpu", weights_only=True)
    else:
        raise FileNotFoundError(f"{adapter_dir}: no adapter_model.safetensors or adapter_model.bin")
    if not saved:
        raise RuntimeError(f"{adapter_dir}: the adapter file holds no tensor")
    from peft import get_peft_model_state_dict

    # PEFT's own inverse of loading: the adapter's tensors as save_pretrained would write them from this model
    loaded = get_peft_model_state_dict(model, adapter_name=adapter_name, save_embedding_layers=False)
    unmatched = []
    for key, tensor in saved.items():
        found = loaded.get(key)
        if found is None or found.shape != tensor.shape or not torch.equal(found.detach().cpu().to(tensor.dtype),
                                                                          tensor):
            unmatched.append(key)
    if unmatched:
        raise RuntimeError(f"{adapter_dir}: {len(unmatched)} of {len(saved)} adapter tensors are not attached to a "
                           f"module of the base model (e.g. {', '.join(unmatched[:3])}); this base does not fit the "
                           "adapter, and its answers would not be the adapter's")
    return len(saved)


def _same_quantization(a: dict[str, Any] | None, b: dict[str, Any] | None) -> bool:
    keys = ("bits", "quant_type", "double_quant")
    return (a is None) == (b is None) and (a is None or all(a.get(k) == b.get(k) for k in keys))


def resolve_base(model: str, adapter: str | None, *, quantization: Any = "auto", allow_base_mismatch: bool = False,
                 compute_dtype: str = "float32", where: str = "backend") -> tuple[dict[str, Any] | None, list[str]]:
    """Decide how to load the base under ``adapter``: the quantisation, and whether the base is the trained one.

    Args:
        model: the base model folder or Hub id being loaded.
        adapter: the adapter folder (None: a plain base model; nothing to compare).
        quantization: ``"auto"`` (the adapter's recorded quantisation, else full precision), ``"none"``, ``"4bit"``,
            ``"8bit"`` or a recorded dict (see :func:`surveyalign.models.quantization.resolve_quantization`).
        allow_base_mismatch: load even when the base or the quantisation differs from the training record; the
            differences are returned (and belong in run_config).
        compute_dtype: 4-bit compute dtype for a string ``quantization``.
        where: who is loading, named in errors (``"transformers backend"``).

    Returns:
        (quantisation record or None, mismatch lines); the lines are empty unless ``allow_base_mismatch``.

    Raises:
        BaseMismatchError: (a ``ValueError``) the base's identity or the quantisation differs from the adapter's
            training record and ``allow_base_mismatch`` is false.
        ValueError: the adapter's training record is unreadable or malformed (file and field named).
    """
    record = read_training_record(adapter, required=False) if adapter else {}
    recorded_q = record.get("quantization")
    chosen = recorded_q if quantization == "auto" else resolve_quantization(quantization, compute_dtype=compute_dtype)
    problems = compare_base(record.get("base"), base_identity(model)) if adapter else []
    if adapter and "quantization" in record and not _same_quantization(chosen, recorded_q):
        def show(q: dict[str, Any] | None) -> str:
            return "full precision" if q is None else f"{q['bits']}-bit {q.get('quant_type') or ''}".strip()

        problems.append(f"quantization: trained on a {show(recorded_q)} base, loading it in {show(chosen)}")
    if problems and not allow_base_mismatch:
        raise BaseMismatchError(
            f"{where}: adapter {adapter} was trained on another base than the one being loaded ({model}):\n  "
            + "\n  ".join(problems)
            + "\nLoad the base it was trained on (see `base` and `quantization` in its surveyalign_training.json), or "
              "pass allow_base_mismatch (CLI --allow-base-mismatch) to load anyway; the mismatch is then recorded.")
    return chosen, problems


def resolve_bases(model: str, adapters: list[str], *, quantization: Any = "auto", allow_base_mismatch: bool = False,
                  compute_dtype: str = "float32", where: str = "backend") -> tuple[dict[str, Any] | None, list[str]]:
    """:func:`resolve_base` for several adapters on one base (``serve --adapter NAME=DIR ...``).

    Args:
        model: the base being loaded.
        adapters: adapter folders (empty: a plain base).
        quantization, allow_base_mismatch, compute_dtype, where: as for :func:`resolve_base`.

    Returns:
        (the one quantisation record or None, mismatch lines prefixed with the adapter folder when there are
        several).

    Raises:
        BaseMismatchError: a base or quantisation mismatch without ``allow_base_mismatch``, or adapters whose
            recorded quantisations differ (one base cannot be loaded two ways at once).
    """
    if len(adapters) <= 1:
        return resolve_base(model, adapters[0] if adapters else None, quantization=quantization,
                            allow_base_mismatch=allow_base_mismatch, compute_dtype=compute_dtype, where=where)
    chosen: list[Any] = []
    problems: list[str] = []
    for adapter in adapters:
        one, lines = resolve_base(model, adapter, quantization=quantization, allow_base_mismatch=allow_base_mismatch,
                                  compute_dtype=compute_dtype, where=where)
        chosen.append(one)
        problems += [f"{adapter}: {line}" for line in lines]
    if any(not _same_quantization(chosen[0], other) for other in chosen[1:]):
        raise BaseMismatchError(f"{where}: the adapters {adapters} were trained on bases quantised differently; "
                                "serve them from separate processes or pass one quantization for all")
    return chosen[0], problems

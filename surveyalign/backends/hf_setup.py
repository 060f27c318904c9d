"""Where and how a local transformers model runs: the device (``auto`` picks CUDA when present), the torch dtype
(``auto``: bf16 or fp16 on CUDA, fp32 on CPU; a bad name raises ``ValueError``), and the content fingerprints of
the model, adapter and tokenizer folders (shared by the transformers and vLLM backends).
"""

from __future__ import annotations

from typing import Any


def _fingerprints(model: str, adapter: str | None, tokenizer: str) -> dict[str, Any]:
    """Content fingerprints of the model, adapter and tokenizer folders (shared with the vLLM backend)."""
    from surveyalign.backends.fingerprint import (
        adapter_fingerprint,
        model_fingerprint,
        tokenizer_fingerprint,
    )

    return {"model": model_fingerprint(model), "adapter": adapter_fingerprint(adapter) if adapter else None,
            "tokenizer": tokenizer_fingerprint(tokenizer)}


def _resolve_device(device: str) -> str:
    import torch

    if device != "auto":
        return device
    if torch.cuda.is_available():
        return "cuda"
    return "cpu"


def _resolve_dtype(dtype: str, device: str) -> Any:
    import torch

    if dtype == "auto":
        if device.startswith("cuda"):
            return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
        return torch.float32
    names = {"float32": torch.float32, "fp32": torch.float32, "bfloat16": torch.bfloat16, "bf16": torch.bfloat16,
             "float16": torch.float16, "fp16": torch.float16}
    if dtype not in names:
        raise ValueError(f"transformers backend: dtype must be 'auto' or one of {sorted(names)}, got {dtype!r}")
    return names[dtype]

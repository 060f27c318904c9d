"""Quantised base models (QLoRA, bitsandbytes): what a training record says, and how to load the same base again.

A QLoRA adapter is trained against a 4-bit base; its LoRA weights compensate that base's quantisation error, so
evaluation must load the base the same way. The recipes record the setting (:func:`quantization_record`) in
``surveyalign_training.json`` and the model card; evaluation, ``serve`` and ``score`` rebuild the
``BitsAndBytesConfig`` from it (:func:`bnb_config`). bitsandbytes is imported only when a quantised model loads.
"""

from __future__ import annotations

from typing import Any

__all__ = ["QUANTIZATION_CHOICES", "bnb_config", "describe_quantization", "quantization_label",
           "quantization_record", "resolve_quantization"]

#: Values of the ``quantization`` option of the transformers backend and ``serve --quantization``.
QUANTIZATION_CHOICES = ("none", "4bit", "8bit")


def _dtype_name(value: Any) -> str | None:
    if value is None:
        return None
    return str(value).replace("torch.", "")


def quantization_record(model_args: Any) -> dict[str, Any] | None:
    """The quantisation of a recipe's base model, as written to the training record and the model card.

    Args:
        model_args: TRL's ``ModelConfig`` (``load_in_4bit``, ``load_in_8bit``, ``bnb_4bit_quant_type``,
            ``use_bnb_nested_quant``, ``bnb_4bit_quant_storage``, ``dtype``).

    Returns:
        ``None`` for a full-precision base; else ``{"method": "bitsandbytes", "bits": 4 | 8, "quant_type": "nf4" |
        "fp4" | None, "double_quant": bool, "compute_dtype": "bfloat16"..., "storage_dtype": "uint8" | "bfloat16"...}``
        (TRL's ``get_quantization_config`` uses ``dtype`` as the 4-bit compute dtype).
    """
    if getattr(model_args, "load_in_4bit", False):
        return {"method": "bitsandbytes", "bits": 4, "quant_type": model_args.bnb_4bit_quant_type,
                "double_quant": bool(model_args.use_bnb_nested_quant),
                "compute_dtype": _dtype_name(model_args.dtype) or "float32",
                "storage_dtype": _dtype_name(model_args.bnb_4bit_quant_storage) or "uint8"}
    if getattr(model_args, "load_in_8bit", False):
        return {"method": "bitsandbytes", "bits": 8, "quant_type": None, "double_quant": False,
                "compute_dtype": _dtype_name(model_args.dtype) or "float32", "storage_dtype": "int8"}
    return None


def quantization_label(model_args: Any) -> str:
    """Short name of a recipe's quantisation for the memory plan: ``none``, ``8bit``, ``4bit-nf4`` (``-double``).

    Args:
        model_args: TRL's ``ModelConfig``.

    Returns:
        The label (an FP4 4-bit base counts as ``4bit-nf4``: the same bytes per weight).
    """
    record = quantization_record(model_args)
    if record is None:
        return "none"
    if record["bits"] == 8:
        return "8bit"
    return "4bit-nf4-double" if record["double_quant"] else "4bit-nf4"


def resolve_quantization(value: str | dict[str, Any] | None, *, compute_dtype: str) -> dict[str, Any] | None:
    """Turn a backend option (``"none"``, ``"4bit"``, ``"8bit"``, a recorded dict or None) into a record.

    Args:
        value: ``None`` / ``"none"`` (full precision), ``"4bit"`` (NF4 with double quantisation, the QLoRA
            default), ``"8bit"`` (LLM.int8), or a :func:`quantization_record` dict (as recorded by training).
        compute_dtype: dtype name for the 4-bit compute when ``value`` is a string (``"bfloat16"``, ``"float32"``).

    Returns:
        A record dict or ``None``.

    Raises:
        ValueError: an unknown string, or a dict without ``bits`` 4 or 8.
    """
    if value is None or value == "none":
        return None
    if isinstance(value, dict):
        if value.get("bits") not in (4, 8):
            raise ValueError(f"quantization record must have bits 4 or 8, got {value!r}")
        return dict(value)
    if value == "4bit":
        return {"method": "bitsandbytes", "bits": 4, "quant_type": "nf4", "double_quant": True,
                "compute_dtype": compute_dtype, "storage_dtype": "uint8"}
    if value == "8bit":
        return {"method": "bitsandbytes", "bits": 8, "quant_type": None, "double_quant": False,
                "compute_dtype": compute_dtype, "storage_dtype": "int8"}
    raise ValueError(f"quantization must be one of {QUANTIZATION_CHOICES} or a recorded setting, got {value!r}")


def bnb_config(record: dict[str, Any]) -> Any:
    """The ``transformers.BitsAndBytesConfig`` that loads a base as ``record`` describes (imports bitsandbytes).

    Args:
        record: a :func:`quantization_record` / :func:`resolve_quantization` dict.

    Returns:
        ``BitsAndBytesConfig`` (4-bit: quant type, double quantisation, compute and storage dtype; 8-bit).

    Raises:
        ImportError: bitsandbytes is not installed (``pip install bitsandbytes``).
    """
    import torch
    from transformers import BitsAndBytesConfig

    try:
        import bitsandbytes  # noqa: F401
    except ImportError as err:
        raise ImportError(f"a quantised base needs bitsandbytes: pip install bitsandbytes ({err})") from err
    if record["bits"] == 8:
        return BitsAndBytesConfig(load_in_8bit=True)
    storage = record.get("storage_dtype") or "uint8"
    return BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type=record.get("quant_type") or "nf4",
                              bnb_4bit_use_double_quant=bool(record.get("double_quant")),
                              bnb_4bit_compute_dtype=getattr(torch, record.get("compute_dtype") or "float32"),
                              bnb_4bit_quant_storage=getattr(torch, storage))


def describe_quantization(quantization: dict[str, Any] | None) -> str:
    """How a base was loaded, in words (model card): full precision, or the bitsandbytes setting to reuse.

    Args:
        quantization: a :func:`quantization_record` dict, or None.

    Returns:
        e.g. ``"full precision"`` or ``"4-bit NF4 (bitsandbytes, double quantisation, compute dtype bfloat16,
        storage dtype uint8): QLoRA; load the base in the same 4-bit setting ..."``.
    """
    if not quantization:
        return "full precision"
    if quantization.get("bits") == 8:
        return "8-bit (bitsandbytes LLM.int8); load the base in 8-bit to use this adapter"
    return (f"4-bit {str(quantization.get('quant_type') or 'nf4').upper()} (bitsandbytes"
            f"{', double quantisation' if quantization.get('double_quant') else ''}, compute dtype "
            f"{quantization.get('compute_dtype')}, storage dtype {quantization.get('storage_dtype')}): QLoRA; load "
            "the base in the same 4-bit setting to use this adapter (surveyalign does by default)")

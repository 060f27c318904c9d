"""One example per row, prompt and completion intact: refuse packing that breaks it, and check TRL's rows.

SurveyAlign trains one judgement per sequence (SurveyAlign §5.1): the model sees one survey prompt and learns its
one rationale + score. TRL can pack several examples into one row: ``packing_strategy: wrapped`` cuts examples at
fixed lengths and wraps them into each other, ``bfd_split`` splits overflowing examples, and ``bfd`` (and
``padding_free``) flattens several whole examples into one row, which keeps them apart only where the attention
kernel honours per-example boundaries (FlashAttention's variable-length path); with ``sdpa`` or ``eager`` every
token attends across its neighbours' examples. :func:`check_packing` refuses those settings with the reason;
:func:`check_rows` checks the rows TRL actually produced (one sequence per row, the completion at the end).
"""

from __future__ import annotations

from typing import Any

__all__ = ["FLASH_ATTENTION", "check_packing", "check_rows", "check_trainer"]

#: Attention implementations that keep flattened examples apart (variable-length FlashAttention).
FLASH_ATTENTION = frozenset({"flash_attention_2", "flash_attention_3", "kernels-community/flash-attn",
                             "kernels-community/flash-attn2", "kernels-community/flash-attn3",
                             "kernels-community/vllm-flash-attn3"})


def check_packing(args: Any, attn_implementation: str | None) -> None:
    """Refuse training options that would put more than one example, or part of one, into a row.

    Args:
        args: an ``SFTConfig`` / ``DPOConfig`` (``packing``, ``packing_strategy``, ``eval_packing``,
            ``padding_free``; absent fields count as off).
        attn_implementation: the attention implementation of the model being trained (``model.config.
            _attn_implementation``: ``"sdpa"``, ``"eager"``, ``"flash_attention_2"``...).

    Raises:
        ValueError: naming the flag and why: ``--packing_strategy wrapped`` / ``bfd_split`` (cut or split examples),
            or ``--packing`` / ``--padding_free`` on an attention implementation without per-example boundaries.
    """
    packing = bool(getattr(args, "packing", False)) or bool(getattr(args, "eval_packing", None))
    strategy = getattr(args, "packing_strategy", None)
    if packing and strategy == "wrapped":
        raise ValueError("--packing with --packing_strategy wrapped cuts examples at fixed lengths and wraps them "
                         "into each other (a prompt without its completion, two surveys in one row); SurveyAlign "
                         "trains one example per row: drop --packing")
    if packing and strategy == "bfd_split":
        raise ValueError("--packing with --packing_strategy bfd_split splits examples longer than max_length; "
                         "SurveyAlign trains whole examples (the length rule already fits them): drop --packing")
    flattened = packing or bool(getattr(args, "padding_free", False))
    if flattened and attn_implementation not in FLASH_ATTENTION:
        flag = "--packing" if packing else "--padding_free"
        raise ValueError(f"{flag} flattens several examples into one row, and attn_implementation="
                         f"{attn_implementation!r} has no per-example attention boundaries (tokens would attend "
                         f"across examples); use --attn_implementation flash_attention_2 or drop {flag}")


def check_rows(prepared: Any, name: str) -> None:
    """Check that every row TRL prepared holds exactly one example with its completion at the end.

    Args:
        prepared: the trainer's tokenised dataset (``input_ids`` and ``completion_mask`` or ``labels``;
            ``seq_lengths`` / ``position_ids`` when TRL packed it).
        name: split name for messages.

    Raises:
        RuntimeError: a row holds more than one sequence (``seq_lengths`` with several entries, ``position_ids``
            restarting), or its completion tokens are not one block ending the row.
    """
    columns = set(getattr(prepared, "column_names", None) or (prepared[0].keys() if len(prepared) else ()))
    for i, row in enumerate(prepared):
        if "seq_lengths" in columns and len(row["seq_lengths"]) != 1:
            raise RuntimeError(f"{name} row {i}: TRL packed {len(row['seq_lengths'])} sequences into one row "
                               f"(lengths {list(row['seq_lengths'])}); one example per row is required")
        positions = row.get("position_ids") if "position_ids" in columns else None
        if positions is not None and list(positions) != list(range(len(positions))):
            raise RuntimeError(f"{name} row {i}: position_ids restart inside the row (several examples packed)")
        mask = row.get("completion_mask") if "completion_mask" in columns else None
        if mask is None and "labels" in columns:
            mask = [int(t != -100) for t in row["labels"]]
        if mask is not None:
            ones = [k for k, m in enumerate(mask) if m]
            if not ones:
                raise RuntimeError(f"{name} row {i}: no completion token (prompt without its completion)")
            if ones != list(range(ones[0], ones[0] + len(ones))) or ones[0] == 0:
                raise RuntimeError(f"{name} row {i}: the completion is not one block after the prompt "
                                   f"(completion tokens at {ones[0]}..{ones[-1]} of {len(mask)})")


def check_trainer(trainer: Any) -> None:
    """:func:`check_packing` on the trainer's arguments and model, then :func:`check_rows` on its datasets.

    Args:
        trainer: an ``SFTTrainer`` after construction (its datasets are tokenised by then).

    Raises:
        ValueError: from :func:`check_packing`.
        RuntimeError: from :func:`check_rows`.
    """
    model = getattr(trainer, "model", None)
    config = getattr(model, "config", None)
    attn = getattr(config, "_attn_implementation", None) or getattr(config, "attn_implementation", None)
    check_packing(trainer.args, attn)
    for name, dataset in (("train", getattr(trainer, "train_dataset", None)),
                          ("validation", getattr(trainer, "eval_dataset", None))):
        if dataset is not None and hasattr(dataset, "__len__"):
            check_rows(dataset, name)

"""Tiny LoRA adapters for the tiny Qwen3 that answer one fixed judgement, trained in a few seconds (plain torch).

A random tiny model never writes ``Reason$$$X$$$``; an adapter trained for a few dozen steps on judge prompts of
varied lengths to answer ``"<rationale>$$$<score>$$$"`` does, whatever the survey, so end-to-end tests can check
real scores through the real transformers backend, ``surveyalign serve`` and the voting path.
"""

from __future__ import annotations

import random
from pathlib import Path

#: The fixed answer each dimension's tiny adapter learns (rationale, score).
ANSWERS = {
    "readability": ("Clear prose.", 1),
    "structure": ("Loose order.", -1),
    "comprehensiveness": ("Broad refs.", 2),
    "criticalness": ("No critique.", -2),
}

_WORDS = ("survey", "method", "graph", "model", "review", "data", "results", "section", "we", "the", "of", "and")


def train_constant_adapter(model_dir: Path, out: Path, dimension: str, *, steps: int = 20, seed: int = 0) -> Path:
    """Train a LoRA adapter (r=8, all projections; lm_head trained in full) to answer ``ANSWERS[dimension]``.

    The tiny model's random lm_head gives near-uniform logits that low-rank updates of the inner layers cannot
    sharpen, hence ``modules_to_save=["lm_head"]``; 20 steps bring the loss from 8 to about 0.1.

    Args:
        model_dir: the tiny model folder (``build_tiny_model``).
        out: folder to save the adapter to.
        dimension: a key of :data:`ANSWERS`; prompts are that dimension's judge prompts.
        steps: optimiser steps (each on one prompt of 10-150 random words).
        seed: seeds torch and the prompt texts.

    Returns:
        ``out`` (the adapter folder, saved with ``save_pretrained``).
    """
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from surveyalign.prompts import build_judge_prompt, format_target, render_chat

    torch.manual_seed(seed)
    rng = random.Random(seed)
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    base = AutoModelForCausalLM.from_pretrained(model_dir)
    config = LoraConfig(r=8, lora_alpha=16, lora_dropout=0.0, task_type="CAUSAL_LM",
                        target_modules=["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj",
                                        ], modules_to_save=["lm_head"])
    model = get_peft_model(base, config)
    optimiser = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-2)
    rationale, score = ANSWERS[dimension]
    answer = format_target(rationale, score) + tokenizer.eos_token
    answer_ids = tokenizer(answer, add_special_tokens=False)["input_ids"]
    model.train()
    for _ in range(steps):
        text = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(10, 150)))
        messages = build_judge_prompt(dimension, text, knowledge=None if rng.random() < 0.5 else text[:200]).messages()
        prompt_ids = tokenizer(render_chat(tokenizer, messages, enable_thinking=False),
                               add_special_tokens=False)["input_ids"]
        ids = torch.tensor([prompt_ids + answer_ids])
        labels = torch.tensor([[-100] * len(prompt_ids) + answer_ids])
        loss = model(input_ids=ids, labels=labels).loss
        loss.backward()
        optimiser.step()
        optimiser.zero_grad()
    model.save_pretrained(out)
    return out

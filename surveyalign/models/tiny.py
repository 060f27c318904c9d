"""A tiny random Qwen3 causal LM and a locally trained tokenizer, for tests and the demo.

Nothing is downloaded: the tokenizer is a byte-level BPE trained with ``tokenizers`` on a small built-in
corpus, and the model is a ``Qwen3ForCausalLM`` built from its config with random weights. The chat template
mimics Qwen3's behaviour that matters to us: ``enable_thinking=False`` adds an empty think block to the
generation prompt, and the last assistant turn of a conversation carries an empty think block too, so the
prompt rendered with a generation prompt is a prefix of the full conversation either way.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path

from surveyalign.constants import DIMENSIONS

SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<think>", "</think>"]

#: Our own Qwen3-like chat template (ChatML turns; empty think block on the last assistant turn and,
#: when thinking is off, on the generation prompt).
CHAT_TEMPLATE = (
    "{%- for message in messages -%}"
    "{%- if message['role'] == 'assistant' and loop.last and '<think>' not in message['content'] -%}"
    "{{ '<|im_start|>assistant\\n<think>\\n\\n</think>\\n\\n' + message['content'] + '<|im_end|>\\n' }}"
    "{%- else -%}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
    "{%- endif -%}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}"
    "{{ '<|im_start|>assistant\\n' }}"
    "{%- if enable_thinking is defined and enable_thinking is false -%}"
    "{{ '<think>\\n\\n</think>\\n\\n' }}"
    "{%- endif -%}"
    "{%- endif -%}"
)


@dataclass(frozen=True)
class TinyModelSpec:
    """Sizes of the tiny Qwen3 model (about 140k parameters with the default 1,024-token vocabulary)."""

    vocab_size: int = 1024
    hidden_size: int = 64
    num_hidden_layers: int = 2
    num_attention_heads: int = 4
    num_key_value_heads: int = 2
    intermediate_size: int = 128
    head_dim: int = 16
    max_position_embeddings: int = 32768
    seed: int = 0


def _corpus() -> list[str]:
    words = " ".join(DIMENSIONS)
    base = [
        "The survey is clearly written and easy to follow, but several sections repeat each other.",
        "Key recent works are missing from the references, and some cited sources are outdated.",
        "The authors offer little critical perspective; the review mostly summarises prior work.",
        "Section transitions are abrupt and the taxonomy is hard to navigate.",
        "Reason$$$-1$$$ Reason$$$1$$$ Reason$$$-2$$$ Reason$$$2$$$ <reason> </reason> <score>1</score>",
        "# A Survey of Methods\n\n## 1 Introduction\nWe review 120 studies [1].\n\n## References\n1. A. Author. 2020.",
        "You are an expert reviewer. Score the survey from -2 to +2 and explain briefly.",
        words,
    ]
    return base * 20


def build_tiny_model(out_dir: str | os.PathLike, spec: TinyModelSpec | None = None, *, force: bool = False) -> Path:
    """Build (or reuse) a tiny random Qwen3 model and tokenizer saved under ``out_dir``.

    Args:
        out_dir: folder to write ``config.json``, ``model.safetensors`` and the tokenizer files to.
        spec: model sizes; defaults to :class:`TinyModelSpec` (hidden 64, 2 layers, head_dim 16).
        force: rebuild even if a model built from the same spec is already there.

    Returns:
        The folder path, loadable with ``AutoModelForCausalLM.from_pretrained`` and ``AutoTokenizer``.
    """
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast, Qwen3Config, Qwen3ForCausalLM

    spec = spec or TinyModelSpec()
    out = Path(out_dir)
    marker = out / "tiny_spec.json"
    if not force and marker.exists() and json.loads(marker.read_text()) == asdict(spec):
        return out
    out.mkdir(parents=True, exist_ok=True)

    bpe = Tokenizer(models.BPE(unk_token=None))
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=spec.vocab_size,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    bpe.train_from_iterator(_corpus(), trainer=trainer)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=bpe,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        additional_special_tokens=["<|im_start|>", "<think>", "</think>"],
    )
    tokenizer.chat_template = CHAT_TEMPLATE
    tokenizer.model_max_length = spec.max_position_embeddings
    tokenizer.save_pretrained(out)

    torch.manual_seed(spec.seed)
    config = Qwen3Config(
        vocab_size=len(tokenizer),
        hidden_size=spec.hidden_size,
        num_hidden_layers=spec.num_hidden_layers,
        num_attention_heads=spec.num_attention_heads,
        num_key_value_heads=spec.num_key_value_heads,
        intermediate_size=spec.intermediate_size,
        head_dim=spec.head_dim,
        max_position_embeddings=spec.max_position_embeddings,
        tie_word_embeddings=True,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=None,
    )
    model = Qwen3ForCausalLM(config)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.save_pretrained(out)
    marker.write_text(json.dumps(asdict(spec), indent=2))
    return out

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

#: Pre-tokenisation pattern of the Qwen2/Qwen3 tokenizers (contractions, letter runs with one leading
#: non-letter, single digits, punctuation runs with trailing newlines, newline runs, other whitespace).
_SPLIT_PATTERN = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)

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
    """Sizes of the tiny Qwen3 model (about 0.3M parameters with the default 4,096-token vocabulary)."""

    vocab_size: int = 4096
    hidden_size: int = 64
    num_hidden_layers: int = 2
    num_attention_heads: int = 4
    num_key_value_heads: int = 2
    intermediate_size: int = 128
    head_dim: int = 16
    max_position_embeddings: int = 32768
    seed: int = 0
    #: bumped whenever the tokenizer corpus, pre-tokenizer or chat template changes (forces a rebuild)
    build_version: int = 2


def _corpus() -> list[str]:
    """Texts the tiny tokenizer is trained on: the judge prompts of every dimension and protocol, and the
    shipped made-up sample release (surveys and rationales), so prompts take hundreds of tokens, not thousands."""
    from surveyalign.data import sample_release_dir
    from surveyalign.prompts import PROTOCOLS, build_judge_prompt, format_target

    texts = []
    for dimension in DIMENSIONS:
        for protocol in PROTOCOLS:
            prompt = build_judge_prompt(dimension, "", protocol=protocol, knowledge="Related work, 2019-2023.")
            texts.append(prompt.instruction)
            texts.extend(format_target("The survey is clear.", score, protocol) for score in (-2, -1, 1, 2))
    release = Path(sample_release_dir())
    for path in sorted(release.rglob("*.json")):
        data = json.loads(path.read_text())
        if isinstance(data, dict):
            texts.extend(str(v) for v in data.values())
        elif isinstance(data, list):
            texts.extend(" ".join(r.get("reasons", [])) for r in data if isinstance(r, dict))
    return texts


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
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast, Qwen3Config, Qwen3ForCausalLM

    spec = spec or TinyModelSpec()
    out = Path(out_dir)
    marker = out / "tiny_spec.json"
    if not force and marker.exists() and json.loads(marker.read_text()) == asdict(spec):
        return out
    out.mkdir(parents=True, exist_ok=True)

    bpe = Tokenizer(models.BPE(unk_token=None))
    # Qwen2/3-style split (a newline run is one piece even before a letter, so "\n\n" + text tokenizes the same
    # whether or not the text follows), then byte-level mapping without GPT-2's own regex.
    bpe.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(_SPLIT_PATTERN), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
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

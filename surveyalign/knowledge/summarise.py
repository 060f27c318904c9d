"""The LLM stages of Crit-KA (SurveyReview App. F.2): block summaries, then compression to length L.

Calls go through a shared judge backend and are cached in a ``calls.jsonl`` (:class:`surveyalign.judge.CallCache`,
via :func:`surveyalign.judge.cached_generate`) under a key made of the prompt's content hash, the backend's
identity (``describe()`` without operational settings such as concurrency), the namespace :data:`KA_NAMESPACE`
and the settings, so a re-run makes only the calls it does not have (and counts the hits).
Token counts use the judge's tokenizer (:class:`TokenCounter`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from surveyalign.backends import Backend, GenerationSettings
from surveyalign.calls import (
    CallCache,
    backend_identity,
    cached_generate,
    make_call,
    stable_hash,
)
from surveyalign.documents import truncate_to_tokens
from surveyalign.knowledge.config import KAConfig
from surveyalign.knowledge.ka import Block
from surveyalign.models.paths import from_hub

__all__ = ["KA_NAMESPACE", "CritKA", "Summariser", "TokenCounter"]

#: The call-cache namespace of every Crit-KA summary call (keeps them apart from other callers' calls).
KA_NAMESPACE = "ka.summary"


class TokenCounter:
    """Counts (and cuts) text in tokens of the judge's tokenizer.

    Args:
        tokenizer: a local tokenizer / model folder or id (``transformers.AutoTokenizer``), or
            ``"whitespace"`` to count words.

    Raises:
        ValueError: ``tokenizer`` is empty.
        OSError: the tokenizer cannot be loaded.
    """

    def __init__(self, tokenizer: str) -> None:
        if not tokenizer:
            raise ValueError("a tokenizer is needed to count Crit-KA token budgets (set `tokenizer` in the KA "
                             "config: the judge's tokenizer folder, or 'whitespace' to count words)")
        self.name = tokenizer
        self._tok = None
        if tokenizer != "whitespace":
            # transformers takes seconds to import: only when a real tokenizer is asked for
            from transformers import AutoTokenizer

            self._tok = from_hub(AutoTokenizer.from_pretrained, tokenizer, "KA tokenizer")

    def _ids(self, text: str) -> list[Any]:
        if self._tok is None:
            return text.split()
        return self._tok(text, add_special_tokens=False)["input_ids"]

    def __call__(self, text: str) -> int:
        """Number of tokens of ``text`` (no special tokens)."""
        return len(self._ids(text))

    def truncate(self, text: str, limit: int) -> tuple[str, bool]:
        """Cut ``text`` to at most ``limit`` tokens, at a character offset (never inside a character or an emoji
        sequence: :func:`surveyalign.documents.truncate_to_tokens`).

        Args:
            text: the text.
            limit: most tokens kept (>= 0).

        Returns:
            ``(text, was_cut)``.
        """
        ids = self._ids(text)
        if len(ids) <= limit:
            return text, False
        if self._tok is None:
            return " ".join(ids[:limit]), True
        return truncate_to_tokens(text, self._tok, limit), True


@dataclass
class CritKA:
    """A Crit-KA result for one survey.

    Attributes:
        text: the compressed content, year intervals in brackets ("" when it could not be made).
        blocks: per block ``{"years": [y_min, y_max], "n_papers", "tokens", "summary_ok", "summary"}``.
        tokens: tokens of ``text``.
        n_calls: LLM calls made now (not from the cache).
        cache_hits: calls answered from the cache.
        errors: one line per failed call (the block's interval or ``"compress"``).
        n_length_stops: answers that stopped at their token cap.
        cut_to_length: whether the compressed answer was cut to L tokens.
    """

    text: str
    blocks: list[dict[str, Any]] = field(default_factory=list)
    tokens: int = 0
    n_calls: int = 0
    cache_hits: int = 0
    errors: list[str] = field(default_factory=list)
    n_length_stops: int = 0
    cut_to_length: bool = False


class Summariser:
    """Runs the two Crit-KA stages with one backend, a call cache and the judge's token counter.

    Args:
        backend: a shared judge backend (``surveyalign.backends.load_backend(...)``).
        config: the KA config (prompts, ``summary_tokens``, ``length``, the summariser role's generation settings;
            each stage sets its own ``max_new_tokens``).
        counter: the judge tokenizer's :class:`TokenCounter`.
        cache: the ``calls.jsonl`` cache (``None``: no caching).
    """

    def __init__(self, backend: Backend, config: KAConfig, counter: TokenCounter,
                 cache: CallCache | None = None) -> None:
        self.backend = backend
        self.config = config
        self.counter = counter
        self.cache = cache
        self._base = config.summariser.generation if config.summariser is not None else GenerationSettings()

    def _run(self, stage: str, prompts: list[str], max_new_tokens: int, result: CritKA) -> list[str | None]:
        """Answer each prompt from the cache or the backend (one batch); ``None`` for a failed call."""
        settings = self._base.model_copy(update={"max_new_tokens": max_new_tokens})
        identity = backend_identity(self.backend)
        calls = [make_call(self.backend, settings, stage=stage, unit_id=stable_hash(prompt), namespace=KA_NAMESPACE,
                           messages=[{"role": "user", "content": prompt}], identity=identity) for prompt in prompts]
        answers: list[str | None] = [None] * len(prompts)
        for i, answer in enumerate(cached_generate(calls, self.cache, batch_size=max(1, len(calls)))):
            gen = answer.generation
            if answer.cached:
                result.cache_hits += 1
            else:
                result.n_calls += 1
            if gen.error:
                continue
            answers[i] = gen.text or ""
            result.n_length_stops += gen.finish_reason == "length"
        return answers

    def crit_ka(self, blocks: list[Block]) -> CritKA:
        """Summarise each block, then compress the timestamped summaries to ``config.length`` tokens.

        Args:
            blocks: temporal blocks from :func:`surveyalign.knowledge.ka.pack_blocks`.

        Returns:
            The :class:`CritKA` (empty text and an error line when every block summary failed or the
            compression call failed; the failures are kept, never hidden).
        """
        result = CritKA("")
        if not blocks:
            return result
        cfg = self.config
        prompts = [cfg.summary_prompt.format(first_year=b.first_year, last_year=b.last_year, papers=b.text,
                                             max_tokens=cfg.summary_tokens) for b in blocks]
        summaries = self._run("ka-summary", prompts, cfg.summary_tokens, result)
        notes = []
        for block, summary in zip(blocks, summaries, strict=True):
            ok = summary is not None and bool(summary.strip())
            result.blocks.append({"years": [block.first_year, block.last_year], "n_papers": len(block.nodes),
                                  "tokens": block.tokens, "summary_ok": ok, "summary": summary or ""})
            if ok:
                notes.append(f"[{block.first_year}-{block.last_year}] {' '.join(summary.split())}")
            else:
                result.errors.append(f"summary of block [{block.first_year}-{block.last_year}] failed")
        if not notes:
            return result
        compressed = self._run("ka-compress", [cfg.compress_prompt.format(summaries="\n".join(notes),
                                                                          length=cfg.length)], cfg.length, result)[0]
        if compressed is None or not compressed.strip():
            result.errors.append("compression call failed")
            return result
        text, result.cut_to_length = self.counter.truncate(compressed.strip(), cfg.length)
        result.text = text
        result.tokens = self.counter(text)
        return result

"""The LLM stages of Crit-KA (SurveyReview App. F.2): block summaries, then compression to length L.

Calls go through a shared judge backend and are cached in a ``calls.jsonl`` (:class:`surveyalign.judge.CallCache`,
via :func:`surveyalign.judge.cached_generate`) under a key made of the prompt's content hash, the backend's
identity (``describe()`` without operational settings such as concurrency), the namespace :data:`KA_NAMESPACE`
and the settings, so a re-run makes only the calls it does not have (and counts the hits).
Token counts use the judge's tokenizer (:class:`TokenCounter`).

Planning and the cost cap: :meth:`Summariser.plan` gives the calls :meth:`Summariser.crit_ka` would
make, without sending any (the summary calls with their real prompts; the compression call with its real prompt
once every summary is in the cache, else a bound: each missing summary stood in by ``summary_tokens`` tokens);
with a ``budget`` set, :meth:`Summariser.crit_ka` asks it before each stage (``before(calls) -> bool``: the calls
still to make, and for the summaries the compression bound too) and tells it what was answered (``after``).

Titles and abstracts from the citation graph, and the block summaries that go into the compression prompt, are
untrusted: their answer-format tokens are neutralised before a prompt
(:func:`surveyalign.documents.untrusted.neutralise`), and every answer is read by :func:`read_ka_answer` with
its prompt as the input: the summariser's own ``<think>`` block is dropped, a ``</think>`` or marker it quotes
from a title or abstract is neutralised and drops nothing.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from surveyalign.backends import Backend, GenerationSettings
from surveyalign.calls import (
    Call,
    CallCache,
    backend_identity,
    cached_generate,
    make_call,
    stable_hash,
)
from surveyalign.calls.budget import CostCapReached
from surveyalign.calls.spend import unanswered
from surveyalign.documents import truncate_to_tokens
from surveyalign.documents.untrusted import mask_quoted, neutralise
from surveyalign.knowledge.config import KAConfig
from surveyalign.knowledge.ka import Block
from surveyalign.models.paths import from_hub

__all__ = ["KA_NAMESPACE", "CritKA", "Summariser", "TokenCounter", "empty_answer", "ka_inputs", "read_ka_answer"]

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

    @property
    def tokenizer(self) -> Any | None:
        """The loaded ``transformers`` tokenizer (``None`` for ``"whitespace"``)."""
        return self._tok

    def filler(self, tokens: int) -> str:
        """A stand-in text of at most ``tokens`` tokens (about ``tokens``): what the plan puts where a text not
        written yet will be (a block summary, the Crit-KA text)."""
        return self.truncate(" ".join(["the"] * (2 * tokens)), tokens)[0]

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
        planned_calls: :meth:`Summariser.plan` only: the calls :meth:`Summariser.crit_ka` would make, answered
            or not (the compression call is a bound when ``stand_in``).
        stand_in: :meth:`Summariser.plan` only: some summary or the compression is not in the cache yet, so
            ``text`` is a stand-in of ``length`` tokens.
        neutralised: answer-format tokens neutralised in the summary prompts' titles and abstracts, per kind
            (:meth:`surveyalign.documents.untrusted.Neutralised.counts`).
    """

    text: str
    blocks: list[dict[str, Any]] = field(default_factory=list)
    tokens: int = 0
    n_calls: int = 0
    cache_hits: int = 0
    errors: list[str] = field(default_factory=list)
    n_length_stops: int = 0
    cut_to_length: bool = False
    planned_calls: list[Call] = field(default_factory=list)
    stand_in: bool = False
    neutralised: dict[str, int] = field(default_factory=dict)


_THINK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_OPEN_THINK = re.compile(r"<think>.*\Z", re.DOTALL | re.IGNORECASE)
_CLOSE_THINK = re.compile(r"\A.*</think>", re.DOTALL | re.IGNORECASE)


def ka_inputs(call: Call | None) -> tuple[str, ...]:
    """The untrusted input of a Crit-KA call: its user message (the template's own text carries no answer-format
    token, so only what came from the papers or the summaries can be quoted); ``()`` without a call."""
    messages = getattr(call, "messages", None) or ()
    return tuple(str(m.get("content") or "") for m in messages if m.get("role") == "user")


def read_ka_answer(text: str | None, untrusted: Sequence[str] | None = None) -> str:
    """The text a Crit-KA answer (a block summary or the compression) gives (SurveyReview App. F.2).

    Answer-format tokens the answer quotes from ``untrusted`` are neutralised first
    (:func:`surveyalign.documents.untrusted.mask_quoted`); then the summariser's own reasoning is dropped: every
    ``<think>...</think>`` block, an unclosed ``<think>`` to the end, and the text before a lone ``</think>``.

    Args:
        text: the raw answer (``None``: empty).
        untrusted: the prompt's input (:func:`ka_inputs`); ``None``: nothing counts as quoted.

    Returns:
        The answer's text, stripped (``""`` when nothing is left).
    """
    masked, _ = mask_quoted(text or "", untrusted)
    visible = _OPEN_THINK.sub("", _THINK.sub("", masked))
    return _CLOSE_THINK.sub("", visible).strip()


def empty_answer(call: Call, generation: Any) -> str | None:
    """The summariser's reader for the call layer: an answer with no text once read by :func:`read_ka_answer`
    (an empty summary is a failed block, an empty compression a failed Crit-KA; an answer that is all reasoning
    is empty) is asked again on a re-run, not replayed from the cache (``score --keep-failed`` keeps it); errors
    are the cache's own rule."""
    return None if read_ka_answer(generation.text, ka_inputs(call)) else "empty answer"


class Summariser:
    """Runs the two Crit-KA stages with one backend, a call cache and the judge's token counter.

    Args:
        backend: a shared judge backend (``surveyalign.backends.load_backend(...)``).
        config: the KA config (prompts, ``summary_tokens``, ``length``, the summariser role's generation settings;
            each stage sets its own ``max_new_tokens``).
        counter: the judge tokenizer's :class:`TokenCounter`.
        cache: the ``calls.jsonl`` cache (``None``: no caching).

    Attributes:
        budget: consulted before each stage's calls are sent (``score --max-cost``): ``before(calls) -> bool``
            (False: nothing is sent, :class:`~surveyalign.calls.budget.CostCapReached` is raised) and
            ``after(calls)`` once they are answered; ``None``: no cap.
    """

    def __init__(self, backend: Backend, config: KAConfig, counter: TokenCounter,
                 cache: CallCache | None = None) -> None:
        self.backend = backend
        self.config = config
        self.counter = counter
        self.cache = cache
        self._base = config.summariser.generation if config.summariser is not None else GenerationSettings()
        self.budget: Any = None
        self._identity: dict[str, Any] | None = None

    def _calls(self, stage: str, prompts: list[str], max_new_tokens: int) -> list[Call]:
        """The calls answering ``prompts`` (keys as the cache stores them)."""
        settings = self._base.model_copy(update={"max_new_tokens": max_new_tokens})
        if self._identity is None:
            self._identity = backend_identity(self.backend)
        return [make_call(self.backend, settings, stage=stage, unit_id=stable_hash(prompt), namespace=KA_NAMESPACE,
                          messages=[{"role": "user", "content": prompt}], identity=self._identity)
                for prompt in prompts]

    def _summary_calls(self, blocks: list[Block], result: CritKA | None = None) -> list[Call]:
        cfg = self.config
        papers = [neutralise(b.text) for b in blocks]
        if result is not None:
            for done in papers:
                for kind, n in done.counts().items():
                    result.neutralised[kind] = result.neutralised.get(kind, 0) + n
        return self._calls("ka-summary", [cfg.summary_prompt.format(
            first_year=b.first_year, last_year=b.last_year, papers=p.text, max_tokens=cfg.summary_tokens)
            for b, p in zip(blocks, papers, strict=True)], cfg.summary_tokens)

    def _compress_call(self, notes: list[str]) -> Call:
        cfg = self.config
        summaries = neutralise("\n".join(notes)).text
        return self._calls("ka-compress", [cfg.compress_prompt.format(summaries=summaries, length=cfg.length)],
                           cfg.length)[0]

    def _cached_text(self, call: Call) -> str | None:
        """The cached answer of ``call`` as :meth:`_run` would use it: ``None`` when it is still to make (absent, or
        failed and asked again), ``""`` for a kept failed answer."""
        if self.cache is None or unanswered(self.cache, [call], empty_answer):
            return None
        gen = self.cache.generation(call.key)
        return "" if gen.error else read_ka_answer(gen.text, ka_inputs(call))

    def _guard(self, calls: list[Call], what: str) -> None:
        """Ask the budget before sending ``calls``' unanswered ones (raise when they would pass the cap)."""
        if self.budget is None:
            return
        todo = unanswered(self.cache, calls, empty_answer) if self.cache is not None else list(calls)
        if todo and not self.budget.before(todo):
            raise CostCapReached(f"Crit-KA {what}: {len(todo)} call(s) not sent (the cost cap)")

    def plan(self, blocks: list[Block]) -> CritKA:
        """What :meth:`crit_ka` would do with ``blocks``, sending nothing.

        Returns:
            A :class:`CritKA` with ``planned_calls`` (the summary calls, then the compression call: its real prompt
            when every summary is cached, else a bound with ``summary_tokens`` stand-in tokens per missing
            summary), ``blocks`` (summaries read from the cache), and ``text``: the Crit-KA text when every call is
            answered in the cache, else (``stand_in``) a stand-in of ``length`` tokens; empty when there are no
            blocks or every summary failed.
        """
        result = CritKA("")
        if not blocks:
            return result
        cfg = self.config
        calls = self._summary_calls(blocks, result)
        notes = []
        for block, call in zip(blocks, calls, strict=True):
            summary = self._cached_text(call)
            result.stand_in |= summary is None
            if summary is None:
                summary = self.counter.filler(cfg.summary_tokens)
            ok = bool(summary.strip())
            result.blocks.append({"years": [block.first_year, block.last_year], "n_papers": len(block.nodes),
                                  "tokens": block.tokens, "summary_ok": ok, "summary": summary})
            if ok:
                notes.append(f"[{block.first_year}-{block.last_year}] {' '.join(summary.split())}")
        result.planned_calls = list(calls)
        if not notes:
            return result
        compress = self._compress_call(notes)
        result.planned_calls.append(compress)
        compressed = None if result.stand_in else self._cached_text(compress)
        if compressed is None:
            result.stand_in = True
            compressed = self.counter.filler(cfg.length)
        if compressed.strip():
            result.text, result.cut_to_length = self.counter.truncate(compressed.strip(), cfg.length)
            result.tokens = self.counter(result.text)
        return result

    def _run(self, stage: str, calls: list[Call], result: CritKA) -> list[str | None]:
        """Answer each call from the cache or the backend (one batch); ``None`` for a failed call."""
        answers: list[str | None] = [None] * len(calls)
        for i, answer in enumerate(cached_generate(calls, self.cache, batch_size=max(1, len(calls)),
                                                   check=empty_answer)):
            gen = answer.generation
            if answer.cached:
                result.cache_hits += 1
            else:
                result.n_calls += 1
            if gen.error:
                continue
            answers[i] = read_ka_answer(gen.text, ka_inputs(calls[i]))
            result.n_length_stops += gen.finish_reason == "length"
        if self.budget is not None:
            self.budget.after(calls)
        return answers

    def crit_ka(self, blocks: list[Block]) -> CritKA:
        """Summarise each block, then compress the timestamped summaries to ``config.length`` tokens.

        Args:
            blocks: temporal blocks from :func:`surveyalign.knowledge.ka.pack_blocks`.

        Returns:
            The :class:`CritKA` (empty text and an error line when every block summary failed or the
            compression call failed; the failures are kept, never hidden).

        Raises:
            CostCapReached: with a ``budget``, a stage's calls would pass the cap (nothing of that stage was sent;
                the summaries already answered stay in the cache).
        """
        result = CritKA("")
        if not blocks:
            return result
        cfg = self.config
        if self.budget is not None:  # the summaries and the bound of the compression that follows them
            self._guard(self.plan(blocks).planned_calls, "summaries")
        summaries = self._run("ka-summary", self._summary_calls(blocks, result), result)
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
        compress = self._compress_call(notes)
        self._guard([compress], "compression")
        compressed = self._run("ka-compress", [compress], result)[0]
        if compressed is None or not compressed.strip():
            result.errors.append("compression call failed")
            return result
        text, result.cut_to_length = self.counter.truncate(compressed.strip(), cfg.length)
        result.text = text
        result.tokens = self.counter(text)
        return result

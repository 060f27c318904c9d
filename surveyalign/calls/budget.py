"""Before the calls are sent: how many, how many tokens, what they cost and how long they take (``--plan``), and a
cost cap that stops sending when the projected total would pass it (``--max-cost``).

Pure bookkeeping over calls (anything with ``key``, ``dimension``, ``messages``); the caller says how to count a
call's prompt tokens (the judge's tokenizer; else the tokens per character learned from the answers so far
(:class:`TokenRate`); else 4 ASCII characters per token and 1 token per other character), how many completion
tokens to expect, which model answers it and whether it goes through a batch API. Prices come from
:mod:`surveyalign.calls.cost`.

Estimate of one call: ``prompt`` = the tokens the caller counts for its messages (0 for the second and later
samples of a prompt whose K samples share one request or prefill), ``completion`` = the expected answer length
(the mean of the answers already in the run's cache when there are some, else ``max_new_tokens``: an upper bound),
cost = :meth:`surveyalign.calls.cost.ModelPrice.cost` with no cached tokens (an upper bound when the provider
caches prompts). Time = calls x seconds per call / calls in flight, from the run's cached answers when it has
them; ``None`` (unknown) otherwise.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from surveyalign.calls.cost import PriceTable

__all__ = ["CallPlan", "CostCap", "CostCapReached", "TokenRate", "chars_per_token_count", "estimate_calls"]

#: Characters per token of the fallback count for ASCII text (English prose with BPE tokenizers: about 4).
CHARS_PER_TOKEN = 4.0
#: Tokens per message of the chat template's role markers (added to every count).
TOKENS_PER_MESSAGE = 4


def _chars(messages: Sequence[dict[str, Any]]) -> str:
    return "".join(str(m.get("content") or "") for m in messages)


def chars_per_token_count(messages: Sequence[dict[str, Any]]) -> int:
    """Approximate prompt tokens of chat ``messages`` when no tokenizer and no answer says better: ASCII
    characters / 4 and one token per other character (CJK, accented letters: BPE tokenizers spend about one
    token or more on each), rounded up, + 4 per message for the chat template's role markers."""
    text = _chars(messages)
    ascii_chars = sum(1 for ch in text if ord(ch) < 128)
    return int(-(-ascii_chars // CHARS_PER_TOKEN)) + (len(text) - ascii_chars) + TOKENS_PER_MESSAGE * len(messages)


class TokenRate:
    """Prompt tokens per character, learned from the answers a provider counted (their ``prompt_tokens``), for
    prompts counted without a tokenizer: the estimate of a CJK prompt follows the 1 token per character the
    answers show instead of staying at 4 characters per token.

    The rate is ``sum(prompt_tokens - 4 x messages) / sum(characters)`` over the observed answers (one per key;
    answers without a count, or counting 0 prompt tokens, e.g. a sample riding on another's prefill, are left
    out). With no answer observed yet :meth:`count` is :func:`chars_per_token_count`.

    Attributes:
        chars, tokens: the observed totals; answers: how many answers were observed.
    """

    def __init__(self) -> None:
        self.chars = 0
        self.tokens = 0
        self.answers = 0
        self._keys: set[str] = set()

    @property
    def rate(self) -> float | None:
        """Tokens per character (``None``: nothing observed yet)."""
        return self.tokens / self.chars if self.chars and self.tokens else None

    def observe(self, messages: Sequence[dict[str, Any]], prompt_tokens: int | None, key: str | None = None) -> None:
        """Learn from one answer: its messages and the prompt tokens the provider counted (``key``: an answer
        seen before under this key is not counted twice)."""
        self.observe_counts(len(_chars(messages)), len(messages), prompt_tokens, key)

    def observe_counts(self, chars: int, n_messages: int, prompt_tokens: int | None, key: str | None = None) -> None:
        """:meth:`observe` from the counts alone: ``chars`` characters of content in ``n_messages`` messages."""
        if not prompt_tokens or int(prompt_tokens) <= 0 or not chars or (key is not None and key in self._keys):
            return
        if key is not None:
            self._keys.add(key)
        self.chars += int(chars)
        self.tokens += max(0, int(prompt_tokens) - TOKENS_PER_MESSAGE * int(n_messages))
        self.answers += 1

    def learn_records(self, records: Any, stage: str | None = None) -> TokenRate:
        """Observe every answer of ``records`` (an iterable of ``calls.jsonl`` records, e.g. a ``CallCache``) that
        kept its prompt's ``prompt_chars`` / ``n_messages`` (written with each answer), of ``stage`` when given.
        The same records give the same rate however the calls are planned (whole or in chunks). Returns this rate."""
        for rec in records:
            if stage is not None and rec.get("stage") != stage:
                continue
            if rec.get("prompt_chars"):
                self.observe_counts(rec["prompt_chars"], rec.get("n_messages") or 1, rec.get("prompt_tokens"),
                                    rec.get("key"))
        return self

    def learn(self, records: Any, calls: Sequence[Any]) -> TokenRate:
        """Observe the answers of ``calls`` kept in ``records`` (a ``CallCache``: ``get(key)`` -> record with
        ``prompt_tokens``). Returns this rate."""
        for call in calls:
            record = records.get(call.key)
            if record is not None:
                self.observe(call.messages, record.get("prompt_tokens"), call.key)
        return self

    def count(self, messages: Sequence[dict[str, Any]]) -> int:
        """Estimated prompt tokens of ``messages``: characters x the learned rate, rounded up, + 4 per message;
        :func:`chars_per_token_count` before any answer was observed."""
        rate = self.rate
        if rate is None:
            return chars_per_token_count(messages)
        return int(-(-len(_chars(messages)) * rate // 1)) + TOKENS_PER_MESSAGE * len(messages)

    def describe(self) -> str:
        """How prompts without a tokenizer are counted (printed in the plan)."""
        if self.rate is None:
            return "4 ASCII characters per token, 1 per other character"
        return f"{self.rate:.3f} tokens per character, learned from {self.answers} answer(s)"


@dataclass
class CallPlan:
    """The estimate of a list of calls.

    Attributes:
        calls: calls to make; prompt_tokens, completion_tokens: estimated totals.
        cost_usd: estimated cost of the priced calls (``None``: no call has a price).
        unpriced_models: models without a price (local engines; their cost is GPU-hours, see ``seconds``).
        unverified_prices: listed ids whose price is marked ``unverified`` (the cost says so).
        seconds: estimated wall time (``None``: unknown, no answer timed yet).
        gpu_hours: estimated GPU-hours of the local engines on GPUs (``None``: none, or no answer timed yet).
        by_dimension: dimension -> ``{"calls", "prompt_tokens", "completion_tokens", "cost_usd"}``.
        token_source: how prompt tokens were counted (``"tokenizer"`` or ``"4 characters per token"``).
        completion_source: where the completion estimate comes from.
        prices_as_of: the price table's date.
    """

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = None
    unpriced_models: list[str] = field(default_factory=list)
    unverified_prices: list[str] = field(default_factory=list)
    seconds: float | None = None
    gpu_hours: float | None = None
    by_dimension: dict[str, dict[str, Any]] = field(default_factory=dict)
    token_source: str = "tokenizer"
    completion_source: str = "max_new_tokens (upper bound)"
    prices_as_of: str = ""

    @property
    def total_tokens(self) -> int:
        """prompt + completion tokens."""
        return self.prompt_tokens + self.completion_tokens

    def merged(self, other: CallPlan) -> CallPlan:
        """The plan of this plan's calls and ``other``'s together (two disjoint lists of calls planned against
        the same cache and prices: e.g. two chunks of units, ``surveyalign.evaluation.stream``).

        Counts and tokens add; a cost, time or GPU-hours figure is ``None`` only when it is ``None`` on both sides
        (no priced call, no timed answer); per-dimension rows add in first-seen order; unpriced models and unverified prices are
        the union; the token count says "4 characters per token" when either side counted that way; the
        completion source is that of the side with calls (this plan's when both have some).

        Returns:
            A new :class:`CallPlan`; neither input changes.
        """
        def plus(a: float | None, b: float | None) -> float | None:
            return None if a is None and b is None else (a or 0.0) + (b or 0.0)

        rows: dict[str, dict[str, Any]] = {d: dict(r) for d, r in self.by_dimension.items()}
        for dim, row in other.by_dimension.items():
            into = rows.setdefault(dim, {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0, "cost_usd": None})
            for key in ("calls", "prompt_tokens", "completion_tokens"):
                into[key] += row[key]
            into["cost_usd"] = plus(into["cost_usd"], row["cost_usd"])
        return CallPlan(
            calls=self.calls + other.calls, prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            cost_usd=plus(self.cost_usd, other.cost_usd),
            unpriced_models=sorted(set(self.unpriced_models) | set(other.unpriced_models)),
            unverified_prices=sorted(set(self.unverified_prices) | set(other.unverified_prices)),
            seconds=plus(self.seconds, other.seconds), gpu_hours=plus(self.gpu_hours, other.gpu_hours),
            by_dimension=rows,
            token_source=other.token_source if self.token_source == "tokenizer" else self.token_source,
            completion_source=other.completion_source if other.calls and not self.calls else self.completion_source,
            prices_as_of=self.prices_as_of or other.prices_as_of)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready copy with ``total_tokens``."""
        from dataclasses import asdict

        out = asdict(self)
        out["total_tokens"] = self.total_tokens
        if self.cost_usd is not None:
            out["cost_usd"] = round(self.cost_usd, 6)
        if self.seconds is not None:
            out["seconds"] = round(self.seconds, 6)
        if self.gpu_hours is not None:
            out["gpu_hours"] = round(self.gpu_hours, 6)
        for row in out["by_dimension"].values():  # to the micro-dollar, as the total (sums in another order agree)
            if row["cost_usd"] is not None:
                row["cost_usd"] = round(row["cost_usd"], 6)
        return out

    def lines(self, *, spent_usd: float | None = None, cached_calls: int = 0) -> list[str]:
        """Printable lines: totals, the cost (with what is already spent in the run: every sent attempt), time,
        GPU-hours (when some), then per dimension. With an unpriced model the headline cost says it is unknown
        and names the model(s); the sum of the priced calls is shown as partial."""
        cost = "no price (local engine: GPU time only)" if self.cost_usd is None else f"${self.cost_usd:,.4f}"
        if self.cost_usd is not None and self.unverified_prices:
            from surveyalign.calls.cost import UNVERIFIED

            cost += f" {UNVERIFIED}: {', '.join(self.unverified_prices)}"
        if self.cost_usd is not None and self.unpriced_models:  # a partial sum is never the headline
            cost = f"unknown: no price for {', '.join(self.unpriced_models)}; the priced calls alone: {cost}"
        out = [f"plan: {self.calls} call(s) to make ({cached_calls} already answered in the run folder)",
               (f"  tokens: {self.prompt_tokens:,} prompt ({self.token_source}) + {self.completion_tokens:,} "
               f"completion ({self.completion_source}) = {self.total_tokens:,}"),
               f"  estimated cost: {cost}" + (f" (prices as of {self.prices_as_of})" if self.prices_as_of else "")]
        if spent_usd:
            out[-1] += f"; already spent in this run: ${spent_usd:,.4f}"
        if self.unpriced_models:
            out.append(f"  no price for: {', '.join(self.unpriced_models)} (add them with --prices FILE)")
        out.append("  estimated time: " + ("unknown (no answer timed yet in this run)" if self.seconds is None
                                           else f"{self.seconds / 60:,.1f} min"))
        if self.gpu_hours:
            out.append(f"  estimated GPU-hours: {self.gpu_hours:,.4f} (local engines on GPUs)")
        for dim, row in self.by_dimension.items():
            c = "-" if row["cost_usd"] is None else f"${row['cost_usd']:,.4f}"
            out.append(f"  {dim}: {row['calls']} call(s), {row['prompt_tokens']:,} + {row['completion_tokens']:,} "
                       f"tokens, {c}")
        return out


def estimate_calls(calls: Sequence[Any], *, prompt_tokens: Callable[[Any], int],
                   completion_tokens: Callable[[Any], int], prices: PriceTable,
                   model_of: Callable[[Any], str | None], batch_of: Callable[[Any], bool] = lambda call: False,
                   seconds_per_call: float | None = None, in_flight: int = 1,
                   token_source: str = "tokenizer", completion_source: str = "max_new_tokens (upper bound)"
                   ) -> CallPlan:
    """Estimate calls, tokens, cost and time of ``calls`` before sending them.

    Args:
        calls: the calls (grouped by ``dimension``, else ``namespace``: the judge's dimension, ``"rqs"``,
            ``"synthesis"``; and whatever the callables read).
        prompt_tokens: billed prompt tokens of a call (>= 0).
        completion_tokens: expected completion tokens of a call (>= 0).
        prices: the price table; model_of: the model answering a call; batch_of: whether it goes through a batch
            API (batch prices).
        seconds_per_call: mean seconds of one call in this run so far (``None``: unknown).
        in_flight: calls answered at once (the backend's concurrency or batch size).
        token_source, completion_source: how the counts were made (printed).

    Returns:
        :class:`CallPlan`.
    """
    plan = CallPlan(token_source=token_source, completion_source=completion_source, prices_as_of=prices.as_of)
    unpriced: set[str] = set()
    unverified: set[str] = set()
    found: dict[str | None, Any] = {}
    for call in calls:
        model = model_of(call)
        if model not in found:
            hit = prices.lookup(model)
            found[model] = hit[1] if hit else None
            if hit is None:
                unpriced.add(model or "unknown")
            elif hit[1].unverified:
                unverified.add(hit[0])
        p, c = int(prompt_tokens(call)), int(completion_tokens(call))
        cost = found[model].cost(p, c, batch=batch_of(call)) if found[model] is not None else None
        group = getattr(call, "dimension", None) or getattr(call, "namespace", None) or "-"
        row = plan.by_dimension.setdefault(str(group),
                                           {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0, "cost_usd": None})
        for target in (row, None):
            if target is None:
                plan.calls += 1
                plan.prompt_tokens += p
                plan.completion_tokens += c
                if cost is not None:
                    plan.cost_usd = (plan.cost_usd or 0.0) + cost
            else:
                target["calls"] += 1
                target["prompt_tokens"] += p
                target["completion_tokens"] += c
                if cost is not None:
                    target["cost_usd"] = (target["cost_usd"] or 0.0) + cost
    plan.unpriced_models = sorted(unpriced)
    plan.unverified_prices = sorted(unverified)
    if seconds_per_call is not None and calls:
        plan.seconds = len(calls) * seconds_per_call / max(1, in_flight)
    return plan


class CostCapReached(RuntimeError):
    """Raised by a caller that consulted a :class:`CostCap` and was told not to send: the run stops there, what
    was answered is kept, and the same command with a higher cap continues."""


class CostCap:
    """Sends calls in chunks while the projected total stays under a cap (``--max-cost``).

    The projection before each chunk is: USD already spent in the run (every attempt in its cache, at their counted
    tokens: earlier runs included) + USD counted for the answers of this invocation so far + the estimate of the
    next chunk. A chunk that would pass the cap is not sent, and once one was held back nothing after it is sent
    either (a cheaper later unit never goes ahead of it, so a re-run with a higher cap continues in order); what
    was sent stays in the cache. With a :class:`TokenRate` (``rate``), each answer's counted prompt tokens
    (:meth:`observe`) correct the estimate of the calls after it.

    Args:
        cap_usd: the cap in USD (> 0).
        spent_usd: USD already spent in the run before this invocation.
        estimate: estimated USD of one call.
        rate: the tokens-per-character rate ``estimate`` counts prompts with (``None``: it learns nothing).

    Attributes:
        spent_usd: spent so far (before + this invocation's counted answers).
        stopped: True once a chunk was held back.
        held_back: calls not sent because of the cap (over every walk).
    """

    def __init__(self, cap_usd: float, spent_usd: float, estimate: Callable[[Any], float],
                 rate: TokenRate | None = None) -> None:
        if cap_usd <= 0:
            raise ValueError(f"--max-cost must be > 0 USD, got {cap_usd}")
        self.cap_usd = float(cap_usd)
        self.spent_usd = float(spent_usd)
        self.estimate = estimate
        self.rate = rate
        self.stopped = False
        self.held_back = 0

    def observe(self, call: Any, prompt_tokens: int | None) -> None:
        """Learn tokens per character from one answer of ``call`` (its counted prompt tokens), when a rate is
        set."""
        if self.rate is not None:
            self.rate.observe(call.messages, prompt_tokens, getattr(call, "key", None))

    def add(self, cost_usd: float | None) -> None:
        """Count the cost of one answer of this invocation (``None``: unpriced, counts 0)."""
        self.spent_usd += cost_usd or 0.0

    def chunks(self, calls: Sequence[Any], size: int) -> Any:
        """Yield chunks of ``calls`` (``size`` each; the samples of one unit are never split) while
        ``spent + estimate(chunk) <= cap``; the first chunk that would pass stops the iteration (``stopped``).

        Callers must :meth:`add` each answer's cost before asking for the next chunk. Nothing is yielded once the
        cap has stopped a walk (:attr:`stopped`).
        """
        if self.stopped:
            self.held_back += len(calls)
            return
        units: dict[tuple[str, str], list[Any]] = {}
        for call in calls:
            units.setdefault((str(getattr(call, "unit_id", "")), str(getattr(call, "stage", ""))), []).append(call)
        groups = list(units.values())
        i = sent = 0
        while i < len(groups):
            chunk: list[Any] = []
            while i < len(groups) and (not chunk or len(chunk) + len(groups[i]) <= size):
                chunk += groups[i]
                i += 1
            projected = self.spent_usd + sum(self.estimate(c) for c in chunk)
            if projected > self.cap_usd:
                # a smaller step: the units of this chunk one by one, as long as they fit
                fitting: list[Any] = []
                total = self.spent_usd
                for group in _regroup(chunk):
                    cost = sum(self.estimate(c) for c in group)
                    if total + cost > self.cap_usd:
                        break
                    fitting += group
                    total += cost
                self.stopped = True
                self.held_back += len(calls) - sent - len(fitting)
                if fitting:
                    yield fitting
                return
            sent += len(chunk)
            yield chunk

    def projected_total(self, remaining: Sequence[Any]) -> float:
        """spent + the estimate of ``remaining`` calls (for the stop message)."""
        return self.spent_usd + sum(self.estimate(c) for c in remaining)

    def allows(self, calls: Sequence[Any], extra_usd: float = 0.0) -> bool:
        """Whether ``calls`` (one unit's samples, sent together) and ``extra_usd`` more fit under the cap; when
        not, nothing is sent and :attr:`stopped` is set (callers stop there: the answers so far are kept). Once
        stopped, nothing fits any more (the walk goes in order)."""
        if self.stopped:
            return False
        if self.spent_usd + sum(self.estimate(c) for c in calls) + extra_usd <= self.cap_usd:
            return True
        self.stopped = True
        return False

    def stop_message(self, left: Sequence[Any], stage: str, kept_in: object) -> str:
        """The one-line message of a run stopped by the cap: what was spent, what is left (``left``: the calls
        not answered), where the answers are kept, and the cap that finishes it."""
        projected = self.projected_total(left)
        return (f"stopped at the cost cap: --max-cost {self.cap_usd:g} USD would be passed ({stage} stage: "
                f"${self.spent_usd:,.4f} spent, {len(left)} call(s) left, about ${projected:,.4f} in all); the "
                f"answers so far are kept in {kept_in}; run again with --max-cost "
                f"{max(projected * 1.1, self.cap_usd):.2f} or more to finish (the estimate assumes answers of "
                "max_new_tokens for a stage with no answer yet, an upper bound; a later run uses the mean answer "
                "length so far)")


def _regroup(chunk: list[Any]) -> list[list[Any]]:
    groups: dict[tuple[str, str], list[Any]] = {}
    for call in chunk:
        groups.setdefault((str(getattr(call, "unit_id", "")), str(getattr(call, "stage", ""))), []).append(call)
    return list(groups.values())

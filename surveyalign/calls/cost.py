"""Tokens and money of LLM calls: the dated price table (``configs/prices.yaml``) and token -> USD arithmetic.

Pure functions over call records (the lines of ``RUN_DIR/calls.jsonl``): nothing here sends a request. A record
counts ``prompt_tokens``, ``completion_tokens``, ``cached_tokens`` (prompt tokens the provider served from its
prompt cache), ``cache_write_tokens`` (prompt tokens it wrote to that cache: Anthropic bills them) and, for provider
batch calls, ``batch_id``. The cost of one call, in USD, is::

    ((prompt - cached - written) * input + cached * cached_input + written * cache_write + completion * output) / 1e6

with the batch prices (``batch_input`` / ``batch_output``; cache reads and writes get the same discount as input,
as Anthropic documents for Message Batches) when the call went through a batch API. Prices are per million tokens. Local engines have no token price: their cost is
GPU-hours (wall seconds x GPUs / 3600), priced only when the table names the GPU's hourly rate.

Summaries (:func:`summarize_costs`) group calls per dimension, per judge (model) and in total, and give the cost
per 1,000 units (a unit is one (review, dimension) item, whatever its K samples).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["PRICE_FIELDS", "UNVERIFIED", "ModelPrice", "PriceTable", "TokenTotals", "call_cost", "cost_lines", "default_prices_path",
           "gpu_hours", "load_prices", "summarize_costs", "uncached_cost"]

#: Fields of one model's entry, USD per million tokens; ``input`` and ``output`` are required. An entry may also
#: say ``unverified: true`` (its prices were not confirmed on the provider's own page).
PRICE_FIELDS = ("input", "cached_input", "output", "batch_input", "batch_output", "cache_write")
#: Printed after every cost that uses a price marked ``unverified: true``.
UNVERIFIED = "(unverified price)"


def default_prices_path() -> Path:
    """The shipped table: ``surveyalign/resources/prices.yaml`` (a link to ``configs/prices.yaml``, copied into a
    wheel)."""
    from surveyalign.paths import resource_path

    return resource_path("prices.yaml")


@dataclass(frozen=True)
class ModelPrice:
    """One model's prices in USD per million tokens (``None``: not offered; the standard price applies).

    Attributes:
        input: uncached prompt tokens (>= 0).
        output: completion tokens, reasoning included (>= 0).
        cached_input: prompt tokens read from the provider's prompt cache (default: ``input``).
        cache_write: prompt tokens written to the provider's prompt cache (Anthropic: 1.25x ``input`` for 5-minute
            entries; default: ``input``, as OpenAI bills no write).
        batch_input, batch_output: through the provider's batch API (default: ``input`` / ``output``).
        unverified: the table's ``unverified: true``: the price was not confirmed on the provider's own page;
            every cost printed with it says "(unverified price)".
    """

    input: float
    output: float
    cached_input: float | None = None
    batch_input: float | None = None
    batch_output: float | None = None
    unverified: bool = False
    cache_write: float | None = None

    def cost(self, prompt_tokens: int, completion_tokens: int, cached_tokens: int = 0, *, batch: bool = False,
             cache_write_tokens: int = 0) -> float:
        """USD of one call (or of summed counts).

        Args:
            prompt_tokens: all prompt tokens, cached ones included (>= 0).
            completion_tokens: generated tokens (>= 0).
            cached_tokens: how many of ``prompt_tokens`` were cache reads (0 <= cached <= prompt).
            batch: the call went through a batch API.
            cache_write_tokens: how many of ``prompt_tokens`` were written to the cache (cached + written <= prompt).

        Returns:
            The cost in USD (>= 0).

        Raises:
            ValueError: a negative count or more cached and written than prompt tokens.
        """
        if min(prompt_tokens, completion_tokens, cached_tokens, cache_write_tokens) < 0 \
                or cached_tokens + cache_write_tokens > prompt_tokens:
            raise ValueError(f"token counts must be >= 0 with cached <= prompt (cached + written), got prompt={prompt_tokens} "
                             f"completion={completion_tokens} cached={cached_tokens} written={cache_write_tokens}")
        in_rate, out_rate = self.input, self.output
        cached_rate = self.input if self.cached_input is None else self.cached_input
        write_rate = self.input if self.cache_write is None else self.cache_write
        if batch:
            in_rate = self.input if self.batch_input is None else self.batch_input
            out_rate = self.output if self.batch_output is None else self.batch_output
            discount = in_rate / self.input if self.input else 1.0  # the batch discount applies to cache reads/writes
            cached_rate *= discount
            write_rate *= discount
        fresh = prompt_tokens - cached_tokens - cache_write_tokens
        return (fresh * in_rate + cached_tokens * cached_rate + cache_write_tokens * write_rate
                + completion_tokens * out_rate) / 1e6


@dataclass(frozen=True)
class PriceTable:
    """A dated price table.

    Attributes:
        as_of: the date the prices were read (``YYYY-MM-DD``).
        currency: ``"USD"``.
        models: model id -> :class:`ModelPrice`.
        gpu_hour_usd: GPU name (``"H100"``) -> USD per GPU-hour, for local engines.
        sources: where the prices were read.
        files: the files merged into this table, in order.
    """

    as_of: str
    currency: str
    models: dict[str, ModelPrice]
    gpu_hour_usd: dict[str, float] = field(default_factory=dict)
    sources: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)

    def lookup(self, model: str | None) -> tuple[str, ModelPrice] | None:
        """The price entry of ``model``: the exact id, else the id after a ``provider/`` prefix, else the longest
        listed id that ``model`` starts with followed by ``-`` (dated snapshots: ``claude-opus-4-5-20251101``).

        Args:
            model: a model id as sent to the API (``None`` or ``""``: no model).

        Returns:
            ``(listed id, price)``, or ``None`` when the table has no price for it (a local engine).
        """
        if not model:
            return None
        for name in (model, model.rsplit("/", 1)[-1]):
            if name in self.models:
                return name, self.models[name]
        name = model.rsplit("/", 1)[-1]
        best = max((k for k in self.models if name.startswith(k + "-")), key=len, default=None)
        return (best, self.models[best]) if best else None

    def describe(self) -> dict[str, Any]:
        """``{"as_of", "currency", "files"}`` for run records and report footers."""
        return {"as_of": self.as_of, "currency": self.currency, "files": list(self.files)}


def _read(path: Path) -> dict[str, Any]:
    from surveyalign.yamlconfig import read_yaml_mapping

    return read_yaml_mapping(path, "price table")


def _model_price(source: str, name: str, entry: Any) -> ModelPrice:
    if not isinstance(entry, Mapping):
        raise ValueError(f"{source}: models.{name}: expected a mapping of {', '.join(PRICE_FIELDS)}")  # noqa: TRY004
    unknown = sorted(set(entry) - set(PRICE_FIELDS) - {"unverified"})
    if unknown:
        raise ValueError(f"{source}: models.{name}: unknown field(s) {', '.join(unknown)}; "
                         f"known: {', '.join(PRICE_FIELDS)}, unverified")
    values: dict[str, float | None] = {}
    for key in PRICE_FIELDS:
        value = entry.get(key)
        if value is None:
            if key in ("input", "output"):
                raise ValueError(f"{source}: models.{name}.{key}: required (USD per million tokens)")
            values[key] = None
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            raise ValueError(f"{source}: models.{name}.{key}: expected a number >= 0, got {value!r}")
        values[key] = float(value)
    flag = entry.get("unverified", False)
    if not isinstance(flag, bool):
        raise ValueError(f"{source}: models.{name}.unverified: expected true or false, got {flag!r}")  # noqa: TRY004
    return ModelPrice(**values, unverified=flag)  # type: ignore[arg-type]


def load_prices(path: str | os.PathLike | None = None, *, override: str | os.PathLike | None = None) -> PriceTable:
    """Read a price table, and merge a user's file over it model by model.

    Args:
        path: the base table (default :func:`default_prices_path`, the shipped ``configs/prices.yaml``).
        override: a user's table of the same shape; its models and GPU rates replace or add to the base's, and
            its ``as_of`` / ``currency`` win when given.

    Returns:
        The merged :class:`PriceTable`.

    Raises:
        FileNotFoundError: a file does not exist.
        ValueError: one-line messages naming the file and the field: not a mapping, a missing ``input`` /
            ``output``, a negative or non-numeric price, an unknown field, two currencies.
    """
    files = [Path(path) if path is not None else default_prices_path()]
    if override is not None:
        files.append(Path(override))
    as_of, currency = "", ""
    models: dict[str, ModelPrice] = {}
    gpu: dict[str, float] = {}
    sources: list[str] = []
    for file in files:
        if not file.is_file():
            raise FileNotFoundError(f"price table {file}: no such file")
        raw = _read(file)
        unknown = sorted(set(raw) - {"as_of", "currency", "sources", "models", "gpu_hour_usd"})
        if unknown:
            raise ValueError(f"{file}: unknown key(s) {', '.join(unknown)}; known: as_of, currency, sources, "
                             "models, gpu_hour_usd")
        cur = str(raw.get("currency") or currency or "USD")
        if currency and cur != currency:
            raise ValueError(f"{file}: currency {cur} differs from {currency} of {files[0]}")
        currency = cur
        as_of = str(raw.get("as_of") or as_of)
        sources += [str(s) for s in raw.get("sources") or []]
        entries = raw.get("models") or {}
        if not isinstance(entries, Mapping):
            raise ValueError(f"{file}: models: expected a mapping of model id -> prices")  # noqa: TRY004
        for name, entry in entries.items():
            models[str(name)] = _model_price(str(file), str(name), entry)
        rates = raw.get("gpu_hour_usd") or {}
        if not isinstance(rates, Mapping):
            raise ValueError(f"{file}: gpu_hour_usd: expected a mapping of GPU name -> USD per hour")  # noqa: TRY004
        for name, rate in rates.items():
            if isinstance(rate, bool) or not isinstance(rate, (int, float)) or rate < 0:
                raise ValueError(f"{file}: gpu_hour_usd.{name}: expected a number >= 0, got {rate!r}")
            gpu[str(name)] = float(rate)
    if not as_of:
        raise ValueError(f"{files[0]}: as_of: required (the date the prices were read, YYYY-MM-DD)")
    return PriceTable(as_of=as_of, currency=currency, models=models, gpu_hour_usd=gpu, sources=sources,
                      files=[str(f) for f in files])


def call_cost(record: Mapping[str, Any], price: ModelPrice | None) -> float | None:
    """USD of one ``calls.jsonl`` record (batch prices when it has a ``batch_id``).

    Args:
        record: a call record with ``prompt_tokens`` / ``completion_tokens`` (missing: 0) and optionally
            ``cached_tokens`` and ``batch_id``.
        price: the model's price; ``None`` (not in the table) gives ``None``.

    Returns:
        The cost in USD, or ``None`` without a price.
    """
    if price is None:
        return None
    return price.cost(int(record.get("prompt_tokens") or 0), int(record.get("completion_tokens") or 0),
                      int(record.get("cached_tokens") or 0), batch=bool(record.get("batch_id")),
                      cache_write_tokens=int(record.get("cache_write_tokens") or 0))


def uncached_cost(record: Mapping[str, Any], price: ModelPrice | None) -> float | None:
    """USD the call of ``record`` would have cost without the provider's prompt cache (every prompt token at the
    input price; batch prices as the call had them): the baseline of the summary's cache saving."""
    if price is None:
        return None
    return price.cost(int(record.get("prompt_tokens") or 0), int(record.get("completion_tokens") or 0),
                      batch=bool(record.get("batch_id")))


@dataclass
class TokenTotals:
    """Summed counts of a group of calls.

    Attributes:
        calls: calls counted; batch_calls: how many of them went through a batch API.
        prompt_tokens, completion_tokens, cached_tokens: summed token counts.
        cache_write_tokens: prompt tokens written to the provider's prompt cache; cache_hits: calls that read some.
        uncached_cost_usd: what the same calls would have cost without the prompt cache (``cache_saving_usd`` in
            :meth:`to_dict` is the difference).
        calls_without_usage: calls whose record has no token counts (failed calls, or made before counting).
        cost_usd: summed cost; ``None`` when no call of the group has a price.
        units: units of the group (for the cost per 1,000 units).
        retries: how many of ``calls`` were a failed answer asked again (each sent attempt was paid, so it is
            counted in ``calls``, the tokens and the cost).
    """

    calls: int = 0
    batch_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    calls_without_usage: int = 0
    cost_usd: float | None = None
    units: int = 0
    retries: int = 0
    cache_write_tokens: int = 0
    cache_hits: int = 0
    uncached_cost_usd: float | None = None

    def add(self, record: Mapping[str, Any], cost: float | None, retry: bool = False,
            uncached: float | None = None) -> None:
        """Count one call record with its cost (``None``: unpriced); ``retry``: it re-asked a failed answer."""
        self.calls += 1
        self.retries += bool(retry)
        self.batch_calls += bool(record.get("batch_id"))
        if record.get("prompt_tokens") is None and record.get("completion_tokens") is None:
            self.calls_without_usage += 1
        self.prompt_tokens += int(record.get("prompt_tokens") or 0)
        self.completion_tokens += int(record.get("completion_tokens") or 0)
        self.cached_tokens += int(record.get("cached_tokens") or 0)
        self.cache_write_tokens += int(record.get("cache_write_tokens") or 0)
        self.cache_hits += bool(record.get("cached_tokens"))
        if cost is not None:
            self.cost_usd = (self.cost_usd or 0.0) + cost
        if uncached is not None:
            self.uncached_cost_usd = (self.uncached_cost_usd or 0.0) + uncached

    @property
    def cost_per_1000_units(self) -> float | None:
        """USD per 1,000 units (``None`` without a cost or units)."""
        if self.cost_usd is None or not self.units:
            return None
        return self.cost_usd * 1000.0 / self.units

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready copy, costs rounded to 1e-6 USD, with ``cost_per_1000_units``."""
        out = asdict(self)
        cache_fields = ("cache_write_tokens", "cache_hits", "uncached_cost_usd")
        if not (self.cached_tokens or self.cache_write_tokens):  # the prompt-cache fields only where it was used
            return self._plain({k: v for k, v in out.items() if k not in cache_fields})
        out = self._plain(out)
        out["uncached_cost_usd"] = None if self.uncached_cost_usd is None else round(self.uncached_cost_usd, 6)
        out["cache_saving_usd"] = (None if self.cost_usd is None or self.uncached_cost_usd is None
                                   else round(self.uncached_cost_usd - self.cost_usd, 6))
        return out

    def _plain(self, out: dict[str, Any]) -> dict[str, Any]:
        out["total_tokens"] = self.prompt_tokens + self.completion_tokens
        out["cost_usd"] = None if self.cost_usd is None else round(self.cost_usd, 6)
        per = self.cost_per_1000_units
        out["cost_per_1000_units"] = None if per is None else round(per, 6)
        return out


def gpu_hours(wall_seconds: float, gpus: int) -> float:
    """GPU-hours of a local engine: ``wall_seconds * gpus / 3600``.

    Raises:
        ValueError: negative seconds or fewer than 1 GPU.
    """
    if wall_seconds < 0 or gpus < 1:
        raise ValueError(f"wall_seconds must be >= 0 and gpus >= 1, got {wall_seconds} and {gpus}")
    return wall_seconds * gpus / 3600.0


def summarize_costs(records: Iterable[Mapping[str, Any]], prices: PriceTable, *,
                    model_of: Callable[[Mapping[str, Any]], str | None],
                    units_per_dimension: Mapping[str, int] | None = None,
                    dimension_of: Callable[[Mapping[str, Any]], str | None] | None = None) -> dict[str, Any]:
    """Tokens and cost of call records per dimension, per judge and in total.

    Args:
        records: ``calls.jsonl`` records (``dimension``, token counts, ``batch_id``); every record is one sent
            attempt (:meth:`surveyalign.calls.CallCache.attempts`): a record whose key came earlier in ``records``
            counts as a retry.
        prices: the price table.
        model_of: the model id that answered a record (e.g. from its ``stage`` and ``dimension`` through the run's
            backends); ``None``: unknown (counted, unpriced).
        units_per_dimension: units of the run per dimension (for the cost per 1,000 units).
        dimension_of: the dimension a record counts under; default its ``dimension``, else its ``namespace``.

    Returns:
        ``{"prices": {...}, "by_dimension": {dim: totals}, "by_judge": {model: totals + "priced_as"},
        "total": totals, "unpriced_models": [...], "unverified_prices": [listed ids marked ``unverified``]}`` where
        totals are :meth:`TokenTotals.to_dict` dicts.
    """
    units = dict(units_per_dimension or {})
    by_dim: dict[str, TokenTotals] = {}
    by_judge: dict[str, TokenTotals] = {}
    priced_as: dict[str, str | None] = {}
    total = TokenTotals(units=sum(units.values()))
    seen: set[Any] = set()
    for record in records:
        key = record.get("key")
        retry = key is not None and key in seen
        seen.add(key)
        model = model_of(record) or "unknown"
        if model not in priced_as:
            hit = prices.lookup(model)
            priced_as[model] = hit[0] if hit else None
        price = prices.models[priced_as[model]] if priced_as[model] else None
        cost = call_cost(record, price)
        base = uncached_cost(record, price)
        dim = str((dimension_of(record) if dimension_of else None) or record.get("dimension")
                  or record.get("namespace") or "-")
        by_dim.setdefault(dim, TokenTotals(units=units.get(dim, 0))).add(record, cost, retry, base)
        by_judge.setdefault(model, TokenTotals(units=total.units)).add(record, cost, retry, base)
        total.add(record, cost, retry, base)
    return {
        "prices": prices.describe(),
        "by_dimension": {d: t.to_dict() for d, t in by_dim.items()},
        "by_judge": {m: {**t.to_dict(), "priced_as": priced_as[m],
                         "unverified_price": bool(priced_as[m] and prices.models[priced_as[m]].unverified)}
                     for m, t in by_judge.items()},
        "total": total.to_dict(),
        "unpriced_models": sorted(m for m, p in priced_as.items() if p is None),
        "unverified_prices": sorted({p for p in priced_as.values() if p and prices.models[p].unverified}),
    }


def cost_lines(summary: Mapping[str, Any]) -> list[str]:
    """Printable lines of a :func:`summarize_costs` dict (total, per dimension, per judge, GPU-hours when the
    dict has ``gpu_hours``), for run summaries, ``report`` and its HTML page."""
    total = summary["total"]
    cost = "no price" if total["cost_usd"] is None else f"${total['cost_usd']:,.4f}"
    per = total.get("cost_per_1000_units")
    if total["cost_usd"] is not None and summary.get("unverified_prices"):
        cost += f" {UNVERIFIED}"
    lines = [f"tokens: {total['prompt_tokens']:,} prompt + {total['completion_tokens']:,} completion over "
             f"{total['calls']} call(s) ({total['batch_calls']} in provider batches); cost {cost}"
             + (f" = ${per:,.2f} per 1,000 units" if per is not None else "")
             + f" (prices as of {summary['prices']['as_of']})"]
    if total.get("retries"):
        lines[0] += f"; {total['retries']} of the calls were retries of a failed answer (each attempt is paid)"
    if total.get("cached_tokens") or total.get("cache_write_tokens"):
        share = total["cached_tokens"] / total["prompt_tokens"] if total["prompt_tokens"] else 0.0
        saved = total.get("cache_saving_usd")
        lines.append(f"  prompt cache: {total['cache_hits']} of {total['calls']} call(s) read from it, "
                     f"{total['cached_tokens']:,} of {total['prompt_tokens']:,} prompt tokens ({share:.1%}) served "
                     f"from cache, {total.get('cache_write_tokens', 0):,} written"
                     + ("" if saved is None else f"; saved ${saved:,.4f} of ${total['uncached_cost_usd']:,.4f} "
                        "without it"))
    if total.get("calls_without_usage"):
        lines[0] += f"; {total['calls_without_usage']} call(s) without a token count"
    dims = [f"{d} {t['prompt_tokens'] + t['completion_tokens']:,} tokens"
            + ("" if t["cost_usd"] is None else f" ${t['cost_usd']:,.4f}") for d, t in summary["by_dimension"].items()]
    if dims:
        lines.append("  per dimension: " + "; ".join(dims))
    judges = [f"{m} {t['calls']} call(s)" + ("" if t["cost_usd"] is None else f" ${t['cost_usd']:,.4f}")
              + (f" {UNVERIFIED}" if t.get("unverified_price") else "") for m, t in summary["by_judge"].items()]
    if judges:
        lines.append("  per judge: " + "; ".join(judges))
    if summary.get("gpu_hours"):
        lines.append("  GPU-hours of local engines: " + "; ".join(f"{m} {h:.4f}" for m, h in summary["gpu_hours"].items()))
    return lines

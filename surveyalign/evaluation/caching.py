"""``--plan`` with and without the provider's prompt cache and batch API: tokens and USD per dimension and per
1,000 surveys, before anything is sent.

For the judge calls still to make, four prices (``configs/prices.yaml``): the list price (every prompt token at
the input price, direct calls), the batch API alone, the prompt cache alone, and both. Cache reads and writes are
predicted by :func:`surveyalign.calls.prefix.predict_cache` from the backend's own rules (its ``prompt_cache()``:
Anthropic breakpoints with billed writes, OpenAI's automatic prefixes) with the calls in the order the call stage
sends them (a prefix group together, its first call first). The scenario this run takes (its backend's cache, its
``batch`` switch) is marked; after the run, the summary's ``prompt cache`` line gives what was read and saved.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from surveyalign.calls import Call
from surveyalign.calls.cost import PriceTable
from surveyalign.calls.executor import cache_rules
from surveyalign.calls.prefix import predict_cache, shared_text
from surveyalign.calls.spend import PromptCounter, answer_history, batched

__all__ = ["SCENARIOS", "cache_plan", "cache_plan_lines", "merge_cache_plans"]

#: The priced scenarios, in print order: (name, prompt cache, batch API).
SCENARIOS: tuple[tuple[str, bool, bool], ...] = (("list", False, False), ("batch", False, True),
                                                 ("cache", True, False), ("cache+batch", True, True))


def cache_plan(todo: Sequence[Call], judge: Any, cache: Any, prices: PriceTable,
               model_of: Callable[[Any], str | None]) -> dict[str, Any] | None:
    """Tokens and USD of the judge calls ``todo`` under the four :data:`SCENARIOS`.

    Args:
        todo: the judge calls still to make.
        judge: the run's judge (``tokenizer_for(dimension)``; none: 4 characters per token).
        cache: the run's call cache (expected completion lengths: the mean of the answers so far, else
            ``max_new_tokens``).
        prices: the price table; model_of: the model answering a call.

    Returns:
        ``None`` without calls; else ``{"rules": {model: rules dict | None}, "this_run": scenario name,
        "surveys": distinct survey prefixes, "total": {scenario: row}, "by_dimension": {dim: {scenario: row}},
        "per_1000_surveys": {scenario: USD | None}}`` where a row is ``{"prompt_tokens", "cached_tokens",
        "cache_write_tokens", "completion_tokens", "cost_usd"}`` (``cost_usd`` ``None`` when no call is priced).
    """
    calls = [c for c in todo if c.stage == "judge"]
    if not calls:
        return None
    counter = PromptCounter(lambda call: judge.tokenizer_for(call.namespace), calls)
    means = answer_history(cache)[0]

    def prefix_tokens(call: Call) -> int:
        text = shared_text(call.messages)
        if not text:
            return 0
        tok = judge.tokenizer_for(call.namespace)
        return len(tok(text, add_special_tokens=False)["input_ids"]) if tok is not None else -(-len(text) // 4)

    rules = {id(c.backend): cache_rules(c.backend) for c in calls}
    use = predict_cache(calls, counter.messages_tokens, prefix_tokens, lambda c: rules[id(c.backend)])
    total: dict[str, dict[str, Any]] = {}
    by_dim: dict[str, dict[str, dict[str, Any]]] = {}
    surveys: set[str] = set()
    for call in calls:
        prompt = counter(call)
        mean = means.get("judge")
        completion = call.settings.max_new_tokens if mean is None else round(min(mean, call.settings.max_new_tokens))
        hit = prices.lookup(model_of(call))
        surveys.add(shared_text(call.messages) or call.unit_id)
        got = use[call.key]
        read, write = min(got.read, prompt), min(got.write, max(prompt - got.read, 0))
        for name, cached, batch in SCENARIOS:
            r, w = (read, write) if cached else (0, 0)
            usd = hit[1].cost(prompt, completion, r, batch=batch, cache_write_tokens=w) if hit else None
            for row in (total.setdefault(name, _row()), by_dim.setdefault(call.namespace, {}).setdefault(name, _row())):
                row["prompt_tokens"] += prompt
                row["cached_tokens"] += r
                row["cache_write_tokens"] += w
                row["completion_tokens"] += completion
                if usd is not None:
                    row["cost_usd"] = (row["cost_usd"] or 0.0) + usd
    any_cache = any(r is not None for r in rules.values())
    this_run = ("cache" if any_cache else "") + ("+batch" if any_cache and any(batched(c) for c in calls) else
                                                  "batch" if any(batched(c) for c in calls) else "")
    n = max(1, len(surveys))
    return {
        "rules": {str(model_of(c)): (rules[id(c.backend)].describe() if rules[id(c.backend)] else None)
                  for c in calls},
        "this_run": this_run or "list",
        "surveys": len(surveys),
        "total": _rounded(total),
        "by_dimension": {d: _rounded(rows) for d, rows in by_dim.items()},
        "per_1000_surveys": {name: (None if row["cost_usd"] is None else round(row["cost_usd"] * 1000 / n, 6))
                             for name, row in total.items()},
    }


def merge_cache_plans(a: dict[str, Any] | None, b: dict[str, Any] | None) -> dict[str, Any] | None:
    """The :func:`cache_plan` of two sets of calls planned apart (the chunks of a chunked ``--plan``).

    Rows are added; the survey counts are added (a survey whose units fall in two chunks counts twice, and its
    second chunk's reads of the first chunk's prefix are not predicted: the figure is then an upper bound);
    ``per_1000_surveys`` is recomputed from the sums. ``None`` is the plan of no call.
    """
    if a is None or b is None:
        return a if b is None else b
    total = {name: _add(a["total"].get(name), b["total"].get(name)) for name in dict.fromkeys([*a["total"], *b["total"]])}
    by_dim: dict[str, dict[str, Any]] = {}
    for dim in dict.fromkeys([*a["by_dimension"], *b["by_dimension"]]):
        rows_a, rows_b = a["by_dimension"].get(dim, {}), b["by_dimension"].get(dim, {})
        by_dim[dim] = {name: _add(rows_a.get(name), rows_b.get(name)) for name in dict.fromkeys([*rows_a, *rows_b])}
    surveys = a["surveys"] + b["surveys"]
    return {"rules": {**a["rules"], **b["rules"]},
            "this_run": a["this_run"] if a["this_run"] != "list" else b["this_run"],
            "surveys": surveys, "total": _rounded(total), "by_dimension": {d: _rounded(r) for d, r in by_dim.items()},
            "per_1000_surveys": {name: (None if row["cost_usd"] is None else
                                        round(row["cost_usd"] * 1000 / max(1, surveys), 6))
                                 for name, row in total.items()}}


def _add(x: dict[str, Any] | None, y: dict[str, Any] | None) -> dict[str, Any]:
    out = _row()
    for row in (x, y):
        for key, value in (row or {}).items():
            if key == "cost_usd":
                out[key] = value if out[key] is None else (out[key] if value is None else out[key] + value)
            else:
                out[key] += value
    return out


def _row() -> dict[str, Any]:
    return {"prompt_tokens": 0, "cached_tokens": 0, "cache_write_tokens": 0, "completion_tokens": 0, "cost_usd": None}


def _rounded(rows: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {k: {**v, "cost_usd": None if v["cost_usd"] is None else round(v["cost_usd"], 6)} for k, v in rows.items()}


def _usd(value: float | None) -> str:
    return "no price" if value is None else f"${value:,.4f}"


def cache_plan_lines(plan: dict[str, Any] | None) -> list[str]:
    """Printable ``--plan`` lines of a :func:`cache_plan` dict (none for ``None``)."""
    if plan is None:
        return []
    rules = "; ".join(f"{m}: " + ("no provider prompt cache on this path" if r is None else
                                  f"{r['provider']} ({'marked breakpoints' if r['marked'] else 'automatic prefixes'}, "
                                  f">= {r['min_tokens']} tokens, {'billed' if r['write_fee'] else 'free'} writes)")
                      for m, r in plan["rules"].items())
    lines = [f"prompt cache and batch API ({rules}); {plan['surveys']} survey(s); this run: {plan['this_run']}"]
    for name, _, _ in SCENARIOS:
        row = plan["total"][name]
        share = row["cached_tokens"] / row["prompt_tokens"] if row["prompt_tokens"] else 0.0
        mark = "  <- this run" if name == plan["this_run"] else ""
        lines.append(f"  {name:<12} {row['prompt_tokens']:>12,} prompt tokens, {row['cached_tokens']:>12,} from cache "
                     f"({share:.0%}), {row['cache_write_tokens']:>10,} written: {_usd(row['cost_usd'])} = "
                     f"{_usd(plan['per_1000_surveys'][name])} per 1,000 surveys{mark}")
    dims = [f"{d} {_usd(rows['list']['cost_usd'])} -> {_usd(rows[plan['this_run']]['cost_usd'])}"
            for d, rows in plan["by_dimension"].items()]
    lines.append("  per dimension (list price -> this run): " + "; ".join(dims))
    return lines

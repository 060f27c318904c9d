"""The judge's identity as it answered, and re-judging stored units to detect drift (beyond the paper).

:func:`judge_identity` is written to ``run_config.json`` (``identity``) by every evaluation run: the model id asked
for, the model ids and ``system_fingerprint`` values the API returned with the answers, the content fingerprints
of local models / adapters / a ``surveyalign serve`` server, the prompt version (protocol and template hashes), the
package version and the date of the price table (``configs/prices.yaml`` ``as_of``; ``None`` with the reason when
none can be read). ``surveyalign report --drift RUN_A RUN_B`` compares two of them
(:func:`surveyalign.scoring.drift_statistics`); ``surveyalign evaluate --check-drift N`` re-judges N stored units
before the run (:func:`check_drift`).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from surveyalign import __version__
from surveyalign.calls import CallCache, run_calls
from surveyalign.evaluation.config import EvalConfig
from surveyalign.judge import Judge

__all__ = ["check_drift", "judge_identity"]

def _price_table() -> tuple[str | None, str]:
    """``(as_of date, note)`` of the price table cost figures are read from (``configs/prices.yaml``)."""
    try:
        from surveyalign.calls.cost import default_prices_path, load_prices

        table = load_prices()
        return str(table.as_of), f"prices from {default_prices_path()}"
    except (ImportError, OSError, ValueError) as err:  # a wheel without configs/, or an unreadable table
        return None, f"no price table read ({type(err).__name__}: {err})"

_FINGERPRINT_KEYS = ("fingerprints", "adapter_fingerprints", "server_fingerprint", "adapter", "adapters")


def judge_identity(config: EvalConfig, describes: dict[str, dict[str, Any]], template_hashes: dict[str, Any],
                   cache: CallCache | None, *, stage: str = "judge") -> dict[str, Any]:
    """The judge of a run as it answered.

    Args:
        config: the run configuration (model asked for, protocol).
        describes: ``{backend group: backend.describe()}`` of the run's judge backends.
        template_hashes: the prompt template hashes per dimension (``run_config.json`` ``prompts``).
        cache: the run's call cache (answers carry ``served_model`` / ``system_fingerprint`` when the API returned
            them); None: not read.
        stage: the cache stage whose answers are summarised.

    Returns:
        ``{"backend_kind", "model", "served_models": {id: answers}, "system_fingerprints": {fp: answers},
        "fingerprints": {group: {content fingerprints of model / adapter / server}}, "prompt_version": {"protocol",
        "template_hashes"}, "package_version", "price_table_date", "price_table_note"}`` (JSON-ready), plus
        ``"omitted_request_fields"`` when ``generation.omit`` leaves fields out of the requests.
    """
    price_date, price_note = _price_table()
    served: Counter[str] = Counter()
    prints: Counter[str] = Counter()
    for rec in cache or []:
        if rec.get("stage") != stage or rec.get("error"):
            continue
        if rec.get("served_model"):
            served[str(rec["served_model"])] += 1
        if rec.get("system_fingerprint"):
            prints[str(rec["system_fingerprint"])] += 1
    out = {
        "backend_kind": config.backend.kind,
        "model": config.backend.options.get("model"),
        "served_models": dict(sorted(served.items())),
        "system_fingerprints": dict(sorted(prints.items())),
        "fingerprints": {g: {k: d[k] for k in _FINGERPRINT_KEYS if d.get(k) is not None} for g, d in describes.items()},
        "prompt_version": {"protocol": config.protocol, "layout": config.layout, "template_hashes": template_hashes},
        "package_version": __version__,
        "price_table_date": price_date,
        "price_table_note": price_note,
    }
    if config.generation.omit:  # request fields left out (the server's defaults answered): part of who judged
        out["omitted_request_fields"] = list(config.generation.omit)
    return out


def check_drift(units: list[Any], judge: Judge, cache: CallCache, n: int, *, concurrency: int | None = None
                ) -> dict[str, Any]:
    """Re-judge up to ``n`` stored units (sample 0, the cache bypassed) and count how many scores changed.

    The units are taken in run order among those whose sample-0 answer is in the cache without an error; the new
    answers are not written to the cache (the run then continues from the stored ones).

    Args:
        units: the run's units, with their prepared prompts.
        judge: the run's judge.
        cache: the run's call cache.
        n: how many stored units to re-judge (>= 1).
        concurrency: calls in flight for async backends.

    Returns:
        ``{"asked", "n_rejudged", "n_changed", "n_failed" (re-judged call failed or did not parse), "changed":
        [{"unit_id", "stored", "now"}], "note"}``.

    Raises:
        ValueError: when ``n`` < 1.
    """
    if n < 1:
        raise ValueError(f"--check-drift needs N >= 1, got {n}")
    chosen = []
    for unit in units:
        if unit.prompt is None or unit.prompt.status is not None:  # never sent: nothing stored to compare
            continue
        calls = judge.calls_for(unit.prompt, 1, unit_id=unit.unit_id)
        rec = cache.get(calls[0].key)
        if rec is None or rec.get("error"):
            continue
        chosen.append((unit, calls[0]))
        if len(chosen) >= n:
            break
    if not chosen:
        return {"asked": n, "n_rejudged": 0, "n_changed": 0, "n_failed": 0, "changed": [],
                "note": "no stored answer to re-judge (first run in this folder)"}
    fresh: dict[str, Any] = {}
    run_calls([c for _, c in chosen], lambda call, gen, seconds: fresh.__setitem__(call.key, gen),
              concurrency=concurrency)
    changed, failed = [], 0
    for unit, call in chosen:
        stored = judge.decide(unit.prompt, [cache.generation(call.key)]).score
        now = judge.decide(unit.prompt, [fresh[call.key]]).score if call.key in fresh else None
        if now is None:
            failed += 1
        elif now != stored:
            changed.append({"unit_id": unit.unit_id, "stored": stored, "now": now})
    return {"asked": n, "n_rejudged": len(chosen), "n_changed": len(changed), "n_failed": failed, "changed": changed,
            "note": None if len(chosen) == n else f"only {len(chosen)} stored answers to re-judge"}

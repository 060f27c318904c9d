"""Drift between two runs of the same judge on the same units (beyond the paper).

An API judge named "gpt-5.2" today may not be the judge of last month: providers update models behind a name, and
sampling is not always reproducible. :func:`drift_statistics` compares two runs unit by unit: the share of units
whose score changed, the MSE shift with its paired paper-level bootstrap interval, and whether the recorded judge
identities (model id, served model / ``system_fingerprint``, adapter fingerprints, prompt version, package version,
price-table date) differ, so a change can be told apart: same identity and changed scores = drift or
nondeterminism; different identity = another judge (an improvement or a regression, not drift).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from surveyalign.scoring.bootstrap import INSUFFICIENT_DATA, paired_bootstrap
from surveyalign.scoring.records import validate_records

__all__ = ["drift_statistics", "identity_differences"]


def _flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for k, v in value.items():
            out.update(_flatten(v, f"{prefix}.{k}" if prefix else str(k)))
        return out
    return {prefix: value}


def identity_differences(a: Mapping[str, Any] | None, b: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """The fields where two judge identities differ (nested keys dotted), sorted by field.

    Args:
        a, b: identity records (``run_config.json`` ``identity``); None when a run recorded none.

    Returns:
        ``[{"field", "a", "b"}]``; a field missing on one side shows ``None`` there. Two missing identities give
        ``[{"field": "identity", "a": None, "b": None}]`` (nothing to compare is not "the same").
    """
    if a is None and b is None:
        return [{"field": "identity", "a": None, "b": None}]
    fa, fb = _flatten(a or {}), _flatten(b or {})
    return [{"field": k, "a": fa.get(k), "b": fb.get(k)} for k in sorted(set(fa) | set(fb)) if fa.get(k) != fb.get(k)]


def drift_statistics(records_a: Sequence[Mapping[str, Any]], records_b: Sequence[Mapping[str, Any]], *,
                     identity_a: Mapping[str, Any] | None = None, identity_b: Mapping[str, Any] | None = None,
                     n_resamples: int = 1000, seed: int = 0) -> dict[str, Any]:
    """Compare two runs of one judge on the same units: changed scores, MSE shift, identities.

    Args:
        records_a: prediction records of run A (the earlier run).
        records_b: prediction records of run B.
        identity_a, identity_b: the recorded judge identities of the runs (None: not recorded).
        n_resamples: paired bootstrap resamples for the MSE shift.
        seed: numpy seed.

    Returns:
        ``{"n_shared" (units in both runs), "n_both_scored", "n_changed" (scored in both, different score),
        "share_changed" (n_changed / n_both_scored, in [0, 1]), "n_status_changed" (scored in one run only),
        "changes": {"a->b": count} (e.g. "-1->1"), "mse_a", "mse_b", "mse_shift" (B - A, AVG MSE), "mse_shift_ci",
        "p_value", "insufficient", "identity_differs" (bool | None when neither run recorded one),
        "identity_differences", "verdict"}``. ``verdict`` is one of "no change", "drift: same recorded identity,
        scores changed", "different judge identity: compare as two judges, not as drift", or "no identity
        recorded: cannot tell drift from a different judge".

    Raises:
        ValueError: an invalid record, no shared unit, or a shared unit whose reference differs between the runs.
    """
    a_by = {r["unit_id"]: r for r in validate_records(records_a)}
    b_by = {r["unit_id"]: r for r in validate_records(records_b)}
    shared = sorted(set(a_by) & set(b_by))
    if not shared:
        raise ValueError("the two runs share no unit: drift needs the same units in both")
    for u in shared:
        if a_by[u]["reference"] != b_by[u]["reference"]:
            raise ValueError(f"unit {u}: reference {a_by[u]['reference']} in run A but {b_by[u]['reference']} in "
                             f"run B; the runs are not on the same data")
    both = [u for u in shared if a_by[u]["status"] == "scored" and b_by[u]["status"] == "scored"]
    changed = [u for u in both if a_by[u]["prediction"] != b_by[u]["prediction"]]
    changes: dict[str, int] = {}
    for u in changed:
        key = f"{a_by[u]['prediction']:+d}->{b_by[u]['prediction']:+d}"
        changes[key] = changes.get(key, 0) + 1
    out: dict[str, Any] = {
        "n_shared": len(shared), "n_both_scored": len(both), "n_changed": len(changed),
        "share_changed": len(changed) / len(both) if both else None,
        "n_status_changed": sum((a_by[u]["status"] == "scored") != (b_by[u]["status"] == "scored") for u in shared),
        "changes": dict(sorted(changes.items())), "mse_a": None, "mse_b": None, "mse_shift": None,
        "mse_shift_ci": None, "p_value": None, "insufficient": None,
    }
    if both:
        test = paired_bootstrap([b_by[u] for u in both], [a_by[u] for u in both], n_resamples=max(n_resamples, 1),
                                seed=seed)
        m = test["metrics"].get("avg_mse")
        if m:
            out.update(mse_a=m["b"], mse_b=m["a"], mse_shift=m["diff"], mse_shift_ci=m["ci95"], p_value=m["p_value"],
                       insufficient=m["insufficient"])
    else:
        out["insufficient"] = f"{INSUFFICIENT_DATA}: no unit scored in both runs"
    diffs = identity_differences(identity_a, identity_b)
    recorded = not (identity_a is None and identity_b is None)
    out["identity_differs"] = bool(diffs) if recorded else None
    out["identity_differences"] = diffs if recorded else []
    if not recorded:
        out["verdict"] = "no identity recorded: cannot tell drift from a different judge"
    elif diffs:
        out["verdict"] = "different judge identity: compare as two judges, not as drift"
    elif changed or out["n_status_changed"]:
        out["verdict"] = "drift: same recorded identity, scores changed"
    else:
        out["verdict"] = "no change"
    return out

"""The build's leakage step: run the guard over every input text and count the gold snippets left in them.

Used by :func:`surveyalign.data.build_dataset`; its two dicts become ``build_report.json["leakage_guard"]``
and the card's "Leakage guard" section (SurveyReview §4.1-4.2).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from surveyalign.documents import (
    MIN_SNIPPET_CHARS,
    NEAR_VERBATIM_THRESHOLD,
    RECORD_KINDS,
    near_verbatim_hits,
    normalise_for_match,
    strip_review_record,
    verbatim_hits,
)

#: Ids listed in the report before the list is cut.
MAX_LISTED = 200

#: How the check matches, for the report and the card.
MATCHING = ("layout-insensitive: Unicode NFKC, typographic quotes/dashes, line-end hyphenation, markdown emphasis "
            "and whitespace normalised on both sides; near-verbatim = rapidfuzz partial_ratio (case folded) of the "
            "snippet against its own unit's text >= threshold")


class LeakError(ValueError):
    """Gold snippets remain in the inputs after the guard and the build was asked to fail on leaks."""


def guard_texts(inputs: Mapping[str, str], *, enabled: bool) -> tuple[dict[str, str], list[str], dict[str, Any]]:
    """Run :func:`surveyalign.documents.strip_review_record` over every input text.

    Args:
        inputs: ``{text key: raw text}``.
        enabled: False keeps every text as it is (``--no-leakage-guard``).

    Returns:
        ``(cleaned, changed_keys, summary)``: the texts after the guard, the keys of the texts it changed
        (sorted), and the counts of what it removed (``texts_cleaned``, ``status_lines_removed``,
        ``record_sections_removed``, ``top_boxes_removed``, ``records_removed`` per kind,
        ``running_headers_removed``, ``status_marks_removed``, ``chars_removed``).
    """
    counts: Counter[str] = Counter()
    kinds: Counter[str] = Counter()
    cleaned: dict[str, str] = {}
    changed: list[str] = []
    for key, text in inputs.items():
        if not enabled:
            cleaned[key] = text
            continue
        new, edit = strip_review_record(text)
        cleaned[key] = new
        if edit.changed:
            changed.append(key)
            counts["status_lines_removed"] += edit.status_lines
            counts["record_sections_removed"] += edit.record_sections
            counts["top_boxes_removed"] += edit.top_boxes
            counts["running_headers_removed"] += edit.running_headers
            counts["status_marks_removed"] += edit.status_marks
            counts["chars_removed"] += edit.chars_removed
            kinds.update(edit.records)
    changed.sort()
    summary = {
        "enabled": enabled,
        "texts_cleaned": len(changed),
        "cleaned_ids": changed[:MAX_LISTED],
        "status_lines_removed": counts["status_lines_removed"],
        "record_sections_removed": counts["record_sections_removed"],
        "top_boxes_removed": counts["top_boxes_removed"],
        "records_removed": {k: kinds[k] for k in RECORD_KINDS},
        "running_headers_removed": counts["running_headers_removed"],
        "status_marks_removed": counts["status_marks_removed"],
        "chars_removed": counts["chars_removed"],
    }
    return cleaned, changed, summary


def check_leaks(
    units: Sequence[tuple[str, str | None, Sequence[str]]],
    inputs: Mapping[str, str],
    cleaned: Mapping[str, str],
    changed: Sequence[str],
    *,
    threshold: float = NEAR_VERBATIM_THRESHOLD,
) -> dict[str, Any]:
    """Count gold snippets found in the input texts before and after the guard.

    Verbatim: a snippet's normalised form (:func:`surveyalign.data.normalise_for_match`) occurs in the
    normalised form of *any* input text. Near-verbatim: its partial-ratio score against its own unit's text
    reaches ``threshold`` (:func:`surveyalign.data.near_verbatim_hits`).

    Args:
        units: ``(unit_id, text key or None, rationales)`` for every kept unit.
        inputs: ``{text key: raw text}`` (before the guard).
        cleaned: ``{text key: text after the guard}`` (same keys).
        changed: keys of the texts the guard changed.
        threshold: near-verbatim threshold (0-100).

    Returns:
        ``{"matching", "near_verbatim_threshold", "snippets_checked", "snippets_too_short",
        "snippets_verbatim_before_guard", "snippets_verbatim_in_inputs", "snippets_near_verbatim_before_guard",
        "snippets_near_verbatim_in_inputs", "units_with_verbatim_snippets", "units_with_near_verbatim_snippets"}``
        (counts of distinct snippets; unit lists sorted and cut at :data:`MAX_LISTED`).
    """
    snippets = sorted({r for _, _, rationales in units for r in rationales})
    norm_snippets = [normalise_for_match(s) for s in snippets]
    keys = list(inputs)
    changed_set = set(changed)
    norm_raw = {k: normalise_for_match(inputs[k]) for k in keys}  # every text is normalised once
    norm_clean = {k: normalise_for_match(cleaned[k]) if k in changed_set else norm_raw[k] for k in keys}
    before = verbatim_hits(norm_snippets, [norm_raw[k] for k in keys], min_chars=MIN_SNIPPET_CHARS)
    changed_keys = [k for k in keys if k in changed_set]
    # the guard only deletes text: a snippet stays if it is in an unchanged text, or in a changed one after cleaning
    seam = (verbatim_hits(norm_snippets, [norm_clean[k] for k in changed_keys])
            if changed_keys else [set() if h is not None else None for h in before])
    after = [None if hit is None else ({j for j in hit if keys[j] not in changed_set} | set(seam[n] or ()))
             for n, hit in enumerate(before)]
    verbatim_after = {s for s, hit in zip(snippets, after) if hit}

    norm_of = dict(zip(snippets, norm_snippets))
    pairs = sorted({(r, key) for _, key, rationales in units if key for r in rationales})
    near_after = near_verbatim_hits([(norm_of[r], norm_clean[k]) for r, k in pairs], threshold=threshold,
                                    normalised=True)
    moved = [i for i, (_, k) in enumerate(pairs) if k in changed_set]  # the others read the same before the guard
    near_before = list(near_after)
    for i, hit in zip(moved, near_verbatim_hits([(norm_of[pairs[i][0]], norm_raw[pairs[i][1]]) for i in moved],
                                                threshold=threshold, normalised=True)):
        near_before[i] = hit
    near_before_set = {r for (r, _), hit in zip(pairs, near_before) if hit}
    near_after_pairs = {pair for pair, hit in zip(pairs, near_after) if hit}

    def units_with(test) -> list[str]:
        return sorted(uid for uid, key, rationales in units if any(test(r, key) for r in rationales))[:MAX_LISTED]

    return {
        "matching": MATCHING,
        "near_verbatim_threshold": threshold,
        "snippets_checked": sum(1 for h in before if h is not None),
        "snippets_too_short": sum(1 for h in before if h is None),
        "snippets_verbatim_before_guard": sum(1 for h in before if h),
        "snippets_verbatim_in_inputs": len(verbatim_after),
        "snippets_near_verbatim_before_guard": len(near_before_set),
        "snippets_near_verbatim_in_inputs": len({r for r, _ in near_after_pairs}),
        "units_with_verbatim_snippets": units_with(lambda r, key: r in verbatim_after),
        "units_with_near_verbatim_snippets": units_with(lambda r, key: (r, key) in near_after_pairs),
    }


def raise_on_leak(check: Mapping[str, Any]) -> None:
    """Raise :class:`LeakError` when ``check`` (from :func:`check_leaks`) found any snippet after the guard.

    Args:
        check: the leak counts.

    Raises:
        LeakError: naming the counts and the first units, when a verbatim or near-verbatim snippet remains.
    """
    verbatim, near = check["snippets_verbatim_in_inputs"], check["snippets_near_verbatim_in_inputs"]
    if not verbatim and not near:
        return
    units = sorted(set(check["units_with_verbatim_snippets"]) | set(check["units_with_near_verbatim_snippets"]))
    raise LeakError(
        f"--fail-on-leak: gold rationale snippets remain in the input texts after the leakage guard "
        f"({verbatim} verbatim, {near} near-verbatim at threshold {check['near_verbatim_threshold']:g}); "
        f"units: {', '.join(units[:5])}{' ...' if len(units) > 5 else ''}. Nothing was written."
    )

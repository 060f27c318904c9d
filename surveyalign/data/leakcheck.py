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
    VerbatimIndex,
    near_hits_in_text,
    normalise_for_match,
    strip_review_record,
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
    index = VerbatimIndex(norm_snippets, min_chars=MIN_SNIPPET_CHARS)  # the snippets are indexed once
    changed_set = set(changed)
    position = {s: n for n, s in enumerate(snippets)}
    by_key: dict[str, list[int]] = {}  # text key -> the snippets of its own units (near-verbatim pairs)
    for r, key in sorted({(r, key) for _, key, rationales in units if key for r in rationales}):
        by_key.setdefault(key, []).append(position[r])
    folded = [s.casefold() for s in norm_snippets]
    verbatim_before: set[int] = set()
    verbatim_after: set[int] = set()
    near_before: set[int] = set()
    near_after_pairs: set[tuple[str, str]] = set()
    # one text at a time: normalised once, scanned once, dropped (the guard only deletes text: a snippet
    # stays if it is in an unchanged text, or in a changed one after cleaning)
    for key in inputs:
        norm_raw = normalise_for_match(inputs[key])
        found = index.find(norm_raw)
        verbatim_before |= found
        is_changed = key in changed_set
        norm_clean = normalise_for_match(cleaned[key]) if is_changed else norm_raw
        verbatim_after |= index.find(norm_clean) if is_changed else found
        members = by_key.get(key)
        if not members:
            continue
        own = [folded[n] for n in members]
        after = near_hits_in_text(own, norm_clean.casefold(), threshold=threshold, spaced=True)
        near_after_pairs.update((snippets[n], key) for n, hit in zip(members, after) if hit)
        before = near_hits_in_text(own, norm_raw.casefold(), threshold=threshold, spaced=True) if is_changed else after
        near_before.update(n for n, hit in zip(members, before) if hit)
    verbatim_after_set = {snippets[n] for n in verbatim_after}

    def units_with(test) -> list[str]:
        return sorted(uid for uid, key, rationales in units if any(test(r, key) for r in rationales))[:MAX_LISTED]

    return {
        "matching": MATCHING,
        "near_verbatim_threshold": threshold,
        "snippets_checked": sum(index.checked),
        "snippets_too_short": len(snippets) - sum(index.checked),
        "snippets_verbatim_before_guard": len(verbatim_before),
        "snippets_verbatim_in_inputs": len(verbatim_after),
        "snippets_near_verbatim_before_guard": len(near_before),
        "snippets_near_verbatim_in_inputs": len({r for r, _ in near_after_pairs}),
        "units_with_verbatim_snippets": units_with(lambda r, key: r in verbatim_after_set),
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

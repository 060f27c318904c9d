"""Reward-hacking checks on one completion, and the rank correlation of reward with length.

A learned judge rewards what it was not meant to: text that speaks to the judge or mimics its answer format,
length for its own sake, repeated or broken text. :func:`check_completion` flags those (the flags are logged and,
by config, give the lowest reward); :func:`spearman` measures reward against completion length per step.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from surveyalign.rewards._config import HackingChecks

__all__ = ["INJECTION_PATTERNS", "check_completion", "repeated_share", "spearman"]

#: Text that addresses the judge or carries its answer format: (name, pattern). A survey has no reason to hold
#: any of them; a completion that does is flagged ``injection`` with the first name found.
INJECTION_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("score marker", re.compile(r"\$\$\$\s*[-+]?\s*\d+\s*\$\$\$")),
    ("judge answer tags", re.compile(r"</?\s*(?:score|reason)\s*>", re.IGNORECASE)),
    ("score line", re.compile(r"^\s*(?:[*_#>]+\s*)?(?:final\s+)?(?:score|rating|verdict)\s*[:=]\s*[*_]*\s*[-+]?\d",
                              re.IGNORECASE | re.MULTILINE)),
    ("instruction to the judge", re.compile(
        r"ignore\s+(?:all\s+|any\s+|the\s+)?(?:previous|prior|above|earlier)\s+(?:instructions|rules|prompts?)"
        r"|(?:note|message|instruction)s?\s+(?:to|for)\s+(?:the\s+)?(?:judge|reviewer|evaluator|grader|assessor)"
        r"|\b(?:judge|reviewer|evaluator|grader)s?\s*[:,]\s*(?:please\s+)?(?:give|assign|award|rate|score)"
        r"|\b(?:give|assign|award)\s+(?:this|the)\s+(?:survey|paper|text|answer)\s+(?:a\s+|the\s+)?"
        r"(?:score|rating|highest|maximum|top|full)"
        r"|\byou\s+(?:must|should|will)\s+(?:give|assign|award|rate|score)\b",
        re.IGNORECASE)),
    ("chat control token", re.compile(r"<\|(?:im_start|im_end|system|user|assistant|endoftext)\|>")),
)

_WORD = re.compile(r"\S+")


def repeated_share(words: Sequence[str], n: int) -> float:
    """Share of the word n-grams of a text that repeat an earlier one, in [0, 1].

    Args:
        words: the text's words (lower-cased by the caller or not).
        n: the n-gram size, >= 1.

    Returns:
        ``1 - distinct n-grams / n-grams``; 0.0 when the text has fewer than ``n`` words.
    """
    grams = [tuple(words[i:i + n]) for i in range(len(words) - n + 1)]
    return 1.0 - len(set(grams)) / len(grams) if grams else 0.0


def check_completion(text: str, checks: HackingChecks) -> dict[str, str]:
    """The hacking flags of one completion.

    Args:
        text: the completion (a survey in markdown).
        checks: the thresholds (:class:`~surveyalign.rewards.HackingChecks`).

    Returns:
        ``{kind: reason}`` for each kind raised, in the order ``injection`` (the first pattern of
        :data:`INJECTION_PATTERNS` found), ``repetition`` (repeated word n-gram share above
        ``max_repeated_share``), ``degenerate`` (fewer than ``min_words`` words, or a letter share of the
        non-space characters below ``min_letter_share``); ``{}`` when none (or the checks are off).
    """
    if not checks.enabled:
        return {}
    flags: dict[str, str] = {}
    for name, pattern in INJECTION_PATTERNS:
        found = pattern.search(text)
        if found:
            flags["injection"] = f"{name}: {found.group(0).strip()[:60]!r}"
            break
    words = [w.lower() for w in _WORD.findall(text)]
    share = repeated_share(words, checks.ngram)
    if share > checks.max_repeated_share:
        flags["repetition"] = f"{share:.2f} of the word {checks.ngram}-grams repeat (limit {checks.max_repeated_share})"
    chars = [c for c in text if not c.isspace()]
    letters = sum(c.isalpha() for c in chars) / len(chars) if chars else 0.0
    if len(words) < checks.min_words:
        flags["degenerate"] = f"{len(words)} words (minimum {checks.min_words})"
    elif letters < checks.min_letter_share:
        flags["degenerate"] = f"letters are {letters:.2f} of the characters (minimum {checks.min_letter_share})"
    return flags


def _ranks(values: Sequence[float]) -> list[float]:
    """1-based ranks, ties given their mean rank."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return ranks


def spearman(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Spearman's rank correlation of two equally long sequences (ties: mean ranks; the Pearson correlation of
    the ranks).

    Args:
        x: e.g. completion lengths.
        y: e.g. their rewards.

    Returns:
        The correlation in [-1, 1]; ``None`` with fewer than 3 pairs or when either side is constant.

    Raises:
        ValueError: ``x`` and ``y`` differ in length.
    """
    if len(x) != len(y):
        raise ValueError(f"spearman: {len(x)} x values but {len(y)} y values")
    if len(x) < 3:
        return None
    rx, ry = _ranks(x), _ranks(y)
    mx, my = sum(rx) / len(rx), sum(ry) / len(ry)
    sxy = sum((a - mx) * (b - my) for a, b in zip(rx, ry))
    sxx = sum((a - mx) ** 2 for a in rx)
    syy = sum((b - my) ** 2 for b in ry)
    if sxx == 0 or syy == 0:
        return None
    return sxy / (sxx * syy) ** 0.5

"""Strict readers of autorater answers (PaperOrchestra App. F.3 output formats).

Every reader goes through :func:`surveyalign.prompts.read_json_answer` (reasoning blocks removed, exactly one
JSON object, surrounding text and duplicate keys reported; re-exported here), then checks the fields:

* Nothing is defaulted: every reader returns ``None`` for what it could not read, with the reasons.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from surveyalign.autoraters.prompts import SXS_KEYS
from surveyalign.autoraters.rubric import PARTITION_LABELS, WINNERS
from surveyalign.prompts import JsonAnswer, read_json_answer

__all__ = ["JsonAnswer", "PartitionParse", "SxSParse", "parse_partition", "parse_sxs", "read_json_answer"]

@dataclass(frozen=True)
class PartitionParse:
    """A P0/P1 partition read from a judge answer and checked against the paper's reference numbers.

    Attributes:
        labels: reference number -> ``"P0"`` / ``"P1"`` for every number read cleanly (a duplicated number
            is kept only when all its labels agree).
        unknown_numbers: keys that are not reference numbers of the paper (in answer order).
        duplicate_numbers: numbers given more than once.
        missing_numbers: reference numbers the answer did not label.
        invalid_labels: number -> the value given when it is not P0/P1 (or conflicting duplicates).
        problems: every problem, one line each; empty means the partition is complete and clean.
        error: why no partition could be read at all (invalid JSON...), else ``None``.
    """

    labels: dict[str, str]
    unknown_numbers: tuple[str, ...] = ()
    duplicate_numbers: tuple[str, ...] = ()
    missing_numbers: tuple[str, ...] = ()
    invalid_labels: dict[str, Any] = field(default_factory=dict)
    problems: tuple[str, ...] = ()
    error: str | None = None

    @property
    def ok(self) -> bool:
        """True when every reference got exactly one valid label and nothing else was wrong."""
        return self.error is None and not self.problems

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable view (all fields plus ``ok``)."""
        return {"ok": self.ok, "labels": self.labels, "unknown_numbers": list(self.unknown_numbers),
                "duplicate_numbers": list(self.duplicate_numbers), "missing_numbers": list(self.missing_numbers),
                "invalid_labels": self.invalid_labels, "problems": list(self.problems), "error": self.error}


def _label(value: Any) -> str | None:
    if isinstance(value, str) and value.strip().upper() in PARTITION_LABELS:
        return value.strip().upper()
    return None


def parse_partition(text: str | None, numbers: Iterable[str], *,
                    untrusted: Sequence[str] | None = None) -> PartitionParse:
    """Read a P0/P1 partition answer (PaperOrchestra App. F.3) and check it against the reference numbers.

    Args:
        text: the judge's answer, expected ``{"1": "P0", "2": "P1", ...}``.
        numbers: the paper's reference numbers as strings (``"1"``, ``"2"``...).
        untrusted: the paper texts the judge read; what the answer quotes from them never decides
            (:func:`surveyalign.prompts.read_json_answer`).

    Returns:
        A :class:`PartitionParse` naming unknown, duplicated and missing numbers and invalid labels; ``error`` is
        set (and ``labels`` empty) when the answer holds no JSON object. Never raises on model output.
    """
    expected = [str(n) for n in numbers]
    known = set(expected)
    answer = read_json_answer(text, untrusted=untrusted)
    if not answer.ok:
        return PartitionParse({}, missing_numbers=tuple(expected), problems=answer.problems,
                              error="; ".join(answer.problems))
    problems = [p for p in answer.problems if not p.startswith("duplicate key")]
    given: dict[str, list[Any]] = {}
    unknown: list[str] = []
    for raw_key, value in answer.pairs:
        key = raw_key.strip()
        if key not in known:
            if key not in unknown:
                unknown.append(key)
            continue
        given.setdefault(key, []).append(value)
    labels: dict[str, str] = {}
    invalid: dict[str, Any] = {}
    duplicates = tuple(k for k, values in given.items() if len(values) > 1)
    for key, values in given.items():
        read = {_label(v) for v in values}
        if None in read:
            invalid[key] = values[0] if len(values) == 1 else values
        elif len(read) > 1:
            invalid[key] = values  # conflicting duplicates: no label is taken
        else:
            labels[key] = read.pop()
    missing = tuple(n for n in expected if n not in given)
    if unknown:
        problems.append(f"unknown reference number(s): {', '.join(unknown)}")
    if duplicates:
        problems.append(f"duplicate reference number(s): {', '.join(duplicates)}")
    if missing:
        problems.append(f"{len(missing)} reference number(s) not labelled: {', '.join(missing)}")
    if invalid:
        problems.append("invalid label(s) (expected P0 or P1): "
                        + ", ".join(f"{k}={v!r}" for k, v in invalid.items()))
    ordered = {n: labels[n] for n in expected if n in labels}
    return PartitionParse(ordered, tuple(unknown), duplicates, missing, invalid, tuple(problems))


@dataclass(frozen=True)
class SxSParse:
    """One side-by-side answer (PaperOrchestra App. F.3).

    Attributes:
        winner: ``"paper_1"``, ``"paper_2"`` or ``"tie"``; ``None`` when it could not be read.
        paper_1_analysis: the judge's analysis of the first paper (``None`` when absent).
        paper_2_analysis: the analysis of the second paper.
        justification: the comparison reasoning.
        problems: every problem, one line each.
    """

    winner: str | None
    paper_1_analysis: str | None = None
    paper_2_analysis: str | None = None
    justification: str | None = None
    problems: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable view of the fields."""
        return {"winner": self.winner, "paper_1_analysis": self.paper_1_analysis,
                "paper_2_analysis": self.paper_2_analysis, "justification": self.justification,
                "problems": list(self.problems)}


def parse_sxs(text: str | None, kind: str, *, untrusted: Sequence[str] | None = None) -> SxSParse:
    """Read a side-by-side answer of ``kind`` (``"paper"`` or ``"litreview"``).

    Args:
        text: the judge's answer.
        kind: which autorater asked: its JSON keys are :data:`~surveyalign.autoraters.prompts.SXS_KEYS`.
        untrusted: the two paper texts the judge read; a verdict the answer quotes from them is never taken
            (:func:`surveyalign.prompts.read_json_answer`).

    Returns:
        An :class:`SxSParse`; ``winner`` is ``None`` when the answer has no object or the ``winner`` value is
        not exactly one of paper_1, paper_2, tie (case and surrounding spaces are forgiven). Missing analysis
        fields are reported but do not void a valid winner.

    Raises:
        ValueError: unknown ``kind`` (a programming error, not model output).
    """
    if kind not in SXS_KEYS:
        raise ValueError(f"unknown side-by-side kind {kind!r}; expected one of {sorted(SXS_KEYS)}")
    first, second, justification, winner_key = SXS_KEYS[kind]
    answer = read_json_answer(text, untrusted=untrusted)
    if not answer.ok:
        return SxSParse(None, problems=answer.problems)
    data, problems = answer.data, list(answer.problems)

    def text_field(key: str) -> str | None:
        value = data.get(key)
        if value is None:
            problems.append(f"missing field {key!r}")
            return None
        if not isinstance(value, str):
            problems.append(f"field {key!r} is not a string")
            return str(value)
        return value

    analyses = [text_field(first), text_field(second), text_field(justification)]
    raw = data.get(winner_key)
    winner = raw.strip().lower() if isinstance(raw, str) else None
    if raw is None:
        problems.append(f"missing field {winner_key!r}")
    elif winner not in WINNERS:
        problems.append(f"invalid winner {raw!r}; expected one of {', '.join(WINNERS)}")
        winner = None
    return SxSParse(winner, *analyses, problems=tuple(problems))

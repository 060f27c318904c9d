"""The one reader of a JSON object in an LLM answer (autoraters, PRISM extraction and any other caller).

:func:`read_json_answer` applies the same rules everywhere (PaperOrchestra App. F.3 formats, PRISM extraction):

* Closed ``<think>...</think>`` blocks are reasoning and are removed; so is the text before a lone
  ``</think>`` (its opener was in the prompt). An unclosed ``<think>`` means the answer was cut off: no result.
* The answer must hold exactly one JSON object, bare or inside a single ```json fence. Text around it is
  tolerated but reported as a problem; two objects, a cut-off object, a non-object value or no object give no
  result.
* Duplicate keys are seen (the JSON reader keeps every pair) and reported.
* Text the judge quotes from its input never decides: given the input (``untrusted``), a ``</think>``, a JSON key
  or a score marker written as part of a quote of it is neutralised before reading
  (:func:`surveyalign.documents.untrusted.mask_quoted`), so a planted ``{"winner": ...}`` is not the object read;
  the quoted tokens are a reported problem.

Callers decide what a reported problem means for them (the autoraters list it with the answer, PRISM records
it in its extraction log); nothing is dropped silently.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from surveyalign.documents.untrusted import mask_quoted
from surveyalign.prompts.parser import strip_reasoning

__all__ = ["JsonAnswer", "read_json_answer"]

_FENCE = re.compile(r"```[a-zA-Z]*\s*\n?(.*?)```", re.DOTALL)


class _Pairs(list):
    """The key/value pairs of one JSON object, in order (duplicates kept)."""


@dataclass(frozen=True)
class JsonAnswer:
    """One judge answer read as a JSON object.

    Attributes:
        data: the object (the last value wins for a duplicated key), or ``None`` when none could be read.
        pairs: the top-level (key, value) pairs in order, duplicates included (empty without an object).
        duplicate_keys: top-level keys that occur more than once, in first-seen order.
        problems: everything wrong with the answer, one readable line each (empty when clean).
        quoted: answer-format tokens the judge quoted from its input, ignored (empty when none).
    """

    data: dict[str, Any] | None
    pairs: tuple[tuple[str, Any], ...] = ()
    duplicate_keys: tuple[str, ...] = ()
    problems: tuple[str, ...] = ()
    quoted: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        """True when an object was read."""
        return self.data is not None


def _hook(pairs: list[tuple[str, Any]]) -> Any:
    # nested objects become plain dicts; the top level keeps its pairs (see read_json_answer)
    return _Pairs(pairs)


def _plain(value: Any) -> Any:
    if isinstance(value, _Pairs):
        return {k: _plain(v) for k, v in value}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def read_json_answer(text: str | None, *, untrusted: Sequence[str] | None = None) -> JsonAnswer:
    """Read the single JSON object of a judge answer, reporting every problem.

    Args:
        text: the raw answer (may hold reasoning blocks, a code fence, stray prose), or ``None``.
        untrusted: the input texts the judge read (papers, review, snippets); tokens the answer quotes from them
            are ignored and reported (``JsonAnswer.quoted``). ``None``: the answer is read as is.

    Returns:
        A :class:`JsonAnswer`; ``data`` is ``None`` with the reasons in ``problems`` when no object could be
        read (empty answer, invalid JSON, cut-off object, several objects, a non-object value). Never raises.
    """
    if text is None or not text.strip():
        return JsonAnswer(None, problems=("empty answer",))
    text, quoted = mask_quoted(text, untrusted)
    answer = _read(text)
    if not quoted:
        return answer
    note = f"{len(quoted)} answer token(s) quoted from the input ignored: {', '.join(quoted[:5])}"
    return replace(answer, problems=(*answer.problems, note), quoted=quoted)


def _read(text: str) -> JsonAnswer:
    visible, error = strip_reasoning(text)
    if error:
        return JsonAnswer(None, problems=(error,))
    problems: list[str] = []
    fences = _FENCE.findall(visible)
    if len(fences) > 1:
        return JsonAnswer(None, problems=(f"{len(fences)} code blocks; expected one JSON object",))
    body = fences[0] if fences else visible
    try:  # the whole answer is one JSON value that is not an object (a list holding one, a string...)
        whole = json.loads(body)
    except json.JSONDecodeError:
        whole = None
    else:
        if not isinstance(whole, dict):
            return JsonAnswer(None, problems=(f"expected a JSON object, got {type(whole).__name__}",))
    start = body.find("{")
    if start < 0:
        return JsonAnswer(None, problems=("invalid JSON: no JSON object in the answer",))
    decoder = json.JSONDecoder(object_pairs_hook=_hook)
    first_error: json.JSONDecodeError | None = None
    while start >= 0:  # a brace in prose before the object ("see {below}") is skipped, and reported as extra text
        try:
            value, end = decoder.raw_decode(body, start)
            break
        except json.JSONDecodeError as err:
            first_error = first_error or err
            start = body.find("{", start + 1)
    else:
        err = first_error
        return JsonAnswer(None, problems=(f"invalid JSON: {err.msg} at line {err.lineno} column {err.colno}",))
    before, after = body[:start].strip(), body[end:].strip()
    if after.find("{") >= 0:
        try:
            decoder.raw_decode(after, after.find("{"))
            return JsonAnswer(None, problems=("more than one JSON object in the answer",))
        except json.JSONDecodeError:
            pass
    outside = [part for part in (before, after) if part]
    if fences:
        rest = _FENCE.sub("", visible).strip()
        if rest:
            outside.append(rest)
    if outside:
        problems.append("extra text around the JSON object")
    pairs = tuple((k, _plain(v)) for k, v in value)
    counts = Counter(key for key, _ in pairs)
    duplicates = tuple(k for k, count in counts.items() if count > 1)
    if duplicates:
        problems.append(f"duplicate key(s): {', '.join(duplicates)}")
    return JsonAnswer(dict(pairs), pairs, duplicates, tuple(problems))

"""Preference pairs for the Criticalness DPO stage (SurveyAlign §5.2.3; pair construction is our choice).

For every training unit: prompt = the judge prompt of the unit (with its KA block when present), chosen = the
human rationale with the gold score (exactly the SFT completion), rejected = one of K answers sampled from the
SFT adapter whose parsed score differs from gold. When none of the K differs, answers of a fallback zero-shot
judge (the base model without adapter) are tried; when none of those differs either, the unit is recorded with
``status="no_pair"`` and the reason. Every record says how it was made (``origin``, sample index, all sampled
scores), so the file is its own provenance.

Output: one JSON line per unit, appended as units are processed. Every record holds the SFT adapter's content
fingerprint (``adapter_fingerprint``: sha256 of its config and weights); a re-run keeps the units made by the same
adapter and remakes the others (made by another adapter, or by a version that did not record it), so one file
never mixes pairs of two adapters.
"""

from __future__ import annotations

import json
import logging
import os
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from surveyalign.constants import Dimension
from surveyalign.models.paths import from_hub

logger = logging.getLogger(__name__)

#: ``origin`` values of a made pair.
ORIGIN_SFT = "sft_sample"
ORIGIN_ZERO_SHOT = "zero_shot_sample"
#: Characters of each sampled answer kept in a record (``sft_samples``/``zero_shot_samples``) for debugging.
SAMPLE_TEXT_CHARS = 300


@dataclass
class PairsSummary:
    """Counts of a ``dpo-pairs`` run.

    Attributes:
        out: the JSONL file.
        n_units: units in the split (after ``limit``).
        n_skipped_existing: units already in the file from an earlier run with the same adapter (resumed).
        n_remade_stale: records of an earlier run made by another adapter (or without a fingerprint): removed
            from the file and made again by this run.
        n_paired: units with a pair in this run.
        n_no_pair: units recorded without a pair in this run.
        n_missing_text: units left out because their survey text is empty.
        origins: origin -> number of pairs made in this run.
        n_paired_in_file, n_no_pair_in_file: records of each status in ``out`` after this run (earlier runs
            included).
        origins_in_file: origin -> pairs in ``out`` after this run.
    """

    out: str
    n_units: int = 0
    n_skipped_existing: int = 0
    n_remade_stale: int = 0
    n_paired: int = 0
    n_no_pair: int = 0
    n_missing_text: int = 0
    origins: dict[str, int] = field(default_factory=dict)
    n_paired_in_file: int = 0
    n_no_pair_in_file: int = 0
    origins_in_file: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable copy."""
        return dict(self.__dict__)

    def describe(self) -> str:
        """Two lines: what this run added, and what the file holds now (earlier runs included)."""
        run = (f"this run: {self.n_paired} paired, {self.n_no_pair} no_pair, {self.n_skipped_existing} already in "
               f"the file, {self.n_missing_text} without survey text (of {self.n_units} units)")
        if self.n_remade_stale:
            run += f"; {self.n_remade_stale} record(s) made by another adapter removed and made again"
        if self.origins:
            run += f"; origins {self.origins}"
        held = f"in {self.out}: {self.n_paired_in_file} paired, {self.n_no_pair_in_file} no_pair"
        if self.origins_in_file:
            held += f"; origins {self.origins_in_file}"
        return f"{run}\n{held}"


def _sample_records(samples: Sequence[Any], protocol: str,
                    untrusted: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """What a record keeps of each sampled answer: parsed score, why it failed, and the start of its text
    (the answer read with the prompt's ``untrusted`` texts, as :func:`choose_rejected` reads it)."""
    from surveyalign.prompts import parse_generation

    kept = []
    for sample in samples:
        text = getattr(sample, "text", "") or ""
        failure = getattr(sample, "error", None)
        parsed = None if failure else parse_generation(sample, protocol=protocol, untrusted=untrusted)
        kept.append({
            "score": parsed.score if parsed else None,
            "error": failure or (parsed.error if parsed else None),  # request failure, truncation or parse error
            "finish_reason": getattr(sample, "finish_reason", None),
            "text": text[:SAMPLE_TEXT_CHARS],
            "text_chars": len(text),  # the full length; text keeps the first SAMPLE_TEXT_CHARS characters
        })
    return kept


def choose_rejected(samples: Sequence[Any], gold: int, protocol: str, *,
                    untrusted: Sequence[str] | None = None) -> tuple[int | None, list[int | None]]:
    """Pick the rejected answer among sampled generations: the first whose parsed score differs from gold.

    Args:
        samples: ``Generation``-like objects with ``text`` and ``error``.
        gold: the human score in {-2, -1, 1, 2}.
        protocol: answer protocol passed to ``parse_judgement``.
        untrusted: the texts of the prompt the samples answer (the survey as sent, its title, the knowledge
            block): a score marker or ``</think>`` a sample quotes from them is not read
            (:func:`surveyalign.prompts.parse_judgement`), so a quoted marker never makes a rejected answer.

    Returns:
        (index of the chosen sample or None, parsed score of every sample - None for a failed request, a
        truncated (``finish_reason == "length"``) or refused answer, or an answer without a valid score).
        Such answers are never used as rejected (:func:`surveyalign.prompts.parse_generation`).
    """
    from surveyalign.prompts import parse_generation

    scores: list[int | None] = [parse_generation(sample, protocol=protocol, untrusted=untrusted).score
                                for sample in samples]
    for index, score in enumerate(scores):
        if score is not None and score != gold:
            return index, scores
    return None, scores


def example_has_knowledge(row: dict[str, Any], use_knowledge: bool) -> bool:
    """Whether a row's prompt carries a knowledge block: ``use_knowledge`` and a non-empty ``knowledge`` text.

    Args:
        row: a dataset row (``knowledge`` optional).
        use_knowledge: the pairs' setting.

    Returns:
        True when the KA text goes before the survey (the ``with_knowledge`` field of a pair record).
    """
    return bool(use_knowledge and (row.get("knowledge") or ""))


def read_pairs(path: str | os.PathLike, *, paired_only: bool = True) -> list[dict[str, Any]]:
    """Read a pairs JSONL file written by :func:`make_dpo_pairs`.

    Args:
        path: the JSONL file.
        paired_only: keep only records with ``status == "paired"``.

    Returns:
        The records in file order.

    Raises:
        ValueError: naming the file and line of a malformed record.
    """
    records = []
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as err:
                raise ValueError(f"{path}, line {number}: not JSON ({err})") from None
            if record.get("status") not in ("paired", "no_pair"):
                raise ValueError(f"{path}, line {number}: field 'status' must be 'paired' or 'no_pair'")
            if record["status"] == "paired":
                for key in ("prompt", "chosen", "rejected"):
                    if not isinstance(record.get(key), list):
                        raise ValueError(f"{path}, line {number}: field {key!r} must be a list of messages")  # noqa: TRY004
            if record["status"] == "paired" or not paired_only:
                records.append(record)
    return records


def _split_stale(out: Path, fingerprint: str | None) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``(kept, stale)`` records of an existing pairs file: stale ones were made by another adapter (another
    ``adapter_fingerprint``, or none recorded). When there are stale ones the file is rewritten with the kept ones
    only (through a temporary file), so their units are made again."""
    if not out.exists():
        return [], []
    records = read_pairs(out, paired_only=False)
    kept = [r for r in records if fingerprint is not None and r.get("adapter_fingerprint") == fingerprint]
    stale = [r for r in records if r not in kept]
    if stale:
        logger.warning("%s: %d record(s) made by another adapter are made again", out, len(stale))
        tmp = out.with_name(out.name + ".tmp")
        tmp.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in kept), encoding="utf-8")
        os.replace(tmp, out)
    return kept, stale


def _load_sampler(model: str, adapter: str | None, batch_size: int, device: str):
    """The transformers backend."""
    from surveyalign.backends import load_backend

    return load_backend("transformers", model=model, adapter=adapter, device=device, batch_size=batch_size)


def make_dpo_pairs(
    dataset_path: str,
    adapter: str,
    out: str | os.PathLike,
    *,
    k: int = 4,
    dimension: Dimension | None = None,
    split: str = "train",
    model: str | None = None,
    protocol: str | None = None,
    enable_thinking: bool | None = None,
    use_knowledge: bool | None = None,
    allow_missing_knowledge: bool = False,
    temperature: float = 1.0,
    top_p: float = 1.0,
    max_new_tokens: int = 512,
    max_length: int | None = 16384,
    seed: int = 0,
    fallback_model: str | None = None,
    fallback_k: int | None = None,
    limit: int | None = None,
    batch_size: int = 4,
    device: str = "auto",
    sampler=None,
    fallback_sampler=None,
) -> PairsSummary:
    """Sample K answers per training unit from an SFT adapter and write DPO preference pairs.

    Args:
        dataset_path: SurveyReview dataset folder (``surveyalign/data/schema.py``).
        adapter: the SFT adapter folder; its ``surveyalign_training.json`` supplies defaults for ``model``,
            ``dimension``, ``protocol``, ``enable_thinking`` (explicit values must agree) and ``use_knowledge``.
        out: JSONL file to append to (created with parents).
        k: answers sampled per unit, >= 1.
        dimension: dimension of the units, as parsed by the flag (default: the adapter's; SurveyAlign uses
            criticalness).
        split: dataset split to pair (train).
        model: base model folder (default: the adapter's base model).
        protocol: answer protocol; enable_thinking: chat-template switch (defaults: the adapter's).
        use_knowledge: put the row's KA text before the survey (as in SFT); None: the adapter's recorded value,
            else on for Comprehensiveness and Criticalness (the KA dimensions, SurveyAlign §5.2.3).
        allow_missing_knowledge: with ``use_knowledge`` on, make pairs even when no row of the split carries a
            ``knowledge`` text (recorded in every pair as ``allow_missing_knowledge``); off: refused.
        temperature, top_p, max_new_tokens, seed: sampling settings (sample i uses seed + i).
        max_length: token budget of prompt + answer; the survey body is shortened so the prompt plus
            ``max_new_tokens`` and prompt plus chosen both fit (use the DPO ``max_length``).
        fallback_model: zero-shot judge model (no adapter) tried when no SFT sample differs from gold; None
            disables the fallback.
        fallback_k: samples from the fallback judge (default ``k``).
        limit: only the first N units of the split.
        batch_size, device: passed to the transformers backend.
        sampler, fallback_sampler: ready backends (``generate(prompts, settings, n)``) used instead of loading
            the transformers backend (tests, remote servers).

    Returns:
        :class:`PairsSummary` (also written next to ``out`` as ``<out>.summary.json``).

    Raises:
        ValueError: when explicit settings disagree with the adapter's training record, k < 1, or ``use_knowledge``
            is on and no row of the split carries a ``knowledge`` text (one line naming the dataset folder and the
            ``surveyalign ka build`` command; :func:`surveyalign.training.data.require_knowledge`).
    """
    from surveyalign.backends import GenerationSettings
    from surveyalign.backends.fingerprint import adapter_fingerprint
    from surveyalign.data import load_surveyreview
    from surveyalign.models import (
        TRAINING_RECORD,
        hub_folder,
        read_training_record,
        resolve_model_path,
    )
    from surveyalign.prompts import (
        build_sft_example,
        count_chat_tokens,
        fit_survey_text,
    )
    from surveyalign.training.data import require_knowledge

    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    adapter = hub_folder(adapter, "--adapter")
    record_path = Path(adapter) / TRAINING_RECORD
    trained = read_training_record(adapter, required=False)
    for name, given in (("dimension", dimension), ("protocol", protocol), ("enable_thinking", enable_thinking)):
        if given is not None and name in trained and trained[name] != given:
            shown = str(given).lower() if isinstance(given, bool) else given
            raise ValueError(f"--{name.replace('_', '-')} {shown} differs from the {trained[name]!r} the adapter "
                             f"{adapter} was trained with ({TRAINING_RECORD}); pairs must use the SFT setting: drop "
                             f"--{name.replace('_', '-')} or give an adapter trained with it")
    dimension = dimension or trained.get("dimension") or "criticalness"
    protocol = protocol or trained.get("protocol") or "v1.0"
    enable_thinking = bool(trained.get("enable_thinking", False) if enable_thinking is None else enable_thinking)
    if use_knowledge is None:  # as the SFT adapter was trained; without a record: SurveyAlign's KA dimensions
        use_knowledge = bool(trained.get("use_knowledge", dimension in ("comprehensiveness", "criticalness")))
    model = model or trained.get("base_model")
    if model is None:
        raise ValueError(f"no base model given and none recorded in {record_path}")
    model = resolve_model_path(model, "--model")
    if fallback_model is not None:
        fallback_model = resolve_model_path(fallback_model, "--fallback-model")

    rows = load_surveyreview(dataset_path, dimension, split=split)
    if limit is not None:
        rows = rows.select(range(min(limit, len(rows))))
    if use_knowledge:  # KA prompts from rows without knowledge: refused before the model is loaded
        require_knowledge(rows, dataset_path=dataset_path, dimension=dimension, split=split,
                          allow_missing=allow_missing_knowledge,
                          fix="pass --no-knowledge (plain prompts, for an adapter trained without knowledge) or "
                              "--allow-missing-knowledge to make the pairs without it (recorded)")

    from transformers import AutoTokenizer

    tokenizer = from_hub(AutoTokenizer.from_pretrained, model, "tokenizer")
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fingerprint = adapter_fingerprint(adapter).get("sha256")
    kept, stale = _split_stale(out, fingerprint)
    done = {r.get("unit_id") for r in kept}
    summary = PairsSummary(out=str(out), n_units=len(rows), n_remade_stale=len(stale))
    origins: Counter[str] = Counter()
    settings = GenerationSettings(temperature=temperature, top_p=top_p, max_new_tokens=max_new_tokens,
                                  seed=seed, enable_thinking=enable_thinking)

    todo = []
    for row in rows:
        if row["unit_id"] in done:
            summary.n_skipped_existing += 1
            continue
        if not (row.get("text") or "").strip():
            summary.n_missing_text += 1
            continue
        knowledge = (row.get("knowledge") or None) if example_has_knowledge(row, use_knowledge) else None

        def build(text: str, row=row, knowledge=knowledge) -> dict:
            return build_sft_example(dimension, text, row["rationales"], int(row["score"]), protocol=protocol,
                                     knowledge=knowledge, title=row.get("title") or None)

        def count(text: str) -> int:
            ex = build(text)
            with_chosen = count_chat_tokens(tokenizer, ex["prompt"] + ex["completion"],
                                            enable_thinking=enable_thinking)
            prompt_only = count_chat_tokens(tokenizer, ex["prompt"], enable_thinking=enable_thinking,
                                            add_generation_prompt=True)
            # +2: the end-of-turn tokens the template adds after a sampled answer
            return max(with_chosen, prompt_only + max_new_tokens + 2)

        try:
            text, _, removed = fit_survey_text(row["text"], count, max_length, tokenizer)
        except ValueError as err:
            raise ValueError(f"unit {row['unit_id']}: {err}") from None
        untrusted = tuple(t for t in (text, row.get("title"), knowledge) if t)
        todo.append((row, build(text), removed, untrusted))

    if todo and sampler is None:
        sampler = _load_sampler(model, adapter, batch_size, device)
    fallback_settings = settings
    with open(out, "a", encoding="utf-8") as handle:
        for start in range(0, len(todo), max(1, batch_size)):
            chunk = todo[start:start + max(1, batch_size)]
            generations = sampler.generate([ex["prompt"] for _, ex, _, _ in chunk], settings, n=k)
            for (row, example, removed, untrusted), samples in zip(chunk, generations, strict=True):
                gold = int(row["score"])
                index, scores = choose_rejected(samples, gold, protocol, untrusted=untrusted)
                origin, chosen_samples, fb_scores = ORIGIN_SFT, samples, None
                if index is None and fallback_model is not None:
                    if fallback_sampler is None:
                        fallback_sampler = _load_sampler(fallback_model, None, batch_size, device)
                    fb = fallback_sampler.generate([example["prompt"]], fallback_settings, n=fallback_k or k)[0]
                    index, fb_scores = choose_rejected(fb, gold, protocol, untrusted=untrusted)
                    origin, chosen_samples = ORIGIN_ZERO_SHOT, fb
                record: dict[str, Any] = {
                    "unit_id": row["unit_id"], "paper_id": row["paper_id"], "review_id": row["review_id"],
                    "source": row.get("source"), "dimension": dimension, "gold_score": gold,
                    "protocol": protocol, "chat_template_kwargs": {"enable_thinking": enable_thinking},
                    "use_knowledge": bool(use_knowledge),
                    "with_knowledge": example_has_knowledge(row, use_knowledge),  # this prompt carries a KA block
                    "allow_missing_knowledge": bool(allow_missing_knowledge), "dataset_path": str(dataset_path),
                    "survey_tokens_removed": removed, "sft_sample_scores": scores,
                    "zero_shot_sample_scores": fb_scores, "adapter": str(adapter),
                    "adapter_fingerprint": fingerprint,
                    "sft_samples": _sample_records(samples, protocol, untrusted),
                    "zero_shot_samples": (_sample_records(chosen_samples, protocol, untrusted)
                                          if fb_scores is not None else None),
                    "sampling": {"k": k, "temperature": temperature, "top_p": top_p,
                                 "max_new_tokens": max_new_tokens, "seed": seed},
                }
                if index is None:
                    tried = "the SFT samples" + (" and the zero-shot samples" if fallback_model else "")
                    unparsed = sum(s is None for s in scores + (fb_scores or []))
                    record.update(status="no_pair", origin=None,
                                  reason=f"no parseable sampled score differs from gold {gold} among {tried} "
                                         f"({unparsed} of {len(scores) + len(fb_scores or [])} unparseable or "
                                         "failed; see sft_samples / zero_shot_samples)")
                    summary.n_no_pair += 1
                else:
                    rejected = chosen_samples[index]
                    record.update(
                        status="paired", origin=origin, sample_index=index,
                        rejected_score=(scores if origin == ORIGIN_SFT else fb_scores)[index],
                        prompt=example["prompt"], chosen=example["completion"],
                        rejected=[{"role": "assistant", "content": rejected.text}],
                    )
                    summary.n_paired += 1
                    origins[origin] += 1
                handle.write(json.dumps(record, ensure_ascii=False) + "\n")
            handle.flush()
    summary.origins = dict(origins)
    held = read_pairs(out, paired_only=False) if out.exists() else []
    summary.n_paired_in_file = sum(r["status"] == "paired" for r in held)
    summary.n_no_pair_in_file = sum(r["status"] == "no_pair" for r in held)
    summary.origins_in_file = dict(Counter(r["origin"] for r in held if r["status"] == "paired"))
    Path(f"{out}.summary.json").write_text(json.dumps(summary.to_dict(), indent=2) + "\n")
    logger.info("dpo-pairs: %s", summary.to_dict())
    return summary

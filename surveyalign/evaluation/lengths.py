"""Prompts of the units, fitted to the token budget, and the report of what the length rule did.

The judge (:meth:`surveyalign.judge.Judge.prepare`) builds each prompt and applies the training length rule
(SurveyAlign App. D: the end of the survey body is cut until prompt + ``max_new_tokens`` fit ``max_length``);
this module runs it over the units and summarises it per dimension for ``run_config.json`` and ``metrics.json``.
"""

from __future__ import annotations

from typing import Any

from surveyalign.constants import PROMPT_TOO_LONG
from surveyalign.documents.hidden import document_hidden
from surveyalign.evaluation.config import EvalConfig
from surveyalign.evaluation.units import Unit, read_texts
from surveyalign.judge import Judge

__all__ = ["prepare_units"]


def prepare_units(config: EvalConfig, units: list[Unit], judge: Judge, sources: dict[str, str | None],
                  console: Any) -> dict[str, Any]:
    """Set every unit's prompt (``unit.prompt``) and report shortened and too-long prompts per dimension.

    Tokens are counted on the prompt rendered with the chat template (``enable_thinking`` as configured), by
    ``config.tokenizer`` when set, else the local backend's own tokenizer (API backends without ``tokenizer``:
    no counting, no shortening; a warning is printed when a budget is set).

    Args:
        config: the run configuration.
        units: the units (changed in place; their survey texts are read from the split's files first,
            :func:`surveyalign.evaluation.units.read_texts`).
        judge: the judge, with each dimension's ``max_length`` and tokenizer in its options.
        sources: dimension -> where its ``max_length`` comes from (``"config"``, ``"training record of DIR"``).
        console: a ``rich`` console for the warning.

    Returns:
        ``{"max_new_tokens": int, "per_dimension": {dim: {"max_length", "max_length_source", "tokenizer",
        "model_context", "n_counted", "n_shortened", "removed_tokens", "n_too_long", "longest_prompt"}},
        "n_shortened": int, "n_too_long": int, "hidden_text": {paper_id: record}}``: ``hidden_text`` holds, per
        survey whose text (the dataset's text column) or title carries any, the Unicode tag, zero-width and bidi
        characters and the answer-format tokens neutralised before the judge read it
        (:func:`surveyalign.documents.hidden.document_hidden`).
    """
    per_dim: dict[str, Any] = {}
    for dim in config.dimensions:
        backend = judge.backend_for(dim)
        budget = judge.options(dim).max_length
        tok = judge.tokenizer_for(dim)
        name = config.tokenizer or (getattr(backend, "tokenizer_path", None) or getattr(backend, "model_path", None)
                                    if tok is not None else None)
        per_dim[dim] = {"max_length": budget, "max_length_source": sources.get(dim), "tokenizer": name,
                        "model_context": judge.context_for(dim), "n_counted": 0, "n_shortened": 0,
                        "removed_tokens": 0, "n_too_long": 0, "longest_prompt": 0}
        if tok is None and budget is not None:
            console.print(f"[yellow]{dim}: max_length={budget} is not applied: no tokenizer to count prompt "
                          "tokens with (API backend); set `tokenizer: FOLDER` (CLI: --tokenizer)[/]")
    # units with the same survey, dimension, knowledge and title (the reviews of one paper) get one prompt object:
    # built, counted and hashed once (memory and CPU); the texts, read now for these units only, are
    # shared per paper (read_texts), and each stays alive in its unit while this loop runs, so its id() names it
    read_texts(units)
    prepared: dict[tuple[Any, ...], Any] = {}
    hidden: dict[str, Any] = {}
    for unit in units:
        text, title = unit.row.get("text") or "", unit.row.get("title") or None
        paper = str(unit.row.get("paper_id") or unit.unit_id)
        if paper not in hidden:
            record = document_hidden(text, title=title, scan=True)
            hidden[paper] = record if record["n"] or record["neutralised"]["n"] else None
        key = (unit.dimension, id(text), len(text), unit.knowledge, title)
        prompt = prepared.get(key)
        if prompt is None:
            prompt = prepared[key] = judge.prepare(text, unit.dimension, knowledge=unit.knowledge, title=title)
        unit.prompt = prompt
        entry = per_dim[unit.dimension]
        if prompt.prompt_tokens is not None:
            entry["n_counted"] += 1
            entry["longest_prompt"] = max(entry["longest_prompt"], prompt.prompt_tokens)
            if prompt.shortened_tokens:
                entry["n_shortened"] += 1
                entry["removed_tokens"] += prompt.shortened_tokens
        if prompt.status == PROMPT_TOO_LONG:
            entry["n_too_long"] += 1
    return {"max_new_tokens": config.generation.max_new_tokens, "per_dimension": per_dim,
            "n_shortened": sum(e["n_shortened"] for e in per_dim.values()),
            "n_too_long": sum(e["n_too_long"] for e in per_dim.values()),
            "hidden_text": {paper: record for paper, record in hidden.items() if record is not None}}

"""Settings of knowledge augmentation (SurveyReview App. F), as a typed YAML config.

The paper fixes the shape of both builders but not their constants: ``alpha``, ``beta``, ``B`` and ``L`` are
our choices, documented here and recorded in every KA record. The summariser is a model role
(``surveyalign.backends.ModelRole``: ``backend:`` + ``generation:``, the one shape wherever a model is named); its prompts are data (own wording) and can be replaced in the YAML.
"""

from __future__ import annotations

import os
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from surveyalign.backends import ModelRole
from surveyalign.documents import DEFAULT_MIN_TITLE_SCORE, DEFAULT_YEAR_TOLERANCE
from surveyalign.yamlconfig import DimensionName, read_yaml_mapping, validation_line

__all__ = ["COMPRESS_PROMPT", "KA_DIMENSIONS", "SUMMARY_PROMPT", "KAConfig"]

#: Dimensions that get knowledge augmentation (SurveyReview §5.2.2).
KA_DIMENSIONS: tuple[str, ...] = ("comprehensiveness", "criticalness")

#: Stage 1 prompt of Crit-KA (one temporal block). Fields: {first_year}, {last_year}, {papers}, {max_tokens}.
SUMMARY_PROMPT = (
    "Below are papers published between {first_year} and {last_year}, each given by its title and "
    "abstract. Write one compact paragraph (at most about {max_tokens} tokens) on what this group of papers "
    "contributes as a whole: the main problems addressed, the methods or ideas that recur, how they build on or "
    "depart from each other, and any open issues they point to. Use your own words, name no more than a few "
    "papers, and do not list them one by one.\n\nPapers:\n{papers}"
)

#: Stage 2 prompt of Crit-KA (global compression). Fields: {summaries}, {length}.
COMPRESS_PROMPT = (
    "The notes below summarise related literature period by period; each note starts with its publication-"
    "year interval in square brackets. Merge them into a single text of at most about {length} tokens that "
    "traces how the ideas developed over time. Keep the year intervals in square brackets at the start of "
    "the parts they belong to, in chronological order, and keep only the most important trends, turning "
    "points and open problems. Write in your own words.\n\nNotes:\n{summaries}"
)


class KAConfig(BaseModel):
    """Knowledge-augmentation settings (SurveyReview App. F.1 / F.2); YAML keys, unknown keys rejected.

    Attributes:
        dimensions: dimensions whose units get a ``knowledge`` text (Comp-KA for Comprehensiveness, Crit-KA
            for Criticalness).
        top_factor: Comp-KA keeps the top ``top_factor * n`` papers of R+ (App. F.1: 2, i.e. Top_2n).
        comp_max_tokens: optional token budget of the Comp-KA text, counted with ``tokenizer`` (``None``: the
            paper's R united with Top_2n in full). With a budget the lowest-ranked neighbourhood entries go first,
            then the last references; the record counts what was dropped.
        exclude_future: leave out of R+ papers published after the survey (the survey itself and papers citing
            it are always left out).
        min_title_score / year_tolerance: the reference-resolution rule (see ``same_paper``).
        alpha: percentile (0-100) of R's citation counts giving tau_c. Our default 75: "highly cited" means
            cited at least as often as the top quarter of the survey's own references.
        beta: percentile (0-100) of R's years giving tau_y. Our default 75: "recent" means at least as new as
            the newest quarter of the references.
        block_tokens: B, token budget of one temporal block of (title, abstract) pairs, counted with
            ``tokenizer``. Our default 2048.
        summary_tokens: most tokens generated per block summary. Our default 256.
        length: L, the length in tokens of the compressed Crit-KA text (the compression call's
            ``max_new_tokens``; a longer answer is cut at a token boundary and counted). Our default 512.
        max_blocks: most blocks summarised per survey (the oldest blocks are dropped first, counted);
            ``None`` = all.
        tokenizer: the judge's tokenizer (a local folder or model id, loaded with ``AutoTokenizer``), or
            ``"whitespace"`` to count words (quick runs only; recorded).
        summariser: the model role writing summaries (required for Crit-KA): ``backend: {kind, options}`` +
            ``generation: {temperature, seed, ...}`` (:class:`~surveyalign.backends.ModelRole`; default generation
            greedy, seed 0). Each stage sets its own ``max_new_tokens`` (``summary_tokens``, ``length``).
        summary_prompt / compress_prompt: the two prompts (see :data:`SUMMARY_PROMPT`, :data:`COMPRESS_PROMPT`).
    """

    model_config = ConfigDict(extra="forbid")

    dimensions: list[DimensionName] = Field(default_factory=lambda: list(KA_DIMENSIONS),
                                  description="dimensions that get a knowledge text")
    top_factor: int = Field(2, ge=1, description="Comp-KA keeps Top_(top_factor*n) of R+ (App. F.1: 2)")
    comp_max_tokens: int | None = Field(None, ge=16, description="token budget of the Comp-KA text (None = all)")
    exclude_future: bool = Field(True, description="leave papers published after the survey out of R+")
    min_title_score: float = Field(DEFAULT_MIN_TITLE_SCORE, ge=0, le=100, description="title ratio for a match")
    year_tolerance: int = Field(DEFAULT_YEAR_TOLERANCE, ge=0, description="year difference confirming a match")
    alpha: float = Field(75.0, ge=0, le=100, description="tau_c = alpha-th percentile of R's citation counts")
    beta: float = Field(75.0, ge=0, le=100, description="tau_y = beta-th percentile of R's years")
    block_tokens: int = Field(2048, ge=16, description="B: token budget of one temporal block")
    summary_tokens: int = Field(256, ge=8, description="max new tokens of one block summary")
    length: int = Field(512, ge=8, description="L: tokens of the compressed Crit-KA text")
    max_blocks: int | None = Field(None, ge=1, description="most blocks per survey (None = all)")
    tokenizer: str | None = Field(None, description="judge tokenizer folder / id, or 'whitespace'")
    summariser: ModelRole | None = Field(None, description="model role writing Crit-KA summaries")
    summary_prompt: str = Field(SUMMARY_PROMPT, description="stage-1 prompt template")
    compress_prompt: str = Field(COMPRESS_PROMPT, description="stage-2 prompt template")

    @field_validator("dimensions")
    @classmethod
    def _dims(cls, value: list[str]) -> list[str]:
        dims = list(value)  # parsed by DimensionName
        other = sorted(set(dims) - set(KA_DIMENSIONS))
        if other:
            raise ValueError(f"knowledge augmentation is defined for {list(KA_DIMENSIONS)} only, not {other}")
        return dims

    @classmethod
    def from_yaml(cls, path: str | os.PathLike | None, overrides: dict[str, Any] | None = None) -> KAConfig:
        """Load a config from YAML (``None``: defaults), then apply ``overrides``.

        Args:
            path: the YAML file, or ``None``.
            overrides: top-level keys replacing the file's values (``None`` values are ignored).

        Returns:
            The validated config.

        Raises:
            FileNotFoundError: ``path`` does not exist.
            ValueError: the YAML is not a mapping or does not validate (names the file and the key).
        """
        data: dict[str, Any] = {} if path is None else read_yaml_mapping(path, "KA config")
        data.update({k: v for k, v in (overrides or {}).items() if v is not None})
        try:
            return cls.model_validate(data)
        except ValidationError as err:
            raise ValueError(validation_line(err, str(path or "<defaults>"), "KA config")) from None

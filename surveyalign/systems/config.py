"""The ``surveyalign systems`` config: which measures rank the survey writers, with which judges.

YAML shape (``configs/systems/*.yaml``)::

    name: writers
    measures:                      # each optional; a kind may appear twice with different judges (its `name`
      - kind: surveyalign          #   differs): the rankings of two judges are then compared too
        judge: ../judge/surveyalign-served.yaml   # a `surveyalign score --judge` config, folder or Hub id
        samples: 5                 # optional override of the judge's K
        allow_no_knowledge: true
      - kind: litreview            # PaperOrchestra literature-review quality (App. F.3)
        judge: ../autorate/api.yaml               # an autorater model role
        avg_citations: 58.0
      - kind: sxs                  # side-by-side against the human reference, order swapped
        judge: ../autorate/api.yaml
        rule: seed                 # seed | official3 | official5
      - kind: citations            # P / R / F1 against the topic's reference list, ids from Semantic Scholar
        api: semanticscholar       # semanticscholar | openalex
    bootstrap: {resamples: 1000, seed: 0}
    knowledge:                     # KA for the KA-trained adapters of the surveyalign measures (App. F), as `score`
      graph: ../../runs/ka/graph.jsonl   # Comp-KA / Crit-KA from each survey's own reference list, or
      # folder: ka/                # prepared texts: ka/<system>/<topic>.<dimension>.txt (_reference/ for references)
      ka_config: ../ka/default.yaml

Relative judge and knowledge paths are read from the config file's folder. The survey's length (words) and reference count are
always reported as covariates (no call).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from surveyalign.inference.knowledge import KnowledgeSettings
from surveyalign.yamlconfig import read_yaml_mapping, validation_line

__all__ = ["MEASURE_KINDS", "BootstrapSettings", "MeasureConfig", "SystemsConfig"]

#: The measure kinds and the keys each one takes (besides ``kind`` and ``name``).
MEASURE_KINDS: dict[str, tuple[str, ...]] = {
    "surveyalign": ("judge", "samples", "allow_no_knowledge"),
    "litreview": ("judge", "avg_citations"),
    "sxs": ("judge", "rule"),
    "citations": ("api", "base_url", "rate", "search_limit"),
}


class MeasureConfig(BaseModel):
    """One measure of the systems comparison (see the module docstring for the keys of each kind)."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["surveyalign", "litreview", "sxs", "citations"]
    name: str | None = Field(None, description="Column name in the reports (default: the kind).")
    judge: str | None = Field(None, description="surveyalign: a judge config / folder / Hub id; litreview, sxs: "
                              "an autorater model role YAML.")
    samples: int | None = Field(None, ge=1, le=64, description="surveyalign: K samples (default: the judge's).")
    allow_no_knowledge: bool = Field(False, description="surveyalign: judge KA-trained dimensions without KA.")
    avg_citations: float | None = Field(None, gt=0, description="litreview: the venue's average citation count.")
    rule: Literal["seed", "official3", "official5"] = Field("seed", description="sxs: the outcome rule.")
    api: Literal["semanticscholar", "openalex"] = Field("semanticscholar", description="citations: the API.")
    base_url: str | None = Field(None, description="citations: the API root (default: the public one).")
    rate: float = Field(1.0, ge=0, description="citations: requests per second.")
    search_limit: int = Field(5, ge=1, description="citations: search hits checked per reference.")

    @model_validator(mode="after")
    def _keys_of_kind(self) -> MeasureConfig:
        allowed = set(MEASURE_KINDS[self.kind])
        given = {k for k in self.model_fields_set if k not in ("kind", "name")}
        other = sorted(given - allowed)
        if other:
            raise ValueError(f"a {self.kind} measure takes {', '.join(MEASURE_KINDS[self.kind])}; not "
                             f"{', '.join(other)}")
        if self.kind in ("surveyalign", "litreview", "sxs") and not self.judge:
            raise ValueError(f"a {self.kind} measure needs `judge:`")
        if self.name is not None and (not self.name.strip() or any(c in self.name for c in "/\\.")):
            raise ValueError(f"name {self.name!r}: a non-empty column name without '/', '\\' or '.'")
        return self

    @property
    def label(self) -> str:
        """The measure's column name (``name``, else the kind)."""
        return self.name or self.kind


class BootstrapSettings(BaseModel):
    """Topic-level bootstrap settings."""

    model_config = ConfigDict(extra="forbid")

    resamples: int = Field(1000, ge=1, description="bootstrap resamples over topics")
    seed: int = Field(0, ge=0, description="numpy seed")


class SystemsConfig(BaseModel):
    """The ``surveyalign systems --config`` file (module docstring)."""

    model_config = ConfigDict(extra="forbid")

    name: str = "systems"
    reference: str = Field("_reference", description="the corpus folder holding the human-written surveys")
    measures: list[MeasureConfig] = Field(default_factory=list)
    bootstrap: BootstrapSettings = Field(default_factory=BootstrapSettings)
    knowledge: KnowledgeSettings = Field(default_factory=KnowledgeSettings,
                                         description="where the surveyalign measures' KA comes from (graph / folder "
                                                     "/ ka_config, as `score --graph/--knowledge/--ka-config`)")
    #: the folder relative judge paths are read from (the config file's); not a YAML key
    root: str = Field(".", exclude=True)

    @model_validator(mode="after")
    def _distinct_names(self) -> SystemsConfig:
        labels = [m.label for m in self.measures]
        twice = sorted({x for x in labels if labels.count(x) > 1})
        if twice:
            raise ValueError(f"measures: {', '.join(twice)} named twice; give each its own `name:`")
        return self

    def judge_path(self, measure: MeasureConfig) -> str:
        """The measure's judge: a path relative to the config's folder when that file exists, else as written."""
        raw = str(measure.judge)
        candidate = Path(self.root) / raw
        return str(candidate) if not Path(raw).is_absolute() and candidate.exists() else raw

    @classmethod
    def from_yaml(cls, path: str | os.PathLike) -> SystemsConfig:
        """Read and validate ``path``.

        Raises:
            FileNotFoundError: no such file.
            ValueError: invalid YAML, an unknown key or a bad value, in one line naming the file and the key.
        """
        data: dict[str, Any] = read_yaml_mapping(path, "systems config")
        try:
            config = cls.model_validate(data)
        except ValidationError as err:
            raise ValueError(validation_line(err, str(path), "systems config")) from None
        root = Path(path).resolve().parent
        return config.model_copy(update={"root": str(root), "knowledge": config.knowledge.resolved(root)})

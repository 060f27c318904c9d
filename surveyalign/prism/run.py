"""One PRISM run: a judge config (YAML), a paper and its reviews in, a run folder out.

``PrismConfig`` is the ``--judge`` YAML of ``surveyalign prism``: the extraction backend (a model
role: the same ``backend:`` / ``generation:`` blocks as every config naming a model), the grounding rubric, the claim-score policy,
the consensus rule and the novelty retrieval settings. Unknown keys are rejected with the file and key named.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from surveyalign import __version__
from surveyalign.backends import Backend, ModelRole
from surveyalign.calls import CallCache
from surveyalign.knowledge import S2_URL, SemanticScholarClient
from surveyalign.prism.calls import Extractor
from surveyalign.prism.inputs import Review, Submission
from surveyalign.prism.novelty import CLAIM_POLICIES
from surveyalign.prism.pipeline import PaperUnits, PriorWorkRetriever, extract_units
from surveyalign.prism.prompts import GROUNDING_RUBRICS
from surveyalign.prism.report import score_reviews, write_run
from surveyalign.prism.retrieval import PriorWorkSearch
from surveyalign.yamlconfig import apply_overrides, read_yaml_mapping

__all__ = ["NoveltyConfig", "PrismConfig", "PrismRun", "run_prism"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class NoveltyConfig(_Strict):
    """Prior-work retrieval for novelty assessment (Semantic Scholar through ``surveyalign.knowledge``)."""

    enabled: bool = Field(True, description="assess novelty (needs the Semantic Scholar API or a mirror)")
    base_url: str | None = Field(None, description="Graph API root; default the public Semantic Scholar API")
    candidates: int = Field(30, ge=1, description="prior papers kept after MMR (PRISM: about 30)")
    per_query: int = Field(20, ge=1, le=100, description="search results asked for per query")
    mmr_lambda: float = Field(0.7, ge=0.0, le=1.0, description="MMR relevance weight (1 = no diversification)")
    pairs_per_claim: int = Field(3, ge=1, description="prior papers judged per claim (the most relevant)")
    requests_per_second: float = Field(1.0, ge=0, description="Semantic Scholar request rate (0: no limit)")
    max_attempts: int = Field(6, ge=1, description="tries per Semantic Scholar request (429 / 5xx are retried)")


class PrismConfig(ModelRole):
    """The ``--judge`` config of ``surveyalign prism``: the extraction judge as a model role (``backend`` +
    ``generation``, default ``max_new_tokens: 1024``; :class:`~surveyalign.backends.ModelRole`) and the
    scoring options."""

    generation_defaults: ClassVar[dict[str, Any]] = {"max_new_tokens": 1024}

    grounding_rubric: Literal["seed", "specificity"] = Field("seed", description="premise grounding scale")
    claim_policy: str = Field("top3_weighted", description="novelty claim-score aggregation policy")
    consensus: Literal["all", "human"] = Field("all", description="whose agreement weighs pooled flaws")
    max_paper_chars: int = Field(30000, ge=1000, description="paper characters shown to flaw validation (cut "
                                 "further to fit the model context when it is known)")
    batch_size: int = Field(8, ge=1, description="prompts per backend call (local backends)")
    concurrency: int | None = Field(None, ge=1, description="requests in flight for API backends (default: theirs)")
    novelty: NoveltyConfig = Field(default_factory=NoveltyConfig)

    @field_validator("claim_policy")
    @classmethod
    def _policy(cls, value: str) -> str:
        if value not in CLAIM_POLICIES:
            raise ValueError(f"unknown claim policy {value!r}; choose one of {sorted(CLAIM_POLICIES)}")
        return value

    @classmethod
    def from_yaml(cls, path: str | Path, overrides: dict[str, Any] | None = None) -> PrismConfig:
        """Read and validate a judge YAML (dotted ``overrides`` applied first).

        Raises:
            FileNotFoundError: no such file.
            ValueError: invalid YAML or an invalid / unknown key (file and key named).
        """
        p = Path(path)
        data = read_yaml_mapping(p, "PRISM judge config")
        try:
            return cls.model_validate(apply_overrides(data, overrides or {}))
        except ValidationError as err:
            lines = [f"{p}: {'.'.join(map(str, e['loc'])) or '<top level>'}: {str(e['msg']).removeprefix('Value error, ')}"
                     for e in err.errors()]
            raise ValueError("invalid PRISM judge config:\n  " + "\n  ".join(lines)) from None


@dataclass
class PrismRun:
    """What :func:`run_prism` produced: the units, every review's scores and the files written."""

    out_dir: Path
    units: PaperUnits
    scores: dict[str, dict[str, Any]]
    files: dict[str, Path]
    calls: dict[str, dict[str, int]]
    answers: str = ""


def _semantic_scholar(config: NoveltyConfig, out_dir: Path) -> PriorWorkRetriever:
    client = SemanticScholarClient(config.base_url or S2_URL, cache_dir=out_dir / "http_cache",
                                   requests_per_second=config.requests_per_second, max_attempts=config.max_attempts)
    return PriorWorkSearch(client, candidates=config.candidates, per_query=config.per_query,
                           mmr_lambda=config.mmr_lambda, cache_path=out_dir / "retrieval.json")


def run_prism(paper: Submission, reviews: Sequence[Review], config: PrismConfig, out_dir: str | Path, *,
              backend: Backend | None = None, retriever: PriorWorkRetriever | None = None,
              progress: bool = False, command: Sequence[str] | None = None, keep_failed: bool = False) -> PrismRun:
    """Extract, score and write one paper's PRISM run (resumable through ``out_dir/calls.jsonl``).

    Args:
        paper: the reviewed paper.
        reviews: its reviews (human and system; unique ids).
        config: the judge config.
        out_dir: the run folder (created; an existing one is resumed).
        backend: an already built backend (default: built from ``config.backend``; closed afterwards only then).
        retriever: prior-work retrieval (default: Semantic Scholar when ``config.novelty.enabled``).
        progress: progress bars.
        command: the command line, for ``run_config.json``.
        keep_failed: reuse cached answers that errored or could not be parsed (default: a re-run asks them again).

    Returns:
        :class:`PrismRun`.

    Raises:
        ValueError: no review, duplicate review ids, an invalid config.
    """
    if not reviews:
        raise ValueError("no review to score")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    owned = backend is None
    backend = backend or config.build()
    if retriever is None and config.novelty.enabled:
        retriever = _semantic_scholar(config.novelty, out)
    settings = config.generation
    try:
        with CallCache.load(out / "calls.jsonl", keep_failed=keep_failed) as cache:
            extractor = Extractor(backend, settings, cache, batch_size=config.batch_size,
                                  concurrency=config.concurrency, progress=progress)
            units = extract_units(paper, reviews, extractor, retriever=retriever,
                                  grounding_rubric=config.grounding_rubric,
                                  pairs_per_claim=config.novelty.pairs_per_claim,
                                  max_paper_chars=config.max_paper_chars)
            describe = backend.describe()
            answers = cache.summary()
            answer_counts = dict(cache.counts)
    finally:
        if owned:
            backend.close()
    scores = score_reviews(reviews, units, claim_policy=config.claim_policy, consensus=config.consensus)
    run_config = {
        "surveyalign_version": __version__, "created": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "command": list(command or []), "paper_id": paper.paper_id,
        "reviews": [{"review_id": r.review_id, "source": r.source, "system": r.system} for r in reviews],
        "judge": {"backend": config.backend.redacted(), "describe": describe, "settings": settings.model_dump()},
        "grounding_rubric": {"name": config.grounding_rubric, "levels": GROUNDING_RUBRICS[config.grounding_rubric]},
        "claim_policy": config.claim_policy, "consensus": config.consensus, "max_paper_chars": config.max_paper_chars,
        "novelty": config.novelty.model_dump(), "retrieval_stats": getattr(retriever, "stats", None),
        "calls": extractor.counts, "answers": answer_counts, "keep_failed": keep_failed,
    }
    files = write_run(out, paper, reviews, units, scores, run_config)
    return PrismRun(out, units, scores, files, extractor.counts, answers)
